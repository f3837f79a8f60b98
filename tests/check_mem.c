/*
 * check_mem.c: tests for mem.c, the memory ledger and caching-allocator
 * model.
 *
 * The allocator is observed only through its stats and samples, so each
 * test sets up a short sequence of allocations whose reserved total tells
 * which branch was taken: a new segment makes reserved grow by the segment
 * size, a reused (or split, or merged) block leaves it where it was.  The
 * rules come from c10/cuda/CUDACachingAllocator.cpp as quoted in mem.c:
 * 512-byte rounding, 2 MiB segments for requests up to 1 MiB, 20 MiB ones
 * for requests below 10 MiB, larger ones rounded up to 2 MiB; pools per
 * stream and size class.  A long random workload checks the invariants
 * (samples in time order, peak >= every sample, reserved within the
 * device, allocated <= reserved until an allocation fails).  The retry
 * tests give cudaMalloc, cudaFree and the synchronize small costs so the
 * host time a retry returns is a hand sum.
 */
#include "mem.h"
#include "check_main.h"

#include <check.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define KiB (INT64_C(1) << 10)
#define MiB (INT64_C(1) << 20)
#define GiB (INT64_C(1) << 30)

/* A capacity no test reaches unless it means to. */
#define BIG_CAPACITY (1024.0 * 1024 * 1024 * 1024)

/* Steps and buffers of the random workload. */
#define N_RANDOM_STEPS 6000
#define N_RANDOM_BUFFERS 64

static struct mem_stats
stats(const struct mem *m)
{
    struct mem_stats st;
    mem_get_stats(m, &st);
    return st;
}

/* The latest sample: the ledger right after the last alloc or release. */
static const struct mem_sample *
last_sample(const struct mem *m)
{
    int n;
    const struct mem_sample *s = mem_samples(m, &n);
    ck_assert_int_gt(n, 0);
    return &s[n - 1];
}

static int64_t
reserved_now(const struct mem *m)
{
    return last_sample(m)->reserved;
}

static int64_t
allocated_now(const struct mem *m)
{
    return last_sample(m)->allocated;
}

/* Reserved bytes after a single allocation of bytes on a fresh ledger. */
static int64_t
segment_for(uint64_t bytes)
{
    struct mem *m = mem_new(1, BIG_CAPACITY);
    mem_alloc(m, 0, 0, STREAM_C, bytes, MEM_ACTIVATIONS);
    int64_t r = reserved_now(m);
    mem_free(m);
    return r;
}

/* ---- core ------------------------------------------------------------ */

START_TEST(test_mem_rounds_to_512)
{
    struct mem *m = mem_new(4, BIG_CAPACITY);
    /* 1 byte rounds up to one 512-byte block. */
    mem_alloc(m, 1, 0, STREAM_C, 1, MEM_ACTIVATIONS);
    ck_assert_int_eq(allocated_now(m), 512);
    /* 513 bytes round up to 1024: 512 + 1024 = 1536. */
    mem_alloc(m, 2, 1, STREAM_C, 513, MEM_ACTIVATIONS);
    ck_assert_int_eq(allocated_now(m), 1536);
    /* 0 bytes still take the minimum block: 1536 + 512 = 2048. */
    mem_alloc(m, 3, 2, STREAM_C, 0, MEM_AG_BUFFER);
    ck_assert_int_eq(allocated_now(m), 2048);
    /* A multiple of 512 is kept: 2048 + 1024 = 3072. */
    mem_alloc(m, 4, 3, STREAM_C, 1024, MEM_AG_BUFFER);
    ck_assert_int_eq(allocated_now(m), 3072);
    /* By category: activations 512 + 1024, AG buffers 512 + 1024. */
    ck_assert_int_eq(last_sample(m)->by_cat[MEM_ACTIVATIONS], 1536);
    ck_assert_int_eq(last_sample(m)->by_cat[MEM_AG_BUFFER], 1536);
    /* All four fit in one 2 MiB small segment. */
    ck_assert_int_eq(reserved_now(m), 2 * MiB);
    mem_free(m);
}
END_TEST

START_TEST(test_mem_segment_sizes)
{
    /* Up to 1 MiB (after rounding): a 2 MiB small segment. */
    ck_assert_int_eq(segment_for(1), 2 * MiB);
    ck_assert_int_eq(segment_for((uint64_t)MiB), 2 * MiB);
    /* 1 MiB + 1 rounds to 1 MiB + 512 > 1 MiB: a 20 MiB large segment. */
    ck_assert_int_eq(segment_for((uint64_t)MiB + 1), 20 * MiB);
    /* 10 MiB - 512 is still below 10 MiB: 20 MiB. */
    ck_assert_int_eq(segment_for((uint64_t)(10 * MiB - 512)), 20 * MiB);
    /* From 10 MiB on, the request rounded up to 2 MiB: 10 MiB exactly. */
    ck_assert_int_eq(segment_for((uint64_t)(10 * MiB)), 10 * MiB);
    /* 10 MiB + 1 -> ceil(10 MiB + 512, 2 MiB) = 12 MiB. */
    ck_assert_int_eq(segment_for((uint64_t)(10 * MiB) + 1), 12 * MiB);
    /* 100 MiB + 1 -> 102 MiB. */
    ck_assert_int_eq(segment_for((uint64_t)(100 * MiB) + 1), 102 * MiB);
    /* 3 GiB is a multiple of 2 MiB: kept. */
    ck_assert_int_eq(segment_for((uint64_t)(3 * GiB)), 3 * GiB);
}
END_TEST

