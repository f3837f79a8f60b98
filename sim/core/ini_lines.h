/*
 * ini_lines.h: feeding libinih one line at a time, shared by the model
 * format (model_ini.c) and the topology format (topo.c).
 *
 * Debian's libinih is built without INI_HANDLER_LINENO, so a handler is not
 * told which line it is called for, and ini_parse_string() gives only the
 * line of the first error.  ini_lines_parse() hands libinih one line per
 * call instead, so `line` below is the line the handler is working on.  It
 * also stops at a line longer than libinih's buffer, which libinih would
 * otherwise split silently into two lines, and ini_lines_value() cuts the
 * '#' comments that libinih leaves in values (it only knows ';').
 *
 * The two formats differ in details a user can see: whether indentation is
 * dropped or reported, where a '#' comment may start, and so how long a
 * line may be.  The INI_LINES_* flags keep each format's own rules.
 *
 * Ownership: struct ini_lines borrows the text for as long as it reads it;
 * the strings returned by ini_lines_value() and ini_lines_trim() are owned
 * by the caller.
 */
#ifndef FSDPSIM_INI_LINES_H
#define FSDPSIM_INI_LINES_H

#include <ini.h>
#include <stdbool.h>
#include <stddef.h>

/* Hand indented lines to libinih as they are.  libinih reads one as the
 * continuation of the value above it, so the caller must report them
 * (ini_lines_indented()).  Without this flag the indentation is dropped. */
#define INI_LINES_KEEP_INDENT 0x1u
/* Hand each line over with its '\n', as fgets() would; a line then has one
 * character less room in libinih's buffer. */
#define INI_LINES_KEEP_NEWLINE 0x2u
/* '#' starts a comment anywhere in a value.  Without this flag it does so
 * only at the start of the value or after a blank, so "GPU#2" is a value. */
#define INI_LINES_HASH_ANYWHERE 0x4u

/* Called with each line as libinih will get it, before libinih sees it. */
typedef void (*ini_lines_hook)(void *user, const char *line);

struct ini_lines {
    const char *cursor;     /* next unread byte of the text */
    const char *line_start; /* first byte of the line last read, before any
                             * indentation is dropped; NULL before line 1 */
    int line;               /* number of the line last read, from 1 */
    unsigned flags;         /* INI_LINES_* */
    ini_lines_hook on_line; /* or NULL */
    void *user;             /* for on_line */
    int max_len;            /* the longest line libinih takes, characters
                             * without the '\n' */
    bool too_long;          /* reading stopped at `line`: it is longer
                             * than max_len */
    size_t long_len;        /* that line's length, characters without the
                             * '\n' (and without dropped indentation) */
};

void ini_lines_init(struct ini_lines *r, const char *text, unsigned flags);
int ini_lines_parse(struct ini_lines *r, ini_handler on_entry,
                    ini_lines_hook on_line, void *user);
bool ini_lines_indented(const struct ini_lines *r);
char *ini_lines_value(const struct ini_lines *r, const char *value);
char *ini_lines_trim(const char *s, size_t n);

#endif
