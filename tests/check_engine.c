/*
 * check_engine.c: the discrete-event engine against closed forms and a
 * brute-force reference executor.
 *
 * Synthetic schedules with given durations and no host cost: then every
 * op starts at max(end of the previous op on its stream, end of its
 * dependencies, end of the previous collective on its communicator), which
 * a one-pass reference computes directly.
 */
#include "engine.h"
#include "metrics.h"
#include "testutil.h"
#include "xalloc.h"
#include "check_main.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

struct synth {
    struct sched s;
    struct cost_table ct;
    struct topo *t;
};

static void
synth_init(struct synth *x, int n)
{
    memset(x, 0, sizeof *x);
    x->s.ops = xcalloc(n, sizeof *x->s.ops);
    x->s.iterations = 1;
    x->s.micro_batches = 1;
    x->ct.gpu_ns = xcalloc(n, sizeof(int64_t));
    x->ct.issue_ns = xcalloc(n, sizeof(int64_t));
    x->ct.launch_ns = xcalloc(n, sizeof(int64_t));
    /* Every op has a collective entry of its own: the tests set their
     * kinds after this. */
    x->ct.coll = xcalloc(n, sizeof *x->ct.coll);
    x->ct.coll_of = xcalloc(n, sizeof *x->ct.coll_of);
    for (int i = 0; i < n; i++)
        x->ct.coll_of[i] = i;
    x->ct.n_coll = n;
    char *cause = NULL;
    x->t = topo_load("test-2x4", &cause);
    /* The closed forms assume free overlap; interference has its own
     * test. */
    x->t->overlap_compute_slowdown = 1.0;
    x->t->overlap_comm_slowdown = 1.0;
}

static int
synth_op(struct synth *x, enum sched_op_kind k, enum sched_stream st,
         enum sched_pg pg, int64_t dur)
{
    int id = x->s.n_ops++;
    struct sched_op *op = &x->s.ops[id];
    op->id = id;
    op->kind = k;
    op->stream = st;
    op->pg = pg;
    op->unit = -1;
    op->buffer = -1;
    op->wait_op = -1;
    x->ct.gpu_ns[id] = dur;
    return id;
}

static void
synth_dep(struct synth *x, int op, int dep)
{
    struct sched_op *o = &x->s.ops[op];
    o->deps = xrealloc(o->deps, sizeof(int) * (o->n_deps + 1));
    o->deps[o->n_deps++] = dep;
}

static void
synth_free(struct synth *x, struct engine_result *r)
{
    engine_result_free(r);
    for (int i = 0; i < x->s.n_ops; i++)
        free(x->s.ops[i].deps);
    free(x->s.ops);
    topo_free(x->t);
}

START_TEST(test_engine_serial_is_sum)
{
    /* Three ops on one stream: no overlap, the end is the sum of the
     * phases, 10 + 20 + 30 = 60 ns. */
    struct synth x;
    struct engine_result r;
    synth_init(&x, 3);
    synth_op(&x, OP_FORWARD, STREAM_C, PG_NONE, 10);
    synth_op(&x, OP_BACKWARD, STREAM_C, PG_NONE, 20);
    synth_op(&x, OP_OPTIMIZER, STREAM_C, PG_NONE, 30);
    engine_run_costs(&x.s, x.t, &x.ct, &r);
    ck_assert_int_eq(r.end_ns, 60);
    ck_assert_int_eq(r.step_end_ns[0], 60);
    synth_free(&x, &r);
}
END_TEST

START_TEST(test_engine_independent_streams_overlap)
{
    /* Compute 50 ns on C and an all-gather of 30 ns on U with no
     * dependency: perfect overlap, the end is max(50, 30) = 50. */
    struct synth x;
    struct engine_result r;
    synth_init(&x, 2);
    synth_op(&x, OP_FORWARD, STREAM_C, PG_NONE, 50);
    synth_op(&x, OP_ALLGATHER, STREAM_U, PG_SHARD, 30);
    engine_run_costs(&x.s, x.t, &x.ct, &r);
    ck_assert_int_eq(r.end_ns, 50);
    ck_assert_int_eq(r.times[1].start_ns, 0);
    synth_free(&x, &r);
}
END_TEST