START_TEST(test_mem_small_segment_split)
{
    /* Four 512 KiB requests split one 2 MiB segment (4 * 512 KiB = 2 MiB);
     * the fifth needs a second segment: 4 MiB. */
    struct mem *m = mem_new(5, BIG_CAPACITY);
    for (int i = 0; i < 4; i++) {
        mem_alloc(m, i, i, STREAM_C, (uint64_t)(512 * KiB), MEM_ACTIVATIONS);
        ck_assert_int_eq(reserved_now(m), 2 * MiB);
    }
    ck_assert_int_eq(allocated_now(m), 2 * MiB);
    mem_alloc(m, 4, 4, STREAM_C, (uint64_t)(512 * KiB), MEM_ACTIVATIONS);
    ck_assert_int_eq(reserved_now(m), 4 * MiB);
    /* 5 * 512 KiB = 2.5 MiB allocated. */
    ck_assert_int_eq(allocated_now(m), 5 * 512 * KiB);
    mem_free(m);
}
END_TEST

START_TEST(test_mem_small_split_min_block)
{
    /* In the small pool a remainder of one 512-byte block is still split
     * off: 1 MiB + (1 MiB - 512) leaves 512 bytes of the 2 MiB segment,
     * so allocated is 2 MiB - 512, not the whole 2 MiB ... */
    struct mem *m = mem_new(3, BIG_CAPACITY);
    mem_alloc(m, 0, 0, STREAM_C, (uint64_t)MiB, MEM_ACTIVATIONS);
    mem_alloc(m, 1, 1, STREAM_C, (uint64_t)(MiB - 512), MEM_ACTIVATIONS);
    ck_assert_int_eq(allocated_now(m), 2 * MiB - 512);
    /* ... and that 512-byte block serves a 1-byte request: 2 MiB. */
    mem_alloc(m, 2, 2, STREAM_C, 1, MEM_ACTIVATIONS);
    ck_assert_int_eq(allocated_now(m), 2 * MiB);
    ck_assert_int_eq(reserved_now(m), 2 * MiB);
    mem_free(m);
}
END_TEST

START_TEST(test_mem_large_segment_split)
{
    /* Ten 2 MiB requests share one 20 MiB segment, each split off the
     * remainder; the eleventh gets a second one: 40 MiB. */
    struct mem *m = mem_new(11, BIG_CAPACITY);
    for (int i = 0; i < 10; i++) {
        mem_alloc(m, i, i, STREAM_U, (uint64_t)(2 * MiB), MEM_AG_BUFFER);
        ck_assert_int_eq(reserved_now(m), 20 * MiB);
    }
    ck_assert_int_eq(allocated_now(m), 20 * MiB);
    mem_alloc(m, 10, 10, STREAM_U, (uint64_t)(2 * MiB), MEM_AG_BUFFER);
    ck_assert_int_eq(reserved_now(m), 40 * MiB);
    mem_free(m);
}
END_TEST

START_TEST(test_mem_large_remainder_not_split)
{
    struct mem *m = mem_new(2, BIG_CAPACITY);
    /* 11.5 MiB gets a 12 MiB segment; the 0.5 MiB left is below the
     * 1 MiB large-pool split threshold, so the whole block is handed out
     * and counted: allocated = 12 MiB (as memory_allocated() would). */
    mem_alloc(m, 0, 0, STREAM_C, (uint64_t)(23 * MiB / 2), MEM_ACTIVATIONS);
    ck_assert_int_eq(allocated_now(m), 12 * MiB);
    ck_assert_int_eq(reserved_now(m), 12 * MiB);
    /* 10.5 MiB gets a 12 MiB segment too, but 1.5 MiB is left, enough to
     * split: allocated = 12 + 10.5 = 22.5 MiB, reserved = 24 MiB. */
    mem_alloc(m, 1, 1, STREAM_C, (uint64_t)(21 * MiB / 2), MEM_ACTIVATIONS);
    ck_assert_int_eq(allocated_now(m), 45 * MiB / 2);
    ck_assert_int_eq(reserved_now(m), 24 * MiB);
    mem_free(m);
}
END_TEST

