/*
 * runconf_fsdp2.c: the run settings of FSDP2 (fully_shard), parsed and
 * checked apart from FSDP1's so that each reads as PyTorch spells it
 * (doc/fsdp-semantics.md §13.1):
 *
 *   fully_shard(module, mesh=init_device_mesh(..., (dp_replicate, dp_shard)),
 *               reshard_after_forward=True | False | N,
 *               mp_policy=MixedPrecisionPolicy(param_dtype, reduce_dtype,
 *                                              output_dtype,
 *                                              cast_forward_inputs),
 *               offload_policy=CPUOffloadPolicy())
 *
 * and the FSDPModule methods called after it (§13.9):
 *
 *   group.set_modules_to_forward_prefetch(next N)   forward_prefetch
 *   group.set_modules_to_backward_prefetch(next N)  backward_prefetch
 *   model.set_reshard_after_backward(last micro)    reshard_after_backward
 *   model.set_requires_all_reduce(last micro)       requires_all_reduce
 *   model.set_requires_gradient_sync(last micro)    no_sync
 *
 * The keys are parsed in runconf.c's config_set, the values that are a
 * bool or an int here.  param_dtype, reduce_dtype, cpu_offload,
 * forward_prefetch and backward_prefetch (FSDP1's bool and policy name,
 * FSDP2's count of groups) and no_sync are shared with FSDP1.
 */
#include "runconf.h"
#include "units.h"
#include "xalloc.h"

#include <stdlib.h>
#include <string.h>

void
config_init_fsdp2(struct run_config *c)
{
    c->fsdp_version = 1;
    c->reshard_after_forward = true;      /* fully_shard's default */
    c->reshard_after_forward_last = true;
    c->reshard_after_backward = true;     /* FSDPParamGroup's default */
    c->requires_all_reduce = true;        /* all_reduce_grads */
    c->backward_prefetch_groups = -1;     /* not given: implicit */
    c->cast_forward_inputs = true;        /* MixedPrecisionPolicy's */
    c->output_dtype = DTYPE_FP32;
}

/* reshard_after_forward: a bool, or an int N (PyTorch tests for bool
 * first: True is not the int 1).  Here "1" and "0" are booleans, as in
 * every flag, so the int 1 (which fully_shard reads as False) is not
 * written. */
static int
parse_reshard_after_forward(const char *value, const char *origin,
                            bool *reshard, int64_t *size, char **cause)
{
    bool b;
    char *why = NULL;
    if (value == NULL || *value == '\0') {
        *cause = xasprintf("%s: needs true, false or a rank count N (the "
                           "post-forward mesh size)", origin);
        return -1;
    }
    if (units_parse_bool(value, &b, &why) == 0) {
        *reshard = b;
        *size = 0;
        return 0;
    }
    free(why);
    why = NULL;
    int64_t n;
    if (units_parse_count(value, 2, 100000, &n, &why) != 0) {
        *cause = xasprintf("%s: '%s' is neither true/false nor a rank count "
                           "of 2 or more (reshard_after_forward=N keeps a "
                           "shard over N ranks, a divisor of the shard "
                           "group)", origin, value);
        free(why);
        return -1;
    }
    *reshard = true;
    *size = n;
    return 0;
}

static int
set_reshard_after_forward(bool *reshard, int64_t *size, bool *given,
                          const char *value, const char *origin,
                          char **cause)
{
    if (parse_reshard_after_forward(value, origin, reshard, size, cause)
        != 0)
        return -1;
    *given = true;
    return 0;
}

int
config_set_reshard_after_forward(struct run_config *c, const char *value,
                                 const char *origin, char **cause)
{
    return set_reshard_after_forward(&c->reshard_after_forward,
                                     &c->reshard_after_forward_size,
                                     &c->reshard_after_forward_given, value,
                                     origin, cause);
}

/* The last group's own fully_shard(reshard_after_forward=...), as
 * torchtitan passes False for the last transformer block (before its
 * #1094, 2025) or for the [norm, output] group (after). */
