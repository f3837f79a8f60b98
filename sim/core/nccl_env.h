/*
 * nccl_env.h: which NCCL the job runs and what its environment forces.
 *
 * NCCL's choice of algorithm and protocol depends on its version (which
 * algorithms exist for all-gather and reduce-scatter, how NCCL_ALGO is
 * read) and on the variables users set: NCCL_ALGO, NCCL_PROTO,
 * NCCL_MIN_NCHANNELS, NCCL_MAX_NCHANNELS (doc/fsdp-semantics.md §14.1-14.2).
 * This module parses them as NCCL does (comma lists, a leading '^' to
 * exclude, and from 2.24 per-collective "allreduce:tree;allgather:ring")
 * and says which (algorithm, protocol) pairs a collective may use.
 * Ownership: plain values, nothing to free.
 */
#ifndef FSDPSIM_NCCL_ENV_H
#define FSDPSIM_NCCL_ENV_H

#include <stdbool.h>

enum nccl_algo {
    NCCL_ALGO_TREE,
    NCCL_ALGO_RING,
    NCCL_ALGO_COLLNET_DIRECT,
    NCCL_ALGO_COLLNET_CHAIN,
    NCCL_ALGO_NVLS,
    NCCL_ALGO_NVLS_TREE,
    NCCL_ALGO_PAT,
    NCCL_ALGO_COUNT
};

enum nccl_proto { PROTO_LL, PROTO_LL128, PROTO_SIMPLE, PROTO_COUNT };

enum coll_op { COLL_ALLGATHER, COLL_REDUCESCATTER, COLL_ALLREDUCE,
               COLL_OP_COUNT };

/* NCCL versions modelled: 2.18 .. 2.28 as 218 .. 228. */
#define NCCL_VERSION_MIN 218
#define NCCL_VERSION_MAX 228

struct nccl_config {
    int version;                                   /* e.g. 228 */
    bool algo_given;                               /* NCCL_ALGO set */
    bool algo_enable[COLL_OP_COUNT][NCCL_ALGO_COUNT];
    char algo_text[128];                           /* as given, for messages */
    bool proto_given;
    bool proto_enable[PROTO_COUNT];
    char proto_text[64];
    int min_channels, max_channels;                /* 0 = not set */
    /* Variables read as NCCL reads them (nccl_config_set_var); the
     * defaults are NCCL's. */
    int nvls_enable;        /* NCCL_NVLS_ENABLE: 0 off, 1 on, 2 auto */
    long buffsize;          /* NCCL_BUFFSIZE, Simple (default 4 MiB) */
    bool buffsize_given;    /* set by the user (a plugin's does not
                               replace it) */
    int nthreads;           /* NCCL_NTHREADS, 0 = NCCL's default */
    bool ib_disable;        /* NCCL_IB_DISABLE=1: socket transport */
    bool p2p_disable;       /* NCCL_P2P_DISABLE=1: SHM through the host */
    int socket_nthreads;    /* NCCL_SOCKET_NTHREADS, -1 = auto */
    int nsocks_perthread;   /* NCCL_NSOCKS_PERTHREAD, -1 = auto */
    /* Path levels as NCCL's topology spells them (enum nccl_path_level);
     * -1 = NCCL's default. */
    int p2p_level;          /* NCCL_P2P_LEVEL: P2P up to this distance */
    int net_gdr_level;      /* NCCL_NET_GDR_LEVEL: GPUDirect RDMA up to it */
    int cross_nic;          /* NCCL_CROSS_NIC: 0, 1, 2 (default 2) */
    int collnet_enable;     /* NCCL_COLLNET_ENABLE: 0 (default) or 1 */
};

/* NCCL's path types, nearest first (src/graph/topo.h PATH_LOC ..
 * PATH_SYS, names topo.cc topoPathTypeStr), which NCCL_P2P_LEVEL and
 * NCCL_NET_GDR_LEVEL name. */
enum nccl_path_level { PATH_LEVEL_LOC, PATH_LEVEL_NVL, PATH_LEVEL_NVB,
                       PATH_LEVEL_C2C, PATH_LEVEL_PIX, PATH_LEVEL_PXB,
                       PATH_LEVEL_P2C, PATH_LEVEL_PXN, PATH_LEVEL_PHB,
                       PATH_LEVEL_SYS };

/* The variables nccl_config_set_var knows: NCCL_VAR_COUNT of them, then
 * NULL; each named
 * without its NCCL_ prefix in lower case as the run key / flag suffix
 * ("nvls_enable" for NCCL_NVLS_ENABLE and --nccl-nvls-enable). */
#define NCCL_VAR_COUNT 11
extern const char *const nccl_var_names[];
/* Set NCCL_<NAME> (NAME as in nccl_var_names, either case) to S.  -1
 * with *cause (caller frees) for a value NCCL would not honour: NCCL
 * warns and falls back to its default or clamps it, so a run that names
 * it would not run what it says; the message says what NCCL does. */
int nccl_config_set_var(struct nccl_config *nc, const char *name,
                        const char *s, char **cause);

/* Defaults: the newest version, nothing forced. */
void nccl_config_init(struct nccl_config *nc);
/* "2.28", "2.28.9" or "228".  -1 with *cause (caller frees). */
int nccl_config_set_version(struct nccl_config *nc, const char *s,
                            char **cause);
/* NCCL_ALGO / NCCL_PROTO values, parsed as the configured version would;
 * call after setting the version.  -1 with *cause on a value NCCL rejects
 * (an unknown name, or per-collective syntax before 2.24). */
int nccl_config_set_algo(struct nccl_config *nc, const char *s, char **cause);
int nccl_config_set_proto(struct nccl_config *nc, const char *s,
                          char **cause);

const char *nccl_algo_name(enum nccl_algo a);
const char *nccl_proto_name(enum nccl_proto p);
const char *coll_op_name(enum coll_op op);          /* "allgather" */
const char *coll_op_nccl_name(enum coll_op op);     /* "AllGather" */

/* Does this version have the algorithm for this collective at all? */
bool nccl_algo_exists(int version, enum coll_op op, enum nccl_algo a);

/* Apply NCCL_ALGO to a set of algorithms the cost model found usable:
 * clears the ones the user disabled.  When nothing is left, NCCL 2.19 to
 * 2.23 fall back to Ring (returns 0 with Ring enabled); 2.17-2.18 and
 * 2.24+ fail: -1 with *cause holding NCCL's complaint (caller frees). */
int nccl_filter_algos(const struct nccl_config *nc, enum coll_op op,
                      bool usable[NCCL_ALGO_COUNT], char **cause);

#endif
