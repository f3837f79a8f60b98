/*
 * check_des.c: tests for des.c, the (time, seq) event heap and its clock.
 *
 * Three kinds of test.  Hand-written sequences check the ordering rule
 * directly.  Invariant tests drive long random insert/pop mixes from a
 * fixed-seed LCG (so every run is the same) and check that the clock never
 * goes backwards and that what comes out is exactly what went in.  Oracle
 * tests run the same random workloads against a naive O(n^2) reference
 * that scans a flat array for the least (t, seq); a second reference with
 * a planted fault (it ignores seq) must be told apart by the same
 * comparison, which proves the comparison can fail (sqlite's bitvec test).
 */
#include "des.h"
#include "check_main.h"

#include <check.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Events per random invariant run; the brief asks for at least 10000. */
#define N_RANDOM_EVENTS 20000
/* Events per oracle workload (the reference is quadratic). */
#define N_ORACLE_EVENTS 3000
#define N_ORACLE_SEEDS 8

/* Numerical Recipes' 64-bit LCG; the high bits are the good ones. */
static uint32_t
lcg_next(uint64_t *state)
{
    *state = *state * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(*state >> 33);
}

/* ---- naive reference ------------------------------------------------ */

/* An unordered array scanned for the least (t, seq) at every pop: O(n)
 * per pop, obviously right.  With ignore_seq set it takes the *last*
 * event with the least t instead, the planted fault. */
struct naive {
    struct des_event *ev;
    size_t n;
    uint64_t next_seq;
    int64_t now_ns;
    uint64_t processed;
    int ignore_seq;
};

static void
naive_at(struct naive *q, int64_t t, int type, int arg)
{
    struct des_event e = {t, q->next_seq++, type, arg};
    q->ev[q->n++] = e;
}

static int
naive_next(struct naive *q, struct des_event *out)
{
    if (q->n == 0)
        return 0;
    size_t best = 0;
    for (size_t i = 1; i < q->n; i++) {
        const struct des_event *a = &q->ev[i], *b = &q->ev[best];
        int better = q->ignore_seq
                         ? a->t_ns <= b->t_ns
                         : a->t_ns < b->t_ns
                               || (a->t_ns == b->t_ns && a->seq < b->seq);
        if (better)
            best = i;
    }
    *out = q->ev[best];
    memmove(&q->ev[best], &q->ev[best + 1],
            (q->n - best - 1) * sizeof *q->ev);
    q->n--;
    q->now_ns = out->t_ns;
    q->processed++;
    return 1;
}

/* Run one random workload of n_events inserts, interleaved with pops,
 * on des and on the reference in lock step, then drain both.  Insert
 * times are max(clock of either) + a delay in [0, 4) ns so ties are
 * common.  Returns the number of steps at which the popped events (t,
 * seq, type, arg) or the clocks differ. */
static int
compare_with_reference(uint64_t seed, int n_events, int ignore_seq)
{
    struct des *d = des_new();
    struct naive q = {0};
    q.ev = calloc((size_t)n_events, sizeof *q.ev);
    q.ignore_seq = ignore_seq;
    ck_assert_ptr_nonnull(q.ev);
    int inserted = 0, mismatches = 0;
    for (;;) {
        uint32_t r = lcg_next(&seed);
        int do_insert = inserted < n_events && (q.n == 0 || r % 5 < 3);
        if (do_insert) {
            int64_t base = des_now(d) > q.now_ns ? des_now(d) : q.now_ns;
            int64_t t = base + (int64_t)(lcg_next(&seed) % 4);
            int type = (int)(lcg_next(&seed) % 3);
            des_at(d, t, type, inserted);
            naive_at(&q, t, type, inserted);
            inserted++;
            continue;
        }
        struct des_event a, b;
        int ga = des_next(d, &a), gb = naive_next(&q, &b);
        if (ga != gb) {
            mismatches++;
            break;
        }
        if (!ga)
            break;
        if (a.t_ns != b.t_ns || a.seq != b.seq || a.type != b.type
            || a.arg != b.arg || des_now(d) != q.now_ns)
            mismatches++;
    }
    if (des_events_processed(d) != q.processed)
        mismatches++;
    free(q.ev);
    des_free(d);
    return mismatches;
}

/* ---- core ------------------------------------------------------------ */

START_TEST(test_des_empty)
{
    struct des *d = des_new();
    struct des_event ev = {-1, 99, -1, -1};
    /* A new heap: clock at 0, nothing processed, nothing to pop. */
    ck_assert_int_eq(des_now(d), 0);
    ck_assert_uint_eq(des_events_processed(d), 0);
    ck_assert_int_eq(des_next(d, &ev), 0);
    ck_assert_int_eq(des_now(d), 0);
    ck_assert_uint_eq(des_events_processed(d), 0);
    /* After draining one event the heap is empty again and an empty pop
     * leaves the clock where the last event put it (t = 5). */
    des_at(d, 5, 1, 2);
    ck_assert_int_eq(des_next(d, &ev), 1);
    ck_assert_int_eq(des_next(d, &ev), 0);
    ck_assert_int_eq(des_now(d), 5);
    ck_assert_uint_eq(des_events_processed(d), 1);
    des_free(d);
    des_free(NULL);
}
END_TEST