int
config_set_reshard_after_forward_last(struct run_config *c,
                                      const char *value, const char *origin,
                                      char **cause)
{
    return set_reshard_after_forward(&c->reshard_after_forward_last,
                                     &c->reshard_after_forward_last_size,
                                     &c->reshard_after_forward_last_given,
                                     value, origin, cause);
}

/* forward_prefetch: a bool (bare: true) or a count of groups, 0 to 64
 * (true is 1: FSDP2's list of the next group). */
int
config_set_forward_prefetch(struct run_config *c, const char *value,
                            const char *origin, char **cause)
{
    bool b = true;
    char *why = NULL;
    int64_t n;
    if (value == NULL || units_parse_bool(value, &b, &why) == 0) {
        c->forward_prefetch = b;
        c->forward_prefetch_groups = b;
        return 0;
    }
    free(why);
    why = NULL;
    if (units_parse_count(value, 0, 64, &n, &why) != 0) {
        *cause = xasprintf("%s: '%s' is neither true/false nor a count of "
                           "groups from 0 to 64 (FSDP2: each group "
                           "prefetches the next N)", origin, value);
        free(why);
        return -1;
    }
    c->forward_prefetch = n > 0;
    c->forward_prefetch_groups = n;
    return 0;
}

/* backward_prefetch as FSDP2's count (0: an empty list, which keeps the
 * implicit prefetch, as _pre_backward tests the list's length); returns
 * 0 when VALUE is not a number (then it is FSDP1's policy name, parsed
 * by the caller). */
int
config_set_backward_prefetch_groups(struct run_config *c, const char *value,
                                    int64_t *n)
{
    char *why = NULL;
    if (value == NULL || units_parse_count(value, 0, 64, n, &why) != 0) {
        free(why);
        return 0;
    }
    c->backward_prefetch_groups = *n;
    return 1;
}

int
config_add_prefetch_list(struct run_config *c, int backward,
                         const char *value, const char *origin, char **cause)
{
    const char *eq = value ? strchr(value, '=') : NULL;
    if (eq == NULL || eq == value) {
        *cause = xasprintf("%s: '%s' is not GROUP=MODULE,... (GROUP the "
                           "module whose list it is, e.g. model.layers.0="
                           "model.layers.1,model.layers.2)", origin,
                           value ? value : "");
        return -1;
    }
    int n = c->n_prefetch_lists[backward];
    c->prefetch_lists[backward] = xrealloc(c->prefetch_lists[backward],
                                           sizeof(char *) * (size_t)(n + 1));
    c->prefetch_lists[backward][n] = xstrdup(value);
    c->n_prefetch_lists[backward] = n + 1;
    return 0;
}

/* GROUP=VALUE, VALUE as --reshard-after-forward takes it (checked now;
 * GROUP once the model is known, wrap_fsdp2.c). */
int
config_add_group_raf(struct run_config *c, const char *value,
                     const char *origin, char **cause)
{
    const char *eq = value ? strchr(value, '=') : NULL;
    if (eq == NULL || eq == value) {
        *cause = xasprintf("%s: '%s' is not GROUP=true|false|N (GROUP a "
                           "module fully_shard was called on, e.g. "
                           "model.layers.0=4)", origin, value ? value : "");
        return -1;
    }
    bool reshard;
    int64_t size;
    if (parse_reshard_after_forward(eq + 1, origin, &reshard, &size, cause)
        != 0)
        return -1;
    c->group_raf = xrealloc(c->group_raf,
                            sizeof(char *) * (size_t)(c->n_group_raf + 1));
    c->group_raf[c->n_group_raf++] = xstrdup(value);
    return 0;
}

/* The value of one GROUP=VALUE that config_add_group_raf accepted. */
void
config_group_raf_value(const char *spec, bool *reshard, int64_t *size)
{
    char *cause = NULL;
    if (parse_reshard_after_forward(strchr(spec, '=') + 1, "", reshard,
                                    size, &cause) != 0) {
        free(cause);
        *reshard = true;
        *size = 0;
    }
}

