/*
 * output_summary.c: the step summary, for people (text) and programs
 * (JSON).  Field names of the JSON form are documented in doc/outputs.md.
 */
#include "output.h"
#include "json_out.h"
#include "straggler.h"
#include "units.h"
#include "wrap.h"

#include <string.h>

static const char *
policy_text(const struct run_view *v, char *buf, size_t len)
{
    const struct run_config *c = v->cfg;
    if (c->wrap_modules != NULL)
        snprintf(buf, len, "enable_wrap + wrap(%s)", c->wrap_modules);
    else if (c->wrap == WRAP_MODULE)
        snprintf(buf, len, "ModuleWrapPolicy({%s})", c->wrap_classes);
    else if (c->wrap == WRAP_SIZE)
        snprintf(buf, len, "size_based_auto_wrap_policy(min_num_params=%lld)",
                 (long long)c->min_num_params);
    else if (c->wrap == WRAP_NONE)
        snprintf(buf, len, "no auto_wrap_policy (root only)");
    else
        snprintf(buf, len, "transformer_auto_wrap_policy(%s)",
                 c->layer_cls ? c->layer_cls : v->model->layer_cls);
    return buf;
}

/* The strategy a summary names: FSDP1's ShardingStrategy, or for FSDP2
 * "fully_shard(reshard_after_forward=..., mesh=R x M)". */
static const char *
fsdp2_strategy_text(const struct run_view *v, char *buf, size_t len)
{
    const struct run_config *c = v->cfg;
    const struct sched *s = v->sched;
    if (s->fsdp_version != 2) {
        snprintf(buf, len, "%s", sharding_name(c->sharding));
        return buf;
    }
    char raf[24];
    if (c->reshard_after_forward_size > 0)
        snprintf(raf, sizeof raf, "%lld",
                 (long long)c->reshard_after_forward_size);
    else if (!c->reshard_after_forward_given)
        snprintf(raf, sizeof raf, "None");
    else
        snprintf(raf, sizeof raf, "%s",
                 c->reshard_after_forward ? "True" : "False");
    snprintf(buf, len, "fully_shard(reshard_after_forward=%s, mesh=%dx%d)",
             raf, s->replicate_size, s->shard_size);
    return buf;
}

