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
