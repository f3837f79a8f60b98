/*
 * exec_impl.h: the state real_run's sources share (exec.cu drives, the
 * exec_*.cu files do one part each): one struct gpu per local GPU, the
 * run around them, and the functions each part offers the others.
 */
#ifndef FSDPSIM_REAL_EXEC_IMPL_H
#define FSDPSIM_REAL_EXEC_IMPL_H

#include "gpu_clock.h"
#include "real_common.h"

extern "C" {
#include "cost.h"
#include "layer.h"
#include "mem.h"
#include "rendezvous.h"
}

#include <atomic>

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Caps on scratch operands: each region holds at most this much; bigger
 * GEMMs are split along the token dimension, attention along the
 * batch x head dimension.  512 MiB keeps every chunk far beyond the L2
 * cache, so the split costs nothing measurable. */
#define SCRATCH_CAP_BYTES ((size_t)512 << 20)
/* Memory-streaming kernels read one half and write the other. */
#define STREAM_REGION_BYTES ((size_t)256 << 20)
/* cuBLAS workspace (NVIDIA recommends 32 MiB on Hopper). */
#define BLAS_WORKSPACE_BYTES ((size_t)32 << 20)
/* Pinned host buffer for H2D/D2H copies, at most; bigger copies loop. */
#define PINNED_CAP_BYTES ((size_t)256 << 20)
/* Host optimizer (CPU offload): streams over at most this much. */
#define HOST_OPT_CAP_BYTES ((size_t)128 << 20)
/* Queries of a causal attention are split into at most this many chunks
 * (executed FLOPs (c+1)/(2c) of the full product: 0.53 for 16). */
#define CAUSAL_CHUNKS 16
/* How often a waiting thread checks NCCL and the other threads, in ns. */
#define POLL_SLEEP_NS 20000
/* How long, after a failure, the main thread lets the GPU threads stop by
 * themselves before aborting their communicators under them. */
#define ABORT_GRACE_NS INT64_C(10000000000)

struct exec_run;

/* One GPU, driven by one host thread.  Times are ns relative to the timed
 * pass's start (t0 event on the GPU, host_t0 on the host clock). */
struct gpu {
    struct exec_run *run;
    int local, rank, dev;
    pthread_t thread;
    int started;
    cudaStream_t st[STREAM_COUNT];      /* STREAM_HOST entry unused */
    cudaStream_t free_st[STREAM_COUNT]; /* record_stream frees per pool */
    cudaEvent_t *ev_start, *ev_end;     /* per op */
    cudaEvent_t t0, tail[2 * STREAM_COUNT];
    ncclComm_t comm[PG_COUNT];
    pthread_mutex_t comm_mu;            /* guards aborting comm[] */
    int comms_dead;
    cublasHandle_t blas;
    void *blas_ws;
    cudaMemPool_t pool;
    int have_pool;
    /* Scratch: x/w/y operand regions, stream region (read | write). */
    void *sx, *sw, *sy, *sstream;
    void *pinned;
    size_t pinned_bytes;
    float *host_opt;                    /* HOST optimizer, 2 halves */
    size_t host_opt_bytes;
    int sms;
    void **ptr;                         /* per buffer id */
    uint64_t *ptr_bytes;
    unsigned char *issued;              /* per op, this pass */
    int64_t *h_issue, *h_start, *h_end; /* host clock, per op */
    int64_t host_t0;
    int cur_op;                         /* for messages; -1 in set-up */
    int done_lo;                        /* ops below have finished */
    int rc;
    char *cause;
    int64_t peak_reserved, peak_used;
};

struct exec_run {
    const struct sched *s;
    const struct topo *t;
    const struct real_options *o;
    const struct real_launch *l;
    int n;                              /* local GPUs */
    struct gpu *g;
    struct layer_work *work;            /* per leaf */
    int esize;                          /* param dtype bytes */
    cudaDataType_t ctype;
    cublasComputeType_t compute;
    size_t need_x, need_w, need_y;      /* scratch bytes */
    size_t need_pinned, need_host_opt;
    int uses_pg[PG_COUNT];
    int pg_size[PG_COUNT];
    int warm_iters, warm_passes;
    std::atomic<int> abort;             /* a thread failed */
    std::atomic<int> timed;             /* local GPU 0: 1 while its timed
                                         * pass runs, 2 after */
    struct gpu_clock *clock;            /* NVML for local GPU 0, or NULL */
    struct gpu_meter meter;             /* its readings over its timed
                                         * pass (gpu_clock.h) */
    struct gpu_interval interval;       /* that pass's energy reading */
    std::atomic<int> first_fail;        /* its local index + 1 */
    /* Barrier that gives up when abort is set. */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int bar_count, bar_gen;
};

/* Attention geometry for one leaf: B = micro_batch x heads (each head
 * its own K and V even under GQA: the FLOPs are the same, the K/V reads
 * slightly more), s queries, `keys` keys visible to a query, head dim d. */
struct attn {
    int64_t batch, s, d, keys;
    int causal;
    int chunks;         /* query chunks */
    int64_t qc;         /* queries per chunk (last may be shorter) */
    int64_t nk_max;     /* keys a chunk sees, at most */
    int64_t nb;         /* batch entries per launch */
};

/* exec.cu: messages (the first failure of a GPU wins, named by op and
 * rank) */
void nap(void);
const char *op_desc(const struct sched *s, int id, char *buf, size_t len);
int real_fail(struct gpu *g, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* exec_compute.cu */
int blocks_for(const struct gpu *g, size_t n);
int fill_scratch(struct gpu *g, void *p, size_t bytes, unsigned seed);
int stream_bytes(struct gpu *g, cudaStream_t st, const void *src,
                 size_t rd_cap, void *dst, size_t wr_cap, double rd,
                 double wr, int kernels);
int stream_scratch(struct gpu *g, cudaStream_t st, double rd, double wr,
                   int kernels);
int64_t linear_chunk(int64_t m, int64_t n, int64_t k, int esize);
void attn_needs(const struct attn *a, int esize, size_t *x, size_t *w,
                size_t *y);
void leaf_attn(const struct exec_run *r, const struct module *m,
               struct attn *a);
int run_leaf(struct gpu *g, cudaStream_t st, int leaf, int bwd);

/* exec_issue.cu */
int empty_pool(struct gpu *g);
int run_pass(struct gpu *g, int iters, int timed);

/* exec_comms.cu */
void pg_place(const struct sched *s, enum sched_pg pg, int rank, int *color,
              int *pos, int *size);
int init_comms(struct exec_run *r, char **cause);
void release_comms(struct exec_run *r, int ok);

/* exec_collect.cu */
int collect(struct exec_run *r, struct engine_result *res, char **cause);

#endif
