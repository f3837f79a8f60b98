/*
 * fuzz_topology.c: topology files, parsed and validated as the command
 * line does.  An accepted topology prints back to a file that parses to
 * the same values (the round trip `topologies --show` relies on).
 */
#define _POSIX_C_SOURCE 200809L
#include "fuzz_util.h"
#include "topo.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = fuzz_text(data, size);
    if (s == NULL)
        return 0;
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
    free(s);
    return 0;
}
