/*
 * exec.cu: real mode, the schedule executed on this node's GPUs.
 *
 * One host thread per GPU walks the very op list the simulator runs
 * (sched.h), in host issue order, and issues each op to the CUDA stream the
 * schedule names:
 *
 *   - compute ops run every leaf of their range with the leaf's real shapes
 *     and the param dtype: a Linear as cuBLAS GEMMs (1 forward, dgrad and
 *     wgrad backward), attention as strided-batched GEMMs (QK^T and PV
 *     forward, the five FlashAttention-2 backward matmuls), causal masks by
 *     splitting the queries into chunks that only see earlier keys; every
 *     other leaf as a memory-streaming kernel moving the bytes layer_work()
 *     gives, split into its kernel count;
 *   - collectives become NCCL calls on the communicator of their process
 *     group, on the buffers the schedule allocated;
 *   - dependencies become cudaStreamWaitEvent on the end event of the op
 *     depended on; collectives also wait for the previous collective of
 *     their communicator, which NCCL enforces anyway (doc/fsdp-semantics.md
 *     §2.3), so that their start events mark when they really start;
 *   - ALLOC and FREE use a stream-ordered memory pool, one per GPU: a block
 *     whose last use ran on its pool's stream is freed on that stream (and
 *     reusable there at once, as PyTorch's caching allocator does); one
 *     used on another stream is freed on a side stream after the last
 *     use's end event (record_stream), and reusable once that free has
 *     happened, never by making a later allocation wait for it;
 *   - CPU_WAIT blocks the host thread until its event has completed.
 *
 * Every op gets a start and an end cudaEvent; after the timed pass their
 * times relative to a common start event become the struct engine_result
 * the simulator fills, so `fsdpsim compare` matches prediction and
 * measurement op by op.  Host-side ops (ALLOC, FREE, CPU_WAIT, the HOST
 * stream's optimizer) are timed with the host's monotonic clock, aligned
 * to the start event by synchronising on it once; host times are thus
 * late by the wake-up latency of that synchronisation (a few microseconds).
 *
 * Warm-up: before the timed pass the ops of the first `warmup` steps run
 * untimed (NCCL connection set-up, cuBLAS heuristics, pool growth); the
 * pool is then emptied and trimmed, so the timed pass starts cold exactly
 * as the simulation does, and runs the whole list (all s->iterations
 * steps).  Only local GPU 0 (rank node_rank * gpus) is reported; the
 * others run the same list for their collectives.
 *
 * Assumptions: one process per node drives all its GPUs (one thread
 * each); across nodes the processes have met through sim/core/rendezvous.c,
 * which carries the NCCL unique ids.  Operand contents are scratch values: only the timing
 * and the memory footprint are real.  Scratch operands (sized for the
 * largest leaf, capped) live outside the ledger's pool.
 */
#include "exec_impl.h"

/* ---- Clocks and messages -------------------------------------------- */

void
nap(void)
{
    struct timespec ts = {0, POLL_SLEEP_NS};
    nanosleep(&ts, NULL);
}

/* "op 42 (allgather unit 3)" or "set-up"; into buf. */
const char *
op_desc(const struct sched *s, int id, char *buf, size_t len)
{
    if (id < 0 || id >= s->n_ops) {
        snprintf(buf, len, "set-up");
        return buf;
    }
    const struct sched_op *op = &s->ops[id];
    snprintf(buf, len, "op %d (%s unit %d, stream %s)", id,
             sched_op_kind_name(op->kind), op->unit,
             sched_stream_name(op->stream));
    return buf;
}

/* Record the first failure of this GPU: "<op> on rank R: <what>"; what is
 * printf-formatted.  Returns -1 for `return real_fail(...)`. */
