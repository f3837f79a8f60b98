/*
 * net_simgrid.h: collectives as flows on a SimGrid platform (built only
 * with SimGrid; net.h is the interface the commands use).
 *
 * SimGrid keeps one simulation engine per process (toolchain.md §2.2):
 * netsg_open() starts it on one platform, and every later call simulates
 * on that platform, the clock carrying on from run to run.  A process
 * that needs a different platform is refused with a message.
 */
#ifndef FSDPSIM_NET_SIMGRID_H
#define FSDPSIM_NET_SIMGRID_H

#include <stdbool.h>
#include <stdint.h>

#include "coll.h"
#include "nccl_env.h"
#include "topo.h"

/* One collective as it runs on the cluster: every instance of its
 * process group at once (SPMD: the twin groups on the other GPUs and
 * nodes run the same collective at the same time). */
struct netsg_coll {
    enum coll_op op;
    enum nccl_algo algo;        /* what NCCL picked (coll_estimate) */
    struct coll_group g;
    double nbytes;              /* NCCL's convention (coll.h) */
};

/* Start SimGrid (once per process) on topology T's platform, or on the
 * platform file PLATFORM (checked first; NULL: T's).  Flows run with
 * CM02 and cross-traffic off: max-min sharing with pure latency +
 * size / bandwidth per flow (toolchain.md §2.5).  0, or -1 with *cause
 * (caller frees). */
int netsg_open(const struct topo *t, const char *platform, char **cause);
/* Load the backend plugin alone (netsg_open does it too): 0, or -1 with
 * *cause saying why it cannot be loaded. */
int netsg_load(char **cause);

/* Settings of the runs that follow: every step of a ring (exact) or one
 * per ring, and the fraction of each fabric link other traffic takes. */
void netsg_configure(bool exact, double background_load);

/* How the platform changes collective C against the same collective on
 * a non-blocking fabric: *ratio multiplies its bandwidth time, and
 * *extra_latency_s is what longer paths (the spine) add.  Memoized. */
void netsg_coll_factor(const struct netsg_coll *c, double *ratio,
                       double *extra_latency_s);

/* Rates of N collectives running at the same time, each relative to its
 * own run alone on the platform (0 < rate <= 1).  Memoized by the set. */
void netsg_share(const struct netsg_coll *cs, int n, double *rate);

/* Lowest level, for tests: simulate flows that all start now, flow k
 * from host src[k] to dst[k] ("node<i>-gpu<g>") of bytes[k] bytes; sets
 * end_s[k] to each one's duration.  Returns the time the last ended. */
double netsg_flows(int n, const char *const *src, const char *const *dst,
                   const double *bytes, double *end_s);

/* Work done so far: SimGrid runs, flows simulated, and collective or
 * concurrency questions answered from the memo. */
void netsg_stats(int64_t *runs, int64_t *flows, int64_t *reused);

/* What the SimGrid backend plugin (fsdpsim-simgrid.so, net_simgrid.c
 * built on its own) exports: the functions above, under one symbol.
 * fsdpsim links no SimGrid: the netsg_* functions it calls
 * (net_simgrid_load.c) load the plugin the first time a run asks for
 * --network simgrid, so every other command starts without SimGrid, ns-3
 * and Boost (bench: start-up). */
#define NETSG_API_SYMBOL "fsdpsim_netsg_api"
#define NETSG_API_VERSION 1

struct netsg_api {
    int version;
    int (*open)(const struct topo *t, const char *platform, char **cause);
    void (*configure)(bool exact, double background_load);
    void (*coll_factor)(const struct netsg_coll *c, double *ratio,
                        double *extra_latency_s);
    void (*share)(const struct netsg_coll *cs, int n, double *rate);
    double (*flows)(int n, const char *const *src, const char *const *dst,
                    const double *bytes, double *end_s);
    void (*stats)(int64_t *runs, int64_t *flows, int64_t *reused);
};

/* The plugin's file name, looked for next to the program (and one
 * folder up, for the test programs in tests/), then in the package's
 * libexec directory. */
#define NETSG_PLUGIN_NAME "fsdpsim-simgrid.so"

#endif
