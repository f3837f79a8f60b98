/*
 * atomic_file.c: write-to-temporary-then-rename (see atomic_file.h).
 */
#define _POSIX_C_SOURCE 200809L
#include "atomic_file.h"
#include "xalloc.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int
atomic_file_open(struct atomic_file *af, const char *path, char **cause)
{
    memset(af, 0, sizeof *af);
    af->path = xstrdup(path);
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
    /* mkstemp creates 0600; give the file the mode a plain fopen would. */
    mode_t mask = umask(0);
    umask(mask);
    fchmod(fd, 0666 & ~mask);
    af->f = fdopen(fd, "w");
    if (af->f == NULL) {
        *cause = xasprintf("%s: %s", path, strerror(errno));
        close(fd);
        unlink(af->tmp_path);
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
    if (bad || rename(af->tmp_path, af->path) != 0) {
        *cause = xasprintf("%s: write failed: %s", af->path,
                           strerror(errno ? errno : EIO));
        unlink(af->tmp_path);
        free(af->path);
        free(af->tmp_path);
        memset(af, 0, sizeof *af);
        return -1;
    }
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
    if (af->tmp_path != NULL)
        unlink(af->tmp_path);
    free(af->path);
    free(af->tmp_path);
    memset(af, 0, sizeof *af);
}
