/*
 * ini_lines.c: the line reader both INI formats give libinih (see
 * ini_lines.h).
 *
 * Files are hand-written and a few dozen lines long, so each line is found
 * with strchr() and copied once; nothing here is tuned for speed.
 */
#include "ini_lines.h"
#include "xalloc.h"

#include <ctype.h>
#include <string.h>

/* Start reading TEXT (borrowed, NUL-terminated) with FLAGS (INI_LINES_*). */
void
ini_lines_init(struct ini_lines *r, const char *text, unsigned flags)
{
    memset(r, 0, sizeof *r);
    r->cursor = text;
    r->flags = flags;
}

/*
 * libinih reader: copies the next line into BUF (SIZE bytes, libinih's
 * buffer) and counts it.  A line that does not fit ends the parse with
 * too_long set: libinih would read its tail as a line of its own, and
 * going on after a line cut in two would only add errors about text the
 * user did not write.
 */
static char *
read_line(char *buf, int size, void *stream)
{
    struct ini_lines *r = stream;
    bool keep_nl = (r->flags & INI_LINES_KEEP_NEWLINE) != 0;
    r->max_len = size - 1 - keep_nl;
    if (*r->cursor == '\0')
        return NULL;
    const char *s = r->cursor;
    const char *nl = strchr(s, '\n');
    const char *end = nl ? nl : s + strlen(s);
    r->line++;
    r->line_start = s;
    r->cursor = nl ? nl + 1 : end;
    if (!(r->flags & INI_LINES_KEEP_INDENT))
        while (s < end && (*s == ' ' || *s == '\t'))
            s++;
    /* Bytes handed over; libinih needs one more for the NUL. */
    size_t n = (size_t)(end - s) + (keep_nl && nl != NULL);
    if (n + 1 > (size_t)size) {
        r->too_long = true;
        r->long_len = (size_t)(end - s);
        return NULL;
    }
    memcpy(buf, s, n);
    buf[n] = '\0';
    if (r->on_line != NULL)
        r->on_line(r->user, buf);
    return buf;
}

/*
 * Run libinih over R's text: ON_ENTRY gets every "key = value" and ON_LINE
 * (may be NULL) every line, both with USER; while either runs, r->line is
 * the number of its line.  Returns what ini_parse_stream() returns: 0, or
 * the first line libinih could not read or ON_ENTRY refused.  A line too
 * long for libinih is not among those: it stops the parse with
 * r->too_long set and r->line at its number, for the caller to word.
 */
int
ini_lines_parse(struct ini_lines *r, ini_handler on_entry,
                ini_lines_hook on_line, void *user)
{
    r->on_line = on_line;
    r->user = user;
    return ini_parse_stream(read_line, r, on_entry, user);
}

/* Whether the line last read was indented (only INI_LINES_KEEP_INDENT hands
 * such a line over as it is). */
bool
ini_lines_indented(const struct ini_lines *r)
{
    return r->line_start != NULL &&
           (*r->line_start == ' ' || *r->line_start == '\t');
}

/*
 * VALUE as libinih gave it, with any '#' comment cut off (where one may
 * start depends on INI_LINES_HASH_ANYWHERE) and blanks trimmed.  Caller
 * frees.
 */
char *
ini_lines_value(const struct ini_lines *r, const char *value)
{
    const char *c = value;
    if (r->flags & INI_LINES_HASH_ANYWHERE)
        c = strchr(value, '#');
    else
        for (; (c = strchr(c, '#')) != NULL; c++)
            if (c == value || isspace((unsigned char)c[-1]))
                break;
    return ini_lines_trim(value, c ? (size_t)(c - value) : strlen(value));
}

/* The first N bytes of S without leading and trailing blanks (isspace()).
 * Caller frees. */
char *
ini_lines_trim(const char *s, size_t n)
{
    while (n > 0 && isspace((unsigned char)*s)) {
        s++;
        n--;
    }
    while (n > 0 && isspace((unsigned char)s[n - 1]))
        n--;
    return xstrndup(s, n);
}
