/*
 * cmd_coll.c: `fsdpsim coll`, what the collective model predicts for a
 * size sweep, in nccl-tests' own columns and flags so the output can be
 * held next to a real all_gather_perf / reduce_scatter_perf /
 * all_reduce_perf run.
 *
 * Sizes follow nccl-tests: -b (min bytes), -e (max bytes), -f (factor) or
 * -i (increment).  As in nccl-tests, size is the whole buffer (for
 * all-gather the gathered output, for reduce-scatter its input) and count
 * its elements; algbw = size / time;
 * busbw = algbw x (n-1)/n for all-gather and reduce-scatter, 2(n-1)/n for
 * all-reduce (nccl-tests doc/PERFORMANCE.md).
 */
#include "cmd.h"
#include "coll.h"
#include "coll_table.h"
#include "nccl_env.h"
#include "net.h"
#include "runconf.h"
#include "topo.h"
#include "units.h"
#include "xalloc.h"

#include <ctype.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The most rows one table prints (nccl-tests' default -b 8 -e 8G -f 2 is
 * 31); more is a mistaken -i or -f, not a question. */
#define COLL_MAX_ROWS 10000

static void
cmd_coll_help(FILE *out)
{
    fprintf(out,
            "usage: fsdpsim coll OP [options]\n\n"
            "Print the predicted time of one collective over a range of "
            "sizes, in\nnccl-tests' columns (size, count, type, redop, time, "
            "algbw, busbw), plus the\nalgorithm, protocol and channels NCCL "
            "would choose.  OP is allgather,\nreducescatter or allreduce.\n\n"
            "options:\n"
            "  -t, --topology NAME|FILE   cluster (default dgx-a100-80g)\n"
            "  -n, --nodes N              nodes (default: the topology's)\n"
            "  -g, --gpus-per-node G      GPUs per node in the communicator\n"
            "  -b, --minbytes SIZE        smallest size (default 8)\n"
            "  -e, --maxbytes SIZE        largest size (default 8G)\n"
            "  -f, --stepfactor F         multiply the size by F (default 2)\n"
            "  -i, --stepbytes SIZE       or add SIZE each step\n"
            "  -d, --datatype T           float, half, bfloat16, double, "
            "int8... (default float)\n"
            "  -o, --op OP                sum or avg (default sum)\n"
            "      --set SECTION.KEY=VALUE  override a topology field\n"
            "      --nccl-version X.Y     NCCL 2.18 .. 2.28 (default 2.28)\n"
            "      --nccl-algo LIST       as NCCL_ALGO (also read from the "
            "environment)\n"
            "      --nccl-proto LIST      as NCCL_PROTO\n"
            "      --nccl-min-nchannels N, --nccl-max-nchannels N\n"
            "      --nccl-nvls-enable 0|1|2, --nccl-buffsize B, "
            "--nccl-nthreads N,\n"
            "      --nccl-ib-disable 0|1, --nccl-p2p-disable 0|1,\n"
            "      --nccl-socket-nthreads N, --nccl-nsocks-perthread N,\n"
            "      --nccl-p2p-level L, --nccl-net-gdr-level L (LOC..SYS),\n"
            "      --nccl-cross-nic 0|1|2, --nccl-collnet-enable 0|1\n"
            "                             as NCCL_NVLS_ENABLE etc. (also "
            "read from the\n                             environment; "
            "values NCCL would not\n                             honour "
            "are refused)\n"
            "      --explain              for the first size: NCCL's "
            "choice and the time\n                             split into "
            "launch, fill, bandwidth, step latency\n"
            "      --network analytic|simgrid  NCCL's model alone, or its "
            "flows on a SimGrid\n"
            "                             platform of the cluster (adds the "
            "analytic time)\n"
            "      --exact, --background-load F, --platform FILE.xml  as "
            "for simulate\n"
            "      --format text|json     output format (default text)\n"
            "  -h, --help                 show this help\n\n"
            "Sizes take K, M, G suffixes as nccl-tests does (powers of "
            "1024).\n");
}


struct dtype_name {
    const char *name;
    int bytes;
};

