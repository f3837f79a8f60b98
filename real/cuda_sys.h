/*
 * cuda_sys.h: the system, CUDA, cuBLAS and NCCL headers of real/, found
 * past sim/.
 *
 * sim/ has a sched.h of its own; were sim/ on the bracket include path
 * (-I) ahead of the system directories (real.h includes "sched.h" and
 * friends), the <sched.h> that <pthread.h> includes would name sim's.  This header sits
 * in real/, after sim/ on that path: #include_next continues the search
 * from the directory after real/, which reaches the CUDA and system ones.
 * Include it as <cuda_sys.h>, so that it is found through -I real/ and
 * not next to the including file (#include_next would then start from
 * the top), and after real.h.  The Makefile puts sim/ on the quote path
 * only (-iquote), where none of this matters; the header keeps builds
 * with other flags working.
 */
#ifndef FSDPSIM_REAL_CUDA_SYS_H
#define FSDPSIM_REAL_CUDA_SYS_H

#include_next <sched.h>
#include <pthread.h>

#include_next <nccl.h>
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#endif
