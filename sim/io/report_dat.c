/*
 * report_dat.c: the .dat files `fsdpsim report` plots (see report_dat.h).
 */
#include "report_dat.h"
#include "xalloc.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/*
 * What each .dat must look like before gnuplot sees it: the column header
 * fsdpsim simulate writes, then rows of exactly that many fields.  The
 * timeline's fields 2 (stream) and 4 (kind) are names, every other field a
 * finite number.  At least one row.
 */
static const char *const dat_header[] = {
    "# stream_index stream op kind unit iter micro start_us end_us bytes",
    "# t_us allocated_bytes reserved_bytes"};
static const char *const dat_flag[] = {"--timeline", "--memory"};
static const char *const dat_what[] = {"a timeline .dat", "a memory .dat"};

const char *
report_dat_flag(enum report_dat_kind kind)
{
    return dat_flag[kind];
}

const char *
report_dat_what(enum report_dat_kind kind)
{
    return dat_what[kind];
}

static int
is_number(const char *s, size_t n)
{
    char buf[64];
    if (n == 0 || n >= sizeof buf)
        return 0;
    memcpy(buf, s, n);
    buf[n] = '\0';
    char *end;
    double v = strtod(buf, &end);
    return *end == '\0' && isfinite(v);
}

int
report_dat_check(const char *text, enum report_dat_kind kind,
                 const char *path, double *last_us, char **cause)
{
    char *msg = NULL;
    int columns = 0, rows = 0, line_no = 0;
    for (const char *line = text; *line;) {
        const char *nl = strchr(line, '\n');
        size_t len = nl ? (size_t)(nl - line) : strlen(line);
        /* The next line starts past this one's end, whatever is trimmed
         * (a last line "x\r" without '\n' must not be read again). */
        const char *next = nl ? nl + 1 : line + len;
        line_no++;
        if (len > 0 && line[len - 1] == '\r')
            len--;
        if (len > 0 && line[0] == '#') {
            for (int other = 0; other < 2 && columns == 0; other++) {
                size_t hl = strlen(dat_header[other]);
                if (len < hl || strncmp(line, dat_header[other], hl) != 0)
                    continue;
                if (other != (int)kind) {
                    msg = xasprintf("%s %s:%d: this is %s, not %s",
                                    dat_flag[kind], path, line_no,
                                    dat_what[other], dat_what[kind]);
                    goto out;
                }
                for (size_t i = 1; i < len; i++)
                    if (line[i] != ' ' && line[i - 1] == ' ')
                        columns++;
            }
        } else {
            int fields = 0;
            size_t i = 0;
            while (i < len) {
                while (i < len && (line[i] == ' ' || line[i] == '\t'))
                    i++;
                if (i == len)
                    break;
                size_t start = i;
                while (i < len && line[i] != ' ' && line[i] != '\t')
                    i++;
                int name = kind == 0 && (fields == 1 || fields == 3);
                if (!name && !is_number(line + start, i - start)) {
                    msg = xasprintf("%s %s:%d: field %d is not a number "
                                    "(is it %s from fsdpsim simulate?)",
                                    dat_flag[kind], path, line_no, fields + 1,
                                    dat_what[kind]);
                    goto out;
                }
                if (fields == (kind == 0 ? 8 : 0)) {
                    double t = strtod(line + start, NULL);
                    if (t > *last_us)
                        *last_us = t;
                }
                fields++;
            }
            if (fields > 0 && columns == 0) {
                msg = xasprintf("%s %s:%d: data before the column header "
                                "'%s' (is it %s from fsdpsim simulate?)",
                                dat_flag[kind], path, line_no,
                                dat_header[kind], dat_what[kind]);
                goto out;
            }
            if (fields > 0 && fields != columns) {
                msg = xasprintf("%s %s:%d: %d fields, the header names %d",
                                dat_flag[kind], path, line_no, fields,
                                columns);
                goto out;
            }
            rows += fields > 0;
        }
        line = next;
    }
    if (columns == 0)
        msg = xasprintf("%s %s: no column header '%s' (is it %s from "
                        "fsdpsim simulate?)", dat_flag[kind], path,
                        dat_header[kind], dat_what[kind]);
    else if (rows == 0)
        msg = xasprintf("%s %s: no rows to plot", dat_flag[kind], path);
out:
    *cause = msg;
    return msg == NULL ? 0 : -1;
}