static const struct dtype_name coll_types[] = {
    {"int8", 1}, {"char", 1}, {"uint8", 1}, {"int32", 4}, {"int", 4},
    {"uint32", 4}, {"int64", 8}, {"uint64", 8}, {"half", 2}, {"float16", 2},
    {"float", 4}, {"float32", 4}, {"double", 8}, {"float64", 8},
    {"bfloat16", 2}, {NULL, 0}};

/* One row's prediction: NCCL's choice and time for BYTES, then the
 * network backend's time (*AN_US keeps the analytic one).  0, or -1 with
 * *cause when NCCL would refuse the collective or the backend fails. */
static int
estimate_row(const struct topo *t, const struct nccl_config *nc,
             enum coll_op op, enum coll_redop rop,
             const struct coll_group *g, double bytes, bool sgrid,
             const struct run_config *net, struct coll_result *r,
             double *an_us, char **cause)
{
    if (coll_estimate(t, nc, op, rop, g, bytes, r, cause) != 0)
        return -1;
    *an_us = r->time_s * 1e6;
    if (sgrid && net_coll_time(t, net, op, g, bytes, r, &r->time_s, cause)
                     != 0)
        return -1;
    /* The bound simulate's engine has (2^62 ns, 146 years): a time past
     * it comes from rates no hardware has, not from a collective. */
    if (!(r->time_s <= 4.6e9)) {
        *cause = xasprintf("%.0f bytes would take longer than 146 years; "
                           "check the topology's rates (a bandwidth far too "
                           "low?)", bytes);
        return -1;
    }
    return 0;
}

/* Options without a short name; the NCCL_<VAR> ones in the order of
 * nccl_var_names, from OPT_NCCL_VAR. */
enum {
    OPT_SET = 1000,
    OPT_NCCL_VERSION,
    OPT_NCCL_ALGO,
    OPT_NCCL_PROTO,
    OPT_NCCL_MIN_NCHANNELS,
    OPT_NCCL_MAX_NCHANNELS,
    OPT_FORMAT,
    OPT_NETWORK,            /* the four network settings, in net_keys' */
    OPT_EXACT,              /* order, read as simulate reads them */
    OPT_BACKGROUND_LOAD,
    OPT_PLATFORM,
    OPT_EXPLAIN,
    OPT_NCCL_VAR = 1100,
};

static const char *const net_keys[] = {"network", "exact", "background_load",
                                       "platform"};

static const struct option coll_options[] = {
    {"topology", required_argument, NULL, 't'},
    {"nodes", required_argument, NULL, 'n'},
    {"gpus-per-node", required_argument, NULL, 'g'},
    {"minbytes", required_argument, NULL, 'b'},
    {"maxbytes", required_argument, NULL, 'e'},
    {"stepfactor", required_argument, NULL, 'f'},
    {"stepbytes", required_argument, NULL, 'i'},
    {"datatype", required_argument, NULL, 'd'},
    {"op", required_argument, NULL, 'o'},
    {"set", required_argument, NULL, OPT_SET},
    {"nccl-version", required_argument, NULL, OPT_NCCL_VERSION},
    {"nccl-algo", required_argument, NULL, OPT_NCCL_ALGO},
    {"nccl-proto", required_argument, NULL, OPT_NCCL_PROTO},
    {"nccl-min-nchannels", required_argument, NULL, OPT_NCCL_MIN_NCHANNELS},
    {"nccl-max-nchannels", required_argument, NULL, OPT_NCCL_MAX_NCHANNELS},
    {"format", required_argument, NULL, OPT_FORMAT},
    {"network", required_argument, NULL, OPT_NETWORK},
    {"exact", optional_argument, NULL, OPT_EXACT},
    {"background-load", required_argument, NULL, OPT_BACKGROUND_LOAD},
    {"platform", required_argument, NULL, OPT_PLATFORM},
    {"explain", no_argument, NULL, OPT_EXPLAIN},
    {"nccl-nvls-enable", required_argument, NULL, OPT_NCCL_VAR + 0},
    {"nccl-buffsize", required_argument, NULL, OPT_NCCL_VAR + 1},
    {"nccl-nthreads", required_argument, NULL, OPT_NCCL_VAR + 2},
    {"nccl-ib-disable", required_argument, NULL, OPT_NCCL_VAR + 3},
    {"nccl-p2p-disable", required_argument, NULL, OPT_NCCL_VAR + 4},
    {"nccl-socket-nthreads", required_argument, NULL, OPT_NCCL_VAR + 5},
    {"nccl-nsocks-perthread", required_argument, NULL, OPT_NCCL_VAR + 6},
    {"nccl-p2p-level", required_argument, NULL, OPT_NCCL_VAR + 7},
    {"nccl-net-gdr-level", required_argument, NULL, OPT_NCCL_VAR + 8},
    {"nccl-cross-nic", required_argument, NULL, OPT_NCCL_VAR + 9},
    {"nccl-collnet-enable", required_argument, NULL, OPT_NCCL_VAR + 10},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0}};

