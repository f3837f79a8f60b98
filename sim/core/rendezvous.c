/*
 * rendezvous.c: the processes of a multi-node real run meet over TCP (see
 * rendezvous.h).
 *
 * A star: rank 0 listens at MASTER_PORT, every other rank keeps one
 * connection to it for the life of the job.  An all-gather is each
 * client sending its blob to rank 0 and rank 0 sending the concatenation
 * back; with one process per node that is a few hundred bytes to a few
 * hundred nodes, once per communicator, so nothing cleverer pays.  Every
 * wait is bounded by the timeout given to rendezvous_open(), so a node
 * that never starts is reported, not waited for forever.
 *
 * Wire format, all integers unsigned 32-bit big-endian: hello = magic,
 * rank, world; an all-gather = length then the bytes, each way.
 */
#define _POSIX_C_SOURCE 200809L
#include "rendezvous.h"
#include "host_clock.h"
#include "xalloc.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define RV_MAGIC 0x46534450u        /* "FSDP" */
/* How often a client retries connecting while rank 0 is not up yet. */
#define RV_RETRY_MS 100

struct rendezvous {
    int rank, world;
    double timeout_s;
    int *peer;          /* rank 0: socket per rank (peer[0] unused) */
    int server;         /* others: the socket to rank 0 */
    rendezvous_allgather_fn external;   /* set: all-gathers go there */
    void *external_ctx;
};

/* ---- The environment ----------------------------------------------- */

/* A whole decimal integer in [lo, hi] from variable NAME; -1 with *cause
 * when set but not one, 1 when unset. */
static int
env_int(const char *name, int lo, int hi, int *out, char **cause)
{
    const char *v = getenv(name);
    if (v == NULL || *v == '\0')
        return 1;
    char *end;
    errno = 0;
    long n = strtol(v, &end, 10);
    if (errno != 0 || *end != '\0' || end == v || n < lo || n > hi) {
        *cause = xasprintf("%s='%s': not a whole number from %d to %d", name,
                           v, lo, hi);
        return -1;
    }
    *out = (int)n;
    return 0;
}

