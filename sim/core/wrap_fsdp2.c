/*
 * wrap_fsdp2.c: FSDPModule settings that a training script calls on
 * chosen fully_shard groups rather than on the whole model, resolved
 * against the wrap plan and stored in each group's unit
 * (doc/fsdp-semantics.md §13.9.5):
 *
 *   model.tok_embeddings.set_unshard_in_backward(False)
 *       --no-unshard-in-backward model.embed_tokens
 *   model.layers[0].set_modules_to_forward_prefetch([model.layers[2]])
 *       --modules-to-forward-prefetch model.layers.0=model.layers.2
 *   (and set_modules_to_backward_prefetch, §13.9.1)
 *   fully_shard(model.layers[0], reshard_after_forward=4)
 *       --group-reshard-after-forward model.layers.0=4  (§13.9.3)
 *
 * A group is named by the path of a module fully_shard was called on
 * (as named_modules() gives it), since the method exists only on an
 * FSDPModule; the root by the model's name.
 */
#include "wrap.h"
#include "layer.h"
#include "xalloc.h"

#include <stdlib.h>
#include <string.h>

/* The unit of the module at PATH (LEN bytes): a module fully_shard was
 * called on.  -1 with *cause naming FLAG otherwise. */
static int
group_at(const struct model *m, const struct wrap_plan *plan,
         const char *flag, const char *path, size_t len, char **cause)
{
    const struct module *mod = strlen(m->name) == len
                                       && strncmp(m->name, path, len) == 0
                                   ? m->root
                                   : wrap_find_module(m, path, len);
    if (mod == NULL) {
        *cause = xasprintf("--%s: model '%s' has no module '%.*s' (paths "
                           "as named_modules() gives them; 'fsdpsim models "
                           "--show %s' lists them)", flag, m->name, (int)len,
                           path, m->name);
        return -1;
    }
    int u = plan->unit_at[mod->index];
    if (u < 0) {
        *cause = xasprintf("--%s: '%.*s' is not a module fully_shard was "
                           "called on (the FSDPModule methods exist only "
                           "there); with --fsdp2-groups torchtitan the "
                           "token embedding is a group of its own", flag,
                           (int)len, path);
        return -1;
    }
    return u;
}

/* set_unshard_in_backward(False) (FSDPModule, _fully_shard.py) makes the
 * group's unshard return at once in PRE_BACKWARD (FSDPParamGroup.unshard,
 * _fsdp_param_group.py), which is right only when backward reads none of
 * its parameters: its docstring's example is the embedding, whose weight
 * gradient is a scatter of the output gradient.  Every other layer with
 * weights (a Linear's input gradient needs its weight, a norm's its
 * scale), or a weight tied to one, needs them, and PyTorch would fail. */
static const struct module *
needed_in_backward(const struct model *m, const struct wrap_plan *plan,
                   int u)
{
    for (int i = 0; i < m->n_modules; i++) {
        const struct module *mod = m->modules[i];
        if (plan->owner[i] == u && mod->kind != LAYER_CONTAINER
            && (mod->own_params > 0 || mod->tied)
            && (mod->kind != LAYER_EMBEDDING || mod->tied))
            return mod;
    }
    return NULL;
}

static int
no_unshard_in_backward(const struct model *m, const struct run_config *c,
                       struct wrap_plan *plan, char **cause)
{
    const char *rest = c->no_unshard_in_backward, *p;
    size_t len;
    while ((p = wrap_list_next(&rest, &len)) != NULL) {
        if (len == 0)
            continue;
        int u = group_at(m, plan, "no-unshard-in-backward", p, len, cause);
        if (u < 0)
            return -1;
        const struct module *used = needed_in_backward(m, plan, u);
        if (used != NULL) {
            char *path = model_module_path(used);
            *cause = xasprintf("--no-unshard-in-backward: the group of "
                               "'%.*s' holds '%s' (%s), whose parameters "
                               "backward reads; set_unshard_in_backward("
                               "False) suits a group of embeddings only",
                               (int)len, p, path, used->cls);
            free(path);
            return -1;
        }
        plan->units[u].no_unshard_in_backward = true;
    }
    return 0;
}

