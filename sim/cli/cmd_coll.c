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

static int
usage_error(const char *msg)
{
    cmd_error("coll", msg, 1);
    return EXIT_USAGE;
}

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

static int
cmd_coll(int argc, char **argv)
{
    static const struct option opts[] = {
        {"topology", required_argument, NULL, 't'},
        {"nodes", required_argument, NULL, 'n'},
        {"gpus-per-node", required_argument, NULL, 'g'},
        {"minbytes", required_argument, NULL, 'b'},
        {"maxbytes", required_argument, NULL, 'e'},
        {"stepfactor", required_argument, NULL, 'f'},
        {"stepbytes", required_argument, NULL, 'i'},
        {"datatype", required_argument, NULL, 'd'},
        {"op", required_argument, NULL, 'o'},
        {"set", required_argument, NULL, 1000},
        {"nccl-version", required_argument, NULL, 1001},
        {"nccl-algo", required_argument, NULL, 1002},
        {"nccl-proto", required_argument, NULL, 1003},
        {"nccl-min-nchannels", required_argument, NULL, 1004},
        {"nccl-max-nchannels", required_argument, NULL, 1005},
        {"format", required_argument, NULL, 1006},
        {"network", required_argument, NULL, 1007},
        {"exact", optional_argument, NULL, 1008},
        {"background-load", required_argument, NULL, 1009},
        {"platform", required_argument, NULL, 1010},
        {"explain", no_argument, NULL, 1011},
        {"nccl-nvls-enable", required_argument, NULL, 1100},
        {"nccl-buffsize", required_argument, NULL, 1101},
        {"nccl-nthreads", required_argument, NULL, 1102},
        {"nccl-ib-disable", required_argument, NULL, 1103},
        {"nccl-p2p-disable", required_argument, NULL, 1104},
        {"nccl-socket-nthreads", required_argument, NULL, 1105},
        {"nccl-nsocks-perthread", required_argument, NULL, 1106},
        {"nccl-p2p-level", required_argument, NULL, 1107},
        {"nccl-net-gdr-level", required_argument, NULL, 1108},
        {"nccl-cross-nic", required_argument, NULL, 1109},
        {"nccl-collnet-enable", required_argument, NULL, 1110},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    /* NCCL_<VAR> from the environment, then --nccl-<var> (in the order
     * of nccl_var_names). */
    const char *vars[NCCL_VAR_COUNT] = {NULL};
    int explain = 0;
    for (int i = 0; nccl_var_names[i]; i++) {
        char env[64] = "NCCL_";
        size_t k = 0;
        for (; nccl_var_names[i][k] && k < 50; k++)
            env[5 + k] = (char)toupper((unsigned char)nccl_var_names[i][k]);
        env[5 + k] = '\0';
        vars[i] = getenv(env);
    }
    const char *topology = "dgx-a100-80g", *type = "float", *redop = "sum";
    const char *version = NULL, *algo = getenv("NCCL_ALGO");
    const char *proto = getenv("NCCL_PROTO");
    const char *minch = getenv("NCCL_MIN_NCHANNELS");
    const char *maxch = getenv("NCCL_MAX_NCHANNELS");
    const char *nodes_s = NULL, *gpn_s = NULL, *format = "text";
    double minb = 8, maxb = 8589934592.0, factor = 2, step = 0;
    const char **sets = xcalloc(argc + 1, sizeof(char *));
    int n_sets = 0, c, rc = EXIT_USAGE;
    char *cause = NULL, *msg = NULL;
    struct topo *t = NULL;
    /* The network settings, read as simulate reads them. */
    struct run_config net;
    config_init(&net);
    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, ":ht:n:g:b:e:f:i:d:o:", opts, NULL))
           != -1) {
        switch (c) {
        case 't': topology = optarg; break;
        case 'n': nodes_s = optarg; break;
        case 'g': gpn_s = optarg; break;
        case 'b':
        case 'e':
        case 'i': {
            double v;
            if (units_parse_nccl_size(optarg, &v) != 0) {
                msg = xasprintf("-%c: '%s' is not a size (write e.g. 8, 1K, "
                                "8G)", c, optarg);
                goto fail;
            }
            *(c == 'b' ? &minb : c == 'e' ? &maxb : &step) = v;
            break;
        }
        case 'f': {
            char *end;
            factor = strtod(optarg, &end);
            if (end == optarg || *end != '\0'
                || !(factor > 1 && factor <= 1024)) {
                msg = xasprintf("-f: '%s' is not a step factor above 1",
                                optarg);
                goto fail;
            }
            break;
        }
        case 'd': type = optarg; break;
        case 'o': redop = optarg; break;
        case 1000: sets[n_sets++] = optarg; break;
        case 1001: version = optarg; break;
        case 1002: algo = optarg; break;
        case 1003: proto = optarg; break;
        case 1004: minch = optarg; break;
        case 1005: maxch = optarg; break;
        case 1006: format = optarg; break;
        case 1011: explain = 1; break;
        case 1100: case 1101: case 1102: case 1103: case 1104: case 1105:
        case 1106: case 1107: case 1108: case 1109: case 1110:
            vars[c - 1100] = optarg; break;
        case 1007:
        case 1008:
        case 1009:
        case 1010: {
            static const char *const keys[] = {"network", "exact",
                                               "background_load",
                                               "platform"};
            const char *val = optarg;
            /* "--exact true" as well as "--exact=true" and "--exact". */
            bool b;
            char *why = NULL;
            if (c == 1008 && val == NULL && optind < argc
                && units_parse_bool(argv[optind], &b, &why) == 0)
                val = argv[optind++];
            free(why);
            char *origin = xasprintf("%s", argv[optind - 1 - (val != optarg)]);
            char *eq = strchr(origin, '=');
            if (eq)
                *eq = '\0';
            int bad = config_set(&net, keys[c - 1007], val, origin,
                                 &cause);
            free(origin);
            if (bad)
                goto fail_cause;
            break;
        }
        case 'h':
            cmd_coll_help(stdout);
            free(sets);
            config_free(&net);
            return 0;
        default:
            msg = xasprintf(c == ':' ? "option '%s' needs a value"
                                     : "unknown option '%s'",
                            argv[optind - 1]);
            free(sets);
            config_free(&net);
            rc = usage_error(msg);
            free(msg);
            return rc;
        }
    }
    if (optind + 1 != argc) {
        free(sets);
        config_free(&net);
        return usage_error(optind >= argc ? "name the collective: allgather,"
                                            " reducescatter or allreduce"
                                          : "give one collective");
    }
    const char *opname = argv[optind];
    enum coll_op op = COLL_OP_COUNT;
    for (int i = 0; i < COLL_OP_COUNT; i++)
        if (strcmp(opname, coll_op_name(i)) == 0)
            op = i;
    if (op == COLL_OP_COUNT) {
        msg = xasprintf("unknown collective '%s' (allgather, reducescatter "
                        "or allreduce)", opname);
        goto fail;
    }
    int tbytes = 0;
    for (const struct dtype_name *d = coll_types; d->name; d++)
        if (strcmp(d->name, type) == 0)
            tbytes = d->bytes;
    if (tbytes == 0) {
        msg = xasprintf("-d: unknown datatype '%s' (float, half, bfloat16, "
                        "double, int8, int32, int64, ...)", type);
        goto fail;
    }
    enum coll_redop rop = REDOP_SUM;
    if (strcmp(redop, "avg") == 0)
        rop = REDOP_AVG;
    else if (strcmp(redop, "sum") != 0) {
        msg = xasprintf("-o: '%s' is not sum or avg", redop);
        goto fail;
    }
    if (strcmp(format, "text") != 0 && strcmp(format, "json") != 0) {
        msg = xasprintf("--format: '%s' is not text or json", format);
        goto fail;
    }
    if (config_validate(&net, &cause) != 0)
        goto fail_cause;
    int sgrid = net.network == NETWORK_SIMGRID;
    if (minb > maxb) {
        msg = xasprintf("-b %.0f is larger than -e %.0f", minb, maxb);
        goto fail;
    }
    /* A bound on rows: -i 1 -e 1G would otherwise print a billion. */
    if (step == 0 && minb <= 0 && maxb > 0) {
        msg = xasprintf("-b 0 never grows by -f %g: give -b above 0, or "
                        "-i SIZE", factor);
        goto fail;
    }
    double n_rows = maxb <= minb ? 1
                    : step > 0   ? floor((maxb - minb) / step) + 1
                                 : floor(log(maxb / minb) / log(factor)) + 1;
    if (n_rows > COLL_MAX_ROWS) {
        msg = xasprintf("-b %.0f -e %.0f %s %g would print %.0f rows, more "
                        "than %d: use a larger %s", minb, maxb,
                        step > 0 ? "-i" : "-f", step > 0 ? step : factor,
                        n_rows, COLL_MAX_ROWS, step > 0 ? "-i" : "-f");
        goto fail;
    }

    t = topo_load(topology, &cause);
    if (t == NULL)
        goto fail_cause;
    for (int i = 0; i < n_sets; i++)
        if (topo_set(t, sets[i], &cause) != 0)
            goto fail_cause;
    int64_t v;
    if (nodes_s) {
        if (units_parse_count(nodes_s, 1, 100000, &v, &cause) != 0) {
            msg = xasprintf("--nodes: %s", cause);
            goto fail;
        }
        t->nodes = (int)v;
    }
    /* -g: ranks of the communicator on each node; the node keeps all its
     * GPUs, which share its NICs with their own communicators. */
    int ranks_per_node = t->gpus_per_node;
    if (gpn_s) {
        if (units_parse_count(gpn_s, 1, 64, &v, &cause) != 0) {
            msg = xasprintf("-g: %s", cause);
            goto fail;
        }
        if (v > t->gpus_per_node) {
            msg = xasprintf("-g %lld: the node has %d GPUs (raise it with "
                            "--set node.gpus_per_node=N)", (long long)v,
                            t->gpus_per_node);
            goto fail;
        }
        ranks_per_node = (int)v;
    }
    if (topo_validate(t, &cause) != 0)
        goto fail_cause;
    struct nccl_config nc;
    nccl_config_init(&nc);
    if ((version && nccl_config_set_version(&nc, version, &cause) != 0)
        || (algo && *algo && nccl_config_set_algo(&nc, algo, &cause) != 0)
        || (proto && *proto && nccl_config_set_proto(&nc, proto, &cause) != 0))
        goto fail_cause;
    for (int i = 0; nccl_var_names[i]; i++)
        if (vars[i] && *vars[i]
            && nccl_config_set_var(&nc, nccl_var_names[i], vars[i], &cause))
            goto fail_cause;
    if (minch && units_parse_count(minch, 1, 64, &v, &cause) == 0)
        nc.min_channels = (int)v;
    else if (minch)
        goto fail_cause;
    if (maxch && units_parse_count(maxch, 1, 64, &v, &cause) == 0)
        nc.max_channels = (int)v;
    else if (maxch)
        goto fail_cause;
    if (nc.min_channels > 0 && nc.max_channels > 0
        && nc.min_channels > nc.max_channels) {
        cause = xasprintf("--nccl-min-nchannels %d is above "
                          "--nccl-max-nchannels %d (NCCL_MIN_NCHANNELS must "
                          "not exceed NCCL_MAX_NCHANNELS)", nc.min_channels,
                          nc.max_channels);
        goto fail_cause;
    }

    struct coll_group g = {t->nodes * ranks_per_node, t->nodes,
                           ranks_per_node};
    /* nccl-tests prints "none" as the redop of an all-gather. */
    if (op == COLL_ALLGATHER)
        redop = "none";
    int json = strcmp(format, "json") == 0;
    /* A collective NCCL refuses (NCCL_ALGO, NCCL_PROTO) or a platform the
     * backend cannot use fails at the first size: find out before any
     * line of the table is printed. */
    struct coll_result r;
    double an_us;
    if (estimate_row(t, &nc, op, rop, &g, floor(minb / tbytes) * tbytes,
                     sgrid, &net, &r, &an_us, &cause) != 0)
        goto fail_cause;
    /* The largest size takes longest: one past the time bound is found
     * before the table too, not after half of it. */
    struct coll_result last;
    if (maxb > minb
        && estimate_row(t, &nc, op, rop, &g, floor(maxb / tbytes) * tbytes,
                        sgrid, &net, &last, &an_us, &cause) != 0)
        goto fail_cause;
    if (explain && !json) {
        /* The choice and the data path at the first size (coll.c). */
        printf("# explain %s of %.0f B over %d ranks (%d node%s x %d)\n",
               coll_op_name(op), floor(minb / tbytes) * tbytes, g.ranks,
               g.nodes, g.nodes == 1 ? "" : "s", ranks_per_node);
        printf("#   NCCL's choice (tuning.cc): %s/%s, its estimate %.2f us "
               "(latency %.2f us + bytes / bandwidth)\n",
               nccl_algo_name(r.algo), nccl_proto_name(r.proto),
               r.tuning_s * 1e6, r.latency_s * 1e6);
        printf("#   data path: %d channels x %d threads, %d hops, %d "
               "chunk%s of %.0f B a channel, %d flag wait%s a chunk, "
               "%.2f us a hop, %.2f GB/s a channel\n", r.channels,
               r.nthreads, r.hops, r.loops, r.loops == 1 ? "" : "s",
               r.chunk_bytes, r.syncs, r.syncs == 1 ? "" : "s",
               r.hop_lat_s * 1e6, r.chan_Bps / 1e9);
        if (r.proto == PROTO_SIMPLE && r.algo <= NCCL_ALGO_RING)
            printf("#   Simple buffer: NCCL_BUFFSIZE %.0f B (%s), steps of "
                   "%.0f B\n", r.buffsize,
                   r.buffsize_from_plugin ? "set by the network plugin"
                   : nc.buffsize_given ? "set by the user" : "NCCL's default",
                   r.buffsize / 8);
        if (r.net_hops > 0)
            printf("#   ring: %d network hop%s on the critical path, %.2f us "
                   "each\n", r.net_hops, r.net_hops == 1 ? "" : "s",
                   r.net_lat_s * 1e6);
        if (r.algo == NCCL_ALGO_NVLS || r.algo == NCCL_ALGO_NVLS_TREE)
            printf("#   NVLS buffers: %.0f MiB of device memory a GPU, taken "
                   "the first time the communicator runs NVLS "
                   "(transport/nvls.cc)\n",
                   coll_nvls_buffer_bytes(t, &nc, ranks_per_node)
                       / 1048576.0);
        printf("#   time %.2f us = launch %.2f + pipeline fill %.2f + "
               "bandwidth %.2f + per-step latency %.2f\n", r.time_s * 1e6,
               r.launch_s * 1e6, r.fill_s * 1e6, r.bw_s * 1e6,
               r.steplat_s * 1e6);
    }
    if (json) {
        printf("{\"collective\": \"%s\", \"topology\": \"%s\", \"nodes\": %d,"
               " \"gpus_per_node\": %d, \"ranks\": %d, \"nccl_version\": "
               "\"%d.%d\", \"type\": \"%s\", \"redop\": \"%s\", \"rows\": [",
               coll_op_name(op), t->name, t->nodes, ranks_per_node,
               g.ranks, nc.version / 100, nc.version % 100, type, redop);
    } else {
        char nbuf[256];
        printf("# fsdpsim coll %s: %s, %d node%s x %d GPUs = %d ranks, NCCL "
               "%d.%d (predicted%s%s)\n", coll_op_name(op), t->name, t->nodes,
               t->nodes == 1 ? "" : "s", ranks_per_node, g.ranks,
               nc.version / 100, nc.version % 100,
               sgrid ? ", network simgrid on " : "",
               sgrid ? net_describe(t, &net, nbuf, sizeof nbuf) : "");
        printf("#%12s %14s %8s %6s %10s %8s %8s  %-13s %-6s %s%s\n", "size",
               "count", "type", "redop", "time", "algbw", "busbw", "algorithm",
               "proto", "channels", sgrid ? "   analytic" : "");
        printf("#%12s %14s %8s %6s %10s %8s %8s%s\n", "(B)", "(elements)", "",
               "", "(us)", "(GB/s)", "(GB/s)",
               sgrid ? "                                    (us)" : "");
    }
    int row = 0;
    for (double size = minb; size <= maxb;
         size = step > 0 ? size + step : size * factor) {
        /* Whole elements, as nccl-tests rounds sizes down. */
        double count = floor(size / tbytes);
        double bytes = count * tbytes;
        if (estimate_row(t, &nc, op, rop, &g, bytes, sgrid, &net, &r,
                         &an_us, &cause) != 0) {
            if (json)
                printf("]}\n");
            goto fail_cause;
        }
        double us = r.time_s * 1e6;
        double algbw = r.time_s > 0 ? bytes / r.time_s / 1e9 : 0;
        double busbw = algbw * coll_busbw_factor(op, g.ranks);
        if (json)
            printf("%s\n  {\"size_bytes\": %.0f, \"count\": %.0f, "
                   "\"time_us\": %.3f, \"algbw_GBps\": %.3f, "
                   "\"busbw_GBps\": %.3f, \"algorithm\": \"%s\", "
                   "\"protocol\": \"%s\", \"channels\": %d",
                   row ? "," : "", bytes, count, us, algbw, busbw,
                   nccl_algo_name(r.algo), nccl_proto_name(r.proto),
                   r.channels);
        else
            printf(" %12.0f %14.0f %8s %6s %10.2f %8.2f %8.2f  %-13s %-6s "
                   "%-*d", bytes, count, type, redop, us, algbw, busbw,
                   nccl_algo_name(r.algo), nccl_proto_name(r.proto),
                   sgrid ? 8 : 0, r.channels);
        if (sgrid)
            printf(json ? ", \"analytic_time_us\": %.3f" : " %10.2f",
                   an_us);
        printf(json ? "}" : "\n");
        row++;
        if (size == 0)
            break;
    }
    if (json)
        printf("\n]}\n");
    topo_free(t);
    free(sets);
    config_free(&net);
    return 0;
fail_cause:
    msg = cause;
    cause = NULL;
fail:
    cmd_error("coll", msg, 0);
    free(msg);
    free(cause);
    topo_free(t);
    free(sets);
    config_free(&net);
    return rc;
}

const struct cmd_entry cmd_coll_entry = {
    .name = "coll",
    .usage = "OP [-t TOPOLOGY] [-b 8] [-e 8G] [-f 2] [-g G] [--nodes N]",
    .summary = "predicted collective times in nccl-tests' columns",
    .exec = cmd_coll,
    .help = cmd_coll_help,
};
