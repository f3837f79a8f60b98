/*
 * kineto.c: a PyTorch profiler (Kineto) trace as a measured step.
 *
 * A trace exported by torch.profiler (export_chrome_trace, or
 * tensorboard_trace_handler) is Trace Event Format JSON: "traceEvents"
 * holds complete events ("ph": "X", ts and dur in microseconds) for CPU
 * ops, CUDA runtime calls (cat "cuda_runtime" / "cuda_driver", with
 * args.correlation) and GPU activity (cat "kernel", "gpu_memcpy",
 * "gpu_memset", with the same args.correlation as their launch), plus
 * instant "[memory]" events from profile_memory=True.  One file is one
 * rank.  It carries no FSDP op ids, so this is what is mapped:
 *
 *  - Kernels whose name starts with "nccl" (ncclDevKernel_AllGather_RING_LL,
 *    ncclKernel_ReduceScatter_..., ncclDevKernel_AllReduce_Sum_f32_...):
 *    "AllGather" in the name is an all-gather, "ReduceScatter" a
 *    reduce-scatter, "AllReduce" an all-reduce; other NCCL kernels
 *    (broadcast, send/recv) count as communication of no listed kind.
 *  - Every other kernel is compute (COMPARE_KERNEL): forward, backward,
 *    optimizer and cast kernels are not told apart, since that would need
 *    the annotations a training script may or may not have.
 *  - "Memcpy HtoD" and "Memcpy DtoH" copies are h2d and d2h; device to
 *    device copies and memsets are left out.
 *  - The step is the last "ProfilerStep#N" user annotation (the span
 *    torch.profiler's schedule records around each step() call, on the
 *    CPU): a GPU op belongs to it when its launch (the runtime call with
 *    its correlation id, or the op itself when there is none) lies in that
 *    span, since kernels of a GPU-bound step run after the CPU has left
 *    it.  Without such an annotation the whole trace is one step.
 *  - Peak memory is the largest "Total Allocated" of the CUDA "[memory]"
 *    events (Device Type other than 0, the CPU), over the whole trace.
 *
 * Streams are numbered 0.. in (pid, tid) order of the GPU ops kept.
 */
#include "kineto.h"
#include "units.h"
#include "xalloc.h"

#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

struct launch {
    int64_t corr;      /* correlation id */
    int64_t t_ns;      /* ns, when the CPU launched it */
};

struct gpu_ev {
    int kind;          /* enum sched_op_kind or COMPARE_KERNEL/... */
    int64_t pid, tid;  /* device and stream as the trace numbers them */
    int64_t start_ns, end_ns;
    int64_t corr;      /* -1 when absent */
};

const char *
kineto_str(const json_t *obj, const char *key)
{
    const json_t *v = json_object_get(obj, key);
    return json_is_string(v) ? json_string_value(v) : NULL;
}

int
kineto_num(const json_t *obj, const char *key, double *out)
{
    const json_t *v = json_object_get(obj, key);
    if (json_is_integer(v))
        *out = (double)json_integer_value(v);
    else if (json_is_real(v))
        *out = json_real_value(v);
    else
        return -1;
    return isfinite(*out) && fabs(*out) < 4e15 ? 0 : -1;
}

int64_t
kineto_int(const json_t *obj, const char *key, int64_t dflt)
{
    double v;
    return kineto_num(obj, key, &v) == 0 ? (int64_t)v : dflt;
}

int
kineto_complete_event(const json_t *ev, struct kineto_span *s)
{
    const char *ph = kineto_str(ev, "ph");
    double ts, dur;
    s->cat = kineto_str(ev, "cat");
    s->name = kineto_str(ev, "name");
    s->args = json_object_get(ev, "args");
    if (!s->cat || !s->name || !ph || strcmp(ph, "X") != 0
        || kineto_num(ev, "ts", &ts) != 0
        || kineto_num(ev, "dur", &dur) != 0 || dur < 0)
        return 0;
    s->ts_ns = units_us_to_ns(ts);
    s->dur_ns = units_us_to_ns(dur);
    return 1;
}

int
kineto_is_cuda_call(const char *cat)
{
    return strcmp(cat, "cuda_runtime") == 0
           || strcmp(cat, "cuda_driver") == 0;
}

int
kineto_detect(const json_t *root)
{
    if (!json_is_object(root))
        return 0;
    if (json_object_get(root, "schemaVersion")
        || json_object_get(root, "deviceProperties"))
        return 1;
    const json_t *events = json_object_get(root, "traceEvents");
    size_t i;
    const json_t *ev;
    json_array_foreach(events, i, ev) {
        const char *cat = kineto_str(ev, "cat");
        if (cat && strcmp(cat, "kernel") == 0)
            return 1;
    }
    return 0;
}

/* The kind of a GPU event of category CAT called NAME, or -1 to leave it
 * out (see the file header). */
static int
gpu_kind(const char *cat, const char *name)
{
    if (strcmp(cat, "kernel") == 0) {
        if (strncmp(name, "nccl", 4) != 0)
            return COMPARE_KERNEL;
        if (strstr(name, "AllGather"))
            return OP_ALLGATHER;
        if (strstr(name, "ReduceScatter"))
            return OP_REDUCESCATTER;
        if (strstr(name, "AllReduce"))
            return OP_ALLREDUCE;
        return COMPARE_NCCL_OTHER;
    }
    if (strcmp(cat, "gpu_memcpy") == 0) {
        if (strstr(name, "HtoD"))
            return OP_H2D;
        if (strstr(name, "DtoH"))
            return OP_D2H;
    }
    return -1;
}

