/*
 * check_rendezvous.c: multi-node launch without GPUs: the launchers'
 * environments, and the TCP all-gather between forked processes on this
 * machine standing in for nodes.
 */
#define _POSIX_C_SOURCE 200809L
#include "rendezvous.h"
#include "check_main.h"

#include <check.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *const launch_vars[] = {
    "RANK", "WORLD_SIZE", "LOCAL_RANK", "SLURM_PROCID", "SLURM_NTASKS",
    "SLURM_LOCALID", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
    "OMPI_COMM_WORLD_LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT", NULL};

static void
clear_env(void)
{
    for (int i = 0; launch_vars[i]; i++)
        unsetenv(launch_vars[i]);
}

/* A TCP port nothing listens on now: bind port 0 and ask which it got. */
static int
free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    ck_assert_int_ge(fd, 0);
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ck_assert_int_eq(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    socklen_t len = sizeof a;
    ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&a, &len), 0);
    close(fd);
    return ntohs(a.sin_port);
}

/* A clean environment with VARS (NAME=VALUE, NULL-terminated) set. */
static void
set_vars(const char *const *vars)
{
    clear_env();
    for (int i = 0; vars[i]; i++) {
        char *kv = strdup(vars[i]);
        char *eq = strchr(kv, '=');
        *eq = '\0';
        setenv(kv, eq + 1, 1);
        free(kv);
    }
}

/* Read the place from VARS: it must succeed. */
static struct rendezvous_place
place_from(const char *const *vars)
{
    set_vars(vars);
    struct rendezvous_place p;
    char *cause = NULL;
    ck_assert_msg(rendezvous_place_from_env(&p, &cause) == 0, "%s",
                  cause ? cause : "");
    clear_env();
    return p;
}

START_TEST(test_rendezvous_env_launchers)
{
    /* Nothing set: one process, no network. */
    const char *none[] = {NULL};
    struct rendezvous_place p = place_from(none);
    ck_assert_int_eq(p.world, 1);
    ck_assert_int_eq(p.rank, 0);
    ck_assert_str_eq(p.launcher, "none");

    /* torchrun --nnodes 4 --nproc-per-node 1: RANK 2 of WORLD_SIZE 4. */
    const char *torchrun[] = {"RANK=2", "WORLD_SIZE=4", "LOCAL_RANK=0",
                              "MASTER_ADDR=node0", "MASTER_PORT=29500",
                              NULL};
    p = place_from(torchrun);
    ck_assert_int_eq(p.rank, 2);
    ck_assert_int_eq(p.world, 4);
    ck_assert_str_eq(p.launcher, "torchrun");
    ck_assert_str_eq(p.addr, "node0");
    ck_assert_str_eq(p.port, "29500");

    /* srun: SLURM_PROCID / SLURM_NTASKS when torchrun's are absent. */
    const char *srun[] = {"SLURM_PROCID=1", "SLURM_NTASKS=3",
                          "MASTER_ADDR=node0", "MASTER_PORT=29501", NULL};
    p = place_from(srun);
    ck_assert_int_eq(p.rank, 1);
    ck_assert_int_eq(p.world, 3);
    ck_assert_str_eq(p.launcher, "srun");

    /* mpirun (Open MPI). */
    const char *mpirun[] = {"OMPI_COMM_WORLD_RANK=0",
                            "OMPI_COMM_WORLD_SIZE=2", "MASTER_ADDR=10.0.0.1",
                            "MASTER_PORT=29502", NULL};
    p = place_from(mpirun);
    ck_assert_str_eq(p.launcher, "mpirun");
    ck_assert_int_eq(p.world, 2);
}
END_TEST

/* VARS must make rendezvous_place_from_env fail with a message holding
 * WANT. */
static void
expect_env_error(const char *const *vars, const char *want)
{
    set_vars(vars);
    struct rendezvous_place p;
    char *cause = NULL;
    ck_assert_int_eq(rendezvous_place_from_env(&p, &cause), -1);
    ck_assert_ptr_nonnull(cause);
    ck_assert_msg(strstr(cause, want) != NULL, "'%s' lacks '%s'", cause,
                  want);
    free(cause);
    clear_env();
}

START_TEST(test_rendezvous_env_errors)
{
    const char *no_master[] = {"RANK=0", "WORLD_SIZE=2", NULL};
    expect_env_error(no_master, "MASTER_ADDR and MASTER_PORT are not both "
                                "set");
    const char *two_per_node[] = {"RANK=1", "WORLD_SIZE=16", "LOCAL_RANK=1",
                                  "MASTER_ADDR=a", "MASTER_PORT=1", NULL};
    expect_env_error(two_per_node, "LOCAL_RANK=1: real runs take one "
                                   "process per node");
    const char *rank_too_big[] = {"RANK=4", "WORLD_SIZE=4", NULL};
    expect_env_error(rank_too_big, "RANK=4 is not below WORLD_SIZE=4");
    const char *no_rank[] = {"WORLD_SIZE=4", NULL};
    expect_env_error(no_rank, "WORLD_SIZE is set but RANK is not");
    const char *bad_world[] = {"RANK=0", "WORLD_SIZE=four", NULL};
    expect_env_error(bad_world, "WORLD_SIZE='four': not a whole number");
    const char *bad_port[] = {"RANK=0", "WORLD_SIZE=2", "MASTER_ADDR=a",
                              "MASTER_PORT=70000", NULL};
    expect_env_error(bad_port, "MASTER_PORT='70000'");
}
END_TEST

