/*
 * textfile.c: whole-file reads for the model and topology loaders (see
 * textfile.h).
 *
 * The file is read in chunks into a growing buffer rather than sized from
 * fstat() first, because topologies may come from a pipe ("<(...)"), where
 * there is no size to ask for; a few reallocations of a few KiB cost
 * nothing next to parsing.
 */
#define _POSIX_C_SOURCE 200809L /* fileno(), fstat() */

#include "textfile.h"
#include "xalloc.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define TEXTFILE_CHUNK 65536 /* bytes asked of fread() at a time */

/*
 * Read the file PATH into a NUL-terminated string (caller frees).  At most
 * MAX_BYTES + 1 bytes are read, so a huge file or an endless device costs
 * no more than that.  FLAGS is 0 or TEXTFILE_REGULAR.  Returns NULL with
 * *error set on failure, and for TEXTFILE_OPEN and TEXTFILE_READ errno
 * still holding the cause.
 */
char *
textfile_read(const char *path, size_t max_bytes, unsigned flags,
              enum textfile_error *error)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        *error = TEXTFILE_OPEN;
        return NULL;
    }
    char *buf = NULL;
    int err = 0;
    if (flags & TEXTFILE_REGULAR) {
        struct stat st;
        if (fstat(fileno(f), &st) != 0) {
            err = errno;
            *error = TEXTFILE_READ;
            goto fail;
        }
        if (S_ISDIR(st.st_mode)) {
            err = EISDIR;
            *error = TEXTFILE_READ;
            goto fail;
        }
        if (!S_ISREG(st.st_mode)) {
            *error = TEXTFILE_NOT_REGULAR;
            goto fail;
        }
    }
    size_t cap = 0, len = 0;
    for (;;) {
        size_t want = max_bytes + 1 - len;
        if (want > TEXTFILE_CHUNK)
            want = TEXTFILE_CHUNK;
        buf = xgrow(buf, &cap, len + want + 1, 1);
        size_t got = fread(buf + len, 1, want, f);
        len += got;
        if (len > max_bytes) {
            *error = TEXTFILE_TOO_BIG;
            goto fail;
        }
        if (got < want)
            break;
    }
    if (ferror(f)) {
        err = errno;
        *error = TEXTFILE_READ;
        goto fail;
    }
    if (memchr(buf, '\0', len) != NULL) {
        *error = TEXTFILE_NUL;
        goto fail;
    }
    buf[len] = '\0';
    fclose(f);
    return buf;

fail:
    fclose(f);
    free(buf);
    errno = err;
    return NULL;
}

/* The file name in PATH without its directory and extension: "x" from
 * "dir/x.ini"; a leading dot is kept (".ini" stays ".ini").  Caller
 * frees. */
char *
textfile_stem(const char *path)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    const char *dot = strrchr(base, '.');
    if (dot == NULL || dot == base)
        return xstrdup(base);
    return xstrndup(base, (size_t)(dot - base));
}
