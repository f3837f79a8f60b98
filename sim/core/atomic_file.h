/*
 * atomic_file.h: output files that appear whole or not at all.
 *
 * A trace, timeline or memory file is written to a temporary name in the
 * same directory and renamed over the target only once complete, so an
 * error or Ctrl-C never leaves a half-written file that looks finished.
 * A target that exists and is not a regular file (/dev/null, /dev/stdout,
 * a FIFO) is written directly: renaming over it would replace a device
 * or pipe with a plain file.  While a file is being written, a second
 * fsdpsim writing the same path is refused (PATH.lock, atomic_file.c).
 */
#ifndef FSDPSIM_ATOMIC_FILE_H
#define FSDPSIM_ATOMIC_FILE_H

#include <signal.h>
#include <stdio.h>
#include <sys/types.h>

struct atomic_file {
    FILE *f;
    char *tmp_path;             /* NULL when writing directly */
    char *path;
    char *lock_path;            /* PATH.lock, held while writing */
    int lock_held;
};

/* Open; -1 with *cause (caller frees) when the directory is not writable. */
int atomic_file_open(struct atomic_file *af, const char *path, char **cause);
/* Flush, close and rename into place; -1 with *cause on I/O error (the
 * temporary file is removed). */
int atomic_file_commit(struct atomic_file *af, char **cause);
/* Close and remove the temporary file. */
void atomic_file_abort(struct atomic_file *af);

/* Any other temporary file: mkstemp(TEMPLATE) that SIGINT, SIGTERM and
 * SIGHUP remove until atomic_file_remove (unlinks) or atomic_file_untrack
 * (keeps: renamed into place) is called with the same pointer. */
int atomic_file_mkstemp(char *template);
void atomic_file_remove(char *path);
void atomic_file_untrack(const char *path);
/* Also track a path created some other way (a plot's temporary name). */
void atomic_file_track(const char *path);
/* The child process writing into a tracked file (0: none): those signals
 * kill it before the files go. */
void atomic_file_track_child(pid_t pid);
/* Block those signals (around fork and track, say) and restore them. */
void atomic_file_hold_signals(sigset_t *old);
void atomic_file_release_signals(const sigset_t *old);

#endif
