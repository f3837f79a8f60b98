/*
 * check_oracle.c: `fsdpsim schedule --format json` against records of
 * real PyTorch FSDP1 (tests/data/oracle, provenance in its README.md).
 *
 * For each line of tests/data/oracle/records.list ("NAME ARGS...", @SRCDIR@
 * standing for the source tree), the schedule of `fsdpsim schedule ARGS
 * --format json` is compared with NAME.torch.json at three levels:
 *   1. units: per FSDP instance (pre-order, root first) its class,
 *      parameter numel, padded unsharded numel and shard numel;
 *   2. collectives: per (iteration, micro-batch) the sequence of
 *      "phase:kind unit group bytes dtype" in issue order;
 *   3. the same sequence with compute markers: F<u> the end of unit u's
 *      forward (torch: _post_forward(u); fsdpsim: u's last `forward` op of
 *      the phase), B<u> unit u's gradient ready (torch: the first
 *      _post_backward_hook(u); fsdpsim: u's last `backward` op), both only
 *      for units that hold parameters.
 * The markers are taken per phase, so that a unit's forward inside a
 * reentrant checkpoint's recompute (a `forward` op in the backward phase,
 * _post_forward in PyTorch) counts beside its forward in the forward phase.
 */
#include <check.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"

#define MAX_RECORDS 256

struct record {
    char name[128];
    char args[2048];
};

static struct record records[MAX_RECORDS];
static int n_records;

static void
load_records(void)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/tests/data/oracle/records.list", SRCDIR);
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        fprintf(stderr, "check_oracle: cannot open %s\n", path);
        exit(1);
    }
    char line[4096];
    while (fgets(line, sizeof line, f) && n_records < MAX_RECORDS) {
        line[strcspn(line, "\n")] = 0;
        if (line[0] == 0 || line[0] == '#')
            continue;
        char *sp = strchr(line, ' ');
        if (sp == NULL)
            continue;
        *sp = 0;
        struct record *r = &records[n_records++];
        size_t nl = strlen(line);
        if (nl >= sizeof r->name)
            nl = sizeof r->name - 1;
        memcpy(r->name, line, nl);
        r->name[nl] = 0;
        /* @SRCDIR@ -> the source tree */
        const char *in = sp + 1;
        size_t o = 0;
        while (*in && o + 1 < sizeof r->args) {
            if (strncmp(in, "@SRCDIR@", 8) == 0) {
                int k = snprintf(r->args + o, sizeof r->args - o, "%s",
                                 SRCDIR);
                o += (size_t)k < sizeof r->args - o ? (size_t)k
                                                    : sizeof r->args - o - 1;
                in += 8;
            } else {
                r->args[o++] = *in++;
            }
        }
        r->args[o] = 0;
    }
    fclose(f);
}

/* ---- token sequences per (iter, micro) ---- */

struct seq {
    int iter, micro;
    char **tok;
    int n, cap;
};

struct seqs {
    struct seq *s;
    int n, cap;
};

static struct seq *
seq_for(struct seqs *ss, int iter, int micro)
{
    for (int i = 0; i < ss->n; i++)
        if (ss->s[i].iter == iter && ss->s[i].micro == micro)
            return &ss->s[i];
    if (ss->n == ss->cap) {
        ss->cap = ss->cap ? 2 * ss->cap : 8;
        ss->s = realloc(ss->s, sizeof *ss->s * (size_t)ss->cap);
        ck_assert_ptr_nonnull(ss->s);
    }
    struct seq *q = &ss->s[ss->n++];
    memset(q, 0, sizeof *q);
    q->iter = iter;
    q->micro = micro;
    return q;
}

static void
seq_add(struct seq *q, const char *tok)
{
    if (q->n == q->cap) {
        q->cap = q->cap ? 2 * q->cap : 32;
        q->tok = realloc(q->tok, sizeof *q->tok * (size_t)q->cap);
        ck_assert_ptr_nonnull(q->tok);
    }
    q->tok[q->n++] = strdup(tok);
}

static void
seqs_free(struct seqs *ss)
{
    for (int i = 0; i < ss->n; i++) {
        for (int k = 0; k < ss->s[i].n; k++)
            free(ss->s[i].tok[k]);
        free(ss->s[i].tok);
    }
    free(ss->s);
    memset(ss, 0, sizeof *ss);
}

static const char *
short_dtype(const char *d)
{
    if (strcmp(d, "float32") == 0)
        return "fp32";
    if (strcmp(d, "bfloat16") == 0)
        return "bf16";
    if (strcmp(d, "float16") == 0)
        return "fp16";
    return d;
}

static const char *
jstr(json_t *o, const char *key)
{
    const char *s = json_string_value(json_object_get(o, key));
    return s ? s : "";
}

static long long
jint(json_t *o, const char *key)
{
    return (long long)json_integer_value(json_object_get(o, key));
}

