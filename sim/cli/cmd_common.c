/*
 * cmd_common.c: what every command shares, in fsdpsim and in
 * fsdpsim-real alike: the one-line error message, reading options, the
 * output files a run asks for, and the discipline for standard output.
 */
#include "cmd.h"
#include "output.h"
#include "runconf.h"
#include "xalloc.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* Messages may quote input text: print them on one line, with control
 * and non-ASCII bytes shown as '?' and very long quotes cut, so that a
 * random or binary file still gets one readable line. */
#define CMD_ERROR_MAX 400

static void
print_one_line(FILE *out, const char *msg)
{
    size_t n = 0;
    for (const unsigned char *p = (const unsigned char *)msg; *p; p++, n++) {
        if (n == CMD_ERROR_MAX) {
            fputs("...", out);
            break;
        }
        fputc(*p < 0x20 || *p >= 0x7f ? '?' : *p, out);
    }
}

/* One line whatever the error: the message, then with USAGE_HINT where
 * the command's options are listed, so the fix is on the same line. */
void
cmd_error(const char *cmd, const char *msg, int usage_hint)
{
    fputs("fsdpsim: ", stderr);
    print_one_line(stderr, msg);
    if (usage_hint) {
        const struct cmd_entry *e = cmd ? cmd_find(cmd) : NULL;
        if (e)
            fprintf(stderr, " (the options: 'fsdpsim help %s')", e->name);
        else
            fputs(" (the commands: 'fsdpsim help')", stderr);
    }
    fputc('\n', stderr);
}

int
cmd_fail(const char *cmd, char *cause, int status)
{
    cmd_error(cmd, cause, 0);
    free(cause);
    return status;
}

int
cmd_errorf(const char *cmd, int usage_hint, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *msg = xvasprintf(fmt, ap);
    va_end(ap);
    cmd_error(cmd, msg, usage_hint);
    free(msg);
    return EXIT_USAGE;
}

int
cmd_interrupted(void)
{
    fprintf(stderr, "fsdpsim: interrupted; nothing written\n");
    return EXIT_INTERRUPTED;
}

int
cmd_wrote(const char *cmd, const char *path, int write_rc, char **cause)
{
    int status = 0;
    if (write_rc != 0) {
        cmd_error(cmd, *cause, 0);
        status = EXIT_SYSTEM;
    } else {
        printf("wrote %s\n", path);
    }
    free(*cause);
    *cause = NULL;
    return status;
}

int
cmd_option_error(const char *cmd, enum option_error e, const char *word)
{
    char *msg = setup_option_error(e, word);
    cmd_error(cmd, msg, 1);
    free(msg);
    return EXIT_USAGE;
}

int
cmd_getopt(struct cmd_getopt *g)
{
    if (!g->started) {
        opterr = 0;
        optind = 1;
        g->started = true;
    }
    int c = getopt_long(g->argc, g->argv, g->cmd->shortopts,
                        g->cmd->longopts, NULL);
    if (c == ':' || c == '?') {
        char buf[3];
        const char *word = setup_refused_option(g->argv, buf);
        cmd_option_error(g->cmd->name, c == ':' ? OPTION_NEEDS_VALUE
                                                : OPTION_UNKNOWN,
                         word);
        return CMD_OPT_BAD;
    }
    return c == -1 ? CMD_OPT_END : c;
}

int
cmd_setup_error(const char *cmd, enum setup_status st, char *cause)
{
    cmd_error(cmd, cause, st == SETUP_USAGE);
    free(cause);
    return EXIT_USAGE;
}

int
cmd_setup_done(const struct cmd_entry *e, struct run *r,
               enum setup_status st, char *cause)
{
    if (st == SETUP_OK)
        return CMD_RUN;
    setup_free(r);
    if (st != SETUP_HELP)
        return cmd_setup_error(e->name, st, cause);
    e->help(stdout);
    return 0;
}

int
cmd_write_outputs(const char *cmd, const struct run_config *c,
                  const struct run_view *v,
                  void (*metrics)(const struct run_view *, FILE *))
{
    const char *paths[] = {c->trace_path, c->timeline_path, c->memory_path,
                           c->metrics_path};
    void (*writers[])(const struct run_view *, FILE *) = {
        output_trace, output_timeline_dat, output_memory_dat, metrics};
    for (int i = 0; i < 4; i++) {
        char *cause = NULL;
        if (paths[i] && output_write_file(paths[i], writers[i], v, &cause))
            return cmd_fail(cmd, cause, EXIT_SYSTEM);
    }
    return 0;
}

/*
 * The one output discipline for stdout: whatever a command printed, a
 * failed write (a full disk, /dev/full, a closed descriptor) must not end
 * in exit 0.  The error indicator is sticky, so checking it once after the
 * command, then flushing and closing, catches every printf of the run.
 * RC is the command's status; it becomes EXIT_SYSTEM with one line naming
 * the output when the output was lost and the command had not already
 * failed for a reason of its own (bad input, a failure it reported).
 */
int
cmd_finish_stdout(int rc)
{
    int err = 0, lost = ferror(stdout);
    errno = 0;
    if (fflush(stdout) != 0)
        err = errno ? errno : EIO;
    lost |= ferror(stdout);
    errno = 0;
    if (fclose(stdout) != 0 && err == 0)
        err = errno ? errno : EIO;
    if (lost && err == 0)
        err = EIO;
    if (err == 0 || (rc != 0 && rc != EXIT_CHECK_FAILED))
        return rc;
    fprintf(stderr, "fsdpsim: standard output: cannot write: %s\n",
            strerror(err));
    return EXIT_SYSTEM;
}
