/*
 * catalog_print.h: what `fsdpsim models` and `fsdpsim topologies` list:
 * a row per built-in model (parameters, layer class, format) or topology
 * (GPU, memory, intra-node and network bandwidth, where its numbers come
 * from), and the heading of one model's module tree.
 */
#ifndef FSDPSIM_CATALOG_PRINT_H
#define FSDPSIM_CATALOG_PRINT_H

#include <stdint.h>
#include <stdio.h>

#include "builtin.h"
#include "model.h"
#include "topo.h"

void catalog_print_models_header(FILE *out);
/* Built-in file F, loaded as M. */
void catalog_print_model(const struct builtin_file *f, const struct model *m,
                         FILE *out);
void catalog_print_topologies_header(FILE *out);
/* Built-in file F, loaded as T, with the sources its "# From:" comment
 * names. */
void catalog_print_topology(const struct builtin_file *f,
                            const struct topo *t, FILE *out);
/* Above M's module tree: its parameters and the micro-batch (MB x SEQ
 * tokens, ACT_BYTES-byte activations) the costs are for. */
void catalog_print_tree_header(const struct model *m, int64_t mb,
                               int64_t seq, int act_bytes, FILE *out);

#endif
