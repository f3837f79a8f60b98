/*
 * nccl_tests.c: nccl-tests output, text or -J JSON, to a struct
 * nccl_tests_run (see nccl_tests.h).
 *
 * The text form is what src/common.cu and src/util.cu print (nccl-tests
 * 2.x): a "# nThread ..." header, one "#  Rank  0 Group  0 Pid 123 on
 * host1 device  0 [0000:07:00] NVIDIA A100-SXM4-80GB" line per rank (older
 * versions have no "Group"), a column header, then per size
 *
 *   size count type redop root  time algbw busbw #wrong  time algbw busbw
 *   #wrong
 *
 * out-of-place first, then in-place.  all_gather_perf prints redop "none"
 * and root -1 since 2.10; older versions have no redop column for it and
 * no root column for any collective.  The column header says which layout
 * a file has; without it the fields are counted.  Lines that are neither
 * ("NCCL INFO ...", MPI warnings, a shell prompt) are skipped, since users
 * paste whole job logs, except that a non-comment line naming a *_perf
 * program is taken as the command line.
 *
 * The JSON form (util.cu, JSON_FILE_VERSION 2) is an object: "args" (the
 * command line), "nccl_version" (e.g. 22703), "config" with "nthreads",
 * "ngpus" and "devices" (one entry per process: with MPI each process
 * runs nthreads x ngpus ranks), and "results", one object per size with
 * "size", "count", "type", "redop", "root" and "out_of_place" {"time" or
 * "cpu_time", "alg_bw", "bus_bw", "nwrong"}.  jansson gives no line
 * numbers for values, so its messages name the JSON path instead.
 *
 * Files are small (a sweep is a few dozen rows), so everything is read
 * into memory and scanned once; nothing is tuned for speed.
 */
#include "nccl_tests.h"
#include "textfile.h"
#include "xalloc.h"

#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define MAX_TOKENS 48           /* a row has 13, plus per-iteration stats */
#define MAX_HOSTS 4096

static const char *const programs[COLL_OP_COUNT] = {
    "all_gather_perf", "reduce_scatter_perf", "all_reduce_perf"};

const char *
nccl_tests_program(enum coll_op op)
{
    return op >= 0 && op < COLL_OP_COUNT ? programs[op] : "?";
}

void
nccl_tests_run_init(struct nccl_tests_run *run)
{
    memset(run, 0, sizeof *run);
    run->op_hint = COLL_OP_COUNT;
    run->op = COLL_OP_COUNT;
}

void
nccl_tests_run_free(struct nccl_tests_run *run)
{
    if (run == NULL)
        return;
    enum coll_op hint = run->op_hint;
    free(run->gpu);
    free(run->rows);
    nccl_tests_run_init(run);
    run->op_hint = hint;
}

/* ---- Shared helpers -------------------------------------------------- */

/* NCCL_VERSION_CODE to 227: major*10000 + minor*100 + patch since 2.9,
 * major*1000 + minor*100 + patch before. */
static int
version_from_code(long code)
{
    if (code >= 10000)
        return (int)(code / 10000 * 100 + code / 100 % 100);
    if (code >= 1000)
        return (int)(code / 1000 * 100 + code / 100 % 10);
    return 0;
}

/* The program named in S: its op, COLL_OP_COUNT for another *_perf
 * program (whose name goes to *other, caller frees), -1 for none. */
static int
program_in(const char *s, char **other)
{
    for (int i = 0; i < COLL_OP_COUNT; i++)
        if (strstr(s, programs[i]) != NULL)
            return i;
    const char *p = strstr(s, "_perf");
    if (p == NULL)
        return -1;
    const char *b = p;
    while (b > s && (isalnum((unsigned char)b[-1]) || b[-1] == '_'))
        b--;
    if (b == p)
        return -1;
    *other = xstrndup(b, (size_t)(p - b) + 5);
    return COLL_OP_COUNT;
}

/* A non-negative finite number filling all of S. */
static bool
parse_number(const char *s, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || *end != '\0' || errno == ERANGE || !isfinite(v) || v < 0)
        return false;
    *out = v;
    return true;
}

static bool
is_uint(const char *s)
{
    if (*s == '\0')
        return false;
    for (; *s; s++)
        if (!isdigit((unsigned char)*s))
            return false;
    return true;
}

static void
copy_word(char *dst, size_t len, const char *src)
{
    snprintf(dst, len, "%s", src);
}

