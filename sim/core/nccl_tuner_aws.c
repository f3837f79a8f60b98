/*
 * nccl_tuner_aws.c: aws-ofi-nccl's region tuner (see nccl_tuner_aws.h).
 *
 * The tables are aws-ofi-nccl's, src/tuner/nccl_ofi_regions.cpp
 * (region_init_internal_p5_p5e), at the plugin's master of August 2026:
 * each region is a polygon whose vertices are (nBytes, nRanks) points,
 * compared in log2 of both coordinates; a point on an edge counts as
 * inside, and the first region in table order that holds the point and
 * that NCCL can run wins.  Three-vertex regions that go out and back
 * along one line hold only the points on it.
 */
#include "nccl_tuner_aws.h"

#include <math.h>
#include <stddef.h>

/* The plane's far corner (include/tuner/nccl_ofi_tuner_region.h
 * TUNER_MAX_SIZE, TUNER_MAX_RANKS). */
#define MAX_SIZE (100.0 * 1024 * 1024 * 1024)
#define MAX_RANKS (1024.0 * 1024)
#define MAX_VERTICES 20
#define EPS 1e-10

struct point { double x, y; };

struct region {
    int algo, proto, n;
    struct point v[MAX_VERTICES];
};

/* log2 of both coordinates; 0 becomes a tiny positive number first, as
 * transform_log2 does, so the axis stays finite. */
static struct point
lg(struct point p)
{
    struct point r = {log2(p.x > 0 ? p.x : 1e-9), log2(p.y > 0 ? p.y : 1e-9)};
    return r;
}

static struct point
pw(struct point p)
{
    struct point r = {exp2(p.x), exp2(p.y)};
    return r;
}

/* The far end of the line through A and B where it leaves the plane at
 * Z's x or y (extend_region), in linear coordinates. */
static struct point
extend(struct point a, struct point b, struct point z)
{
    a = lg(a), b = lg(b), z = lg(z);
    struct point r;
    if (a.x == b.x) {
        r.x = a.x, r.y = z.y;
    } else if (a.y == b.y) {
        r.x = z.x, r.y = a.y;
    } else {
        double m = (a.y - b.y) / (a.x - b.x), c = b.y - m * b.x;
        double zy = m * z.x + c;
        if (zy < z.y)
            r.x = z.x, r.y = zy;
        else
            r.x = (z.y - c) / m, r.y = z.y;
    }
    return pw(r);
}

/* Distance from P to segment AB when P's foot falls on it, else HUGE_VAL
 * (distance); in log2 space. */
static double
segment_distance(struct point p, struct point a, struct point b)
{
    double dx = b.x - a.x, dy = b.y - a.y, len2 = dx * dx + dy * dy;
    if (len2 < EPS)
        return hypot(p.x - a.x, p.y - a.y);
    double t = ((p.x - a.x) * dx + (p.y - a.y) * dy) / len2;
    if (t < -EPS || t > 1 + EPS)
        return HUGE_VAL;
    return fabs(dx * (p.y - a.y) - dy * (p.x - a.x)) / sqrt(len2);
}

/* Inside or on the edge of R (is_inside_region, by the even-odd rule). */
static bool
inside(struct point p, const struct region *r)
{
    struct point v[MAX_VERTICES];
    for (int i = 0; i < r->n; i++)
        v[i] = lg(r->v[i]);
    for (int i = 0; i < r->n; i++)
        if (segment_distance(p, v[i], v[(i + 1) % r->n]) < EPS)
            return true;
    bool in = false;
    for (int i = 0, j = r->n - 1; i < r->n; j = i++) {
        if ((v[i].y > p.y) != (v[j].y > p.y)) {
            double x = v[j].x + (p.y - v[j].y) * (v[i].x - v[j].x)
                                    / (v[i].y - v[j].y);
            if (p.x < x)
                in = !in;
        }
    }
    return in;
}

#define P(x, y) ((struct point){(double)(x), (double)(y)})

static int
add(struct region *out, int k, int algo, int proto, int n,
    const struct point *v)
{
    out[k].algo = algo;
    out[k].proto = proto;
    out[k].n = n;
    for (int i = 0; i < n; i++)
        out[k].v[i] = v[i];
    return k + 1;
}

