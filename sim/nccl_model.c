/*
 * nccl_model.c: NCCL versions and environment (see nccl_model.h).
 *
 * Facts per version, read from NVIDIA/nccl at the release tags
 * (fsdp-semantics.md §14.1-14.2):
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
#include "nccl_model.h"
#include "xalloc.h"

#include <ctype.h>
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
