/*
 * check_oracle.c: `fsdpsim schedule --format json` against records of
 * real PyTorch FSDP1 and FSDP2 (tests/data/oracle, provenance in its
 * README.md; the FSDP2 records' fsdpsim arguments carry --fsdp-version 2
 * and their hooks are FSDPParamGroup.post_forward and post_backward).
 *
 * For each line of tests/data/oracle/records.list ("NAME ARGS...", @SRCDIR@
 * standing for the source tree), the schedule of `fsdpsim schedule ARGS
 * --format json` is compared with NAME.torch.json at three levels:
 *   1. units: per FSDP instance (pre-order, root first) its class,
 *      parameter numel, padded unsharded numel and shard numel;
 *   2. collectives: per (iteration, micro-batch) the sequence of
 *      "phase:kind unit group bytes dtype" in issue order (an FSDP2
 *      post-forward group with its size: torch's pg_size, fsdpsim's
 *      post_forward_ranks);
 *   3. the same sequence with compute markers: F<u> the end of unit u's
 *      forward (torch: _post_forward(u); fsdpsim: the last `forward` op of
 *      the phase of u or of a unit nested in u), B<u> unit u's gradient ready (torch: the first
 *      _post_backward_hook(u); fsdpsim: u's last `backward` op), both only
 *      for units that hold parameters.
 * The markers are taken per phase, so that a unit's forward inside a
 * reentrant checkpoint's recompute (a `forward` op in the backward phase,
 * _post_forward in PyTorch) counts beside its forward in the forward phase.
 *
 * A record that has memory events (type "mem") is compared at a fourth
 * level, memory: per (iteration, micro-batch) the sequence of changes
 * "phase:X+u bytes" (becomes live) / "phase:X-u bytes" (freed) of
 *   P  unit u's unsharded parameters (torch: _full_param_padded's storage,
 *      non-zero after _unshard, 0 after a freeing _reshard; NO_SHARD with
 *      a low-precision param dtype: _mp_shard; fsdpsim: its
 *      unsharded_params buffer),
 *   G  u's unsharded gradient (torch: flat_param.grad of the unsharded
 *      size, or NO_SHARD's gradient before its all-reduce; fsdpsim:
 *      grad_unsharded),
 *   S  u's sharded gradient (torch: _saved_grad_shard or flat_param.grad of
 *      the shard's size, NO_SHARD's all-reduced gradient; fsdpsim:
 *      grad_sharded),
 * in issue order; the optimizer step's changes (torch sees them at once,
 * after zero_grad) are compared as a set, under micro-batch -1.  The
 * unsharded gradients' allocations (G+) are compared as a set per
 * (iteration, micro-batch), under micro-batch 1000 + m: fsdpsim allocates
 * u's unsharded gradient when u's first backward leaf runs, while torch's
 * FlatParameter.grad appears only when its AccumulateGrad node runs, just
 * before _post_backward_hook; in between, autograd holds the parameters'
 * gradients as separate tensors that the recorder cannot see.  An S+u
 * right before G-u is read as G-u, S+u: where the reduced gradient is
 * cast to the parameters' dtype (a bf16 reduce of fp32 parameters), torch
 * swaps flat_param.grad's storage for the cast's, which the recorder sees
 * as one change, and fsdpsim allocates the cast before it frees the
 * reduced gradient.  A record whose header has mem_what
 * (the FSDP2 ones: ["P"]) is compared in those categories only.
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

/* The records' directory: tests/data/oracle, or $CHECK_ORACLE_DATA (to try
 * new records before they are committed). */
static char data_dir[4096];