START_TEST(test_mem_reuse_same_stream)
{
    struct mem *m = mem_new(4, BIG_CAPACITY);
    /* 12 MiB fills its 12 MiB segment exactly. */
    mem_alloc(m, 0, 0, STREAM_C, (uint64_t)(12 * MiB), MEM_UNSHARDED_PARAMS);
    ck_assert_int_eq(reserved_now(m), 12 * MiB);
    /* Freed with no op to wait for: allocated drops to 0 at once. */
    mem_release(m, 1, 0, -1, 0);
    ck_assert_int_eq(allocated_now(m), 0);
    ck_assert_int_eq(reserved_now(m), 12 * MiB);
    /* The same request on the same stream takes the cached block. */
    mem_alloc(m, 2, 1, STREAM_C, (uint64_t)(12 * MiB), MEM_UNSHARDED_PARAMS);
    ck_assert_int_eq(allocated_now(m), 12 * MiB);
    ck_assert_int_eq(reserved_now(m), 12 * MiB);
    /* A freed op that already finished (pending_done = 1) is reusable too. */
    mem_release(m, 3, 1, 5, 1);
    mem_alloc(m, 4, 2, STREAM_C, (uint64_t)(12 * MiB), MEM_UNSHARDED_PARAMS);
    ck_assert_int_eq(reserved_now(m), 12 * MiB);
    /* Best fit serves a smaller request from the cached 12 MiB block:
     * 11.5 MiB leaves 0.5 MiB, too little to split, so the whole block is
     * handed out: reserved stays 12 MiB, allocated 12 MiB. */
    mem_release(m, 5, 2, -1, 1);
    mem_alloc(m, 6, 3, STREAM_C, (uint64_t)(23 * MiB / 2),
              MEM_UNSHARDED_PARAMS);
    ck_assert_int_eq(reserved_now(m), 12 * MiB);
    ck_assert_int_eq(allocated_now(m), 12 * MiB);
    mem_free(m);
}
END_TEST

START_TEST(test_mem_pending_not_reused)
{
    struct mem *m = mem_new(4, BIG_CAPACITY);
    mem_alloc(m, 0, 0, STREAM_C, (uint64_t)(12 * MiB), MEM_UNSHARDED_PARAMS);
    /* Freed by the host while op 7 still uses it (record_stream): it
     * leaves allocated at once but stays out of the pool. */
    mem_release(m, 1, 0, 7, 0);
    ck_assert_int_eq(allocated_now(m), 0);
    /* So the next 12 MiB needs a new segment: 12 + 12 = 24 MiB. */
    mem_alloc(m, 2, 1, STREAM_C, (uint64_t)(12 * MiB), MEM_UNSHARDED_PARAMS);
    ck_assert_int_eq(reserved_now(m), 24 * MiB);
    /* Another op finishing does not release it: 24 + 12 = 36 MiB. */
    mem_op_done(m, 3, 8);
    mem_alloc(m, 4, 2, STREAM_C, (uint64_t)(12 * MiB), MEM_UNSHARDED_PARAMS);
    ck_assert_int_eq(reserved_now(m), 36 * MiB);
    /* Op 7 finishing does: the next 12 MiB reuses it, still 36 MiB. */
    mem_op_done(m, 5, 7);
    mem_alloc(m, 6, 3, STREAM_C, (uint64_t)(12 * MiB), MEM_UNSHARDED_PARAMS);
    ck_assert_int_eq(reserved_now(m), 36 * MiB);
    /* Three live buffers of 12 MiB: 36 MiB allocated. */
    ck_assert_int_eq(allocated_now(m), 36 * MiB);
    mem_free(m);
}
END_TEST

START_TEST(test_mem_pending_small_block)
{
    /* The same rule in the small pool: a pending 1 MiB block and its free
     * 1 MiB neighbour are not merged, so a following 1 MiB request takes
     * the neighbour and the next one needs a second segment. */
    struct mem *m = mem_new(3, BIG_CAPACITY);
    mem_alloc(m, 0, 0, STREAM_C, (uint64_t)MiB, MEM_ACTIVATIONS);
    mem_release(m, 1, 0, 3, 0);
    mem_alloc(m, 2, 1, STREAM_C, (uint64_t)MiB, MEM_ACTIVATIONS);
    ck_assert_int_eq(reserved_now(m), 2 * MiB);
    mem_alloc(m, 3, 2, STREAM_C, (uint64_t)MiB, MEM_ACTIVATIONS);
    /* 2 + 2 = 4 MiB. */
    ck_assert_int_eq(reserved_now(m), 4 * MiB);
    mem_free(m);
}
END_TEST

START_TEST(test_mem_merge_with_remainder)
{
    struct mem *m = mem_new(3, BIG_CAPACITY);
    /* 512 KiB splits a 2 MiB segment into 512 KiB used + 1.5 MiB free. */
    mem_alloc(m, 0, 0, STREAM_C, (uint64_t)(512 * KiB), MEM_ACTIVATIONS);
    /* Freeing it merges the two back into one 2 MiB free block ... */
    mem_release(m, 1, 0, -1, 1);
    /* ... so two 1 MiB requests fit in it: still 2 MiB reserved.  Without
     * the merge the second would need a new segment (4 MiB). */
    mem_alloc(m, 2, 1, STREAM_C, (uint64_t)MiB, MEM_ACTIVATIONS);
    mem_alloc(m, 3, 2, STREAM_C, (uint64_t)MiB, MEM_ACTIVATIONS);
    ck_assert_int_eq(reserved_now(m), 2 * MiB);
    ck_assert_int_eq(allocated_now(m), 2 * MiB);
    mem_free(m);
}
END_TEST

