"""shoal.ep normal-mode benchmark in DeepEP's shapes (tests/legacy/test_intranode.py's tuning run).

Run with one process per rank, e.g. 2 PEs sharing one GPU under MPS or on 2 GPUs:
    python -m torch.distributed.run --nproc_per_node=2 bench/ep/bench_normal.py --csv out.csv
Defaults: 4096 tokens, hidden 7168, top-8, 256 experts; BF16 and FP8 dispatch, BF16 combine.
Like DeepEP it times the cached dispatch (handle given: no count exchange) and the combine with CUDA
events, flushing L2 before each iteration, and reports bandwidth as the NVLink bytes this rank receives
(dispatch) or sends (combine) per second: BF16 rows of 2*hidden bytes, FP8 rows of hidden bytes plus
hidden/128 float scales. The full dispatch (layout exchange and CPU sync) is timed too. The slowest
rank's time is reported (max over ranks). CSV columns: see FIELDS."""
import argparse
import csv
import os
import sys

import torch
import torch.distributed as dist

from shoal.ep import Buffer, Config
from shoal.ep.config import nvl_bytes_needed

FIELDS = ["op", "dtype", "num_ranks", "num_sms", "num_tokens", "hidden", "num_topk", "num_experts", "chunk",
          "time_us", "nbytes", "gbps"]


def bench(fn, warmups, iters, flush):
    for _ in range(warmups):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(iters):
        flush.zero_()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1e3)
    times.sort()
    return sum(times[1:-1]) / max(len(times) - 2, 1) if len(times) > 2 else sum(times) / len(times)


def slowest(us):
    t = torch.tensor([us], dtype=torch.float64)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return float(t[0])


def per_token_fp8(x):
    t, h = x.shape
    blocks = x.float().view(t, h // 128, 128)
    scales = (blocks.abs().amax(dim=-1) / 448.0).clamp(min=1e-4)
    return (blocks / scales.unsqueeze(-1)).to(torch.float8_e4m3fn).view(t, h), scales


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--num-tokens", type=int, default=4096)
    p.add_argument("--hidden", type=int, default=7168)
    p.add_argument("--num-topk", type=int, default=8)
    p.add_argument("--num-experts", type=int, default=256)
    p.add_argument("--num-sms", type=int, nargs="+", default=[24])
    p.add_argument("--chunks", type=int, nargs="+", default=[48], help="num_max_nvl_chunked_send_tokens values")
    p.add_argument("--warmups", type=int, default=10)
    p.add_argument("--iters", type=int, default=30)
    p.add_argument("--csv", default="")
    p.add_argument("--proxy", action="store_true",
                   help="size the buffer with staging slabs (a job with peers behind the proxy, e.g. SHOAL_DISABLE_P2P=1)")
    args = p.parse_args()

    torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")) % torch.cuda.device_count())
    dist.init_process_group("gloo")
    group = dist.group.WORLD
    R, rank = group.size(), group.rank()
    buf = Buffer(group, nvl_bytes_needed(args.num_tokens, args.hidden, R, num_topk=args.num_topk, proxy=args.proxy))
    torch.manual_seed(rank)
    x = torch.randn((args.num_tokens, args.hidden), dtype=torch.bfloat16, device="cuda")
    scores = torch.randn((args.num_tokens, args.num_experts), device="cuda").abs() + 1
    topk_idx = scores.topk(args.num_topk, dim=-1).indices
    topk_weights = torch.rand((args.num_tokens, args.num_topk), device="cuda")
    x_fp8 = per_token_fp8(x)
    flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    per_rank, _, per_expert, in_rank, _ = buf.get_dispatch_layout(topk_idx, args.num_experts)
    rows = []

    def record(op, dtype, num_sms, chunk, us, nbytes):
        us = slowest(us)
        rows.append(dict(op=op, dtype=dtype, num_ranks=R, num_sms=num_sms, num_tokens=args.num_tokens,
                         hidden=args.hidden, num_topk=args.num_topk, num_experts=args.num_experts, chunk=chunk,
                         time_us=round(us, 2), nbytes=nbytes, gbps=round(nbytes / us / 1e3, 2)))
        if rank == 0:
            print(f"[{op} {dtype}] SMs {num_sms:3d} chunk {chunk:3d}: {us:9.2f} us, {nbytes / us / 1e3:7.2f} GB/s",
                  flush=True)

    for num_sms in args.num_sms:
        for chunk in args.chunks:
            config = Config(num_sms, chunk)
            layout = dict(num_tokens_per_rank=per_rank, is_token_in_rank=in_rank, num_tokens_per_expert=per_expert,
                          topk_idx=topk_idx, topk_weights=topk_weights, config=config)
            recv_x, _, recv_w, _, handle, _ = buf.dispatch(x, **layout)
            bf16_nbytes = recv_x.numel() * 2
            fp8_nbytes = recv_x.numel() + recv_x.shape[0] * (args.hidden // 128) * 4
            us = bench(lambda: buf.dispatch(x, handle=handle, config=config), args.warmups, args.iters, flush)
            record("dispatch", "bf16", num_sms, chunk, us, bf16_nbytes)
            us = bench(lambda: buf.dispatch(x_fp8, handle=handle, config=config), args.warmups, args.iters, flush)
            record("dispatch", "fp8", num_sms, chunk, us, fp8_nbytes)
            us = bench(lambda: buf.dispatch(x, **layout), args.warmups, args.iters, flush)
            record("dispatch_full", "bf16", num_sms, chunk, us, bf16_nbytes)
            us = bench(lambda: buf.combine(recv_x, handle, topk_weights=recv_w, config=config), args.warmups,
                       args.iters, flush)
            record("combine", "bf16", num_sms, chunk, us, bf16_nbytes)

    if rank == 0 and args.csv:
        with open(args.csv, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=FIELDS)
            w.writeheader()
            w.writerows(rows)
    buf.destroy()
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