/* The command line of one `fsdpsim coll`. */
struct coll_args {
    const char *topology, *type, *redop, *format, *nodes_s, *gpn_s;
    const char *version, *algo, *proto, *minch, *maxch;
    const char *vars[NCCL_VAR_COUNT];   /* in nccl_var_names' order */
    const char **sets;                  /* --set, in order */
    int n_sets;
    int explain;
    double minb, maxb, factor, step;    /* -b, -e, -f, -i */
    struct run_config net;              /* the network settings */
    /* From the above, once checked (check_coll_args). */
    enum coll_op op;
    enum coll_redop rop;
    int tbytes;                         /* the datatype's size */
    bool json, sgrid;
};

/* *A with the defaults and NCCL's variables from the environment, for
 * ARGC arguments. */
static void
coll_args_init(struct coll_args *a, int argc)
{
    *a = (struct coll_args){.topology = "dgx-a100-80g", .type = "float",
                            .redop = "sum", .format = "text", .minb = 8,
                            .maxb = 8589934592.0, .factor = 2};
    for (int i = 0; nccl_var_names[i]; i++) {
        char env[64] = "NCCL_";
        size_t k = 0;
        for (; nccl_var_names[i][k] && k < 50; k++)
            env[5 + k] = (char)toupper((unsigned char)nccl_var_names[i][k]);
        env[5 + k] = '\0';
        a->vars[i] = getenv(env);
    }
    a->algo = getenv("NCCL_ALGO");
    a->proto = getenv("NCCL_PROTO");
    a->minch = getenv("NCCL_MIN_NCHANNELS");
    a->maxch = getenv("NCCL_MAX_NCHANNELS");
    a->sets = xcalloc(argc + 1, sizeof(char *));
    config_init(&a->net);
}

static void
coll_args_free(struct coll_args *a)
{
    free(a->sets);
    config_free(&a->net);
}

/* -b, -e, -i and -f (option C, value V) into *A: 0, or -1 with *msg. */
static int
parse_size_option(struct coll_args *a, int c, const char *v, char **msg)
{
    if (c == 'f') {
        char *end;
        a->factor = strtod(v, &end);
        if (end == v || *end != '\0'
            || !(a->factor > 1 && a->factor <= 1024)) {
            *msg = xasprintf("-f: '%s' is not a step factor above 1", v);
            return -1;
        }
        return 0;
    }
    double size;
    if (units_parse_nccl_size(v, &size) != 0) {
        *msg = xasprintf("-%c: '%s' is not a size (write e.g. 8, 1K, 8G)", c,
                         v);
        return -1;
    }
    *(c == 'b' ? &a->minb : c == 'e' ? &a->maxb : &a->step) = size;
    return 0;
}

/* One of the network settings (OPT_NETWORK..OPT_PLATFORM) into A->net,
 * as simulate reads it: 0, or -1 with *msg. */
static int
parse_net_option(struct coll_args *a, int c, int argc, char **argv,
                 char **msg)
{
    const char *val = optarg;
    /* "--exact true" as well as "--exact=true" and "--exact". */
    bool b;
    char *why = NULL;
    if (c == OPT_EXACT && val == NULL && optind < argc
        && units_parse_bool(argv[optind], &b, &why) == 0)
        val = argv[optind++];
    free(why);
    char *origin = xasprintf("%s", argv[optind - 1 - (val != optarg)]);
    char *eq = strchr(origin, '=');
    if (eq)
        *eq = '\0';
    int bad = config_set(&a->net, net_keys[c - OPT_NETWORK], val, origin, msg);
    free(origin);
    return bad ? -1 : 0;
}

