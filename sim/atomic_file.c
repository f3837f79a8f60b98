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
#include <sys/wait.h>
#include <pthread.h>
#include <unistd.h>

/* Temporary files being written and the child process drawing into one,
 * so that SIGINT, SIGTERM or SIGHUP can end the child and remove the files
 * before the process dies: an interrupted run leaves neither a partial
 * output, a stray temporary file nor an orphaned gnuplot.  Only the
 * handler and the functions below touch them; the paths are kept alive
 * until untracked. */
#define ATOMIC_MAX_OPEN 16
static const char *volatile open_tmp[ATOMIC_MAX_OPEN];
static volatile pid_t open_child;
static const int cleanup_signals[] = {SIGINT, SIGTERM, SIGHUP};
#define N_CLEANUP_SIGNALS 3

static void
on_signal(int sig)
{
    pid_t child = open_child;
    if (child > 0) {
        /* Ended first, so it writes nothing after its file is gone. */
        kill(child, SIGKILL);
        waitpid(child, NULL, 0);
    }
    for (int i = 0; i < ATOMIC_MAX_OPEN; i++)
        if (open_tmp[i] != NULL)
            unlink(open_tmp[i]);
    signal(sig, SIG_DFL);
    raise(sig);
}

/* The handler, once; a signal the caller ignores (nohup) stays ignored,
 * and one somebody else handles (sweep's SIGINT) keeps its handler. */
static void
install_handler(void)
{
    static int installed;
    if (installed)
        return;
    installed = 1;
    for (int i = 0; i < N_CLEANUP_SIGNALS; i++) {
        struct sigaction old;
        if (sigaction(cleanup_signals[i], NULL, &old) == 0
            && old.sa_handler != SIG_DFL)
            continue;
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_signal;
        sigemptyset(&sa.sa_mask);
        for (int j = 0; j < N_CLEANUP_SIGNALS; j++)
            sigaddset(&sa.sa_mask, cleanup_signals[j]);
        sigaction(cleanup_signals[i], &sa, NULL);
    }
}

void
atomic_file_hold_signals(sigset_t *old)
{
    sigset_t set;
    sigemptyset(&set);
    for (int i = 0; i < N_CLEANUP_SIGNALS; i++)
        sigaddset(&set, cleanup_signals[i]);
    pthread_sigmask(SIG_BLOCK, &set, old);
}

void
atomic_file_release_signals(const sigset_t *old)
{
    pthread_sigmask(SIG_SETMASK, old, NULL);
}

void
atomic_file_track(const char *tmp)
{
    install_handler();
    for (int i = 0; i < ATOMIC_MAX_OPEN; i++) {
        if (open_tmp[i] == NULL) {
            open_tmp[i] = tmp;
            return;
        }
    }
}

void
atomic_file_untrack(const char *path)
{
    for (int i = 0; i < ATOMIC_MAX_OPEN; i++)
        if (open_tmp[i] == path)
            open_tmp[i] = NULL;
}

int
atomic_file_mkstemp(char *template)
{
    sigset_t old;
    atomic_file_hold_signals(&old);
    int fd = mkstemp(template);
    if (fd >= 0)
        atomic_file_track(template);
    atomic_file_release_signals(&old);
    return fd;
}

void
atomic_file_remove(char *path)
{
    if (path == NULL)
        return;
    unlink(path);
    atomic_file_untrack(path);
}

void
atomic_file_track_child(pid_t pid)
{
    if (pid > 0)
        install_handler();
    open_child = pid;
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
    int fd = atomic_file_mkstemp(af->tmp_path);
    if (fd < 0) {
        *cause = xasprintf("%s: cannot create file: %s", path,
                           strerror(errno));
        free(af->path);
        free(af->tmp_path);
        memset(af, 0, sizeof *af);
        return -1;
    }
    /* mkstemp creates 0600; give the file the mode a plain fopen would. */
    mode_t mask = umask(0);
    umask(mask);
    fchmod(fd, 0666 & ~mask);
    af->f = fdopen(fd, "w");
    if (af->f == NULL) {
        *cause = xasprintf("%s: %s", path, strerror(errno));
        close(fd);
        atomic_file_remove(af->tmp_path);
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
        atomic_file_remove(af->tmp_path);
        free(af->path);
        free(af->tmp_path);
        memset(af, 0, sizeof *af);
        return -1;
    }
    if (af->tmp_path)
        atomic_file_untrack(af->tmp_path);
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
    atomic_file_remove(af->tmp_path);
    free(af->path);
    free(af->tmp_path);
    memset(af, 0, sizeof *af);
}