START_TEST(test_engine_dependency_serializes)
{
    /* C waits for U: the all-gather (30) then the compute (50): 80. */
    struct synth x;
    struct engine_result r;
    synth_init(&x, 2);
    int ag = synth_op(&x, OP_ALLGATHER, STREAM_U, PG_SHARD, 30);
    int fw = synth_op(&x, OP_FORWARD, STREAM_C, PG_NONE, 50);
    synth_dep(&x, fw, ag);
    engine_run_costs(&x.s, x.t, &x.ct, &r);
    ck_assert_int_eq(r.times[fw].start_ns, 30);
    ck_assert_int_eq(r.end_ns, 80);
    synth_free(&x, &r);
}
END_TEST

START_TEST(test_engine_communicator_fifo)
{
    /* An all-gather on U and a reduce-scatter on P of the same process
     * group run one after the other (one NCCL communicator, §2.3): 30 +
     * 20 = 50.  On different groups they overlap: max = 30. */
    struct synth x;
    struct engine_result r;
    synth_init(&x, 2);
    synth_op(&x, OP_ALLGATHER, STREAM_U, PG_SHARD, 30);
    int rs = synth_op(&x, OP_REDUCESCATTER, STREAM_P, PG_SHARD, 20);
    engine_run_costs(&x.s, x.t, &x.ct, &r);
    ck_assert_int_eq(r.times[rs].start_ns, 30);
    ck_assert_int_eq(r.end_ns, 50);
    synth_free(&x, &r);

    synth_init(&x, 2);
    synth_op(&x, OP_ALLGATHER, STREAM_U, PG_SHARD, 30);
    synth_op(&x, OP_ALLREDUCE, STREAM_A, PG_REPLICATE, 20);
    engine_run_costs(&x.s, x.t, &x.ct, &r);
    ck_assert_int_eq(r.end_ns, 30);
    synth_free(&x, &r);
}
END_TEST

START_TEST(test_engine_host_wait_and_issue_time)
{
    /* The host spends 5 ns issuing a 100 ns compute op, then blocks on it
     * (CPU_WAIT), then issues a 10 ns op: that op cannot start before
     * 100, so it ends at 110. */
    struct synth x;
    struct engine_result r;
    synth_init(&x, 3);
    int a = synth_op(&x, OP_FORWARD, STREAM_C, PG_NONE, 100);
    x.ct.issue_ns[a] = 5;
    int w = synth_op(&x, OP_CPU_WAIT, STREAM_HOST, PG_NONE, 0);
    x.s.ops[w].wait_op = a;
    int b = synth_op(&x, OP_ALLGATHER, STREAM_U, PG_SHARD, 10);
    engine_run_costs(&x.s, x.t, &x.ct, &r);
    ck_assert_int_eq(r.times[b].issue_ns, 100);
    ck_assert_int_eq(r.times[b].end_ns, 110);
    synth_free(&x, &r);
}
END_TEST