static int
cmp_launch(const void *a, const void *b)
{
    const struct launch *x = a, *y = b;
    return (x->corr > y->corr) - (x->corr < y->corr);
}

static int
cmp_stream(const void *a, const void *b)
{
    const int64_t *x = a, *y = b;
    if (x[0] != y[0])
        return (x[0] > y[0]) - (x[0] < y[0]);
    return (x[1] > y[1]) - (x[1] < y[1]);
}

int
kineto_import(const char *path, const json_t *root,
              struct compare_timeline *tl, char **cause)
{
    const json_t *events = json_object_get(root, "traceEvents");
    struct launch *launches = NULL;
    struct gpu_ev *gpu = NULL;
    size_t n_launch = 0, cap_launch = 0, n_gpu = 0, cap_gpu = 0, i;
    int64_t step_ts = 0, step_end = 0, peak = -1;
    const char *step_name = NULL;
    const json_t *ev;
    json_array_foreach(events, i, ev) {
        const char *name = kineto_str(ev, "name");
        double v;
        if (name && strcmp(name, "[memory]") == 0) {
            const json_t *args = json_object_get(ev, "args");
            if (kineto_int(args, "Device Type", 1) != 0
                && kineto_num(args, "Total Allocated", &v) == 0 && v > peak)
                peak = (int64_t)v;
            continue;
        }
        struct kineto_span x;
        if (!kineto_complete_event(ev, &x))
            continue;
        if (strcmp(x.cat, "user_annotation") == 0
            && strncmp(x.name, "ProfilerStep#", 13) == 0) {
            if (step_name == NULL || x.ts_ns >= step_ts) {
                step_name = x.name;
                step_ts = x.ts_ns;
                step_end = step_ts + x.dur_ns;
            }
            continue;
        }
        if (kineto_is_cuda_call(x.cat)) {
            if (kineto_num(x.args, "correlation", &v) == 0) {
                launches = xgrow(launches, &cap_launch, n_launch + 1,
                                 sizeof *launches);
                launches[n_launch++] = (struct launch){(int64_t)v, x.ts_ns};
            }
            continue;
        }
        int kind = gpu_kind(x.cat, x.name);
        if (kind < 0)
            continue;
        gpu = xgrow(gpu, &cap_gpu, n_gpu + 1, sizeof *gpu);
        gpu[n_gpu++] = (struct gpu_ev){kind, kineto_int(ev, "pid", 0),
                                       kineto_int(ev, "tid", 0), x.ts_ns,
                                       x.ts_ns + x.dur_ns,
                                       kineto_int(x.args, "correlation", -1)};
    }
    if (n_launch > 0)
        qsort(launches, n_launch, sizeof *launches, cmp_launch);

    /* Keep the step's ops, and number their streams. */
    size_t kept = 0;
    for (size_t j = 0; j < n_gpu; j++) {
        if (step_name) {
            struct launch key = {gpu[j].corr, 0}, *l = NULL;
            if (gpu[j].corr >= 0 && n_launch)
                l = bsearch(&key, launches, n_launch, sizeof *launches,
                            cmp_launch);
            int64_t t = l ? l->t_ns : gpu[j].start_ns;
            if (t < step_ts || t > step_end)
                continue;
        }
        gpu[kept++] = gpu[j];
    }
    int rc = -1;
    int64_t (*streams)[2] = NULL;
    if (kept == 0) {
        *cause = step_name
                     ? xasprintf("%s: no GPU kernels launched in %s", path,
                                 step_name)
                     : xasprintf("%s: no GPU kernels (cat \"kernel\") in "
                                 "the trace", path);
        goto out;
    }
    streams = xmalloc(sizeof *streams * kept);
    size_t n_streams = 0;
    for (size_t j = 0; j < kept; j++) {
        streams[j][0] = gpu[j].pid;
        streams[j][1] = gpu[j].tid;
    }
    if (kept > 0)
        qsort(streams, kept, sizeof *streams, cmp_stream);
    for (size_t j = 0; j < kept; j++)
        if (j == 0 || cmp_stream(streams[j], streams[n_streams - 1]) != 0) {
            streams[n_streams][0] = streams[j][0];
            streams[n_streams][1] = streams[j][1];
            n_streams++;
        }
    tl->format = COMPARE_KINETO;
    tl->has_op_ids = 0;
    tl->step = -1;
    tl->peak_mem_bytes = peak;
    tl->step_label = xstrdup(step_name ? step_name : "whole trace");
    tl->n_streams = (int)n_streams;
    tl->stream_names = xcalloc(n_streams, sizeof(char *));
    int many_devices = streams[0][0] != streams[n_streams - 1][0];
    for (size_t s = 0; s < n_streams; s++)
        tl->stream_names[s] =
            many_devices ? xasprintf("gpu%lld:s%lld",
                                     (long long)streams[s][0],
                                     (long long)streams[s][1])
                         : xasprintf("s%lld", (long long)streams[s][1]);
    tl->ops = xcalloc(kept, sizeof *tl->ops);
    tl->n_ops = (int)kept;
    for (size_t j = 0; j < kept; j++) {
        int64_t key[2] = {gpu[j].pid, gpu[j].tid};
        int64_t (*f)[2] = bsearch(key, streams, n_streams, sizeof *streams,
                                  cmp_stream);
        tl->ops[j] = (struct compare_op){-1, gpu[j].kind,
                                         (int)(f - streams), -1, 0, -1,
                                         gpu[j].start_ns, gpu[j].end_ns, 0};
    }
    rc = 0;
out:
    free(streams);
    free(launches);
    free(gpu);
    return rc;
}