/* One process of a WORLD-process job on this machine: meet at PORT, then
 * two all-gathers: 4 bytes "r<rank>.." and 1000 bytes of (rank + i) % 251.
 * Exit 0 when both come back right on this rank. */
static int
node_process(int rank, int world, int port)
{
    struct rendezvous_place p = {0};
    p.rank = rank;
    p.world = world;
    p.launcher = "torchrun";
    strcpy(p.addr, "127.0.0.1");
    snprintf(p.port, sizeof p.port, "%d", port);
    char *cause = NULL;
    struct rendezvous *rv = rendezvous_open(&p, 20, &cause);
    if (rv == NULL) {
        fprintf(stderr, "rank %d: %s\n", rank, cause);
        return 1;
    }
    char mine[4] = {'r', (char)('0' + rank), '.', '.'};
    char all[4 * 8];
    int bad = rendezvous_allgather(rv, mine, 4, all, &cause) != 0;
    for (int r = 0; r < world && !bad; r++)
        bad = all[4 * r] != 'r' || all[4 * r + 1] != '0' + r;
    unsigned char big[1000], bigs[1000 * 8];
    for (int i = 0; i < 1000; i++)
        big[i] = (unsigned char)((rank + i) % 251);
    bad = bad || rendezvous_allgather(rv, big, 1000, bigs, &cause) != 0;
    for (int r = 0; r < world && !bad; r++)
        for (int i = 0; i < 1000 && !bad; i++)
            bad = bigs[1000 * r + i] != (unsigned char)((r + i) % 251);
    if (bad && cause)
        fprintf(stderr, "rank %d: %s\n", rank, cause);
    rendezvous_close(rv);
    return bad;
}

START_TEST(test_rendezvous_allgather_between_processes)
{
    /* Four "nodes": ranks 1..3 start first and retry until rank 0
     * listens, as on a cluster where nodes start in any order. */
    const int world = 4;
    int port = free_port();
    pid_t pid[4];
    for (int r = world - 1; r >= 0; r--) {
        pid[r] = fork();
        ck_assert_int_ge(pid[r], 0);
        if (pid[r] == 0)
            _exit(node_process(r, world, port));
        if (r == world - 1)
            usleep(200000);
    }
    for (int r = 0; r < world; r++) {
        int status;
        ck_assert_int_eq(waitpid(pid[r], &status, 0), pid[r]);
        ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                      "rank %d failed", r);
    }
}
END_TEST

START_TEST(test_rendezvous_single_process)
{
    /* A world of one: no socket, the all-gather is a copy. */
    struct rendezvous_place p = {0};
    p.world = 1;
    char *cause = NULL;
    struct rendezvous *rv = rendezvous_open(&p, 1, &cause);
    ck_assert_ptr_nonnull(rv);
    int v = 42, out = 0;
    ck_assert_int_eq(rendezvous_allgather(rv, &v, sizeof v, &out, &cause),
                     0);
    ck_assert_int_eq(out, 42);
    rendezvous_close(rv);
}
END_TEST

START_TEST(test_rendezvous_timeouts)
{
    /* Rank 0 of 3 alone: after 0.3 s it reports that 1 of 3 joined. */
    struct rendezvous_place p = {0};
    p.world = 3;
    strcpy(p.addr, "127.0.0.1");
    snprintf(p.port, sizeof p.port, "%d", free_port());
    char *cause = NULL;
    ck_assert_ptr_null(rendezvous_open(&p, 0.3, &cause));
    ck_assert_msg(strstr(cause, "1 of 3 processes joined within 0.3 s")
                      != NULL, "%s", cause);
    free(cause);
    cause = NULL;
    /* Rank 1 with nobody listening: it names the address it tried. */
    p.rank = 1;
    snprintf(p.port, sizeof p.port, "%d", free_port());
    ck_assert_ptr_null(rendezvous_open(&p, 0.3, &cause));
    ck_assert_msg(strstr(cause, "rank 1: could not reach rank 0 at "
                                "MASTER_ADDR=127.0.0.1") != NULL, "%s",
                  cause);
    free(cause);
}
END_TEST

static Suite *
rendezvous_suite(void)
{
    Suite *s = suite_create("rendezvous");
    TCase *core = tcase_create("core");
    tcase_set_timeout(core, 60);
    tcase_add_test(core, test_rendezvous_env_launchers);
    tcase_add_test(core, test_rendezvous_env_errors);
    tcase_add_test(core, test_rendezvous_allgather_between_processes);
    tcase_add_test(core, test_rendezvous_single_process);
    tcase_add_test(core, test_rendezvous_timeouts);
    suite_add_tcase(s, core);
    return s;
}

int
main(void)
{
    return tu_main(rendezvous_suite());
}