START_TEST(test_des_time_order)
{
    struct des *d = des_new();
    /* Inserted out of order, with one tie at t = 10 (args 1 and 3). */
    static const int64_t t_in[] = {50, 10, 30, 10, 20};
    for (int i = 0; i < 5; i++)
        des_at(d, t_in[i], 100 + i, i);
    /* Expected: (10, seq 1), (10, seq 3), (20, 4), (30, 2), (50, 0);
     * seq is the insertion index. */
    static const int64_t t_out[] = {10, 10, 20, 30, 50};
    static const int arg_out[] = {1, 3, 4, 2, 0};
    struct des_event ev;
    for (int i = 0; i < 5; i++) {
        ck_assert_int_eq(des_next(d, &ev), 1);
        ck_assert_int_eq(ev.t_ns, t_out[i]);
        ck_assert_int_eq(ev.arg, arg_out[i]);
        ck_assert_uint_eq(ev.seq, (uint64_t)arg_out[i]);
        ck_assert_int_eq(ev.type, 100 + arg_out[i]);
        ck_assert_int_eq(des_now(d), t_out[i]);
    }
    ck_assert_int_eq(des_next(d, &ev), 0);
    des_free(d);
}
END_TEST

START_TEST(test_des_ties_fifo)
{
    /* 1000 events at one instant come out in insertion order: the heap is
     * not stable by itself, so this is what seq is for. */
    enum { N = 1000 };
    struct des *d = des_new();
    for (int i = 0; i < N; i++)
        des_at(d, 7, 0, i);
    struct des_event ev;
    for (int i = 0; i < N; i++) {
        ck_assert_int_eq(des_next(d, &ev), 1);
        ck_assert_int_eq(ev.t_ns, 7);
        ck_assert_int_eq(ev.arg, i);
    }
    des_free(d);
}
END_TEST

START_TEST(test_des_schedule_at_now)
{
    /* An event scheduled at the current instant from a handler fires
     * after those already queued for that instant (larger seq) and before
     * later ones. */
    struct des *d = des_new();
    des_at(d, 10, 0, 0);
    des_at(d, 10, 0, 1);
    des_at(d, 11, 0, 2);
    struct des_event ev;
    ck_assert_int_eq(des_next(d, &ev), 1);
    ck_assert_int_eq(ev.arg, 0);
    des_at(d, des_now(d), 0, 3);
    static const int order[] = {1, 3, 2};
    for (int i = 0; i < 3; i++) {
        ck_assert_int_eq(des_next(d, &ev), 1);
        ck_assert_int_eq(ev.arg, order[i]);
    }
    /* The clock ends at the last event, t = 11. */
    ck_assert_int_eq(des_now(d), 11);
    des_free(d);
}
END_TEST

START_TEST(test_des_processed_counts)
{
    struct des *d = des_new();
    struct des_event ev;
    /* Three inserted, two popped: processed = 2. */
    des_at(d, 1, 0, 0);
    des_at(d, 2, 0, 0);
    des_at(d, 3, 0, 0);
    ck_assert_uint_eq(des_events_processed(d), 0);
    des_next(d, &ev);
    des_next(d, &ev);
    ck_assert_uint_eq(des_events_processed(d), 2);
    /* Draining pops the third; empty pops do not count: 3. */
    des_next(d, &ev);
    des_next(d, &ev);
    des_next(d, &ev);
    ck_assert_uint_eq(des_events_processed(d), 3);
    des_free(d);
}
END_TEST

START_TEST(test_des_random_invariants)
{
    /* Random mix of inserts (delay 0..99 ns after now, so many ties) and
     * pops.  Each event's arg is its insertion index, so the popped
     * multiset equals the inserted one iff every index comes out exactly
     * once with the time it went in with. */
    enum { N = N_RANDOM_EVENTS };
    int64_t *t_of = calloc(N, sizeof *t_of);
    char *seen = calloc(N, 1);
    ck_assert_ptr_nonnull(t_of);
    ck_assert_ptr_nonnull(seen);
    uint64_t seed = 12345;
    struct des *d = des_new();
    int inserted = 0, popped = 0, pending = 0;
    int64_t last_t = 0;
    uint64_t last_seq = 0;
    while (popped < N) {
        uint32_t r = lcg_next(&seed);
        if (inserted < N && (pending == 0 || r % 100 < 55)) {
            int64_t t = des_now(d) + (int64_t)(lcg_next(&seed) % 100);
            t_of[inserted] = t;
            des_at(d, t, inserted % 7, inserted);
            inserted++;
            pending++;
            continue;
        }
        struct des_event ev;
        ck_assert_int_eq(des_next(d, &ev), 1);
        pending--;
        /* The clock never goes backwards and equals the event's time. */
        ck_assert_int_ge(ev.t_ns, last_t);
        ck_assert_int_eq(des_now(d), ev.t_ns);
        /* (t, seq) strictly increases: a later insertion at the current
         * time has a larger seq than anything already popped. */
        if (popped > 0 && ev.t_ns == last_t)
            ck_assert_uint_gt(ev.seq, last_seq);
        last_t = ev.t_ns;
        last_seq = ev.seq;
        ck_assert_int_ge(ev.arg, 0);
        ck_assert_int_lt(ev.arg, inserted);
        ck_assert_int_eq(seen[ev.arg], 0);
        seen[ev.arg] = 1;
        ck_assert_int_eq(ev.t_ns, t_of[ev.arg]);
        ck_assert_int_eq(ev.type, ev.arg % 7);
        popped++;
    }
    struct des_event ev;
    ck_assert_int_eq(des_next(d, &ev), 0);
    /* Every inserted event was popped once: processed = N. */
    ck_assert_uint_eq(des_events_processed(d), (uint64_t)N);
    des_free(d);
    free(t_of);
    free(seen);
}
END_TEST

