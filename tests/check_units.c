/*
 * check_units.c: tests for units.c, quantities with units.
 *
 * Every unit of every kind is parsed once and compared with its factor
 * written out by hand; then the edges (bare 0, whitespace, the largest
 * accepted magnitude) and every error message, word for word, since those
 * messages reach users through the model and topology parsers unchanged.
 * Values that are exact in binary (integers below 2^53, products of them
 * with powers of two) are compared exactly; the ones that go through a
 * decimal fraction ("1.5GB", "0.1s") with a relative tolerance.
 */
#include "units.h"
#include "check_main.h"

#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Relative slack for values that pass through a decimal fraction: strtod
 * rounds once and the unit factor once more, so two ulps (~4.4e-16) would
 * do; 1e-12 leaves room without hiding a wrong factor (the smallest factor
 * step between units is 1000/1024, a 2.4% change). */
#define REL_TOL 1e-12

typedef int (*parse_fn)(const char *, double *, char **);

/* Parse s with fn; the parse must succeed and give exactly want. */
static void
expect_exact(parse_fn fn, const char *s, double want)
{
    double v = -1;
    char *cause = NULL;
    int rc = fn(s, &v, &cause);
    ck_assert_msg(rc == 0, "'%s' rejected: %s", s, cause ? cause : "?");
    ck_assert_ptr_null(cause);
    ck_assert_msg(v == want, "'%s' gave %.17g, want %.17g", s, v, want);
}

/* Parse s with fn; the parse must succeed within REL_TOL of want. */
static void
expect_near(parse_fn fn, const char *s, double want)
{
    double v = -1;
    char *cause = NULL;
    int rc = fn(s, &v, &cause);
    ck_assert_msg(rc == 0, "'%s' rejected: %s", s, cause ? cause : "?");
    ck_assert_double_eq_tol(v, want, REL_TOL * want);
}

/* Parse s with fn; the parse must fail with exactly the message msg and
 * leave the output untouched. */
static void
expect_error(parse_fn fn, const char *s, const char *msg)
{
    double v = 42;
    char *cause = NULL;
    int rc = fn(s, &v, &cause);
    ck_assert_msg(rc == -1, "'%s' accepted as %.17g", s, v);
    ck_assert_ptr_nonnull(cause);
    ck_assert_str_eq(cause, msg);
    ck_assert_double_eq(v, 42);
    free(cause);
}

static void
expect_count(const char *s, int64_t lo, int64_t hi, int64_t want)
{
    int64_t v = -1;
    char *cause = NULL;
    int rc = units_parse_count(s, lo, hi, &v, &cause);
    ck_assert_msg(rc == 0, "'%s' rejected: %s", s, cause ? cause : "?");
    ck_assert_ptr_null(cause);
    ck_assert_int_eq(v, want);
}

static void
expect_count_error(const char *s, int64_t lo, int64_t hi, const char *msg)
{
    int64_t v = 42;
    char *cause = NULL;
    int rc = units_parse_count(s, lo, hi, &v, &cause);
    ck_assert_msg(rc == -1, "'%s' accepted as %lld", s, (long long)v);
    ck_assert_ptr_nonnull(cause);
    ck_assert_str_eq(cause, msg);
    ck_assert_int_eq(v, 42);
    free(cause);
}

static void
expect_bool(const char *s, bool want)
{
    bool v = !want;
    char *cause = NULL;
    ck_assert_msg(units_parse_bool(s, &v, &cause) == 0, "'%s' rejected", s);
    ck_assert_ptr_null(cause);
    ck_assert_msg(v == want, "'%s' gave %d", s, (int)v);
}

/* ---- core ---------------------------------------------------------- */