/* Bytes per element of an nccl-tests datatype name, 0 for one unknown. */
static int
type_bytes(const char *type)
{
    static const struct { const char *name; int bytes; } types[] = {
        {"int8", 1},    {"uint8", 1},   {"char", 1},     {"f8e4m3", 1},
        {"f8e5m2", 1},  {"half", 2},    {"bfloat16", 2}, {"float", 4},
        {"int32", 4},   {"uint32", 4},  {"int", 4},      {"int64", 8},
        {"uint64", 8},  {"double", 8}};
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
        if (strcmp(types[i].name, type) == 0)
            return types[i].bytes;
    return 0;
}

/*
 * A measured row fit to fit a model to, or -1 with *cause (WHERE, e.g.
 * "file:12" or "file: results[3]", first).  NWRONG is the out-of-place
 * #wrong count, or -1 when the file does not say (nccl-tests -c 0 prints
 * N/A).  The bounds are far outside anything measured: 1 TiB buffers,
 * 1000 s per collective, 10 TB/s of algorithm bandwidth.
 */
#define ROW_MAX_BYTES 1099511627776.0
#define ROW_MAX_TIME_US 1e9
#define ROW_MAX_ALGBW_GBPS 10000.0

static int
check_row(const char *where, const struct nccl_tests_row *r, double nwrong,
          char **cause)
{
    int tb = type_bytes(r->type);
    if (!(r->size_bytes > 0) || r->size_bytes > ROW_MAX_BYTES)
        *cause = xasprintf("%s: size %.15g B is not a buffer size (1 B to "
                           "1 TiB)", where, r->size_bytes);
    else if (r->size_bytes != floor(r->size_bytes)
             || (tb > 0 && fmod(r->size_bytes, tb) != 0))
        *cause = xasprintf("%s: size %.15g B is not a whole number of %s "
                           "elements (%d B each)", where, r->size_bytes,
                           r->type, tb > 0 ? tb : 1);
    else if (!(r->time_us > 0) || r->time_us > ROW_MAX_TIME_US)
        *cause = xasprintf("%s: time %g us is not a plausible measurement "
                           "(above 0, at most 1e9 us)", where, r->time_us);
    else if (r->size_bytes / (r->time_us * 1e3) > ROW_MAX_ALGBW_GBPS)
        *cause = xasprintf("%s: %g B in %g us is %.3g GB/s, beyond any "
                           "interconnect (at most %g GB/s)", where,
                           r->size_bytes, r->time_us,
                           r->size_bytes / (r->time_us * 1e3),
                           ROW_MAX_ALGBW_GBPS);
    else if (nwrong != 0 && nwrong != -1)
        *cause = xasprintf("%s: #wrong is %g: nccl-tests found wrong "
                           "results, so the timing is not of a working "
                           "collective (fix the run first)", where, nwrong);
    else
        return 0;
    return -1;
}

/* "nccl-library=CODE" or JSON's nccl_version: 0 and *cause unless CODE
 * is an NCCL 2.x version code. */
static int
check_version_code(const char *where, double code, int *version,
                   char **cause)
{
    int v = code >= 0 && code < 1e7 && code == floor(code)
                ? version_from_code((long)code) : 0;
    if (v < 200 || v > 299) {
        *cause = xasprintf("%s: NCCL version code %.15g is not one of NCCL "
                           "2.x (e.g. 22703 for 2.27.3)", where, code);
        return -1;
    }
    *version = v;
    return 0;
}

static struct nccl_tests_row *
add_row(struct nccl_tests_run *run, size_t *cap)
{
    run->rows = xgrow(run->rows, cap, (size_t)run->n_rows + 1,
                      sizeof *run->rows);
    struct nccl_tests_row *r = &run->rows[run->n_rows++];
    memset(r, 0, sizeof *r);
    return r;
}

/* Distinct host names, with ranks per host, in order of appearance. */
struct hosts {
    int n;
    char *name[MAX_HOSTS];
    int ranks[MAX_HOSTS];
};

static int
hosts_add(struct hosts *h, const char *name)
{
    for (int i = 0; i < h->n; i++)
        if (strcmp(h->name[i], name) == 0) {
            h->ranks[i]++;
            return 0;
        }
    if (h->n == MAX_HOSTS)
        return -1;
    h->name[h->n] = xstrdup(name);
    h->ranks[h->n++] = 1;
    return 0;
}

