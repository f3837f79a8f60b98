/*
 * hf_version.c: the transformers release of a run (see hf_version.h).
 */
#include "hf_version.h"

#include "torch_version.h"

int
hf_version_parse(const char *s, const char *origin, int *out, char **cause)
{
    return release_version_parse(s, origin, "transformers", "4.56",
                                 HF_VERSION_MIN, HF_VERSION_MAX, out, cause);
}

bool
hf_sdpa_copies_qkv(int version)
{
    if (version <= 0)
        version = HF_VERSION_DEFAULT;
    return version >= HF_SDPA_CONTIGUOUS_FIRST
           && version <= HF_SDPA_CONTIGUOUS_LAST;
}

bool
hf_sdpa_native_gqa(int version, int torch)
{
    if (version <= 0)
        version = HF_VERSION_DEFAULT;
    if (torch <= 0)
        torch = TORCH_VERSION_DEFAULT;
    return version >= HF_SDPA_ENABLE_GQA_FIRST
           && torch >= HF_SDPA_ENABLE_GQA_TORCH;
}
