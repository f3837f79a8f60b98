/*
 * compare.c: reading a predicted and a measured step and comparing them
 * (see compare.h; the Kineto import is in kineto.c).
 *
 * Assumptions about the workload: one rank's view of a few steps, a few
 * thousand GPU ops a step.  Files are read whole (a timeline .dat is
 * ~100 B an op; a profiler trace is JSON, parsed by jansson into memory),
 * and the ops of the compared step are sorted, so everything is
 * O(n log n) in the ops of the file.
 *
 * What is compared, side by side:
 *  - per op kind: how many, their summed duration, the error of the sum,
 *    and the median of the per-op errors of the matched pairs;
 *  - "compute": forward, backward, recompute, optimizer and cast ops, or
 *    in a profiler trace every kernel that is not NCCL's (which is what a
 *    trace can tell apart without annotations);
 *  - per phase (forward, backward, optimizer), when both sides know the
 *    kind of their compute ops: the step is cut where the compute stream
 *    switches phase (at the end of a phase's last compute op), so the
 *    phases add up to the step and exposed communication before a phase's
 *    first op counts to that phase;
 *  - the step: first op start to last op end (for a prediction, the first
 *    op of the last iteration to its optimizer step; this excludes the
 *    host gap before the step that `simulate`'s "step time" includes);
 *  - communication and exposed communication, with metrics_overlap(), the
 *    definition `simulate` prints.
 */
#include "compare.h"
#include "kineto.h"
#include "median.h"
#include "metrics.h"
#include "textfile.h"
#include "units.h"
#include "xalloc.h"

#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TIMELINE_COLUMNS \
    "# stream_index stream op kind unit iter micro start_us end_us bytes"
#define MEMORY_COLUMNS "# t_us allocated_bytes"

const char *
compare_kind_name(int kind)
{
    if (kind == COMPARE_KERNEL || kind == COMPARE_ROW_COMPUTE)
        return "compute";
    if (kind == COMPARE_NCCL_OTHER)
        return "nccl";
    return sched_op_kind_name(kind);
}

const char *
compare_format_name(enum compare_format f)
{
    switch (f) {
    case COMPARE_TIMELINE_DAT: return "fsdpsim timeline";
    case COMPARE_FSDPSIM_TRACE: return "fsdpsim trace";
    case COMPARE_KINETO: return "PyTorch profiler trace";
    }
    return "?";
}

/* The sched_op_kind called NAME (as sched_op_kind_name() writes it), or
 * -1. */
static int
kind_by_name(const char *name, size_t len)
{
    for (int k = 0; k < OP_KIND_COUNT; k++) {
        const char *n = sched_op_kind_name(k);
        if (strlen(n) == len && strncmp(n, name, len) == 0)
            return k;
    }
    return -1;
}

void
compare_timeline_free(struct compare_timeline *tl)
{
    if (tl == NULL)
        return;
    for (int i = 0; i < tl->n_streams; i++)
        free(tl->stream_names[i]);
    free(tl->stream_names);
    free(tl->ops);
    free(tl->step_label);
    memset(tl, 0, sizeof *tl);
}

static void
push_op(struct compare_timeline *tl, size_t *cap, const struct compare_op *o)
{
    tl->ops = xgrow(tl->ops, cap, (size_t)tl->n_ops + 1, sizeof *tl->ops);
    tl->ops[tl->n_ops++] = *o;
}

/* The end of reading one of fsdpsim's own files (timeline .dat or
 * trace), where ops carry their iteration: "PATH: NONE" when it held no
 * op; else only the last iteration's ops are kept, the label names it,
 * and the streams get fsdpsim's names.  0, or -1 with *cause set. */