START_TEST(test_units_bytes_every_unit)
{
    /* Decimal prefixes are powers of 1000, binary ones powers of 1024. */
    expect_exact(units_parse_bytes, "1B", 1);
    expect_exact(units_parse_bytes, "3KB", 3e3);
    expect_exact(units_parse_bytes, "3MB", 3e6);
    expect_exact(units_parse_bytes, "3GB", 3e9);
    expect_exact(units_parse_bytes, "3TB", 3e12);
    /* 3 * 2^10 = 3072 */
    expect_exact(units_parse_bytes, "3KiB", 3072);
    /* 3 * 2^20 = 3145728 */
    expect_exact(units_parse_bytes, "3MiB", 3145728);
    /* 80 * 2^30 = 85899345920, an H100's memory */
    expect_exact(units_parse_bytes, "80GiB", 85899345920.0);
    /* 2 * 2^40 = 2199023255552 */
    expect_exact(units_parse_bytes, "2TiB", 2199023255552.0);
    /* 1.5 is exact in binary: 1.5 * 2^30 = 1610612736 */
    expect_exact(units_parse_bytes, "1.5GiB", 1610612736.0);
    /* 0.1 is not: 0.1 * 1e9 = 1e8 within rounding */
    expect_near(units_parse_bytes, "0.1GB", 1e8);
    /* 1e3 written in exponent form times 1 MiB: 1000 * 1048576 */
    expect_exact(units_parse_bytes, "1e3MiB", 1048576000.0);
}
END_TEST

START_TEST(test_units_bandwidth_every_unit)
{
    expect_exact(units_parse_bandwidth, "7Bps", 7);
    expect_exact(units_parse_bandwidth, "7KBps", 7e3);
    expect_exact(units_parse_bandwidth, "7MBps", 7e6);
    /* 25 * 1e9 = 2.5e10 B/s, one NVLink direction of an older part */
    expect_exact(units_parse_bandwidth, "25GBps", 2.5e10);
    expect_exact(units_parse_bandwidth, "7TBps", 7e12);
    /* 7 * 1024 = 7168 */
    expect_exact(units_parse_bandwidth, "7KiBps", 7168);
    /* 7 * 1048576 = 7340032 */
    expect_exact(units_parse_bandwidth, "7MiBps", 7340032);
    /* 7 * 1073741824 = 7516192768 */
    expect_exact(units_parse_bandwidth, "7GiBps", 7516192768.0);
    /* A lower-case b means bits: 8 bps = 1 B/s. */
    expect_exact(units_parse_bandwidth, "8bps", 1);
    /* 8 Kbps = 8000 bit/s = 1000 B/s */
    expect_exact(units_parse_bandwidth, "8Kbps", 1e3);
    /* 8 Mbps = 1e6 B/s */
    expect_exact(units_parse_bandwidth, "8Mbps", 1e6);
    /* 400 Gbps (one NDR port) = 400e9 / 8 = 5e10 B/s */
    expect_exact(units_parse_bandwidth, "400Gbps", 5e10);
    /* 8 Tbps = 1e12 B/s */
    expect_exact(units_parse_bandwidth, "8Tbps", 1e12);
    /* 1.1 GB/s is not exact in binary: 1.1e9 within rounding */
    expect_near(units_parse_bandwidth, "1.1GBps", 1.1e9);
}
END_TEST

START_TEST(test_units_time_every_unit)
{
    /* Time parses to nanoseconds. */
    expect_exact(units_parse_time_ns, "5ns", 5);
    /* 2 us = 2 * 1e3 ns = 2000 ns */
    expect_exact(units_parse_time_ns, "2us", 2000);
    /* 3 ms = 3e6 ns */
    expect_exact(units_parse_time_ns, "3ms", 3e6);
    /* 4 s = 4e9 ns */
    expect_exact(units_parse_time_ns, "4s", 4e9);
    /* 2.5 us = 2500 ns (2.5 exact in binary) */
    expect_exact(units_parse_time_ns, "2.5us", 2500);
    /* 0.1 s = 1e8 ns within rounding */
    expect_near(units_parse_time_ns, "0.1s", 1e8);
}
END_TEST