/* ARGV's options into *A: CMD_RUN, 0 after the help, or EXIT_USAGE
 * with *msg for the caller to print (NULL when cmd_getopt has). */
static int
parse_coll_options(struct coll_args *a, int argc, char **argv, char **msg)
{
    struct cmd_getopt g = CMD_GETOPT(&cmd_coll_entry, argc, argv);
    int c;
    while ((c = cmd_getopt(&g)) != CMD_OPT_END) {
        switch (c) {
        case 't': a->topology = optarg; break;
        case 'n': a->nodes_s = optarg; break;
        case 'g': a->gpn_s = optarg; break;
        case 'b': case 'e': case 'i': case 'f':
            if (parse_size_option(a, c, optarg, msg) != 0)
                return EXIT_USAGE;
            break;
        case 'd': a->type = optarg; break;
        case 'o': a->redop = optarg; break;
        case OPT_SET: a->sets[a->n_sets++] = optarg; break;
        case OPT_NCCL_VERSION: a->version = optarg; break;
        case OPT_NCCL_ALGO: a->algo = optarg; break;
        case OPT_NCCL_PROTO: a->proto = optarg; break;
        case OPT_NCCL_MIN_NCHANNELS: a->minch = optarg; break;
        case OPT_NCCL_MAX_NCHANNELS: a->maxch = optarg; break;
        case OPT_FORMAT: a->format = optarg; break;
        case OPT_EXPLAIN: a->explain = 1; break;
        case OPT_NETWORK: case OPT_EXACT: case OPT_BACKGROUND_LOAD:
        case OPT_PLATFORM:
            if (parse_net_option(a, c, argc, argv, msg) != 0)
                return EXIT_USAGE;
            break;
        case 'h':
            cmd_coll_help(stdout);
            return 0;
        case CMD_OPT_BAD:
            return EXIT_USAGE;
        default:
            a->vars[c - OPT_NCCL_VAR] = optarg;
            break;
        }
    }
    return CMD_RUN;
}

/* -b, -e and -f or -i of A, as a table of at most COLL_MAX_ROWS rows:
 * 0, or -1 with *msg. */
static int
check_sizes(const struct coll_args *a, char **msg)
{
    double minb = a->minb, maxb = a->maxb, step = a->step;
    if (minb > maxb) {
        *msg = xasprintf("-b %.0f is larger than -e %.0f", minb, maxb);
        return -1;
    }
    /* A bound on rows: -i 1 -e 1G would otherwise print a billion. */
    if (step == 0 && minb <= 0 && maxb > 0) {
        *msg = xasprintf("-b 0 never grows by -f %g: give -b above 0, or "
                         "-i SIZE", a->factor);
        return -1;
    }
    double n_rows = maxb <= minb ? 1
                    : step > 0   ? floor((maxb - minb) / step) + 1
                                 : floor(log(maxb / minb) / log(a->factor))
                                       + 1;
    if (n_rows > COLL_MAX_ROWS) {
        *msg = xasprintf("-b %.0f -e %.0f %s %g would print %.0f rows, more "
                         "than %d: use a larger %s", minb, maxb,
                         step > 0 ? "-i" : "-f", step > 0 ? step : a->factor,
                         n_rows, COLL_MAX_ROWS, step > 0 ? "-i" : "-f");
        return -1;
    }
    return 0;
}

/* The collective (ARGV[optind]), datatype, redop, format and sizes of A,
 * checked and resolved into A: 0, or -1 with *msg. */