static void
hosts_free(struct hosts *h)
{
    for (int i = 0; i < h->n; i++)
        free(h->name[i]);
    h->n = 0;
}

/* Every host must hold the same number of ranks, since the model has one
 * GPU count per node.  -1 with *cause otherwise. */
static int
hosts_check(const struct hosts *h, const char *path, char **cause)
{
    for (int i = 1; i < h->n; i++)
        if (h->ranks[i] != h->ranks[0]) {
            *cause = xasprintf("%s: inconsistent ranks: host '%s' runs %d "
                               "ranks but '%s' runs %d (fsdpsim needs the "
                               "same number of GPUs on every node)", path,
                               h->name[0], h->ranks[0], h->name[i],
                               h->ranks[i]);
            return -1;
        }
    return 0;
}

/* The collective from what the file showed.  EXPLICIT is the op its
 * program name gives (-1: none), at line EXPLICIT_LINE; ANY_REDUCE says a
 * redop other than "none" was seen. */
static int
settle_op(struct nccl_tests_run *run, const char *path, int explicit_op,
          int explicit_line, bool any_reduce, char **cause)
{
    int op = explicit_op;
    if (op < 0) {
        if (!any_reduce)
            op = COLL_ALLGATHER;
        else if (run->op_hint == COLL_ALLREDUCE ||
                 run->op_hint == COLL_REDUCESCATTER)
            op = run->op_hint;
        else {
            *cause = xasprintf("%s: cannot tell all_reduce_perf from "
                               "reduce_scatter_perf output (no program name "
                               "in the file; give the collective)", path);
            return -1;
        }
    }
    if (run->op_hint != COLL_OP_COUNT && (int)run->op_hint != op) {
        if (explicit_line > 0)
            *cause = xasprintf("%s:%d: the file holds %s output, not %s",
                               path, explicit_line, programs[op],
                               programs[run->op_hint]);
        else
            *cause = xasprintf("%s: the rows are %s output (%s), not %s",
                               path, programs[op],
                               any_reduce ? "they have a reduction"
                                          : "they have no reduction",
                               programs[run->op_hint]);
        return -1;
    }
    run->op = (enum coll_op)op;
    return 0;
}

/* ---- Text ------------------------------------------------------------ */

struct text {
    const char *path;
    struct nccl_tests_run *run;
    size_t cap;
    int line;
    int cmd_op, cmd_line;       /* program from a command line */
    int start_op, start_line;   /* from "# Collective test starting:" */
    int time_idx;               /* from the column header; -1 unknown */
    bool any_reduce;
    /* Rank blocks: a file may repeat the device list (-R, or runs pasted
     * one after the other); every block must list as many ranks. */
    int block_ranks, block_line, first_ranks, first_line, blocks;
    int last_rank;
    struct hosts hosts;         /* of the first block */
};

static int
tokenize(char *s, char **tok)
{
    int n = 0;
    for (char *p = strtok(s, " \t"); p && n < MAX_TOKENS;
         p = strtok(NULL, " \t"))
        tok[n++] = p;
    return n;
}

static int
end_block(struct text *x, char **cause)
{
    if (x->blocks == 0 || x->block_ranks == 0)
        return 0;
    if (x->blocks == 1) {
        x->first_ranks = x->block_ranks;
        x->first_line = x->block_line;
    } else if (x->block_ranks != x->first_ranks) {
        *cause = xasprintf("%s:%d: inconsistent ranks: the device list here "
                           "has %d ranks, the one on line %d has %d (give "
                           "one nccl-tests run per file)", x->path,
                           x->block_line, x->block_ranks, x->first_line,
                           x->first_ranks);
        return -1;
    }
    return 0;
}

/* "#  Rank  0 Group  0 Pid  123 on host1 device  0 [0000:07:00] NAME";
 * TOK are the words after '#'. */
