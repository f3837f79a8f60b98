/*
 * fuzz_topology.c: topology files, parsed and validated as the command
 * line does.  An accepted topology prints back to a file that parses to
 * the same values (the round trip `topologies --show` relies on).  The
 * same input, read as a calibration file (simulate --calibration) onto a
 * built-in topology, either applies or leaves the topology as it was.
 */
#define _POSIX_C_SOURCE 200809L
#include "fuzz_util.h"
#include "topo.h"

#include <string.h>

static void
check_topology(char *s)
{
    char *cause = NULL;
    struct topo *t = topo_parse_ini(s, "fuzz.ini", &cause);
    if (t == NULL) {
        fuzz_check_cause(cause);
    } else if (topo_validate(t, &cause) != 0) {
        fuzz_check_cause(cause);
        topo_free(t);
    } else {
        FUZZ_ASSERT(t->nodes >= 1 && t->gpus_per_node >= 1);
        FUZZ_ASSERT(t->hbm_bytes > 0 && t->intra_Bps > 0 && t->nic_Bps > 0);
        char *buf = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&buf, &len);
        topo_print(t, f);
        fclose(f);
        struct topo *t2 = topo_parse_ini(buf, "printed", &cause);
        FUZZ_ASSERT(t2 != NULL);
        FUZZ_ASSERT(t2->nodes == t->nodes && t2->hbm_bytes == t->hbm_bytes);
        topo_free(t2);
        free(buf);
        topo_free(t);
    }
    struct topo *base = topo_load("dgx-a100-80g", &cause);
    FUZZ_ASSERT(base != NULL);
    struct topo before = *base;
    if (topo_apply_calibration_text(base, s, "fuzz-cal.ini", &cause) != 0) {
        fuzz_check_cause(cause);
        FUZZ_ASSERT(memcmp(&before, base, sizeof before) == 0);
    } else {
        /* Only measured values change: names and the shape stay. */
        FUZZ_ASSERT(base->name == before.name && base->nodes == before.nodes
                    && base->gpus_per_node == before.gpus_per_node
                    && base->fabric == before.fabric);
    }
    topo_free(base);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return fuzz_run_text(data, size, check_topology);
}