int
rendezvous_place_from_env(struct rendezvous_place *p, char **cause)
{
    /* Rank, world size and local rank variables of each launcher. */
    static const struct {
        const char *launcher, *rank, *world, *local;
    } launchers[] = {
        {"torchrun", "RANK", "WORLD_SIZE", "LOCAL_RANK"},
        {"srun", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID"},
        {"mpirun", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
         "OMPI_COMM_WORLD_LOCAL_RANK"},
    };
    memset(p, 0, sizeof *p);
    p->world = 1;
    p->launcher = "none";
    for (size_t i = 0; i < sizeof launchers / sizeof launchers[0]; i++) {
        int world, rank, local = 0;
        int rc = env_int(launchers[i].world, 1, RENDEZVOUS_MAX_WORLD, &world,
                         cause);
        if (rc < 0)
            return -1;
        if (rc > 0)
            continue;
        rc = env_int(launchers[i].rank, 0, RENDEZVOUS_MAX_WORLD - 1, &rank,
                     cause);
        if (rc < 0)
            return -1;
        if (rc > 0) {
            *cause = xasprintf("%s is set but %s is not: launch with %s, "
                               "which sets both", launchers[i].world,
                               launchers[i].rank, launchers[i].launcher);
            return -1;
        }
        if (rank >= world) {
            *cause = xasprintf("%s=%d is not below %s=%d",
                               launchers[i].rank, rank, launchers[i].world,
                               world);
            return -1;
        }
        if (env_int(launchers[i].local, 0, RENDEZVOUS_MAX_WORLD, &local,
                    cause) < 0)
            return -1;
        if (local > 0) {
            *cause = xasprintf("%s=%d: real runs take one process per node "
                               "(it drives all the node's GPUs, one thread "
                               "each): launch one process per node "
                               "(torchrun --nproc-per-node 1, srun "
                               "--ntasks-per-node 1, mpirun --map-by "
                               "ppr:1:node)", launchers[i].local, local);
            return -1;
        }
        p->rank = rank;
        p->world = world;
        p->launcher = launchers[i].launcher;
        break;
    }
    if (p->world == 1)
        return 0;
    const char *addr = getenv("MASTER_ADDR"), *port = getenv("MASTER_PORT");
    if (addr == NULL || *addr == '\0' || port == NULL || *port == '\0') {
        *cause = xasprintf("%d processes (from %s) but MASTER_ADDR and "
                           "MASTER_PORT are not both set: export them on "
                           "every node as the host name of rank 0's node "
                           "and a free TCP port (torchrun sets them from "
                           "--rdzv-endpoint or --master-addr/--master-port)",
                           p->world, p->launcher);
        return -1;
    }
    int port_n;
    if (strlen(addr) >= sizeof p->addr ||
        env_int("MASTER_PORT", 1, 65535, &port_n, cause) != 0) {
        if (*cause == NULL)
            *cause = xasprintf("MASTER_ADDR is longer than %zu bytes",
                               sizeof p->addr - 1);
        return -1;
    }
    strcpy(p->addr, addr);
    snprintf(p->port, sizeof p->port, "%d", port_n);
    return 0;
}

/* ---- Bounded socket I/O ---------------------------------------------- */

/* Wait until FD is ready for EVENTS or DEADLINE (monotonic s) passes:
 * 1 ready, 0 timed out, -1 error (errno). */
static int
wait_fd(int fd, short events, double deadline)
{
    for (;;) {
        double left = deadline - host_clock_s();
        if (left <= 0)
            return 0;
        struct pollfd pfd = {fd, events, 0};
        int ms = left > 1e6 ? 1000000000 : (int)(left * 1000) + 1;
        int n = poll(&pfd, 1, ms);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -1;
        if (n > 0)
            return 1;
    }
}

/* Read or write exactly LEN bytes before DEADLINE.  0, or -1 with errno
 * (ETIMEDOUT, ECONNRESET for a peer that closed). */
static int
io_all(int fd, void *buf, size_t len, int writing, double deadline)
{
    char *b = buf;
    while (len > 0) {
        int w = wait_fd(fd, writing ? POLLOUT : POLLIN, deadline);
        if (w <= 0) {
            if (w == 0)
                errno = ETIMEDOUT;
            return -1;
        }
        ssize_t n = writing ? send(fd, b, len, MSG_NOSIGNAL)
                            : recv(fd, b, len, 0);
        if (n < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
        if (n <= 0) {
            if (n == 0)
                errno = ECONNRESET;
            return -1;
        }
        b += n;
        len -= (size_t)n;
    }
    return 0;
}

static int
put_u32s(int fd, const uint32_t *v, int n, double deadline)
{
    uint32_t be[3];
    for (int i = 0; i < n; i++)
        be[i] = htonl(v[i]);
    return io_all(fd, be, (size_t)n * 4, 1, deadline);
}

static int
get_u32s(int fd, uint32_t *v, int n, double deadline)
{
    if (io_all(fd, v, (size_t)n * 4, 0, deadline) != 0)
        return -1;
    for (int i = 0; i < n; i++)
        v[i] = ntohl(v[i]);
    return 0;
}

/* ---- Meeting --------------------------------------------------------- */

static int
listen_on(const struct rendezvous_place *p, char **cause)
{
    struct addrinfo hints = {0}, *res = NULL;
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE;
    int e = getaddrinfo(NULL, p->port, &hints, &res);
    if (e != 0) {
        *cause = xasprintf("rank 0: cannot listen on MASTER_PORT=%s: %s",
                           p->port, gai_strerror(e));
        return -1;
    }
    int fd = -1, err = 0;
    for (struct addrinfo *a = res; a != NULL && fd < 0; a = a->ai_next) {
        fd = socket(a->ai_family, a->ai_socktype, a->ai_protocol);
        if (fd < 0) {
            err = errno;
            continue;
        }
        int one = 1;
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        if (bind(fd, a->ai_addr, a->ai_addrlen) != 0 ||
            listen(fd, 128) != 0) {
            err = errno;
            close(fd);
            fd = -1;
        }
    }
    freeaddrinfo(res);
    if (fd < 0)
        *cause = xasprintf("rank 0: cannot listen on MASTER_PORT=%s: %s "
                           "(pick a free port)", p->port, strerror(err));
    return fd;
}

/* Rank 0: accept world-1 hellos.  0, or -1 with *cause. */
static int
accept_all(struct rendezvous *rv, int lfd, const struct rendezvous_place *p,
           double deadline, char **cause)
{
    int joined = 1;
    while (joined < rv->world) {
        int w = wait_fd(lfd, POLLIN, deadline);
        if (w <= 0) {
            *cause = xasprintf("rank 0: %d of %d processes joined within "
                               "%g s at port %s: start one process on "
                               "every node, with the same MASTER_ADDR, "
                               "MASTER_PORT and world size", joined,
                               rv->world, rv->timeout_s, p->port);
            return -1;
        }
        int fd = accept(lfd, NULL, NULL);
        if (fd < 0)
            continue;
        uint32_t hello[3];
        if (get_u32s(fd, hello, 3, deadline) != 0 || hello[0] != RV_MAGIC) {
            close(fd);      /* not one of ours (a port scan, a stray) */
            continue;
        }
        if ((int)hello[2] != rv->world || hello[1] == 0 ||
            (int)hello[1] >= rv->world || rv->peer[hello[1]] >= 0) {
            *cause = xasprintf("rank 0: a process says it is rank %u of "
                               "%u, but this job is %d processes%s: "
                               "every node must be launched with the same "
                               "world size and its own rank", hello[1],
                               hello[2], rv->world,
                               (int)hello[1] < rv->world && hello[1] > 0
                                   ? " and that rank already joined" : "");
            close(fd);
            return -1;
        }
        rv->peer[hello[1]] = fd;
        joined++;
    }
    return 0;
}

/* Others: connect to rank 0, retrying until it listens. */
static int
connect_server(struct rendezvous *rv, const struct rendezvous_place *p,
               double deadline, char **cause)
{
    int err = 0;
    const char *why = NULL;
    while (host_clock_s() < deadline) {
        struct addrinfo hints = {0}, *res = NULL;
        hints.ai_family = AF_UNSPEC;
        hints.ai_socktype = SOCK_STREAM;
        int e = getaddrinfo(p->addr, p->port, &hints, &res);
        if (e == 0) {
            for (struct addrinfo *a = res; a != NULL; a = a->ai_next) {
                int fd = socket(a->ai_family, a->ai_socktype,
                                a->ai_protocol);
                if (fd < 0) {
                    err = errno;
                    continue;
                }
                if (connect(fd, a->ai_addr, a->ai_addrlen) == 0) {
                    freeaddrinfo(res);
                    int one = 1;
                    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one,
                               sizeof one);
                    uint32_t hello[3] = {RV_MAGIC, (uint32_t)rv->rank,
                                         (uint32_t)rv->world};
                    if (put_u32s(fd, hello, 3, deadline) != 0) {
                        *cause = xasprintf("rank %d: lost MASTER_ADDR=%s:%s "
                                           "while joining: %s", rv->rank,
                                           p->addr, p->port,
                                           strerror(errno));
                        close(fd);
                        return -1;
                    }
                    rv->server = fd;
                    return 0;
                }
                err = errno;
                close(fd);
            }
            freeaddrinfo(res);
            why = NULL;
        } else {
            why = gai_strerror(e);
        }
        struct timespec ts = {0, RV_RETRY_MS * 1000000L};
        nanosleep(&ts, NULL);
    }
    *cause = xasprintf("rank %d: could not reach rank 0 at MASTER_ADDR=%s "
                       "MASTER_PORT=%s within %g s: %s (is rank 0's "
                       "process running, and the port open?)", rv->rank,
                       p->addr, p->port, rv->timeout_s,
                       why ? why : strerror(err));
    return -1;
}

struct rendezvous *
rendezvous_open(const struct rendezvous_place *p, double timeout_s,
                char **cause)
{
    struct rendezvous *rv = xcalloc(1, sizeof *rv);
    rv->rank = p->rank;
    rv->world = p->world;
    rv->timeout_s = timeout_s;
    rv->server = -1;
    if (rv->world == 1)
        return rv;
    double deadline = host_clock_s() + timeout_s;
    if (rv->rank == 0) {
        rv->peer = xmalloc((size_t)rv->world * sizeof *rv->peer);
        for (int i = 0; i < rv->world; i++)
            rv->peer[i] = -1;
        int lfd = listen_on(p, cause);
        if (lfd < 0 || accept_all(rv, lfd, p, deadline, cause) != 0) {
            if (lfd >= 0)
                close(lfd);
            rendezvous_close(rv);
            return NULL;
        }
        close(lfd);
    } else if (connect_server(rv, p, deadline, cause) != 0) {
        rendezvous_close(rv);
        return NULL;
    }
    return rv;
}

struct rendezvous *
rendezvous_open_external(int rank, int world, rendezvous_allgather_fn fn,
                         void *ctx)
{
    struct rendezvous *rv = xcalloc(1, sizeof *rv);
    rv->rank = rank;
    rv->world = world;
    rv->server = -1;
    rv->external = fn;
    rv->external_ctx = ctx;
    return rv;
}

/* ---- All-gather ------------------------------------------------------ */

int
rendezvous_allgather(struct rendezvous *rv, const void *mine, size_t len,
                     void *all, char **cause)
{
    if (len > RENDEZVOUS_MAX_BLOB ||
        (double)len * rv->world > (double)RENDEZVOUS_MAX_TOTAL) {
        *cause = xasprintf("rendezvous: %d x %zu bytes is more than one "
                           "all-gather carries (%u bytes each, %u in all)",
                           rv->world, len, RENDEZVOUS_MAX_BLOB,
                           RENDEZVOUS_MAX_TOTAL);
        return -1;
    }
    if (rv->external)
        return rv->external(rv->external_ctx, mine, len, all, cause);
    char *out = all;
    memcpy(out + (size_t)rv->rank * len, mine, len);
    if (rv->world == 1)
        return 0;
    double deadline = host_clock_s() + rv->timeout_s;
    uint32_t n = (uint32_t)len;
    if (rv->rank != 0) {
        uint32_t back;
        if (put_u32s(rv->server, &n, 1, deadline) != 0 ||
            io_all(rv->server, unconst(mine), len, 1, deadline) != 0 ||
            get_u32s(rv->server, &back, 1, deadline) != 0)
            goto lost;
        if (back != (uint32_t)rv->world * n) {
            *cause = xasprintf("rank %d: rank 0 sent %u bytes for an "
                               "all-gather of %d x %zu: the processes run "
                               "different fsdpsim versions or options",
                               rv->rank, back, rv->world, len);
            return -1;
        }
        if (io_all(rv->server, out, (size_t)back, 0, deadline) != 0)
            goto lost;
        return 0;
    }
    for (int r = 1; r < rv->world; r++) {
        uint32_t theirs;
        if (get_u32s(rv->peer[r], &theirs, 1, deadline) != 0) {
            *cause = xasprintf("rank 0: rank %d did not take part in an "
                               "all-gather within %g s: %s", r,
                               rv->timeout_s, strerror(errno));
            return -1;
        }
        if (theirs != n) {
            *cause = xasprintf("rank 0: rank %d sent %u bytes where rank 0 "
                               "sent %zu: the processes run different "
                               "fsdpsim versions or options", r, theirs,
                               len);
            return -1;
        }
        if (io_all(rv->peer[r], out + (size_t)r * len, len, 0, deadline)
            != 0) {
            *cause = xasprintf("rank 0: lost rank %d during an all-gather: "
                               "%s", r, strerror(errno));
            return -1;
        }
    }
    uint32_t total = (uint32_t)rv->world * n;
    for (int r = 1; r < rv->world; r++)
        if (put_u32s(rv->peer[r], &total, 1, deadline) != 0 ||
            io_all(rv->peer[r], out, (size_t)total, 1, deadline) != 0) {
            *cause = xasprintf("rank 0: lost rank %d during an all-gather: "
                               "%s", r, strerror(errno));
            return -1;
        }
    return 0;

lost:
    *cause = xasprintf("rank %d: lost rank 0 during an all-gather: %s",
                       rv->rank, strerror(errno));
    return -1;
}

void
rendezvous_close(struct rendezvous *rv)
{
    if (rv == NULL)
        return;
    if (rv->peer)
        for (int i = 0; i < rv->world; i++)
            if (rv->peer[i] >= 0)
                close(rv->peer[i]);
    if (rv->server >= 0)
        close(rv->server);
    free(rv->peer);
    free(rv);
}
