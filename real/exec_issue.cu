/*
 * exec_issue.cu: issuing the schedule: each op on its stream (collectives, copies,
 * compute), the events between them, allocations from the pool, host waits,
 * and one pass over the op list.
 */
#include "exec_impl.h"

/* ---- Op execution --------------------------------------------------- */

static ncclDataType_t
nccl_type(enum dtype d)
{
    switch (d) {
    case DTYPE_BF16:
        return ncclBfloat16;
    case DTYPE_FP16:
        return ncclFloat16;
    case DTYPE_FP8:
        return ncclUint8;
    default:
        return ncclFloat32;
    }
}

/* The schedule's reduction: FSDP2 averages (ncclAvg, NCCL 2.10+), FSDP1
 * and DDP sum. */
static ncclRedOp_t
nccl_redop(const struct sched_op *op)
{
    return op->redop == REDOP_AVG ? ncclAvg : ncclSum;
}

/* Device pointer and size of a buffer the op names; -1 or not allocated
 * gives NULL. */
static void *
buf(const struct gpu *g, int id, uint64_t *bytes)
{
    const struct sched *s = g->run->s;
    if (id < 0 || id >= s->n_buffers || g->ptr[id] == NULL) {
        *bytes = 0;
        return NULL;
    }
    *bytes = g->ptr_bytes[id];
    return g->ptr[id];
}

static int
run_collective(struct gpu *g, const struct sched_op *op, cudaStream_t st)
{
    const struct exec_run *r = g->run;
    ncclComm_t comm = g->comm[op->pg];
    int n = r->pg_size[op->pg];
    int es = dtype_bytes(op->dtype);
    uint64_t in_b, out_b;
    char *in = (char *)buf(g, op->buf_in, &in_b);
    char *out = (char *)buf(g, op->buf_out, &out_b);
    if (comm == NULL)
        return real_fail(g, "internal error: no communicator for pg %s",
                        sched_pg_name(op->pg));
    if (in == NULL)
        return real_fail(g, "internal error: input buffer %d is not "
                        "allocated", op->buf_in);
    if (op->in_offset > in_b)
        return real_fail(g, "internal error: in_offset %llu past buffer %d "
                        "(%llu bytes)", (unsigned long long)op->in_offset,
                        op->buf_in, (unsigned long long)in_b);
    in += op->in_offset;
    in_b -= op->in_offset;
    if (out == NULL) {      /* in place */
        out = in;
        out_b = in_b;
    }
    uint64_t total = op->bytes / (uint64_t)es;
    switch (op->kind) {
    case OP_ALLGATHER: {
        size_t count = total / (uint64_t)n;
        if (count * es > in_b || count * es * n > out_b)
            return real_fail(g, "internal error: all-gather of %llu bytes "
                            "over %d ranks does not fit buffers %d (%llu) "
                            "and %d (%llu)", (unsigned long long)op->bytes,
                            n, op->buf_in, (unsigned long long)in_b,
                            op->buf_out, (unsigned long long)out_b);
        NCCL_TRY(g, comm, ncclAllGather(in, out, count, nccl_type(op->dtype),
                                        comm, st));
        break;
    }
    case OP_REDUCESCATTER: {
        size_t count = total / (uint64_t)n;
        if (count * es * n > in_b || count * es > out_b)
            return real_fail(g, "internal error: reduce-scatter of %llu bytes"
                            " over %d ranks does not fit buffers %d (%llu) "
                            "and %d (%llu)", (unsigned long long)op->bytes,
                            n, op->buf_in, (unsigned long long)in_b,
                            op->buf_out, (unsigned long long)out_b);
        NCCL_TRY(g, comm, ncclReduceScatter(in, out, count,
                                            nccl_type(op->dtype),
                                            nccl_redop(op), comm, st));
        break;
    }
    default: {
        if (total * es > in_b || total * es > out_b)
            return real_fail(g, "internal error: all-reduce of %llu bytes "
                            "does not fit buffers %d (%llu) and %d (%llu)",
                            (unsigned long long)op->bytes, op->buf_in,
                            (unsigned long long)in_b, op->buf_out,
                            (unsigned long long)out_b);
        NCCL_TRY(g, comm, ncclAllReduce(in, out, total, nccl_type(op->dtype),
                                        nccl_redop(op), comm, st));
        break;
    }
    }
    return 0;
}

