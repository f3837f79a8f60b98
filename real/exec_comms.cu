/*
 * exec_comms.cu: the NCCL communicators of the schedule's process groups: placing
 * ranks, creating them with the ids the rendezvous carried, and releasing
 * or aborting them.
 */
#include "exec_impl.h"

/* ---- Communicators -------------------------------------------------- */

/* Rank r's group and rank within it for a process group: the shard group
 * is s->shard_size consecutive ranks (every rank for NO_SHARD), the
 * replicate group the ranks with the same position in their shard group
 * (for HYBRID_SHARD the same local rank on every node). */
void
pg_place(const struct sched *s, enum sched_pg pg, int rank, int *color,
         int *pos, int *size)
{
    int sh = s->shard_size > 1 ? s->shard_size : s->world;
    if (pg == PG_POST_FORWARD && s->post_forward_size > 0) {
        /* FSDP2's post-forward mesh: consecutive ranks of the shard
         * group, post_forward_size of them. */
        *color = rank / s->post_forward_size;
        *pos = rank % s->post_forward_size;
        *size = s->post_forward_size;
    } else if (pg == PG_REPLICATE) {
        *color = rank % sh;
        *pos = rank / sh;
        *size = s->world / sh;
    } else {
        *color = rank / sh;
        *pos = rank % sh;
        *size = sh;
    }
}

/* Create every communicator the schedule uses, for all local GPUs, in one
 * NCCL group per process group (as ncclCommInitAll does).  Each
 * communicator's unique id comes from the process that hosts its
 * position-0 rank; across nodes the processes swap their ids with one
 * all-gather (sim/core/rendezvous.c), as torch.distributed does through its
 * store. */
int
init_comms(struct exec_run *r, char **cause)
{
    const struct sched *s = r->s;
    int procs = r->l->nodes;
    for (int p = PG_SHARD; p < PG_COUNT; p++) {
        if (!r->uses_pg[p])
            continue;
        int colors = 0;
        for (int rank = 0; rank < s->world; rank++) {
            int c, pos, size;
            pg_place(s, (enum sched_pg)p, rank, &c, &pos, &size);
            colors = c + 1 > colors ? c + 1 : colors;
        }
        ncclUniqueId *mine = (ncclUniqueId *)xcalloc(colors,
                                                     sizeof(ncclUniqueId));
        ncclUniqueId *ids = (ncclUniqueId *)xcalloc(
            (size_t)colors * procs, sizeof(ncclUniqueId));
        ncclResult_t e = ncclSuccess;
        for (int i = 0; i < r->n && e == ncclSuccess; i++) {
            int c, pos, size;
            pg_place(s, (enum sched_pg)p, r->g[i].rank, &c, &pos, &size);
            if (pos == 0)
                e = ncclGetUniqueId(&mine[c]);
        }
        if (e != ncclSuccess) {
            *cause = xasprintf("ncclGetUniqueId: %s: %s",
                               ncclGetErrorString(e), ncclGetLastError(NULL));
            free(mine);
            free(ids);
            return -1;
        }
        if (r->l->rv != NULL) {
            if (rendezvous_allgather(r->l->rv, mine,
                                     (size_t)colors * sizeof *mine, ids,
                                     cause) != 0) {
                free(mine);
                free(ids);
                return -1;
            }
        } else {
            memcpy(ids, mine, (size_t)colors * sizeof *mine);
        }
        free(mine);
        /* Color c's id is in the block of the process that holds its
         * position-0 rank. */
        ncclUniqueId *id_of = (ncclUniqueId *)xcalloc(colors,
                                                      sizeof(ncclUniqueId));
        for (int rank = 0; rank < s->world; rank++) {
            int c, pos, size;
            pg_place(s, (enum sched_pg)p, rank, &c, &pos, &size);
            if (pos == 0)
                id_of[c] = ids[(size_t)(rank / r->n) * colors + c];
        }
        free(ids);
        ids = id_of;
        e = ncclGroupStart();
        int failed_at = -1;
        for (int i = 0; i < r->n && e == ncclSuccess; i++) {
            int c, pos, size;
            pg_place(s, (enum sched_pg)p, r->g[i].rank, &c, &pos, &size);
            cudaError_t ce = cudaSetDevice(r->g[i].dev);
            if (ce != cudaSuccess) {
                *cause = xasprintf("set-up on rank %d: cudaSetDevice: %s: "
                                   "%s", r->g[i].rank, cudaGetErrorName(ce),
                                   cudaGetErrorString(ce));
                ncclGroupEnd();
                free(ids);
                return -1;
            }
            e = ncclCommInitRank(&r->g[i].comm[p], size, ids[c], pos);
            failed_at = i;
        }
        ncclResult_t e2 = ncclGroupEnd();
        free(ids);
        if (e == ncclSuccess)
            e = e2;
        if (e != ncclSuccess) {
            *cause = xasprintf("set-up on rank %d: ncclCommInitRank (%s "
                               "group of %d): %s: %s",
                               failed_at >= 0 ? r->g[failed_at].rank : 0,
                               sched_pg_name((enum sched_pg)p),
                               r->pg_size[p], ncclGetErrorString(e),
                               ncclGetLastError(NULL));
            return -1;
        }
    }
    return 0;
}

/* Finalize (ok) or abort every communicator not aborted yet.  Both are
 * intra-node collective calls since NCCL 2.18: one thread calling them
 * for several ranks must group them, or it waits for itself.  After
 * finalize, ncclCommDestroy is local. */
void
release_comms(struct exec_run *r, int ok)
{
    for (int p = 0; p < PG_COUNT; p++) {
        int any = 0;
        for (int i = 0; i < r->n; i++)
            any |= r->g[i].comm[p] != NULL && !r->g[i].comms_dead;
        if (!any)
            continue;
        ncclGroupStart();
        for (int i = 0; i < r->n; i++) {
            struct gpu *g = &r->g[i];
            if (g->comm[p] == NULL || g->comms_dead)
                continue;
            cudaSetDevice(g->dev);
            if (ok)
                ncclCommFinalize(g->comm[p]);
            else
                ncclCommAbort(g->comm[p]);
        }
        ncclGroupEnd();
        for (int i = 0; i < r->n; i++) {
            struct gpu *g = &r->g[i];
            if (ok && g->comm[p] != NULL && !g->comms_dead) {
                cudaSetDevice(g->dev);
                ncclCommDestroy(g->comm[p]);
            }
        }
    }
    for (int i = 0; i < r->n; i++)
        r->g[i].comms_dead = 1;
}