START_TEST(test_engine_overlap_interference)
{
    /* Compute (100 ns on C) and an all-gather (100 ns on U) start together.
     * With [overlap] compute_slowdown 1.1 and comm_slowdown 1.15 both run
     * slower while they overlap: compute ends at 100 x 1.1 = 110; by then
     * the all-gather has done 110 / 1.15 = 95.65 ns of work and finishes
     * the last 4.35 ns at full speed: ceil(110 + 4.35) = 115. */
    struct synth x;
    struct engine_result r;
    synth_init(&x, 2);
    x.t->overlap_compute_slowdown = 1.1;
    x.t->overlap_comm_slowdown = 1.15;
    int c = synth_op(&x, OP_FORWARD, STREAM_C, PG_NONE, 100);
    int ag = synth_op(&x, OP_ALLGATHER, STREAM_U, PG_SHARD, 100);
    engine_run_costs(&x.s, x.t, &x.ct, &r);
    ck_assert_int_eq(r.times[c].end_ns, 110);
    ck_assert_int_eq(r.times[ag].end_ns, 115);
    synth_free(&x, &r);

    /* Monotone: larger factors never make anything finish earlier. */
    int64_t prev_c = 0, prev_ag = 0;
    for (double f = 1.0; f <= 2.0; f += 0.25) {
        synth_init(&x, 2);
        x.t->overlap_compute_slowdown = f;
        x.t->overlap_comm_slowdown = f;
        synth_op(&x, OP_FORWARD, STREAM_C, PG_NONE, 1000);
        synth_op(&x, OP_ALLGATHER, STREAM_U, PG_SHARD, 700);
        engine_run_costs(&x.s, x.t, &x.ct, &r);
        ck_assert(r.times[0].end_ns >= prev_c);
        ck_assert(r.times[1].end_ns >= prev_ag);
        prev_c = r.times[0].end_ns;
        prev_ag = r.times[1].end_ns;
        synth_free(&x, &r);
    }
}
END_TEST

/* The reference executor: one pass in issue order. */
static void
reference(const struct synth *x, int64_t *end, int ignore_pg)
{
    int64_t stream_end[STREAM_COUNT] = {0}, pg_end[PG_COUNT] = {0};
    for (int i = 0; i < x->s.n_ops; i++) {
        const struct sched_op *op = &x->s.ops[i];
        int64_t start = stream_end[op->stream];
        for (int d = 0; d < op->n_deps; d++)
            if (end[op->deps[d]] > start)
                start = end[op->deps[d]];
        if (!ignore_pg && op->pg != PG_NONE && pg_end[op->pg] > start)
            start = pg_end[op->pg];
        end[i] = start + x->ct.gpu_ns[i];
        stream_end[op->stream] = end[i];
        if (op->pg != PG_NONE)
            pg_end[op->pg] = end[i];
    }
}

static uint64_t lcg_state;

static uint32_t
lcg(void)
{
    lcg_state = lcg_state * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(lcg_state >> 33);
}

static void
random_synth(struct synth *x, int n)
{
    static const enum sched_stream streams[] = {STREAM_C, STREAM_U, STREAM_P,
                                                STREAM_A, STREAM_PU};
    synth_init(x, n);
    for (int i = 0; i < n; i++) {
        enum sched_stream st = streams[lcg() % 5];
        enum sched_pg pg = st == STREAM_U || st == STREAM_P ? PG_SHARD
                           : st == STREAM_A ? PG_REPLICATE : PG_NONE;
        enum sched_op_kind k = pg == PG_NONE ? OP_FORWARD : OP_ALLGATHER;
        int id = synth_op(x, k, st, pg, 1 + lcg() % 1000);
        if (id > 0 && lcg() % 3 == 0)
            synth_dep(x, id, (int)(lcg() % id));
    }
}

START_TEST(test_engine_matches_reference)
{
    /* 200 random schedules of 40 ops: the engine's end times equal the
     * reference's; a reference that ignores the communicator FIFO must
     * differ on some schedule, proving the comparison can fail. */
    lcg_state = 12345;
    int wrong_differs = 0;
    for (int trial = 0; trial < 200; trial++) {
        struct synth x;
        struct engine_result r;
        random_synth(&x, 40);
        int64_t want[40], wrong[40];
        reference(&x, want, 0);
        reference(&x, wrong, 1);
        engine_run_costs(&x.s, x.t, &x.ct, &r);
        for (int i = 0; i < 40; i++) {
            ck_assert_int_eq(r.times[i].end_ns, want[i]);
            if (wrong[i] != want[i])
                wrong_differs = 1;
        }
        synth_free(&x, &r);
    }
    ck_assert(wrong_differs);
}
END_TEST

