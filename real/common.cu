/*
 * common.cu: the pieces of real_common.h, and the GPU probe both real run
 * and real bench start with.
 */
#include "real_common.h"

#include <string.h>

const char *
real_call_name(const char *call, char *buf, size_t len)
{
    size_t n = strcspn(call, "(");
    if (n >= len)
        n = len - 1;
    memcpy(buf, call, n);
    buf[n] = '\0';
    return buf;
}

template <typename T>
__global__ void
k_fill_uniform(T *p, size_t n, unsigned seed)
{
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += stride) {
        unsigned h = (unsigned)i * 2654435761u ^ seed;
        h ^= h >> 15;
        h *= 2246822519u;
        h ^= h >> 13;
        p[i] = (T)((float)(h & 0xffff) / 32768.0f - 1.0f);
    }
}

cudaError_t
fill_uniform(void *p, size_t n, cudaDataType_t type, unsigned seed,
             int blocks, cudaStream_t st)
{
    if (type == CUDA_R_16BF)
        k_fill_uniform<<<blocks, 256, 0, st>>>((__nv_bfloat16 *)p, n, seed);
    else if (type == CUDA_R_16F)
        k_fill_uniform<<<blocks, 256, 0, st>>>((__half *)p, n, seed);
    else
        k_fill_uniform<<<blocks, 256, 0, st>>>((float *)p, n, seed);
    return cudaGetLastError();
}

extern "C" int
real_probe(int *gpus, char **cause)
{
    int n = 0;  /* left unchanged when the call fails */
    cudaError_t e = cudaGetDeviceCount(&n);
    *gpus = 0;
    if (e != cudaSuccess) {
        *cause = xasprintf("no usable GPU: cudaGetDeviceCount: %s: %s",
                           cudaGetErrorName(e), cudaGetErrorString(e));
        return REAL_EXIT_SYSTEM;
    }
    if (n <= 0) {
        *cause = xstrdup("no usable GPU: cudaGetDeviceCount found none");
        return REAL_EXIT_SYSTEM;
    }
    *gpus = n;
    return 0;
}