void
output_summary_text(const struct run_view *v, FILE *out)
{
    const struct run_config *c = v->cfg;
    const struct metrics *m = v->met;
    const struct sched *s = v->sched;
    char b1[64], b2[64], b3[64], pol[256];

    double np = (double)v->model->n_params;
    fprintf(out, "fsdpsim: %s (%.2f%s params) on %s, %d node%s x %d GPUs "
            "= %d GPUs\n", v->model->name, np >= 1e9 ? np / 1e9 : np / 1e6,
            np >= 1e9 ? "B" : "M",
            v->topo->name, v->topo->nodes, v->topo->nodes == 1 ? "" : "s",
            v->topo->gpus_per_node, s->world);
    if (c->calibration != NULL)
        fprintf(out, "calibration: %s\n", c->calibration);
    if (s->ddp) {
        fprintf(out, "DDP: bucket_cap_mb=%g (first bucket %s) -> %d "
                "bucket%s, gradient_as_bucket_view=%s, static_graph=%s\n",
                c->bucket_cap_mb,
                units_fmt_bytes(b1, sizeof b1, (double)s->first_bucket_bytes),
                s->n_buckets, s->n_buckets == 1 ? "" : "s",
                c->gradient_as_bucket_view ? "True" : "False",
                c->static_graph ? "True" : "False");
        fprintf(out, "      fp32 replicas, compute %s%s, all-reduce fp32, "
                "activation checkpointing %s%s, optimizer %s%s\n",
                dtype_name(s->param_dtype),
                s->param_dtype != DTYPE_FP32 ? " (autocast)" : "",
                ac_name(c->ac), c->no_sync ? ", no_sync" : "",
                optimizer_name(c->optimizer),
                s->scaler_grad_numel > 0 ? ", GradScaler" : "");
    } else if (s->fsdp_version == 2) {
        char strat[96], knobs[256];
        /* torchtitan's grouping replaces the wrapping policy (the
         * knobs text names it). */
        bool by_policy = c->fsdp2_groups == FSDP2_GROUPS_WRAP;
        fprintf(out, "FSDP2: %s%s%s -> %d groups%s\n",
                fsdp2_strategy_text(v, strat, sizeof strat),
                by_policy ? " on " : "",
                by_policy ? policy_text(v, pol, sizeof pol) : "",
                s->n_units, config_fsdp2_knobs_text(c, knobs, sizeof knobs));
        fprintf(out, "      MixedPrecisionPolicy(param %s, reduce %s%s%s), "
                "activation checkpointing %s, %s%s, optimizer %s%s\n",
                dtype_name(s->param_dtype), dtype_name(s->reduce_dtype),
                c->output_dtype_given ? ", output " : "",
                c->output_dtype_given ? dtype_name(c->output_dtype) : "",
                ac_name(c->ac),
                c->cpu_offload ? "CPUOffloadPolicy" : "no offload",
                c->no_sync ? ", set_requires_gradient_sync(False)" : "",
                optimizer_name(c->optimizer),
                s->scaler_grad_numel > 0 ? ", GradScaler" : "");
    } else {
    fprintf(out, "FSDP: %s, %s -> %d units, backward_prefetch=%s%s%s%s\n",
            sharding_name(c->sharding), policy_text(v, pol, sizeof pol),
            s->n_units, backward_prefetch_name(c->backward_prefetch),
            c->forward_prefetch ? ", forward_prefetch" : "",
            c->limit_all_gathers ? ", limit_all_gathers" : "",
            c->use_orig_params ? ", use_orig_params" : "");
    fprintf(out, "      param %s, reduce %s, activation checkpointing %s, "
            "%s%s, optimizer %s%s\n", dtype_name(s->param_dtype),
            dtype_name(s->reduce_dtype), ac_name(c->ac),
            c->cpu_offload ? "CPU offload" : "no offload",
            c->no_sync ? ", no_sync" : "", optimizer_name(c->optimizer),
            s->scaler_grad_numel > 0
                ? ", GradScaler (fp32 master weights)" : "");
    }
    if (c->ac == AC_SELECTIVE_LAYER)
        fprintf(out, "      selective-layer: every %lld%s layer "
                "checkpointed\n", (long long)c->ac_frequency,
                c->ac_frequency == 1 ? "" : c->ac_frequency == 2 ? "nd"
                : c->ac_frequency == 3 ? "rd" : "th");
    fprintf(out, "batch: %lld x %lld tokens per micro-batch, %lld "
            "micro-batch%s -> %lld tokens per GPU per step\n\n",
            (long long)c->micro_batch, (long long)c->seq_len,
            (long long)c->grad_accum, c->grad_accum == 1 ? "" : "es",
            (long long)s->tokens_per_gpu);

    fprintf(out, "step time         %s (step %d of %d)\n",
            units_fmt_time_s(b1, sizeof b1, m->step_time_s), m->step + 1,
            s->iterations);
    fprintf(out, "throughput        %.0f tokens/s, %.1f tokens/s per GPU\n",
            m->tokens_per_s, m->tokens_per_s_per_gpu);
    fprintf(out, "model TFLOPS/GPU  %.1f (MFU %.1f%%, PaLM's count %.1f%%; "
            "HFU %.1f%%)\n", m->model_tflops_per_gpu, 100 * m->mfu,
            100 * m->mfu_palm, 100 * m->hfu);
    fprintf(out, "compute           %s\n",
            units_fmt_time_s(b1, sizeof b1, m->compute_s));
    double slowest = straggler_speed(v->topo->speed_spread, s->world);
    if (slowest < 1)
        fprintf(out, "slowest GPU       the pace: %.1f%% of a typical GPU's "
                "compute speed, the slowest of %d ([gpu] speed_spread "
                "%.1f%% among 8)\n", 100 * slowest, s->world,
                100 * v->topo->speed_spread);
    fprintf(out, "all-gather        %s in %d ops\n",
            units_fmt_time_s(b1, sizeof b1, m->allgather_s),
            m->n_allgathers);
    fprintf(out, "reduce-scatter    %s in %d ops\n",
            units_fmt_time_s(b1, sizeof b1, m->reducescatter_s),
            m->n_reducescatters);
    fprintf(out, "all-reduce        %s in %d ops\n",
            units_fmt_time_s(b1, sizeof b1, m->allreduce_s),
            m->n_allreduces);
    if (m->copy_s > 0)
        fprintf(out, "host copies       %s\n",
                units_fmt_time_s(b1, sizeof b1, m->copy_s));
    fprintf(out, "exposed comm      %s of %s communication (overlap %.1f%%)\n",
            units_fmt_time_s(b1, sizeof b1, m->exposed_comm_s),
            units_fmt_time_s(b2, sizeof b2, m->comm_s),
            100 * m->overlap_ratio);
    if (m->host_wait_s > 0)
        fprintf(out, "host waiting      %s (rate limiter, synchronize: large when GPU-bound)\n",
                units_fmt_time_s(b1, sizeof b1, m->host_wait_s));
    if (m->host_bound)
        fprintf(out, "host-bound        the host issued work for %s of the "
                "step and the GPU waited on it (eager launch and autograd "
                "costs: larger micro-batches, torch.compile or CUDA graphs "
                "help)\n", units_fmt_time_s(b1, sizeof b1, m->host_busy_s));
    fprintf(out, "memory peak       %s allocated, %s reserved of %s: ",
            units_fmt_bytes(b1, sizeof b1, (double)m->mem.peak_allocated),
            units_fmt_bytes(b2, sizeof b2, (double)m->mem.peak_reserved),
            units_fmt_bytes(b3, sizeof b3, m->device_mem_bytes));
    if (m->fits)
        fprintf(out, "fits, %s to spare\n",
                units_fmt_bytes(b1, sizeof b1, m->margin_bytes));
    else
        fprintf(out, "DOES NOT FIT, %s short\n",
                units_fmt_bytes(b1, sizeof b1,
                                m->mem.oom_shortfall > -m->margin_bytes
                                    ? (double)m->mem.oom_shortfall
                                    : -m->margin_bytes));
    for (int k = 0; k < MEM_CATEGORY_COUNT; k++)
        if (m->mem.peak_by_cat[k] > 0)
            fprintf(out, "  %-22s %s\n", mem_category_name(k),
                    units_fmt_bytes(b1, sizeof b1,
                                    (double)m->mem.peak_by_cat[k]));
    if (m->mem.outside_bytes > 0)
        fprintf(out, "nccl buffers      %s a GPU outside PyTorch's allocator "
                "(connections' LL/LL128/Simple buffers, NVLS multicast), "
                "not available to it\n",
                units_fmt_bytes(b1, sizeof b1,
                                (double)m->mem.outside_bytes));
    if (m->mem.retries > 0) {
        fprintf(out, "allocator retries %d in the step, %d of them "
                "synchronizing the device (%d and %d in all steps)\n",
                m->step_retries, m->step_syncs, m->mem.retries,
                m->mem.syncs);
        fprintf(out, "allocator stall   %s of host time in the step "
                "(cudaMalloc failed: cache freed, host waited for the "
                "GPU)\n", units_fmt_time_s(b1, sizeof b1, m->alloc_stall_s));
    }
}