START_TEST(test_engine_invariants_on_real_run)
{
    /* A real schedule: every op ends no earlier than it starts, starts no
     * earlier than it was issued, ops on a stream do not overlap, and the
     * memory peak is at least every sampled value. */
    struct tu_run t;
    char *cause = NULL;
    ck_assert_int_eq(tu_run(&t, "--model tiny-llama --topology test-2x4 "
                            "--param-dtype bf16 --grad-accum 2", 1, &cause),
                     0);
    const struct sched *s = t.r.sched;
    int64_t last_end[STREAM_COUNT] = {0};
    for (int i = 0; i < s->n_ops; i++) {
        const struct op_time *tm = &t.res.times[i];
        ck_assert(tm->end_ns >= tm->start_ns);
        ck_assert(tm->start_ns >= tm->issue_ns);
        if (sched_op_on_gpu(&s->ops[i])) {
            ck_assert(tm->start_ns >= last_end[s->ops[i].stream]);
            last_end[s->ops[i].stream] = tm->end_ns;
        }
    }
    int n;
    const struct mem_sample *ms = mem_samples(t.res.mem, &n);
    for (int i = 0; i < n; i++) {
        ck_assert(ms[i].allocated <= t.met.mem.peak_allocated);
        if (i > 0)
            ck_assert(ms[i].t_ns >= ms[i - 1].t_ns);
    }
    tu_free(&t);
}
END_TEST

START_TEST(test_cost_memo_is_exact)
{
    /* cost_table_build gives an op the times of the first op timed alike
     * (same kind, stream, group, unit, leaves, bytes, reduction, hooks):
     * every entry must be what timing each op on its own gives, on the
     * settings that change a micro-batch's ops and on FSDP2's per-unit
     * post-forward meshes, CPU offload and selective checkpointing. */
    static const char *const extra[] = {
        "--fsdp-version 2 --reshard-after-forward 4",
        "--cpu-offload --no-sync",
        "--activation-checkpointing selective-op",
    };
    int n_extra = (int)(sizeof extra / sizeof *extra);
    for (int i = 0; i < tu_n_fold_settings + n_extra; i++) {
        const char *set = i < tu_n_fold_settings
                              ? tu_fold_settings[i]
                              : extra[i - tu_n_fold_settings];
        char *args = xasprintf("--model tiny-llama --topology test-2x4 "
                               "--grad-accum 11 %s", set);
        struct tu_run t;
        char *cause = NULL;
        ck_assert_msg(tu_run(&t, args, 0, &cause) == 0, "%s: %s", args,
                      cause);
        const struct sched *s = t.r.sched;
        struct cost_table memo, each;
        cost_table_build(s, t.r.topo, &memo);
        cost_table_build_each(s, t.r.topo, &each);
        int hits = 0;
        for (int k = 0; k < s->n_ops; k++) {
            ck_assert_msg(memo.gpu_ns[k] == each.gpu_ns[k]
                              && memo.issue_ns[k] == each.issue_ns[k]
                              && memo.launch_ns[k] == each.launch_ns[k],
                          "%s: op %d", args, k);
            const struct coll_result *a = cost_coll(&memo, k),
                                     *b = cost_coll(&each, k);
            ck_assert((a == NULL) == (b == NULL));
            if (a != NULL)
                ck_assert_msg(a->time_s == b->time_s && a->algo == b->algo
                                  && a->proto == b->proto
                                  && a->channels == b->channels
                                  && a->comm_channels == b->comm_channels,
                              "%s: collective op %d", args, k);
            hits += k > 0 && memo.gpu_ns[k] == memo.gpu_ns[k - 1];
        }
        ck_assert(hits > 0);
        ck_assert(memo.nccl_buffer_bytes == each.nccl_buffer_bytes
                  && memo.nccl_nvls_bytes == each.nccl_nvls_bytes
                  && memo.nccl_conn_bytes == each.nccl_conn_bytes
                  && memo.nvls_communicators == each.nvls_communicators);
        cost_table_free(&memo);
        cost_table_free(&each);
        tu_free(&t);
        free(args);
    }
}
END_TEST

