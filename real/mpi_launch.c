/*
 * mpi_launch.c: in a build configured --with-mpi, a real run started by
 * mpirun meets the other nodes through MPI itself: MPI gives the rank and
 * the node count, and MPI_Allgather carries NCCL's unique ids, so no
 * MASTER_ADDR or port is needed.  Without --with-mpi, mpirun still works
 * through sim/core/rendezvous.c's TCP all-gather.
 *
 * MPI is initialised only when the process was started by mpirun (Open
 * MPI's OMPI_COMM_WORLD_SIZE is set): a plain `fsdpsim real run` on one
 * node must not need an MPI runtime.
 */
#include "real.h"
#include "rendezvous.h"
#include "xalloc.h"

#include <mpi.h>
#include <stdlib.h>

static int mpi_started;

static int
mpi_allgather(void *ctx, const void *mine, size_t len, void *all,
              char **cause)
{
    (void)ctx;
    if (len > RENDEZVOUS_MAX_BLOB) {
        *cause = xasprintf("MPI all-gather of %zu bytes is more than %u",
                           len, RENDEZVOUS_MAX_BLOB);
        return -1;
    }
    int e = MPI_Allgather(mine, (int)len, MPI_BYTE, all, (int)len, MPI_BYTE,
                          MPI_COMM_WORLD);
    if (e != MPI_SUCCESS) {
        char msg[MPI_MAX_ERROR_STRING];
        int n = 0;
        MPI_Error_string(e, msg, &n);
        *cause = xasprintf("MPI_Allgather: %s", msg);
        return -1;
    }
    return 0;
}

int
real_mpi_launch(struct real_launch *l, char **cause)
{
    const char *size = getenv("OMPI_COMM_WORLD_SIZE");
    if (size == NULL || *size == '\0')
        return 1;
    int provided = 0;
    /* One thread per GPU, but only this thread calls MPI. */
    if (MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, &provided)
        != MPI_SUCCESS) {
        *cause = xasprintf("MPI_Init_thread failed (started by mpirun, "
                           "OMPI_COMM_WORLD_SIZE=%s)", size);
        return -1;
    }
    mpi_started = 1;
    int rank = 0, world = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world);
    l->node_rank = rank;
    l->nodes = world;
    l->rv = world > 1 ? rendezvous_open_external(rank, world, mpi_allgather,
                                                 NULL)
                      : NULL;
    return 0;
}

void
real_mpi_finish(int ok)
{
    if (!mpi_started)
        return;
    mpi_started = 0;
    if (ok)
        MPI_Finalize();
    else
        MPI_Abort(MPI_COMM_WORLD, REAL_EXIT_SYSTEM);
}