int
real_fail(struct gpu *g, const char *fmt, ...)
{
    if (g->cause == NULL) {
        va_list ap;
        va_start(ap, fmt);
        char *what = xvasprintf(fmt, ap);
        va_end(ap);
        char d[128];
        g->cause = xasprintf("%s on rank %d: %s",
                             op_desc(g->run->s, g->cur_op, d, sizeof d),
                             g->rank, what);
        free(what);
    }
    g->rc = -1;
    return -1;
}

/* ---- Per-GPU set-up and thread -------------------------------------- */

static int
setup_gpu(struct gpu *g)
{
    const struct exec_run *r = g->run;
    const struct sched *s = r->s;
    g->cur_op = -1;
    CUDA_TRY(g, cudaSetDevice(g->dev));
    CUDA_TRY(g, cudaDeviceGetAttribute(&g->sms, cudaDevAttrMultiProcessorCount,
                                       g->dev));
    for (int k = 0; k < STREAM_HOST; k++) {
        CUDA_TRY(g, cudaStreamCreateWithFlags(&g->st[k],
                                              cudaStreamNonBlocking));
        CUDA_TRY(g, cudaStreamCreateWithFlags(&g->free_st[k],
                                              cudaStreamNonBlocking));
    }
    g->ev_start = (cudaEvent_t *)xcalloc(s->n_ops + 1, sizeof(cudaEvent_t));
    g->ev_end = (cudaEvent_t *)xcalloc(s->n_ops + 1, sizeof(cudaEvent_t));
    for (int i = 0; i < s->n_ops; i++) {
        if (!sched_op_on_gpu(&s->ops[i]))
            continue;
        CUDA_TRY(g, cudaEventCreateWithFlags(&g->ev_start[i],
                                             cudaEventDefault));
        CUDA_TRY(g, cudaEventCreateWithFlags(&g->ev_end[i],
                                             cudaEventDefault));
    }
    CUDA_TRY(g, cudaEventCreateWithFlags(&g->t0, cudaEventDefault));
    for (int k = 0; k < 2 * STREAM_COUNT; k++)
        CUDA_TRY(g, cudaEventCreateWithFlags(&g->tail[k],
                                             cudaEventDisableTiming));

    /* The ledger's pool: keeps what it reserved (release threshold max,
     * like PyTorch's caching allocator), and never makes an allocation
     * wait for a pending free on another stream. */
    cudaMemPoolProps props;
    memset(&props, 0, sizeof props);
    props.allocType = cudaMemAllocationTypePinned;
    props.handleTypes = cudaMemHandleTypeNone;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = g->dev;
    CUDA_TRY(g, cudaMemPoolCreate(&g->pool, &props));
    g->have_pool = 1;
    unsigned long long thr = UINT64_MAX;
    CUDA_TRY(g, cudaMemPoolSetAttribute(g->pool,
                                        cudaMemPoolAttrReleaseThreshold,
                                        &thr));
    int no = 0;
    CUDA_TRY(g, cudaMemPoolSetAttribute(
                    g->pool, cudaMemPoolReuseAllowInternalDependencies, &no));

    CUBLAS_TRY(g, cublasCreate(&g->blas));
    CUDA_TRY(g, cudaMalloc(&g->blas_ws, BLAS_WORKSPACE_BYTES));
    CUBLAS_TRY(g, cublasSetWorkspace(g->blas, g->blas_ws,
                                     BLAS_WORKSPACE_BYTES));
    if (r->compute == CUBLAS_COMPUTE_32F_FAST_TF32)
        CUBLAS_TRY(g, cublasSetMathMode(g->blas, CUBLAS_TF32_TENSOR_OP_MATH));

    /* Scratch, filled once with ordinary values. */
    void **regions[3] = {&g->sx, &g->sw, &g->sy};
    size_t sizes[3] = {r->need_x, r->need_w, r->need_y};
    for (int k = 0; k < 3; k++) {
        size_t n = sizes[k] < 256 ? 256 : sizes[k];
        CUDA_TRY(g, cudaMalloc(regions[k], n));
        TRY(fill_scratch(g, *regions[k], n, 17u * (k + 1)));
    }
    CUDA_TRY(g, cudaMalloc(&g->sstream, STREAM_REGION_BYTES));
    CUDA_TRY(g, cudaMemset(g->sstream, 0, STREAM_REGION_BYTES));
    g->pinned_bytes = r->need_pinned;
    if (g->pinned_bytes > 0) {
        CUDA_TRY(g, cudaMallocHost(&g->pinned, g->pinned_bytes));
        memset(g->pinned, 0, g->pinned_bytes);
    }
    g->host_opt_bytes = r->need_host_opt;
    if (g->host_opt_bytes > 0) {
        g->host_opt = (float *)xcalloc(1, g->host_opt_bytes);
    }
    CUDA_TRY(g, cudaDeviceSynchronize());

    g->ptr = (void **)xcalloc(s->n_buffers + 1, sizeof(void *));
    g->ptr_bytes = (uint64_t *)xcalloc(s->n_buffers + 1, sizeof(uint64_t));
    g->issued = (unsigned char *)xcalloc(s->n_ops + 1, 1);
    g->h_issue = (int64_t *)xcalloc(s->n_ops + 1, sizeof(int64_t));
    g->h_start = (int64_t *)xcalloc(s->n_ops + 1, sizeof(int64_t));
    g->h_end = (int64_t *)xcalloc(s->n_ops + 1, sizeof(int64_t));
    return 0;
}