START_TEST(test_engine_world_size_does_not_change_cost)
{
    /* SPMD: one representative rank is simulated, so the schedule is the
     * same length on 16 and on 1024 nodes, and the events processed stay
     * within a few per op (an end, a host step, a wake-up) on both. */
    struct tu_run a, b;
    char *cause = NULL;
    ck_assert_int_eq(tu_run(&a, "--model tiny-llama --topology test-2x4 "
                            "--nodes 16 --use-orig-params", 1, &cause), 0);
    ck_assert_int_eq(tu_run(&b, "--model tiny-llama --topology test-2x4 "
                            "--nodes 1024 --use-orig-params", 1, &cause), 0);
    ck_assert_int_eq(a.r.sched->n_ops, b.r.sched->n_ops);
    ck_assert(a.res.events <= 3 * (uint64_t)a.r.sched->n_ops);
    ck_assert(b.res.events <= 3 * (uint64_t)b.r.sched->n_ops);
    tu_free(&a);
    tu_free(&b);
}
END_TEST

/* The caching allocator's retries in the engine (mem.h): a device of
 * CAP bytes and retry costs that keep the sums readable (cudaMalloc
 * 100 ns, cudaFree 50 ns, synchronize 7 ns). */
static void
synth_mem(struct synth *x, double cap, int n_buffers)
{
    x->s.n_buffers = n_buffers;
    x->t->hbm_bytes = cap;
    x->t->cuda_malloc_ns = 100;
    x->t->cuda_free_ns = 50;
    x->t->synchronize_ns = 7;
}

static int
synth_alloc(struct synth *x, int buffer, enum sched_stream st,
            uint64_t bytes)
{
    int id = synth_op(x, OP_ALLOC, st, PG_NONE, 0);
    x->s.ops[id].buffer = buffer;
    x->s.ops[id].bytes = bytes;
    x->s.ops[id].cat = MEM_ACTIVATIONS;
    return id;
}

static int
synth_release(struct synth *x, int buffer, int wait_op)
{
    int id = synth_op(x, OP_FREE, STREAM_C, PG_NONE, 0);
    x->s.ops[id].buffer = buffer;
    x->s.ops[id].wait_op = wait_op;
    return id;
}

#define MiB (INT64_C(1) << 20)

START_TEST(test_engine_retry_adds_host_time)
{
    /* A 4 MiB device: 2 MiB segments on C (then unused), U, and P.  P's
     * does not fit (4 + 2 > 4), so the retry releases the unused C
     * segment (cudaFree, 50 ns) and cudaMalloc succeeds (100 ns) without
     * a synchronize: the host issues the optimizer 150 ns late, and the
     * step ends at 150 + 10 = 160 instead of 10. */
    struct synth x;
    struct engine_result r;
    synth_init(&x, 5);
    synth_mem(&x, 4.0 * MiB, 3);
    synth_alloc(&x, 0, STREAM_C, 512);
    synth_release(&x, 0, -1);
    synth_alloc(&x, 1, STREAM_U, 512);
    int a = synth_alloc(&x, 2, STREAM_P, 512);
    int opt = synth_op(&x, OP_OPTIMIZER, STREAM_C, PG_NONE, 10);
    engine_run_costs(&x.s, x.t, &x.ct, &r);
    ck_assert_int_eq(r.times[a].start_ns, 0);
    ck_assert_int_eq(r.times[a].end_ns, 150);
    ck_assert_int_eq(r.times[opt].issue_ns, 150);
    ck_assert_int_eq(r.step_end_ns[0], 160);
    struct metrics m;
    metrics_compute(&x.s, x.t, &r, &m);
    ck_assert_int_eq(m.mem.retries, 1);
    ck_assert_int_eq(m.step_retries, 1);
    ck_assert_int_eq(m.step_syncs, 0);
    ck_assert(m.alloc_stall_s > 149e-9 && m.alloc_stall_s < 151e-9);
    ck_assert_int_eq(m.mem.peak_reserved, 4 * MiB);
    ck_assert(m.fits);
    synth_free(&x, &r);
}
END_TEST

