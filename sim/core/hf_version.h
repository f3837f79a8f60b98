/*
 * hf_version.h: the Hugging Face transformers release a run's model code
 * comes from, and what of its SDPA attention path changes with it.
 *
 * integrations/sdpa_attention.py, sdpa_attention_forward, read in the
 * releases' wheels on PyPI:
 *
 * - 4.48.0 to 4.55.x call query.contiguous(), key.contiguous() and
 *   value.contiguous() before SDPA, unconditionally (absent from 4.56.0;
 *   4.47's LlamaSdpaAttention did so only with a mask on CUDA): HF's
 *   rotated q and k, and v (a transpose), are copied to (B, h, T, d);
 * - from 4.54.0, grouped-query attention passes enable_gqa=True to SDPA
 *   instead of calling repeat_kv, when PyTorch is 2.5 or newer and there
 *   is no attention mask (use_gqa_in_sdpa), as in training on unpadded
 *   sequences; SDPA's flash kernel then reads the KV heads as they are.
 *
 * doc/compute-model.md, "Hugging Face's SDPA path", says what fsdpsim
 * does with each.
 */
#ifndef FSDPSIM_HF_VERSION_H
#define FSDPSIM_HF_VERSION_H

#include <stdbool.h>

/* Versions as 100 * major + minor: 4.56 is 456, 5.25 is 525. */
#define HF_VERSION_MIN 440
#define HF_VERSION_MAX 525
#define HF_VERSION_DEFAULT 525

#define HF_SDPA_CONTIGUOUS_FIRST 448
#define HF_SDPA_CONTIGUOUS_LAST 455
#define HF_SDPA_ENABLE_GQA_FIRST 454
/* PyTorch 2.5: SDPA's enable_gqa (use_gqa_in_sdpa's torch check). */
#define HF_SDPA_ENABLE_GQA_TORCH 205

/* S ("4.56", "5.25.0", "4.57.0.dev0") as a version code in *OUT: 0, or
 * -1 with *cause ("ORIGIN: ..."; caller frees) when S is not a version or
 * not one modelled. */
int hf_version_parse(const char *s, const char *origin, int *out,
                     char **cause);

/* Does transformers VERSION (0: the default) copy q, k and v to
 * contiguous tensors before SDPA? */
bool hf_sdpa_copies_qkv(int version);

/* Does transformers VERSION on PyTorch TORCH (0s: the defaults) hand
 * grouped-query attention to SDPA without repeat_kv, for an attention
 * without a mask? */
bool hf_sdpa_native_gqa(int version, int torch);

#endif
