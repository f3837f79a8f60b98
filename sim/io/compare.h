/*
 * compare.h: a predicted step against a measured one (`fsdpsim compare`).
 *
 * Either side is read from one of three formats, told apart by content:
 * a timeline .dat (`fsdpsim simulate --timeline`, later `fsdpsim real
 * run`), a Chrome trace written by `fsdpsim simulate --trace`, or a
 * PyTorch profiler (Kineto) trace of a real job (kineto.c).  Only the
 * last step of each file is compared.
 *
 * Errors are signed as in `fsdpsim validate`: (predicted - measured) /
 * measured, so +20 % means the prediction is 20 % too long.
 *
 * compare.c reads and compares; compare_print.c prints the report.
 *
 * Ownership: a struct compare_timeline owns its ops and strings; release it
 * with compare_timeline_free().  compare_run() fills a caller-owned
 * struct compare_result that holds no pointers.
 */
#ifndef FSDPSIM_COMPARE_H
#define FSDPSIM_COMPARE_H

#include <stdint.h>
#include <stdio.h>

#include "sched.h"

/* Files larger than this are refused before being read; a profiler trace
 * of a few steps of a large model is tens to hundreds of MiB. */
#define COMPARE_MAX_FILE_BYTES ((size_t)1 << 30)

enum compare_format {
    COMPARE_TIMELINE_DAT,   /* fsdpsim timeline .dat */
    COMPARE_FSDPSIM_TRACE,  /* fsdpsim Chrome trace */
    COMPARE_KINETO          /* PyTorch profiler trace */
};

/* Op kinds beyond enum sched_op_kind, for Kineto kernels that carry no
 * FSDP meaning: any non-NCCL kernel, and NCCL kernels other than
 * all-gather, reduce-scatter and all-reduce (broadcast, send/recv...). */
#define COMPARE_KERNEL OP_KIND_COUNT
#define COMPARE_NCCL_OTHER (OP_KIND_COUNT + 1)
#define COMPARE_KIND_COUNT (OP_KIND_COUNT + 2)

/* One GPU op (or the optimizer step) as a file records it. */
struct compare_op {
    int op;              /* schedule op id, -1 when the file has none */
    int kind;            /* enum sched_op_kind or COMPARE_KERNEL/... */
    int stream;          /* stream index: 0 C .. 5 HOST, or Kineto's
                          * streams numbered 0.. in (pid, tid) order */
    int unit;            /* FSDP unit, -1 for none or unknown */
    int iter, micro;     /* step and micro-batch, -1 when unknown */
    int64_t start_ns, end_ns; /* ns, on the file's own clock */
    double bytes;        /* B moved, 0 when unknown */
};

struct compare_timeline {
    enum compare_format format;
    int has_op_ids;             /* ops carry schedule op ids */
    int step;                   /* iteration kept (-1: Kineto, no ids) */
    struct compare_op *ops;     /* the kept step's ops, in file order */
    int n_ops;
    char **stream_names;        /* n_streams names, for plots */
    int n_streams;
    int64_t peak_mem_bytes;     /* B, peak allocated; -1 when unknown */
    char *step_label;           /* "step 1", "ProfilerStep#3", ... */
};

/* Everything `fsdpsim compare` prints.  Durations in seconds. */
#define COMPARE_ROW_COMPUTE COMPARE_KIND_COUNT  /* aggregate row */
#define COMPARE_N_ROWS (COMPARE_KIND_COUNT + 1)

struct compare_row {
    int n_pred, n_meas;         /* ops of this kind in each step */
    int matched;                /* pairs matched */
    double pred_s, meas_s;      /* s, summed durations */
    double err_pct;             /* (pred - meas) / meas x 100; NaN if 0 */
    double median_op_err_pct;   /* over matched pairs; NaN when none */
};

struct compare_result {
    int by_op_id;               /* 1: matched by op id, 0: by kind order */
    struct compare_row rows[COMPARE_N_ROWS];
    int has_phases;             /* both sides know their phases */
    double phase_pred_s[3], phase_meas_s[3]; /* s, per enum sched_phase */
    double step_pred_s, step_meas_s, step_err_pct;
    double comm_pred_s, comm_meas_s;       /* s, communication busy time */
    double exposed_pred_s, exposed_meas_s; /* s, exposed part of it */
    int64_t mem_pred_bytes, mem_meas_bytes; /* B; -1 when unknown */
};

/* Read PATH, telling its format from its content, and keep its last step.
 * 0, or -1 with *cause (caller frees), e.g. "x.json: not a timeline .dat,
 * fsdpsim trace or PyTorch profiler trace". */
int compare_load(const char *path, struct compare_timeline *tl,
                 char **cause);
void compare_timeline_free(struct compare_timeline *tl);

/* The peak allocated_bytes of a memory .dat (`simulate --memory`); 0, or
 * -1 with *cause (caller frees). */
int compare_read_memory(const char *path, int64_t *peak_bytes,
                        char **cause);

/* Match and measure.  0, or -1 with *cause (caller frees) when the two
 * sides have no kind of op in common; PRED_PATH and MEAS_PATH only name
 * them in the message. */
int compare_run(const struct compare_timeline *pred,
                const struct compare_timeline *meas, const char *pred_path,
                const char *meas_path, struct compare_result *res,
                char **cause);

/* The report: per kind, the step (with phases when known), communication
 * and exposed communication, peak memory when known. */
void compare_print_text(FILE *out, const struct compare_timeline *pred,
                        const struct compare_timeline *meas,
                        const char *pred_path, const char *meas_path,
                        const struct compare_result *r);
/* The same as one JSON object; TOL_PCT < 0 when --tol was not given. */
void compare_print_json(FILE *out, const struct compare_timeline *pred,
                        const struct compare_timeline *meas,
                        const char *pred_path, const char *meas_path,
                        const struct compare_result *r, double tol_pct);
/* (PRED - MEAS) / MEAS in %, NaN when nothing was measured (MEAS <= 0):
 * every error compare reports and prints. */
double compare_err_pct(double pred, double meas);
/* 1 when |step-time error| <= TOL_PCT (a NaN error is never within). */
int compare_within_tol(const struct compare_result *r, double tol_pct);

/* "allgather", "compute" (COMPARE_KERNEL and the aggregate row),
 * "nccl" (COMPARE_NCCL_OTHER). */
const char *compare_kind_name(int kind);
const char *compare_format_name(enum compare_format f);

/* Step span of a kept step, first op start to last op end, in ns. */
int64_t compare_step_start_ns(const struct compare_timeline *tl);
int64_t compare_step_end_ns(const struct compare_timeline *tl);

#endif