void
output_summary_json(const struct run_view *v, FILE *out)
{
    const struct run_config *c = v->cfg;
    const struct metrics *m = v->met;
    const struct sched *s = v->sched;
    char pol[256];
    fprintf(out, "{\n");
    fputs("  \"model\": ", out);
    json_out_string(out, v->model->name);
    fputs(",\n", out);
    fprintf(out, "  \"n_params\": %lld,\n", (long long)v->model->n_params);
    fputs("  \"topology\": ", out);
    json_out_string(out, v->topo->name);
    fputs(",\n", out);
    fprintf(out, "  \"nodes\": %d,\n", v->topo->nodes);
    fprintf(out, "  \"gpus_per_node\": %d,\n", v->topo->gpus_per_node);
    fprintf(out, "  \"world_size\": %d,\n", s->world);
    /* One set of keys for every run (a sweep's columns): FSDP2 says what
     * it runs in the strategy's value. */
    char strat[96];
    fsdp2_strategy_text(v, strat, sizeof strat);
    fprintf(out, "  \"sharding_strategy\": \"%s\",\n", strat);
    fputs("  \"auto_wrap_policy\": ", out);
    json_out_string(out, policy_text(v, pol, sizeof pol));
    fputs(",\n", out);
    char bp[24];
    fprintf(out, "  \"backward_prefetch\": \"%s\",\n",
            config_backward_prefetch_text(c, bp, sizeof bp));
    fprintf(out, "  \"param_dtype\": \"%s\",\n", dtype_name(s->param_dtype));
    fprintf(out, "  \"reduce_dtype\": \"%s\",\n",
            dtype_name(s->reduce_dtype));
    fprintf(out, "  \"micro_batch\": %lld,\n", (long long)c->micro_batch);
    fprintf(out, "  \"seq_len\": %lld,\n", (long long)c->seq_len);
    fprintf(out, "  \"grad_accum\": %lld,\n", (long long)c->grad_accum);
    fprintf(out, "  \"n_units\": %d,\n", s->n_units);
    fprintf(out, "  \"step_time_s\": %.9f,\n", m->step_time_s);
    fprintf(out, "  \"tokens_per_s\": %.3f,\n", m->tokens_per_s);
    fprintf(out, "  \"tokens_per_s_per_gpu\": %.3f,\n",
            m->tokens_per_s_per_gpu);
    fprintf(out, "  \"model_tflops_per_gpu\": %.3f,\n",
            m->model_tflops_per_gpu);
    fprintf(out, "  \"mfu\": %.6f,\n", m->mfu);
    fprintf(out, "  \"mfu_palm\": %.6f,\n", m->mfu_palm);
    fprintf(out, "  \"model_flops\": %.6e,\n", m->model_flops);
    fprintf(out, "  \"hardware_flops\": %.6e,\n", m->hardware_flops);
    fprintf(out, "  \"hardware_tflops_per_gpu\": %.3f,\n",
            m->hardware_tflops_per_gpu);
    fprintf(out, "  \"hfu\": %.6f,\n", m->hfu);
    fprintf(out, "  \"host_busy_s\": %.9f,\n", m->host_busy_s);
    fprintf(out, "  \"host_bound\": %s,\n", m->host_bound ? "true" : "false");
    fprintf(out, "  \"compute_s\": %.9f,\n", m->compute_s);
    fprintf(out, "  \"slowest_gpu_speed\": %.6f,\n",
            straggler_speed(v->topo->speed_spread, s->world));
    fprintf(out, "  \"allgather_s\": %.9f,\n", m->allgather_s);
    fprintf(out, "  \"reducescatter_s\": %.9f,\n", m->reducescatter_s);
    fprintf(out, "  \"allreduce_s\": %.9f,\n", m->allreduce_s);
    fprintf(out, "  \"copy_s\": %.9f,\n", m->copy_s);
    fprintf(out, "  \"comm_s\": %.9f,\n", m->comm_s);
    fprintf(out, "  \"exposed_comm_s\": %.9f,\n", m->exposed_comm_s);
    fprintf(out, "  \"overlap_ratio\": %.6f,\n", m->overlap_ratio);
    fprintf(out, "  \"host_wait_s\": %.9f,\n", m->host_wait_s);
    fprintf(out, "  \"n_allgathers\": %d,\n", m->n_allgathers);
    fprintf(out, "  \"n_reducescatters\": %d,\n", m->n_reducescatters);
    fprintf(out, "  \"n_allreduces\": %d,\n", m->n_allreduces);
    fprintf(out, "  \"peak_mem_bytes\": %lld,\n",
            (long long)m->mem.peak_allocated);
    fprintf(out, "  \"peak_reserved_bytes\": %lld,\n",
            (long long)m->mem.peak_reserved);
    fprintf(out, "  \"mem_breakdown\": {");
    for (int k = 0; k < MEM_CATEGORY_COUNT; k++)
        fprintf(out, "%s\n    \"%s\": %lld", k ? "," : "",
                mem_category_name(k), (long long)m->mem.peak_by_cat[k]);
    fprintf(out, "\n  },\n");
    fprintf(out, "  \"allocator_retries\": %d,\n", m->mem.retries);
    fprintf(out, "  \"allocator_syncs\": %d,\n", m->mem.syncs);
    fprintf(out, "  \"allocator_step_retries\": %d,\n", m->step_retries);
    fprintf(out, "  \"allocator_step_syncs\": %d,\n", m->step_syncs);
    fprintf(out, "  \"allocator_stall_s\": %.9f,\n", m->alloc_stall_s);
    fprintf(out, "  \"oom_shortfall_bytes\": %lld,\n",
            (long long)m->mem.oom_shortfall);
    fprintf(out, "  \"fits\": %s,\n", m->fits ? "true" : "false");
    fprintf(out, "  \"nccl_buffer_bytes\": %lld,\n",
            (long long)m->mem.outside_bytes);
    fprintf(out, "  \"device_mem_bytes\": %.0f,\n", m->device_mem_bytes);
    fprintf(out, "  \"mem_margin_bytes\": %.0f\n", m->margin_bytes);
    fprintf(out, "}\n");
}