static int
rank_line(struct text *x, char **tok, int n, const char *raw, char **cause)
{
    int host = -1;
    for (int i = 2; i + 2 < n; i++)
        if (strcmp(tok[i], "on") == 0 && strcmp(tok[i + 2], "device") == 0) {
            host = i + 1;
            break;
        }
    if (n < 2 || !is_uint(tok[1]) || host < 0) {
        *cause = xasprintf("%s:%d: cannot read this rank line (expected "
                           "'#  Rank N ... on HOST device D [BUS] NAME')",
                           x->path, x->line);
        return -1;
    }
    int rank = atoi(tok[1]);
    if (x->blocks == 0 || rank <= x->last_rank) {
        if (end_block(x, cause) != 0)
            return -1;
        x->blocks++;
        x->block_ranks = 0;
        x->block_line = x->line;
    }
    x->last_rank = rank;
    x->block_ranks++;
    if (x->blocks > 1)
        return 0;
    if (hosts_add(&x->hosts, tok[host]) != 0) {
        *cause = xasprintf("%s:%d: more than %d hosts", x->path, x->line,
                           MAX_HOSTS);
        return -1;
    }
    if (rank == 0 && x->run->gpu == NULL) {
        const char *b = strchr(raw, ']');
        if (b != NULL) {
            b++;
            while (*b == ' ' || *b == '\t')
                b++;
            size_t len = strlen(b);
            while (len > 0 && isspace((unsigned char)b[len - 1]))
                len--;
            if (len > 0)
                x->run->gpu = xstrndup(b, len);
        }
    }
    return 0;
}

static int
program_line(struct text *x, const char *s, int *op, int *line,
             char **cause)
{
    char *other = NULL;
    int p = program_in(s, &other);
    if (p < 0)
        return 0;
    if (p == COLL_OP_COUNT) {
        *cause = xasprintf("%s:%d: unknown op '%s': fsdpsim reads "
                           "all_gather_perf, reduce_scatter_perf and "
                           "all_reduce_perf output", x->path, x->line,
                           other);
        free(other);
        return -1;
    }
    if (*op < 0) {
        *op = p;
        *line = x->line;
    } else if (*op != p) {
        *cause = xasprintf("%s:%d: %s here, but %s on line %d (give one "
                           "nccl-tests run per file)", x->path, x->line,
                           programs[p], programs[*op], *line);
        return -1;
    }
    return 0;
}

/* A comment line: rank lines, the column header, the program, the NCCL
 * version; everything else is ignored. */
static int
comment_line(struct text *x, char *s, char **cause)
{
    char *raw = xstrdup(s);
    char *tok[MAX_TOKENS];
    int rc = 0;
    const char *v;
    if ((v = strstr(raw, "Collective test starting:")) != NULL)
        rc = program_line(x, v, &x->start_op, &x->start_line, cause);
    else if ((v = strstr(raw, "nccl-library=")) != NULL) {
        char *end;
        double code = strtod(v + 13, &end);
        char *where = xasprintf("%s:%d", x->path, x->line);
        if (end == v + 13 || (*end != '\0' && !isspace((unsigned char)*end))) {
            size_t w = strcspn(v + 13, " \t");
            *cause = xasprintf("%s: nccl-library=%.*s is not a version code "
                               "(e.g. 22703 for 2.27.3)", where,
                               (int)(w > 40 ? 40 : w), v + 13);
            rc = -1;
        } else {
            rc = check_version_code(where, code, &x->run->nccl_version,
                                    cause);
        }
        free(where);
    }
    if (rc == 0) {
        int n = tokenize(s + 1, tok);
        if (n >= 1 && strcmp(tok[0], "Rank") == 0)
            rc = rank_line(x, tok, n, raw, cause);
        else if (n >= 4 && strcmp(tok[0], "size") == 0 &&
                 strcmp(tok[1], "count") == 0) {
            x->time_idx = -1;
            for (int i = 2; i < n && x->time_idx < 0; i++)
                if (strcmp(tok[i], "time") == 0 ||
                    strcmp(tok[i], "cputime") == 0)
                    x->time_idx = i;
        }
    }
    free(raw);
    return rc;
}

/* The column of the out-of-place time in a row of N fields, from the
 * header when there was one, else by counting: after "size count type"
 * come an optional redop, an optional root (only with a redop), 8 result
 * fields and an optional 2-word timestamp. */
static int
row_time_idx(const struct text *x, char **tok, int n)
{
    if (x->time_idx >= 0)
        return x->time_idx;
    double d;
    if (parse_number(tok[3], &d))
        return n - 3 == 8 || n - 3 == 10 ? 3 : -1;
    if (n - 4 == 8 || n - 4 == 10)
        return 4;
    if (n - 4 == 9 || n - 4 == 11)
        return 5;
    return -1;
}

