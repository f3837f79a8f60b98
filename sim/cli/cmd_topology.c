/*
 * cmd_topology.c: `fsdpsim topology`, one topology as a file: the
 * topology itself (as `topologies --show`), or with --simgrid-xml the
 * SimGrid platform that --network simgrid simulates on, for a user to
 * inspect, load in SimGrid or edit and give back with --platform.
 */
#include "atomic_file.h"
#include "cmd.h"
#include "net_platform.h"
#include "topo.h"
#include "units.h"
#include "xalloc.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

static void
cmd_topology_help(FILE *out)
{
    fprintf(out,
            "usage: fsdpsim topology [NAME|FILE] [options]\n\n"
            "Print a topology (built-in or file, default dgx-a100-80g) as a "
            "topology file,\nevery field with its unit, after --nodes, "
            "--gpus-per-node and --set.  With\n--simgrid-xml, print instead "
            "the SimGrid platform 'simulate --network\nsimgrid' runs on: a "
            "host node<i>-gpu<g> per GPU, node<i>-nic for each node's\nNICs, "
            "fabric-leaf<L> for each leaf's uplinks to the spine, a zone per "
            "switch\n(at most 16,384 GPUs).  Edit it and give it back with "
            "'simulate --network\nsimgrid --platform FILE'.\n\n"
            "options:\n"
            "  -t, --topology NAME|FILE     the topology (or give it first)\n"
            "  -n, --nodes N                nodes (default: the topology's)\n"
            "  -g, --gpus-per-node G        GPUs per node\n"
            "      --set SECTION.KEY=VALUE  override a field (repeatable), "
            "e.g.\n"
            "                               network.oversubscription=4:1\n"
            "      --simgrid-xml [FILE]     write the SimGrid platform "
            "(stdout without FILE)\n"
            "  -h, --help                   show this help\n");
}

/* Write the platform to PATH atomically, or to stdout: 0, or
 * EXIT_SYSTEM after the message. */
static int
write_platform(const struct topo *t, const char *path)
{
    if (path == NULL) {
        net_platform_write(t, stdout);
        return 0;
    }
    struct atomic_file af;
    char *cause = NULL;
    if (atomic_file_open(&af, path, &cause) == 0) {
        net_platform_write(t, af.f);
        if (atomic_file_commit(&af, &cause) == 0)
            return 0;
    }
    return cmd_fail("topology", cause, EXIT_SYSTEM);
}

/* Options without a short name. */
enum {
    OPT_SET = 1000,
    OPT_SIMGRID_XML,
};

static const struct option topology_options[] = {
    {"topology", required_argument, NULL, 't'},
    {"nodes", required_argument, NULL, 'n'},
    {"gpus-per-node", required_argument, NULL, 'g'},
    {"set", required_argument, NULL, OPT_SET},
    {"simgrid-xml", optional_argument, NULL, OPT_SIMGRID_XML},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0}};

struct topology_args {
    const char *name, *nodes_s, *gpn_s;
    const char **sets;          /* --set, in order */
    int n_sets;
    int xml;                    /* --simgrid-xml */
    const char *xml_path;       /* its file, NULL for stdout */
};

/* ARGV into *A (A->sets sized for ARGC): CMD_RUN, or the exit status
 * after the help or the message. */
static int
parse_topology_args(int argc, char **argv, struct topology_args *a)
{
    struct cmd_getopt g = CMD_GETOPT(&cmd_topology_entry, argc, argv);
    int c;
    while ((c = cmd_getopt(&g)) != CMD_OPT_END) {
        switch (c) {
        case 't': a->name = optarg; break;
        case 'n': a->nodes_s = optarg; break;
        case 'g': a->gpn_s = optarg; break;
        case OPT_SET: a->sets[a->n_sets++] = optarg; break;
        case OPT_SIMGRID_XML:
            a->xml = 1;
            a->xml_path = optarg;
            /* "--simgrid-xml FILE" as well as "--simgrid-xml=FILE": a
             * following argument ending in .xml is the file. */
            if (a->xml_path == NULL && optind < argc) {
                size_t len = strlen(argv[optind]);
                if (len > 4 && strcmp(argv[optind] + len - 4, ".xml") == 0)
                    a->xml_path = argv[optind++];
            }
            break;
        case 'h':
            cmd_topology_help(stdout);
            return 0;
        default:
            return EXIT_USAGE;
        }
    }
    if (a->xml_path != NULL && *a->xml_path == '\0') {
        cmd_error("topology", "--simgrid-xml: the file name is empty (give "
                  "a path, or no value for standard output)", 0);
        return EXIT_USAGE;
    }
    if (optind < argc && a->name == NULL)
        a->name = argv[optind++];
    if (optind < argc)
        return cmd_option_error("topology", OPTION_UNEXPECTED, argv[optind]);
    return CMD_RUN;
}

/* The topology A names, with its overrides, validated: NULL after the
 * message. */
static struct topo *
load_topology(const struct topology_args *a)
{
    char *cause = NULL;
    const char *flag = NULL;
    struct topo *t = topo_load(a->name ? a->name : "dgx-a100-80g", &cause);
    if (t == NULL)
        goto fail;
    for (int i = 0; i < a->n_sets; i++)
        if (topo_set(t, a->sets[i], &cause) != 0)
            goto fail;
    int64_t v;
    flag = "--nodes";
    if (a->nodes_s && units_parse_count(a->nodes_s, 1, 100000, &v, &cause))
        goto fail;
    if (a->nodes_s)
        t->nodes = (int)v;
    flag = "--gpus-per-node";
    if (a->gpn_s && units_parse_count(a->gpn_s, 1, 64, &v, &cause))
        goto fail;
    if (a->gpn_s)
        t->gpus_per_node = (int)v;
    flag = NULL;
    if (topo_validate(t, &cause) != 0)
        goto fail;
    if (a->xml && net_platform_supported(t, &cause) != 0)
        goto fail;
    return t;
fail:
    if (flag) {
        char *msg = xasprintf("%s: %s", flag, cause);
        free(cause);
        cause = msg;
    }
    cmd_error("topology", cause, 0);
    free(cause);
    topo_free(t);
    return NULL;
}

static int
cmd_topology(int argc, char **argv)
{
    struct topology_args a = {.sets = xcalloc(argc + 1, sizeof(char *))};
    int rc = parse_topology_args(argc, argv, &a);
    struct topo *t = NULL;
    if (rc == CMD_RUN && (t = load_topology(&a)) == NULL)
        rc = EXIT_USAGE;
    if (rc == CMD_RUN) {
        rc = 0;
        if (a.xml)
            rc = write_platform(t, a.xml_path);
        else
            topo_print(t, stdout);
    }
    topo_free(t);
    free(a.sets);
    return rc;
}

const struct cmd_entry cmd_topology_entry = {
    .name = "topology",
    .usage = "[NAME|FILE] [--set S.K=V] [--nodes N] [--simgrid-xml [FILE]]",
    .summary = "print one topology, or its SimGrid platform",
    .shortopts = ":ht:n:g:",
    .longopts = topology_options,
    .exec = cmd_topology,
    .help = cmd_topology_help,
};