/* A cast or accumulation: op->bytes is the traffic, read plus write; the
 * reads come from buf_in and the writes go to buf_out in proportion to
 * their sizes, what does not fit (or a side without a buffer) streams
 * over scratch. */
static int
run_cast(struct gpu *g, const struct sched_op *op, cudaStream_t st)
{
    uint64_t in_b, out_b;
    char *in = (char *)buf(g, op->buf_in, &in_b);
    void *out = buf(g, op->buf_out, &out_b);
    uint64_t off = op->in_offset & ~(uint64_t)15;
    if (in != NULL && off < in_b) {
        in += off;
        in_b -= off;
    } else {
        in = NULL;
    }
    double total = (double)op->bytes;
    double sum = (double)(in ? in_b : 0) + (double)(out ? out_b : 0);
    double rd = in ? total * (double)in_b / (sum > 0 ? sum : 1) : 0;
    double wr = out ? total * (double)out_b / (sum > 0 ? sum : 1) : 0;
    if (rd > (double)in_b)
        rd = (double)in_b;
    if (wr > (double)out_b)
        wr = (double)out_b;
    if (in == NULL || out == NULL) {
        rd = wr = 0;
    } else {
        TRY(stream_bytes(g, st, in, in_b, out, out_b, rd, wr, 1));
    }
    double rest = total - rd - wr;
    if (rest >= 32)
        TRY(stream_scratch(g, st, rest / 2, rest / 2, 1));
    return 0;
}

/* H2D into buf_out or D2H from buf_in, through the pinned buffer; a
 * missing device buffer uses scratch. */
static int
run_copy(struct gpu *g, const struct sched_op *op, cudaStream_t st)
{
    int h2d = op->kind == OP_H2D;
    uint64_t db;
    char *dev = (char *)buf(g, h2d ? op->buf_out : op->buf_in, &db);
    if (dev == NULL) {
        dev = (char *)g->sstream;
        db = STREAM_REGION_BYTES;
    }
    uint64_t left = op->bytes;
    while (left > 0) {
        size_t n = left;
        if (n > g->pinned_bytes)
            n = g->pinned_bytes;
        if (n > db)
            n = db;
        if (n == 0)
            break;
        if (h2d)
            CUDA_TRY(g, cudaMemcpyAsync(dev, g->pinned, n,
                                        cudaMemcpyHostToDevice, st));
        else
            CUDA_TRY(g, cudaMemcpyAsync(g->pinned, dev, n,
                                        cudaMemcpyDeviceToHost, st));
        left -= n;
    }
    return 0;
}

/* The GPU work of one op on stream st. */
static int
launch(struct gpu *g, const struct sched_op *op, cudaStream_t st)
{
    const struct sched *s = g->run->s;
    switch (op->kind) {
    case OP_FORWARD:
    case OP_RECOMPUTE:
    case OP_BACKWARD:
        CUBLAS_TRY(g, cublasSetStream(g->blas, st));
        for (int l = op->leaf_begin; l < op->leaf_end && l < s->n_leaves; l++)
            TRY(run_leaf(g, st, l, op->kind == OP_BACKWARD));
        return 0;
    case OP_ALLGATHER:
    case OP_REDUCESCATTER:
    case OP_ALLREDUCE:
        return run_collective(g, op, st);
    case OP_CAST:
        return run_cast(g, op, st);
    case OP_H2D:
    case OP_D2H:
        return run_copy(g, op, st);
    case OP_OPTIMIZER:
    {
        /* The foreach passes of sched.h: of AdamW's 80 bytes an element
         * 48 are read; of SGD's 12, 8. */
        double rd = s->optimizer_passes == ADAMW_FOREACH_PASSES
                        ? ADAMW_FOREACH_READ_BYTES / ADAMW_FOREACH_BYTES
                        : SGD_FOREACH_READ_BYTES / SGD_FOREACH_BYTES;
        return stream_scratch(g, st, (double)op->bytes * rd,
                              (double)op->bytes * (1 - rd), 1);
    }
    default:        /* OP_EVENT: the events are the whole op */
        return 0;
    }
}

/* Whether op id ran on the GPU in this pass, so that its end event marks
 * its completion (host-side ops have finished when the host moves on). */
static int
has_end_event(const struct gpu *g, int id)
{
    const struct sched *s = g->run->s;
    return id >= 0 && id < s->n_ops && g->issued[id]
           && sched_op_on_gpu(&s->ops[id]);
}

