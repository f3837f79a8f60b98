/*
 * fuzz_model_ini.c: the native model format.  An accepted model has
 * parameters, a consistent pre-order module table and subtree counts that
 * add up.
 */
#include "fuzz_util.h"
#include "fuzz_model_check.h"

static void
check_model_ini(char *s)
{
    char *cause = NULL;
    struct model *m = model_parse_ini(s, "fuzz.ini", &cause);
    if (m != NULL) {
        fuzz_check_model(m);
        model_free(m);
    } else {
        fuzz_check_cause(cause);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return fuzz_run_text(data, size, check_model_ini);
}
