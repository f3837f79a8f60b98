/*
 * json_out.h: writing JSON strings safely (quotes, backslashes and control
 * characters escaped), for the hand-formatted JSON writers whose layout
 * and number formats must stay byte-stable.
 */
#ifndef FSDPSIM_JSON_OUT_H
#define FSDPSIM_JSON_OUT_H

#include <stdio.h>

void json_out_string(FILE *out, const char *s);

#endif