/* First op at or after done_lo, issued this pass, on the GPU, whose end
 * event has not completed; n_ops when none.  Advances done_lo. */
static int
first_unfinished(struct gpu *g, int upto)
{
    const struct sched *s = g->run->s;
    int i = g->done_lo;
    for (; i < upto; i++) {
        const struct sched_op *op = &s->ops[i];
        if (!g->issued[i] || !sched_op_on_gpu(op))
            continue;
        if (cudaEventQuery(g->ev_end[i]) != cudaSuccess)
            break;
    }
    if (g->done_lo < i)
        g->done_lo = i;
    return i < upto ? i : s->n_ops;
}

/* Wait for ev (the end of op `waited`, -1 for the end of a pass) by
 * polling, so that this thread notices NCCL errors, another thread's
 * failure, and a lack of progress: no GPU op of this rank finishing for
 * timeout_s. */
static int
wait_event(struct gpu *g, cudaEvent_t ev, int waited, int upto)
{
    struct exec_run *r = g->run;
    const struct sched *s = r->s;
    double timeout = r->o->timeout_s > 0 ? r->o->timeout_s : 300;
    int64_t last = host_clock_ns();
    int lo = g->done_lo;
    for (unsigned spin = 0;; spin++) {
        cudaError_t e = cudaEventQuery(ev);
        if (e == cudaSuccess)
            return 0;
        if (e != cudaErrorNotReady)
            return real_fail(g, "cudaEventQuery: %s: %s (%s:%d)",
                            cudaGetErrorName(e), cudaGetErrorString(e),
                            __FILE__, __LINE__);
        if (r->abort.load())
            return real_fail(g, "stopped: rank %d failed",
                            r->g[r->first_fail.load() - 1].rank);
        for (int p = 0; p < PG_COUNT; p++) {
            if (g->comm[p] == NULL)
                continue;
            ncclResult_t ae = ncclSuccess;
            NCCL_TRY(g, g->comm[p], ncclCommGetAsyncError(g->comm[p], &ae));
            if (ae != ncclSuccess && ae != ncclInProgress)
                return real_fail(g, "NCCL asynchronous error on the %s "
                                "communicator: %s: %s", sched_pg_name(
                                    (enum sched_pg)p),
                                ncclGetErrorString(ae),
                                ncclGetLastError(g->comm[p]));
        }
        if (spin % 256 == 0) {
            int f = first_unfinished(g, upto);
            int64_t t = host_clock_ns();
            if (g->done_lo > lo) {
                lo = g->done_lo;
                last = t;
            } else if ((double)(t - last) * 1e-9 > timeout) {
                char d1[128], d2[128];
                const char *pg = "";
                if (f < s->n_ops && s->ops[f].pg != PG_NONE)
                    pg = sched_pg_name(s->ops[f].pg);
                return real_fail(g, "no progress for %.0f s waiting for %s; "
                                "first unfinished: %s%s%s (a peer may not "
                                "have reached its collective)", timeout,
                                waited >= 0 ? op_desc(s, waited, d1,
                                                      sizeof d1)
                                            : "the end of the pass",
                                f < s->n_ops ? op_desc(s, f, d2, sizeof d2)
                                             : "none",
                                *pg ? ", pg " : "", pg);
            }
        }
        nap();
    }
}

/* Host work of a STREAM_HOST op (the optimizer under CPU offload): an
 * AdamW-like pass over op->bytes of host memory, one thread. */
static void
host_work(struct gpu *g, const struct sched_op *op)
{
    if (g->host_opt == NULL)
        return;
    size_t half = g->host_opt_bytes / 2 / sizeof(float);
    float *a = g->host_opt, *b = g->host_opt + half;
    double left = (double)op->bytes / 2 / sizeof(float);
    while (left >= 1) {
        size_t n = left < (double)half ? (size_t)left : half;
        for (size_t i = 0; i < n; i++)
            b[i] = a[i] * 0.999f + 1e-3f * b[i];
        left -= (double)n;
    }
}