START_TEST(test_units_flops_every_unit)
{
    expect_exact(units_parse_flops, "9FLOPS", 9);
    expect_exact(units_parse_flops, "9GFLOPS", 9e9);
    /* 312 TFLOPS (A100 bf16 dense) = 312 * 1e12 = 3.12e14 FLOP/s */
    expect_exact(units_parse_flops, "312TFLOPS", 3.12e14);
    /* 2 PFLOPS = 2e15 */
    expect_exact(units_parse_flops, "2PFLOPS", 2e15);
    /* 19.5 TFLOPS (A100 fp32): 19.5 exact in binary, times 1e12 */
    expect_exact(units_parse_flops, "19.5TFLOPS", 1.95e13);
    /* 989.4 TFLOPS goes through a decimal fraction */
    expect_near(units_parse_flops, "989.4TFLOPS", 9.894e14);
}
END_TEST

START_TEST(test_units_bare_zero)
{
    /* Only 0 may be written without a unit, in any of its spellings. */
    expect_exact(units_parse_bytes, "0", 0);
    expect_exact(units_parse_bandwidth, "0", 0);
    expect_exact(units_parse_time_ns, "0", 0);
    expect_exact(units_parse_flops, "0", 0);
    expect_exact(units_parse_bytes, "0.0", 0);
    expect_exact(units_parse_time_ns, "0e5", 0);
    /* 0 with a unit is 0 too. */
    expect_exact(units_parse_bytes, "0GiB", 0);
    expect_exact(units_parse_bandwidth, "0Gbps", 0);
}
END_TEST

START_TEST(test_units_whitespace)
{
    /* Blanks around the number and between number and unit are ignored:
     * 80 * 2^30 = 85899345920 */
    expect_exact(units_parse_bytes, " 80GiB", 85899345920.0);
    expect_exact(units_parse_bytes, "80 GiB", 85899345920.0);
    expect_exact(units_parse_bytes, "80GiB \t", 85899345920.0);
    /* 2 us = 2000 ns */
    expect_exact(units_parse_time_ns, "\t2 us ", 2000);
    expect_exact(units_parse_bandwidth, "0 ", 0);
}
END_TEST

START_TEST(test_units_count)
{
    /* Plain integers. */
    expect_count("4096", 0, INT64_MAX, 4096);
    expect_count("0", 0, 10, 0);
    /* 1e8 = 100000000 */
    expect_count("1e8", 0, INT64_MAX, 100000000);
    /* M = 1e6: 100 * 1e6 = 1e8 */
    expect_count("100M", 0, INT64_MAX, 100000000);
    /* B = 1e9 (as in "7B parameters"): 7e9 */
    expect_count("7B", 0, INT64_MAX, INT64_C(7000000000));
    /* G is a synonym of B: 5e9 */
    expect_count("5G", 0, INT64_MAX, INT64_C(5000000000));
    /* T = 1e12: 2e12 */
    expect_count("2T", 0, INT64_MAX, INT64_C(2000000000000));
    /* K and k = 1e3 */
    expect_count("3K", 0, INT64_MAX, 3000);
    expect_count("3k", 0, INT64_MAX, 3000);
    /* A fraction that the suffix makes whole: 1.5 * 1e3 = 1500 */
    expect_count("1.5K", 0, INT64_MAX, 1500);
    /* 6.7 * 1e9 = 6.7e9, whole after rounding of the product */
    expect_count("6.7B", 0, INT64_MAX, INT64_C(6700000000));
    /* Surrounding blanks are ignored. */
    expect_count(" 12 ", 0, 100, 12);
}
END_TEST

START_TEST(test_units_real)
{
    double v = -1;
    char *cause = NULL;
    /* 0.5 is exact in binary. */
    ck_assert_int_eq(units_parse_real("0.5", 0, 1, &v, &cause), 0);
    ck_assert_double_eq(v, 0.5);
    /* 1e-3 goes through a decimal fraction. */
    ck_assert_int_eq(units_parse_real("1e-3", 0, 1, &v, &cause), 0);
    ck_assert_double_eq_tol(v, 1e-3, REL_TOL * 1e-3);
    ck_assert_ptr_null(cause);
}
END_TEST