/* Abort g's communicators unless someone already has.  ncclCommAbort may
 * wait for the other local ranks to abort too (an intra-node collective),
 * so the flag is taken under the lock and the calls made outside it. */
static void
abort_comms(struct gpu *g)
{
    pthread_mutex_lock(&g->comm_mu);
    int mine = !g->comms_dead;
    g->comms_dead = 1;
    pthread_mutex_unlock(&g->comm_mu);
    if (mine)
        for (int p = 0; p < PG_COUNT; p++)
            if (g->comm[p] != NULL)
                ncclCommAbort(g->comm[p]);
}

static int
gpu_body(struct gpu *g)
{
    struct exec_run *r = g->run;
    TRY(setup_gpu(g));
    for (int w = 0; w < r->warm_passes; w++) {
        TRY(run_pass(g, r->warm_iters, 0));
        TRY(empty_pool(g));
    }
    TRY(run_pass(g, r->s->iterations, 1));
    g->cur_op = -1;
    unsigned long long v = 0;
    CUDA_TRY(g, cudaMemPoolGetAttribute(g->pool,
                                        cudaMemPoolAttrReservedMemHigh, &v));
    g->peak_reserved = (int64_t)v;
    CUDA_TRY(g, cudaMemPoolGetAttribute(g->pool, cudaMemPoolAttrUsedMemHigh,
                                        &v));
    g->peak_used = (int64_t)v;
    return 0;
}

static void *
gpu_thread(void *arg)
{
    struct gpu *g = (struct gpu *)arg;
    struct exec_run *r = g->run;
    if (gpu_body(g) != 0) {
        int none = 0;
        r->first_fail.compare_exchange_strong(none, g->local + 1);
        r->abort.store(1);
        pthread_mutex_lock(&r->mu);
        pthread_cond_broadcast(&r->cv);
        pthread_mutex_unlock(&r->mu);
        abort_comms(g);
    }
    return NULL;
}

/* ---- Entry ---------------------------------------------------------- */

/* Scratch and host buffer sizes for the schedule: the largest leaf's
 * operands, the largest copy. */
