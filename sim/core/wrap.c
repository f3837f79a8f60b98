/*
 * wrap.c: auto-wrap policies and FlatParameter sizing (see wrap.h).
 */
#include "wrap.h"
#include "layer.h"
#include "xalloc.h"

#include <stdlib.h>
#include <string.h>

/* The next item of the comma-separated list at *P, spaces around it
 * trimmed: its start, and its length in *LEN (0 for an empty item), with
 * *P moved past it; NULL when the list is done. */
const char *
wrap_list_next(const char **p, size_t *len)
{
    const char *s = *p;
    if (s == NULL || *s == '\0')
        return NULL;
    const char *e = strchr(s, ',');
    size_t n = e ? (size_t)(e - s) : strlen(s);
    *p = e ? e + 1 : NULL;
    while (n > 0 && *s == ' ') {
        s++;
        n--;
    }
    while (n > 0 && s[n - 1] == ' ')
        n--;
    *len = n;
    return s;
}

int
wrap_class_matches(const char *cls, const char *class_list)
{
    size_t n = strlen(cls), len;
    const char *p = class_list;
    for (const char *item; (item = wrap_list_next(&p, &len)) != NULL; )
        if (len == n && strncmp(item, cls, n) == 0)
            return 1;
    return 0;
}

struct wrap_ctx {
    const struct run_config *c;
    const char *layer_cls;
    int *is_unit;               /* per module index */
};

/* size_based_auto_wrap_policy: FORCE_LEAF_MODULES and
 * EXCLUDE_WRAP_MODULES defaults (torch/distributed/fsdp/wrap.py). */
static int
is_force_leaf(const struct module *m)
{
    return strcmp(m->cls, "MultiheadAttention") == 0;
}

static int
is_excluded(const struct module *m)
{
    return strcmp(m->cls, "ModuleList") == 0
           || strcmp(m->cls, "ModuleDict") == 0;
}

static int
policy(const struct wrap_ctx *x, const struct module *m, int recurse,
       int64_t nonwrapped_numel)
{
    if (x->c->wrap == WRAP_NONE)
        return 0;           /* auto_wrap_policy=None: no recursion */
    if (x->c->wrap == WRAP_TRANSFORMER || x->c->wrap == WRAP_MODULE)
        return recurse ? 1 : wrap_class_matches(m->cls, x->layer_cls);
    int is_large = nonwrapped_numel >= x->c->min_num_params;
    return recurse ? is_large && !is_force_leaf(m)
                   : is_large && !is_excluded(m);
}

/* _recursive_wrap: returns the numel now wrapped in m's subtree. */
static int64_t
recursive_wrap(struct wrap_ctx *x, const struct module *m,
               int only_wrap_children)
{
    int64_t total = m->subtree_params;
    if (!policy(x, m, 1, total))
        return 0;
    int64_t done = 0;
    for (int i = 0; i < m->n_children; i++)
        done += recursive_wrap(x, m->children[i], 0);
    int64_t remainder = total - done;
    if (!only_wrap_children && policy(x, m, 0, remainder)) {
        x->is_unit[m->index] = 1;
        return total;
    }
    return done;
}

/* FlatParameter numel with use_orig_params=True: each original parameter
 * starts at a multiple of 16 bytes of the compute dtype, then the total is
 * padded to a multiple of the process group's size W
 * (_flat_param.py _init_flat_param_and_metadata, _get_aligned_numel;
 * FlatParamHandle takes W from process_group.size() whatever the
 * strategy, so NO_SHARD pads too, and its "shard" is the padded whole). */
static int64_t
aligned_numel(const struct model *m, const struct wrap_plan *p, int unit,
              int align, int shard_size)
{
    int64_t off = 0;
    for (int i = 0; i < m->n_modules; i++) {
        if (p->owner[i] != unit)
            continue;
        int64_t sizes[4];
        int n = layer_param_tensors(m->modules[i], sizes);
        for (int k = 0; k < n; k++) {
            if (off % align)
                off += align - off % align;
            off += sizes[k];
        }
    }
    if (off % shard_size)
        off += shard_size - off % shard_size;
    return off;
}

/* FSDP2 (fully_shard): each parameter is split on dim 0 with torch.chunk
 * rounding, every rank's piece padded to ceil(d0/W) rows
 * (_fsdp_param.py _init_sharded_param: padded_sharded_param_size is
 * chunks[0]'s size), so the all-gather moves W * sum ceil(d0_i/W) *
 * rest_i elements, the padding per parameter (doc/fsdp-semantics.md
 * §1.8).  Returns that padded total; the shard is it divided by W. */
