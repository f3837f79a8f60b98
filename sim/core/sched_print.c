/*
 * sched_print.c: names of schedule enums and the `fsdpsim schedule`
 * listing, in text and JSON.  Both forms carry every field the real-mode
 * executor needs, so a schedule printed here can be diffed against what
 * `fsdpsim real run --dry-run` would execute.
 */
#include "sched.h"
#include "coll.h"

static const char *const stream_names[STREAM_COUNT] = {
    "C", "PU", "U", "P", "A", "HOST"};
static const char *const kind_names[OP_KIND_COUNT] = {
    "forward", "backward", "recompute", "allgather", "reducescatter",
    "allreduce", "cast", "h2d", "d2h", "optimizer", "event", "alloc", "free",
    "cpu_wait"};
/* FSDP2's streams in the same slots (_fsdp_param_group.py,
 * FSDPCommContext.lazy_init): all-gather copy-in, all-gather,
 * reduce-scatter, all-reduce. */
static const char *const fsdp2_stream_names[STREAM_COUNT] = {
    "C", "CI", "AG", "RS", "AR", "HOST"};
static const char *const pg_names[PG_COUNT] = {"-", "shard", "replicate",
                                               "post_forward"};
static const char *const phase_names[] = {"forward", "backward", "optimizer"};
static const char *const category_names[MEM_CATEGORY_COUNT] = {
    "sharded_params", "unsharded_params", "grad_unsharded", "grad_sharded",
    "optimizer_state", "activations", "allgather_buffers",
    "reducescatter_buffers", "offload_staging"};

const char *
sched_stream_name(enum sched_stream s)
{
    return stream_names[s];
}

const char *
sched_stream_label(const struct sched *s, enum sched_stream st)
{
    return s->fsdp_version == 2 ? fsdp2_stream_names[st] : stream_names[st];
}

const char *
sched_op_kind_name(enum sched_op_kind k)
{
    return kind_names[k];
}

const char *
sched_pg_name(enum sched_pg pg)
{
    return pg_names[pg];
}

const char *
sched_phase_name(enum sched_phase p)
{
    return phase_names[p];
}

const char *
mem_category_name(enum mem_category c)
{
    return category_names[c];
}

static void
print_deps(const struct sched_op *op, FILE *out, const char *sep)
{
    for (int i = 0; i < op->n_deps; i++)
        fprintf(out, "%s%d", i ? sep : "", op->deps[i]);
}

void
sched_print_text(const struct sched *s, FILE *out)
{
    fprintf(out, "# fsdpsim schedule: %d ops, %d units, %d leaves, "
            "%d step(s) x %d micro-batch(es)\n", s->n_ops, s->n_units,
            s->n_leaves, s->iterations, s->micro_batches);
    fprintf(out, "# world %d, shard group %d, replicate group %d, "
            "param dtype %s, reduce dtype %s\n", s->world, s->shard_size,
            s->replicate_size, dtype_name(s->param_dtype),
            dtype_name(s->reduce_dtype));
    if (s->fsdp_version == 2)
        fprintf(out, "# FSDP2 (fully_shard): streams C, CI (all-gather "
                "copy-in), AG, RS, AR\n");
    fprintf(out, "# id iter micro phase stream kind unit pg bytes flops "
            "leaves buffer category wait deps hooks in out in_offset\n");
    for (int i = 0; i < s->n_ops; i++) {
        const struct sched_op *op = &s->ops[i];
        fprintf(out, "%d %d %d %s %s %s %d %s %llu %.0f %d:%d %d %s %d ",
                op->id, op->iter, op->micro, phase_names[op->phase],
                sched_stream_label(s, op->stream), kind_names[op->kind],
                op->unit, pg_names[op->pg], (unsigned long long)op->bytes,
                op->flops,
                op->leaf_begin, op->leaf_end, op->buffer,
                (op->kind == OP_ALLOC || op->kind == OP_FREE)
                    ? category_names[op->cat] : "-",
                op->wait_op);
        if (op->n_deps)
            print_deps(op, out, ",");
        else
            fputc('-', out);
        fprintf(out, " %d %d %d %llu\n", op->hooks, op->buf_in, op->buf_out,
                (unsigned long long)op->in_offset);
    }
}