#define ADD(algo, proto, ...)                                                \
    do {                                                                     \
        const struct point v_[] = {__VA_ARGS__};                             \
        k = add(out, k, algo, proto, (int)(sizeof v_ / sizeof v_[0]), v_);   \
    } while (0)

static const struct point far_corner = {MAX_SIZE, MAX_RANKS};

/* p5.48xlarge and p5e.48xlarge (region_init_internal_p5_p5e).  Only
 * all-reduce has regions with 8 or 2 GPUs a node; with one GPU a node
 * all-gather and reduce-scatter have one each. */
static int
p5_regions(enum coll_op op, int ranks, int nodes, struct region *out)
{
    int k = 0;
    enum { T = NCCL_ALGO_TREE, R = NCCL_ALGO_RING, NT = NCCL_ALGO_NVLS_TREE };
    enum { LL128 = PROTO_LL128, S = PROTO_SIMPLE };
    if (ranks == 8 * nodes && op == COLL_ALLREDUCE) {
        /* The table names each of these two points twice (Tree/LL128's
         * and NVLS Tree's top edge; NVLS Tree's and Ring/Simple's
         * border): one line each, extended to the plane's edge. */
        struct point tree_ll128 = extend(P(402653184, 2048), P(402653184, 4096),
                                         far_corner);
        struct point nvlstree_1 = extend(P(8053063680, 160),
                                         P(9663676416, 192), far_corner);
        struct point nvlstree_2 = tree_ll128;
        struct point ring_simple = nvlstree_1;
        ADD(T, LL128, P(0, 16), P(31457280, 16), P(37748736, 32),
            P(117440512, 64), P(301989888, 128), P(301989888, 256),
            P(335544320, 512), P(536870912, 1024), P(402653184, 2048),
            P(402653184, 4096), tree_ll128, {0, tree_ll128.y});
        ADD(NT, S, P(31457281, 16), P(MAX_SIZE, 16), P(31457281, 16));
        ADD(R, LL128, P(31457280, 17), P(1073741824, 17), P(2147483648, 64),
            P(2147483648, 128), P(1342177280, 160), P(2147483648, 256),
            P(1074790400, 256), P(444596224, 160), P(301989888, 128),
            P(117440512, 64), P(37748736, 32));
        ADD(NT, S, P(2147483648, 128), P(6442450944, 128), P(8053063680, 160),
            P(9663676416, 192), nvlstree_1, nvlstree_2, P(402653184, 4096),
            P(402653184, 2048), P(536870912, 1024), P(335544320, 512),
            P(301989888, 256), P(310378496, 160), P(444596224, 160),
            P(1074790400, 256), P(2684354560, 256), P(2147483648, 224),
            P(1342177280, 160));
        ADD(R, S, P(1073741824, 17), {ring_simple.x, 17}, ring_simple,
            P(9663676416, 192), P(8053063680, 160), P(2684354560, 64),
            P(1610612736, 32));
    } else if (ranks == 2 * nodes && op == COLL_ALLREDUCE) {
        struct point tree_ll128 = extend(P(88160256, 128), P(178163712, 256),
                                         far_corner);
        struct point tree_simple_1 = extend(P(787480576, 128),
                                            P(1073741824, 256), far_corner);
        struct point tree_simple_2 = extend(P(257114112, 128),
                                            P(269484032, 256), far_corner);
        struct point nvlstree = extend(P(787480576, 128), P(1073741824, 256),
                                       far_corner);
        ADD(T, LL128, P(0, 4), P(1314816, 4), P(1051648, 8), P(1051648, 12),
            P(2367488, 16), P(5525504, 32), P(9473024, 64), P(88160256, 128),
            P(178163712, 256), tree_ll128, {0, tree_ll128.y});
        ADD(R, LL128, P(1314816, 4), P(19736576, 4), P(41842688, 8),
            P(296747008, 64), P(257114112, 128), P(269484032, 256),
            P(178163712, 256), P(88160256, 128), P(9473024, 64),
            P(5525504, 32), P(2367488, 16), P(1051648, 12), P(1051648, 8),
            P(1314816, 4));
        ADD(NT, S, P(19736576, 4), P(81844224, 4), P(275775488, 8),
            P(275775488, 48), P(296747008, 64), P(41842688, 8));
        ADD(T, LL128, P(81844224, 4), P(269484032, 4), P(81844224, 4));
        ADD(T, S, P(269484032, 4), P(MAX_SIZE, 4), P(269484032, 4));
        ADD(R, S, P(81844224, 5), P(MAX_SIZE, 5), P(MAX_SIZE, 32),
            P(1073741824, 40), P(1073741824, 128), P(787480576, 128),
            P(296747008, 64), P(275775488, 48), P(275775488, 8),
            P(81844224, 5));
        ADD(T, S, P(296747008, 64), P(787480576, 128), P(1073741824, 256),
            tree_simple_1, tree_simple_2, P(269484032, 256),
            P(257114112, 128));
        ADD(NT, S, nvlstree, P(1073741824, 256), P(787480576, 128),
            P(1073741824, 128), P(1073741824, 40), P(MAX_SIZE, 32));
    } else if (ranks == nodes) {
        if (op == COLL_ALLREDUCE) {
            struct point tree_ll128 = extend(P(9999360, 64),
                                             P(119477248, 128), far_corner);
            struct point ring_ll128 = extend(P(4736000, 2), P(269484032, 128),
                                             far_corner);
            ADD(T, LL128, P(0, 16), P(2367488, 16), P(9999360, 64),
                P(119477248, 128), tree_ll128, P(0, MAX_RANKS));
            ADD(R, LL128, P(0, 2), P(4736000, 2), P(269484032, 128),
                ring_ll128, tree_ll128, P(119477248, 128), P(9999360, 64),
                P(2367488, 16), P(0, 16));
            ADD(R, S, P(4736000, 2), P(MAX_SIZE, 2), ring_ll128,
                P(269484032, 128));
        } else if (op == COLL_ALLGATHER) {
            struct point ring_simple = extend(P(4194304, 2),
                                              P(8589934592, 2048), far_corner);
            ADD(R, S, P(4194304, 2), P(MAX_SIZE, 2), ring_simple,
                P(8589934592, 2048));
        } else if (op == COLL_REDUCESCATTER) {
            struct point ring_simple = extend(P(8388608, 2),
                                              P(4294967296, 1024), far_corner);
            ADD(R, S, P(8388608, 2), P(MAX_SIZE, 2), ring_simple,
                P(4294967296, 1024));
        }
    }
    return k;
}

