/*
 * net_simgrid_load.c: the netsg_* functions as fsdpsim calls them, loading
 * the SimGrid backend plugin on first use (see net_simgrid.h).
 *
 * SimGrid and what it links (ns-3, Boost, libstdc++: thirty-odd shared
 * libraries with their static constructors) cost a process about 15 ms
 * and 30 MiB before main(); only --network simgrid needs them, so they
 * are loaded with dlopen when a run opens the backend.  The plugin takes
 * the helpers it shares with fsdpsim (the platform writer and checker,
 * the allocation wrappers) from the program, which exports its symbols
 * (-rdynamic); keep_linked below makes sure the linker keeps them.
 */
#include "atomic_file.h"
#include "net_simgrid.h"
#include "net_platform.h"
#include "xalloc.h"

#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* What only the plugin calls: referenced here so that the program holds
 * them for it. */
__attribute__((used)) static const void *const keep_linked[] = {
    (const void *)net_platform_check, (const void *)net_platform_check_text,
    (const void *)net_platform_rates, (const void *)net_platform_supported,
    (const void *)net_platform_write, (const void *)xopen_memstream,
    (const void *)xgrow, (const void *)xcalloc, (const void *)xstrdup,
    (const void *)xasprintf, (const void *)topo_placement_name,
    (const void *)topo_shape_name, (const void *)atomic_file_mkstemp,
    (const void *)atomic_file_remove};

static const struct netsg_api *api;
static char *load_error;
static pthread_once_t once = PTHREAD_ONCE_INIT;

/* Try PATH; on failure add dlerror's reason to *why. */
static void *
try_open(const char *path, char **why)
{
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (h == NULL) {
        const char *e = dlerror();
        char *w = xasprintf("%s%s%s", *why ? *why : "", *why ? "; " : "",
                            e ? e : path);
        free(*why);
        *why = w;
    }
    return h;
}

static void
load(void)
{
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    char *why = NULL;
    void *h = NULL;
    if (n > 0) {
        self[n] = '\0';
        char *slash = strrchr(self, '/');
        if (slash != NULL) {
            *slash = '\0';
            char *p = xasprintf("%s/" NETSG_PLUGIN_NAME, self);
            h = try_open(p, &why);
            free(p);
            if (h == NULL) {
                p = xasprintf("%s/../" NETSG_PLUGIN_NAME, self);
                h = try_open(p, &why);
                free(p);
            }
        }
    }
#ifdef FSDPSIM_LIBEXECDIR
    if (h == NULL)
        h = try_open(FSDPSIM_LIBEXECDIR "/" NETSG_PLUGIN_NAME, &why);
#endif
    if (h != NULL) {
        const struct netsg_api *a = dlsym(h, NETSG_API_SYMBOL);
        if (a != NULL && a->version == NETSG_API_VERSION) {
            api = a;
            free(why);
            return;
        }
        free(why);
        why = xasprintf("%s is from another fsdpsim version",
                        NETSG_PLUGIN_NAME);
    }
    load_error = xasprintf("--network simgrid: cannot load the SimGrid "
                           "backend (%s): install fsdpsim with 'make "
                           "install', or use --network analytic", why);
    free(why);
}

int
netsg_load(char **cause)
{
    pthread_once(&once, load);
    if (api == NULL) {
        *cause = xstrdup(load_error);
        return -1;
    }
    return 0;
}

int
netsg_open(const struct topo *t, const char *platform, char **cause)
{
    pthread_once(&once, load);
    if (api == NULL) {
        *cause = xstrdup(load_error);
        return -1;
    }
    return api->open(t, platform, cause);
}

/* The rest run after a successful netsg_open. */
void
netsg_configure(bool exact, double background_load)
{
    api->configure(exact, background_load);
}

void
netsg_coll_factor(const struct netsg_coll *c, double *ratio,
                  double *extra_latency_s)
{
    api->coll_factor(c, ratio, extra_latency_s);
}

void
netsg_share(const struct netsg_coll *cs, int n, double *rate)
{
    api->share(cs, n, rate);
}

double
netsg_flows(int n, const char *const *src, const char *const *dst,
            const double *bytes, double *end_s)
{
    return api->flows(n, src, dst, bytes, end_s);
}

void
netsg_stats(int64_t *runs, int64_t *flows, int64_t *reused)
{
    api->stats(runs, flows, reused);
}