START_TEST(test_engine_sync_waits_for_gpu)
{
    /* A 2 MiB device.  The host allocates A (C's 2 MiB segment), issues a
     * 1000 ns forward that uses it and frees A with record_stream (pending
     * until the forward ends).  B, on U, needs a second segment: the
     * first retry frees nothing (A's segment waits for its event) and its
     * cudaMalloc fails (100 ns); the synchronize makes the host wait until
     * the forward ends at 1000, when A is free and its segment unused;
     * then synchronize (7), cudaFree of that segment (50) and cudaMalloc
     * (100) succeed: B's allocation returns at 1000 + 157 = 1157, and the
     * 10 ns all-gather issued then ends at 1167.  Reserved stays 2 MiB. */
    struct synth x;
    struct engine_result r;
    synth_init(&x, 5);
    synth_mem(&x, 2.0 * MiB, 2);
    synth_alloc(&x, 0, STREAM_C, 512);
    int fw = synth_op(&x, OP_FORWARD, STREAM_C, PG_NONE, 1000);
    synth_release(&x, 0, fw);
    int b = synth_alloc(&x, 1, STREAM_U, 512);
    int ag = synth_op(&x, OP_ALLGATHER, STREAM_U, PG_SHARD, 10);
    engine_run_costs(&x.s, x.t, &x.ct, &r);
    ck_assert_int_eq(r.times[b].issue_ns, 0);
    ck_assert_int_eq(r.times[b].end_ns, 1157);
    ck_assert_int_eq(r.times[ag].start_ns, 1157);
    ck_assert_int_eq(r.end_ns, 1167);
    struct mem_stats st;
    mem_get_stats(r.mem, &st);
    ck_assert_int_eq(st.retries, 1);
    ck_assert_int_eq(st.syncs, 1);
    ck_assert_int_eq(st.ooms, 0);
    ck_assert_int_eq(st.peak_reserved, 2 * MiB);
    /* The stall: 100 + 900 (waiting) + 157. */
    ck_assert_int_eq(st.stall_ns, 1157);
    int n;
    const struct mem_retry *rt = mem_retries(r.mem, &n);
    ck_assert_int_eq(n, 1);
    ck_assert_int_eq(rt[0].op, b);
    ck_assert_int_eq(rt[0].synced, 1);
    synth_free(&x, &r);
}
END_TEST

START_TEST(test_engine_oom_is_a_result)
{
    /* A 2 MiB device holding A (512 B, live) while a 1000 ns forward runs;
     * B wants 3 MiB, a 20 MiB segment: the first retry frees nothing, the
     * synchronize waits for the forward (to 1000) and frees nothing
     * either, so it is an OOM short by 2 + 20 - 2 = 20 MiB.  The run
     * finishes: reserved stays 2 MiB, the step does not fit, and its
     * margin is minus the shortfall. */
    struct synth x;
    struct engine_result r;
    synth_init(&x, 4);
    synth_mem(&x, 2.0 * MiB, 2);
    synth_alloc(&x, 0, STREAM_C, 512);
    synth_op(&x, OP_FORWARD, STREAM_C, PG_NONE, 1000);
    int b = synth_alloc(&x, 1, STREAM_U, (uint64_t)(3 * MiB));
    int opt = synth_op(&x, OP_OPTIMIZER, STREAM_C, PG_NONE, 10);
    engine_run_costs(&x.s, x.t, &x.ct, &r);
    /* 1000 + synchronize 7 + no cudaFree + cudaMalloc 100. */
    ck_assert_int_eq(r.times[b].end_ns, 1107);
    ck_assert_int_eq(r.step_end_ns[0], 1117);
    ck_assert_int_eq(r.times[opt].start_ns, 1107);
    struct metrics m;
    metrics_compute(&x.s, x.t, &r, &m);
    ck_assert_int_eq(m.mem.ooms, 1);
    ck_assert_int_eq(m.mem.oom_shortfall, 20 * MiB);
    ck_assert_int_eq(m.mem.peak_reserved, 2 * MiB);
    ck_assert_int_eq(m.mem.peak_allocated, 512 + 3 * MiB);
    ck_assert(!m.fits);
    ck_assert(m.margin_bytes == -20.0 * MiB);
    ck_assert_int_eq(m.step_syncs, 1);
    synth_free(&x, &r);
}
END_TEST

