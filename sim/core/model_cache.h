/*
 * model_cache.h: models loaded once for every point of a sweep or search.
 *
 * Building a model's module tree (parsing its INI or config.json, then
 * deriving every leaf's shapes) took a fifth of a one-micro-batch point's
 * time, and a sweep of thousands of points mostly names one model.  Models
 * are read-only once loaded (the wrap plan, the schedule and the outputs
 * take them const), so the points of one run share each model, on any
 * thread.  Ownership: the cache owns its models; pointers it returns stay
 * valid until model_cache_free().
 */
#ifndef FSDPSIM_MODEL_CACHE_H
#define FSDPSIM_MODEL_CACHE_H

#include "model.h"

struct model_cache;

struct model_cache *model_cache_new(void);
void model_cache_free(struct model_cache *mc);

/* model_load(NAME_OR_PATH), done once per name; thread-safe.  NULL with
 * *cause (caller frees) as model_load; a failure is not remembered. */
const struct model *model_cache_get(struct model_cache *mc,
                                    const char *name_or_path, char **cause);

/* Keep M (built in memory, e.g. from a table's architecture columns)
 * under NAME, so that a run naming NAME gets it instead of loading a
 * file or built-in of that name.  The cache takes M; when NAME is there
 * already, M is freed and the model held returns. */
const struct model *model_cache_put(struct model_cache *mc,
                                    const char *name, struct model *m);

#endif
