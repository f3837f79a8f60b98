/*
 * gnuplot.c: the built-in report scripts through gnuplot (see gnuplot.h).
 */
#define _POSIX_C_SOURCE 200809L
#include "gnuplot.h"
#include "builtin.h"
#include "xalloc.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef GNUPLOT_PATH
#define GNUPLOT_PATH "gnuplot"
#endif

#define GNUPLOT_MAX_ARGS 16

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
    const char *tmp = getenv("TMPDIR");
    char *script = xasprintf("%s/fsdpsim-gp-XXXXXX",
                             tmp && *tmp ? tmp : "/tmp");
    int fd = mkstemp(script);
    size_t len = strlen(f->text);
    if (fd < 0 || write(fd, f->text, len) != (ssize_t)len) {
        *cause = xasprintf("cannot write a temporary file: %s",
                           strerror(errno));
        if (fd >= 0) {
            close(fd);
            unlink(script);
        }
        free(script);
        return -1;
    }
    close(fd);
    char *tmp_out = xasprintf("%s.tmp.%ld", out, (long)getpid());
    const char *argv[GNUPLOT_MAX_ARGS + 4];
    int n = 0;
    argv[n++] = "gnuplot";
    argv[n++] = "-c";
    argv[n++] = script;
    for (int i = 0; args[i] && i < GNUPLOT_MAX_ARGS; i++)
        argv[n++] = strcmp(args[i], GNUPLOT_OUT) == 0 ? tmp_out : args[i];
    argv[n] = NULL;
    pid_t pid = fork();
    if (pid == 0) {
        execvp(GNUPLOT_PATH, (char *const *)argv);
        _exit(127);
    }
    int status = -1;
    if (pid > 0)
        waitpid(pid, &status, 0);
    unlink(script);
    free(script);
    int rc = 0;
    if (pid < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        unlink(tmp_out);
        *cause = xstrdup(pid > 0 && WIFEXITED(status)
                                 && WEXITSTATUS(status) == 127
                             ? "gnuplot not found (install gnuplot-nox)"
                             : "gnuplot failed (see its message above)");
        rc = -1;
    } else if (rename(tmp_out, out) != 0) {
        *cause = xasprintf("%s: cannot rename the plot into place: %s", out,
                           strerror(errno));
        unlink(tmp_out);
        rc = -1;
    }
    free(tmp_out);
    return rc;
}

FILE *
gnuplot_data_open(const char *what, char **path, char **cause)
{
    const char *tmp = getenv("TMPDIR");
    *path = xasprintf("%s/fsdpsim-%s-XXXXXX", tmp && *tmp ? tmp : "/tmp",
                      what);
    int fd = mkstemp(*path);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (f == NULL) {
        *cause = xasprintf("cannot write a temporary file: %s",
                           strerror(errno));
        if (fd >= 0) {
            close(fd);
            unlink(*path);
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
    *cause = xstrdup("cannot write a temporary file");
    unlink(*path);
    free(*path);
    *path = NULL;
    return -1;
}
