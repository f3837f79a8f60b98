/*
 * textfile.h: reading a whole text file, with a bound on its size.
 *
 * Model and topology files are a few KiB.  The bound keeps a mistaken path
 * (a checkpoint, a log) from being read into memory, and a NUL byte is
 * refused because the parsers would silently stop at it.  Only regular
 * files are read: a FIFO, a device or a socket is refused without waiting
 * on it (every input of fsdpsim goes through here), and a leading UTF-8
 * byte order mark is dropped.  The caller words
 * the message from the textfile_error, since the hint depends on what the
 * file was meant to be.
 *
 * Ownership: the strings returned are the caller's to free().
 */
#ifndef FSDPSIM_TEXTFILE_H
#define FSDPSIM_TEXTFILE_H

#include <stddef.h>

/* Why textfile_read() failed. */
enum textfile_error {
    TEXTFILE_OPEN = 1,    /* open() failed; errno says why */
    TEXTFILE_READ,        /* fstat() or fread() failed, or a directory
                           * (EISDIR); errno says why */
    TEXTFILE_NOT_REGULAR, /* a device, FIFO or socket */
    TEXTFILE_TOO_BIG,     /* more than max_bytes */
    TEXTFILE_NUL          /* holds a NUL byte */
};

/* Refuse anything but a regular file, before reading it: always so now;
 * kept so that callers can still say it. */
#define TEXTFILE_REGULAR 0x1u

char *textfile_read(const char *path, size_t max_bytes, unsigned flags,
                    enum textfile_error *error);
/* The one-line message for ERROR (with errno as textfile_read() left
 * it) reading PATH, bounded by MAX_BYTES: "PATH: strerror" when it could
 * not be opened or read, else what is wrong with it and HINT in
 * parentheses (what the file should be, e.g. "is it nccl-tests
 * output?"; none when HINT is NULL).  Caller frees. */
char *textfile_error_message(const char *path, enum textfile_error error,
                             size_t max_bytes, const char *hint);
/* What every reader of an input file does: textfile_read, and when it
 * fails, *CAUSE set to textfile_error_message(PATH, ..., MAX_BYTES,
 * HINT).  The text, or NULL with *CAUSE set. */
char *textfile_load(const char *path, size_t max_bytes, const char *hint,
                    char **cause);
/* "x" from "dir/x.ini", for names that default to the file's. */
char *textfile_stem(const char *path);

#endif
