/*
 * nccl_env.c: NCCL versions and environment (see nccl_env.h).
 *
 * Facts per version, read from NVIDIA/nccl at the release tags
 * (doc/fsdp-semantics.md §14.1-14.2):
 * - all-gather / reduce-scatter algorithms: 2.18 Ring; 2.19 Ring, NVLS;
 *   2.20-2.22 + CollNet Direct; 2.23+ + PAT (src/graph/tuning.cc
 *   ncclTopoTuneModel).  All-reduce: Tree, Ring, CollNet Direct and Chain,
 *   NVLS, and NVLS Tree from 2.19.
 * - NCCL_ALGO: 2.17-2.18 apply it to every collective with no fallback;
 *   2.19-2.23 apply it to every collective but fall back to Ring when a
 *   collective is left with nothing; 2.24+ accept "coll:algo" lists and a
 *   bare list again applies to all collectives with no fallback
 *   (NVIDIA/nccl#317, #1304, #1670).
 */
#include "nccl_env.h"
#include "xalloc.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const char *const algo_names[NCCL_ALGO_COUNT] = {
    "Tree", "Ring", "CollnetDirect", "CollnetChain", "NVLS", "NVLSTree",
    "PAT"};
static const char *const proto_names[PROTO_COUNT] = {"LL", "LL128",
                                                     "Simple"};
static const char *const op_names[COLL_OP_COUNT] = {
    "allgather", "reducescatter", "allreduce"};
static const char *const op_nccl_names[COLL_OP_COUNT] = {
    "AllGather", "ReduceScatter", "AllReduce"};

const char *
nccl_algo_name(enum nccl_algo a)
{
    return algo_names[a];
}

const char *
nccl_proto_name(enum nccl_proto p)
{
    return proto_names[p];
}

const char *
coll_op_name(enum coll_op op)
{
    return op_names[op];
}

const char *
coll_op_nccl_name(enum coll_op op)
{
    return op_nccl_names[op];
}

void
nccl_config_init(struct nccl_config *nc)
{
    memset(nc, 0, sizeof *nc);
    nc->version = NCCL_VERSION_MAX;
    for (int c = 0; c < COLL_OP_COUNT; c++)
        for (int a = 0; a < NCCL_ALGO_COUNT; a++)
            nc->algo_enable[c][a] = true;
    for (int p = 0; p < PROTO_COUNT; p++)
        nc->proto_enable[p] = true;
    nc->nvls_enable = 2;
    nc->buffsize = 1L << 22;
    nc->socket_nthreads = -1;
    nc->nsocks_perthread = -1;
    nc->p2p_level = -1;
    nc->net_gdr_level = -1;
    nc->cross_nic = 2;
    nc->collnet_enable = 0;
}

const char *const nccl_var_names[] = {
    "nvls_enable", "buffsize", "nthreads", "ib_disable", "p2p_disable",
    "socket_nthreads", "nsocks_perthread", "p2p_level", "net_gdr_level",
    "cross_nic", "collnet_enable", NULL};
_Static_assert(sizeof nccl_var_names / sizeof nccl_var_names[0]
                   == NCCL_VAR_COUNT + 1,
               "NCCL_VAR_COUNT counts nccl_var_names");

/* NCCL_P2P_LEVEL / NCCL_NET_GDR_LEVEL (src/graph/paths.cc ncclGetLevel):
 * a path name of topo.cc's topoPathTypeStr up to SYS, or the old numbers
 * 0..5 (levelsOldToNew: LOC PIX PXB PHB SYS SYS, larger ones as 5).
 * Anything else NCCL ignores silently and keeps its default, so a run
 * naming it would not run what it says. */