START_TEST(test_mem_merge_both_sides)
{
    struct mem *m = mem_new(6, BIG_CAPACITY);
    /* A, B, C, D of 512 KiB fill one 2 MiB segment in that order. */
    for (int i = 0; i < 4; i++)
        mem_alloc(m, i, i, STREAM_C, (uint64_t)(512 * KiB), MEM_ACTIVATIONS);
    ck_assert_int_eq(reserved_now(m), 2 * MiB);
    /* Free A and C (no free neighbours), then B, which merges with both:
     * one 1.5 MiB free block, A..C. */
    mem_release(m, 4, 0, -1, 1);
    mem_release(m, 5, 2, -1, 1);
    mem_release(m, 6, 1, -1, 1);
    /* 512 KiB (D) still live. */
    ck_assert_int_eq(allocated_now(m), 512 * KiB);
    /* A 1.5 MiB request is a large-pool one and cannot use it (20 MiB
     * segment), but a 1 MiB one can: reserved stays 2 MiB, and the
     * 512 KiB left after the split serves one more 512 KiB request. */
    mem_alloc(m, 7, 4, STREAM_C, (uint64_t)MiB, MEM_ACTIVATIONS);
    ck_assert_int_eq(reserved_now(m), 2 * MiB);
    mem_alloc(m, 8, 5, STREAM_C, (uint64_t)(512 * KiB), MEM_ACTIVATIONS);
    ck_assert_int_eq(reserved_now(m), 2 * MiB);
    /* 512 KiB + 1 MiB + 512 KiB = 2 MiB allocated: the segment is full. */
    ck_assert_int_eq(allocated_now(m), 2 * MiB);
    mem_free(m);
}
END_TEST

START_TEST(test_mem_pools_per_stream)
{
    struct mem *m = mem_new(3, BIG_CAPACITY);
    mem_alloc(m, 0, 0, STREAM_C, (uint64_t)(12 * MiB), MEM_ACTIVATIONS);
    mem_release(m, 1, 0, -1, 1);
    /* A block cached for the compute stream is not used for the
     * unshard stream: 12 + 12 = 24 MiB. */
    mem_alloc(m, 2, 1, STREAM_U, (uint64_t)(12 * MiB), MEM_UNSHARDED_PARAMS);
    ck_assert_int_eq(reserved_now(m), 24 * MiB);
    /* It is used for the compute stream again: still 24 MiB. */
    mem_alloc(m, 3, 2, STREAM_C, (uint64_t)(12 * MiB), MEM_ACTIVATIONS);
    ck_assert_int_eq(reserved_now(m), 24 * MiB);
    mem_free(m);
}
END_TEST

START_TEST(test_mem_pools_per_size_class)
{
    struct mem *m = mem_new(2, BIG_CAPACITY);
    /* A free small 2 MiB segment is not in the large pool: a 1.5 MiB
     * request gets a 20 MiB segment, 2 + 20 = 22 MiB. */
    mem_alloc(m, 0, 0, STREAM_C, 512, MEM_ACTIVATIONS);
    mem_release(m, 1, 0, -1, 1);
    mem_alloc(m, 2, 1, STREAM_C, (uint64_t)(3 * MiB / 2), MEM_ACTIVATIONS);
    ck_assert_int_eq(reserved_now(m), 22 * MiB);
    mem_free(m);
}
END_TEST

START_TEST(test_mem_peak_by_category)
{
    struct mem *m = mem_new(3, BIG_CAPACITY);
    mem_alloc(m, 10, 0, STREAM_C, (uint64_t)(4 * KiB), MEM_ACTIVATIONS);
    mem_alloc(m, 20, 1, STREAM_U, (uint64_t)(8 * KiB), MEM_AG_BUFFER);
    mem_release(m, 30, 1, -1, 1);
    mem_alloc(m, 40, 2, STREAM_C, (uint64_t)(6 * KiB), MEM_UNSHARDED_PARAMS);
    struct mem_stats st = stats(m);
    /* Peak at t = 20: 4 KiB activations + 8 KiB AG buffer = 12 KiB; the
     * 4 + 6 = 10 KiB at t = 40 is lower. */
    ck_assert_int_eq(st.peak_allocated, 12 * KiB);
    ck_assert_int_eq(st.peak_t_ns, 20);
    ck_assert_int_eq(st.peak_by_cat[MEM_ACTIVATIONS], 4 * KiB);
    ck_assert_int_eq(st.peak_by_cat[MEM_AG_BUFFER], 8 * KiB);
    ck_assert_int_eq(st.peak_by_cat[MEM_UNSHARDED_PARAMS], 0);
    /* Two streams, one small segment each: 2 * 2 MiB. */
    ck_assert_int_eq(st.peak_reserved, 4 * MiB);
    ck_assert_int_eq(st.retries, 0);
    ck_assert_int_eq(st.ooms, 0);
    ck_assert_int_eq(st.oom_shortfall, 0);
    mem_free(m);
}
END_TEST