static int
finish_own_timeline(struct compare_timeline *tl, const char *path,
                    const char *none, char **cause)
{
    if (tl->n_ops == 0) {
        *cause = xasprintf("%s: %s", path, none);
        return -1;
    }
    int last = -1;
    for (int i = 0; i < tl->n_ops; i++)
        if (tl->ops[i].iter > last)
            last = tl->ops[i].iter;
    int n = 0;
    for (int i = 0; i < tl->n_ops; i++)
        if (tl->ops[i].iter == last)
            tl->ops[n++] = tl->ops[i];
    tl->n_ops = n;
    tl->step = last;
    tl->step_label = xasprintf("step %d", last);
    tl->n_streams = STREAM_COUNT;
    tl->stream_names = xcalloc(STREAM_COUNT, sizeof(char *));
    for (int i = 0; i < STREAM_COUNT; i++)
        tl->stream_names[i] = xstrdup(sched_stream_name(i));
    return 0;
}

/* ---- timeline .dat --------------------------------------------------- */

/* The next line of *REST holding data, cut at its newline and without its
 * leading blanks, or NULL at the end; blank lines and '#' comments are
 * skipped.  *LINE counts every line read, for messages. */
static char *
next_data_line(char **rest, int *line)
{
    while (*rest != NULL) {
        char *l = *rest;
        *rest = strchr(l, '\n');
        if (*rest)
            *(*rest)++ = '\0';
        ++*line;
        while (isspace((unsigned char)*l))
            l++;
        if (*l != '\0' && *l != '#')
            return l;
    }
    return NULL;
}

static int
read_timeline_dat(const char *path, char *text, struct compare_timeline *tl,
                  char **cause)
{
    size_t cap = 0;
    int line = 0;
    char *rest = text;
    tl->format = COMPARE_TIMELINE_DAT;
    tl->has_op_ids = 1;
    tl->peak_mem_bytes = -1;
    for (char *l; (l = next_data_line(&rest, &line)) != NULL;) {
        struct compare_op o;
        char stream[16], kind[32];
        double start_us, end_us, bytes;
        int n_used = 0;
        if (sscanf(l, "%d %15s %d %31s %d %d %d %lf %lf %lf %n", &o.stream,
                   stream, &o.op, kind, &o.unit, &o.iter, &o.micro,
                   &start_us, &end_us, &bytes, &n_used) != 10
            || l[n_used] != '\0') {
            *cause = xasprintf("%s:%d: cannot read this line (expected "
                               "stream_index stream op kind unit iter micro "
                               "start_us end_us bytes)", path, line);
            return -1;
        }
        o.kind = kind_by_name(kind, strlen(kind));
        if (o.kind < 0) {
            *cause = xasprintf("%s:%d: unknown op kind '%s'", path, line,
                               kind);
            return -1;
        }
        if (o.stream < 0 || o.stream >= STREAM_COUNT || o.iter < 0
            || !(end_us >= start_us) || !isfinite(start_us)
            || !isfinite(end_us) || fabs(end_us) > 9e12) {
            *cause = xasprintf("%s:%d: stream index, iteration or times out "
                               "of range", path, line);
            return -1;
        }
        o.start_ns = units_us_to_ns(start_us);
        o.end_ns = units_us_to_ns(end_us);
        o.bytes = bytes;
        push_op(tl, &cap, &o);
    }
    return finish_own_timeline(tl, path, "no ops (an empty timeline?)",
                               cause);
}

/* ---- fsdpsim Chrome trace -------------------------------------------- */

static int
json_num(const json_t *v, double *out)
{
    if (json_is_integer(v))
        *out = (double)json_integer_value(v);
    else if (json_is_real(v))
        *out = json_real_value(v);
    else
        return -1;
    return isfinite(*out) ? 0 : -1;
}

/* Is EV one of fsdpsim's op events (args.op and args.iter)? */
static int
is_fsdpsim_op(const json_t *ev)
{
    const json_t *args = json_object_get(ev, "args");
    const json_t *ph = json_object_get(ev, "ph");
    return json_is_string(ph) && strcmp(json_string_value(ph), "X") == 0
           && json_is_integer(json_object_get(args, "op"))
           && json_is_integer(json_object_get(args, "iter"));
}