static const char *
fsdp2_only_flag(const struct run_config *c)
{
    if (c->fsdp2_groups != FSDP2_GROUPS_WRAP)
        return "fsdp2-groups";
    if (c->no_unshard_in_backward != NULL)
        return "no-unshard-in-backward";
    if (c->n_group_raf > 0)
        return "group-reshard-after-forward";
    if (c->n_prefetch_lists[0] > 0)
        return "modules-to-forward-prefetch";
    if (c->n_prefetch_lists[1] > 0)
        return "modules-to-backward-prefetch";
    if (c->reshard_after_forward_given)
        return "reshard-after-forward";
    if (c->reshard_after_forward_last_given)
        return "reshard-after-forward-last";
    if (c->reshard_after_backward_given)
        return "reshard-after-backward";
    if (c->requires_all_reduce_given)
        return "requires-all-reduce";
    if (c->dp_replicate > 0)
        return "dp-replicate";
    if (c->dp_shard > 0)
        return "dp-shard";
    if (c->output_dtype_given)
        return "output-dtype";
    if (c->cast_forward_inputs_given)
        return "cast-forward-inputs";
    return NULL;
}

int
config_validate_fsdp2(const struct run_config *c, char **cause)
{
    if (c->fsdp_version != 2) {
        const char *f = fsdp2_only_flag(c);
        if (f != NULL) {
            *cause = xasprintf("--%s: an FSDP2 (fully_shard) setting; add "
                               "--fsdp-version 2", f);
            return -1;
        }
        if (c->backward_prefetch_groups >= 0) {
            *cause = xasprintf("--backward-prefetch %lld: a count of groups "
                               "is FSDP2's set_modules_to_backward_prefetch "
                               "(add --fsdp-version 2); FSDP1 takes "
                               "BACKWARD_PRE, BACKWARD_POST or None",
                               (long long)c->backward_prefetch_groups);
            return -1;
        }
        if (c->forward_prefetch_groups > 1) {
            *cause = xasprintf("--forward-prefetch %lld: FSDP1's "
                               "forward_prefetch is true or false; a count "
                               "of groups is FSDP2's "
                               "set_modules_to_forward_prefetch (add "
                               "--fsdp-version 2)",
                               (long long)c->forward_prefetch_groups);
            return -1;
        }
        return 0;
    }
    /* What fully_shard has no argument for (§13.1). */
    if (c->sharding == SHARDING_DDP) {
        *cause = xstrdup("--fsdp-version 2 with DDP: choose one (DDP is "
                         "--strategy ddp with the default --fsdp-version)");
        return -1;
    }
    if (c->sharding != SHARDING_FULL_SHARD) {
        *cause = xasprintf("--sharding-strategy %s: fully_shard has no "
                           "sharding strategy; use --reshard-after-forward "
                           "false for SHARD_GRAD_OP and --dp-replicate R "
                           "for hybrid sharding", sharding_name(c->sharding));
        return -1;
    }
    if (c->use_orig_params || c->buffer_dtype_given
        || c->backward_prefetch != BWD_PREFETCH_PRE
        || !c->limit_all_gathers) {
        *cause = xasprintf("--%s: an FSDP1 argument fully_shard does not "
                           "take (FSDP2 keeps original parameters, leaves "
                           "buffers alone, prefetches one group ahead in "
                           "backward, or the next N with --backward-prefetch "
                           "N, and needs no rate limiter); drop it",
                           c->use_orig_params ? "use-orig-params"
                           : c->buffer_dtype_given ? "buffer-dtype"
                           : c->backward_prefetch != BWD_PREFETCH_PRE
                               ? "backward-prefetch"
                               : "limit-all-gathers");
        return -1;
    }
    if (c->fsdp2_groups != FSDP2_GROUPS_WRAP
        && (c->wrap_modules != NULL || c->wrap != WRAP_TRANSFORMER)) {
        /* torchtitan's apply_fsdp picks its modules itself (§13.13). */
        *cause = xasprintf("--%s with --fsdp2-groups %s: the groups are "
                           "torchtitan's (its blocks are the transformer "
                           "layer class); drop one of the two",
                           c->wrap_modules != NULL ? "wrap"
                                                   : "auto-wrap-policy",
                           c->fsdp2_groups == FSDP2_GROUPS_TORCHTITAN
                               ? "torchtitan" : "torchtitan-blocks");
        return -1;
    }
    if (c->ac == AC_REENTRANT) {
        *cause = xstrdup("--activation-checkpointing reentrant: fully_shard "
                         "is modelled with non-reentrant checkpointing "
                         "inside each group; use full, selective-layer or "
                         "selective-op");
        return -1;
    }
    return 0;
}

