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
    cmd_error("topology", cause, 0);
    free(cause);
    return EXIT_SYSTEM;
}

static int
cmd_topology(int argc, char **argv)
{
    static const struct option opts[] = {
        {"topology", required_argument, NULL, 't'},
        {"nodes", required_argument, NULL, 'n'},
        {"gpus-per-node", required_argument, NULL, 'g'},
        {"set", required_argument, NULL, 1000},
        {"simgrid-xml", optional_argument, NULL, 1001},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    const char *name = NULL, *nodes_s = NULL, *gpn_s = NULL;
    const char *xml_path = NULL;
    int xml = 0, n_sets = 0, c, rc = EXIT_USAGE;
    const char **sets = xcalloc(argc + 1, sizeof(char *));
    char *msg = NULL, *cause = NULL;
    struct topo *t = NULL;
    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, ":ht:n:g:", opts, NULL)) != -1) {
        switch (c) {
        case 't': name = optarg; break;
        case 'n': nodes_s = optarg; break;
        case 'g': gpn_s = optarg; break;
        case 1000: sets[n_sets++] = optarg; break;
        case 1001:
            xml = 1;
            xml_path = optarg;
            /* "--simgrid-xml FILE" as well as "--simgrid-xml=FILE": a
             * following argument ending in .xml is the file. */
            if (xml_path == NULL && optind < argc) {
                size_t len = strlen(argv[optind]);
                if (len > 4 && strcmp(argv[optind] + len - 4, ".xml") == 0)
                    xml_path = argv[optind++];
            }
            break;
        case 'h':
            cmd_topology_help(stdout);
            free(sets);
            return 0;
        default:
            msg = xasprintf(c == ':' ? "option '%s' needs a value"
                                     : "unknown option '%s'",
                            argv[optind - 1]);
            cmd_error("topology", msg, 1);
            free(msg);
            free(sets);
            return EXIT_USAGE;
        }
    }
    if (xml_path != NULL && *xml_path == '\0') {
        cmd_error("topology", "--simgrid-xml: the file name is empty (give "
                  "a path, or no value for standard output)", 0);
        free(sets);
        return EXIT_USAGE;
    }
    if (optind < argc && name == NULL)
        name = argv[optind++];
    if (optind < argc) {
        msg = xasprintf("unexpected argument '%s'", argv[optind]);
        cmd_error("topology", msg, 1);
        free(msg);
        free(sets);
        return EXIT_USAGE;
    }
    t = topo_load(name ? name : "dgx-a100-80g", &cause);
    if (t == NULL)
        goto fail;
    for (int i = 0; i < n_sets; i++)
        if (topo_set(t, sets[i], &cause) != 0)
            goto fail;
    int64_t v;
    if (nodes_s && units_parse_count(nodes_s, 1, 100000, &v, &cause) == 0)
        t->nodes = (int)v;
    else if (nodes_s)
        goto fail_flag_n;
    if (gpn_s && units_parse_count(gpn_s, 1, 64, &v, &cause) == 0)
        t->gpus_per_node = (int)v;
    else if (gpn_s)
        goto fail_flag_g;
    if (topo_validate(t, &cause) != 0)
        goto fail;
    if (xml && net_platform_supported(t, &cause) != 0)
        goto fail;
    rc = 0;
    if (xml)
        rc = write_platform(t, xml_path);
    else
        topo_print(t, stdout);
    topo_free(t);
    free(sets);
    return rc;
fail_flag_n:
    msg = xasprintf("--nodes: %s", cause);
    free(cause);
    cause = msg;
    goto fail;
fail_flag_g:
    msg = xasprintf("--gpus-per-node: %s", cause);
    free(cause);
    cause = msg;
fail:
    cmd_error("topology", cause, 0);
    free(cause);
    topo_free(t);
    free(sets);
    return EXIT_USAGE;
}

const struct cmd_entry cmd_topology_entry = {
    .name = "topology",
    .usage = "[NAME|FILE] [--set S.K=V] [--nodes N] [--simgrid-xml [FILE]]",
    .summary = "print one topology, or its SimGrid platform",
    .exec = cmd_topology,
    .help = cmd_topology_help,
};
