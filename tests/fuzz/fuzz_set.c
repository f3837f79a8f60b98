/*
 * fuzz_set.c: --set SECTION.KEY=VALUE on a built-in topology, and
 * KEY=VALUE run settings, as given on the command line.  Each line of the
 * input is one assignment.
 */
#include "fuzz_util.h"
#include "runconf.h"
#include "topo.h"

static void
check_set(char *s)
{
    char *cause = NULL;
    struct topo *t = topo_load("test-2x4", &cause);
    FUZZ_ASSERT(t != NULL);
    struct run_config c;
    config_init(&c);
    char *save = NULL;
    for (char *line = strtok_r(s, "\n", &save); line;
         line = strtok_r(NULL, "\n", &save)) {
        cause = NULL;
        if (topo_set(t, line, &cause) != 0)
            fuzz_check_cause(cause);
        char *eq = strchr(line, '=');
        cause = NULL;
        if (eq) {
            *eq = '\0';
            if (config_set(&c, line, eq + 1, "--fuzz", &cause) != 0)
                fuzz_check_cause(cause);
        }
    }
    cause = NULL;
    if (topo_validate(t, &cause) != 0)
        fuzz_check_cause(cause);
    cause = NULL;
    if (config_validate(&c, &cause) != 0)
        fuzz_check_cause(cause);
    config_free(&c);
    topo_free(t);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return fuzz_run_text(data, size, check_set);
}