static int
read_fsdpsim_trace(const char *path, const json_t *events,
                   struct compare_timeline *tl, char **cause)
{
    size_t cap = 0, i;
    const json_t *ev;
    tl->format = COMPARE_FSDPSIM_TRACE;
    tl->has_op_ids = 1;
    tl->peak_mem_bytes = -1;
    json_array_foreach(events, i, ev) {
        const json_t *args = json_object_get(ev, "args");
        const json_t *name = json_object_get(ev, "name");
        double ts, dur, tid, v;
        if (json_is_string(name) && strcmp(json_string_value(name),
                                           "memory") == 0
            && json_num(json_object_get(args, "allocated_GiB"), &v) == 0) {
            int64_t b = (int64_t)llround(v * 1073741824.0);
            if (b > tl->peak_mem_bytes)
                tl->peak_mem_bytes = b;
            continue;
        }
        if (!is_fsdpsim_op(ev))
            continue;
        const char *nm = json_is_string(name) ? json_string_value(name) : "";
        size_t len = strcspn(nm, " ");
        struct compare_op o;
        o.kind = kind_by_name(nm, len);
        if (o.kind == OP_CPU_WAIT)
            continue;       /* host waits: not in the timeline either */
        if (o.kind < 0 || json_num(json_object_get(ev, "ts"), &ts) != 0
            || json_num(json_object_get(ev, "dur"), &dur) != 0
            || json_num(json_object_get(ev, "tid"), &tid) != 0
            || !(dur >= 0) || fabs(ts) > 9e12 || dur > 9e12 || tid < 0
            || tid >= STREAM_COUNT) {
            *cause = xasprintf("%s: traceEvents[%zu]: expected a name "
                               "'KIND uUNIT', ts, dur and a stream tid 0..%d",
                               path, i, STREAM_COUNT - 1);
            return -1;
        }
        o.op = (int)json_integer_value(json_object_get(args, "op"));
        o.iter = (int)json_integer_value(json_object_get(args, "iter"));
        const json_t *mi = json_object_get(args, "micro");
        o.micro = json_is_integer(mi) ? (int)json_integer_value(mi) : 0;
        o.stream = (int)tid;
        o.unit = nm[len] == ' ' && nm[len + 1] == 'u'
                     ? atoi(nm + len + 2) : -1;
        o.start_ns = units_us_to_ns(ts);
        o.end_ns = o.start_ns + units_us_to_ns(dur);
        o.bytes = 0;
        json_num(json_object_get(args, "bytes"), &o.bytes);
        push_op(tl, &cap, &o);
    }
    return finish_own_timeline(tl, path, "no op events in the trace",
                               cause);
}

/* ---- loading --------------------------------------------------------- */

static char *
read_text(const char *path, char **cause)
{
    return textfile_load(path, COMPARE_MAX_FILE_BYTES,
                         "is it a timeline or trace?", cause);
}

static int
load_json(const char *path, const char *text, struct compare_timeline *tl,
          char **cause)
{
    json_error_t jerr;
    json_t *root = json_loads(text, JSON_REJECT_DUPLICATES, &jerr);
    if (root == NULL) {
        *cause = xasprintf("%s:%d: not valid JSON: %s", path, jerr.line,
                           jerr.text);
        return -1;
    }
    const json_t *events = json_is_array(root)
                               ? root : json_object_get(root, "traceEvents");
    int rc = -1;
    if (!json_is_array(events)) {
        *cause = xasprintf("%s: JSON without 'traceEvents' (expected a "
                           "Chrome trace)", path);
        goto out;
    }
    size_t i;
    const json_t *ev;
    json_array_foreach(events, i, ev)
        if (is_fsdpsim_op(ev)) {
            rc = read_fsdpsim_trace(path, events, tl, cause);
            goto out;
        }
    if (kineto_detect(root)) {
        rc = kineto_import(path, root, tl, cause);
        goto out;
    }
    *cause = xasprintf("%s: a Chrome trace with neither fsdpsim ops "
                       "(args.op) nor GPU kernels (cat \"kernel\")", path);
out:
    json_decref(root);
    return rc;
}