START_TEST(test_mem_samples)
{
    struct mem *m = mem_new(2, BIG_CAPACITY);
    mem_alloc(m, 5, 0, STREAM_C, 1000, MEM_ACTIVATIONS);
    mem_alloc(m, 5, 1, STREAM_C, 2000, MEM_ACTIVATIONS);
    mem_release(m, 9, 0, -1, 1);
    int n;
    const struct mem_sample *s = mem_samples(m, &n);
    /* Changes at the same instant share one sample holding the state
     * after the last of them: t = 5 with 1024 + 2048 = 3072 bytes, then
     * t = 9 with 2048. */
    ck_assert_int_eq(n, 2);
    ck_assert_int_eq(s[0].t_ns, 5);
    ck_assert_int_eq(s[0].allocated, 3072);
    ck_assert_int_eq(s[0].by_cat[MEM_ACTIVATIONS], 3072);
    ck_assert_int_eq(s[0].reserved, 2 * MiB);
    ck_assert_int_eq(s[1].t_ns, 9);
    ck_assert_int_eq(s[1].allocated, 2048);
    ck_assert_int_eq(s[1].reserved, 2 * MiB);
    mem_free(m);
}
END_TEST

START_TEST(test_mem_random_invariants)
{
    /* A random workload on three streams, sizes from 0 to 40 MiB, a third
     * of the frees pending on an op that finishes later, and a capacity
     * that forces retries and OOMs.  Each call is at its own time, so
     * every sample is the state after one call. */
    enum { NB = N_RANDOM_BUFFERS };
    static const enum sched_stream streams[] = {STREAM_C, STREAM_U,
                                                STREAM_P};
    struct mem *m = mem_new(NB, 200.0 * MiB);
    uint64_t lcg = 2024;
    uint64_t size_of[NB] = {0};
    int live[NB] = {0};
    int pending_ops[N_RANDOM_STEPS];
    int n_pending = 0;
    int64_t t = 0;
    for (int step = 0; step < N_RANDOM_STEPS; step++) {
        lcg = lcg * 6364136223846793005ull + 1442695040888963407ull;
        uint32_t r = (uint32_t)(lcg >> 33);
        int b = (int)(r % NB);
        t += 1 + (int64_t)(r >> 28);
        if (n_pending > 0 && (r >> 8) % 4 == 0) {
            int k = (int)((r >> 12) % (uint32_t)n_pending);
            mem_op_done(m, t, pending_ops[k]);
            pending_ops[k] = pending_ops[--n_pending];
        } else if (live[b]) {
            int pend = (r >> 10) % 3 == 0;
            mem_release(m, t, b, step, !pend);
            if (pend)
                pending_ops[n_pending++] = step;
            live[b] = 0;
        } else {
            uint64_t bytes = (r >> 6) % 2 ? (r >> 9) % (uint64_t)(2 * MiB)
                                          : (r >> 7) % (uint64_t)(40 * MiB);
            mem_alloc(m, t, b, streams[(r >> 3) % 3], bytes,
                      (enum mem_category)((r >> 4) % MEM_CATEGORY_COUNT));
            size_of[b] = (bytes + 511) / 512 * 512;
            if (size_of[b] == 0)
                size_of[b] = 512;
            live[b] = 1;
        }
        /* The live buffers' rounded sizes bound allocated: a small block
         * is exact, a large one may keep up to 1 MiB of unsplit tail. */
        int64_t lo = 0, hi = 0;
        for (int i = 0; i < NB; i++) {
            if (!live[i])
                continue;
            lo += (int64_t)size_of[i];
            hi += (int64_t)size_of[i] + (size_of[i] > (uint64_t)MiB ? MiB : 0);
        }
        ck_assert_int_ge(allocated_now(m), lo);
        ck_assert_int_le(allocated_now(m), hi);
        /* Reserved never exceeds the device; allocated exceeds reserved
         * only by tensors that did not fit. */
        ck_assert_int_le(reserved_now(m), 200 * MiB);
        if (stats(m).ooms == 0)
            ck_assert_int_le(allocated_now(m), reserved_now(m));
    }
    struct mem_stats st = stats(m);
    int n;
    const struct mem_sample *s = mem_samples(m, &n);
    int64_t max_alloc = -1, max_res = -1;
    int at_max = -1;
    for (int i = 0; i < n; i++) {
        /* Samples are in strictly increasing time. */
        if (i > 0)
            ck_assert_int_gt(s[i].t_ns, s[i - 1].t_ns);
        /* The peaks bound every sample. */
        ck_assert_int_ge(st.peak_allocated, s[i].allocated);
        ck_assert_int_ge(st.peak_reserved, s[i].reserved);
        /* Allocated is the sum of the categories; reserved is whole
         * segments (multiples of 2 MiB) within the device. */
        int64_t sum = 0;
        for (int c = 0; c < MEM_CATEGORY_COUNT; c++) {
            ck_assert_int_ge(s[i].by_cat[c], 0);
            sum += s[i].by_cat[c];
        }
        ck_assert_int_eq(sum, s[i].allocated);
        ck_assert_int_le(s[i].reserved, 200 * MiB);
        ck_assert_int_eq(s[i].reserved % (2 * MiB), 0);
        if (s[i].allocated > max_alloc) {
            max_alloc = s[i].allocated;
            at_max = i;
        }
        if (s[i].reserved > max_res)
            max_res = s[i].reserved;
    }
    /* With one sample per call the peak is the largest sample, reached
     * first at peak_t_ns with that sample's breakdown. */
    ck_assert_int_eq(st.peak_allocated, max_alloc);
    ck_assert_int_eq(st.peak_reserved, max_res);
    ck_assert_int_eq(st.peak_t_ns, s[at_max].t_ns);
    for (int c = 0; c < MEM_CATEGORY_COUNT; c++)
        ck_assert_int_eq(st.peak_by_cat[c], s[at_max].by_cat[c]);
    /* 200 MiB with up to 64 buffers of up to 40 MiB: the workload is
     * meant to hit the capacity; make sure it did. */
    ck_assert_int_gt(st.retries, 0);
    ck_assert_int_gt(st.syncs, 0);
    ck_assert_int_gt(st.ooms, 0);
    ck_assert_int_gt(st.oom_shortfall, 0);
    ck_assert_int_le(st.peak_reserved, 200 * MiB);
    /* Free everything: allocated returns to 0. */
    for (int i = 0; i < NB; i++)
        if (live[i])
            mem_release(m, ++t, i, -1, 1);
    ck_assert_int_eq(allocated_now(m), 0);
    mem_free(m);
}
END_TEST