START_TEST(test_units_bool)
{
    expect_bool("true", true);
    expect_bool("yes", true);
    expect_bool("on", true);
    expect_bool("1", true);
    expect_bool("TRUE", true);
    expect_bool("Yes", true);
    expect_bool("oN", true);
    expect_bool("false", false);
    expect_bool("no", false);
    expect_bool("off", false);
    expect_bool("0", false);
    expect_bool("FALSE", false);
    expect_bool("No", false);
    expect_bool("OFF", false);
}
END_TEST

START_TEST(test_units_fmt_bytes)
{
    char buf[32];
    /* Below 1 KiB: whole bytes, no decimals. */
    ck_assert_str_eq(units_fmt_bytes(buf, sizeof buf, 0), "0 B");
    ck_assert_str_eq(units_fmt_bytes(buf, sizeof buf, 512), "512 B");
    ck_assert_str_eq(units_fmt_bytes(buf, sizeof buf, 1023), "1023 B");
    /* 1024 B = 1 KiB, printed with two decimals. */
    ck_assert_str_eq(units_fmt_bytes(buf, sizeof buf, 1024), "1.00 KiB");
    /* 1536 / 1024 = 1.5 */
    ck_assert_str_eq(units_fmt_bytes(buf, sizeof buf, 1536), "1.50 KiB");
    /* 3 * 2^20 */
    ck_assert_str_eq(units_fmt_bytes(buf, sizeof buf, 3145728), "3.00 MiB");
    /* 85899345920 / 2^30 = 80 */
    ck_assert_str_eq(units_fmt_bytes(buf, sizeof buf, 85899345920.0),
                     "80.00 GiB");
    /* 2^41 / 2^40 = 2 */
    ck_assert_str_eq(units_fmt_bytes(buf, sizeof buf, 2199023255552.0),
                     "2.00 TiB");
    /* 2^50 = 1 PiB */
    ck_assert_str_eq(units_fmt_bytes(buf, sizeof buf, ldexp(1, 50)),
                     "1.00 PiB");
    /* Negative sizes scale by magnitude: -1536 B = -1.5 KiB. */
    ck_assert_str_eq(units_fmt_bytes(buf, sizeof buf, -1536), "-1.50 KiB");
    /* The result is the buffer passed in. */
    ck_assert_ptr_eq(units_fmt_bytes(buf, sizeof buf, 1), buf);
}
END_TEST

START_TEST(test_units_fmt_time)
{
    char buf[32];
    /* 1 s and above, and exactly 0, print in seconds with 3 decimals. */
    ck_assert_str_eq(units_fmt_time_s(buf, sizeof buf, 0), "0.000 s");
    ck_assert_str_eq(units_fmt_time_s(buf, sizeof buf, 1), "1.000 s");
    ck_assert_str_eq(units_fmt_time_s(buf, sizeof buf, 12.5), "12.500 s");
    /* [1 ms, 1 s): 0.25 s = 250 ms */
    ck_assert_str_eq(units_fmt_time_s(buf, sizeof buf, 0.25), "250.000 ms");
    /* 1e-3 s = 1 ms */
    ck_assert_str_eq(units_fmt_time_s(buf, sizeof buf, 1e-3), "1.000 ms");
    /* Below 1 ms: 2.5e-6 s = 2.5 us */
    ck_assert_str_eq(units_fmt_time_s(buf, sizeof buf, 2.5e-6), "2.500 us");
    /* Negative values scale by magnitude: -0.25 s = -250 ms. */
    ck_assert_str_eq(units_fmt_time_s(buf, sizeof buf, -0.25),
                     "-250.000 ms");
    ck_assert_ptr_eq(units_fmt_time_s(buf, sizeof buf, 1), buf);
}
END_TEST

/* ---- limits -------------------------------------------------------- */