static int64_t
fsdp2_padded_numel(const struct model *m, const struct wrap_plan *p,
                   int unit, int shard_size, int64_t *float8_weights)
{
    int64_t total = 0, listed = 0;
    *float8_weights = 0;
    for (int i = 0; i < m->n_modules; i++) {
        if (p->owner[i] != unit)
            continue;
        int64_t sizes[4], dim0[4];
        int n = layer_param_tensors(m->modules[i], sizes);
        layer_param_dim0(m->modules[i], dim0);
        for (int k = 0; k < n; k++) {
            int64_t rest = dim0[k] > 0 ? sizes[k] / dim0[k] : 0;
            int64_t rows = (dim0[k] + shard_size - 1) / shard_size;
            total += (int64_t)shard_size * rows * rest;
            listed += sizes[k];
            /* A Float8Linear's weight (its first tensor, untied) */
            if (k == 0 && layer_float8_linear(m->modules[i])
                && !m->modules[i]->tied)
                *float8_weights += (int64_t)shard_size * rows * rest;
        }
    }
    /* Parameters of a kind with no listed tensors count as one 1-D
     * tensor. */
    int64_t other = p->units[unit].numel - listed;
    if (other > 0)
        total += (other + shard_size - 1) / shard_size * shard_size;
    return total;
}

/* The module a dotted path names: "encoder.block.0", or with the leading
 * name of the Python variable holding the root ("model.encoder"), as
 * wrap(model.encoder) is written. */
const struct module *
wrap_find_module(const struct model *m, const char *path, size_t len)
{
    for (int pass = 0; pass < 2; pass++) {
        const char *p = path;
        size_t n = len;
        if (pass == 1) {
            const char *dot = memchr(path, '.', len);
            if (dot == NULL)
                return NULL;
            n = len - (size_t)(dot + 1 - path);
            p = dot + 1;
        }
        for (int i = 1; i < m->n_modules; i++) {
            char *mp = model_module_path(m->modules[i]);
            int hit = strlen(mp) == n && strncmp(mp, p, n) == 0;
            free(mp);
            if (hit)
                return m->modules[i];
        }
    }
    return NULL;
}

/* Manual wrapping (fsdp/wrap.py): inside enable_wrap(wrapper_cls=FSDP),
 * each wrap(module) makes that module a unit, and the final
 * FSDP(model) (or wrap(model)) makes the root one.  No policy recurses. */
static int
manual_units(const struct model *m, const char *list, int *is_unit,
             char **cause)
{
    const char *rest = list;
    size_t len;
    for (const char *p; (p = wrap_list_next(&rest, &len)) != NULL; ) {
        if (len > 0) {
            const struct module *mod = wrap_find_module(m, p, len);
            if (mod == NULL) {
                *cause = xasprintf("--wrap: model '%s' has no module "
                                   "'%.*s' (paths as named_modules() "
                                   "gives them, e.g. encoder or "
                                   "model.encoder; 'fsdpsim models --show "
                                   "%s' lists them)", m->name, (int)len, p,
                                   m->name);
                return -1;
            }
            is_unit[mod->index] = 1;
        }
    }
    return 0;
}

/* Whether MOD or an ancestor is already a unit (a block). */
static int
in_unit(const struct module *mod, const int *is_unit)
{
    for (const struct module *p = mod; p != NULL; p = p->parent)
        if (is_unit[p->index])
            return 1;
    return 0;
}

/* torchtitan's apply_fsdp since its v0.2.0 (#1094, 2025-07-28;
 * apply_fsdp_to_decoder in torchtitan/distributed/fsdp.py today), after
 * fully_shard on each block: fully_shard(tok_embeddings), then
 * fully_shard([norm, output]) as one group, and with tied weights
 * [tok_embeddings, norm, output] as one.  In a model file these are the
 * leaves with parameters (or a tied weight) before the first block and
 * after the last; a group of several is tagged by its first module's
 * index + 1 in IS_UNIT (doc/fsdp-semantics.md §13.13). */
static void
torchtitan_groups(const struct model *m, int *is_unit)
{
    int first = -1, last = -1;
    for (int i = 0; i < m->n_modules; i++)
        if (is_unit[i]) {
            if (first < 0)
                first = i;
            last = i;
        }
    if (first < 0)
        return;
    int tied = 0;
    for (int i = 0; i < m->n_modules; i++)
        tied |= m->modules[i]->tied;
    int *blocks = xmalloc(sizeof(int) * m->n_modules);
    memcpy(blocks, is_unit, sizeof(int) * m->n_modules);
    int tag[2] = {0, 0};        /* prologue, epilogue */
    for (int i = 0; i < m->n_modules; i++) {
        const struct module *mod = m->modules[i];
        if (mod->kind == LAYER_CONTAINER || in_unit(mod, blocks)
            || (mod->own_params == 0 && !mod->tied))
            continue;
        if (i > first && i < last)
            continue;           /* between blocks: the root's */
        int side = i > last && !tied;
        if (tag[side] == 0)
            tag[side] = i + 1;
        if (tied)
            tag[1] = tag[0];
        is_unit[i] = tag[side];
    }
    free(blocks);
}