int
compare_load(const char *path, struct compare_timeline *tl, char **cause)
{
    memset(tl, 0, sizeof *tl);
    char *text = read_text(path, cause);
    if (text == NULL)
        return -1;
    const char *p = text;
    while (isspace((unsigned char)*p))
        p++;
    int rc;
    if (*p == '{' || *p == '[') {
        rc = load_json(path, text, tl, cause);
    } else if (strstr(text, TIMELINE_COLUMNS "\n")) {
        rc = read_timeline_dat(path, text, tl, cause);
    } else if (strstr(text, MEMORY_COLUMNS)) {
        *cause = xasprintf("%s: a memory .dat, not a timeline (give it with "
                           "--pred-memory or --measured-memory)", path);
        rc = -1;
    } else {
        *cause = xasprintf("%s: unknown format (expected a timeline .dat, "
                           "an fsdpsim trace or a PyTorch profiler trace)",
                           path);
        rc = -1;
    }
    free(text);
    if (rc != 0)
        compare_timeline_free(tl);
    return rc;
}

int
compare_read_memory(const char *path, int64_t *peak_bytes, char **cause)
{
    char *text = read_text(path, cause);
    if (text == NULL)
        return -1;
    int rc = -1, line = 0, rows = 0;
    int64_t peak = 0;
    if (strstr(text, MEMORY_COLUMNS) == NULL) {
        *cause = xasprintf("%s: not a memory .dat (no '%s ...' line)", path,
                           MEMORY_COLUMNS);
        goto out;
    }
    char *rest = text;
    for (char *l; (l = next_data_line(&rest, &line)) != NULL;) {
        double t_us, alloc;
        if (sscanf(l, "%lf %lf", &t_us, &alloc) != 2 || !(alloc >= 0)
            || alloc > 9e18) {
            *cause = xasprintf("%s:%d: cannot read this line (expected "
                               "t_us allocated_bytes ...)", path, line);
            goto out;
        }
        if ((int64_t)alloc > peak)
            peak = (int64_t)alloc;
        rows++;
    }
    if (rows == 0) {
        *cause = xasprintf("%s: no samples", path);
        goto out;
    }
    *peak_bytes = peak;
    rc = 0;
out:
    free(text);
    return rc;
}

/* ---- comparing ------------------------------------------------------- */

int64_t
compare_step_start_ns(const struct compare_timeline *tl)
{
    int64_t t = INT64_MAX;
    for (int i = 0; i < tl->n_ops; i++)
        if (tl->ops[i].start_ns < t)
            t = tl->ops[i].start_ns;
    return tl->n_ops ? t : 0;
}

int64_t
compare_step_end_ns(const struct compare_timeline *tl)
{
    int64_t t = INT64_MIN;
    for (int i = 0; i < tl->n_ops; i++)
        if (tl->ops[i].end_ns > t)
            t = tl->ops[i].end_ns;
    return tl->n_ops ? t : 0;
}

static int
is_compute(int kind)
{
    return kind == OP_FORWARD || kind == OP_BACKWARD || kind == OP_RECOMPUTE
           || kind == OP_OPTIMIZER || kind == COMPARE_KERNEL;
}

static int
is_comm(int kind)
{
    return kind == OP_ALLGATHER || kind == OP_REDUCESCATTER
           || kind == OP_ALLREDUCE || kind == OP_H2D || kind == OP_D2H
           || kind == COMPARE_NCCL_OTHER;
}

/* The phase a compute op belongs to, or -1 when its kind does not say. */
static int
phase_of(int kind)
{
    switch (kind) {
    case OP_FORWARD: return PHASE_FORWARD;
    case OP_BACKWARD:
    case OP_RECOMPUTE: return PHASE_BACKWARD;
    case OP_OPTIMIZER: return PHASE_OPTIMIZER;
    default: return -1;
    }
}

static double
dur_s(const struct compare_op *o)
{
    return (o->end_ns - o->start_ns) * 1e-9;
}

double
compare_err_pct(double pred, double meas)
{
    return meas > 0 ? 100.0 * (pred - meas) / meas : NAN;
}

/* Sort keys for matching: op id, else start time, then file order. */
struct issue_key {
    int64_t key;
    int idx;
};

static int
cmp_issue(const void *a, const void *b)
{
    const struct issue_key *x = a, *y = b;
    if (x->key != y->key)
        return (x->key > y->key) - (x->key < y->key);
    return (x->idx > y->idx) - (x->idx < y->idx);
}