/* ---- limits ---------------------------------------------------------- */

START_TEST(test_mem_large_split_boundary)
{
    /* PyTorch's should_split for the large pool needs remaining > 1 MiB:
     * 11 MiB from a 12 MiB segment leaves exactly 1 MiB, so the block is
     * not split and the allocation counts the whole 12 MiB. */
    struct mem *m = mem_new(1, BIG_CAPACITY);
    struct mem_stats st;
    mem_alloc(m, 0, 0, STREAM_C, 11ull << 20, MEM_ACTIVATIONS);
    mem_get_stats(m, &st);
    ck_assert_int_eq(st.peak_allocated, 12ll << 20);
    mem_free(m);
}
END_TEST

START_TEST(test_mem_exact_fit_no_retry)
{
    /* Two 2 MiB segments in a 4 MiB device: 2 + 2 <= 4, no retry. */
    struct mem *m = mem_new(2, 4.0 * MiB);
    mem_alloc(m, 0, 0, STREAM_C, 512, MEM_ACTIVATIONS);
    mem_alloc(m, 1, 1, STREAM_U, 512, MEM_ACTIVATIONS);
    struct mem_stats st = stats(m);
    ck_assert_int_eq(reserved_now(m), 4 * MiB);
    ck_assert_int_eq(st.retries, 0);
    ck_assert_int_eq(st.ooms, 0);
    mem_free(m);
}
END_TEST

/* Retry costs that keep the sums readable: cudaMalloc 100 ns, cudaFree
 * 50 ns, a synchronize 7 ns. */
static const struct mem_costs test_costs = {100, 50, 7};