/* FSDP2: a post-forward all-gather's mesh size, its unit's own
 * (reshard_after_forward=N), as "post_forward_ranks": N, or "". */
static const char *
post_forward_ranks(const struct sched *s, const struct sched_op *op,
                   char *buf, size_t len)
{
    buf[0] = '\0';
    if (op->pg == PG_POST_FORWARD && s->post_forward_sizes != NULL
        && op->unit >= 0 && op->unit < s->n_units)
        snprintf(buf, len, "\"post_forward_ranks\": %d, ",
                 s->post_forward_sizes[op->unit]);
    return buf;
}

void
sched_print_json(const struct sched *s, FILE *out)
{
    char pf[48];
    fprintf(out, "{\"n_ops\": %d, \"n_units\": %d, \"n_leaves\": %d, "
            "\"iterations\": %d, \"micro_batches\": %d, \"world\": %d, "
            "\"shard_size\": %d, \"replicate_size\": %d, "
            "\"param_dtype\": \"%s\", \"reduce_dtype\": \"%s\",\n",
            s->n_ops, s->n_units, s->n_leaves,
            s->iterations, s->micro_batches, s->world, s->shard_size,
            s->replicate_size, dtype_name(s->param_dtype),
            dtype_name(s->reduce_dtype));
    if (s->fsdp_version == 2)
        fprintf(out, " \"fsdp_version\": 2,\n");
    fprintf(out, " \"units\": [");
    for (int u = 0; u < s->n_units; u++) {
        const struct fsdp_unit *fu = &s->units[u];
        fprintf(out, "%s\n  {\"id\": %d, \"class\": \"%s\", \"numel\": %lld, "
                "\"padded_numel\": %lld, \"shard_numel\": %lld}",
                u ? "," : "", u, fu->mod->cls, (long long)fu->numel,
                (long long)fu->padded_numel, (long long)fu->shard_numel);
    }
    fprintf(out, "],\n \"ops\": [");
    for (int i = 0; i < s->n_ops; i++) {
        const struct sched_op *op = &s->ops[i];
        fprintf(out, "%s\n  {\"id\": %d, \"iter\": %d, \"micro\": %d, "
                "\"phase\": \"%s\", \"stream\": \"%s\", \"kind\": \"%s\", "
                "\"unit\": %d, \"pg\": \"%s\", \"bytes\": %llu, "
                "\"dtype\": \"%s\", \"flops\": %.0f, \"leaves\": [%d, %d], "
                "\"buffer\": %d, \"category\": \"%s\", \"wait_op\": %d, "
                "\"hooks\": %d, \"buf_in\": %d, \"buf_out\": %d, "
                "\"in_offset\": %llu, %s%s\"deps\": [",
                i ? "," : "", op->id, op->iter, op->micro,
                phase_names[op->phase], stream_names[op->stream],
                kind_names[op->kind], op->unit, pg_names[op->pg],
                (unsigned long long)op->bytes, dtype_name(op->dtype),
                op->flops, op->leaf_begin, op->leaf_end, op->buffer,
                (op->kind == OP_ALLOC || op->kind == OP_FREE)
                    ? category_names[op->cat] : "-",
                op->wait_op, op->hooks, op->buf_in, op->buf_out,
                (unsigned long long)op->in_offset,
                s->fsdp_version != 2 ? ""
                : op->redop == REDOP_AVG ? "\"redop\": \"avg\", "
                                         : "\"redop\": \"sum\", ",
                post_forward_ranks(s, op, pf, sizeof pf));
        print_deps(op, out, ", ");
        fputs("]}", out);
    }
    fputs("\n]}\n", out);
}