/* GROUP.set_modules_to_forward_prefetch(MODULES) or ..._backward_...
 * (BACKWARD), from "GROUP=MODULE,...": the list of GROUP's unit, each
 * MODULE's unit in the order given.  A later list for the same group
 * replaces the earlier one, as a second call does. */
static int
prefetch_list(const struct model *m, struct wrap_plan *plan, int backward,
              const char *spec, char **cause)
{
    const char *flag = backward ? "modules-to-backward-prefetch"
                                : "modules-to-forward-prefetch";
    const char *eq = strchr(spec, '=');
    size_t glen = (size_t)(eq - spec);
    while (glen > 0 && spec[glen - 1] == ' ')
        glen--;
    int g = group_at(m, plan, flag, spec, glen, cause);
    if (g < 0)
        return -1;
    struct fsdp_unit *fu = &plan->units[g];
    free(fu->prefetch[backward]);
    fu->prefetch[backward] = NULL;
    fu->n_prefetch[backward] = 0;
    const char *rest = eq + 1, *p;
    size_t len;
    while ((p = wrap_list_next(&rest, &len)) != NULL) {
        if (len == 0)
            continue;
        int u = group_at(m, plan, flag, p, len, cause);
        if (u < 0)
            return -1;
        int n = fu->n_prefetch[backward];
        fu->prefetch[backward] = xrealloc(fu->prefetch[backward],
                                          sizeof(int) * (size_t)(n + 1));
        fu->prefetch[backward][n] = u;
        fu->n_prefetch[backward] = n + 1;
    }
    return 0;
}

/* fully_shard(GROUP, reshard_after_forward=VALUE) from "GROUP=VALUE":
 * an int must divide the shard group (_get_post_forward_mesh_info,
 * _fsdp_init.py); the group's size is True. */
static int
group_raf(const struct model *m, struct wrap_plan *plan, int shard_size,
          const char *spec, char **cause)
{
    const char *eq = strchr(spec, '=');
    size_t glen = (size_t)(eq - spec);
    while (glen > 0 && spec[glen - 1] == ' ')
        glen--;
    int g = group_at(m, plan, "group-reshard-after-forward", spec, glen,
                     cause);
    if (g < 0)
        return -1;
    struct fsdp_unit *fu = &plan->units[g];
    config_group_raf_value(spec, &fu->raf, &fu->raf_size);
    if (fu->raf_size > 0
        && (fu->raf_size > shard_size || shard_size % fu->raf_size != 0)) {
        *cause = xasprintf("--group-reshard-after-forward %s: the "
                           "post-forward mesh must be a divisor of the "
                           "shard group (%d ranks), fully_shard's rule "
                           "(_get_post_forward_mesh_info)", spec,
                           shard_size);
        return -1;
    }
    if (fu->raf_size == shard_size)
        fu->raf_size = 0;       /* True */
    fu->raf_given = true;
    return 0;
}

int
wrap_fsdp2_settings(const struct model *m, const struct run_config *c,
                    int shard_size, struct wrap_plan *plan, char **cause)
{
    for (int i = 0; i < c->n_group_raf; i++)
        if (group_raf(m, plan, shard_size, c->group_raf[i], cause) != 0)
            return -1;
    for (int u = 0; u < plan->n_units; u++)
        plan->units[u].n_prefetch[0] = plan->units[u].n_prefetch[1] = -1;
    for (int k = 0; k < 2; k++)
        for (int i = 0; i < c->n_prefetch_lists[k]; i++)
            if (prefetch_list(m, plan, k, c->prefetch_lists[k][i], cause)
                != 0)
                return -1;
    if (c->no_unshard_in_backward != NULL
        && no_unshard_in_backward(m, c, plan, cause) != 0)
        return -1;
    return 0;
}
