/*
 * atomic_file.c: write-to-temporary-then-rename (see atomic_file.h).
 */
#define _POSIX_C_SOURCE 200809L
#include "atomic_file.h"
#include "xalloc.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Temporary files being written, so that SIGINT or SIGTERM can remove them
 * before the process dies: an interrupted run leaves neither a partial
 * output nor a stray temporary file.  Only the handler and the functions
 * below touch it; the paths are kept alive until commit or abort. */
#define ATOMIC_MAX_OPEN 8
static const char *volatile open_tmp[ATOMIC_MAX_OPEN];

static void
on_signal(int sig)
{
    for (int i = 0; i < ATOMIC_MAX_OPEN; i++)
        if (open_tmp[i] != NULL)
            unlink(open_tmp[i]);
    signal(sig, SIG_DFL);
    raise(sig);
}

static void
track(const char *tmp)
{
    static int installed;
    if (!installed) {
        installed = 1;
        signal(SIGINT, on_signal);
        signal(SIGTERM, on_signal);
        signal(SIGHUP, on_signal);
    }
    for (int i = 0; i < ATOMIC_MAX_OPEN; i++) {
        if (open_tmp[i] == NULL) {
            open_tmp[i] = tmp;
            return;
        }
    }
}

static void
untrack(const char *tmp)
{
    for (int i = 0; i < ATOMIC_MAX_OPEN; i++)
        if (open_tmp[i] == tmp)
            open_tmp[i] = NULL;
}

int
atomic_file_open(struct atomic_file *af, const char *path, char **cause)
{
    memset(af, 0, sizeof *af);
    af->path = xstrdup(path);
    struct stat st;
    if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
        af->f = fopen(path, "w");
        if (af->f == NULL) {
            *cause = xasprintf("%s: cannot write: %s", path,
                               strerror(errno));
            free(af->path);
            memset(af, 0, sizeof *af);
            return -1;
        }
        return 0;
    }
    af->tmp_path = xasprintf("%s.tmp.XXXXXX", path);
    int fd = mkstemp(af->tmp_path);
    if (fd < 0) {
        *cause = xasprintf("%s: cannot create file: %s", path,
                           strerror(errno));
        free(af->path);
        free(af->tmp_path);
        memset(af, 0, sizeof *af);
        return -1;
    }
    track(af->tmp_path);
    /* mkstemp creates 0600; give the file the mode a plain fopen would. */
    mode_t mask = umask(0);
    umask(mask);
    fchmod(fd, 0666 & ~mask);
    af->f = fdopen(fd, "w");
    if (af->f == NULL) {
        *cause = xasprintf("%s: %s", path, strerror(errno));
        close(fd);
        unlink(af->tmp_path);
        untrack(af->tmp_path);
        free(af->path);
        free(af->tmp_path);
        memset(af, 0, sizeof *af);
        return -1;
    }
    return 0;
}

int
atomic_file_commit(struct atomic_file *af, char **cause)
{
    int bad = ferror(af->f);
    if (fclose(af->f) != 0)
        bad = 1;
    af->f = NULL;
    if (bad || (af->tmp_path && rename(af->tmp_path, af->path) != 0)) {
        *cause = xasprintf("%s: write failed: %s", af->path,
                           strerror(errno ? errno : EIO));
        if (af->tmp_path) {
            unlink(af->tmp_path);
            untrack(af->tmp_path);
        }
        free(af->path);
        free(af->tmp_path);
        memset(af, 0, sizeof *af);
        return -1;
    }
    if (af->tmp_path)
        untrack(af->tmp_path);
    free(af->path);
    free(af->tmp_path);
    memset(af, 0, sizeof *af);
    return 0;
}

void
atomic_file_abort(struct atomic_file *af)
{
    if (af->f != NULL)
        fclose(af->f);
    if (af->tmp_path != NULL) {
        unlink(af->tmp_path);
        untrack(af->tmp_path);
    }
    free(af->path);
    free(af->tmp_path);
    memset(af, 0, sizeof *af);
}