/* Units of the torch record that hold a FlatParameter. */
static int
torch_has_param(json_t *t, long long u)
{
    size_t i;
    json_t *x;
    json_array_foreach(json_object_get(t, "units"), i, x)
        if (jint(x, "id") == u)
            return json_is_true(json_object_get(x, "has_flat_param"));
    return 0;
}

static int
sim_has_param(json_t *s, long long u)
{
    size_t i;
    json_t *x;
    json_array_foreach(json_object_get(s, "units"), i, x)
        if (jint(x, "id") == u)
            return jint(x, "numel") > 0;
    return 0;
}

static void
torch_tokens(json_t *t, int markers, struct seqs *out)
{
    size_t i;
    json_t *e;
    int n_units = (int)json_array_size(json_object_get(t, "units"));
    /* first _post_backward_hook per (iter, micro, unit) */
    struct seqs seen = {0};
    json_array_foreach(json_object_get(t, "events"), i, e) {
        const char *phase = jstr(e, "phase");
        if (strcmp(phase, "construct") == 0 || strcmp(phase, "init") == 0
            || strcmp(phase, "done") == 0)
            continue;
        int it = (int)jint(e, "iter"), mi = (int)jint(e, "micro");
        struct seq *q = seq_for(out, it, mi);
        char tok[256];
        json_t *ju = json_object_get(e, "unit");
        long long u = json_is_integer(ju) ? json_integer_value(ju) : -1;
        if (strcmp(jstr(e, "type"), "collective") == 0) {
            snprintf(tok, sizeof tok, "%c:%s u%lld %s %lldB %s", phase[0],
                     jstr(e, "kind"), u, jstr(e, "pg"), jint(e, "bytes"),
                     short_dtype(jstr(e, "dtype")));
            seq_add(q, tok);
        } else if (markers && strcmp(jstr(e, "type"), "hook") == 0 && u >= 0
                   && torch_has_param(t, u)) {
            const char *name = jstr(e, "name");
            if (strcmp(name, "_post_forward") == 0) {
                snprintf(tok, sizeof tok, "%c:F%lld", phase[0], u);
                seq_add(q, tok);
            } else if (strcmp(name, "_post_backward_hook") == 0) {
                struct seq *sq = seq_for(&seen, it, mi);
                if (sq->n == 0)
                    for (int k = 0; k < n_units; k++)
                        seq_add(sq, "0");
                if (u < n_units && sq->tok[u][0] == '0') {
                    sq->tok[u][0] = '1';
                    snprintf(tok, sizeof tok, "%c:B%lld", phase[0], u);
                    seq_add(q, tok);
                }
            }
        }
    }
    seqs_free(&seen);
}

static void
sim_tokens(json_t *s, int markers, struct seqs *out)
{
    json_t *ops = json_object_get(s, "ops");
    size_t n = json_array_size(ops);
    /* An op is unit u's marker when no later op of the same iteration,
     * micro-batch, phase, kind and unit follows it. */
    char *last = calloc(n ? n : 1, 1);
    ck_assert_ptr_nonnull(last);
    for (size_t i = 0; i < n; i++) {
        json_t *o = json_array_get(ops, i);
        const char *k = jstr(o, "kind");
        if (strcmp(k, "forward") && strcmp(k, "backward"))
            continue;
        last[i] = 1;
        for (size_t j = i + 1; j < n; j++) {
            json_t *p = json_array_get(ops, j);
            if (jint(p, "iter") != jint(o, "iter")
                || jint(p, "micro") != jint(o, "micro"))
                break;
            if (strcmp(jstr(p, "phase"), jstr(o, "phase")) == 0
                && strcmp(jstr(p, "kind"), k) == 0
                && jint(p, "unit") == jint(o, "unit")) {
                last[i] = 0;
                break;
            }
        }
    }
    for (size_t i = 0; i < n; i++) {
        json_t *o = json_array_get(ops, i);
        const char *k = jstr(o, "kind");
        const char *phase = jstr(o, "phase");
        struct seq *q = seq_for(out, (int)jint(o, "iter"),
                                (int)jint(o, "micro"));
        char tok[256];
        if (!strcmp(k, "allgather") || !strcmp(k, "reducescatter")
            || !strcmp(k, "allreduce")) {
            snprintf(tok, sizeof tok, "%c:%s u%lld %s %lldB %s", phase[0], k,
                     jint(o, "unit"), jstr(o, "pg"), jint(o, "bytes"),
                     jstr(o, "dtype"));
            seq_add(q, tok);
        } else if (markers && last[i] && sim_has_param(s, jint(o, "unit"))) {
            snprintf(tok, sizeof tok, "%c:%c%lld", phase[0],
                     !strcmp(k, "forward") ? 'F' : 'B', jint(o, "unit"));
            seq_add(q, tok);
        }
    }
    free(last);
}

