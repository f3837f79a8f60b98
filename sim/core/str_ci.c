/*
 * str_ci.c: case-insensitive matching (see str_ci.h).
 */
#include "str_ci.h"

#include <string.h>
#include <strings.h>

bool
str_has_ci(const char *hay, const char *needle)
{
    if (hay == NULL)
        return false;
    size_t n = strlen(needle);
    for (; *hay; hay++)
        if (strncasecmp(hay, needle, n) == 0)
            return true;
    return false;
}