static void
size_scratch(struct exec_run *r)
{
    const struct sched *s = r->s;
    int es = r->esize;
    r->work = (struct layer_work *)xcalloc(s->n_leaves + 1,
                                           sizeof *r->work);
    int64_t T = s->micro_batch * s->seq_len;
    for (int l = 0; l < s->n_leaves; l++) {
        const struct module *m = s->leaves[l];
        struct layer_work *w = &r->work[l];
        layer_work(m, s->micro_batch, s->seq_len, es, w);
        int64_t gemms[2][3] = {{w->gemm_m, w->gemm_n, w->gemm_k}, {0, 0, 0}};
        if (m->kind == LAYER_MHA) {
            gemms[0][0] = gemms[1][0] = T;
            gemms[0][1] = 3 * m->out;
            gemms[0][2] = gemms[1][1] = gemms[1][2] = m->out;
        }
        for (int k = 0; k < 2; k++) {
            int64_t M = gemms[k][0], N = gemms[k][1], K = gemms[k][2];
            if (M <= 0)
                continue;
            int64_t mc = linear_chunk(M, N, K, es);
            size_t x = (size_t)(mc * K) * es, y = (size_t)(mc * N) * es;
            size_t wt = (size_t)(N * K) * es;
            r->need_x = x > r->need_x ? x : r->need_x;
            r->need_y = y > r->need_y ? y : r->need_y;
            r->need_w = wt > r->need_w ? wt : r->need_w;
        }
        if (m->kind == LAYER_ATTENTION || m->kind == LAYER_MHA) {
            struct attn a;
            size_t x, wt, y;
            leaf_attn(r, m, &a);
            attn_needs(&a, es, &x, &wt, &y);
            r->need_x = x > r->need_x ? x : r->need_x;
            r->need_y = y > r->need_y ? y : r->need_y;
            r->need_w = wt > r->need_w ? wt : r->need_w;
        }
    }
    for (int i = 0; i < s->n_ops; i++) {
        const struct sched_op *op = &s->ops[i];
        if (op->kind == OP_H2D || op->kind == OP_D2H) {
            size_t b = op->bytes < PINNED_CAP_BYTES ? op->bytes
                                                    : PINNED_CAP_BYTES;
            r->need_pinned = b > r->need_pinned ? b : r->need_pinned;
        }
        if (op->stream == STREAM_HOST && op->kind == OP_OPTIMIZER)
            r->need_host_opt = HOST_OPT_CAP_BYTES;
        if (op->pg > PG_NONE && op->pg < PG_COUNT)
            r->uses_pg[op->pg] = 1;
    }
}

static int
check_setup(const struct sched *s, const struct real_launch *l, char **cause)
{
    if (l->nodes > 1 && l->rv == NULL) {
        *cause = xasprintf("a %d-node run needs its processes to have met "
                           "(rendezvous) first", l->nodes);
        return -1;
    }
    if (l->gpus < 1 || s->world != l->nodes * l->gpus) {
        *cause = xasprintf("the schedule is for %d GPUs (%d per node) but "
                           "this job has %d node(s) x %d GPU(s): give "
                           "--nodes and --gpus-per-node to match the GPUs "
                           "present", s->world, s->gpus_per_node, l->nodes,
                           l->gpus);
        return -1;
    }
    int have = 0;
    char *why = NULL;
    if (real_probe(&have, &why) != 0) {
        *cause = why;
        return -1;
    }
    if (have < l->gpus) {
        *cause = xasprintf("the schedule needs %d GPUs on this node but "
                           "CUDA sees %d (check CUDA_VISIBLE_DEVICES)",
                           l->gpus, have);
        return -1;
    }
    if (s->param_dtype == DTYPE_FP8) {
        *cause = xstrdup("real mode runs fp32, tf32, bf16 and fp16 "
                         "compute; param dtype fp8 is not supported");
        return -1;
    }
    if (s->shard_size > 1 && s->world % s->shard_size != 0) {
        *cause = xasprintf("shard group of %d does not divide the %d GPUs",
                           s->shard_size, s->world);
        return -1;
    }
    return 0;
}

extern "C" int
real_run(const struct sched *s, const struct model *m, const struct topo *t,
         const struct real_launch *l, const struct real_options *o,
         struct engine_result *measured, int64_t *peak_reserved,
         struct gpu_state *state, char **cause)
{
    (void)m;
    *peak_reserved = 0;
    memset(state, 0, sizeof *state);
    memset(measured, 0, sizeof *measured);
    if (check_setup(s, l, cause) != 0)
        return REAL_EXIT_SYSTEM;

