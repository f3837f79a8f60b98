/*
 * output_files.c: the Chrome trace and the gnuplot .dat files.
 *
 * The trace follows the Trace Event Format (Google, "Trace Event Format",
 * the JSON that chrome://tracing and Perfetto load): one complete event
 * ("ph":"X") per GPU op with timestamps in microseconds, one thread per
 * stream, and counter events ("ph":"C") for memory.  Times are printed
 * with three decimals, i.e. exactly the simulator's nanoseconds.
 */
#include "output.h"
#include "json_out.h"
#include "atomic_file.h"

#include <stdlib.h>

#include <inttypes.h>

const char *
output_op_label(const struct sched *s, const struct sched_op *op, char *buf,
                size_t len)
{
    (void)s;
    if (op->unit >= 0)
        snprintf(buf, len, "%s u%d", sched_op_kind_name(op->kind), op->unit);
    else
        snprintf(buf, len, "%s", sched_op_kind_name(op->kind));
    return buf;
}

static void
print_us(FILE *out, int64_t ns)
{
    fprintf(out, "%" PRId64 ".%03d", ns / 1000, (int)(ns % 1000));
}

void
output_trace(const struct run_view *v, FILE *out)
{
    const struct sched *s = v->sched;
    const struct engine_result *r = v->res;
    char label[64];
    fprintf(out, "{\"displayTimeUnit\": \"ms\", \"traceEvents\": [\n");
    char pname[512];
    snprintf(pname, sizeof pname, "rank 0 (%s on %s)", v->model->name,
             v->topo->name);
    fprintf(out, "{\"name\": \"process_name\", \"ph\": \"M\", \"pid\": 0, "
            "\"args\": {\"name\": ");
    json_out_string(out, pname);
    fputs("}}", out);
    for (int st = 0; st < STREAM_COUNT; st++)
        fprintf(out, ",\n{\"name\": \"thread_name\", \"ph\": \"M\", "
                "\"pid\": 0, \"tid\": %d, \"args\": {\"name\": \"%s\"}}",
                st, sched_stream_label(s, st));
    for (int i = 0; i < s->n_ops; i++) {
        const struct sched_op *op = &s->ops[i];
        const struct op_time *tm = &r->times[i];
        /* An allocation shows only when the allocator's retry stalled the
         * host: then it spans the stall, on the host thread. */
        int stalled = op->kind == OP_ALLOC && tm->end_ns > tm->start_ns;
        if ((op->kind == OP_ALLOC && !stalled) || op->kind == OP_FREE
            || op->kind == OP_EVENT)
            continue;
        int tid = op->kind == OP_CPU_WAIT || stalled ? STREAM_HOST
                                                     : (int)op->stream;
        int64_t start = op->kind == OP_CPU_WAIT ? tm->issue_ns : tm->start_ns;
        int64_t end = op->kind == OP_CPU_WAIT && op->wait_op >= 0
                          && r->times[op->wait_op].end_ns > start
                          ? r->times[op->wait_op].end_ns : tm->end_ns;
        fprintf(out, ",\n{\"name\": \"%s\", \"cat\": \"%s\", \"ph\": \"X\", "
                "\"pid\": 0, \"tid\": %d, \"ts\": ",
                output_op_label(s, op, label, sizeof label),
                sched_phase_name(op->phase), tid);
        print_us(out, start);
        fputs(", \"dur\": ", out);
        print_us(out, end - start);
        fprintf(out, ", \"args\": {\"op\": %d, \"iter\": %d, \"micro\": %d, "
                "\"bytes\": %llu", op->id, op->iter, op->micro,
                (unsigned long long)op->bytes);
        if (sched_op_is_collective(op))
            fprintf(out, ", \"pg\": \"%s\", \"protocol\": \"%s\", "
                    "\"busbw_GBps\": %.3f", sched_pg_name(op->pg),
                    nccl_proto_name(cost_coll(&r->cost, i)->proto),
                    cost_coll(&r->cost, i)->bus_Bps / 1e9);
        if (op->flops > 0)
            fprintf(out, ", \"flops\": %.0f", op->flops);
        fputs("}}", out);
    }
    int n;
    const struct mem_sample *ms = mem_samples(r->mem, &n);
    for (int i = 0; i < n; i++) {
        fputs(",\n{\"name\": \"memory\", \"ph\": \"C\", \"pid\": 0, "
              "\"ts\": ", out);
        print_us(out, ms[i].t_ns);
        fprintf(out, ", \"args\": {\"allocated_GiB\": %.6f, "
                "\"reserved_GiB\": %.6f}}", ms[i].allocated / 1073741824.0,
                ms[i].reserved / 1073741824.0);
    }
    fputs("\n]}\n", out);
}

static void
dat_header(const struct run_view *v, FILE *out)
{
    fprintf(out, "# fsdpsim %s %s\n", PACKAGE_VERSION,
            v->command_line ? v->command_line : "");
}

void
output_timeline_dat(const struct run_view *v, FILE *out)
{
    const struct sched *s = v->sched;
    const struct engine_result *r = v->res;
    dat_header(v, out);
    fputs("# stream_index stream op kind unit iter micro start_us end_us "
          "bytes\n", out);
    fputs("# - - - - - - - us us B\n", out);
    for (int i = 0; i < s->n_ops; i++) {
        const struct sched_op *op = &s->ops[i];
        if (!sched_op_on_gpu(op) && op->kind != OP_OPTIMIZER)
            continue;
        if (op->kind == OP_EVENT)
            continue;
        const struct op_time *tm = &r->times[i];
        fprintf(out, "%d %s %d %s %d %d %d ", (int)op->stream,
                sched_stream_name(op->stream), op->id,
                sched_op_kind_name(op->kind), op->unit, op->iter, op->micro);
        print_us(out, tm->start_ns);
        fputc(' ', out);
        print_us(out, tm->end_ns);
        fprintf(out, " %llu\n", (unsigned long long)op->bytes);
    }
}

void
output_memory_dat(const struct run_view *v, FILE *out)
{
    const struct engine_result *r = v->res;
    dat_header(v, out);
    fputs("# t_us allocated_bytes reserved_bytes", out);
    for (int k = 0; k < MEM_CATEGORY_COUNT; k++)
        fprintf(out, " %s", mem_category_name(k));
    fputs("\n# us B B", out);
    for (int k = 0; k < MEM_CATEGORY_COUNT; k++)
        fputs(" B", out);
    fputc('\n', out);
    int n;
    const struct mem_sample *ms = mem_samples(r->mem, &n);
    for (int i = 0; i < n; i++) {
        print_us(out, ms[i].t_ns);
        fprintf(out, " %" PRId64 " %" PRId64, ms[i].allocated,
                ms[i].reserved);
        for (int k = 0; k < MEM_CATEGORY_COUNT; k++)
            fprintf(out, " %" PRId64, ms[i].by_cat[k]);
        fputc('\n', out);
    }
}

int
output_write_file(const char *path,
                  void (*writer)(const struct run_view *, FILE *),
                  const struct run_view *v, char **cause)
{
    struct atomic_file af;
    if (atomic_file_open(&af, path, cause) != 0)
        return -1;
    writer(v, af.f);
    return atomic_file_commit(&af, cause);
}
