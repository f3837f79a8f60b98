/*
 * cmd_tune.c: `fsdpsim tune`, the FSDP settings with the best throughput
 * that fit a model on a cluster: this file parses the options and calls
 * the search (tune.c) and the printing, plot and report (tune_print.c).
 */
#define _POSIX_C_SOURCE 200809L
#include "cmd.h"
#include "cmd_search.h"
#include "search.h"
#include "setup.h"
#include "tune.h"
#include "tune_print.h"
#include "units.h"
#include "xalloc.h"

#include <stdlib.h>
#include <string.h>

#define TUNE_DEFAULT_MAX_ACCUM 8

static void
cmd_tune_help(FILE *out)
{
    fprintf(out,
            "usage: fsdpsim tune [simulate options] [--headroom 10%%] "
            "[--top N]\n"
            "                    [--max-grad-accum N] [--plot PREFIX] "
            "[--report FILE.html]\n"
            "                    [--jobs N]\n\n"
            "Search FSDP settings for the best throughput (tokens/s per "
            "GPU) that fits the\nmodel on the cluster with a memory "
            "headroom, and print the top settings, the\nwinner's PyTorch "
            "code and its throughput over min_num_params.  Searched:\n"
            "  auto_wrap_policy   transformer_auto_wrap_policy, and\n"
            "                     size_based_auto_wrap_policy at each "
            "min_num_params where\n"
            "                     PyTorch's policy draws different units\n"
            "  sharding_strategy  FULL_SHARD, SHARD_GRAD_OP, NO_SHARD, and "
            "DDP (the baseline,\n"
            "                     compared with the best FSDP setting);\n"
            "                     HYBRID_SHARD, _HYBRID_SHARD_ZERO2 on "
            "several nodes\n"
            "  checkpointing      none, full;  micro-batch 1, 2, 4, 8\n"
            "  accumulation       1, 2, 4, ... --max-grad-accum, with and "
            "without no_sync\n"
            "  backward_prefetch  BACKWARD_PRE, BACKWARD_POST;  "
            "limit_all_gathers true, false\n"
            "in stages: wrapping x sharding x checkpointing x micro-batch "
            "first, then the\nrest around the best 4, then the winner over "
            "every wrapping.  A setting fits\nwhen its reserved peak leaves "
            "the headroom free.  More accumulation raises\nthe tokens per "
            "step (the global batch): cap it with --max-grad-accum.\n\n"
            "options:\n"
            "  --headroom P             device memory kept free, e.g. "
            "10%% (default 10%%)\n"
            "  --top N                  settings listed (default %d)\n"
            "  --max-grad-accum N       most micro-batches per step tried "
            "(default %d)\n"
            "  --plot PREFIX            plot throughput against "
            "min_num_params:\n"
            "                           PREFIX-tune.png (gnuplot)\n"
            "  --term png|svg           image format (default png)\n"
            "  --report FILE.html       write a self-contained HTML "
            "report\n"
            "  -j, --jobs N             points simulated in parallel "
            "(default: online CPUs)\n"
            "  -h, --help               show this help\n\n"
            "simulate options (the base of every point; --param-dtype "
            "defaults to bf16):\n", TUNE_DEFAULT_TOP,
            TUNE_DEFAULT_MAX_ACCUM);
    setup_print_options(out, false);
    fprintf(out, "\nCtrl-C stops the search; nothing is written.\n"
            "exit status: 0 ok, 1 no setting fits, 2 bad input, 3 a file "
            "could not be\nwritten or gnuplot failed, 130 interrupted.\n");
}

struct tune_cli {
    const char *headroom, *top, *max_accum, *plot, *term, *report, *jobs;
};

static int
count_opt(const char *opt, const char *s, int64_t lo, int64_t hi,
          int64_t *out)
{
    char *cause = NULL;
    if (units_parse_count(s, lo, hi, out, &cause) == 0)
        return 0;
    cmd_errorf("tune", 0, "%s: %s", opt, cause);
    free(cause);
    return -1;
}

/* Split argv into tune's own options (*C, into *O and *top) and the base
 * simulate options (O->base, sized for ARGC + 2): CMD_RUN, or the exit
 * status after the help or the message. */
