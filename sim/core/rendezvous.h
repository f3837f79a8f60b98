/*
 * rendezvous.h: how the processes of a multi-node real run find each
 * other and exchange NCCL's unique ids.
 *
 * One process per node.  Its place comes from the launcher's environment,
 * in this order:
 *   torchrun (env://)  RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT
 *   srun               SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID
 *   mpirun (Open MPI)  OMPI_COMM_WORLD_RANK, _SIZE, _LOCAL_RANK
 * and nothing set means a single process.  The processes then meet over
 * TCP at MASTER_ADDR:MASTER_PORT, where rank 0 listens (the env:// store
 * torchrun uses works the same way), and exchange small blobs with an
 * all-gather: that is all NCCL needs (ncclGetUniqueId on one process,
 * ncclCommInitRank on all).  Under srun and mpirun MASTER_ADDR and
 * MASTER_PORT must be exported as well (doc/commands.md shows how).
 *
 * Plain C and POSIX sockets, no CUDA: the tests run it on one machine
 * with forked processes.  Ownership: struct rendezvous is opaque, from
 * rendezvous_open() to rendezvous_close().
 */
#ifndef FSDPSIM_RENDEZVOUS_H
#define FSDPSIM_RENDEZVOUS_H

#include <stddef.h>

/* Largest blob one process may contribute to an all-gather. */
#define RENDEZVOUS_MAX_BLOB (1u << 20)
/* And all of them together (the 32-bit length on the wire). */
#define RENDEZVOUS_MAX_TOTAL (1u << 28)
/* Most processes (nodes) in one job. */
#define RENDEZVOUS_MAX_WORLD 100000

struct rendezvous_place {
    int rank;               /* this process, 0 .. world-1 */
    int world;              /* processes (nodes) */
    const char *launcher;   /* "torchrun", "srun", "mpirun" or "none" */
    char addr[256];         /* MASTER_ADDR, when world > 1 */
    char port[16];          /* MASTER_PORT */
};

/* Read this process's place from the environment.  0, or -1 with *cause
 * (caller frees) naming the variable, what is wrong and how to launch:
 * a rank outside 0..world-1, more than one process on a node (LOCAL_RANK
 * above 0), or world > 1 without MASTER_ADDR / MASTER_PORT. */
int rendezvous_place_from_env(struct rendezvous_place *p, char **cause);

struct rendezvous;

/* Meet the other processes: rank 0 listens and waits for every other
 * rank to connect, the others connect (retrying while rank 0 is not up
 * yet), all within timeout_s.  A world of 1 needs no network.  NULL with
 * *cause on failure (which ranks joined, what the network said). */
struct rendezvous *rendezvous_open(const struct rendezvous_place *p,
                                   double timeout_s, char **cause);

/* All-gather: every process contributes LEN bytes (the same LEN on all)
 * and gets world x LEN bytes in rank order in ALL.  0, or -1 with *cause
 * (a peer gone, a length mismatch, the timeout). */
int rendezvous_allgather(struct rendezvous *rv, const void *mine, size_t len,
                         void *all, char **cause);

void rendezvous_close(struct rendezvous *rv);

/* An all-gather another transport provides (MPI_Allgather in a build with
 * --with-mpi): the same contract as rendezvous_allgather(). */
typedef int (*rendezvous_allgather_fn)(void *ctx, const void *mine,
                                       size_t len, void *all, char **cause);
/* A rendezvous whose all-gathers go through FN (with CTX); no sockets. */
struct rendezvous *rendezvous_open_external(int rank, int world,
                                            rendezvous_allgather_fn fn,
                                            void *ctx);

#endif