static int
parse_level(const char *var, const char *s, int *level, char **cause)
{
    static const char *const names[] = {"LOC", "NVL", "NVB", "C2C", "PIX",
                                        "PXB", "P2C", "PXN", "PHB", "SYS"};
    static const int old_levels[] = {PATH_LEVEL_LOC, PATH_LEVEL_PIX,
                                     PATH_LEVEL_PXB, PATH_LEVEL_PHB,
                                     PATH_LEVEL_SYS, PATH_LEVEL_SYS};
    for (int i = 0; i <= PATH_LEVEL_SYS; i++)
        if (strcmp(s, names[i]) == 0) {
            *level = i;
            return 0;
        }
    if (s[0] >= '0' && s[0] <= '9') {
        char *end;
        long v = strtol(s, &end, 0);
        if (*end == '\0') {
            *level = old_levels[v > 5 ? 5 : v];
            return 0;
        }
    }
    *cause = xasprintf("%s=%s: NCCL knows LOC, NVL, NVB, C2C, PIX, PXB, P2C, "
                       "PXN, PHB, SYS (upper case) or 0 to 5, and ignores "
                       "anything else, keeping its default", var, s);
    return -1;
}

/* NCCL's ncclLoadParam (src/misc/param.cc) reads an integer with strtoll
 * and on a parse error logs "Invalid value %s for %s, using default". */
static int
parse_int(const char *var, const char *s, long long *v, char **cause)
{
    char *end;
    errno = 0;
    long long x = strtoll(s, &end, 0);
    if (*s == '\0' || *end != '\0' || errno) {
        *cause = xasprintf("%s=%s: not an integer; NCCL ignores it (\"Invalid "
                           "value %s for %s, using default\")", var, s, s,
                           var);
        return -1;
    }
    *v = x;
    return 0;
}