/* Run ARGS (tiny-llama on test-2x4, 11 micro-batches) folded and exact:
 * every op's times, the step ends, the event count and the whole memory
 * record must be the same.  Returns the micro-batches folded. */
static int fold_line_matches_exact(char *line);
static int fold_tweaked_matches_exact(char *line, int slow_micro);

static int
fold_matches_exact(const char *args)
{
    return fold_line_matches_exact(
        xasprintf("--model tiny-llama --topology test-2x4 --grad-accum 11 %s",
                  args));
}

/* The same for the whole command line LINE (freed). */
static int
fold_line_matches_exact(char *line)
{
    return fold_tweaked_matches_exact(line, -1);
}

/* The first compute op of micro-batch SLOW_MICRO of the first step 1 us
 * slower (-1: none), as if that micro-batch were not a copy of the
 * others. */
static void
slow_down(const struct sched *s, struct cost_table *ct, int slow_micro)
{
    for (int i = 0; i < s->n_ops && slow_micro >= 0; i++)
        if (s->ops[i].iter == 0 && s->ops[i].micro == slow_micro
            && sched_op_is_compute(&s->ops[i])) {
            ct->gpu_ns[i] += 1000;
            return;
        }
}

/* fold_line_matches_exact with one micro-batch slowed (slow_down). */
static int
fold_tweaked_matches_exact(char *line, int slow_micro)
{
    struct tu_run t;
    char *cause = NULL;
    ck_assert_msg(tu_run(&t, line, 0, &cause) == 0, "%s: %s", line, cause);
    const struct sched *s = t.r.sched;
    struct engine_result a, b;
    struct cost_table ct;
    cost_table_build(s, t.r.topo, &ct);
    slow_down(s, &ct, slow_micro);
    engine_run_costs(s, t.r.topo, &ct, &a);
    cost_table_build(s, t.r.topo, &ct);
    slow_down(s, &ct, slow_micro);
    engine_run_exact(s, t.r.topo, &ct, &b);
    ck_assert_int_eq(b.folded, 0);
    for (int i = 0; i < s->n_ops; i++) {
        ck_assert_msg(a.times[i].issue_ns == b.times[i].issue_ns
                      && a.times[i].start_ns == b.times[i].start_ns
                      && a.times[i].end_ns == b.times[i].end_ns,
                      "%s: op %d: folded %lld..%lld, exact %lld..%lld",
                      line, i, (long long)a.times[i].start_ns,
                      (long long)a.times[i].end_ns,
                      (long long)b.times[i].start_ns,
                      (long long)b.times[i].end_ns);
    }
    for (int it = 0; it < s->iterations; it++)
        ck_assert_int_eq(a.step_end_ns[it], b.step_end_ns[it]);
    ck_assert_int_eq(a.end_ns, b.end_ns);
    ck_assert_uint_eq(a.events, b.events);
    int na, nb;
    const struct mem_sample *sa = mem_samples(a.mem, &na);
    const struct mem_sample *sb = mem_samples(b.mem, &nb);
    ck_assert_int_eq(na, nb);
    ck_assert(memcmp(sa, sb, sizeof *sa * (size_t)na) == 0);
    struct mem_stats ma, mb;
    mem_get_stats(a.mem, &ma);
    mem_get_stats(b.mem, &mb);
    ck_assert(memcmp(&ma, &mb, sizeof ma) == 0);
    const struct mem_retry *ra = mem_retries(a.mem, &na);
    const struct mem_retry *rb = mem_retries(b.mem, &nb);
    ck_assert_int_eq(na, nb);
    for (int i = 0; i < na; i++)
        ck_assert(ra[i].op == rb[i].op && ra[i].t_ns == rb[i].t_ns
                  && ra[i].stall_ns == rb[i].stall_ns
                  && ra[i].synced == rb[i].synced && ra[i].oom == rb[i].oom);
    int folded = a.folded;
    engine_result_free(&a);
    engine_result_free(&b);
    tu_free(&t);
    free(line);
    return folded;
}