/* The FSDPModule settings given beyond fully_shard's arguments, for the
 * summary: ", forward prefetch of the next 2 groups, ..." or "". */
const char *
config_fsdp2_knobs_text(const struct run_config *c, char *buf, size_t len)
{
    size_t at = 0;
    buf[0] = '\0';
    if (c->fsdp2_groups != FSDP2_GROUPS_WRAP)
        at += (size_t)snprintf(buf, len, "%s",
                               c->fsdp2_groups == FSDP2_GROUPS_TORCHTITAN
                                   ? ", as torchtitan's apply_fsdp "
                                     "(tok_embeddings, blocks, [norm, "
                                     "output], root)"
                                   : ", as torchtitan v0.1.0's apply_fsdp "
                                     "(blocks, root)");
    const int64_t counts[2] = {c->forward_prefetch_groups,
                               c->backward_prefetch_groups};
    for (int i = 0; i < 2; i++)
        if (counts[i] > 0 && at < len)
            at += (size_t)snprintf(buf + at, len - at,
                                   ", %s prefetch of the next %lld "
                                   "group%s", i ? "backward" : "forward",
                                   (long long)counts[i],
                                   counts[i] == 1 ? "" : "s");
    if (c->reshard_after_forward_last_given && at < len) {
        char v[24];
        if (c->reshard_after_forward_last_size > 0)
            snprintf(v, sizeof v, "%lld",
                     (long long)c->reshard_after_forward_last_size);
        else
            snprintf(v, sizeof v, "%s",
                     c->reshard_after_forward_last ? "True" : "False");
        at += (size_t)snprintf(buf + at, len - at,
                               ", last group reshard_after_forward=%s", v);
    }
    for (int k = 0; k < 2; k++)
        for (int i = 0; i < c->n_prefetch_lists[k] && at < len; i++)
            at += (size_t)snprintf(buf + at, len - at,
                                   ", %s prefetch list %s",
                                   k ? "backward" : "forward",
                                   c->prefetch_lists[k][i]);
    for (int i = 0; i < c->n_group_raf && at < len; i++)
        at += (size_t)snprintf(buf + at, len - at,
                               ", %s reshard_after_forward", c->group_raf[i]);
    if (c->no_unshard_in_backward != NULL && at < len)
        at += (size_t)snprintf(buf + at, len - at,
                               ", set_unshard_in_backward(False) on %s",
                               c->no_unshard_in_backward);
    if (!c->reshard_after_backward && at < len)
        at += (size_t)snprintf(buf + at, len - at,
                               ", set_reshard_after_backward(False)");
    if (!c->requires_all_reduce && at < len)
        at += (size_t)snprintf(buf + at, len - at,
                               ", set_requires_all_reduce(False)");
    if ((!c->reshard_after_backward || !c->requires_all_reduce) && at < len)
        snprintf(buf + at, len - at, " but for a step's last micro-batch");
    return buf;
}

const char *
config_backward_prefetch_text(const struct run_config *c, char *buf,
                              size_t len)
{
    if (c->fsdp_version != 2)
        snprintf(buf, len, "%s",
                 backward_prefetch_name(c->backward_prefetch));
    else if (c->backward_prefetch_groups > 0)
        snprintf(buf, len, "%lld", (long long)c->backward_prefetch_groups);
    else
        snprintf(buf, len, "implicit");
    return buf;
}
