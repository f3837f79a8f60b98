/*
 * fuzz_runfile.c: run files, read as `--config FILE` reads them.
 */
#include "fuzz_util.h"
#include "runconf.h"

static void
check_runfile(char *s)
{
    struct run_config c;
    config_init(&c);
    char *cause = NULL;
    if (config_load_text(&c, s, "fuzz.ini", &cause) != 0)
        fuzz_check_cause(cause);
    else if (config_validate(&c, &cause) != 0)
        fuzz_check_cause(cause);
    config_free(&c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return fuzz_run_text(data, size, check_runfile);
}
