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
 * The keys are parsed in runconf.c's config_set, reshard_after_forward's
 * bool-or-int here.  param_dtype, reduce_dtype, cpu_offload,
 * forward_prefetch (as set_modules_to_forward_prefetch) and no_sync (as
 * set_requires_gradient_sync(False)) are shared with FSDP1.
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
    c->cast_forward_inputs = true;        /* MixedPrecisionPolicy's */
    c->output_dtype = DTYPE_FP32;
}

/* reshard_after_forward: a bool, or an int N (PyTorch tests for bool
 * first: True is not the int 1). */
int
config_set_reshard_after_forward(struct run_config *c, const char *value,
                                 const char *origin, char **cause)
{
    bool b;
    char *why = NULL;
    if (value == NULL || *value == '\0') {
        *cause = xasprintf("%s: needs true, false or a rank count N (the "
                           "post-forward mesh size)", origin);
        return -1;
    }
    if (units_parse_bool(value, &b, &why) == 0) {
        c->reshard_after_forward = b;
        c->reshard_after_forward_size = 0;
        c->reshard_after_forward_given = true;
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
    c->reshard_after_forward = true;
    c->reshard_after_forward_size = n;
    c->reshard_after_forward_given = true;
    return 0;
}

static const char *
fsdp2_only_flag(const struct run_config *c)
{
    if (c->reshard_after_forward_given)
        return "reshard-after-forward";
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
                           "buffers alone, always prefetches one group "
                           "ahead in backward and needs no rate limiter); "
                           "drop it",
                           c->use_orig_params ? "use-orig-params"
                           : c->buffer_dtype_given ? "buffer-dtype"
                           : c->backward_prefetch != BWD_PREFETCH_PRE
                               ? "backward-prefetch"
                               : "limit-all-gathers");
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
