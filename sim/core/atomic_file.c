/*
 * atomic_file.c: write-to-temporary-then-rename (see atomic_file.h).
 */
#define _POSIX_C_SOURCE 200809L
#include "atomic_file.h"
#include "xalloc.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
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

/* The handler on each signal left at its default, checked again at each
 * file (tune's workers take SIGINT for a while, then give it back): a
 * signal the caller ignores (nohup) stays ignored, and one somebody else
 * handles (sweep's SIGINT) keeps its handler. */
static void
install_handler(void)
{
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

/*
 * Two fsdpsim runs writing the same file (two sweeps given one --out)
 * would each rename a complete file over the other's, and one result
 * would vanish with both reporting success.  So the writer holds
 * PATH.lock, created whole (written under a temporary name, then link()ed,
 * which fails if the name exists) and holding its process id, from open
 * to commit or abort; a second writer is refused while that process
 * lives.  A lock left by a process that died without cleaning up (kill
 * -9) names a process that no longer exists and is taken over.
 */
/* Create LOCK holding this process's id: 0, 1 when it exists, -1 with
 * errno.  Written whole under a temporary name and link()ed, which fails
 * if LOCK exists; where the file system has no hard links (FAT, some
 * network file systems) an O_EXCL create, written right after. */
static int
create_lock(const char *path, const char *lock)
{
    char pid[32];
    int n = snprintf(pid, sizeof pid, "%ld\n", (long)getpid());
    char *tmp = xasprintf("%s.lock.XXXXXX", path);
    int fd = atomic_file_mkstemp(tmp);
    if (fd < 0) {
        free(tmp);
        return -1;
    }
    int bad = write(fd, pid, (size_t)n) != n;
    bad |= close(fd) != 0;
    sigset_t old;
    atomic_file_hold_signals(&old);
    int linked = !bad && link(tmp, lock) == 0;
    int err = bad ? EIO : errno;
    if (linked)
        atomic_file_track(lock);
    atomic_file_release_signals(&old);
    atomic_file_remove(tmp);
    free(tmp);
    if (linked)
        return 0;
    if (err == EEXIST)
        return 1;
    if (err != EPERM && err != ENOTSUP && err != EOPNOTSUPP && err != EXDEV) {
        errno = err;
        return -1;
    }
    atomic_file_hold_signals(&old);
    fd = open(lock, O_WRONLY | O_CREAT | O_EXCL, 0666);
    err = errno;
    if (fd >= 0)
        atomic_file_track(lock);
    atomic_file_release_signals(&old);
    if (fd < 0) {
        errno = err;
        return err == EEXIST ? 1 : -1;
    }
    bad = write(fd, pid, (size_t)n) != n;
    bad |= close(fd) != 0;
    if (bad) {
        atomic_file_remove(unconst(lock));
        errno = EIO;
        return -1;
    }
    return 0;
}

/* The process id LOCK holds: 0 when it holds none yet (a writer without
 * hard links creates it empty and writes its id right after) or cannot
 * be read, -1 when LOCK is gone. */
static long
lock_holder(const char *lock, time_t *mtime)
{
    struct stat st;
    if (stat(lock, &st) != 0)
        return -1;
    *mtime = st.st_mtime;
    long holder = 0;
    FILE *f = fopen(lock, "r");
    if (f != NULL) {
        if (fscanf(f, "%ld", &holder) != 1)
            holder = 0;
        fclose(f);
    }
    return holder;
}

/* An empty lock younger than this is being written; older, its writer
 * died between creating and filling it. */
#define LOCK_FILL_GRACE_S 2
#define LOCK_POLL_NS 50000000L

static int
take_lock(struct atomic_file *af, char **cause)
{
    af->lock_path = xasprintf("%s.lock", af->path);
    for (int attempt = 0; attempt < 2; attempt++) {
        int made = create_lock(af->path, af->lock_path);
        if (made == 0)
            return 0;
        if (made < 0) {
            *cause = xasprintf("%s: cannot create file: %s", af->path,
                               strerror(errno));
            return -1;
        }
        /* Somebody holds it: alive, or gone without removing it?  An
         * empty lock is given time to be filled before it counts as
         * abandoned, so two writers never both take it. */
        time_t mtime = 0;
        long holder = lock_holder(af->lock_path, &mtime);
        for (int waits = 0; holder == 0 && time(NULL) - mtime
                                                < LOCK_FILL_GRACE_S
                            && waits < 2 * LOCK_FILL_GRACE_S * 20;
             waits++) {
            struct timespec nap = {0, LOCK_POLL_NS};
            nanosleep(&nap, NULL);
            holder = lock_holder(af->lock_path, &mtime);
        }
        if (holder < 0)
            continue;           /* removed meanwhile: try again */
        if (holder == (long)getpid()) {
            *cause = xasprintf("%s: this command writes it already (the "
                               "same file given for two outputs?)",
                               af->path);
            return -1;
        }
        if (holder > 0 && (kill((pid_t)holder, 0) == 0 || errno == EPERM)) {
            *cause = xasprintf("%s: another fsdpsim (process %ld) is "
                               "writing this file; wait for it to finish "
                               "or write elsewhere (remove %s if no such "
                               "process runs)", af->path, holder,
                               af->lock_path);
            return -1;
        }
        unlink(af->lock_path);
    }
    *cause = xasprintf("%s: cannot take %s (another process keeps "
                       "recreating it)", af->path, af->lock_path);
    return -1;
}

/* Open the FIFO (or other non-regular file) PATH for writing, as is: a
 * FIFO nobody reads would block the open forever, so it is opened without
 * blocking, and refused when no reader has come after a short wait. */
#define FIFO_READER_WAIT_MS 2000
#define FIFO_POLL_MS 20
static FILE *
open_special(const char *path, const struct stat *st, char **cause)
{
    int flags = O_WRONLY | (S_ISFIFO(st->st_mode) ? O_NONBLOCK : 0);
    int fd = open(path, flags);
    /* A reader started just before (`reader <fifo & fsdpsim ...`) may not
     * have opened it yet: give it a moment before refusing. */
    for (int waits = 0; fd < 0 && errno == ENXIO
                        && waits < FIFO_READER_WAIT_MS / FIFO_POLL_MS;
         waits++) {
        struct timespec nap = {0, FIFO_POLL_MS * 1000000L};
        nanosleep(&nap, NULL);
        fd = open(path, flags);
    }
    if (fd < 0) {
        *cause = errno == ENXIO
                     ? xasprintf("%s: no process is reading this FIFO "
                                 "(start its reader first)", path)
                     : xasprintf("%s: cannot write: %s", path,
                                 strerror(errno));
        return NULL;
    }
    if (flags & O_NONBLOCK)
        fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    FILE *f = fdopen(fd, "w");
    if (f == NULL) {
        *cause = xasprintf("%s: cannot write: %s", path, strerror(errno));
        close(fd);
    }
    return f;
}

/* Free AF's names, removing the lock; AF is zeroed. */
static void
release(struct atomic_file *af)
{
    if (af->lock_path != NULL && af->lock_held)
        atomic_file_remove(af->lock_path);
    free(af->lock_path);
    free(af->path);
    free(af->tmp_path);
    memset(af, 0, sizeof *af);
}

int
atomic_file_open(struct atomic_file *af, const char *path, char **cause)
{
    memset(af, 0, sizeof *af);
    if (*path == '\0') {
        *cause = xstrdup("an output file name is empty (give a path)");
        return -1;
    }
    af->path = xstrdup(path);
    struct stat st;
    if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
        af->f = S_ISDIR(st.st_mode) ? NULL : open_special(path, &st, cause);
        if (af->f == NULL) {
            if (S_ISDIR(st.st_mode))
                *cause = xasprintf("%s: is a directory (give a file name)",
                                   path);
            release(af);
            return -1;
        }
        return 0;
    }
    if (take_lock(af, cause) != 0) {
        release(af);
        return -1;
    }
    af->lock_held = 1;
    af->tmp_path = xasprintf("%s.tmp.XXXXXX", path);
    int fd = atomic_file_mkstemp(af->tmp_path);
    if (fd < 0) {
        *cause = xasprintf("%s: cannot create file: %s", path,
                           strerror(errno));
        free(af->tmp_path);
        af->tmp_path = NULL;
        release(af);
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
        release(af);
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
        release(af);
        return -1;
    }
    if (af->tmp_path)
        atomic_file_untrack(af->tmp_path);
    release(af);
    return 0;
}

void
atomic_file_abort(struct atomic_file *af)
{
    if (af->f != NULL)
        fclose(af->f);
    atomic_file_remove(af->tmp_path);
    release(af);
}