START_TEST(test_mem_retry_then_oom)
{
    struct mem *m = mem_new(5, 4.0 * MiB);
    mem_set_costs(m, &test_costs);
    /* Stream C: one 2 MiB segment, then freed (cached, wholly free). */
    ck_assert_int_eq(mem_alloc(m, 0, 0, STREAM_C, 512, MEM_ACTIVATIONS), 0);
    mem_release(m, 1, 0, -1, 1);
    /* Stream U: a second 2 MiB segment; 2 + 2 = 4 MiB fits exactly. */
    ck_assert_int_eq(mem_alloc(m, 2, 1, STREAM_U, 512, MEM_ACTIVATIONS), 0);
    ck_assert_int_eq(stats(m).retries, 0);
    /* Stream P needs a third: 4 + 2 > 4, so the unused C segment is
     * released (one cudaFree, reserved 2 MiB) and the retried cudaMalloc
     * fits without a synchronize: one retry costing 50 + 100 = 150 ns,
     * reserved 2 + 2 = 4 MiB. */
    ck_assert_int_eq(mem_alloc(m, 3, 2, STREAM_P, 512, MEM_ACTIVATIONS),
                     150);
    struct mem_stats st = stats(m);
    ck_assert_int_eq(st.retries, 1);
    ck_assert_int_eq(st.syncs, 0);
    ck_assert_int_eq(st.ooms, 0);
    ck_assert_int_eq(st.stall_ns, 150);
    ck_assert_int_eq(reserved_now(m), 4 * MiB);
    /* 30 MiB on C: 4 + 30 > 4 and nothing is unused (U and P are in use):
     * the first retry frees nothing and its cudaMalloc fails (100 ns), the
     * synchronize (7) finds no event, frees nothing and the last cudaMalloc
     * (100) fails: an OOM after 100 + 7 + 100 = 207 ns, short by
     * 4 + 30 - 4 = 30 MiB.  The run goes on with the tensor counted in
     * allocated (512 + 512 + 30 MiB) but no segment reserved: reserved
     * stays 4 MiB, within the device. */
    ck_assert_int_eq(mem_alloc(m, 4, 3, STREAM_C, (uint64_t)(30 * MiB),
                               MEM_ACTIVATIONS), 207);
    st = stats(m);
    ck_assert_int_eq(st.retries, 2);
    ck_assert_int_eq(st.syncs, 1);
    ck_assert_int_eq(st.ooms, 1);
    ck_assert_int_eq(st.oom_shortfall, 30 * MiB);
    ck_assert_int_eq(st.stall_ns, 150 + 207);
    ck_assert_int_eq(reserved_now(m), 4 * MiB);
    ck_assert_int_eq(st.peak_reserved, 4 * MiB);
    ck_assert_int_eq(allocated_now(m), 1024 + 30 * MiB);
    /* A second OOM while the first tensor is live is short by both:
     * 4 + 30 (live) + 10 (the new segment) - 4 = 40 MiB. */
    mem_alloc(m, 5, 4, STREAM_U, (uint64_t)(10 * MiB), MEM_ACTIVATIONS);
    st = stats(m);
    ck_assert_int_eq(st.ooms, 2);
    ck_assert_int_eq(st.oom_shortfall, 40 * MiB);
    /* Freeing them gives back no segment (none was reserved) and caches
     * nothing: allocated 1024 again, reserved still 4 MiB. */
    mem_release(m, 6, 3, -1, 1);
    mem_release(m, 7, 4, 9, 0);     /* pending, then its op finishes */
    mem_op_done(m, 8, 9);
    ck_assert_int_eq(allocated_now(m), 1024);
    ck_assert_int_eq(reserved_now(m), 4 * MiB);
    /* The log: the no-sync retry, then the two OOMs; no op given. */
    int n;
    const struct mem_retry *r = mem_retries(m, &n);
    ck_assert_int_eq(n, 3);
    ck_assert_int_eq(r[0].synced, 0);
    ck_assert_int_eq(r[0].oom, 0);
    ck_assert_int_eq(r[0].t_ns, 3);
    ck_assert_int_eq(r[0].stall_ns, 150);
    ck_assert_int_eq(r[1].synced, 1);
    ck_assert_int_eq(r[1].oom, 1);
    ck_assert_int_eq(r[1].op, -1);
    ck_assert_int_eq(r[2].oom, 1);
    mem_free(m);
}
END_TEST

START_TEST(test_mem_sync_frees_pending)
{
    /* A block freed with record_stream keeps its segment in use, so the
     * first retry cannot release it; the synchronize completes its event,
     * the segment becomes unused and is released, and the last cudaMalloc
     * fits: 2 MiB (pending) + 2 MiB > 2 MiB, then 0 + 2 <= 2.  No OOM;
     * cost 100 (failed cudaMalloc) + 7 + 50 + 100 = 257 ns. */
    struct mem *m = mem_new(2, 2.0 * MiB);
    mem_set_costs(m, &test_costs);
    mem_alloc(m, 0, 0, STREAM_C, 512, MEM_ACTIVATIONS);
    mem_release(m, 1, 0, 4, 0);
    ck_assert_int_eq(mem_alloc(m, 2, 1, STREAM_U, 512, MEM_ACTIVATIONS),
                     257);
    struct mem_stats st = stats(m);
    ck_assert_int_eq(st.retries, 1);
    ck_assert_int_eq(st.syncs, 1);
    ck_assert_int_eq(st.ooms, 0);
    ck_assert_int_eq(st.oom_shortfall, 0);
    ck_assert_int_eq(reserved_now(m), 2 * MiB);
    ck_assert_int_eq(allocated_now(m), 512);
    /* The op the block waited for finishing later changes nothing. */
    mem_op_done(m, 3, 4);
    ck_assert_int_eq(reserved_now(m), 2 * MiB);
    mem_free(m);
}
END_TEST