static int
check_coll_args(struct coll_args *a, const char *opname, char **msg)
{
    a->op = COLL_OP_COUNT;
    for (int i = 0; i < COLL_OP_COUNT; i++)
        if (strcmp(opname, coll_op_name(i)) == 0)
            a->op = i;
    if (a->op == COLL_OP_COUNT) {
        *msg = xasprintf("unknown collective '%s' (allgather, reducescatter "
                         "or allreduce)", opname);
        return -1;
    }
    for (const struct dtype_name *d = coll_types; d->name; d++)
        if (strcmp(d->name, a->type) == 0)
            a->tbytes = d->bytes;
    if (a->tbytes == 0) {
        *msg = xasprintf("-d: unknown datatype '%s' (float, half, bfloat16, "
                         "double, int8, int32, int64, ...)", a->type);
        return -1;
    }
    a->rop = REDOP_SUM;
    if (strcmp(a->redop, "avg") == 0)
        a->rop = REDOP_AVG;
    else if (strcmp(a->redop, "sum") != 0) {
        *msg = xasprintf("-o: '%s' is not sum or avg", a->redop);
        return -1;
    }
    if (strcmp(a->format, "text") != 0 && strcmp(a->format, "json") != 0) {
        *msg = xasprintf("--format: '%s' is not text or json", a->format);
        return -1;
    }
    a->json = strcmp(a->format, "json") == 0;
    if (config_validate(&a->net, msg) != 0)
        return -1;
    a->sgrid = a->net.network == NETWORK_SIMGRID;
    return check_sizes(a, msg);
}

/* The topology of A, with --set, --nodes and -g (*ranks_per_node):
 * NULL with *msg. */
static struct topo *
coll_topology(const struct coll_args *a, int *ranks_per_node, char **msg)
{
    struct topo *t = topo_load(a->topology, msg);
    if (t == NULL)
        return NULL;
    for (int i = 0; i < a->n_sets; i++)
        if (topo_set(t, a->sets[i], msg) != 0)
            goto fail;
    int64_t v;
    char *cause = NULL;
    if (a->nodes_s) {
        if (units_parse_count(a->nodes_s, 1, 100000, &v, &cause) != 0) {
            *msg = xasprintf("--nodes: %s", cause);
            goto fail_cause;
        }
        t->nodes = (int)v;
    }
    /* -g: ranks of the communicator on each node; the node keeps all its
     * GPUs, which share its NICs with their own communicators. */
    *ranks_per_node = t->gpus_per_node;
    if (a->gpn_s) {
        if (units_parse_count(a->gpn_s, 1, 64, &v, &cause) != 0) {
            *msg = xasprintf("-g: %s", cause);
            goto fail_cause;
        }
        if (v > t->gpus_per_node) {
            *msg = xasprintf("-g %lld: the node has %d GPUs (raise it with "
                             "--set node.gpus_per_node=N)", (long long)v,
                             t->gpus_per_node);
            goto fail;
        }
        *ranks_per_node = (int)v;
    }
    if (topo_validate(t, msg) != 0)
        goto fail;
    return t;
fail_cause:
    free(cause);
fail:
    topo_free(t);
    return NULL;
}

/* NCCL's settings from A (the version first: how NCCL_ALGO reads depends
 * on it) into *NC: 0, or -1 with *msg. */
static int
coll_nccl(const struct coll_args *a, struct nccl_config *nc, char **msg)
{
    nccl_config_init(nc);
    if ((a->version && nccl_config_set_version(nc, a->version, msg) != 0)
        || (a->algo && *a->algo && nccl_config_set_algo(nc, a->algo, msg))
        || (a->proto && *a->proto
            && nccl_config_set_proto(nc, a->proto, msg) != 0))
        return -1;
    for (int i = 0; nccl_var_names[i]; i++)
        if (a->vars[i] && *a->vars[i]
            && nccl_config_set_var(nc, nccl_var_names[i], a->vars[i], msg))
            return -1;
    int64_t v;
    if (a->minch && units_parse_count(a->minch, 1, 64, &v, msg) == 0)
        nc->min_channels = (int)v;
    else if (a->minch)
        return -1;
    if (a->maxch && units_parse_count(a->maxch, 1, 64, &v, msg) == 0)
        nc->max_channels = (int)v;
    else if (a->maxch)
        return -1;
    if (nc->min_channels > 0 && nc->max_channels > 0
        && nc->min_channels > nc->max_channels) {
        *msg = xasprintf("--nccl-min-nchannels %d is above "
                         "--nccl-max-nchannels %d (NCCL_MIN_NCHANNELS must "
                         "not exceed NCCL_MAX_NCHANNELS)", nc->min_channels,
                         nc->max_channels);
        return -1;
    }
    return 0;
}

