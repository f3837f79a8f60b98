/*
 * output_metrics.c: a run's figures in the Prometheus text exposition
 * format (version 0.0.4), for the node exporter's textfile collector, so
 * a cluster's Prometheus and Grafana show predictions and validation runs
 * beside everything else.  One sample per figure and source
 * ("predicted" or "measured"); labels say which run it was.
 */
#include "output.h"
#include "coll.h"
#include "cost.h"

#include <string.h>

struct metric {
    const char *name;
    const char *help;
};

static const struct metric metrics[] = {
    {"fsdpsim_step_time_seconds", "Time of one training step."},
    {"fsdpsim_tokens_per_second", "Training throughput of the whole job."},
    {"fsdpsim_mfu_ratio", "Model FLOPs utilisation."},
    {"fsdpsim_compute_seconds", "Busy time of compute ops in the step."},
    {"fsdpsim_exposed_comm_seconds",
     "Step time when communication runs and no compute does."},
    {"fsdpsim_peak_memory_bytes",
     "Peak GPU memory: allocated (live tensors) and reserved (pool)."},
    {"fsdpsim_collective_seconds", "Time in each collective in the step."},
    {"fsdpsim_collective_busbw_bytes_per_second",
     "Bus bandwidth of each collective over the step (nccl-tests busbw)."},
};

/* Label values may hold any text: escape backslash, quote, newline. */
static void
label(FILE *out, const char *key, const char *value, int first)
{
    fprintf(out, "%s%s=\"", first ? "" : ",", key);
    for (const char *p = value; *p; p++) {
        if (*p == '\\' || *p == '"')
            fprintf(out, "\\%c", *p);
        else if (*p == '\n')
            fputs("\\n", out);
        else
            fputc(*p, out);
    }
    fputc('"', out);
}

static void
labels(FILE *out, const struct run_view *v, const char *source,
       const char *extra_key, const char *extra_value)
{
    char n[32];
    fputc('{', out);
    label(out, "source", source, 1);
    label(out, "model", v->model->name, 0);
    label(out, "topology", v->topo->name, 0);
    snprintf(n, sizeof n, "%d", v->sched->world);
    label(out, "gpus", n, 0);
    label(out, "sharding", sharding_name(v->cfg->sharding), 0);
    if (extra_key)
        label(out, extra_key, extra_value, 0);
    fputc('}', out);
}

static void
sample(FILE *out, const struct run_view *v, const char *source, int m,
       const char *key, const char *value, double x)
{
    fputs(metrics[m].name, out);
    labels(out, v, source, key, value);
    fprintf(out, " %.9g\n", x);
}

void
output_metrics(const struct run_view *const *views, const char *const *sources,
               int n, FILE *out)
{
    for (int m = 0; m < (int)(sizeof metrics / sizeof metrics[0]); m++) {
        fprintf(out, "# HELP %s %s\n# TYPE %s gauge\n", metrics[m].name,
                metrics[m].help, metrics[m].name);
        for (int i = 0; i < n; i++) {
            const struct run_view *v = views[i];
            const struct metrics *me = v->met;
            switch (m) {
            case 0: sample(out, v, sources[i], m, NULL, NULL,
                           me->step_time_s); break;
            case 1: sample(out, v, sources[i], m, NULL, NULL,
                           me->tokens_per_s); break;
            case 2: sample(out, v, sources[i], m, NULL, NULL, me->mfu); break;
            case 3: sample(out, v, sources[i], m, NULL, NULL,
                           me->compute_s); break;
            case 4: sample(out, v, sources[i], m, NULL, NULL,
                           me->exposed_comm_s); break;
            case 5:
                sample(out, v, sources[i], m, "kind", "allocated",
                       (double)me->mem.peak_allocated);
                sample(out, v, sources[i], m, "kind", "reserved",
                       (double)me->mem.peak_reserved);
                break;
            case 6:
                sample(out, v, sources[i], m, "collective", "allgather",
                       me->allgather_s);
                sample(out, v, sources[i], m, "collective", "reducescatter",
                       me->reducescatter_s);
                sample(out, v, sources[i], m, "collective", "allreduce",
                       me->allreduce_s);
                break;
            case 7: {
                /* busbw = sum(bytes x bus factor) / sum(time), per kind, in
                 * the reported step (nccl-tests doc/PERFORMANCE.md). */
                static const enum sched_op_kind kinds[] = {
                    OP_ALLGATHER, OP_REDUCESCATTER, OP_ALLREDUCE};
                static const char *names[] = {"allgather", "reducescatter",
                                              "allreduce"};
                for (int k = 0; k < 3; k++) {
                    double bytes = 0, secs = 0;
                    for (int o = 0; o < v->sched->n_ops; o++) {
                        const struct sched_op *op = &v->sched->ops[o];
                        if (op->kind != kinds[k] || op->iter != me->step)
                            continue;
                        struct coll_group g;
                        cost_op_group(v->sched, op, &g);
                        enum coll_op co = k == 0   ? COLL_ALLGATHER
                                          : k == 1 ? COLL_REDUCESCATTER
                                                   : COLL_ALLREDUCE;
                        bytes += (double)op->bytes
                                 * coll_busbw_factor(co, g.ranks);
                        secs += (v->res->times[o].end_ns
                                 - v->res->times[o].start_ns) * 1e-9;
                    }
                    if (secs > 0)
                        sample(out, v, sources[i], m, "collective", names[k],
                               bytes / secs);
                }
                break;
            }
            }
        }
    }
}

void
output_metrics_predicted(const struct run_view *v, FILE *out)
{
    const struct run_view *views[] = {v};
    const char *sources[] = {"predicted"};
    output_metrics(views, sources, 1, out);
}
