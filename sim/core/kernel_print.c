/*
 * kernel_print.c: a model's kernels as a run launches them, with their
 * times (fsdpsim models --show M --kernels), and the run's attention
 * kernel.
 */
#include "kernel.h"
#include "kernel_cost.h"
#include "xalloc.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

int
kernel_attention_for(const struct model *m, int requested,
                     const struct topo *t, enum dtype d,
                     enum attn_kernel *out, char **cause)
{
    int64_t head_dim = 0;
    for (int i = 0; i < m->n_modules && head_dim == 0; i++) {
        const struct module *mod = m->modules[i];
        if (mod->kind == LAYER_ATTENTION)
            head_dim = mod->head_dim;
        else if (mod->kind == LAYER_MHA && mod->heads > 0)
            head_dim = mod->out / mod->heads;
    }
    enum attn_kernel want = (enum attn_kernel)requested;
    const char *from = "--attention";
    if (want == ATTN_AUTO && m->attention != ATTN_AUTO) {
        want = (enum attn_kernel)m->attention;
        from = "the model's attention setting";
    }
    const char *why;
    if (attn_table_resolve(want, t->arch, d, head_dim, m->alibi, out, &why)
        != 0) {
        *cause = xasprintf("%s %s: %s (GPU %s)", from, attn_kernel_name(want),
                           why, t->gpu_name);
        return -1;
    }
    /* FlashAttention-3 has no dropout: hopper/flash_api.cpp's mha_fwd
     * and mha_bwd set p_dropout = 0 (and flash-attention issue #1251). */
    for (int i = 0; i < m->n_modules && *out == ATTN_FLASH3; i++)
        if (m->modules[i]->dropout > 0) {
            char *path = model_module_path(m->modules[i]);
            *cause = xasprintf("%s flash3: FlashAttention-3 has no "
                               "attention dropout, and %s drops with p = %g "
                               "(use flash2, cudnn or math)", from, path,
                               m->modules[i]->dropout);
            free(path);
            return -1;
        }
    return 0;
}

/* The module's path with every list index turned into '*', so the 32
 * layers of a ModuleList print once.  Caller frees. */
static char *
folded_path(const struct module *m)
{
    char *p = model_module_path(m);
    char *w = p;
    for (const char *r = p; *r; ) {
        if (isdigit((unsigned char)*r) && (r == p || r[-1] == '.')) {
            while (isdigit((unsigned char)*r))
                r++;
            *w++ = '*';
        } else {
            *w++ = *r++;
        }
    }
    *w = '\0';
    return p;
}

static void
print_kernels(const struct topo *t, const struct kernel *ks, int n,
              enum dtype d, double count, const char *phase, double *total,
              FILE *out)
{
    for (int i = 0; i < n; i++) {
        const struct kernel *k = &ks[i];
        double s = kernel_time_s(t, k, d);
        *total += s * count;
        char shape[64] = "";
        char eff[32] = "";
        if (k->cls == KERNEL_GEMM) {
            snprintf(shape, sizeof shape, "%lldx%lldx%lld",
                     (long long)k->m, (long long)k->n, (long long)k->k);
            snprintf(eff, sizeof eff, "%.1f%%",
                     100 * kernel_gemm_efficiency(t, k->m, k->n, k->k,
                                                  k->batch));
        } else if (k->cls == KERNEL_ATTN_FWD || k->cls == KERNEL_ATTN_BWD) {
            snprintf(shape, sizeof shape, "%s d=%lld S=%.0f%s",
                     attn_kernel_name(k->attn), (long long)k->head_dim,
                     k->seq, k->causal ? " causal" : "");
            snprintf(eff, sizeof eff, "%.1f%%",
                     100 * kernel_attention_efficiency(t, k));
        }
        fprintf(out, "    %-3s %-38s %-12s %3d %-24s %10.4g %10.4g %7s "
                "%10.2f\n", phase, k->name, kernel_class_name(k->cls),
                k->launches, shape, k->flops, k->bytes, eff, s * 1e6);
    }
}

void
kernel_print_model(const struct model *m, const struct topo *t,
                   const struct kernel_ctx *ctx, enum dtype d, FILE *out)
{
    /* Distinct folded paths in first-seen order, with their counts. */
    char **paths = xcalloc(m->n_modules, sizeof *paths);
    int *first = xcalloc(m->n_modules, sizeof *first);
    int *count = xcalloc(m->n_modules, sizeof *count);
    int n = 0;
    for (int i = 0; i < m->n_modules; i++) {
        const struct module *mod = m->modules[i];
        if (mod->kind == LAYER_CONTAINER || mod->kind == LAYER_PARAMETER)
            continue;
        char *p = folded_path(mod);
        int j = 0;
        while (j < n && strcmp(paths[j], p) != 0)
            j++;
        if (j == n) {
            paths[n] = p;
            first[n] = i;
            count[n++] = 1;
        } else {
            count[j]++;
            free(p);
        }
    }
    fprintf(out, "# kernels on %s: one micro-batch of %lld x %lld tokens, "
            "%s, attention %s%s\n", t->gpu_name, (long long)ctx->micro_batch,
            (long long)ctx->seq_len, dtype_name(d), attn_kernel_name(ctx->attn),
            ctx->compile ? ", torch.compile" : ", eager");
    fprintf(out, "#   dir kernel                                 class      "
            "  launches shape                         flops      bytes     "
            "eff    time(us)\n");
    double fwd = 0, bwd = 0;
    int launches_f = 0, launches_b = 0;
    for (int j = 0; j < n; j++) {
        const struct module *mod = m->modules[first[j]];
        struct kernel ks[KERNEL_MAX_PER_LEAF];
        fprintf(out, "%s (%s)%s", paths[j], mod->cls,
                count[j] > 1 ? "" : "\n");
        if (count[j] > 1)
            fprintf(out, " x%d\n", count[j]);
        int nk = kernel_list(mod, ctx, PHASE_FWD, ks);
        for (int i = 0; i < nk; i++)
            launches_f += ks[i].launches * count[j];
        print_kernels(t, ks, nk, d, count[j], "fwd", &fwd, out);
        nk = kernel_list(mod, ctx, PHASE_BWD, ks);
        for (int i = 0; i < nk; i++)
            launches_b += ks[i].launches * count[j];
        print_kernels(t, ks, nk, d, count[j], "bwd", &bwd, out);
        free(paths[j]);
    }
    fprintf(out, "# total forward %.3f ms in %d launches, backward %.3f ms "
            "in %d launches (GPU time, per micro-batch, no recomputation)\n",
            fwd * 1e3, launches_f, bwd * 1e3, launches_b);
    free(paths);
    free(first);
    free(count);
}
