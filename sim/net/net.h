/*
 * net.h: the network backend of a run, chosen with --network.
 *
 * analytic: collectives take what NCCL's own model says (coll.c), on a
 * network assumed non-blocking; collectives of different communicators
 * crossing the network at once share the NICs equally (engine.c).
 * simgrid: the same, with each collective's bandwidth time scaled by how
 * its flows fare on a SimGrid platform of the cluster (fat-tree
 * oversubscription, job placement, background traffic), and concurrent
 * collectives sharing links as SimGrid's max-min solver says
 * (net_simgrid.h).  Without SimGrid built in, simgrid is an input error.
 *
 * Ownership: struct sim_result owns what it points to (sim_result_free).
 */
#ifndef FSDPSIM_NET_H
#define FSDPSIM_NET_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "coll.h"
#include "engine.h"
#include "runconf.h"
#include "sched.h"
#include "topo.h"

/* One distinct collective of a run (kind, group, size) and its time
 * under both backends. */
struct net_coll_stat {
    enum sched_op_kind kind;
    enum sched_pg pg;
    uint64_t bytes;
    int calls;                  /* in the whole run */
    double analytic_s, simgrid_s;
};

struct sim_result {
    struct engine_result res;       /* the run, with the chosen backend */
    bool compared;                  /* simgrid: net_report_text compares */
    struct net_coll_stat *colls;
    int n_colls;
    int64_t sg_runs, sg_flows, sg_reused;
};

/* Whether this fsdpsim has the SimGrid backend. */
bool net_have_simgrid(void);
/* Whether --network simgrid can run here: built in and its plugin
 * loadable.  0, or -1 with *cause (caller frees). */
int net_simgrid_usable(char **cause);

/* Every simulation enters here: time schedule S on topology T with the
 * engine and the network backend C->network asks for (the analytic
 * model, exact or not, or SimGrid).
 * 0, or -1 with *cause (caller frees) for input errors: no SimGrid, a bad
 * platform file, a step too long for 64-bit nanoseconds (R is then
 * freed). */
int simulate_schedule(const struct sched *s, const struct topo *t,
                      const struct run_config *c, struct sim_result *r,
                      char **cause);
void sim_result_free(struct sim_result *r);

/* The two backends side by side (text), after a simulate summary: runs
 * the analytic engine on S for the left column. */
void net_report_text(const struct sim_result *r, const struct sched *s,
                     const struct topo *t, const struct run_config *c,
                     FILE *out);

/* One collective with the simgrid backend, every instance of its group
 * at once, from NCCL's estimate AN (coll_estimate): *time_s.  0, or -1
 * with *cause. */
int net_coll_time(const struct topo *t, const struct run_config *c,
                  enum coll_op op, const struct coll_group *g,
                  double nbytes, const struct coll_result *an,
                  double *time_s, char **cause);

/* "simgrid (fat_tree, 16 nodes per leaf, 4:1, spread)": what the
 * simgrid backend runs on, into buf. */
const char *net_describe(const struct topo *t, const struct run_config *c,
                         char *buf, size_t len);

#endif