static int
parse_tune_args(int argc, char **argv, struct tune_cli *c,
                struct tune_opts *o, int64_t *top)
{
    char **base = o->base;
    base[o->base_argc++] = argv[0];
    /* Mixed precision is what anyone tuning for throughput trains with;
     * a later --param-dtype overrides it. */
    base[o->base_argc++] = unconst("--param-dtype=bf16");
    const struct search_opt own[] = {
        {"--headroom", NULL, &c->headroom, NULL},
        {"--top", NULL, &c->top, NULL},
        {"--max-grad-accum", NULL, &c->max_accum, NULL},
        {"--plot", NULL, &c->plot, NULL},
        {"--term", NULL, &c->term, NULL},
        {"--report", NULL, &c->report, NULL},
        {"--jobs", "-j", &c->jobs, NULL}};
    int rc = search_split_args(&cmd_tune_entry, argc, argv, own,
                               (int)(sizeof own / sizeof own[0]), base,
                               &o->base_argc);
    if (rc != CMD_RUN)
        return rc;
    char *cause = NULL;
    if (c->headroom && search_parse_percent("--headroom", c->headroom,
                                            &o->headroom, &cause) != 0) {
        return cmd_fail("tune", cause, EXIT_USAGE);
    }
    int64_t v;
    if ((c->top && count_opt("--top", c->top, 1, 1000, top) != 0)
        || (c->max_accum && count_opt("--max-grad-accum", c->max_accum, 1,
                                      64, &o->max_grad_accum) != 0)
        || (c->jobs
            && count_opt("--jobs", c->jobs, 1, BATCH_MAX_JOBS, &v) != 0))
        return EXIT_USAGE;
    if (c->jobs)
        o->jobs = (int)v;
    if (strcmp(c->term, "png") != 0 && strcmp(c->term, "svg") != 0)
        return cmd_errorf("tune", 0, "--term: '%s' is not png or svg",
                          c->term);
    rc = search_check_base("tune", "simulates many points", o->base_argc,
                           base);
    return rc != 0 ? rc : CMD_RUN;
}

static int
cmd_tune(int argc, char **argv)
{
    struct tune_cli c = {.term = "png"};
    struct tune_opts o = {.headroom = 0.10,
                          .max_grad_accum = TUNE_DEFAULT_MAX_ACCUM};
    struct tune_result r = {0};
    int64_t top = TUNE_DEFAULT_TOP;
    char *cause = NULL, *simulate = NULL, *code = NULL;
    char *title = NULL, *head = NULL;
    o.base = xcalloc(argc + 2, sizeof *o.base);
    int status = parse_tune_args(argc, argv, &c, &o, &top);
    if (status != CMD_RUN)
        goto out;
    status = EXIT_USAGE;
    if (tune_run(&o, &r, &cause) != 0) {
        cmd_error("tune", cause, 0);
        goto out;
    }
    if (r.interrupted) {
        status = cmd_interrupted();
        goto out;
    }
    int n_ok = 0;
    for (int i = 0; i < r.n_points; i++)
        n_ok += r.points[i].ok;
    if (n_ok == 0) {
        status = cmd_errorf("tune", 0, "no setting could be simulated; the "
                            "first error: %s", r.first_error);
        goto out;
    }
    tune_headline(&o, &r, &title, &head);
    status = tune_print_results(&o, &r, head, (int)top, &simulate, &code,
                                stdout, &cause);
    if (status < 0) {
        cmd_error("tune", cause, 0);
        status = EXIT_USAGE;
    } else if (status > 0) {
        status = EXIT_CHECK_FAILED;
    }
    if (status == 0 && c.plot) {
        char *out = xasprintf("%s-tune.%s", c.plot, c.term);
        int write_rc = tune_plot(&r, out, c.term, &cause);
        status = cmd_wrote("tune", out, write_rc, &cause);
        free(out);
    }
    if (status == 0 && c.report) {
        int write_rc = tune_write_report(&o, &r, title, head, simulate,
                                         code, c.report, &cause);
        status = cmd_wrote("tune", c.report, write_rc, &cause);
    }
out:
    free(title);
    free(head);
    free(cause);
    free(simulate);
    free(code);
    tune_free(&r);
    free(o.base);
    return status;
}

const struct cmd_entry cmd_tune_entry = {
    .name = "tune",
    .usage = "[simulate options] [--headroom 10%] [--top N] "
             "[--report FILE.html]",
    .summary = "search FSDP settings for the best throughput that fits",
    .exec = cmd_tune,
    .help = cmd_tune_help,
};