START_TEST(test_engine_fold_is_exact)
{
    /* Folding skips repeated micro-batches only when the state repeats,
     * and then gives what simulating them gives, to the nanosecond, over
     * the settings that change a micro-batch's ops.  The plain setting
     * must fold something, or the comparison proves nothing. */
    int folded = 0;
    for (int i = 0; i < tu_n_fold_settings; i++) {
        int f = fold_matches_exact(tu_fold_settings[i]);
        if (i == 0)
            ck_assert_int_gt(f, 0);
        folded += f;
    }
    ck_assert_int_gt(folded, 10);
}
END_TEST

START_TEST(test_engine_fold_moving_segments)
{
    /* GPT-3 175B at micro-batch 1 does not fit 80 GB on 1024 GPUs: each
     * micro-batch's allocator retry frees the cached segments and
     * cudaMallocs new ones, at addresses above every earlier one, and an
     * allocation OOMs (a block with no segment).  The allocator's state
     * still repeats, every two micro-batches, once addresses are compared
     * as (segment rank, offset): here from micro-batch 4, so of middle
     * micro-batches 2 .. 12 the periods 4-5, 6-7, 8-9, 10-11 are skipped
     * (12 is left over): 8 micro-batches folded. */
    int folded = fold_line_matches_exact(
        xasprintf("--model gpt3-175b --topology dgx-a100-80g --nodes 128 "
                  "--param-dtype bf16 --grad-accum 14 --iterations 1"));
    ck_assert_int_eq(folded, 8);
}
END_TEST

START_TEST(test_engine_fold_checks_copies)
{
    /* A middle micro-batch after the state repeats that is not a copy of
     * the others (one of its kernels slower) stops the fold of its step:
     * the times are still those of simulating every micro-batch, and
     * only the second step (whose micro-batches are all alike) folds. */
    int plain = fold_matches_exact("");
    int folded = fold_tweaked_matches_exact(
        xasprintf("--model tiny-llama --topology test-2x4 --grad-accum 11"),
        8);
    ck_assert_int_gt(folded, 0);
    ck_assert_int_lt(folded, plain);
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("engine");
    TCase *core = tcase_create("core");
    tcase_set_timeout(core, 60);
    tcase_add_test(core, test_engine_serial_is_sum);
    tcase_add_test(core, test_engine_independent_streams_overlap);
    tcase_add_test(core, test_engine_dependency_serializes);
    tcase_add_test(core, test_engine_communicator_fifo);
    tcase_add_test(core, test_engine_host_wait_and_issue_time);
    tcase_add_test(core, test_engine_matches_reference);
    tcase_add_test(core, test_engine_overlap_interference);
    tcase_add_test(core, test_engine_invariants_on_real_run);
    tcase_add_test(core, test_engine_world_size_does_not_change_cost);
    tcase_add_test(core, test_engine_retry_adds_host_time);
    tcase_add_test(core, test_engine_sync_waits_for_gpu);
    tcase_add_test(core, test_engine_oom_is_a_result);
    tcase_add_test(core, test_engine_fold_is_exact);
    tcase_add_test(core, test_engine_fold_moving_segments);
    tcase_add_test(core, test_engine_fold_checks_copies);
    tcase_add_test(core, test_cost_memo_is_exact);
    suite_add_tcase(s, core);
    return tu_main(s);
}
