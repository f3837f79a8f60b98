/*
 * testutil.h: building and simulating runs from a command-line string, for
 * the schedule and engine tests.
 */
#ifndef FSDPSIM_TESTUTIL_H
#define FSDPSIM_TESTUTIL_H

#include <stddef.h>
#include <stdio.h>

#include "engine.h"
#include "metrics.h"
#include "setup.h"

struct tu_run {
    struct run r;
    struct engine_result res;
    struct metrics met;
    int simulated;
};

/* Parse args (space-separated options, as after "fsdpsim simulate"),
 * prepare and, if simulate, run the engine.  Returns 0, or -1 with the
 * error message in *cause (caller frees). */
int tu_run(struct tu_run *t, const char *args, int simulate, char **cause);
void tu_free(struct tu_run *t);

/* Split BUF (modified) at spaces into ARGV, at most MAX - 1 words and a
 * NULL; returns the count. */
int tu_split_args(char *buf, char **argv, int max);

/* The settings that change a micro-batch's ops, which folding and the
 * steady state are tested on (tiny-llama on test-2x4); the first, the
 * plain one, must fold. */
extern const char *const tu_fold_settings[];
extern const int tu_n_fold_settings;

/* Ops of a kind in one iteration (-1: all iterations). */
int tu_count(const struct sched *s, int iter, enum sched_op_kind kind);
/* The same, of one process group on one stream. */
int tu_count_on(const struct sched *s, int iter, enum sched_op_kind kind,
                enum sched_pg pg, enum sched_stream st);
/* Sum of ALLOC bytes of a category in one iteration (-1: all). */
double tu_alloc_bytes(const struct sched *s, int iter, enum mem_category c);

/* The path of tests/data/NAME in the source tree, in one of four static
 * buffers: four calls may be in use at once. */
const char *tu_data_path(const char *name);

/* Write LEN bytes of TEXT to a new temporary file under $TMPDIR (or
 * /tmp); returns its path, which the caller unlinks and frees. */
char *tu_temp_file(const char *text, size_t len);
/* The same for a NUL-terminated text. */
char *tu_temp_text(const char *text);

/* Run "$FSDPSIM ARGS" through the shell, stdout and stderr to /dev/null
 * unless ERR is given (stderr is then captured there, at most ERRLEN - 1
 * bytes); returns the exit status, or -1 when $FSDPSIM is not set
 * (outside make check), for the tests of a command's exit codes and
 * messages. */
int tu_run_fsdpsim(const char *args, char *err, size_t errlen);

/* What WRITE prints for T, as a string (caller frees): topo_print,
 * net_platform_write. */
char *tu_topo_text(const struct topo *t,
                   void (*write)(const struct topo *, FILE *));

#endif
