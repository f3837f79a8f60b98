/*
 * testutil.c: see testutil.h.
 */
#define _POSIX_C_SOURCE 200809L
#include "testutil.h"
#include "xalloc.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

const char *const tu_fold_settings[] = {
    "", "--no-sync false", "--sharding-strategy HYBRID_SHARD",
    "--sharding-strategy SHARD_GRAD_OP", "--sharding-strategy NO_SHARD",
    "--limit-all-gathers false", "--forward-prefetch true",
    "--backward-prefetch None", "--backward-prefetch BACKWARD_POST",
    "--activation-checkpointing full", "--cpu-offload --no-sync true",
    "--param-dtype bf16 --reduce-dtype fp32", "--use-orig-params",
    "--iterations 3 --micro-batch 2",
    /* Without the limiter the host runs ahead and the allocator
     * retries, with synchronizes, in the middle micro-batches (and
     * OOMs in the smallest device). */
    "--limit-all-gathers false --set gpu.memory=1GiB",
    "--limit-all-gathers false --set gpu.memory=200MiB",
};
const int tu_n_fold_settings =
    (int)(sizeof tu_fold_settings / sizeof tu_fold_settings[0]);

int
tu_split_args(char *buf, char **argv, int max)
{
    int argc = 0;
    for (char *tok = strtok(buf, " "); tok && argc < max - 1;
         tok = strtok(NULL, " "))
        argv[argc++] = tok;
    argv[argc] = NULL;
    return argc;
}

int
tu_run(struct tu_run *t, const char *args, int simulate, char **cause)
{
    memset(t, 0, sizeof *t);
    char *buf = xasprintf("simulate %s", args);
    char *argv[64];
    int argc = tu_split_args(buf, argv, 64);
    int rc = setup_parse_args(&t->r, "simulate", argc, argv, cause);
    if (rc == 0)
        rc = setup_prepare(&t->r, cause);
    free(buf);
    if (rc != 0)
        return -1;
    if (simulate) {
        engine_run(t->r.sched, t->r.topo, &t->res);
        metrics_compute(t->r.sched, t->r.topo, &t->res, &t->met);
        t->simulated = 1;
    }
    return 0;
}

void
tu_free(struct tu_run *t)
{
    if (t->simulated)
        engine_result_free(&t->res);
    setup_free(&t->r);
}

int
tu_count(const struct sched *s, int iter, enum sched_op_kind kind)
{
    int n = 0;
    for (int i = 0; i < s->n_ops; i++)
        if (s->ops[i].kind == kind && (iter < 0 || s->ops[i].iter == iter))
            n++;
    return n;
}

int
tu_count_on(const struct sched *s, int iter, enum sched_op_kind kind,
            enum sched_pg pg, enum sched_stream st)
{
    int n = 0;
    for (int i = 0; i < s->n_ops; i++) {
        const struct sched_op *op = &s->ops[i];
        if (op->kind == kind && op->pg == pg && op->stream == st
            && (iter < 0 || op->iter == iter))
            n++;
    }
    return n;
}

double
tu_alloc_bytes(const struct sched *s, int iter, enum mem_category c)
{
    double b = 0;
    for (int i = 0; i < s->n_ops; i++)
        if (s->ops[i].kind == OP_ALLOC && s->ops[i].cat == c
            && (iter < 0 || s->ops[i].iter == iter))
            b += (double)s->ops[i].bytes;
    return b;
}

char *
tu_temp_file(const char *text, size_t len)
{
    const char *dir = getenv("TMPDIR");
    char *path = xasprintf("%s/fsdpsim_test_XXXXXX", dir ? dir : "/tmp");
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    FILE *f = fdopen(fd, "w");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(text, 1, len, f), len);
    ck_assert_int_eq(fclose(f), 0);
    return path;
}

const char *
tu_data_path(const char *name)
{
    static char buf[4][1024];
    static int next;
    char *b = buf[next++ % 4];
    snprintf(b, sizeof buf[0], "%s/tests/data/%s", SRCDIR, name);
    return b;
}

char *
tu_temp_text(const char *text)
{
    return tu_temp_file(text, strlen(text));
}

int
tu_run_fsdpsim(const char *args, char *err, size_t errlen)
{
    const char *bin = getenv("FSDPSIM");
    if (bin == NULL)
        return -1;
    char *errpath = tu_temp_text("");
    char cmd[16384];
    snprintf(cmd, sizeof cmd, "'%s' %s >/dev/null 2>'%s'", bin, args,
             errpath);
    int st = system(cmd);
    if (err != NULL) {
        FILE *f = fopen(errpath, "r");
        ck_assert_ptr_nonnull(f);
        size_t n = fread(err, 1, errlen - 1, f);
        err[n] = '\0';
        fclose(f);
    }
    unlink(errpath);
    free(errpath);
    ck_assert(WIFEXITED(st));
    return WEXITSTATUS(st);
}

char *
tu_topo_text(const struct topo *t, void (*write)(const struct topo *, FILE *))
{
    char *text;
    size_t len;
    FILE *f = xopen_memstream(&text, &len);
    write(t, f);
    fclose(f);
    return text;
}