int
nccl_config_set_var(struct nccl_config *nc, const char *name, const char *s,
                    char **cause)
{
    char var[64];
    size_t n = strlen(name);
    if (strncasecmp(name, "NCCL_", 5) == 0) {
        name += 5;
        n -= 5;
    }
    if (n + 6 > sizeof var) {
        *cause = xasprintf("unknown NCCL variable '%s'", name);
        return -1;
    }
    memcpy(var, "NCCL_", 5);
    for (size_t i = 0; i <= n; i++)
        var[5 + i] = (char)toupper((unsigned char)name[i]);
    const char *k = var + 5;
    long long v;
    if (strcmp(k, "P2P_LEVEL") == 0)
        return parse_level(var, s, &nc->p2p_level, cause);
    if (strcmp(k, "NET_GDR_LEVEL") == 0)
        return parse_level(var, s, &nc->net_gdr_level, cause);
    if (parse_int(var, s, &v, cause) != 0)
        return -1;
    if (strcmp(k, "NVLS_ENABLE") == 0) {
        /* src/transport/nvls.cc ncclNvlsInit: 0 off, 2 (default) asks the
         * driver for multicast, any other value forces it on. */
        if (v < 0 || v > 2) {
            *cause = xasprintf("%s=%s: NCCL reads 0 (off), 1 (on) or 2 "
                               "(auto, the default); other values force "
                               "NVLS on as 1 does: write 0, 1 or 2", var, s);
            return -1;
        }
        nc->nvls_enable = (int)v;
    } else if (strcmp(k, "BUFFSIZE") == 0) {
        /* src/init.cc computeBuffSizes: any value replaces the 4 MiB
         * default; chunks are BUFFSIZE / NCCL_STEPS (8) x chunkSteps, so
         * it must leave whole 16-byte slices (prims_simple.h). */
        if (v < 8 * 1024 || v > (1LL << 30) || v % 128 != 0) {
            *cause = xasprintf("%s=%s: NCCL needs a buffer it can cut into "
                               "NCCL_STEPS (8) steps of whole 16-byte lines; "
                               "write a multiple of 128 from 8192 to 1G "
                               "(default 4194304)", var, s);
            return -1;
        }
        nc->buffsize = (long)v;
        nc->buffsize_given = true;
    } else if (strcmp(k, "NTHREADS") == 0) {
        /* src/graph/tuning.cc getNthreads: not a multiple of 32, or out
         * of 64..512, is logged "Invalid NCCL_NTHREADS" and replaced. */
        if (v % 32 != 0 || v < 64 || v > 512) {
            *cause = xasprintf("%s=%s: NCCL ignores it (\"Invalid NCCL_"
                               "NTHREADS %lld (%s)\") and runs its default "
                               "or bound: write a multiple of 32 from 64 to "
                               "512", var, s, v,
                               v % 32 ? "must be a multiple of 32"
                               : v > 512 ? "maximum 512" : "minimum 64");
            return -1;
        }
        nc->nthreads = (int)v;
    } else if (strcmp(k, "IB_DISABLE") == 0
               || strcmp(k, "P2P_DISABLE") == 0) {
        /* net_ib/init.cc NCCL_PARAM(IbDisable, 0); transport/p2p.cc
         * P2pDisable: read as booleans, 0 or 1. */
        if (v != 0 && v != 1) {
            *cause = xasprintf("%s=%s: write 0 or 1", var, s);
            return -1;
        }
        if (k[0] == 'I')
            nc->ib_disable = v;
        else
            nc->p2p_disable = v;
    } else if (strcmp(k, "CROSS_NIC") == 0) {
        /* src/graph/search.cc NCCL_PARAM(CrossNic, "CROSS_NIC", 2): 0 keeps
         * each ring and tree on one NIC index on every node, 1 lets them
         * cross, 2 (default) tries 0 first. */
        if (v < 0 || v > 2) {
            *cause = xasprintf("%s=%s: NCCL's graph search reads 0 (stay on "
                               "one rail), 1 (cross rails) or 2 (try 0 "
                               "first, the default): write 0, 1 or 2", var,
                               s);
            return -1;
        }
        nc->cross_nic = (int)v;
    } else if (strcmp(k, "COLLNET_ENABLE") == 0) {
        /* src/init.cc: comm->config.collnetEnable from
         * NCCL_COLLNET_ENABLE, 0 unless set; 1 asks for the CollNet
         * plugin (SHARP). */
        if (v != 0 && v != 1) {
            *cause = xasprintf("%s=%s: write 0 (the default) or 1 (use the "
                               "CollNet/SHARP plugin where the network has "
                               "one)", var, s);
            return -1;
        }
        nc->collnet_enable = (int)v;
    } else if (strcmp(k, "SOCKET_NTHREADS") == 0) {
        /* src/transport/net_socket.cc ncclNetSocketGetNsockNthread:
         * MAX_THREADS 16, above it NCCL warns and clamps. */
        if (v < 1 || v > 16) {
            *cause = xasprintf("%s=%s: NCCL's socket transport runs 1 to 16 "
                               "threads per connection (above 16 it warns "
                               "\"NCCL_SOCKET_NTHREADS is greater than the "
                               "maximum allowed, setting to 16\")", var, s);
            return -1;
        }
        nc->socket_nthreads = (int)v;
    } else if (strcmp(k, "NSOCKS_PERTHREAD") == 0) {
        if (v < 1 || v > 64) {
            *cause = xasprintf("%s=%s: NCCL opens at most 64 sockets per "
                               "connection (MAX_SOCKETS): write 1 to 64", var,
                               s);
            return -1;
        }
        nc->nsocks_perthread = (int)v;
    } else {
        *cause = xasprintf("unknown NCCL variable '%s'", var);
        return -1;
    }
    /* net_socket.cc: threads x sockets above MAX_SOCKETS (64) makes NCCL
     * lower NCCL_NSOCKS_PERTHREAD with a warning. */
    int t = nc->socket_nthreads > 0 ? nc->socket_nthreads : 1;
    if (nc->nsocks_perthread > 0 && t * nc->nsocks_perthread > 64) {
        *cause = xasprintf("%s=%s: NCCL_SOCKET_NTHREADS=%d x NCCL_NSOCKS_"
                           "PERTHREAD=%d is %d sockets; NCCL allows 64 and "
                           "warns \"the total number of sockets is greater "
                           "than the maximum allowed, setting NCCL_NSOCKS_"
                           "PERTHREAD to %d\"", var, s, t,
                           nc->nsocks_perthread, t * nc->nsocks_perthread,
                           64 / t);
        return -1;
    }
    return 0;
}

