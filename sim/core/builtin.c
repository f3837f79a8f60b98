/*
 * builtin.c: lists of the built-in files (see builtin.h).  The files
 * themselves are in builtin_data.c, which sim/core/gen-builtin.sh generates.
 */
#include "builtin.h"
#include "xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int
cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/*
 * "a, b, c": the names of the built-in files under DIR ("models" or
 * "topologies"), sorted by strcmp() so that messages do not depend on the
 * order of the Makefile's lists; "" when there are none.  Caller frees.
 */
char *
builtin_names(const char *dir)
{
    const char **names = xcalloc((size_t)builtin_n_files + 1,
                                 sizeof *names);
    int n = 0;
    size_t len = 1;
    for (int i = 0; i < builtin_n_files; i++)
        if (strcmp(builtin_files[i].dir, dir) == 0) {
            names[n++] = builtin_files[i].name;
            len += strlen(builtin_files[i].name) + 2;
        }
    qsort(names, (size_t)n, sizeof *names, cmp_str);
    char *s = xmalloc(len), *w = s;
    *w = '\0';
    for (int i = 0; i < n; i++)
        w += sprintf(w, "%s%s", i ? ", " : "", names[i]);
    free(names);
    return s;
}