static int
data_row(struct text *x, char **tok, int n, char **cause)
{
    int t = n >= 6 ? row_time_idx(x, tok, n) : -1;
    double size, count, time, alg, bus;
    if (t < 3 || t + 3 > n) {
        *cause = xasprintf("%s:%d: cannot read this row: %d fields (expected"
                           " size count type [redop [root]] time algbw "
                           "busbw #wrong, out-of-place then in-place)",
                           x->path, x->line, n);
        return -1;
    }
    if (!parse_number(tok[0], &size) || !parse_number(tok[1], &count) ||
        !parse_number(tok[t], &time) || !parse_number(tok[t + 1], &alg) ||
        !parse_number(tok[t + 2], &bus)) {
        *cause = xasprintf("%s:%d: cannot read this row: size, count, time, "
                           "algbw and busbw must be numbers (out-of-place "
                           "time in column %d)", x->path, x->line, t + 1);
        return -1;
    }
    if (x->run->n_rows == NCCL_TESTS_MAX_ROWS) {
        *cause = xasprintf("%s:%d: more than %d data rows (is it one "
                           "nccl-tests sweep?)", x->path, x->line,
                           NCCL_TESTS_MAX_ROWS);
        return -1;
    }
    struct nccl_tests_row *r = add_row(x->run, &x->cap);
    r->size_bytes = size;
    r->count = count;
    copy_word(r->type, sizeof r->type, tok[2]);
    if (t >= 4) {
        copy_word(r->redop, sizeof r->redop, tok[3]);
        if (strcmp(tok[3], "none") != 0)
            x->any_reduce = true;
    }
    r->time_us = time;
    r->algbw_GBps = alg;
    r->busbw_GBps = bus;
    r->line = x->line;
    double nwrong = -1;
    if (t + 3 < n && strcmp(tok[t + 3], "N/A") != 0
        && !parse_number(tok[t + 3], &nwrong)) {
        *cause = xasprintf("%s:%d: #wrong '%s' is not a count", x->path,
                           x->line, tok[t + 3]);
        return -1;
    }
    char *where = xasprintf("%s:%d", x->path, x->line);
    int rc = check_row(where, r, nwrong, cause);
    free(where);
    return rc;
}

static int
read_text(struct text *x, char *text, char **cause)
{
    char *tok[MAX_TOKENS];
    char *next;
    for (char *s = text; s != NULL; s = next) {
        next = strchr(s, '\n');
        if (next != NULL)
            *next++ = '\0';
        x->line++;
        size_t len = strlen(s);
        while (len > 0 && isspace((unsigned char)s[len - 1]))
            s[--len] = '\0';
        while (*s == ' ' || *s == '\t')
            s++;
        if (*s == '\0')
            continue;
        if (*s == '#') {
            if (comment_line(x, s, cause) != 0)
                return -1;
            continue;
        }
        char *raw = xstrdup(s);
        int n = tokenize(s, tok);
        int rc = 0;
        double d0, d1;
        /* A row, or one that looks like a row of a known datatype with a
         * size that is no byte count (1e23, 12.5): refused, not skipped. */
        if (n >= 3 && ((is_uint(tok[0]) && is_uint(tok[1]) &&
                        isalpha((unsigned char)tok[2][0])) ||
                       (type_bytes(tok[2]) > 0 && strtod(tok[0], NULL) != 0
                        && parse_number(tok[0], &d0)
                        && parse_number(tok[1], &d1))))
            rc = data_row(x, tok, n, cause);
        else
            rc = program_line(x, raw, &x->cmd_op, &x->cmd_line, cause);
        free(raw);
        if (rc != 0)
            return -1;
    }
    return end_block(x, cause);
}

