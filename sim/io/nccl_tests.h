/*
 * nccl_tests.h: reading what nccl-tests' all_gather_perf,
 * reduce_scatter_perf and all_reduce_perf measured.
 *
 * Two forms are read: the text they print on stdout (header, one
 * "#  Rank N ... on HOST device D [...] NAME" line per rank, then one data
 * row per size), and the JSON file newer nccl-tests write with -J FILE
 * (src/util.cu, JSON_FILE_VERSION 2).  Only the out-of-place columns are
 * kept: FSDP's all-gather and reduce-scatter write to a separate buffer.
 *
 * Ownership: a struct nccl_tests_run owns its rows and strings; release
 * them with nccl_tests_run_free().
 */
#ifndef FSDPSIM_NCCL_TESTS_H
#define FSDPSIM_NCCL_TESTS_H

#include "nccl_env.h"

/* Files and rows beyond these are refused: a sweep is a few dozen rows,
 * and a bigger file is the wrong file (a full job log, a core dump). */
#define NCCL_TESTS_MAX_FILE_BYTES ((size_t)16 * 1024 * 1024)
#define NCCL_TESTS_MAX_ROWS 10000

/* One size of the sweep, out-of-place, as nccl-tests printed it. */
struct nccl_tests_row {
    double size_bytes;      /* whole buffer: for all-gather the gathered
                             * output, for reduce-scatter its input */
    double count;           /* elements, as printed (per rank for AG/RS) */
    char type[16];          /* "float", "bfloat16", ... */
    char redop[16];         /* "sum", "none"; "" without a redop column */
    double time_us;         /* out-of-place time, microseconds */
    double algbw_GBps;      /* size / time, 1e9 bytes per second */
    double busbw_GBps;      /* algbw x the bus factor, 1e9 B/s */
    int line;               /* line of the file (text) or index in
                             * "results" from 1 (JSON) */
};

struct nccl_tests_run {
    /* In: the collective to assume when the file does not say (no program
     * name, and a redop column that fits both all-reduce and
     * reduce-scatter); COLL_OP_COUNT for none.  Set by
     * nccl_tests_run_init(). */
    enum coll_op op_hint;
    /* Out. */
    enum coll_op op;        /* the collective measured */
    int ranks;              /* GPUs in the communicator */
    int nodes;              /* distinct host names */
    int nccl_version;       /* NCCL library as 227 for 2.27; 0 unknown */
    char *gpu;              /* device name of rank 0, or NULL */
    int json;               /* 1 when read from nccl-tests' -J output */
    int n_rows;
    struct nccl_tests_row *rows;
};

/* Empty run, no op hint. */
void nccl_tests_run_init(struct nccl_tests_run *run);
/* Release what RUN owns and leave it as nccl_tests_run_init() does (the
 * hint included).  NULL is a no-op. */
void nccl_tests_run_free(struct nccl_tests_run *run);

/*
 * Read PATH (text or JSON, told apart by the first non-blank byte) into
 * RUN, which must come from nccl_tests_run_init().  Returns 0 with at
 * least one row, or -1 with *cause (caller frees) naming "PATH:LINE: "
 * where a line applies, "PATH: " otherwise: a missing or oversized file,
 * no data rows, a program other than the three read here, a collective
 * that cannot be told (and no hint), rank lines that disagree, or rows
 * whose columns do not parse.
 */
int nccl_tests_read(const char *path, struct nccl_tests_run *run,
                    char **cause);

/*
 * Read every run in PATH: a text file may hold several nccl-tests runs one
 * after another (a shell loop over the three programs, or `fsdpsim real
 * bench`), each ending at its "# Avg bus bandwidth" line; a JSON file
 * holds one.  *RUNS gets *N_RUNS runs (caller frees each with
 * nccl_tests_run_free, then the array), each with HINT as its op_hint.
 * Errors as nccl_tests_read(), with the file's own line numbers.
 */
int nccl_tests_read_all(const char *path, enum coll_op hint,
                        struct nccl_tests_run **runs, int *n_runs,
                        char **cause);

/* The text of PATH (caller frees), or NULL with *cause saying why not: a
 * missing or unreadable file, one over 16 MiB or with a NUL byte. */
char *nccl_tests_load(const char *path, char **cause);

/* The same for TEXT already in memory, named PATH in messages. */
int nccl_tests_parse_all(const char *path, const char *text,
                         enum coll_op hint, struct nccl_tests_run **runs,
                         int *n_runs, char **cause);

/* "all_reduce_perf" etc. for an op. */
const char *nccl_tests_program(enum coll_op op);

#endif
