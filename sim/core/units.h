/*
 * units.h: parsing and printing of quantities with units.
 *
 * Every quantity in a model, topology or run file and on the command line
 * carries its unit ("80GiB", "25GBps", "400Gbps", "2us", "312TFLOPS"); only 0
 * may be written bare.  Decimal prefixes are powers of 1000, binary ones
 * (Ki, Mi, Gi, Ti) powers of 1024, and a lower-case "b" in a rate means bits.
 *
 * All parsers return 0 on success and -1 on failure, in which case *cause
 * receives a message the caller owns and frees; it says what was wrong and
 * how to write it instead.  They reject NaN, infinities and negative values.
 */
#ifndef FSDPSIM_UNITS_H
#define FSDPSIM_UNITS_H

#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>

int units_parse_bytes(const char *s, double *bytes, char **cause);
int units_parse_bandwidth(const char *s, double *bytes_per_s, char **cause);
int units_parse_time_ns(const char *s, double *ns, char **cause);
int units_parse_flops(const char *s, double *flop_per_s, char **cause);

/* A whole count in [lo, hi]: "4096", "1e8", "100M", "7B", "2T" (decimal). */
int units_parse_count(const char *s, int64_t lo, int64_t hi, int64_t *out,
                      char **cause);
/* A plain real number in [lo, hi], no unit. */
int units_parse_real(const char *s, double lo, double hi, double *out,
                     char **cause);
/* true/false, yes/no, on/off, 1/0 (any case). */
int units_parse_bool(const char *s, bool *out, char **cause);

/* Microseconds as traces and timelines write them (the Trace Event
 * Format's ts and dur, fsdpsim's timeline columns) as integer
 * nanoseconds, rounded: how compare and the Kineto import read times. */
int64_t units_us_to_ns(double us);

/* Whether S (after blanks and a sign) is a C hexadecimal float such as
 * 0x10 or 0x1p3, which strtod reads but no fsdpsim number is written as:
 * every parser refuses it rather than take 0x10 for 16. */
bool units_is_hex_float(const char *s);

/* nccl-tests' own size syntax for -b/-e/-i: a number with an optional K,
 * M or G meaning powers of 1024 (and an optional B), whole bytes in
 * decimal; 0 or -1. */
int units_parse_nccl_size(const char *s, double *bytes);

/* Human-readable forms, written into buf (at least 32 bytes). */
const char *units_fmt_bytes(char *buf, size_t len, double bytes);
const char *units_fmt_time_s(char *buf, size_t len, double seconds);

#endif