/* Parse TEXT, whose first line is line LINES_BEFORE + 1 of PATH. */
static int
parse_text(const char *path, char *text, int lines_before,
           struct nccl_tests_run *run, char **cause)
{
    struct text x = {.path = path, .run = run, .line = lines_before,
                     .cmd_op = -1, .start_op = -1, .time_idx = -1,
                     .last_rank = -1};
    int rc = -1;
    if (read_text(&x, text, cause) != 0)
        goto out;
    if (run->n_rows == 0) {
        *cause = xasprintf("%s: no data rows (expected nccl-tests output: "
                           "lines of size, count, type, redop, root, time, "
                           "algbw, busbw, ...)", path);
        goto out;
    }
    if (x.first_ranks == 0) {
        *cause = xasprintf("%s: no '#  Rank N ... on HOST device D' lines, "
                           "so the number of ranks is unknown (keep "
                           "nccl-tests' whole header in the file)", path);
        goto out;
    }
    if (hosts_check(&x.hosts, path, cause) != 0)
        goto out;
    run->ranks = x.first_ranks;
    run->nodes = x.hosts.n;
    if (x.cmd_op >= 0 && x.start_op >= 0 && x.cmd_op != x.start_op) {
        *cause = xasprintf("%s:%d: %s here, but %s on line %d (give one "
                           "nccl-tests run per file)", path, x.start_line,
                           programs[x.start_op], programs[x.cmd_op],
                           x.cmd_line);
        goto out;
    }
    int op = x.cmd_op >= 0 ? x.cmd_op : x.start_op;
    int line = x.cmd_op >= 0 ? x.cmd_line : x.start_line;
    rc = settle_op(run, path, op, line, x.any_reduce, cause);
out:
    hosts_free(&x.hosts);
    return rc;
}

/* ---- JSON ------------------------------------------------------------ */

static int
json_number(const json_t *v, double *out)
{
    if (json_is_integer(v))
        *out = (double)json_integer_value(v);
    else if (json_is_real(v))
        *out = json_real_value(v);
    else
        return -1;
    return isfinite(*out) && *out >= 0 ? 0 : -1;
}

static int
json_row(const char *path, size_t i, const json_t *res,
         struct nccl_tests_run *run, size_t *cap, bool *any_reduce,
         char **cause)
{
    const json_t *oop = json_object_get(res, "out_of_place");
    if (oop == NULL || json_is_null(oop))
        return 0;           /* trace replay: in-place only */
    const json_t *tm = json_object_get(oop, "time");
    if (tm == NULL)
        tm = json_object_get(oop, "cpu_time");
    const json_t *ty = json_object_get(res, "type");
    const json_t *ro = json_object_get(res, "redop");
    double size, count = 0, time, alg, bus;
    if (!json_is_object(oop) ||
        json_number(json_object_get(res, "size"), &size) != 0 ||
        json_number(tm, &time) != 0 ||
        json_number(json_object_get(oop, "alg_bw"), &alg) != 0 ||
        json_number(json_object_get(oop, "bus_bw"), &bus) != 0) {
        *cause = xasprintf("%s: results[%zu]: expected numbers in size and "
                           "out_of_place.time, .alg_bw, .bus_bw", path, i);
        return -1;
    }
    json_number(json_object_get(res, "count"), &count);
    if (run->n_rows == NCCL_TESTS_MAX_ROWS) {
        *cause = xasprintf("%s: more than %d results (is it one nccl-tests "
                           "sweep?)", path, NCCL_TESTS_MAX_ROWS);
        return -1;
    }
    struct nccl_tests_row *r = add_row(run, cap);
    r->size_bytes = size;
    r->count = count;
    copy_word(r->type, sizeof r->type,
              json_is_string(ty) ? json_string_value(ty) : "");
    copy_word(r->redop, sizeof r->redop,
              json_is_string(ro) ? json_string_value(ro) : "");
    if (r->redop[0] != '\0' && strcmp(r->redop, "none") != 0)
        *any_reduce = true;
    r->time_us = time;
    r->algbw_GBps = alg;
    r->busbw_GBps = bus;
    r->line = (int)i + 1;
    double nwrong = -1;
    const json_t *nw = json_object_get(oop, "nwrong");
    if (nw != NULL && !json_is_null(nw) && json_number(nw, &nwrong) != 0) {
        *cause = xasprintf("%s: results[%zu]: out_of_place.nwrong is not a "
                           "count", path, i);
        return -1;
    }
    char *where = xasprintf("%s: results[%zu]", path, i);
    int rc = check_row(where, r, nwrong, cause);
    free(where);
    return rc;
}

/* Ranks and hosts from "config": nthreads x ngpus ranks per entry of
 * "devices" (one per process). */