/* The table of A on T: 0, or -1 with *msg. */
static int
coll_print(const struct coll_args *a, const struct topo *t,
           const struct nccl_config *nc, int ranks_per_node, char **msg)
{
    struct coll_group g = {t->nodes * ranks_per_node, t->nodes,
                           ranks_per_node};
    char nbuf[256];
    struct coll_table tb = {
        .op = a->op, .topology = t->name, .nodes = t->nodes,
        .ranks_per_node = ranks_per_node, .g = g,
        .nccl_version = nc->version, .type = a->type,
        /* nccl-tests prints "none" as the redop of an all-gather. */
        .redop = a->op == COLL_ALLGATHER ? "none" : a->redop,
        .json = a->json,
        .simgrid = a->sgrid ? net_describe(t, &a->net, nbuf, sizeof nbuf)
                            : NULL};
    /* A collective NCCL refuses (NCCL_ALGO, NCCL_PROTO) or a platform the
     * backend cannot use fails at the first size: find out before any
     * line of the table is printed. */
    struct coll_result r;
    double an_us, first = floor(a->minb / a->tbytes) * a->tbytes;
    if (estimate_row(t, nc, a->op, a->rop, &g, first, a->sgrid, &a->net, &r,
                     &an_us, msg) != 0)
        return -1;
    /* The largest size takes longest: one past the time bound is found
     * before the table too, not after half of it. */
    struct coll_result last;
    if (a->maxb > a->minb
        && estimate_row(t, nc, a->op, a->rop, &g,
                        floor(a->maxb / a->tbytes) * a->tbytes, a->sgrid,
                        &a->net, &last, &an_us, msg) != 0)
        return -1;
    if (a->explain && !a->json)
        coll_explain_print(&tb, first, &r,
                           r.algo == NCCL_ALGO_NVLS
                                   || r.algo == NCCL_ALGO_NVLS_TREE
                               ? coll_nvls_buffer_bytes(t, nc, ranks_per_node)
                               : 0,
                           coll_conn_buffer_bytes(t, nc, &g, r.comm_channels,
                                                  1u << r.algo),
                           nc->buffsize_given, stdout);
    coll_table_begin(&tb, stdout);
    for (double size = a->minb; size <= a->maxb;
         size = a->step > 0 ? size + a->step : size * a->factor) {
        /* Whole elements, as nccl-tests rounds sizes down. */
        double count = floor(size / a->tbytes);
        double bytes = count * a->tbytes;
        if (estimate_row(t, nc, a->op, a->rop, &g, bytes, a->sgrid, &a->net,
                         &r, &an_us, msg) != 0) {
            coll_table_end(&tb, true, stdout);
            return -1;
        }
        coll_table_row(&tb, bytes, count, &r, an_us, stdout);
        if (size == 0)
            break;
    }
    coll_table_end(&tb, false, stdout);
    return 0;
}

static int
cmd_coll(int argc, char **argv)
{
    struct coll_args a;
    coll_args_init(&a, argc);
    char *msg = NULL;
    struct topo *t = NULL;
    int rc = parse_coll_options(&a, argc, argv, &msg);
    if (rc == CMD_RUN && optind + 1 != argc) {
        coll_args_free(&a);
        cmd_error("coll", optind >= argc ? "name the collective: allgather,"
                                           " reducescatter or allreduce"
                                         : "give one collective", 1);
        return EXIT_USAGE;
    }
    int ranks_per_node = 0;
    struct nccl_config nc;
    if (rc == CMD_RUN
        && (check_coll_args(&a, argv[optind], &msg) != 0
            || (t = coll_topology(&a, &ranks_per_node, &msg)) == NULL
            || coll_nccl(&a, &nc, &msg) != 0
            || coll_print(&a, t, &nc, ranks_per_node, &msg) != 0))
        rc = EXIT_USAGE;
    if (msg) {
        cmd_error("coll", msg, 0);
        free(msg);
    }
    topo_free(t);
    coll_args_free(&a);
    return rc == CMD_RUN ? 0 : rc;
}

const struct cmd_entry cmd_coll_entry = {
    .name = "coll",
    .usage = "OP [-t TOPOLOGY] [-b 8] [-e 8G] [-f 2] [-g G] [--nodes N]",
    .summary = "predicted collective times in nccl-tests' columns",
    .shortopts = ":ht:n:g:b:e:f:i:d:o:",
    .longopts = coll_options,
    .exec = cmd_coll,
    .help = cmd_coll_help,
};
