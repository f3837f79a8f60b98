/*
 * cmd_merge.c: `fsdpsim merge`, the shard CSVs of `sweep --shard K/N`
 * joined into the CSV one sweep writes (the joining is sweep_merge's).
 */
#define _POSIX_C_SOURCE 200809L
#include "cmd.h"
#include "atomic_file.h"
#include "sweep.h"
#include "textfile.h"
#include "xalloc.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static void
cmd_merge_help(FILE *out)
{
    fprintf(out,
            "usage: fsdpsim merge SHARD.csv... [--out FILE.csv]\n\n"
            "Join the CSVs of 'fsdpsim sweep --shard K/N' (any order, "
            "one per shard) into\nthe CSV one sweep of all the points "
            "writes, byte for byte: the shard\ncolumns (point, n_points) "
            "dropped, the rows in point order.  A point missing\nfrom "
            "every file, or in two of them, is an error, and nothing is "
            "written.\n\n"
            "options:\n"
            "  -o, --out FILE           write the CSV to FILE, atomically "
            "(default stdout)\n"
            "  -h, --help               show this help\n\n"
            "exit status: 0 ok, 2 a file is missing, not a shard, or "
            "points are missing\nor duplicated, 3 the output could not "
            "be written.\n");
}

/* A shard CSV is a few KiB a point; the bound keeps a wrong path (a
 * checkpoint, a device) from being read whole. */
#define MERGE_MAX_FILE_BYTES ((size_t)1 << 30)

/* The whole of PATH, or NULL with *cause.  Only regular files, as every
 * input (textfile.h): /dev/zero or a FIFO is refused, not read forever. */
static char *
read_all(const char *path, size_t *len, char **cause)
{
    char *text = textfile_load(path, MERGE_MAX_FILE_BYTES,
                               "is it a CSV of fsdpsim sweep --shard?",
                               cause);
    if (text == NULL)
        return NULL;
    *len = strlen(text);
    return text;
}

static int
cmd_merge(int argc, char **argv)
{
    const char *out_path = NULL;
    char **files = xcalloc(argc + 1, sizeof *files);
    int n = 0, status = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            cmd_merge_help(stdout);
            free(files);
            return 0;
        }
        if (strcmp(argv[i], "-o") == 0 || strcmp(argv[i], "--out") == 0) {
            if (i + 1 == argc) {
                cmd_error("merge", "--out needs a file name", 1);
                free(files);
                return EXIT_USAGE;
            }
            out_path = argv[++i];
        } else if (strncmp(argv[i], "--out=", 6) == 0) {
            out_path = argv[i] + 6;
        } else if (argv[i][0] == '-' && argv[i][1] != '\0') {
            free(files);
            return cmd_option_error("merge", OPTION_UNKNOWN, argv[i]);
        } else {
            files[n++] = argv[i];
        }
    }
    if (n == 0) {
        cmd_error("merge", "no files: give the CSVs of sweep --shard K/N, "
                  "e.g. fsdpsim merge shard-*.csv --out sweep.csv", 1);
        free(files);
        return EXIT_USAGE;
    }
    char **texts = xcalloc(n, sizeof *texts);
    size_t *lens = xcalloc(n, sizeof *lens);
    char *cause = NULL;
    for (int i = 0; i < n && cause == NULL; i++)
        texts[i] = read_all(files[i], &lens[i], &cause);
    if (cause) {
        status = EXIT_USAGE;
        goto out;
    }
    /* Merge into memory first: on an error nothing is written. */
    char *csv = NULL;
    size_t csv_len = 0;
    FILE *mem = xopen_memstream(&csv, &csv_len);
    int rc = sweep_merge((const char *const *)texts, lens,
                         (const char *const *)files, n, mem, &cause);
    fclose(mem);
    if (rc != 0) {
        free(csv);
        status = EXIT_USAGE;
        goto out;
    }
    if (out_path) {
        struct atomic_file af;
        if (atomic_file_open(&af, out_path, &cause) != 0) {
            status = EXIT_SYSTEM;
        } else {
            fwrite(csv, 1, csv_len, af.f);
            if (atomic_file_commit(&af, &cause) != 0)
                status = EXIT_SYSTEM;
        }
    } else if (fwrite(csv, 1, csv_len, stdout) != csv_len
               || fflush(stdout) != 0) {
        cause = xasprintf("cannot write the CSV: %s", strerror(errno));
        status = EXIT_SYSTEM;
    }
    free(csv);
out:
    if (cause) {
        cmd_error("merge", cause, 0);
        free(cause);
    }
    for (int i = 0; i < n; i++)
        free(texts[i]);
    free(texts);
    free(lens);
    free(files);
    return status;
}

const struct cmd_entry cmd_merge_entry = {
    .name = "merge",
    .usage = "SHARD.csv... [--out FILE.csv]",
    .summary = "join the CSVs of sweep --shard K/N into one sweep's CSV",
    .exec = cmd_merge,
    .help = cmd_merge_help,
};