int
nccl_config_set_version(struct nccl_config *nc, const char *s, char **cause)
{
    int major = 0, minor = 0, n = 0;
    if (sscanf(s, "%d.%d%n", &major, &minor, &n) == 2
        && (s[n] == '\0' || s[n] == '.'))
        ;
    else if (sscanf(s, "%d%n", &major, &n) == 1 && s[n] == '\0'
             && major >= 200) {
        minor = major % 100;
        major /= 100;
    } else {
        *cause = xasprintf("'%s' is not an NCCL version (write e.g. 2.28)",
                           s);
        return -1;
    }
    int v = major * 100 + minor;
    if (major != 2 || v < NCCL_VERSION_MIN || v > NCCL_VERSION_MAX) {
        *cause = xasprintf("NCCL %s is not modelled (2.18 to 2.28 are)", s);
        return -1;
    }
    nc->version = v;
    return 0;
}

bool
nccl_algo_exists(int version, enum coll_op op, enum nccl_algo a)
{
    if (op == COLL_ALLREDUCE)
        return a != NCCL_ALGO_PAT
               && (a != NCCL_ALGO_NVLS_TREE || version >= 219);
    switch (a) {
    case NCCL_ALGO_RING:
        return true;
    case NCCL_ALGO_NVLS:
        return version >= 219;
    case NCCL_ALGO_COLLNET_DIRECT:
        return version >= 220;
    case NCCL_ALGO_PAT:
        return version >= 223;
    default:
        return false;
    }
}

static int
find_name(const char *const *names, int n, const char *s, size_t len)
{
    for (int i = 0; i < n; i++)
        if (strlen(names[i]) == len && strncasecmp(names[i], s, len) == 0)
            return i;
    return -1;
}

/* NCCL's parseList: comma-separated names, a leading '^' excludes them.
 * Fills set[] for n names; -1 on an unknown name. */
static int
parse_list(const char *const *names, int n, const char *s, size_t len,
           bool *set, char **bad)
{
    bool exclude = len > 0 && s[0] == '^';
    if (exclude) {
        s++;
        len--;
    }
    for (int i = 0; i < n; i++)
        set[i] = exclude;
    while (len > 0) {
        const char *comma = memchr(s, ',', len);
        size_t tl = comma ? (size_t)(comma - s) : len;
        size_t a = 0, b = tl;
        while (a < b && isspace((unsigned char)s[a]))
            a++;
        while (b > a && isspace((unsigned char)s[b - 1]))
            b--;
        if (b > a) {
            int i = find_name(names, n, s + a, b - a);
            if (i < 0) {
                *bad = xstrndup(s + a, b - a);
                return -1;
            }
            set[i] = !exclude;
        }
        if (!comma)
            break;
        len -= tl + 1;
        s += tl + 1;
    }
    return 0;
}

static char *
name_list(const char *const *names, int n)
{
    size_t len = 1;
    for (int i = 0; i < n; i++)
        len += strlen(names[i]) + 2;
    char *out = xmalloc(len), *w = out;
    for (int i = 0; i < n; i++)
        w += sprintf(w, "%s%s", i ? ", " : "", names[i]);
    return out;
}

