/*
 * torch_version.h: the PyTorch release a run trains with, and what of
 * eager PyTorch's CUDA kernels changes with it.
 *
 * A dtype cast (x.to(torch.float32), .type_as, copy_ between dtypes) is
 * a TensorIterator copy (aten/src/ATen/native/cuda/Copy.cu,
 * direct_copy_kernel_cuda).  Where Copy.cu has no kernel for the pair of
 * dtypes, the generic gpu_kernel finds the input's dtype unlike the
 * lambda's and takes the dynamic-cast path (Loops.cuh gpu_kernel_impl:
 * needs_dynamic_casting, then launch_unrolled_kernel with LoadWithCast /
 * StoreWithCast): one element at a time through a switch on the dtype,
 * no vector loads, bound by the SMs' issue rate rather than by HBM
 * (kernel_cost.c prices it).  Which casts have a vectorized kernel
 * (gpu_kernel_nocast) depends on the release:
 *
 * - fp32 to bf16/fp16: vectorized from 2.6 (PR #137053, "Speed up
 *   fp16/bf16 casts on H100+", merged at the end of October 2024, after
 *   the 2.5 branch; bfloat16_copy_kernel_cuda / float16_copy_kernel_cuda,
 *   on every architecture);
 * - bf16/fp16 to fp32: the dynamic-cast path in every release modelled
 *   (bfloat16tofloat32_copy_kernel_cuda was ROCm-only, #ifdef USE_ROCM,
 *   until PR #195542 of September 2026, which no release modelled has);
 * - to float8: vectorized from 2.2 (PR #110251, September 2023).
 *
 * doc/compute-model.md, "Dtype casts", gives the measurements.
 */
#ifndef FSDPSIM_TORCH_VERSION_H
#define FSDPSIM_TORCH_VERSION_H

#include <stdbool.h>

/* Versions as 100 * major + minor: 2.6 is 206. */
#define TORCH_VERSION_MIN 200
#define TORCH_VERSION_MAX 210
#define TORCH_VERSION_DEFAULT 210

/* The first releases whose fp32 -> 16-bit and float8 casts are
 * vectorized (PRs #137053 and #110251). */
#define TORCH_VECTORIZED_DOWNCAST 206
#define TORCH_VECTORIZED_FLOAT8_CAST 202

/* S, a release of WHAT written X.Y[.Z...] ("2.6", "2.7.0.dev20250101",
 * "2.3.0a0+git..."), as 100 * X + Y in *OUT: 0, or -1 with *cause
 * ("ORIGIN: ...", EXAMPLE the version the message suggests; caller frees)
 * when S is not a version or falls outside MIN..MAX. */
int release_version_parse(const char *s, const char *origin, const char *what,
                          const char *example, int min, int max, int *out,
                          char **cause);

/* S ("2.6", "2.6.0", "2.7.0.dev20250101", "2.3.0a0+git...") as a version
 * code in *OUT: 0, or -1 with *cause ("ORIGIN: ..."; caller frees) when
 * S is not a version or not one modelled. */
int torch_version_parse(const char *s, const char *origin, int *out,
                        char **cause);

/* Does eager PyTorch VERSION (0: the default) cast an element of
 * FROM_BYTES to one of TO_BYTES on the dynamic-cast path (not
 * vectorized)?  The sizes stand for the dtypes: 4 fp32, 2 bf16 or fp16
 * (the model never casts between those two), 1 float8; equal sizes are
 * the same dtype, which Tensor.to returns as it is. */
bool torch_cast_is_dynamic(int version, int from_bytes, int to_bytes);

#endif
