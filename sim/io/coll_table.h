/*
 * coll_table.h: `fsdpsim coll`'s output, a collective's predicted times
 * over a range of sizes in nccl-tests' columns (text) or as JSON, and
 * the --explain lines that take one size apart.
 *
 * nccl-tests' columns: size (the whole buffer, bytes), count (elements),
 * type, redop, time (us), algbw = size / time and busbw = algbw x the
 * collective's bus factor (nccl-tests doc/PERFORMANCE.md), to which we
 * add NCCL's choice (algorithm, protocol, channels).
 */
#ifndef FSDPSIM_COLL_TABLE_H
#define FSDPSIM_COLL_TABLE_H

#include <stdbool.h>
#include <stdio.h>

#include "coll.h"
#include "nccl_env.h"

/* One table: what its header names, and its rows so far. */
struct coll_table {
    enum coll_op op;
    const char *topology;
    int nodes, ranks_per_node;
    struct coll_group g;
    int nccl_version;           /* as nccl_config's: 228 for 2.28 */
    const char *type, *redop;   /* nccl-tests' names */
    bool json;
    const char *simgrid;        /* net_describe's text with --network
                                   simgrid (adds the analytic column), or
                                   NULL */
    int rows;
};

/* The header (text) or the opening of the object (JSON). */
void coll_table_begin(struct coll_table *tb, FILE *out);
/* One size: BYTES in COUNT elements took R (its time with the chosen
 * backend; AN_US the analytic time, printed with simgrid). */
void coll_table_row(struct coll_table *tb, double bytes, double count,
                    const struct coll_result *r, double an_us, FILE *out);
/* After the last row; or, when a row failed, closing what JSON opened so
 * far (FAILED). */
void coll_table_end(const struct coll_table *tb, bool failed, FILE *out);

/* --explain: NCCL's choice for the first size (BYTES) and its time split
 * into launch, pipeline fill, bandwidth and per-step latency; NVLS_BYTES
 * the device memory NVLS takes a GPU (coll_nvls_buffer_bytes), CONN_BYTES
 * its connections' buffers for the chosen algorithm
 * (coll_conn_buffer_bytes; 0: no line), BUFFSIZE_GIVEN whether the user
 * set NCCL_BUFFSIZE. */
void coll_explain_print(const struct coll_table *tb, double bytes,
                        const struct coll_result *r, double nvls_bytes,
                        double conn_bytes, bool buffsize_given, FILE *out);

#endif
