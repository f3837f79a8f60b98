/*
 * gnuplot.c: the built-in report scripts through gnuplot (see gnuplot.h).
 */
#define _POSIX_C_SOURCE 200809L
#include "gnuplot.h"
#include "atomic_file.h"
#include "builtin.h"
#include "xalloc.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef GNUPLOT_PATH
#define GNUPLOT_PATH "gnuplot"
#endif

#define GNUPLOT_MAX_ARGS 16

/*
 * gnuplot's own messages are captured in a temporary file and, when it
 * fails, boiled down to one line for the "fsdpsim:" message: the last line
 * that says something (gnuplot follows a message with a line holding only
 * a caret under the column), blanks squeezed, at most GNUPLOT_MSG_MAX
 * bytes.  Its warnings on success are dropped.
 */
#define GNUPLOT_MSG_MAX 200

static char *
last_message(int fd)
{
    char buf[8192];
    ssize_t n = lseek(fd, 0, SEEK_SET) == 0 ? read(fd, buf, sizeof buf - 1)
                                            : -1;
    if (n <= 0)
        return NULL;
    buf[n] = '\0';
    char *best = NULL;
    for (char *line = strtok(buf, "\n"); line; line = strtok(NULL, "\n")) {
        int words = 0;
        for (const char *q = line; *q; q++)
            if (isalnum((unsigned char)*q))
                words = 1;
        if (words)
            best = line;
    }
    if (best == NULL)
        return NULL;
    char out[GNUPLOT_MSG_MAX + 4];
    size_t k = 0;
    int space = 1;
    for (const unsigned char *q = (const unsigned char *)best;
         *q && k < GNUPLOT_MSG_MAX; q++) {
        int c = isspace(*q) || *q < 0x20 || *q >= 0x7f ? ' ' : *q;
        if (c == ' ' && space)
            continue;
        space = c == ' ';
        out[k++] = (char)c;
    }
    while (k > 0 && out[k - 1] == ' ')
        k--;
    out[k] = '\0';
    return k ? xstrdup(out) : NULL;
}

/* The directory temporaries go to, and the message when one cannot be
 * written there (naming TMPDIR, the usual culprit). */
static const char *
temp_dir(void)
{
    const char *tmp = getenv("TMPDIR");
    return tmp && *tmp ? tmp : "/tmp";
}

static char *
temp_failure(int err)
{
    const char *tmp = getenv("TMPDIR");
    return xasprintf("cannot write a temporary file in %s%s: %s", temp_dir(),
                     tmp && *tmp ? " (TMPDIR)" : "", strerror(err));
}

int
gnuplot_run(const char *name, const char *const *args, const char *out,
            char **cause)
{
    const struct builtin_file *f = builtin_find("reports", name);
    if (f == NULL) {
        *cause = xasprintf("internal error: report script '%s' missing",
                           name);
        return -1;
    }
    char *script = xasprintf("%s/fsdpsim-gp-XXXXXX", temp_dir());
    int fd = atomic_file_mkstemp(script);
    size_t len = strlen(f->text);
    if (fd < 0 || write(fd, f->text, len) != (ssize_t)len) {
        *cause = temp_failure(errno);
        if (fd >= 0) {
            close(fd);
            atomic_file_remove(script);
        }
        free(script);
        return -1;
    }
    close(fd);
    /* The plot's directory must take a file: say so ourselves rather than
     * leave it to gnuplot's wording.  A unique name, so that two runs
     * drawing the same plot do not write into one file. */
    char *tmp_out = xasprintf("%s.tmp.XXXXXX", out);
    int ofd = atomic_file_mkstemp(tmp_out);
    if (ofd < 0) {
        *cause = xasprintf("%s: cannot write the plot: %s", out,
                           strerror(errno));
        atomic_file_remove(script);
        free(script);
        free(tmp_out);
        return -1;
    }
    /* mkstemp creates 0600; give the plot the mode a plain fopen would. */
    mode_t mask = umask(0);
    umask(mask);
    fchmod(ofd, 0666 & ~mask);
    close(ofd);
    char *errpath = xasprintf("%s/fsdpsim-gperr-XXXXXX", temp_dir());
    int efd = mkstemp(errpath);
    if (efd >= 0)
        unlink(errpath);
    free(errpath);
    char *argv[GNUPLOT_MAX_ARGS + 4];
    int n = 0;
    argv[n++] = unconst("gnuplot");
    argv[n++] = unconst("-c");
    argv[n++] = unconst(script);
    for (int i = 0; args[i] && i < GNUPLOT_MAX_ARGS; i++)
        argv[n++] = unconst(strcmp(args[i], GNUPLOT_OUT) == 0 ? tmp_out
                                                              : args[i]);
    argv[n] = NULL;
    fflush(stdout);
    /* Signals wait until the child is tracked, so none can orphan it. */
    sigset_t held;
    atomic_file_hold_signals(&held);
    pid_t pid = fork();
    if (pid == 0) {
        atomic_file_release_signals(&held);
        int null = open("/dev/null", O_RDWR);
        if (null >= 0) {
            dup2(null, STDIN_FILENO);
            dup2(null, STDOUT_FILENO);
        }
        if (efd >= 0 || null >= 0)
            dup2(efd >= 0 ? efd : null, STDERR_FILENO);
        execvp(GNUPLOT_PATH, argv);
        _exit(127);
    }
    atomic_file_track_child(pid > 0 ? pid : 0);
    atomic_file_release_signals(&held);
    int status = -1;
    if (pid > 0)
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
            ;
    atomic_file_track_child(0);
    atomic_file_remove(script);
    free(script);
    int rc = 0;
    if (pid < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        atomic_file_remove(tmp_out);
        char *said = efd >= 0 ? last_message(efd) : NULL;
        if (pid > 0 && WIFEXITED(status) && WEXITSTATUS(status) == 127)
            *cause = xstrdup("gnuplot not found (install gnuplot-nox)");
        else if (said)
            *cause = xasprintf("%s: gnuplot failed: %s", out, said);
        else
            *cause = xasprintf("%s: gnuplot failed", out);
        free(said);
        rc = -1;
    } else if (rename(tmp_out, out) != 0) {
        *cause = xasprintf("%s: cannot rename the plot into place: %s", out,
                           strerror(errno));
        atomic_file_remove(tmp_out);
        rc = -1;
    } else {
        atomic_file_untrack(tmp_out);
    }
    if (efd >= 0)
        close(efd);
    free(tmp_out);
    return rc;
}

struct plot_time_base
gnuplot_time_base(double span_us)
{
    if (span_us < 2e3)
        return (struct plot_time_base){"us", "1"};
    if (span_us < 2e7)
        return (struct plot_time_base){"ms", "1000"};
    return (struct plot_time_base){"s", "1000000"};
}

FILE *
gnuplot_data_open(const char *what, char **path, char **cause)
{
    *path = xasprintf("%s/fsdpsim-%s-XXXXXX", temp_dir(), what);
    int fd = atomic_file_mkstemp(*path);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (f == NULL) {
        *cause = temp_failure(errno);
        if (fd >= 0) {
            close(fd);
            atomic_file_remove(*path);
        }
        free(*path);
        *path = NULL;
    }
    return f;
}

int
gnuplot_data_close(FILE *f, char **path, char **cause)
{
    int bad = ferror(f);
    bad |= fclose(f) != 0;
    if (!bad)
        return 0;
    *cause = temp_failure(errno ? errno : EIO);
    gnuplot_data_remove(*path);
    *path = NULL;
    return -1;
}

void
gnuplot_data_remove(char *path)
{
    atomic_file_remove(path);
    free(path);
}
