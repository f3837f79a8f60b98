/*
 * model_cache.c: a lock and a short list of loaded models (see
 * model_cache.h).  A run names a handful of models at most, so a linear
 * search is the whole index.
 */
#include "model_cache.h"
#include "xalloc.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

struct cached_model {
    char *name;
    struct model *model;
};

struct model_cache {
    pthread_mutex_t lock;
    struct cached_model *items;
    size_t n, cap;
};

struct model_cache *
model_cache_new(void)
{
    struct model_cache *mc = xcalloc(1, sizeof *mc);
    pthread_mutex_init(&mc->lock, NULL);
    return mc;
}

void
model_cache_free(struct model_cache *mc)
{
    if (mc == NULL)
        return;
    for (size_t i = 0; i < mc->n; i++) {
        free(mc->items[i].name);
        model_free(mc->items[i].model);
    }
    free(mc->items);
    pthread_mutex_destroy(&mc->lock);
    free(mc);
}

const struct model *
model_cache_get(struct model_cache *mc, const char *name_or_path,
                char **cause)
{
    pthread_mutex_lock(&mc->lock);
    for (size_t i = 0; i < mc->n; i++) {
        if (strcmp(mc->items[i].name, name_or_path) == 0) {
            const struct model *m = mc->items[i].model;
            pthread_mutex_unlock(&mc->lock);
            return m;
        }
    }
    /* Loaded under the lock: the other workers want the same model and
     * would only load it again. */
    struct model *m = model_load(name_or_path, cause);
    if (m != NULL) {
        mc->items = xgrow(mc->items, &mc->cap, mc->n + 1,
                          sizeof *mc->items);
        mc->items[mc->n].name = xstrdup(name_or_path);
        mc->items[mc->n].model = m;
        mc->n++;
    }
    pthread_mutex_unlock(&mc->lock);
    return m;
}

const struct model *
model_cache_put(struct model_cache *mc, const char *name, struct model *m)
{
    pthread_mutex_lock(&mc->lock);
    for (size_t i = 0; i < mc->n; i++) {
        if (strcmp(mc->items[i].name, name) == 0) {
            const struct model *had = mc->items[i].model;
            pthread_mutex_unlock(&mc->lock);
            model_free(m);
            return had;
        }
    }
    mc->items = xgrow(mc->items, &mc->cap, mc->n + 1, sizeof *mc->items);
    mc->items[mc->n].name = xstrdup(name);
    mc->items[mc->n].model = m;
    mc->n++;
    pthread_mutex_unlock(&mc->lock);
    return m;
}
