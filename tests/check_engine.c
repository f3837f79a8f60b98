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
#include "testutil.h"
#include "xalloc.h"

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
    x->ct.coll = xcalloc(n, sizeof *x->ct.coll);
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

/* Run ARGS (tiny-llama on test-2x4, 11 micro-batches) folded and exact:
 * every op's times, the step ends, the event count and the whole memory
 * record must be the same.  Returns the micro-batches folded. */
static int
fold_matches_exact(const char *args)
{
    char *line = xasprintf("--model tiny-llama --topology test-2x4 "
                           "--grad-accum 11 %s", args);
    struct tu_run t;
    char *cause = NULL;
    ck_assert_msg(tu_run(&t, line, 0, &cause) == 0, "%s: %s", line, cause);
    const struct sched *s = t.r.sched;
    struct engine_result a, b;
    engine_run(s, t.r.topo, &a);
    struct cost_table ct;
    cost_table_build(s, t.r.topo, &ct);
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
    static const char *const settings[] = {
        "", "--no-sync false", "--sharding-strategy HYBRID_SHARD",
        "--sharding-strategy SHARD_GRAD_OP", "--sharding-strategy NO_SHARD",
        "--limit-all-gathers false", "--forward-prefetch true",
        "--backward-prefetch None", "--backward-prefetch BACKWARD_POST",
        "--activation-checkpointing full", "--cpu-offload --no-sync true",
        "--param-dtype bf16 --reduce-dtype fp32", "--use-orig-params",
        "--iterations 3 --micro-batch 2",
    };
    int folded = 0;
    for (size_t i = 0; i < sizeof settings / sizeof *settings; i++) {
        int f = fold_matches_exact(settings[i]);
        if (i == 0)
            ck_assert_int_gt(f, 0);
        folded += f;
    }
    ck_assert_int_gt(folded, 10);
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
    tcase_add_test(core, test_engine_fold_is_exact);
    suite_add_tcase(s, core);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