START_TEST(test_des_matches_naive_reference)
{
    /* The heap and the O(n^2) scan agree on every pop of every workload:
     * zero mismatches. */
    for (uint64_t s = 1; s <= N_ORACLE_SEEDS; s++)
        ck_assert_int_eq(compare_with_reference(s * 7919, N_ORACLE_EVENTS,
                                                0), 0);
}
END_TEST

START_TEST(test_des_wrong_reference_detected)
{
    /* The planted fault (ties resolved last-in-first) must be caught on
     * every workload, since with delays in [0, 4) ns ties are frequent;
     * otherwise the comparison above proves nothing. */
    for (uint64_t s = 1; s <= N_ORACLE_SEEDS; s++)
        ck_assert_int_gt(compare_with_reference(s * 7919, N_ORACLE_EVENTS,
                                                1), 0);
}
END_TEST

/* ---- limits ---------------------------------------------------------- */

START_TEST(test_des_large_times)
{
    /* Times near INT64_MAX order correctly (no overflow in comparisons). */
    struct des *d = des_new();
    des_at(d, INT64_MAX, 0, 0);
    des_at(d, INT64_MAX - 1, 0, 1);
    des_at(d, 0, 0, 2);
    des_at(d, INT64_MAX, 0, 3);
    static const int order[] = {2, 1, 0, 3};
    struct des_event ev;
    for (int i = 0; i < 4; i++) {
        ck_assert_int_eq(des_next(d, &ev), 1);
        ck_assert_int_eq(ev.arg, order[i]);
    }
    ck_assert_int_eq(des_now(d), INT64_MAX);
    des_free(d);
}
END_TEST

START_TEST(test_des_many_pending)
{
    /* 100000 events inserted in descending time, then drained: they come
     * out ascending, t = 0 .. N-1, which exercises heap growth. */
    enum { N = 100000 };
    struct des *d = des_new();
    for (int i = N - 1; i >= 0; i--)
        des_at(d, i, 0, i);
    struct des_event ev;
    for (int i = 0; i < N; i++) {
        ck_assert_int_eq(des_next(d, &ev), 1);
        ck_assert_int_eq(ev.t_ns, i);
    }
    ck_assert_int_eq(des_next(d, &ev), 0);
    ck_assert_uint_eq(des_events_processed(d), (uint64_t)N);
    des_free(d);
}
END_TEST

/* ---- errors ---------------------------------------------------------- */

START_TEST(test_des_past_event_asserts)
{
    /* Scheduling before the clock is a bug: the assert aborts. */
    struct des *d = des_new();
    struct des_event ev;
    des_at(d, 100, 0, 0);
    des_next(d, &ev);
    des_at(d, 99, 0, 0);
    des_free(d);
}
END_TEST

START_TEST(test_des_negative_time_asserts)
{
    struct des *d = des_new();
    des_at(d, -1, 0, 0);
    des_free(d);
}
END_TEST

static Suite *
des_suite(int can_fork)
{
    Suite *s = suite_create("des");

    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, test_des_empty);
    tcase_add_test(tc, test_des_time_order);
    tcase_add_test(tc, test_des_ties_fifo);
    tcase_add_test(tc, test_des_schedule_at_now);
    tcase_add_test(tc, test_des_processed_counts);
    tcase_add_test(tc, test_des_random_invariants);
    tcase_add_test(tc, test_des_matches_naive_reference);
    tcase_add_test(tc, test_des_wrong_reference_detected);
    suite_add_tcase(s, tc);

    tc = tcase_create("limits");
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, test_des_large_times);
    tcase_add_test(tc, test_des_many_pending);
    suite_add_tcase(s, tc);

    /* An abort would take the whole runner down without fork (CK_FORK=no
     * under valgrind), so the assert tests only run in fork mode. */
    if (can_fork) {
        tc = tcase_create("errors");
        tcase_add_test_raise_signal(tc, test_des_past_event_asserts,
                                    SIGABRT);
        tcase_add_test_raise_signal(tc, test_des_negative_time_asserts,
                                    SIGABRT);
        suite_add_tcase(s, tc);
    }
    return s;
}

int
main(void)
{
    int can_fork = tu_can_fork();
    return tu_main(des_suite(can_fork));
}