START_TEST(test_mem_sync_wait_split)
{
    /* The two calls the engine makes: the first asks for a synchronize
     * (after its failed cudaMalloc, 100 ns) and allocates nothing; while
     * the host waits, the op the pending block waits for finishes (its
     * segment becomes unused); the second call, 200 ns later, costs the
     * synchronize, one cudaFree and the cudaMalloc: 7 + 50 + 100 = 157.
     * The retry is logged for op 9 at the first call's time with the whole
     * stall, 100 + 200 + 157 = 457 ns. */
    struct mem *m = mem_new(2, 2.0 * MiB);
    mem_set_costs(m, &test_costs);
    mem_alloc(m, 0, 0, STREAM_C, 512, MEM_ACTIVATIONS);
    mem_release(m, 1, 0, 4, 0);
    int sync = 0;
    ck_assert_int_eq(mem_alloc_op(m, 10, 9, 1, STREAM_U, 512,
                                  MEM_ACTIVATIONS, -1, &sync), 100);
    ck_assert_int_eq(sync, 1);
    ck_assert_int_eq(allocated_now(m), 0);
    mem_op_done(m, 50, 4);
    ck_assert_int_eq(mem_alloc_op(m, 310, 9, 1, STREAM_U, 512,
                                  MEM_ACTIVATIONS, 200, &sync), 157);
    ck_assert_int_eq(sync, 0);
    ck_assert_int_eq(allocated_now(m), 512);
    ck_assert_int_eq(reserved_now(m), 2 * MiB);
    int n;
    const struct mem_retry *r = mem_retries(m, &n);
    ck_assert_int_eq(n, 1);
    ck_assert_int_eq(r[0].op, 9);
    ck_assert_int_eq(r[0].t_ns, 10);
    ck_assert_int_eq(r[0].stall_ns, 457);
    ck_assert_int_eq(r[0].synced, 1);
    ck_assert_int_eq(r[0].oom, 0);
    ck_assert_int_eq(stats(m).stall_ns, 457);
    mem_free(m);
}
END_TEST

START_TEST(test_mem_reset_peaks)
{
    struct mem *m = mem_new(2, BIG_CAPACITY);
    mem_alloc(m, 1, 0, STREAM_C, (uint64_t)(12 * MiB), MEM_ACTIVATIONS);
    mem_alloc(m, 2, 1, STREAM_C, (uint64_t)(4 * KiB), MEM_GRAD_SHARDED);
    mem_release(m, 3, 0, -1, 1);
    /* After warm-up only the 4 KiB buffer is live: the peaks restart from
     * it (allocated 4 KiB at t = 4; reserved 12 + 2 MiB = 14 MiB). */
    mem_reset_peaks(m, 4);
    struct mem_stats st = stats(m);
    ck_assert_int_eq(st.peak_allocated, 4 * KiB);
    ck_assert_int_eq(st.peak_t_ns, 4);
    ck_assert_int_eq(st.peak_by_cat[MEM_GRAD_SHARDED], 4 * KiB);
    ck_assert_int_eq(st.peak_by_cat[MEM_ACTIVATIONS], 0);
    ck_assert_int_eq(st.peak_reserved, 14 * MiB);
    mem_free(m);
}
END_TEST

/* ---- errors ---------------------------------------------------------- */

START_TEST(test_mem_release_unallocated_asserts)
{
    struct mem *m = mem_new(2, BIG_CAPACITY);
    mem_release(m, 0, 1, -1, 1);
    mem_free(m);
}
END_TEST

START_TEST(test_mem_buffer_out_of_range_asserts)
{
    struct mem *m = mem_new(2, BIG_CAPACITY);
    mem_alloc(m, 0, 2, STREAM_C, 512, MEM_ACTIVATIONS);
    mem_free(m);
}
END_TEST

static Suite *
mem_suite(int can_fork)
{
    Suite *s = suite_create("mem");

    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, test_mem_rounds_to_512);
    tcase_add_test(tc, test_mem_segment_sizes);
    tcase_add_test(tc, test_mem_small_segment_split);
    tcase_add_test(tc, test_mem_small_split_min_block);
    tcase_add_test(tc, test_mem_large_segment_split);
    tcase_add_test(tc, test_mem_large_remainder_not_split);
    tcase_add_test(tc, test_mem_reuse_same_stream);
    tcase_add_test(tc, test_mem_pending_not_reused);
    tcase_add_test(tc, test_mem_pending_small_block);
    tcase_add_test(tc, test_mem_merge_with_remainder);
    tcase_add_test(tc, test_mem_merge_both_sides);
    tcase_add_test(tc, test_mem_pools_per_stream);
    tcase_add_test(tc, test_mem_pools_per_size_class);
    tcase_add_test(tc, test_mem_peak_by_category);
    tcase_add_test(tc, test_mem_samples);
    tcase_add_test(tc, test_mem_random_invariants);
    suite_add_tcase(s, tc);

    tc = tcase_create("limits");
    tcase_add_test(tc, test_mem_exact_fit_no_retry);
    tcase_add_test(tc, test_mem_large_split_boundary);
    tcase_add_test(tc, test_mem_retry_then_oom);
    tcase_add_test(tc, test_mem_sync_frees_pending);
    tcase_add_test(tc, test_mem_sync_wait_split);
    tcase_add_test(tc, test_mem_reset_peaks);
    suite_add_tcase(s, tc);

    /* An abort would take the whole runner down without fork (CK_FORK=no
     * under valgrind), so the assert tests only run in fork mode. */
    if (can_fork) {
        tc = tcase_create("errors");
        tcase_add_test_raise_signal(tc, test_mem_release_unallocated_asserts,
                                    SIGABRT);
        tcase_add_test_raise_signal(tc, test_mem_buffer_out_of_range_asserts,
                                    SIGABRT);
        suite_add_tcase(s, tc);
    }
    return s;
}

int
main(void)
{
    int can_fork = tu_can_fork();
    return tu_main(mem_suite(can_fork));
}