int
wrap_plan_build(const struct model *m, const struct run_config *c,
                int shard_size, int pg_size, struct wrap_plan *plan,
                char **cause)
{
    memset(plan, 0, sizeof *plan);
    if (c->sharding == SHARDING_DDP) {
        /* DDP: one replica of the whole model, no units; the root stands
         * for it so that the schedule has one owner for every leaf. */
        struct run_config one = *c;
        one.sharding = SHARDING_NO_SHARD;
        one.wrap = WRAP_NONE;
        one.wrap_modules = NULL;
        one.use_orig_params = false;    /* no FlatParameter to pad */
        return wrap_plan_build(m, &one, 1, 1, plan, cause);
    }
    const char *cls = c->wrap == WRAP_MODULE ? c->wrap_classes
                      : c->layer_cls ? c->layer_cls : m->layer_cls;
    if (c->wrap_modules != NULL) {
        /* Manual wrapping: no auto_wrap_policy. */
    } else if (c->wrap == WRAP_MODULE) {
        int found = 0;
        for (int i = 0; i < m->n_modules && !found; i++)
            found = wrap_class_matches(m->modules[i]->cls, cls);
        if (!found) {
            *cause = xasprintf("--wrap-classes: no module of class '%s' in "
                               "model '%s', so ModuleWrapPolicy would wrap "
                               "nothing but the root (see 'fsdpsim models "
                               "--show %s' for its classes)", cls, m->name,
                               m->name);
            return -1;
        }
    } else if (c->wrap == WRAP_TRANSFORMER) {
        if (cls == NULL) {
            *cause = xasprintf("model '%s' names no layer class; give "
                               "--transformer-layer-cls CLASS or use "
                               "--auto-wrap-policy size", m->name);
            return -1;
        }
        int found = 0;
        for (int i = 0; i < m->n_modules && !found; i++)
            found = wrap_class_matches(m->modules[i]->cls, cls);
        if (!found) {
            *cause = xasprintf("--transformer-layer-cls: no module of class "
                               "'%s' in model '%s', so the policy would wrap "
                               "nothing but the root (see 'fsdpsim models "
                               "--show %s' for its classes)", cls, m->name,
                               m->name);
            return -1;
        }
    }

    struct wrap_ctx x = {c, cls, xcalloc(m->n_modules, sizeof(int))};
    if (c->wrap_modules != NULL) {
        if (manual_units(m, c->wrap_modules, x.is_unit, cause) != 0) {
            free(x.is_unit);
            return -1;
        }
    } else {
        recursive_wrap(&x, m->root, 1);
        if (c->fsdp_version == 2
            && c->fsdp2_groups == FSDP2_GROUPS_TORCHTITAN)
            torchtitan_groups(m, x.is_unit);
    }
    x.is_unit[0] = 1;           /* the FSDP constructor wraps the root */

    /* is_unit: 0, 1 (a unit of its own) or a group's tag (its first
     * module's index + 1, shared by its members). */
    plan->unit_at = xmalloc(sizeof(int) * m->n_modules);
    plan->owner = xmalloc(sizeof(int) * m->n_modules);
    int n = 0;
    for (int i = 0; i < m->n_modules; i++) {
        int tag = x.is_unit[i];
        plan->unit_at[i] = tag == 0 ? -1
                           : tag == 1 || tag == i + 1 ? n++
                                                      : plan->unit_at[tag - 1];
    }
    free(x.is_unit);

    plan->n_units = n;
    plan->units = xcalloc(n, sizeof *plan->units);
    for (int i = 0; i < m->n_modules; i++) {
        const struct module *mod = m->modules[i];
        int u = plan->unit_at[i];
        if (u < 0)              /* pre-order: the parent is already set */
            u = plan->owner[mod->parent->index];
        else {
            if (plan->units[u].mod == NULL)
                plan->units[u].mod = mod;
            plan->units[u].last_mod = mod;
        }
        plan->owner[i] = u;
        plan->units[u].id = u;
        plan->units[u].numel += mod->own_params;
    }

    int align = 16 / dtype_bytes(c->param_dtype);
    for (int u = 0; u < n; u++) {
        struct fsdp_unit *fu = &plan->units[u];
        if (c->use_orig_params && c->fsdp_version == 1) {
            fu->padded_numel = aligned_numel(m, plan, u, align,
                                             pg_size > 0 ? pg_size : 1);
            fu->shard_numel = fu->padded_numel / shard_size;
        } else if (shard_size == 1) {
            fu->padded_numel = fu->shard_numel = fu->numel;
        } else if (c->fsdp_version == 2) {
            int64_t f8 = 0;
            fu->padded_numel = fsdp2_padded_numel(m, plan, u, shard_size,
                                                  &f8);
            fu->shard_numel = fu->padded_numel / shard_size;
            if (c->float8_all_gather)
                fu->float8_padded_numel = f8;
        } else {
            /* torch.chunk semantics: chunk size is the ceiling. */
            fu->shard_numel = (fu->numel + shard_size - 1) / shard_size;
            fu->padded_numel = fu->shard_numel * shard_size;
        }
    }
    if (c->fsdp_version == 2 && wrap_fsdp2_settings(m, c, shard_size, plan, cause) != 0)
    {
        wrap_plan_free(plan);
        return -1;
    }
    return 0;
}

void
wrap_plan_free(struct wrap_plan *plan)
{
    for (int u = 0; u < plan->n_units; u++) {
        free(plan->units[u].prefetch[0]);
        free(plan->units[u].prefetch[1]);
    }
    free(plan->units);
    free(plan->owner);
    free(plan->unit_at);
    memset(plan, 0, sizeof *plan);
}