/* p5en.48xlarge (region_init_internal_p5en): all-reduce, all-gather and
 * reduce-scatter with 8 GPUs a node and with one. */
static int
p5en_regions(enum coll_op op, int ranks, int nodes, struct region *out)
{
    int k = 0;
    enum { T = NCCL_ALGO_TREE, R = NCCL_ALGO_RING, NT = NCCL_ALGO_NVLS_TREE,
           PAT = NCCL_ALGO_PAT };
    enum { LL = PROTO_LL, LL128 = PROTO_LL128, S = PROTO_SIMPLE };
    if (ranks == 8 * nodes && op == COLL_ALLREDUCE) {
        struct point tree_ll = extend(P(196608, 192), P(196608, 1024),
                                      far_corner);
        struct point tree_ll128 = extend(P(129499136, 127), P(218103808, 1024),
                                         far_corner);
        struct point nvlstree = extend(P(7516192768, 256),
                                       P(17179869184, 448), far_corner);
        ADD(T, LL, P(0, 16), P(196608, 16), P(196608, 1024), tree_ll,
            P(0, MAX_RANKS));
        ADD(T, LL128, tree_ll, P(196608, 1024), P(196608, 16),
            P(13107200, 16), P(129499136, 127), P(218103808, 1024),
            tree_ll128);
        ADD(R, LL128, P(129499136, 127), P(13107200, 16), P(29884416, 16),
            P(293601280, 32), P(589299712, 64), P(549453824, 128));
        ADD(NT, S, tree_ll128, P(218103808, 1024), P(129499136, 127),
            P(549453824, 128), P(589299712, 64), P(293601280, 32),
            P(29884416, 16), P(MAX_SIZE, 16), P(509607936, 32),
            P(7516192768, 256), P(17179869184, 448), nvlstree);
        ADD(R, S, nvlstree, P(17179869184, 448), P(7516192768, 256),
            P(509607936, 32), P(MAX_SIZE, 16));
    } else if (ranks == 8 * nodes && op == COLL_ALLGATHER) {
        struct point ring_ll = extend(P(28305408, 768), P(33554432, 1024),
                                      far_corner);
        struct point ring_ll128 = extend(P(7247754240, 384),
                                         P(17179865088, 896), far_corner);
        ADD(R, LL, P(0, 16), P(786432, 16), P(4718592, 128),
            P(13630464, 384), P(19922944, 512), P(28305408, 768),
            P(33554432, 1024), ring_ll, P(0, MAX_RANKS));
        ADD(R, LL128, ring_ll, P(33554432, 1024), P(28305408, 768),
            P(19922944, 512), P(13630464, 384), P(4718592, 128),
            P(786432, 16), P(236978176, 16), P(956301312, 64),
            P(7247754240, 384), P(17179865088, 896), ring_ll128);
        ADD(R, S, ring_ll128, P(17179865088, 896), P(7247754240, 384),
            P(956301312, 64), P(494927872, 32), P(236978176, 16),
            P(MAX_SIZE, 16));
    } else if (ranks == 8 * nodes && op == COLL_REDUCESCATTER) {
        struct point ring_ll = extend(P(7340032, 256), P(18874368, 512),
                                      far_corner);
        struct point ring_ll128 = extend(P(7247757312, 256),
                                         P(17179869184, 640), far_corner);
        ADD(R, LL, P(0, 16), P(786432, 16), P(4718592, 128), P(7340032, 256),
            P(18874368, 512), ring_ll, P(0, MAX_RANKS));
        ADD(R, LL128, ring_ll, P(18874368, 512), P(7340032, 256),
            P(4718592, 128), P(786432, 16), P(291504128, 16),
            P(589299712, 32), P(2415919104, 128), P(7247757312, 256),
            P(17179869184, 640), ring_ll128);
        ADD(R, S, ring_ll128, P(17179869184, 640), P(7247757312, 256),
            P(2415919104, 128), P(589299712, 32), P(291504128, 16),
            P(MAX_SIZE, 16));
    } else if (ranks == nodes && op == COLL_ALLREDUCE) {
        struct point tree_ll128 = extend(P(524288, 8), P(1048576, 96),
                                         far_corner);
        struct point tree_simple = extend(P(8388608, 32), P(33554432, 128),
                                          far_corner);
        struct point ring_ll128 = extend(P(50331648, 16), P(301989888, 128),
                                         far_corner);
        ADD(T, LL, P(0, 2), P(65536, 2), P(65536, 64), P(65536, MAX_RANKS));
        ADD(T, LL128, P(65536, MAX_RANKS), P(65536, 64), P(65536, 2),
            P(262144, 2), P(1048576, 4), P(4194304, 8), P(16777216, 16),
            P(33554432, 32), P(1048576, 32), P(1048576, 96), tree_ll128);
        ADD(T, S, tree_ll128, P(1048576, 96), P(1048577, 32),
            P(33554431, 32), P(33554432, 128), tree_simple);
        ADD(R, LL128, tree_simple, P(33554432, 128), P(33554433, 32),
            P(16777217, 16), P(4194305, 8), P(1048577, 4), P(262144, 2),
            P(6291456, 2), P(50331648, 16), P(301989888, 128), ring_ll128);
        ADD(R, S, ring_ll128, P(301989888, 128), P(50331648, 16),
            P(6291456, 2), P(MAX_SIZE, 2));
    } else if (ranks == nodes
               && (op == COLL_ALLGATHER || op == COLL_REDUCESCATTER)) {
        struct point pat = extend(P(50331648, 64), P(117440512, 128),
                                  far_corner);
        struct point ring_ll128 = extend(P(50331648, 16), P(301989888, 128),
                                         far_corner);
        if (op == COLL_ALLGATHER) {
            ADD(PAT, S, P(0, 2), P(65536, 2), P(1048576, 2), P(8388608, 8),
                P(16777216, 16), P(16777216, 32), P(50331648, 64),
                P(117440512, 128), pat, far_corner, P(65536, MAX_RANKS),
                P(0, MAX_RANKS));
            ADD(R, LL128, pat, P(117440512, 128), P(50331648, 64),
                P(16777216, 32), P(16777217, 16), P(8388609, 8),
                P(1048576, 2), P(4194304, 2), P(50331648, 16),
                P(301989888, 128), ring_ll128);
        } else {
            ADD(PAT, S, P(0, 2), P(65536, 2), P(1048576, 2), P(16777216, 32),
                P(50331648, 64), P(117440512, 128), pat, far_corner,
                P(65536, MAX_RANKS), P(0, MAX_RANKS));
            ADD(R, LL128, pat, P(117440512, 128), P(50331648, 64),
                P(16777216, 32), P(1048576, 2), P(4194304, 2),
                P(50331648, 16), P(301989888, 128), ring_ll128);
        }
        ADD(R, S, ring_ll128, P(301989888, 128), P(50331648, 16),
            P(4194304, 2), P(MAX_SIZE, 2));
    }
    return k;
}