static void
load_records(void)
{
    char path[4096 + 32];
    const char *d = getenv("CHECK_ORACLE_DATA");
    if (d != NULL && d[0] != 0)
        snprintf(data_dir, sizeof data_dir, "%s", d);
    else
        snprintf(data_dir, sizeof data_dir, "%s/tests/data/oracle", SRCDIR);
    snprintf(path, sizeof path, "%s/records.list", data_dir);
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
            /* FSDP2's post-forward meshes by size ("post_forward/4"). */
            char pg[64];
            snprintf(pg, sizeof pg, "%s", jstr(e, "pg"));
            if (strcmp(pg, "post_forward") == 0)
                snprintf(pg, sizeof pg, "post_forward/%lld",
                         jint(e, "pg_size"));
            snprintf(tok, sizeof tok, "%c:%s u%lld %s %lldB %s", phase[0],
                     jstr(e, "kind"), u, pg, jint(e, "bytes"),
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

/* Unit a contains unit b (or is b): torch's fqns, "<root>" the root. */
static int
unit_contains(json_t *t, long long a, long long b)
{
    json_t *tu = json_object_get(t, "units");
    json_t *ua = json_array_get(tu, (size_t)a), *ub = json_array_get(tu,
                                                                   (size_t)b);
    if (ua == NULL || ub == NULL)
        return a == b;
    const char *fa = jstr(ua, "fqn"), *fb = jstr(ub, "fqn");
    if (a == b || strcmp(fa, "<root>") == 0)
        return 1;
    size_t n = strlen(fa);
    return strncmp(fa, fb, n) == 0 && (fb[n] == 0 || fb[n] == '.');
}

/* F<u>: torch's _post_forward(u) runs when u's module returns, after the
 * forward of every unit nested in it; fsdpsim's is after the last
 * `forward` op, of the same iteration, micro-batch and phase, of u or of
 * a unit u contains, where u has a forward op of its own in that phase.
 * B<u>: u's last `backward` op. */
static void
sim_tokens(json_t *t, json_t *s, int markers, struct seqs *out)
{
    json_t *ops = json_object_get(s, "ops");
    size_t n = json_array_size(ops);
    long long n_units = (long long)json_array_size(json_object_get(s, "units"));
    for (size_t i = 0; i < n; i++) {
        json_t *o = json_array_get(ops, i);
        const char *k = jstr(o, "kind");
        const char *phase = jstr(o, "phase");
        struct seq *q = seq_for(out, (int)jint(o, "iter"),
                                (int)jint(o, "micro"));
        char tok[256];
        if (!strcmp(k, "allgather") || !strcmp(k, "reducescatter")
            || !strcmp(k, "allreduce")) {
            char pg[64];
            snprintf(pg, sizeof pg, "%s", jstr(o, "pg"));
            if (strcmp(pg, "post_forward") == 0)
                snprintf(pg, sizeof pg, "post_forward/%lld",
                         jint(o, "post_forward_ranks"));
            snprintf(tok, sizeof tok, "%c:%s u%lld %s %lldB %s", phase[0], k,
                     jint(o, "unit"), pg, jint(o, "bytes"),
                     jstr(o, "dtype"));
            seq_add(q, tok);
            continue;
        }
        if (!markers || (strcmp(k, "forward") && strcmp(k, "backward")))
            continue;
        int fwd = !strcmp(k, "forward");
        long long v = jint(o, "unit");
        /* innermost first: pre-order ids, containers have smaller ones */
        for (long long u = fwd ? n_units - 1 : v; u >= 0; u--) {
            if (!fwd && u != v)
                break;
            if (!sim_has_param(s, u) || (fwd && !unit_contains(t, u, v)))
                continue;
            int own = 0, later = 0;
            for (size_t j = 0; j < n && !later; j++) {
                json_t *p = json_array_get(ops, j);
                if (jint(p, "iter") != jint(o, "iter")
                    || jint(p, "micro") != jint(o, "micro")
                    || strcmp(jstr(p, "phase"), phase) != 0
                    || strcmp(jstr(p, "kind"), k) != 0)
                    continue;
                long long w = jint(p, "unit");
                if (w == u)
                    own = 1;
                if (j > i && (fwd ? unit_contains(t, u, w) : w == u))
                    later = 1;
            }
            if (!own || later)
                continue;
            snprintf(tok, sizeof tok, "%c:%c%lld", phase[0], fwd ? 'F' : 'B',
                     u);
            seq_add(q, tok);
        }
    }
}

static int
cmp_tok(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* "p:S+u ..." followed by "p:G-u ..." (same phase, same unit): swapped. */
static void
canon_reduce_pairs(struct seqs *ss)
{
    for (int i = 0; i < ss->n; i++) {
        struct seq *q = &ss->s[i];
        for (int k = 0; k + 1 < q->n; k++) {
            const char *a = q->tok[k], *b = q->tok[k + 1];
            size_t la = strcspn(a, " "), lb = strcspn(b, " ");
            if (strlen(a) > 4 && strlen(b) > 4 && a[0] == b[0]
                && a[2] == 'S' && a[3] == '+' && b[2] == 'G' && b[3] == '-'
                && la == lb && strncmp(a + 4, b + 4, la - 4) == 0) {
                char *t = q->tok[k];
                q->tok[k] = q->tok[k + 1];
                q->tok[k + 1] = t;
                k++;
            }
        }
    }
}

/* The optimizer phase's memory changes: sorted. */
#define MEM_GPLUS_MICRO 1000

static void
sort_optimizer(struct seqs *ss)
{
    for (int i = 0; i < ss->n; i++)
        if (ss->s[i].micro == -1 || ss->s[i].micro >= MEM_GPLUS_MICRO)
            qsort(ss->s[i].tok, (size_t)ss->s[i].n, sizeof *ss->s[i].tok,
                  cmp_tok);
}

static int
torch_has_mem(json_t *t)
{
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(t, "events"), i, e)
        if (strcmp(jstr(e, "type"), "mem") == 0)
            return 1;
    return 0;
}

static void
torch_mem_tokens(json_t *t, struct seqs *out)
{
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(t, "events"), i, e) {
        if (strcmp(jstr(e, "type"), "mem") != 0)
            continue;
        const char *phase = jstr(e, "phase");
        int opt = phase[0] == 'o';
        int live = json_is_true(json_object_get(e, "live"));
        int micro = (int)jint(e, "micro");
        if (opt)
            micro = -1;
        else if (live && strcmp(jstr(e, "what"), "G") == 0)
            micro += MEM_GPLUS_MICRO;
        struct seq *q = seq_for(out, (int)jint(e, "iter"), micro);
        char tok[256];
        snprintf(tok, sizeof tok, "%c:%s%c%lld %lldB", phase[0],
                 jstr(e, "what"), live ? '+' : '-', jint(e, "unit"),
                 jint(e, "bytes"));
        seq_add(q, tok);
    }
    sort_optimizer(out);
}

/* Whether the record's memory events cover category WHAT: all three
 * unless its header lists them (mem_what: the FSDP2 records hold P). */
static int
torch_mem_covers(json_t *t, const char *what)
{
    json_t *list = json_object_get(json_object_get(t, "header"), "mem_what");
    if (!json_is_array(list))
        return 1;
    size_t i;
    json_t *w;
    json_array_foreach(list, i, w)
        if (json_is_string(w) && strcmp(json_string_value(w), what) == 0)
            return 1;
    return 0;
}

static void
sim_mem_tokens(json_t *t, json_t *s, struct seqs *out)
{
    static const struct {
        const char *category, *what;
    } cats[] = {
        {"unsharded_params", "P"},
        {"grad_unsharded", "G"},
        {"grad_sharded", "S"},
    };
    enum { N_CATS = sizeof cats / sizeof cats[0] };
    json_t *ops = json_object_get(s, "ops");
    int n_units = (int)json_array_size(json_object_get(s, "units"));
    int *live = calloc((size_t)(n_units > 0 ? n_units : 1) * N_CATS,
                       sizeof *live);
    ck_assert_ptr_nonnull(live);
    size_t i;
    json_t *o;
    json_array_foreach(ops, i, o) {
        const char *k = jstr(o, "kind");
        int is_alloc = strcmp(k, "alloc") == 0;
        if (!is_alloc && strcmp(k, "free") != 0)
            continue;
        long long u = jint(o, "unit");
        if (u < 0 || u >= n_units)
            continue;
        int c = 0;
        while (c < N_CATS && strcmp(cats[c].category, jstr(o, "category")))
            c++;
        if (c == N_CATS || !torch_mem_covers(t, cats[c].what))
            continue;
        int *l = &live[u * N_CATS + c];
        int was = *l > 0;
        *l += is_alloc ? 1 : -1;
        if ((*l > 0) == was)
            continue;
        const char *phase = jstr(o, "phase");
        int micro = (int)jint(o, "micro");
        if (phase[0] == 'o')
            micro = -1;
        else if (is_alloc && cats[c].what[0] == 'G')
            micro += MEM_GPLUS_MICRO;
        struct seq *q = seq_for(out, (int)jint(o, "iter"), micro);
        char tok[256];
        snprintf(tok, sizeof tok, "%c:%s%c%lld %lldB", phase[0], cats[c].what,
                 is_alloc ? '+' : '-', u, jint(o, "bytes"));
        seq_add(q, tok);
    }
    free(live);
    canon_reduce_pairs(out);
    sort_optimizer(out);
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
    char cmd[8192], path[4096 + 256];
    snprintf(cmd, sizeof cmd, "'%s' schedule %s --format json 2>/dev/null",
             sim ? sim : "./fsdpsim", r->args);
    FILE *p = popen(cmd, "r");
    ck_assert_ptr_nonnull(p);
    json_error_t err;
    json_t *s = json_loadf(p, 0, &err);
    int rc = pclose(p);
    ck_assert_msg(s != NULL && rc == 0, "%s: fsdpsim schedule failed (%s)",
                  r->name, s ? "exit status" : err.text);
    snprintf(path, sizeof path, "%s/%s.torch.json", data_dir, r->name);
    json_t *t = json_load_file(path, 0, &err);
    ck_assert_msg(t != NULL, "%s: %s", path, err.text);

    int bad = compare_units(r->name, t, s);
    for (int markers = 0; markers < 2; markers++) {
        struct seqs a = {0}, b = {0};
        torch_tokens(t, markers, &a);
        sim_tokens(t, s, markers, &b);
        bad |= compare_seqs(r->name, markers ? "order+markers"
                                             : "collectives", &a, &b);
        seqs_free(&a);
        seqs_free(&b);
    }
    if (torch_has_mem(t)) {
        struct seqs a = {0}, b = {0};
        torch_mem_tokens(t, &a);
        sim_mem_tokens(t, s, &b);
        bad |= compare_seqs(r->name, "memory", &a, &b);
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
