/*
 * bench_fit.c: real bench's samples as a profiler trace, fitted as one
 * (bench_fit.h).
 */
#include "bench_fit.h"

#include "kineto_kernels.h"
#include "xalloc.h"

#include <stdlib.h>
#include <string.h>

void
bench_fit(struct topo *t, const struct bench_measure *m,
          struct profile_fit *out)
{
    struct prof_trace p;
    memset(&p, 0, sizeof p);
    p.k = xcalloc(m->n > 0 ? (size_t)m->n : 1, sizeof *p.k);
    int es = dtype_bytes(m->dtype);
    for (int i = 0; i < m->n; i++) {
        const struct bench_sample *s = &m->s[i];
        if (!(s->seconds > 0))
            continue;
        struct prof_kernel *pk = &p.k[p.n++];
        pk->k.cls = s->cls;
        pk->k.launches = 1;
        pk->dtype = m->dtype;
        pk->measured_s = s->seconds;
        if (s->cls == KERNEL_GEMM) {
            /* The bytes and FLOPs kernel.c gives a GEMM of this shape. */
            pk->k.name = "gemm (real bench)";
            pk->k.m = s->m;
            pk->k.n = s->n;
            pk->k.k = s->k;
            pk->k.batch = 1;
            pk->k.flops = 2.0 * (double)s->m * (double)s->n * (double)s->k;
            pk->k.bytes = ((double)s->m * s->k + (double)s->k * s->n
                           + (double)s->m * s->n) * es;
        } else {
            pk->k.name = "copy (real bench)";
            pk->k.bytes = s->bytes;
        }
        p.n_kernels++;
    }
    p.fwd_gap_s = m->launch_gap_s;
    p.n_fwd_gaps = m->n_launch_gaps;
    profile_fit(t, &p, out);
    free(p.k);
}