    struct exec_run *r = new exec_run();
    r->s = s;
    r->t = t;
    r->o = o;
    r->l = l;
    r->n = l->gpus;
    r->esize = dtype_bytes(s->param_dtype);
    switch (s->param_dtype) {
    case DTYPE_BF16:
        r->ctype = CUDA_R_16BF;
        r->compute = CUBLAS_COMPUTE_32F;
        break;
    case DTYPE_FP16:
        r->ctype = CUDA_R_16F;
        r->compute = CUBLAS_COMPUTE_32F;
        break;
    case DTYPE_TF32:
        r->ctype = CUDA_R_32F;
        r->compute = CUBLAS_COMPUTE_32F_FAST_TF32;
        break;
    default:
        r->ctype = CUDA_R_32F;
        r->compute = CUBLAS_COMPUTE_32F;
        break;
    }
    int warm = o->warmup > 0 ? o->warmup : 0;
    r->warm_iters = warm < s->iterations ? warm : s->iterations;
    r->warm_passes = warm > 0 ? (warm + s->iterations - 1) / s->iterations
                              : 0;
    for (int p = PG_SHARD; p < PG_COUNT; p++) {
        int c, pos;
        pg_place(s, (enum sched_pg)p, 0, &c, &pos, &r->pg_size[p]);
    }
    size_scratch(r);
    pthread_mutex_init(&r->mu, NULL);
    pthread_cond_init(&r->cv, NULL);
    r->g = (struct gpu *)xcalloc(r->n, sizeof *r->g);
    for (int i = 0; i < r->n; i++) {
        struct gpu *g = &r->g[i];
        g->run = r;
        g->local = i;
        g->dev = i;
        g->rank = l->node_rank * l->gpus + i;
        g->cur_op = -1;
        pthread_mutex_init(&g->comm_mu, NULL);
    }