/* 0 when every (iter, micro) sequence matches; prints the first
 * difference of each that does not. */
static int
compare_seqs(const char *name, const char *level, struct seqs *a,
             struct seqs *b)
{
    int bad = 0;
    for (int pass = 0; pass < 2; pass++) {
        struct seqs *x = pass ? b : a, *y = pass ? a : b;
        for (int i = 0; i < x->n; i++) {
            struct seq *p = &x->s[i];
            struct seq *q = NULL;
            for (int j = 0; j < y->n && !q; j++)
                if (y->s[j].iter == p->iter && y->s[j].micro == p->micro)
                    q = &y->s[j];
            int qn = q ? q->n : 0;
            if (pass == 1 && q)
                continue;       /* compared in the first pass */
            int k = 0;
            while (k < p->n && k < qn && strcmp(p->tok[k], q->tok[k]) == 0)
                k++;
            if (k == p->n && k == qn)
                continue;
            bad = 1;
            struct seq *t = pass ? q : p, *s = pass ? p : q;
            fprintf(stderr, "%s: %s differ at iter %d micro %d, token %d: "
                    "torch '%s', fsdpsim '%s' (torch %d tokens, fsdpsim %d)"
                    "\n", name, level, p->iter, p->micro, k,
                    t && k < t->n ? t->tok[k] : "(end)",
                    s && k < s->n ? s->tok[k] : "(end)", t ? t->n : 0,
                    s ? s->n : 0);
        }
    }
    return bad;
}

static int
compare_units(const char *name, json_t *t, json_t *s)
{
    json_t *tu = json_object_get(t, "units"), *su = json_object_get(s, "units");
    size_t n = json_array_size(tu);
    if (n != json_array_size(su)) {
        fprintf(stderr, "%s: units: torch %zu, fsdpsim %zu\n", name, n,
                json_array_size(su));
        return 1;
    }
    int bad = 0;
    for (size_t i = 0; i < n; i++) {
        json_t *a = json_array_get(tu, i), *b = json_array_get(su, i);
        json_t *po = json_object_get(a, "numel_params_only");
        long long numel = json_is_integer(po) ? json_integer_value(po)
                                              : jint(a, "numel_unpadded");
        if (strcmp(jstr(a, "class"), jstr(b, "class")) != 0
            || numel != jint(b, "numel")
            || jint(a, "numel_padded") != jint(b, "padded_numel")
            || jint(a, "shard_numel") != jint(b, "shard_numel")) {
            fprintf(stderr, "%s: unit %zu: torch (%s, %lld, %lld, %lld), "
                    "fsdpsim (%s, %lld, %lld, %lld)\n", name, i,
                    jstr(a, "class"), numel, jint(a, "numel_padded"),
                    jint(a, "shard_numel"), jstr(b, "class"),
                    jint(b, "numel"), jint(b, "padded_numel"),
                    jint(b, "shard_numel"));
            bad = 1;
        }
    }
    return bad;
}

START_TEST(test_oracle_record)
{
    const struct record *r = &records[_i];
    const char *sim = getenv("FSDPSIM");
    char cmd[8192], path[4096];
    snprintf(cmd, sizeof cmd, "'%s' schedule %s --format json 2>/dev/null",
             sim ? sim : "./fsdpsim", r->args);
    FILE *p = popen(cmd, "r");
    ck_assert_ptr_nonnull(p);
    json_error_t err;
    json_t *s = json_loadf(p, 0, &err);
    int rc = pclose(p);
    ck_assert_msg(s != NULL && rc == 0, "%s: fsdpsim schedule failed (%s)",
                  r->name, s ? "exit status" : err.text);
    snprintf(path, sizeof path, "%s/tests/data/oracle/%s.torch.json", SRCDIR,
             r->name);
    json_t *t = json_load_file(path, 0, &err);
    ck_assert_msg(t != NULL, "%s: %s", path, err.text);

    int bad = compare_units(r->name, t, s);
    for (int markers = 0; markers < 2; markers++) {
        struct seqs a = {0}, b = {0};
        torch_tokens(t, markers, &a);
        sim_tokens(s, markers, &b);
        bad |= compare_seqs(r->name, markers ? "order+markers"
                                             : "collectives", &a, &b);
        seqs_free(&a);
        seqs_free(&b);
    }
    json_decref(s);
    json_decref(t);
    ck_assert_msg(!bad, "%s: fsdpsim's schedule differs from PyTorch's "
                  "(details above)", r->name);
}
END_TEST

static Suite *
oracle_suite(void)
{
    Suite *s = suite_create("oracle");
    TCase *tc = tcase_create("records");
    tcase_set_timeout(tc, 120);
    tcase_add_loop_test(tc, test_oracle_record, 0, n_records);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    load_records();
    if (n_records == 0) {
        fprintf(stderr, "check_oracle: no records\n");
        return 1;
    }
    return tu_main(oracle_suite());
}
