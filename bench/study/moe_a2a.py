"""The study's MoE section: fine-grained, irregular all-to-all (a MoE dispatch) by device-initiated per-token stores
against the CPU-orchestrated form, on the same tokens, in one run.

Run with one process per rank (PEs sharing a GPU under MPS, or one GPU each):
    python -m torch.distributed.run --nproc_per_node=2 bench/study/moe_a2a.py --csv rows.csv

For each token count (128 .. 16384 per rank) and hidden size (4096, 7168), BF16, top-8 of 32 experts per rank, the
paths are:
  shoal.ep/normal        Buffer.dispatch with the layout: its counts exchange and host wait included
  shoal.ep/normal_worst  Buffer.dispatch with num_worst_tokens: no host wait, the receive tensor sized for the worst
  shoal.ep/ll            Buffer.low_latency_dispatch (up to --ll-max-tokens): per-expert stores and signals, no CPU
  cpu/copy_engine        the CPU-orchestrated form: rows grouped per destination rank on the GPU, the counts
                         exchanged (shoal's on-stream fcollect, then a host copy: the round trip), then one bulk
                         copy per peer into its receive buffer (shoal.core.put on a stream: the copy engine), then a
                         barrier on the stream
Every path moves the same rows (each token once to every rank that holds one of its experts), and GB/s counts those
bytes on every path, also for shoal.ep/ll, which sends one message per (token, expert) and so moves more. The time is the
wall time of one call, host round trips included, the mean of --iters calls after --warmup (rank 0's). Rows are
written in shoal-bench's CSV columns (benchmark moe_dispatch_h<hidden>, impl, scope = path, size_bytes = the
rank's input bytes), which bench/study/ reads like its other rows.
"""
import argparse
import csv
import os
import sys
import time

import torch
import torch.distributed as dist

FIELDS = ["benchmark", "impl", "backend", "num_pes", "scope", "size_bytes", "iterations", "latency_us",
          "bandwidth_gbps", "ratio", "baseline", "busbw_gbps", "pair"]