START_TEST(test_units_largest_value)
{
    /* The largest accepted magnitude is 1e21 in base units, before and
     * after the unit factor. */
    expect_exact(units_parse_bytes, "1e21B", 1e21);
    /* 1e9 * 1e12 = 1e21 */
    expect_exact(units_parse_bytes, "1e9TB", 1e21);
    expect_error(units_parse_bytes, "1.1e21B",
                 "'1.1e21B' is out of range for a size");
    /* 2e9 * 1e12 = 2e21 > 1e21: caught after the multiplication. */
    expect_error(units_parse_bytes, "2e9TB",
                 "'2e9TB' is out of range for a size");
    expect_error(units_parse_flops, "1e7PFLOPS",
                 "'1e7PFLOPS' is out of range for a compute rate");
}
END_TEST

START_TEST(test_units_count_bounds)
{
    /* lo and hi are inclusive. */
    expect_count("1", 1, 10, 1);
    expect_count("10", 1, 10, 10);
    expect_count_error("0", 1, 10, "'0' is out of range (allowed 1 to 10)");
    expect_count_error("11", 1, 10,
                       "'11' is out of range (allowed 1 to 10)");
    /* 2T = 2e12 > INT32_MAX = 2147483647 */
    expect_count_error("2T", 1, INT32_MAX,
                       "'2T' is out of range (allowed 1 to 2147483647)");
    /* 2^53 = 9007199254740992 is the largest count a double holds
     * exactly, and it round-trips. */
    expect_count("9007199254740992", 0, INT64_MAX,
                 INT64_C(9007199254740992));
}
END_TEST

START_TEST(test_units_real_bounds)
{
    double v = 42;
    char *cause = NULL;
    /* Bounds are inclusive. */
    ck_assert_int_eq(units_parse_real("1", 0, 1, &v, &cause), 0);
    ck_assert_double_eq(v, 1);
    v = 42;
    ck_assert_int_eq(units_parse_real("1.5", 0, 1, &v, &cause), -1);
    ck_assert_str_eq(cause, "'1.5' is out of range (allowed 0 to 1)");
    ck_assert_double_eq(v, 42);
    free(cause);
}
END_TEST

/* ---- errors -------------------------------------------------------- */

START_TEST(test_units_missing_unit)
{
    /* A bare non-zero number names the example of its kind. */
    expect_error(units_parse_bandwidth, "25",
                 "missing unit in '25' (write e.g. '25GBps')");
    expect_error(units_parse_bytes, "80",
                 "missing unit in '80' (write e.g. '80GiB')");
    expect_error(units_parse_time_ns, "2.5",
                 "missing unit in '2.5' (write e.g. '2us')");
    expect_error(units_parse_flops, "1e12",
                 "missing unit in '1e12' (write e.g. '312TFLOPS')");
}
END_TEST

START_TEST(test_units_unknown_unit)
{
    /* The message lists every unit of the kind, in table order. */
    expect_error(units_parse_bandwidth, "25GBs",
                 "unknown unit 'GBs' in '25GBs' (a bandwidth takes one of: "
                 "Bps, KBps, MBps, GBps, TBps, KiBps, MiBps, GiBps, bps, "
                 "Kbps, Mbps, Gbps, Tbps)");
    expect_error(units_parse_bytes, "80Gb",
                 "unknown unit 'Gb' in '80Gb' (a size takes one of: "
                 "B, KB, MB, GB, TB, KiB, MiB, GiB, TiB)");
    expect_error(units_parse_time_ns, "3min",
                 "unknown unit 'min' in '3min' (a time takes one of: "
                 "ns, us, ms, s)");
    expect_error(units_parse_flops, "5TFLOP",
                 "unknown unit 'TFLOP' in '5TFLOP' (a compute rate takes "
                 "one of: FLOPS, GFLOPS, TFLOPS, PFLOPS)");
    /* Units are case-sensitive: b is bits, B bytes, so "gib" is wrong. */
    expect_error(units_parse_bytes, "80gib",
                 "unknown unit 'gib' in '80gib' (a size takes one of: "
                 "B, KB, MB, GB, TB, KiB, MiB, GiB, TiB)");
    /* Trailing blanks are not part of the quoted unit. */
    expect_error(units_parse_time_ns, "2 sec ",
                 "unknown unit 'sec' in '2 sec ' (a time takes one of: "
                 "ns, us, ms, s)");
    /* A unit of another kind is unknown here. */
    expect_error(units_parse_time_ns, "2GB",
                 "unknown unit 'GB' in '2GB' (a time takes one of: "
                 "ns, us, ms, s)");
}
END_TEST

