/*
 * real_common.h: what every CUDA source of real mode shares, exec and
 * bench alike: the one family of library-call checks (the clock is the
 * core's host_clock.h).
 *
 * A check (CUDA_TRY, NCCL_TRY, CUBLAS_TRY, as nccl-tests' CUDACHECK and
 * NCCLCHECK) records the first failure through its owner's real_fail()
 * (struct gpu in exec_impl.h, struct bench in bench.cu: one overload each,
 * both "the first failure wins, with where it happened") and returns -1
 * from the enclosing function; the message names the call, the library's
 * error name and string, and file:line.  TRY(x) passes a -1 up.
 */
#ifndef FSDPSIM_REAL_COMMON_H
#define FSDPSIM_REAL_COMMON_H

extern "C" {
#include "host_clock.h"
#include "real.h"
#include "xalloc.h"
}

#include <cuda_sys.h>  /* bracket: found via -I real/, see there */

#include <stddef.h>
#include <stdint.h>

/* Fill N elements of P, of TYPE (CUDA_R_16BF, CUDA_R_16F, else fp32),
 * with values in [-1, 1) from a hash of the index and SEED, on stream ST
 * with BLOCKS blocks of 256 threads; the launch's error.  GEMMs then see
 * ordinary numbers: uninitialised memory may hold NaNs or zeros, and
 * zeros draw less power and so run at clocks training never sees
 * (NVIDIA's fill for power-limited GEMM tests is uniform in [-1, 1]:
 * CUTLASS, media/docs/cpp/gemm_performance_measurement_methodology_
 * guidelines.md, "Matrix Fill Methodology").  Real runs fill their
 * scratch with it and bench its GEMM inputs and copy source. */
cudaError_t fill_uniform(void *p, size_t n, cudaDataType_t type,
                         unsigned seed, int blocks, cudaStream_t st);

/* The call's function name: "cudaMallocAsync" from "cudaMallocAsync(&p,
 * ...)", into buf. */
const char *real_call_name(const char *call, char *buf, size_t len);

#define CUDA_TRY(o, call)                                                    \
    do {                                                                     \
        cudaError_t e__ = (call);                                            \
        if (e__ != cudaSuccess) {                                            \
            char n__[64];                                                    \
            return real_fail((o), "%s: %s: %s (%s:%d)",                      \
                             real_call_name(#call, n__, sizeof n__),         \
                             cudaGetErrorName(e__), cudaGetErrorString(e__), \
                             __FILE__, __LINE__);                            \
        }                                                                    \
    } while (0)

#define NCCL_TRY(o, comm, call)                                              \
    do {                                                                     \
        ncclResult_t r__ = (call);                                           \
        if (r__ != ncclSuccess && r__ != ncclInProgress) {                   \
            char n__[64];                                                    \
            const char *l__ = ncclGetLastError(comm);                        \
            return real_fail((o), "%s: %s%s%s (%s:%d)",                      \
                             real_call_name(#call, n__, sizeof n__),         \
                             ncclGetErrorString(r__),                        \
                             l__ && *l__ ? ": " : "", l__ ? l__ : "",        \
                             __FILE__, __LINE__);                            \
        }                                                                    \
    } while (0)

#define CUBLAS_TRY(o, call)                                                  \
    do {                                                                     \
        cublasStatus_t s__ = (call);                                         \
        if (s__ != CUBLAS_STATUS_SUCCESS) {                                  \
            char n__[64];                                                    \
            return real_fail((o), "%s: %s: %s (%s:%d)",                      \
                             real_call_name(#call, n__, sizeof n__),         \
                             cublasGetStatusName(s__),                       \
                             cublasGetStatusString(s__), __FILE__,           \
                             __LINE__);                                      \
        }                                                                    \
    } while (0)

#define TRY(x)                                                               \
    do {                                                                     \
        if ((x) != 0)                                                        \
            return -1;                                                       \
    } while (0)

#endif
