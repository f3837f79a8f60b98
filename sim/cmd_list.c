/*
 * cmd_list.c: `fsdpsim models` and `fsdpsim topologies`: what is built in,
 * and the whole of one model tree or topology.
 */
#include "builtin.h"
#include "cmd.h"
#include "model.h"
#include "topo.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

void
cmd_models_help(FILE *out)
{
    fprintf(out, "usage: fsdpsim models [--show NAME|FILE]\n\n"
            "Without options, list the built-in models with their parameter "
            "counts.\nWith --show, print the module tree of a built-in model, "
            "a native .ini or a\nHugging Face config.json, with parameters "
            "per module.\n");
}

void
cmd_topologies_help(FILE *out)
{
    fprintf(out, "usage: fsdpsim topologies [--show NAME|FILE]\n\n"
            "Without options, list the built-in topologies.  With --show, "
            "print one as a\ntopology file (every field, with units), ready "
            "to copy and edit.\n");
}

/* Parse "--show X" / "-h"; returns 0 ok, 1 help, -1 error. */
static int
parse_show(const char *cmd, int argc, char **argv, const char **show)
{
    static const struct option opts[] = {
        {"show", required_argument, NULL, 's'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    int c;
    *show = NULL;
    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, ":hs:", opts, NULL)) != -1) {
        if (c == 's') {
            *show = optarg;
        } else if (c == 'h') {
            return 1;
        } else {
            char msg[256];
            snprintf(msg, sizeof msg, c == ':' ? "option '%s' needs a value"
                                               : "unknown option '%s'",
                     argv[optind - 1]);
            cmd_error(cmd, msg, 1);
            return -1;
        }
    }
    if (optind < argc) {
        char msg[256];
        snprintf(msg, sizeof msg, "unexpected argument '%s'", argv[optind]);
        cmd_error(cmd, msg, 1);
        return -1;
    }
    return 0;
}

int
cmd_models(int argc, char **argv)
{
    const char *show;
    int rc = parse_show("models", argc, argv, &show);
    if (rc == 1) {
        cmd_models_help(stdout);
        return 0;
    }
    if (rc < 0)
        return EXIT_USAGE;
    char *cause = NULL;
    if (show) {
        struct model *m = model_load(show, &cause);
        if (m == NULL) {
            cmd_error("models", cause, 0);
            free(cause);
            return EXIT_USAGE;
        }
        printf("# %s (%s): %lld parameters, layer class %s\n", m->name,
               m->source, (long long)m->n_params,
               m->layer_cls ? m->layer_cls : "-");
        model_print_tree(m, stdout);
        model_free(m);
        return 0;
    }
    printf("# name params layer_class format\n");
    for (int i = 0; i < builtin_n_files; i++) {
        const struct builtin_file *f = &builtin_files[i];
        if (strcmp(f->dir, "models") != 0)
            continue;
        struct model *m = model_load(f->name, &cause);
        if (m == NULL) {
            cmd_error("models", cause, 0);
            free(cause);
            return EXIT_SYSTEM;
        }
        printf("%-14s %8.2fB  %-20s %s\n", f->name, m->n_params / 1e9,
               m->layer_cls ? m->layer_cls : "-",
               strcmp(f->ext, "json") == 0 ? "config.json" : "native");
        model_free(m);
    }
    return 0;
}

int
cmd_topologies(int argc, char **argv)
{
    const char *show;
    int rc = parse_show("topologies", argc, argv, &show);
    if (rc == 1) {
        cmd_topologies_help(stdout);
        return 0;
    }
    if (rc < 0)
        return EXIT_USAGE;
    char *cause = NULL;
    if (show) {
        struct topo *t = topo_load(show, &cause);
        if (t == NULL || topo_validate(t, &cause) != 0) {
            cmd_error("topologies", cause, 0);
            free(cause);
            topo_free(t);
            return EXIT_USAGE;
        }
        topo_print(t, stdout);
        topo_free(t);
        return 0;
    }
    printf("# name gpu gpus_per_node memory intra inter\n");
    for (int i = 0; i < builtin_n_files; i++) {
        const struct builtin_file *f = &builtin_files[i];
        if (strcmp(f->dir, "topologies") != 0)
            continue;
        struct topo *t = topo_load(f->name, &cause);
        if (t == NULL) {
            cmd_error("topologies", cause, 0);
            free(cause);
            return EXIT_SYSTEM;
        }
        printf("%-14s %-18s %dx  %4.0f GiB  %s %.0f GB/s  %d x %.0f Gb/s\n",
               f->name, t->gpu_name, t->gpus_per_node, t->hbm_bytes / 1073741824.0,
               t->fabric == FABRIC_PCIE ? "PCIe" : t->fabric == FABRIC_NVSWITCH
                                                       ? "NVSwitch" : "NVLink",
               t->intra_Bps / 1e9, t->nics_per_node, t->nic_Bps * 8 / 1e9);
        topo_free(t);
    }
    return 0;
}
