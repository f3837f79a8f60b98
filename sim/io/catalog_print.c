/*
 * catalog_print.c: the lists of built-in models and topologies (see
 * catalog_print.h).
 */
#include "catalog_print.h"

#include <string.h>

void
catalog_print_models_header(FILE *out)
{
    fprintf(out, "# name params layer_class format\n");
}

void
catalog_print_model(const struct builtin_file *f, const struct model *m,
                    FILE *out)
{
    fprintf(out, "%-14s %8.2fB  %-20s %s\n", f->name, m->n_params / 1e9,
            m->layer_cls ? m->layer_cls : "-",
            strcmp(f->ext, "json") == 0 ? "config.json" : "native");
}

void
catalog_print_topologies_header(FILE *out)
{
    fprintf(out, "# name gpu gpus_per_node memory intra inter\n");
}

/* The "# From:" comment of a built-in topology file (its sources in
 * short, continued on lines that start "#       ") as one "#   from: ..."
 * line; nothing when the file has none. */
static void
print_sources(const char *text, FILE *out)
{
    const char *p = strstr(text, "\n# From: ");
    if (p == NULL)
        return;
    p += strlen("\n# From: ");
    fputs("#   from: ", out);
    for (;;) {
        const char *eol = strchr(p, '\n');
        size_t n = eol ? (size_t)(eol - p) : strlen(p);
        fwrite(p, 1, n, out);
        if (eol == NULL || strncmp(eol + 1, "#       ", 8) != 0)
            break;
        p = eol + 1 + 8;
        fputc(' ', out);
    }
    fputc('\n', out);
}

void
catalog_print_topology(const struct builtin_file *f, const struct topo *t,
                       FILE *out)
{
    fprintf(out, "%-18s %-18s %dx  %4.0f GiB  %s %.0f GB/s  %d x %.0f "
            "Gb/s\n", f->name, t->gpu_name, t->gpus_per_node,
            t->hbm_bytes / 1073741824.0,
            t->fabric == FABRIC_PCIE       ? "PCIe"
            : t->fabric == FABRIC_NVSWITCH ? "NVSwitch"
                                           : "NVLink",
            t->intra_Bps / 1e9, t->nics_per_node, t->nic_Bps * 8 / 1e9);
    print_sources(f->text, out);
}

void
catalog_print_tree_header(const struct model *m, int64_t mb, int64_t seq,
                          int act_bytes, FILE *out)
{
    fprintf(out, "# %s (%s): %lld parameters, layer class %s\n", m->name,
            m->source, (long long)m->n_params,
            m->layer_cls ? m->layer_cls : "-");
    fprintf(out, "# costs for one micro-batch of %lld x %lld tokens, "
            "%d-byte activations\n", (long long)mb, (long long)seq,
            act_bytes);
}