static int
do_alloc(struct gpu *g, const struct sched_op *op)
{
    const struct sched *s = g->run->s;
    if (op->buffer < 0 || op->buffer >= s->n_buffers)
        return real_fail(g, "internal error: buffer %d out of range",
                        op->buffer);
    if (op->bytes == 0)
        return 0;
    int pool = op->stream == STREAM_HOST ? STREAM_C : op->stream;
    void *p = NULL;
    cudaError_t e = cudaMallocFromPoolAsync(&p, op->bytes, g->pool,
                                            g->st[pool]);
    if (e == cudaErrorMemoryAllocation) {
        size_t fr = 0, tot = 0;
        cudaGetLastError();
        cudaMemGetInfo(&fr, &tot);
        return real_fail(g, "out of device memory allocating buffer %d (%s, "
                        "%llu bytes) on the %s pool: cudaMallocFromPoolAsync"
                        ": %s (%zu of %zu bytes free)", op->buffer,
                        mem_category_name(op->cat),
                        (unsigned long long)op->bytes,
                        sched_stream_name(op->stream),
                        cudaGetErrorString(e), fr, tot);
    }
    if (e != cudaSuccess)
        return real_fail(g, "cudaMallocFromPoolAsync of buffer %d (%llu "
                        "bytes): %s: %s", op->buffer,
                        (unsigned long long)op->bytes, cudaGetErrorName(e),
                        cudaGetErrorString(e));
    g->ptr[op->buffer] = p;
    g->ptr_bytes[op->buffer] = op->bytes;
    return 0;
}

static int
do_free(struct gpu *g, const struct sched_op *op)
{
    const struct sched *s = g->run->s;
    if (op->buffer < 0 || op->buffer >= s->n_buffers)
        return real_fail(g, "internal error: buffer %d out of range",
                        op->buffer);
    void *p = g->ptr[op->buffer];
    if (p == NULL)
        return 0;
    int pool = op->stream == STREAM_HOST ? STREAM_C : op->stream;
    int w = op->wait_op;
    if (has_end_event(g, w) && s->ops[w].stream != pool) {
        /* record_stream: reusable once the last use has finished. */
        CUDA_TRY(g, cudaStreamWaitEvent(g->free_st[pool], g->ev_end[w], 0));
        CUDA_TRY(g, cudaFreeAsync(p, g->free_st[pool]));
    } else {
        CUDA_TRY(g, cudaFreeAsync(p, g->st[pool]));
    }
    g->ptr[op->buffer] = NULL;
    return 0;
}

/* Issue op i. */
static int
issue(struct gpu *g, int i, int *prev_coll)
{
    const struct sched *s = g->run->s;
    const struct sched_op *op = &s->ops[i];
    g->cur_op = i;
    g->h_issue[i] = host_clock_ns() - g->host_t0;
    g->issued[i] = 1;
    switch (op->kind) {
    case OP_CPU_WAIT:
        if (has_end_event(g, op->wait_op))
            TRY(wait_event(g, g->ev_end[op->wait_op], op->wait_op, i));
        g->h_start[i] = g->h_end[i] = host_clock_ns() - g->host_t0;
        return 0;
    case OP_ALLOC:
        TRY(do_alloc(g, op));
        g->h_start[i] = g->h_end[i] = g->h_issue[i];
        return 0;
    case OP_FREE:
        TRY(do_free(g, op));
        g->h_start[i] = g->h_end[i] = g->h_issue[i];
        return 0;
    default:
        break;
    }
    if (op->stream == STREAM_HOST) {
        for (int d = 0; d < op->n_deps; d++)
            if (has_end_event(g, op->deps[d]))
                TRY(wait_event(g, g->ev_end[op->deps[d]], op->deps[d], i));
        g->h_start[i] = host_clock_ns() - g->host_t0;
        host_work(g, op);
        g->h_end[i] = host_clock_ns() - g->host_t0;
        return 0;
    }
    cudaStream_t st = g->st[op->stream];
    for (int d = 0; d < op->n_deps; d++) {
        int dep = op->deps[d];
        if (has_end_event(g, dep) && s->ops[dep].stream != op->stream)
            CUDA_TRY(g, cudaStreamWaitEvent(st, g->ev_end[dep], 0));
    }
    if (op->pg != PG_NONE && sched_op_is_collective(op)) {
        /* NCCL runs a communicator's kernels in issue order whatever the
         * stream; waiting here makes the start event true. */
        int p = prev_coll[op->pg];
        if (p >= 0 && s->ops[p].stream != op->stream)
            CUDA_TRY(g, cudaStreamWaitEvent(st, g->ev_end[p], 0));
        prev_coll[op->pg] = i;
    }
    CUDA_TRY(g, cudaEventRecord(g->ev_start[i], st));
    TRY(launch(g, op, st));
    CUDA_TRY(g, cudaEventRecord(g->ev_end[i], st));
    return 0;
}