START_TEST(test_units_bad_numbers)
{
    expect_error(units_parse_bytes, "-5GB",
                 "'-5GB' is negative (a size must be >= 0)");
    expect_error(units_parse_bandwidth, "-1Gbps",
                 "'-1Gbps' is negative (a bandwidth must be >= 0)");
    expect_error(units_parse_time_ns, "-2us",
                 "'-2us' is negative (a time must be >= 0)");
    expect_error(units_parse_flops, "-1TFLOPS",
                 "'-1TFLOPS' is negative (a compute rate must be >= 0)");
    expect_error(units_parse_bytes, "nan",
                 "'nan' is out of range for a size");
    expect_error(units_parse_bytes, "NaNGB",
                 "'NaNGB' is out of range for a size");
    expect_error(units_parse_bandwidth, "inf",
                 "'inf' is out of range for a bandwidth");
    expect_error(units_parse_time_ns, "infinitys",
                 "'infinitys' is out of range for a time");
    expect_error(units_parse_time_ns, "-inf",
                 "'-inf' is out of range for a time");
    /* strtod overflows to HUGE_VAL with ERANGE. */
    expect_error(units_parse_flops, "1e400FLOPS",
                 "'1e400FLOPS' is out of range for a compute rate");
    expect_error(units_parse_bytes, "",
                 "empty size (write a number with its unit)");
    expect_error(units_parse_bandwidth, "  \t",
                 "empty bandwidth (write a number with its unit)");
    expect_error(units_parse_bytes, "GiB",
                 "'GiB' is not a number (size expected)");
    expect_error(units_parse_time_ns, "fast",
                 "'fast' is not a number (time expected)");
    expect_error(units_parse_flops, "xTFLOPS",
                 "'xTFLOPS' is not a number (compute rate expected)");
}
END_TEST

/* C's hexadecimal floats are refused, not read as 16 or 8 (strtod would
 * take both). */
START_TEST(test_units_hex_refused)
{
    expect_error(units_parse_bytes, "0x10GB",
                 "'0x10GB' is not a decimal number (size expected; write "
                 "e.g. 16, not 0x10)");
    expect_error(units_parse_bandwidth, "0x1p3Gbps",
                 "'0x1p3Gbps' is not a decimal number (bandwidth expected; "
                 "write e.g. 16, not 0x10)");
    ck_assert(units_is_hex_float("0x10"));
    ck_assert(units_is_hex_float(" -0X1p3"));
    ck_assert(!units_is_hex_float("10"));
    ck_assert(!units_is_hex_float("0"));
    ck_assert(!units_is_hex_float("x10"));
    int64_t n = -1;
    char *cause = NULL;
    ck_assert_int_eq(units_parse_count("-0X2", 0, 10, &n, &cause), -1);
    ck_assert_int_eq(n, -1);
    free(cause);
}
END_TEST

/* nccl-tests' sizes are whole bytes: 1.5K is 1536 bytes, 1.5 is none,
 * and a hexadecimal float is refused like the other numbers. */
START_TEST(test_units_nccl_size)
{
    double b = 0;
    ck_assert_int_eq(units_parse_nccl_size("1.5K", &b), 0);
    ck_assert_double_eq(b, 1536);
    ck_assert_int_eq(units_parse_nccl_size("8GB", &b), 0);
    ck_assert_double_eq(b, 8.0 * 1073741824);
    ck_assert_int_eq(units_parse_nccl_size("1.5", &b), -1);
    ck_assert_int_eq(units_parse_nccl_size("1.3K", &b), -1); /* 1331.2 */
    ck_assert_int_eq(units_parse_nccl_size("0x10", &b), -1);
    ck_assert_int_eq(units_parse_nccl_size("nan", &b), -1);
}
END_TEST