static int
json_ranks(const char *path, const json_t *cfg, struct nccl_tests_run *run,
           char **cause)
{
    const json_t *devs = json_object_get(cfg, "devices");
    double nt = 1, ng = 1;
    if (!json_is_array(devs) || json_array_size(devs) == 0 ||
        json_number(json_object_get(cfg, "nthreads"), &nt) != 0 ||
        json_number(json_object_get(cfg, "ngpus"), &ng) != 0 ||
        nt < 1 || ng < 1) {
        *cause = xasprintf("%s: config: expected 'nthreads', 'ngpus' and a "
                           "'devices' list, so the number of ranks is "
                           "unknown", path);
        return -1;
    }
    size_t nproc = json_array_size(devs);
    if (nt * ng * (double)nproc > 1e6) {
        *cause = xasprintf("%s: config: %.0f ranks is more than fsdpsim "
                           "models", path, nt * ng * (double)nproc);
        return -1;
    }
    struct hosts *h = xcalloc(1, sizeof *h);
    int rc = 0;
    for (size_t i = 0; i < nproc && rc == 0; i++) {
        const json_t *d = json_array_get(devs, i);
        const json_t *hn = json_object_get(d, "hostname");
        if (!json_is_string(hn)) {
            *cause = xasprintf("%s: config.devices[%zu]: no 'hostname'",
                               path, i);
            rc = -1;
        } else if (hosts_add(h, json_string_value(hn)) != 0) {
            *cause = xasprintf("%s: more than %d hosts", path, MAX_HOSTS);
            rc = -1;
        }
        const json_t *info = json_object_get(d, "device_info");
        if (rc == 0 && i == 0 && json_is_string(info))
            run->gpu = xstrdup(json_string_value(info));
    }
    if (rc == 0)
        rc = hosts_check(h, path, cause);
    if (rc == 0) {
        run->ranks = (int)(nt * ng) * (int)nproc;
        run->nodes = h->n;
    }
    hosts_free(h);
    free(h);
    return rc;
}

static int
parse_json(const char *path, const char *text, struct nccl_tests_run *run,
           char **cause)
{
    json_error_t err;
    json_t *root = json_loads(text, JSON_REJECT_DUPLICATES, &err);
    if (root == NULL) {
        *cause = xasprintf("%s:%d: invalid JSON: %s", path, err.line,
                           err.text);
        return -1;
    }
    int rc = -1;
    size_t cap = 0;
    bool any_reduce = false;
    const json_t *results = json_object_get(root, "results");
    if (!json_is_object(root) || !json_is_array(results)) {
        *cause = xasprintf("%s: not nccl-tests JSON output (expected an "
                           "object with a 'results' list, as "
                           "all_reduce_perf -J FILE writes)", path);
        goto out;
    }
    int op = -1;
    const json_t *args = json_object_get(root, "args");
    if (json_is_array(args) && json_array_size(args) > 0 &&
        json_is_string(json_array_get(args, 0))) {
        char *other = NULL;
        op = program_in(json_string_value(json_array_get(args, 0)), &other);
        if (op == COLL_OP_COUNT) {
            *cause = xasprintf("%s: args[0]: unknown op '%s': fsdpsim reads "
                               "all_gather_perf, reduce_scatter_perf and "
                               "all_reduce_perf output", path, other);
            free(other);
            goto out;
        }
    }
    double code;
    const json_t *ver = json_object_get(root, "nccl_version");
    if (ver != NULL) {
        char *where = xasprintf("%s: nccl_version", path);
        int bad = 1;
        if (json_number(ver, &code) != 0)
            *cause = xasprintf("%s: nccl_version is not a version code "
                               "(e.g. 22703 for 2.27.3)", path);
        else
            bad = check_version_code(where, code, &run->nccl_version,
                                     cause) != 0;
        free(where);
        if (bad)
            goto out;
    }
    if (json_ranks(path, json_object_get(root, "config"), run, cause) != 0)
        goto out;
    for (size_t i = 0; i < json_array_size(results); i++)
        if (json_row(path, i, json_array_get(results, i), run, &cap,
                     &any_reduce, cause) != 0)
            goto out;
    if (run->n_rows == 0) {
        *cause = xasprintf("%s: no data rows (the 'results' list holds no "
                           "out-of-place measurement)", path);
        goto out;
    }
    run->json = 1;
    rc = settle_op(run, path, op, 0, any_reduce, cause);
out:
    json_decref(root);
    return rc;
}

/* ---- Entry point ----------------------------------------------------- */

char *
nccl_tests_load(const char *path, char **cause)
{
    return textfile_load(path, NCCL_TESTS_MAX_FILE_BYTES,
                         "is it nccl-tests output saved to a file?", cause);
}