/* The indices of TL's ops in issue order (op id, or start time when the
 * file has no ids).  Caller frees. */
static int *
issue_order(const struct compare_timeline *tl)
{
    size_t n = (size_t)(tl->n_ops ? tl->n_ops : 1);
    struct issue_key *k = xmalloc(sizeof *k * n);
    for (int i = 0; i < tl->n_ops; i++)
        k[i] = (struct issue_key){tl->has_op_ids ? tl->ops[i].op
                                                 : tl->ops[i].start_ns, i};
    if (tl->n_ops > 0)
        qsort(k, (size_t)tl->n_ops, sizeof *k, cmp_issue);
    int *idx = xmalloc(sizeof *idx * n);
    for (int i = 0; i < tl->n_ops; i++)
        idx[i] = k[i].idx;
    free(k);
    return idx;
}

/* Split [step start, step end] into phases where the compute ops switch
 * phase (see the file header).  0, or -1 when some compute op's phase is
 * unknown (a profiler trace's kernels). */
static int
phase_times(const struct compare_timeline *tl, double out_s[3])
{
    out_s[0] = out_s[1] = out_s[2] = 0;
    int *idx = issue_order(tl);
    int64_t step_end = compare_step_end_ns(tl);
    int64_t boundary = compare_step_start_ns(tl), run_end = boundary;
    int cur = -1, rc = 0;
    /* Compute ops run on one stream in issue order, so op-id order is
     * time order for them; by start time it is the same without ids. */
    for (int j = 0; j < tl->n_ops; j++) {
        const struct compare_op *o = &tl->ops[idx[j]];
        if (!is_compute(o->kind))
            continue;
        int ph = phase_of(o->kind);
        if (ph < 0) {
            rc = -1;
            break;
        }
        if (cur >= 0 && ph != cur) {
            int64_t d = run_end - boundary;
            out_s[cur] += d > 0 ? d * 1e-9 : 0;
            if (run_end > boundary)
                boundary = run_end;
        }
        if (ph != cur)
            run_end = o->end_ns;
        else if (o->end_ns > run_end)
            run_end = o->end_ns;
        cur = ph;
    }
    if (rc == 0 && cur < 0)
        rc = -1;
    if (rc == 0 && step_end > boundary)
        out_s[cur] += (step_end - boundary) * 1e-9;
    free(idx);
    return rc;
}

static void
overlap(const struct compare_timeline *tl, double *comm_s, double *exp_s)
{
    struct metrics_busy *b = xmalloc(sizeof *b * (size_t)(tl->n_ops + 1));
    for (int i = 0; i < tl->n_ops; i++)
        b[i] = (struct metrics_busy){tl->ops[i].start_ns, tl->ops[i].end_ns,
                                     is_comm(tl->ops[i].kind),
                                     is_compute(tl->ops[i].kind)};
    metrics_overlap(b, tl->n_ops, comm_s, exp_s);
    free(b);
}

/* Record the pair (P, M) in the kind's row and in the compute row. */
static void
add_pair(const struct compare_op *p, const struct compare_op *m,
         double **errs, int *n_errs)
{
    double md = dur_s(m);
    if (md <= 0)
        return;
    double e = compare_err_pct(dur_s(p), md);
    errs[p->kind][n_errs[p->kind]++] = e;
    if (is_compute(p->kind) || p->kind == OP_CAST)
        errs[COMPARE_ROW_COMPUTE][n_errs[COMPARE_ROW_COMPUTE]++] = e;
}