START_TEST(test_units_count_errors)
{
    /* Fractions. */
    expect_count_error("2.5", 0, 100, "'2.5' is not a whole number");
    /* 1.0005 * 1e3 = 1000.5 */
    expect_count_error("1.0005K", 0, INT64_MAX,
                       "'1.0005K' is not a whole number");
    /* Unknown suffixes, binary ones included. */
    expect_count_error("7X", 0, 100,
                       "'7X' is not a whole number (write e.g. '4096', "
                       "'1e8' or '100M')");
    expect_count_error("4Ki", 0, INT64_MAX,
                       "'4Ki' is not a whole number (write e.g. '4096', "
                       "'1e8' or '100M')");
    expect_count_error("-1", 0, 100,
                       "'-1' is negative (a count must be >= 0)");
    expect_count_error("nan", 0, 100, "'nan' is out of range for a count");
    expect_count_error("", 0, 100,
                       "empty count (write a number with its unit)");
    expect_count_error("many", 0, 100,
                       "'many' is not a number (count expected)");
}
END_TEST

START_TEST(test_units_real_errors)
{
    double v = 42;
    char *cause = NULL;
    ck_assert_int_eq(units_parse_real("0.5x", 0, 1, &v, &cause), -1);
    ck_assert_str_eq(cause, "'0.5x' is not a plain number");
    free(cause);
    cause = NULL;
    ck_assert_int_eq(units_parse_real("-0.5", -1, 1, &v, &cause), -1);
    ck_assert_str_eq(cause, "'-0.5' is negative (a number must be >= 0)");
    free(cause);
    ck_assert_double_eq(v, 42);
}
END_TEST

START_TEST(test_units_bool_errors)
{
    const char *bad[] = {"2", "", "y", "truee", " true", "enabled"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        bool v = true;
        char *cause = NULL;
        char want[64];
        ck_assert_int_eq(units_parse_bool(bad[i], &v, &cause), -1);
        snprintf(want, sizeof want,
                 "'%s' is not a boolean (write true or false)", bad[i]);
        ck_assert_str_eq(cause, want);
        ck_assert(v);
        free(cause);
    }
}
END_TEST

static Suite *
units_suite(void)
{
    Suite *s = suite_create("units");

    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_units_bytes_every_unit);
    tcase_add_test(tc, test_units_bandwidth_every_unit);
    tcase_add_test(tc, test_units_time_every_unit);
    tcase_add_test(tc, test_units_flops_every_unit);
    tcase_add_test(tc, test_units_bare_zero);
    tcase_add_test(tc, test_units_whitespace);
    tcase_add_test(tc, test_units_count);
    tcase_add_test(tc, test_units_real);
    tcase_add_test(tc, test_units_bool);
    tcase_add_test(tc, test_units_fmt_bytes);
    tcase_add_test(tc, test_units_fmt_time);
    suite_add_tcase(s, tc);

    tc = tcase_create("limits");
    tcase_add_test(tc, test_units_largest_value);
    tcase_add_test(tc, test_units_count_bounds);
    tcase_add_test(tc, test_units_real_bounds);
    suite_add_tcase(s, tc);

    tc = tcase_create("errors");
    tcase_add_test(tc, test_units_missing_unit);
    tcase_add_test(tc, test_units_unknown_unit);
    tcase_add_test(tc, test_units_bad_numbers);
    tcase_add_test(tc, test_units_hex_refused);
    tcase_add_test(tc, test_units_nccl_size);
    tcase_add_test(tc, test_units_count_errors);
    tcase_add_test(tc, test_units_real_errors);
    tcase_add_test(tc, test_units_bool_errors);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    return tu_main(units_suite());
}