def timed(fn, warmup, iters):
    """Mean wall time of one call (µs), every call complete on the GPU before the next (the host round trip of a
    CPU-orchestrated call is part of what is measured, so the device-initiated calls are timed the same way)."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    dist.barrier()
    t0 = time.perf_counter()
    for _ in range(iters):
        fn()
        torch.cuda.synchronize()
    return (time.perf_counter() - t0) * 1e6 / iters


class CpuOrchestrated:
    """The CPU-orchestrated dispatch over shoal.core's symmetric tensors: counts by fcollect, rows by one put per
    peer on the copy engine, completion by a barrier on the stream."""

    def __init__(self, core, rank, ranks, max_tokens, hidden):
        self.core, self.rank, self.ranks, self.hidden = core, rank, ranks, hidden
        self.counts_me = core.tensor((ranks,), "int64")
        self.counts_all = core.tensor((ranks * ranks,), "int64")
        # Receive rows: every peer may send every one of its tokens.
        self.recv = core.tensor((ranks * max_tokens, hidden), "bfloat16")
        self.stream = torch.cuda.current_stream()

    def dispatch(self, x, in_rank):
        core, r, n = self.core, self.rank, self.ranks
        order = [torch.nonzero(in_rank[:, j], as_tuple=False).flatten() for j in range(n)]
        send = [x.index_select(0, idx) for idx in order]  # rows grouped per destination, on the GPU
        self.counts_me.copy_(torch.stack([torch.tensor(len(i), device=x.device) for i in order]))
        core.fcollect(core.Teams.TEAM_WORLD, self.counts_all, self.counts_me, stream=self.stream)
        counts = self.counts_all.view(n, n).cpu()  # the host round trip: row s = what PE s sends each PE
        for k in range(1, n + 1):
            j = (r + k) % n
            rows = int(counts[r, j])
            if rows == 0:
                continue
            at = int(counts[:r, j].sum())  # my rows land after those of the lower ranks at PE j
            core.put(self.recv[at:at + rows], send[j], remote_pe=j, stream=self.stream)
        core.barrier_all(stream=self.stream)
        return int(counts[:, r].sum())

    def free(self):
        for t in (self.recv, self.counts_all, self.counts_me):
            self.core.free_tensor(t)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tokens", type=int, nargs="+", default=[128, 512, 2048, 8192, 16384])
    p.add_argument("--hidden", type=int, nargs="+", default=[4096, 7168])
    p.add_argument("--num-topk", type=int, default=8)
    p.add_argument("--experts-per-rank", type=int, default=32)
    p.add_argument("--ll-max-tokens", type=int, default=512, help="largest token count of the low-latency path")
    p.add_argument("--num-sms", type=int, default=24,
                   help="normal mode's SMs (fewer when the PEs sharing a GPU could not all be resident)")
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--iters", type=int, default=20)
    p.add_argument("--csv", default="")
    args = p.parse_args()

    torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")) % torch.cuda.device_count())
    dist.init_process_group("gloo")
    group = dist.group.WORLD
    ranks, rank = group.size(), group.rank()
    from shoal import core
    from shoal.ep import Buffer, Config
    from shoal.ep.config import max_resident_num_sms, nvl_bytes_needed
    core.init(group=group)
    experts = args.experts_per_rank * ranks
    # PEs sharing this GPU (MPS): the normal kernels' blocks of all of them must be resident at once (Buffer raises
    # otherwise), and the low-latency receive blocks, which poll, must leave SMs to the peers' senders.
    gpu_sms = torch.cuda.get_device_properties(torch.cuda.current_device()).multi_processor_count
    share = -(-int(os.environ.get("LOCAL_WORLD_SIZE", ranks)) // max(1, torch.cuda.device_count()))
    num_sms = args.num_sms if share <= 1 else min(args.num_sms, max_resident_num_sms(share, gpu_sms))
    if num_sms != args.num_sms and rank == 0:
        print(f"moe_a2a: {share} PEs share each GPU of {gpu_sms} SMs: normal mode on {num_sms} SMs, not "
              f"{args.num_sms}", flush=True)
    rows = []
    top = max(args.tokens)

    def record(hidden, path, impl, tokens, us, moved):
        rows.append(dict(benchmark=f"moe_dispatch_h{hidden}", impl=impl, backend="cuda", num_pes=ranks, scope=path,
                         size_bytes=tokens * hidden * 2, iterations=args.iters, latency_us=round(us, 3),
                         bandwidth_gbps=round(moved / us / 1e3, 3) if us > 0 else 0, ratio=0, baseline="",
                         busbw_gbps=0, pair=""))

    for hidden in args.hidden:
        buf = Buffer(group, nvl_bytes_needed(top, hidden, ranks, num_topk=args.num_topk))
        cpu = CpuOrchestrated(core, rank, ranks, top, hidden)
        for tokens in args.tokens:
            torch.manual_seed(rank * 7919 + tokens)
            x = torch.randn((tokens, hidden), dtype=torch.bfloat16, device="cuda")
            scores = torch.randn((tokens, experts), device="cuda").abs() + 1
            topk_idx = scores.topk(args.num_topk, dim=-1, sorted=False).indices
            weights = torch.rand((tokens, args.num_topk), device="cuda")
            per_rank, _, per_expert, in_rank, _ = buf.get_dispatch_layout(topk_idx, experts)
            layout = dict(num_tokens_per_rank=per_rank, is_token_in_rank=in_rank, num_tokens_per_expert=per_expert,
                          topk_idx=topk_idx, topk_weights=weights)
            moved = int(in_rank.sum()) * hidden * 2  # the rows this rank sends, every path
            cfg = Config(num_sms, 24)

            received = {}

            def normal():
                received["normal"] = buf.dispatch(x, config=cfg, **layout)[0].shape[0]

            def normal_worst():
                buf.dispatch(x, config=cfg, num_worst_tokens=tokens * ranks, **layout)

            def orchestrated():
                received["cpu"] = cpu.dispatch(x, in_rank)

            record(hidden, "normal", "shoal.ep", tokens, timed(normal, args.warmup, args.iters), moved)
            record(hidden, "normal_worst", "shoal.ep", tokens, timed(normal_worst, args.warmup, args.iters), moved)
            record(hidden, "copy_engine", "cpu", tokens, timed(orchestrated, args.warmup, args.iters), moved)
            if received.get("normal") != received.get("cpu"):
                raise RuntimeError(f"rank {rank}: {tokens} tokens, hidden {hidden}: shoal.ep received "
                                   f"{received.get('normal')} rows, the CPU-orchestrated form {received.get('cpu')}")
        cpu.free()
        buf.destroy()
        dist.barrier()

        small = [t for t in args.tokens if t <= args.ll_max_tokens]
        # The low-latency buffer grows with the token count and the experts: keep the counts whose buffers fit the
        # GPU's free memory for every PE sharing it, decided on the smallest free memory of any rank (alike).
        torch.cuda.empty_cache()
        free = torch.tensor([torch.cuda.mem_get_info()[0]], dtype=torch.int64)
        dist.all_reduce(free, op=dist.ReduceOp.MIN)
        fits = [t for t in small if Buffer.get_low_latency_rdma_size_hint(t, hidden, ranks, experts) * share
                < 0.9 * int(free)]
        if fits != small and rank == 0:
            print(f"moe_a2a: hidden {hidden}: low-latency mode at {sorted(set(small) - set(fits))} tokens skipped: "
                  f"{share} PEs' buffers would not fit the GPU's {int(free) / 2**30:.1f} GiB free", flush=True)
        small = fits
        if small:
            ll = Buffer(group, 0, Buffer.get_low_latency_rdma_size_hint(max(small), hidden, ranks, experts),
                        low_latency_mode=True, num_qps_per_rank=max(1, experts // ranks))
            ll._ll.check_topk_values = False  # no device->host read inside the timed calls (bench_low_latency.py too)
            if share > 1:  # receive blocks poll: leave SMs to the peers' send kernels on the shared GPU
                ll._ll.num_recv_blocks = max(1, min(ll._ll.num_recv_blocks, gpu_sms // share // 2))
            for tokens in small:
                torch.manual_seed(rank * 7919 + tokens)
                x = torch.randn((tokens, hidden), dtype=torch.bfloat16, device="cuda")
                scores = torch.randn((tokens, experts), device="cuda").abs() + 1
                topk_idx = scores.topk(args.num_topk, dim=-1, sorted=False).indices
                in_rank = torch.zeros((tokens, ranks), dtype=torch.bool, device="cuda")
                in_rank.scatter_(1, topk_idx // args.experts_per_rank, True)
                moved = int(in_rank.sum()) * hidden * 2

                def low_latency():
                    ll.low_latency_dispatch(x, topk_idx, max(small), experts, use_fp8=False)

                record(hidden, "ll", "shoal.ep", tokens, timed(low_latency, args.warmup, args.iters), moved)
            ll.destroy()
            dist.barrier()

    if rank == 0:
        base = {(r["benchmark"], r["size_bytes"]): r["latency_us"] for r in rows if r["impl"] == "cpu"}
        for r in rows:
            b = base.get((r["benchmark"], r["size_bytes"]))
            if r["impl"] != "cpu" and b:
                r["ratio"], r["baseline"] = round(r["latency_us"] / b, 4), "cpu"
            print(f"{r['benchmark']:>18} {r['impl']:>9}/{r['scope']:<13} {r['size_bytes']:>12} B "
                  f"{r['latency_us']:>10.1f} us {r['bandwidth_gbps']:>8.1f} GB/s", flush=True)
        if args.csv:
            with open(args.csv, "w", newline="") as f:
                w = csv.DictWriter(f, fieldnames=FIELDS)
                w.writeheader()
                w.writerows(rows)
    dist.barrier()
    core.finalize()
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