static int
is_json(const char *text)
{
    while (isspace((unsigned char)*text))
        text++;
    return *text == '{' || *text == '[';
}

int
nccl_tests_read(const char *path, struct nccl_tests_run *run, char **cause)
{
    char *text = nccl_tests_load(path, cause);
    if (text == NULL)
        return -1;
    int rc = is_json(text) ? parse_json(path, text, run, cause)
                           : parse_text(path, text, 0, run, cause);
    free(text);
    if (rc != 0)
        nccl_tests_run_free(run);
    return rc;
}

/* nccl-tests' last line of a run ("# Avg bus bandwidth    : 5.1"): a new
 * run, with its command line and header, can only start after it. */
#define RUN_END "# Avg bus bandwidth"

/* Whether a data row (a line starting with a digit) starts at or after S:
 * the offset of the first, or the end of TEXT. */
static const char *
next_data_row(const char *s)
{
    for (;;) {
        while (*s == ' ' || *s == '\t')
            s++;
        if (*s == '\0' || isdigit((unsigned char)*s))
            return s;
        const char *nl = strchr(s, '\n');
        s = nl ? nl + 1 : s + strlen(s);
    }
}

/* Offsets in TEXT where a run starts, into *AT (grown, *CAP entries): 0,
 * then the line after each RUN_END that more data rows follow (nccl-tests
 * ends a run with a few more comment lines, "# Collective test
 * concluded").  Returns how many (at least 1).  One pass: the next data
 * row is looked for again only once the scan has passed the last one
 * found. */
static size_t
run_starts(const char *text, size_t **at, size_t *cap)
{
    size_t n = 0;
    *at = xgrow(*at, cap, 1, sizeof **at);
    (*at)[n++] = 0;
    const char *data = text;
    for (const char *s = text; *s; ) {
        const char *b = s;
        while (*b == ' ' || *b == '\t')
            b++;
        const char *nl = strchr(s, '\n');
        if (nl == NULL)
            break;
        s = nl + 1;
        if (strncmp(b, RUN_END, strlen(RUN_END)) != 0)
            continue;
        if (data < s)
            data = next_data_row(s);
        if (*data != '\0') {
            *at = xgrow(*at, cap, n + 1, sizeof **at);
            (*at)[n++] = (size_t)(s - text);
        }
    }
    return n;
}

int
nccl_tests_read_all(const char *path, enum coll_op hint,
                    struct nccl_tests_run **runs, int *n_runs, char **cause)
{
    *runs = NULL;
    *n_runs = 0;
    char *text = nccl_tests_load(path, cause);
    if (text == NULL)
        return -1;
    int rc = nccl_tests_parse_all(path, text, hint, runs, n_runs, cause);
    free(text);
    return rc;
}

int
nccl_tests_parse_all(const char *path, const char *text, enum coll_op hint,
                     struct nccl_tests_run **runs, int *n_runs, char **cause)
{
    *runs = NULL;
    *n_runs = 0;
    size_t len = strlen(text), cap = 0, *at = NULL, n = 1;
    bool json = is_json(text);
    if (json) {
        at = xgrow(at, &cap, 1, sizeof *at);
        at[0] = 0;
    } else {
        n = run_starts(text, &at, &cap);
    }
    at = xgrow(at, &cap, n + 1, sizeof *at);
    at[n] = len;
    struct nccl_tests_run *r = xcalloc(n, sizeof *r);
    int rc = 0, lines_before = 0;
    for (size_t k = 0; k < n && rc == 0; k++) {
        nccl_tests_run_init(&r[k]);
        r[k].op_hint = hint;
        /* This run's lines alone, numbered as in the file. */
        char *part = xstrndup(text + at[k], at[k + 1] - at[k]);
        rc = json ? parse_json(path, part, &r[k], cause)
                  : parse_text(path, part, lines_before, &r[k], cause);
        for (size_t i = at[k]; i < at[k + 1]; i++)
            lines_before += text[i] == '\n';
        free(part);
        *n_runs = (int)k + 1;
    }
    free(at);
    *runs = r;
    if (rc != 0) {
        for (int k = 0; k < *n_runs; k++)
            nccl_tests_run_free(&r[k]);
        free(r);
        *runs = NULL;
        *n_runs = 0;
        return -1;
    }
    return 0;
}
