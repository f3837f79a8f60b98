/*
 * net_platform.h: SimGrid platform files for the --network simgrid
 * backend: the platform built from a topology, and the checks a user's
 * own platform file passes before SimGrid reads it.
 *
 * SimGrid aborts the whole process on a platform it cannot read (bad XML,
 * a missing attribute, a unit it does not know), so no file reaches it
 * before net_platform_check() has accepted it.  This file needs no
 * SimGrid: `fsdpsim topology --simgrid-xml` works in every build.
 *
 * Ownership: functions that return heap memory say "caller frees".
 */
#ifndef FSDPSIM_NET_PLATFORM_H
#define FSDPSIM_NET_PLATFORM_H

#include <stdio.h>

#include "topo.h"

/* Names the platform gives its parts, which the backend relies on: the
 * host of GPU g on node i of the job is "node<i>-gpu<g>"; links whose id
 * starts with NET_FABRIC_PREFIX are the switch fabric above the NICs
 * (leaf uplinks), which --background-load occupies and which the
 * backend's reference run makes non-blocking. */
#define NET_FABRIC_PREFIX "fabric-"

/* Most GPUs a generated platform holds: the backend runs a SimGrid actor
 * per GPU that sends or receives, and each actor's stack with its guard
 * page takes two of the 65,530 memory mappings Linux gives a process by
 * default (vm.max_map_count); 2,048 nodes of 8 GPUs load in about 2 s. */
#define NET_PLATFORM_MAX_GPUS 16384

/* Most children one zone of zones of a generated platform holds, and
 * most hosts and routers one zone of hosts (a block) holds: SimGrid's
 * Floyd routing costs V^3 at load and V^2 memory in a zone of V. */
#define NET_PLATFORM_FANOUT 256
#define NET_PLATFORM_BLOCK_POINTS 161

/* 0 when the backend can simulate T's GPUs (on its own platform or a
 * user's), else -1 with *cause. */
int net_platform_supported(const struct topo *t, char **cause);

/* The rates (bytes/s) and one-way latencies (ns) of a generated
 * platform's links: the writer's and the SimGrid backend's one source. */
struct net_link_rates {
    double gpu_Bps, gpu_lat_ns;         /* node<i>-gpu<g> to its node */
    double backbone_Bps;                /* a node's NVSwitch backbone */
    double nic_Bps, nic_lat_ns;         /* node<i>-nic, all NICs together */
    double uplink_Bps, uplink_lat_ns;   /* fabric-leaf<L>, to the spine */
};
void net_platform_rates(const struct topo *t, struct net_link_rates *r);

/* Write the platform of topology T (t->nodes x t->gpus_per_node GPUs) as
 * SimGrid 3.32 XML (platform version 4.1).  Deterministic. */
void net_platform_write(const struct topo *t, FILE *out);

/* Node of the job that node slot i holds, and the leaf (fat_tree) or rail
 * group (rail_optimized) job node i sits under. */
int net_platform_leaf_of(const struct topo *t, int node);
int net_platform_n_leaves(const struct topo *t);

/* Check the SimGrid platform file PATH before SimGrid sees it: well-formed
 * XML, the DOCTYPE SimGrid needs, elements and attributes of the 4.1 DTD
 * with their required attributes, units on every bandwidth, latency and
 * speed, ids defined once and defined before they are referred to, and
 * a host "node<i>-gpu<g>" for each of NODES x GPN GPUs of the job.
 * Returns 0, or -1 with *cause ("PATH:LINE: what (how to fix)", caller
 * frees). */
int net_platform_check(const char *path, int nodes, int gpn, char **cause);
/* The same on text already read; origin names it in messages. */
int net_platform_check_text(const char *text, const char *origin, int nodes,
                            int gpn, char **cause);

#endif
