/*
 * fuzz_model_check.h: what every accepted model must satisfy.
 */
#ifndef FSDPSIM_FUZZ_MODEL_CHECK_H
#define FSDPSIM_FUZZ_MODEL_CHECK_H

#include "fuzz_util.h"
#include "model.h"

static inline void
fuzz_check_model(const struct model *m)
{
    FUZZ_ASSERT(m->n_params > 0 && m->n_params <= INT64_C(1000000000000000));
    FUZZ_ASSERT(m->n_modules >= 1 && m->modules[0] == m->root);
    FUZZ_ASSERT(m->root->subtree_params == m->n_params);
    for (int i = 0; i < m->n_modules; i++) {
        const struct module *mod = m->modules[i];
        FUZZ_ASSERT(mod->index == i);
        FUZZ_ASSERT(mod->own_params >= 0);
        FUZZ_ASSERT(i == 0 || (mod->parent && mod->parent->index < i));
        int64_t sum = mod->own_params;
        for (int c = 0; c < mod->n_children; c++)
            sum += mod->children[c]->subtree_params;
        FUZZ_ASSERT(sum == mod->subtree_params);
    }
}

#endif