int
aws_tuner_pick(enum net_tuner tuner, enum coll_op op, double nbytes,
               int ranks, int nodes, tuner_runnable_fn runnable, void *ctx,
               int *algo, int *proto)
{
    /* region_get_coll_info_internal_v3: "Skip when two nodes or lesser
     * because the regions are not well defined". */
    if (tuner == NET_TUNER_NCCL || nodes <= 2 || nbytes <= 0)
        return 0;
    struct region regions[12];
    int n = 0;
    if (tuner == NET_TUNER_AWS_P5)
        n = p5_regions(op, ranks, nodes, regions);
    else if (tuner == NET_TUNER_AWS_P5EN)
        n = p5en_regions(op, ranks, nodes, regions);
    struct point p = lg((struct point){nbytes, (double)ranks});
    for (int i = 0; i < n; i++) {
        if (!runnable(ctx, regions[i].algo, regions[i].proto))
            continue;
        if (inside(p, &regions[i])) {
            *algo = regions[i].algo;
            *proto = regions[i].proto;
            return 1;
        }
    }
    return 0;
}

/* chunkSizeTuningTreeLL128P5en: down a ladder from 288,000 bytes (the
 * in-flight data at which EFA saturates, by the plugin's measurements) as
 * the message gives fewer chunks than the tree's depth needs; nBytes is
 * what NCCL passes (calcCollChunking's, the whole buffer). */
static double
p5en_tree_ll128_chunk(double nbytes, int nodes)
{
    int log2_nodes = 0;
    while ((1 << (log2_nodes + 1)) <= nodes)
        log2_nodes++;
    double nsteps = 1 + log2_nodes;
    double chunk = 288000;
    if (floor(nbytes / chunk) < 2 * nsteps * nsteps)
        chunk /= 2;
    if (floor(nbytes / chunk) < floor(1.5 * nsteps))
        chunk /= 2;
    while (floor(nbytes / chunk) < nsteps + 1 && chunk > 18000)
        chunk /= 2;
    return chunk;
}

int
aws_tuner_chunk_bytes(enum net_tuner tuner, enum coll_op op, double nbytes,
                      int ranks, int nodes, int algo, int proto,
                      double *chunk)
{
    /* region_get_chunk_size_internal: one rank a node only, whoever chose
     * the algorithm, and with no test on the node count. */
    if (tuner != NET_TUNER_AWS_P5EN || ranks != nodes
        || op != COLL_ALLREDUCE || algo != NCCL_ALGO_TREE
        || proto != PROTO_LL128)
        return 0;
    *chunk = p5en_tree_ll128_chunk(nbytes, nodes);
    return 1;
}
