/*
 * wrap.h: FSDP units from a module tree, as FullyShardedDataParallel's
 * auto_wrap_policy forms them.
 *
 * transformer_auto_wrap_policy wraps every module of the given class(es);
 * size_based_auto_wrap_policy follows PyTorch's _recursive_wrap exactly
 * (doc/fsdp-semantics.md §1.2-1.3): whole-subtree counts decide recursion,
 * the leftover after wrapped children decides wrapping, MultiheadAttention is
 * a forced leaf, ModuleList/ModuleDict are never wrapped, and the root is
 * always a unit.  With no policy (WRAP_NONE, FSDP(model)) the root is the
 * only unit.  Then each unit's FlatParameter is sized with PyTorch's
 * padding rules (§1.7).
 */
#ifndef FSDPSIM_WRAP_H
#define FSDPSIM_WRAP_H

#include <stdbool.h>
#include <stdint.h>

#include "runconf.h"
#include "model.h"

struct fsdp_unit {
    int id;                     /* 0 is the root */
    const struct module *mod;   /* the wrapped module (of a group of
                                   several, fully_shard([a, b]): the
                                   first in pre-order) */
    const struct module *last_mod; /* the group's last module (mod when
                                      it has one) */
    int64_t numel;              /* N: parameters the unit owns */
    int64_t padded_numel;       /* W*S: the all-gather output numel */
    int64_t shard_numel;        /* S: per-rank shard numel */
    int64_t float8_padded_numel; /* FSDP2 float8 all-gather: the share of
                                    padded_numel that is Float8Linear
                                    weights, gathered at one byte */
    bool no_unshard_in_backward; /* FSDP2 set_unshard_in_backward(False) */
    int *prefetch[2];           /* FSDP2: the units of its
                                   set_modules_to_forward_prefetch ([0])
                                   and ..._backward_prefetch ([1]) list */
    int n_prefetch[2];          /* their lengths; -1: no list given */
    bool raf_given;             /* FSDP2: this group's own
                                   reshard_after_forward (--group-reshard-
                                   after-forward): raf, or an N-rank
                                   post-forward mesh (raf_size > 0) */
    bool raf;
    int64_t raf_size;
};

struct wrap_plan {
    struct fsdp_unit *units;
    int n_units;
    int *owner;                 /* per module index: owning unit id */
    int *unit_at;               /* per module index: unit id or -1 */
};

/* shard_size: W, the size of the sharding group (1 for NO_SHARD);
 * pg_size: the size of the unit's process group, which FSDP1's
 * use_orig_params padding rounds to even where nothing is sharded
 * (NO_SHARD: every data-parallel rank).  Returns 0, or -1 with *cause
 * (caller frees). */
int wrap_plan_build(const struct model *m, const struct run_config *c,
                    int shard_size, int pg_size, struct wrap_plan *plan,
                    char **cause);
void wrap_plan_free(struct wrap_plan *plan);

/* The module a dotted path names ("model.layers.0", or with the leading
 * name of the variable holding the root, as wrap(model.encoder) is
 * written), or NULL. */
const struct module *wrap_find_module(const struct model *m,
                                      const char *path, size_t len);
/* The next item of the comma-separated list at *P, spaces trimmed (its
 * length in *LEN), *P moved past it; NULL when the list is done. */
const char *wrap_list_next(const char **p, size_t *len);

/* FSDP2 (wrap_fsdp2.c): the FSDPModule settings given for chosen groups
 * (--no-unshard-in-backward, --modules-to-forward-prefetch,
 * --modules-to-backward-prefetch and --group-reshard-after-forward),
 * checked and stored in their units.
 * Returns 0, or -1 with *cause. */
int wrap_fsdp2_settings(const struct model *m, const struct run_config *c,
                        int shard_size, struct wrap_plan *plan, char **cause);

/* True when the module's class is one of the comma-separated names. */
int wrap_class_matches(const char *cls, const char *class_list);

#endif