    int rc = 0;
    if (init_comms(r, cause) != 0) {
        rc = REAL_EXIT_SYSTEM;
        goto out;
    }
    /* Opened before the threads start: NVML's start-up may take long. */
    r->clock = gpu_clock_open(r->g[0].dev);
    gpu_clock_meter(r->clock, &r->meter);
    for (int i = 0; i < r->n; i++) {
        int e = pthread_create(&r->g[i].thread, NULL, gpu_thread, &r->g[i]);
        if (e != 0) {
            *cause = xasprintf("pthread_create: %s", strerror(e));
            r->abort.store(1);
            r->first_fail.store(i + 1);
            r->g[i].cause = xstrdup(*cause);
            rc = REAL_EXIT_SYSTEM;
            break;
        }
        r->g[i].started = 1;
    }
    if (rc != 0) {
        pthread_mutex_lock(&r->mu);
        pthread_cond_broadcast(&r->cv);
        pthread_mutex_unlock(&r->mu);
    }
    /* Join the threads.  Once one has failed, every rank must abort its
     * communicators: the failed and the stopped threads do their own; the
     * main thread does those of threads already finished, and, as a last
     * resort, those of threads still running after ABORT_GRACE_NS (stuck
     * inside a CUDA call behind a collective whose peer died, where they
     * cannot see the flag), so that their kernels end. */
    {
        int64_t abort_seen = -1, sampled = 0;
        for (;;) {
            /* GPU 0's SM clock every 10 ms of its timed pass, and once
             * at its end if the pass was shorter; never once a rank has
             * failed (NVML may hang on a faulted GPU, and this loop must
             * abort the communicators). */
            int64_t now = host_clock_ns();
            int phase = r->timed.load();
            if (r->clock != NULL && !r->abort.load()
                && ((phase == 1 && now - sampled >= 10000000)
                    || (phase == 2 && r->meter.tried == 0))) {
                gpu_clock_sample(r->clock, &r->meter, NULL);
                sampled = now;
            }
            int running = 0;
            for (int i = 0; i < r->n; i++) {
                struct gpu *g = &r->g[i];
                if (g->started
                    && pthread_tryjoin_np(g->thread, NULL) == EBUSY)
                    running++;
                else
                    g->started = 0;
            }
            if (r->abort.load()) {
                if (abort_seen < 0)
                    abort_seen = host_clock_ns();
                int late = host_clock_ns() - abort_seen > ABORT_GRACE_NS;
                /* One thread aborting several ranks groups the calls. */
                ncclGroupStart();
                for (int i = 0; i < r->n; i++)
                    if (!r->g[i].started || late) {
                        cudaSetDevice(r->g[i].dev);
                        abort_comms(&r->g[i]);
                    }
                ncclGroupEnd();
            }
            if (running == 0)
                break;
            struct timespec ts = {0, 1000000};
            nanosleep(&ts, NULL);
        }
    }
    if (rc == 0 && !r->abort.load())
        *state = gpu_meter_state(&r->meter);
    gpu_clock_close(r->clock);
    r->clock = NULL;
    if (rc == 0 && r->abort.load()) {
        int f = r->first_fail.load();
        struct gpu *g = &r->g[f > 0 ? f - 1 : 0];
        *cause = g->cause ? xstrdup(g->cause)
                          : xasprintf("rank %d failed", g->rank);
        rc = REAL_EXIT_SYSTEM;
    }
    if (rc == 0) {
        cudaSetDevice(r->g[0].dev);
        if (collect(r, measured, cause) != 0) {
            engine_result_free(measured);
            rc = REAL_EXIT_SYSTEM;
        } else {
            *peak_reserved = r->g[0].peak_reserved;
        }
    }

out:
    release_comms(r, rc == 0);
    for (int i = 0; i < r->n; i++) {
        struct gpu *g = &r->g[i];
        cudaSetDevice(g->dev);
        if (g->ev_start != NULL)
            for (int k = 0; k < s->n_ops; k++) {
                if (g->ev_start[k] != NULL)
                    cudaEventDestroy(g->ev_start[k]);
                if (g->ev_end[k] != NULL)
                    cudaEventDestroy(g->ev_end[k]);
            }
        if (g->t0 != NULL)
            cudaEventDestroy(g->t0);
        for (int k = 0; k < 2 * STREAM_COUNT; k++)
            if (g->tail[k] != NULL)
                cudaEventDestroy(g->tail[k]);
        if (g->ptr != NULL)
            for (int b = 0; b < s->n_buffers; b++)
                if (g->ptr[b] != NULL)
                    cudaFree(g->ptr[b]);
        if (g->have_pool) {
            cudaDeviceSynchronize();
            cudaMemPoolDestroy(g->pool);
        }
        if (g->blas != NULL)
            cublasDestroy(g->blas);
        cudaFree(g->blas_ws);
        cudaFree(g->sx);
        cudaFree(g->sw);
        cudaFree(g->sy);
        cudaFree(g->sstream);
        if (g->pinned != NULL)
            cudaFreeHost(g->pinned);
        for (int k = 0; k < STREAM_HOST; k++) {
            if (g->st[k] != NULL)
                cudaStreamDestroy(g->st[k]);
            if (g->free_st[k] != NULL)
                cudaStreamDestroy(g->free_st[k]);
        }
        free(g->host_opt);
        free(g->ev_start);
        free(g->ev_end);
        free(g->ptr);
        free(g->ptr_bytes);
        free(g->issued);
        free(g->h_issue);
        free(g->h_start);
        free(g->h_end);
        free(g->cause);
        pthread_mutex_destroy(&g->comm_mu);
    }
    free(r->g);
    free(r->work);
    pthread_mutex_destroy(&r->mu);
    pthread_cond_destroy(&r->cv);
    delete r;
    return rc;
}