/* Barrier across the GPU threads; -1 when another thread has failed. */
static int
barrier(struct gpu *g)
{
    struct exec_run *r = g->run;
    pthread_mutex_lock(&r->mu);
    int gen = r->bar_gen;
    if (++r->bar_count == r->n) {
        r->bar_count = 0;
        r->bar_gen++;
        pthread_cond_broadcast(&r->cv);
    } else {
        while (gen == r->bar_gen && !r->abort.load())
            pthread_cond_wait(&r->cv, &r->mu);
    }
    pthread_mutex_unlock(&r->mu);
    if (r->abort.load())
        return real_fail(g, "stopped: rank %d failed",
                        r->g[r->first_fail.load() - 1].rank);
    return 0;
}

/* Wait until every stream of this GPU is idle. */
static int
drain(struct gpu *g, int upto)
{
    g->cur_op = -1;
    for (int k = 0; k < STREAM_HOST; k++) {
        CUDA_TRY(g, cudaEventRecord(g->tail[2 * k], g->st[k]));
        CUDA_TRY(g, cudaEventRecord(g->tail[2 * k + 1], g->free_st[k]));
    }
    for (int k = 0; k < 2 * STREAM_HOST; k++)
        TRY(wait_event(g, g->tail[k], -1, upto));
    return 0;
}

/* Free what the pass left allocated (sharded params, optimizer state),
 * return the pool's memory to the device, and reset its peaks. */
int
empty_pool(struct gpu *g)
{
    const struct sched *s = g->run->s;
    for (int b = 0; b < s->n_buffers; b++)
        if (g->ptr[b] != NULL) {
            CUDA_TRY(g, cudaFreeAsync(g->ptr[b], g->st[STREAM_C]));
            g->ptr[b] = NULL;
        }
    CUDA_TRY(g, cudaEventRecord(g->tail[0], g->st[STREAM_C]));
    TRY(wait_event(g, g->tail[0], -1, 0));
    CUDA_TRY(g, cudaMemPoolTrimTo(g->pool, 0));
    unsigned long long zero = 0;
    CUDA_TRY(g, cudaMemPoolSetAttribute(g->pool,
                                        cudaMemPoolAttrReservedMemHigh,
                                        &zero));
    CUDA_TRY(g, cudaMemPoolSetAttribute(g->pool, cudaMemPoolAttrUsedMemHigh,
                                        &zero));
    return 0;
}

/* One pass over the ops of steps < iters (all when iters >= iterations),
 * starting when every GPU thread is ready; TIMED: the timed pass, whose
 * GPU 0 NVML meters. */
int
run_pass(struct gpu *g, int iters, int timed)
{
    const struct sched *s = g->run->s;
    int prev_coll[PG_COUNT];
    for (int p = 0; p < PG_COUNT; p++)
        prev_coll[p] = -1;
    memset(g->issued, 0, (size_t)s->n_ops);
    g->done_lo = 0;
    TRY(barrier(g));
    g->cur_op = -1;
    CUDA_TRY(g, cudaEventRecord(g->t0, g->st[STREAM_C]));
    for (int k = 0; k < STREAM_HOST; k++) {
        if (k != STREAM_C)
            CUDA_TRY(g, cudaStreamWaitEvent(g->st[k], g->t0, 0));
        CUDA_TRY(g, cudaStreamWaitEvent(g->free_st[k], g->t0, 0));
    }
    TRY(wait_event(g, g->t0, -1, 0));
    g->host_t0 = host_clock_ns();
    /* The timed pass of local GPU 0 is metered from here, past the
     * barrier, to its end; the main thread reads the clock meanwhile
     * (exec.cu real_run). */
    struct exec_run *r = g->run;
    int meter = timed && g->local == 0;
    if (meter) {
        gpu_clock_begin(r->clock, &r->interval);
        r->timed.store(1);
    }
    int upto = 0;
    for (int i = 0; i < s->n_ops; i++) {
        if (s->ops[i].iter >= iters)
            continue;
        TRY(issue(g, i, prev_coll));
        upto = i + 1;
    }
    TRY(drain(g, upto));
    if (meter) {
        gpu_clock_end(r->clock, &r->interval, &r->meter, NULL);
        r->timed.store(2);
    }
    return 0;
}
