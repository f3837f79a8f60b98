/*
 * coll_table.c: `fsdpsim coll`'s table and --explain lines (see
 * coll_table.h).
 */
#include "coll_table.h"

void
coll_table_begin(struct coll_table *tb, FILE *out)
{
    tb->rows = 0;
    if (tb->json) {
        fprintf(out, "{\"collective\": \"%s\", \"topology\": \"%s\", "
                "\"nodes\": %d, \"gpus_per_node\": %d, \"ranks\": %d, "
                "\"nccl_version\": \"%d.%d\", \"type\": \"%s\", \"redop\": "
                "\"%s\", \"rows\": [", coll_op_name(tb->op), tb->topology,
                tb->nodes, tb->ranks_per_node, tb->g.ranks,
                tb->nccl_version / 100, tb->nccl_version % 100, tb->type,
                tb->redop);
        return;
    }
    bool sgrid = tb->simgrid != NULL;
    fprintf(out, "# fsdpsim coll %s: %s, %d node%s x %d GPUs = %d ranks, "
            "NCCL %d.%d (predicted%s%s)\n", coll_op_name(tb->op),
            tb->topology, tb->nodes, tb->nodes == 1 ? "" : "s",
            tb->ranks_per_node, tb->g.ranks, tb->nccl_version / 100,
            tb->nccl_version % 100, sgrid ? ", network simgrid on " : "",
            sgrid ? tb->simgrid : "");
    fprintf(out, "#%12s %14s %8s %6s %10s %8s %8s  %-13s %-6s %s%s\n",
            "size", "count", "type", "redop", "time", "algbw", "busbw",
            "algorithm", "proto", "channels", sgrid ? "   analytic" : "");
    fprintf(out, "#%12s %14s %8s %6s %10s %8s %8s%s\n", "(B)", "(elements)",
            "", "", "(us)", "(GB/s)", "(GB/s)",
            sgrid ? "                                    (us)" : "");
}

void
coll_table_row(struct coll_table *tb, double bytes, double count,
               const struct coll_result *r, double an_us, FILE *out)
{
    bool sgrid = tb->simgrid != NULL;
    double us = r->time_s * 1e6;
    double algbw = r->time_s > 0 ? bytes / r->time_s / 1e9 : 0;
    double busbw = algbw * coll_busbw_factor(tb->op, tb->g.ranks);
    if (tb->json)
        fprintf(out, "%s\n  {\"size_bytes\": %.0f, \"count\": %.0f, "
                "\"time_us\": %.3f, \"algbw_GBps\": %.3f, "
                "\"busbw_GBps\": %.3f, \"algorithm\": \"%s\", "
                "\"protocol\": \"%s\", \"channels\": %d",
                tb->rows ? "," : "", bytes, count, us, algbw, busbw,
                nccl_algo_name(r->algo), nccl_proto_name(r->proto),
                r->channels);
    else
        fprintf(out, " %12.0f %14.0f %8s %6s %10.2f %8.2f %8.2f  %-13s "
                "%-6s %-*d", bytes, count, tb->type, tb->redop, us, algbw,
                busbw, nccl_algo_name(r->algo), nccl_proto_name(r->proto),
                sgrid ? 8 : 0, r->channels);
    if (sgrid)
        fprintf(out, tb->json ? ", \"analytic_time_us\": %.3f" : " %10.2f",
                an_us);
    fprintf(out, tb->json ? "}" : "\n");
    tb->rows++;
}

void
coll_table_end(const struct coll_table *tb, bool failed, FILE *out)
{
    if (tb->json)
        fprintf(out, failed ? "]}\n" : "\n]}\n");
}

void
coll_explain_print(const struct coll_table *tb, double bytes,
                   const struct coll_result *r, double nvls_bytes,
                   double conn_bytes, bool buffsize_given, FILE *out)
{
    const struct coll_group *g = &tb->g;
    fprintf(out, "# explain %s of %.0f B over %d ranks (%d node%s x %d)\n",
            coll_op_name(tb->op), bytes, g->ranks, g->nodes,
            g->nodes == 1 ? "" : "s", tb->ranks_per_node);
    fprintf(out, "#   %s: %s/%s, %s %.2f us (latency %.2f us + bytes / "
            "bandwidth)\n",
            r->plugin_tuned ? "the network plugin's tuner (aws-ofi-nccl's "
                              "regions, nccl_ofi_regions.cpp)"
                            : "NCCL's choice (tuning.cc)",
            nccl_algo_name(r->algo), nccl_proto_name(r->proto),
            r->plugin_tuned ? "NCCL's estimate for it" : "its estimate",
            r->tuning_s * 1e6, r->latency_s * 1e6);
    fprintf(out, "#   data path: %d channels x %d threads, %d hops, %d "
            "chunk%s of %.0f B a channel, %d flag wait%s a chunk, "
            "%.2f us a hop, %.2f GB/s a channel\n", r->channels,
            r->nthreads, r->hops, r->loops, r->loops == 1 ? "" : "s",
            r->chunk_bytes, r->syncs, r->syncs == 1 ? "" : "s",
            r->hop_lat_s * 1e6, r->chan_Bps / 1e9);
    if (r->proto == PROTO_SIMPLE && r->algo <= NCCL_ALGO_RING)
        fprintf(out, "#   Simple buffer: NCCL_BUFFSIZE %.0f B (%s), steps "
                "of %.0f B\n", r->buffsize,
                r->buffsize_from_plugin ? "set by the network plugin"
                : buffsize_given ? "set by the user" : "NCCL's default",
                r->buffsize / 8);
    if (r->simple_from_plugin)
        fprintf(out, "#   protocols: Simple only, NCCL_PROTO=simple set by "
                "the network plugin (its endpoint does not keep aligned "
                "128-byte writes in order, which LL and LL128 need)\n");
    if (r->net_hops > 0)
        fprintf(out, "#   ring: %d network hop%s on the critical path, "
                "%.2f us each\n", r->net_hops, r->net_hops == 1 ? "" : "s",
                r->net_lat_s * 1e6);
    if (r->algo == NCCL_ALGO_NVLS || r->algo == NCCL_ALGO_NVLS_TREE)
        fprintf(out, "#   NVLS buffers: %.0f MiB of device memory a GPU, "
                "taken the first time the communicator runs NVLS "
                "(transport/nvls.cc)\n", nvls_bytes / 1048576.0);
    if (conn_bytes > 0)
        fprintf(out, "#   connection buffers: %.0f MiB of device memory a "
                "GPU, the LL, LL128 and Simple buffers of the %d channels' "
                "connections for %s (init.cc computeBuffSizes; "
                "transport/p2p.cc, net.cc)\n", conn_bytes / 1048576.0,
                r->comm_channels, nccl_algo_name(r->algo));
    fprintf(out, "#   time %.2f us = launch %.2f + pipeline fill %.2f + "
            "bandwidth %.2f + per-step latency %.2f\n", r->time_s * 1e6,
            r->launch_s * 1e6, r->fill_s * 1e6, r->bw_s * 1e6,
            r->steplat_s * 1e6);
}
