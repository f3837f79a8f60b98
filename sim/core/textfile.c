/*
 * textfile.c: whole-file reads for the model and topology loaders (see
 * textfile.h).
 *
 * Every input is a regular file.  The file is opened with O_NONBLOCK and
 * checked with fstat() before the first read, so a FIFO (whose open would
 * block until a writer comes) or a device is refused at once rather than
 * waited on or read forever.  It is still read in chunks up to the bound
 * rather than sized from fstat(), since a file may grow while it is read.
 * A UTF-8 byte order mark at the start is dropped: editors on some systems
 * write one, and no format read here gives it a meaning.
 */
#define _POSIX_C_SOURCE 200809L /* fdopen(), fstat() */

#include "textfile.h"
#include "xalloc.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define TEXTFILE_CHUNK 65536 /* bytes asked of fread() at a time */

/*
 * Read the file PATH into a NUL-terminated string (caller frees).  At most
 * MAX_BYTES + 1 bytes are read, so a huge file or an endless device costs
 * no more than that.  Anything but a regular file is refused
 * (TEXTFILE_NOT_REGULAR, or TEXTFILE_READ with errno EISDIR for a
 * directory), whatever FLAGS says.  Returns NULL with *error set on failure,
 * and for TEXTFILE_OPEN and TEXTFILE_READ errno still holding the cause.
 */
char *
textfile_read(const char *path, size_t max_bytes, unsigned flags,
              enum textfile_error *error)
{
    (void)flags; /* every input is a regular file now */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY);
    if (fd < 0) {
        *error = TEXTFILE_OPEN;
        return NULL;
    }
    struct stat st;
    int err = 0;
    if (fstat(fd, &st) != 0) {
        err = errno;
        *error = TEXTFILE_READ;
    } else if (S_ISDIR(st.st_mode)) {
        err = EISDIR;
        *error = TEXTFILE_READ;
    } else if (!S_ISREG(st.st_mode)) {
        *error = TEXTFILE_NOT_REGULAR;
    } else {
        goto regular;
    }
    close(fd);
    errno = err;
    return NULL;

regular:;
    /* A regular file never blocks; clear the flag for plain reads. */
    int fl = fcntl(fd, F_GETFL);
    if (fl >= 0)
        (void)fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
    FILE *f = fdopen(fd, "rb");
    if (f == NULL) {
        err = errno;
        close(fd);
        *error = TEXTFILE_OPEN;
        errno = err;
        return NULL;
    }
    char *buf = NULL;
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
    if (len >= 3 && memcmp(buf, "\xef\xbb\xbf", 3) == 0)
        memmove(buf, buf + 3, len - 2);
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

char *
textfile_load(const char *path, size_t max_bytes, const char *hint,
              char **cause)
{
    enum textfile_error error;
    char *text = textfile_read(path, max_bytes, TEXTFILE_REGULAR, &error);
    if (text == NULL)
        *cause = textfile_error_message(path, error, max_bytes, hint);
    return text;
}

char *
textfile_error_message(const char *path, enum textfile_error error,
                       size_t max_bytes, const char *hint)
{
    /* The bound in the largest binary unit it is a whole number of. */
    static const char *const unit[] = {"bytes", "KiB", "MiB", "GiB"};
    size_t amount = max_bytes;
    int u = 0;
    while (u < 3 && amount >= 1024 && amount % 1024 == 0) {
        amount /= 1024;
        u++;
    }
    /* Opening or reading failed: errno says it all, as cat(1) would. */
    if (error == TEXTFILE_OPEN || error == TEXTFILE_READ)
        return xasprintf("%s: %s", path, strerror(errno));
    char *what;
    switch (error) {
    case TEXTFILE_NOT_REGULAR:
        what = xstrdup("not a regular file");
        break;
    case TEXTFILE_TOO_BIG:
        what = xasprintf("file is larger than %zu %s", amount, unit[u]);
        break;
    case TEXTFILE_NUL:
    default:
        what = xstrdup("contains a NUL byte");
        break;
    }
    char *msg = hint ? xasprintf("%s: %s (%s)", path, what, hint)
                     : xasprintf("%s: %s", path, what);
    free(what);
    return msg;
}