int
compare_run(const struct compare_timeline *pred,
            const struct compare_timeline *meas, const char *pred_path,
            const char *meas_path, struct compare_result *res, char **cause)
{
    memset(res, 0, sizeof *res);
    const struct compare_timeline *side[2] = {pred, meas};
    for (int s = 0; s < 2; s++)
        for (int i = 0; i < side[s]->n_ops; i++) {
            const struct compare_op *o = &side[s]->ops[i];
            struct compare_row *r = &res->rows[o->kind];
            struct compare_row *c = &res->rows[COMPARE_ROW_COMPUTE];
            int in_compute = is_compute(o->kind) || o->kind == OP_CAST;
            *(s ? &r->n_meas : &r->n_pred) += 1;
            *(s ? &r->meas_s : &r->pred_s) += dur_s(o);
            if (in_compute) {
                *(s ? &c->n_meas : &c->n_pred) += 1;
                *(s ? &c->meas_s : &c->pred_s) += dur_s(o);
            }
        }
    int common = 0;
    for (int k = 0; k < COMPARE_N_ROWS; k++)
        if (res->rows[k].n_pred > 0 && res->rows[k].n_meas > 0)
            common = 1;
    if (!common) {
        *cause = xasprintf("%s and %s: nothing to match (no kind of op "
                           "occurs in both)", pred_path, meas_path);
        return -1;
    }

    /* Pairs: by op id when both files come from the same schedule and
     * step, else the k-th op of a kind with the k-th (issue order). */
    double *errs[COMPARE_N_ROWS];
    int n_errs[COMPARE_N_ROWS] = {0};
    for (int k = 0; k < COMPARE_N_ROWS; k++)
        errs[k] = xmalloc(sizeof(double) * (size_t)(pred->n_ops + 1));
    int *pi = issue_order(pred), *mi = issue_order(meas);
    res->by_op_id = pred->has_op_ids && meas->has_op_ids
                    && pred->step == meas->step;
    if (res->by_op_id) {
        /* Both lists are sorted by op id: merge them. */
        for (int a = 0, b = 0; a < pred->n_ops && b < meas->n_ops;) {
            const struct compare_op *p = &pred->ops[pi[a]];
            const struct compare_op *m = &meas->ops[mi[b]];
            if (p->op < m->op) {
                a++;
            } else if (p->op > m->op) {
                b++;
            } else {
                if (p->kind == m->kind) {
                    res->rows[p->kind].matched++;
                    if (is_compute(p->kind) || p->kind == OP_CAST)
                        res->rows[COMPARE_ROW_COMPUTE].matched++;
                    add_pair(p, m, errs, n_errs);
                }
                a++;
                b++;
            }
        }
    } else {
        for (int k = 0; k < OP_KIND_COUNT; k++) {
            int a = 0, b = 0;
            for (;;) {
                while (a < pred->n_ops && pred->ops[pi[a]].kind != k)
                    a++;
                while (b < meas->n_ops && meas->ops[mi[b]].kind != k)
                    b++;
                if (a == pred->n_ops || b == meas->n_ops)
                    break;
                res->rows[k].matched++;
                if (is_compute(k) || k == OP_CAST)
                    res->rows[COMPARE_ROW_COMPUTE].matched++;
                add_pair(&pred->ops[pi[a]], &meas->ops[mi[b]], errs,
                         n_errs);
                a++;
                b++;
            }
        }
    }
    free(pi);
    free(mi);
    for (int k = 0; k < COMPARE_N_ROWS; k++) {
        struct compare_row *r = &res->rows[k];
        r->err_pct = compare_err_pct(r->pred_s, r->meas_s);
        r->median_op_err_pct = n_errs[k] > 0
            ? median_in_place(errs[k], (size_t)n_errs[k]) : NAN;
        free(errs[k]);
    }

    res->has_phases = phase_times(pred, res->phase_pred_s) == 0
                      && phase_times(meas, res->phase_meas_s) == 0;
    if (!res->has_phases)
        for (int p = 0; p < 3; p++)
            res->phase_pred_s[p] = res->phase_meas_s[p] = NAN;
    res->step_pred_s = (compare_step_end_ns(pred)
                        - compare_step_start_ns(pred)) * 1e-9;
    res->step_meas_s = (compare_step_end_ns(meas)
                        - compare_step_start_ns(meas)) * 1e-9;
    res->step_err_pct = compare_err_pct(res->step_pred_s,
                                        res->step_meas_s);
    overlap(pred, &res->comm_pred_s, &res->exposed_pred_s);
    overlap(meas, &res->comm_meas_s, &res->exposed_meas_s);
    res->mem_pred_bytes = pred->peak_mem_bytes;
    res->mem_meas_bytes = meas->peak_mem_bytes;
    return 0;
}
