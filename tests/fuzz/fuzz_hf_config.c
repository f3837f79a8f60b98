/*
 * fuzz_hf_config.c: Hugging Face config.json files, through the same path
 * model_load takes: JSON to native INI, then the INI parser.
 */
#include "fuzz_util.h"
#include "fuzz_model_check.h"

static void
check_hf_config(char *s)
{
    char *cause = NULL;
    char *ini = model_hf_to_ini(s, "config.json", "fuzz", &cause);
    if (ini != NULL) {
        struct model *m = model_parse_ini(ini, "config.json", &cause);
        if (m != NULL) {
            fuzz_check_model(m);
            model_free(m);
        } else {
            fuzz_check_cause(cause);
        }
        free(ini);
    } else {
        fuzz_check_cause(cause);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return fuzz_run_text(data, size, check_hf_config);
}