int
nccl_config_set_algo(struct nccl_config *nc, const char *s, char **cause)
{
    snprintf(nc->algo_text, sizeof nc->algo_text, "%s", s);
    nc->algo_given = true;
    char *bad = NULL;
    bool set[NCCL_ALGO_COUNT];
    if (strchr(s, ':') == NULL) {
        if (parse_list(algo_names, NCCL_ALGO_COUNT, s, strlen(s), set, &bad))
            goto unknown;
        for (int c = 0; c < COLL_OP_COUNT; c++)
            memcpy(nc->algo_enable[c], set, sizeof set);
        return 0;
    }
    if (nc->version < 224) {
        *cause = xasprintf("NCCL_ALGO=%s: per-collective settings "
                           "(\"allreduce:tree\") need NCCL 2.24 or newer; "
                           "NCCL %d.%d reads only a list of algorithms", s,
                           nc->version / 100, nc->version % 100);
        return -1;
    }
    /* "coll:list;coll:list": collectives not named keep every algorithm. */
    const char *p = s;
    while (*p) {
        const char *semi = strchr(p, ';');
        size_t len = semi ? (size_t)(semi - p) : strlen(p);
        const char *colon = memchr(p, ':', len);
        if (colon == NULL) {
            bad = xstrndup(p, len);
            *cause = xasprintf("NCCL_ALGO=%s: '%s' names no collective "
                               "(write e.g. \"allreduce:tree;allgather:"
                               "ring\")", s, bad);
            free(bad);
            return -1;
        }
        size_t cl = (size_t)(colon - p);
        while (cl > 0 && isspace((unsigned char)p[cl - 1]))
            cl--;
        int c = find_name(op_names, COLL_OP_COUNT, p, cl);
        if (c < 0) {
            /* NCCL knows broadcast/reduce too; they do not occur here. */
            if (!(cl == 9 && strncasecmp(p, "broadcast", 9) == 0)
                && !(cl == 6 && strncasecmp(p, "reduce", 6) == 0)) {
                bad = xstrndup(p, cl);
                char *list = name_list(op_names, COLL_OP_COUNT);
                *cause = xasprintf("NCCL_ALGO=%s: unknown collective '%s' "
                                   "(one of %s, broadcast, reduce)", s, bad,
                                   list);
                free(list);
                free(bad);
                return -1;
            }
        } else {
            if (parse_list(algo_names, NCCL_ALGO_COUNT, colon + 1,
                           len - (size_t)(colon - p) - 1, set, &bad))
                goto unknown;
            memcpy(nc->algo_enable[c], set, sizeof set);
        }
        p += len + (semi ? 1 : 0);
    }
    return 0;
unknown:;
    char *list = name_list(algo_names, NCCL_ALGO_COUNT);
    *cause = xasprintf("NCCL_ALGO=%s: unknown algorithm '%s' (NCCL knows %s)",
                       s, bad, list);
    free(list);
    free(bad);
    return -1;
}

int
nccl_config_set_proto(struct nccl_config *nc, const char *s, char **cause)
{
    snprintf(nc->proto_text, sizeof nc->proto_text, "%s", s);
    nc->proto_given = true;
    char *bad = NULL;
    if (parse_list(proto_names, PROTO_COUNT, s, strlen(s), nc->proto_enable,
                   &bad)) {
        *cause = xasprintf("NCCL_PROTO=%s: unknown protocol '%s' (NCCL "
                           "knows LL, LL128, Simple)", s, bad);
        free(bad);
        return -1;
    }
    return 0;
}

int
nccl_filter_algos(const struct nccl_config *nc, enum coll_op op,
                  bool usable[NCCL_ALGO_COUNT], char **cause)
{
    bool ring_before = usable[NCCL_ALGO_RING];
    bool any = false;
    for (int a = 0; a < NCCL_ALGO_COUNT; a++) {
        if (!nc->algo_enable[op][a])
            usable[a] = false;
        any = any || usable[a];
    }
    if (any)
        return 0;
    if (nc->version >= 219 && nc->version <= 223 && ring_before) {
        usable[NCCL_ALGO_RING] = true;    /* the saved ring fallback */
        return 0;
    }
    if (nc->version >= 224)
        *cause = xasprintf("NCCL_ALGO=%s: NCCL %d.%d refuses it for %s: "
                           "\"No algorithm/protocol available for function "
                           "%s ... NCCL_ALGO was set to %s\" (set it per "
                           "collective, e.g. \"allreduce:tree\")",
                           nc->algo_text, nc->version / 100,
                           nc->version % 100, coll_op_name(op),
                           coll_op_nccl_name(op), nc->algo_text);
    else
        *cause = xasprintf("NCCL_ALGO=%s: NCCL %d.%d has no algorithm left "
                           "for %s and fails: \"no algorithm/protocol "
                           "available\"", nc->algo_text, nc->version / 100,
                           nc->version % 100, coll_op_name(op));
    return -1;
}
