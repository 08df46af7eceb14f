"""shoal.ep normal-mode benchmark in DeepEP's shapes and with DeepEP's method (tests/test_intranode.py's tuning).

Run with one process per rank, e.g. 2 PEs sharing one GPU under MPS or on 2 GPUs:
    python -m torch.distributed.run --nproc_per_node=2 bench/ep/bench_normal.py --csv out.csv
Defaults: 4096 tokens, hidden 7168, top-8, 256 experts; BF16 and FP8 dispatch (cached handle), BF16 combine.
Timing is DeepEP's: 50 warm-up calls, L2 flushed once (256 MB written), then 50 calls back to back, each between
two CUDA events on the current stream; the mean of calls 2..50. Bandwidth is DeepEP's "NVL" figure: bytes
this rank receives (dispatch) or sends (combine) per second, BF16 rows of 2*hidden bytes, FP8 rows of hidden
bytes plus hidden/128 float scales. Like DeepEP, rank 0's times are reported, and each sweep's best chunk
(num_max_nvl_chunked_send_tokens) is printed as "[tuning] Best ..." lines in DeepEP's format.

Beside each best row, the same run measures the bound it is judged against: the same call at the same chunk
with every wait and progress signal skipped (Buffer.raw_copy_dispatch / raw_copy_combine): the same bytes moved
by the same SMs with no protocol. CSV columns: see FIELDS (op "dispatch_bound"/"combine_bound" for the bounds,
"dispatch_full" for a dispatch with the layout exchange and host wait, at the best chunk).

--configs LABEL[:VAR=V,...] ... measures the normal mode's switches (docs/ep.md, "Switches") side by side in one
process: each round (--rounds) runs the whole set once per config, in the order given, with the Buffer's switches
set to the config's (VAR one of SWITCH_VARS, V 0 or 1; the others off); rows carry the label as their commit, for
bench/ep/ab_ep.py. Without --configs the switches are the environment's."""
import argparse
import csv
import os
import subprocess
import sys

import torch
import torch.distributed as dist

from shoal.ep import Buffer, Config
from shoal.ep.config import nvl_bytes_needed

FIELDS = ["op", "dtype", "num_ranks", "num_sms", "num_tokens", "hidden", "num_topk", "num_experts", "chunk",
          "time_us", "nbytes", "gbps", "commit"]
SWITCH_VARS = {"SHOAL_EP_L2_DISCARD": "l2_discard", "SHOAL_EP_SELF_DIRECT": "self_direct",
               "SHOAL_EP_INTERLEAVE": "interleave"}
DISPATCH_CHUNKS = list(range(4, 33, 2))  # DeepEP's dispatch sweep
COMBINE_CHUNKS = list(range(1, 17))      # DeepEP's combine sweep


def bench(fn, warmups=50, iters=50):
    """DeepEP's tests/utils.py bench(): warm up, flush L2 once, time each call with events; mean of calls 2.."""
    torch.cuda.synchronize()
    cache = torch.empty(int(256e6 // 4), dtype=torch.int, device="cuda")
    for _ in range(warmups):
        fn()
    cache.zero_()
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(iters)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(iters)]
    for i in range(iters):
        starts[i].record()
        fn()
        ends[i].record()
    torch.cuda.synchronize()
    times = [s.elapsed_time(e) * 1e3 for s, e in zip(starts, ends)][1:]
    return sum(times) / len(times)


def per_token_fp8(x):
    """x as FP8 e4m3 with one float scale per 128 channels, the scales column-major as DeepEP's tests pass them."""
    t, h = x.shape
    blocks = x.float().view(t, h // 128, 128)
    scales = (blocks.abs().amax(dim=-1) / 448.0).clamp(min=1e-4)
    return (blocks / scales.unsqueeze(-1)).to(torch.float8_e4m3fn).view(t, h), scales.T.contiguous().T


def commit() -> str:
    """The commit measured: SHOAL_EP_COMMIT when set (a copied tree), else the checkout's HEAD."""
    if os.environ.get("SHOAL_EP_COMMIT"):
        return os.environ["SHOAL_EP_COMMIT"]
    try:
        root = os.path.dirname(os.path.abspath(__file__))
        return subprocess.run(["git", "-C", root, "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                              timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def parse_config(text: str):
    """LABEL or LABEL:VAR=V[,VAR=V...] -> (label, switches): every switch off but those set to 1."""
    label, _, assigns = text.partition(":")
    if not label or not all(c.isalnum() or c in "_.-" for c in label):
        raise ValueError(f"--configs: '{text}': a config is LABEL or LABEL:VAR=V[,VAR=V...] (label: letters, digits, _.-)")
    switches = {field: False for field in SWITCH_VARS.values()}
    for assign in filter(None, assigns.split(",")):
        var, _, value = assign.partition("=")
        if var not in SWITCH_VARS or value not in ("0", "1"):
            raise ValueError(f"--configs: '{assign}' in '{text}': VAR is one of {', '.join(SWITCH_VARS)} and V 0 or 1")
        switches[SWITCH_VARS[var]] = value == "1"
    return label, switches


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--num-tokens", type=int, default=4096)
    p.add_argument("--hidden", type=int, default=7168)
    p.add_argument("--num-topk", type=int, default=8)
    p.add_argument("--num-experts", type=int, default=256)
    p.add_argument("--num-sms", type=int, nargs="+", default=[24])
    p.add_argument("--dispatch-chunks", type=int, nargs="+", default=DISPATCH_CHUNKS)
    p.add_argument("--combine-chunks", type=int, nargs="+", default=COMBINE_CHUNKS)
    p.add_argument("--no-bound", action="store_true", help="skip the raw-copy bound rows")
    p.add_argument("--csv", default="", help="append the rows to this file (after each config of each round)")
    p.add_argument("--configs", nargs="+", default=[], metavar="LABEL[:VAR=V,...]",
                   help="compare the switches in one process (see above); rows labelled LABEL")
    p.add_argument("--rounds", type=int, default=1, help="with --configs: rounds, the configs alternated in each")
    p.add_argument("--proxy", action="store_true",
                   help="size the buffer with staging slabs (a job with peers behind the proxy, e.g. SHOAL_DISABLE_P2P=1)")
    args = p.parse_args()
    try:
        configs = [parse_config(c) for c in args.configs]
    except ValueError as e:
        p.error(str(e))
    if args.rounds < 1 or (args.rounds > 1 and not configs):
        p.error("--rounds: at least 1, and above 1 only with --configs")

    torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")) % torch.cuda.device_count())
    dist.init_process_group("gloo")
    group = dist.group.WORLD
    R, rank = group.size(), group.rank()
    buf = Buffer(group, nvl_bytes_needed(args.num_tokens, args.hidden, R, num_topk=args.num_topk, proxy=args.proxy))
    torch.manual_seed(rank)
    x = torch.randn((args.num_tokens, args.hidden), dtype=torch.bfloat16, device="cuda")
    scores = torch.randn((args.num_tokens, args.num_experts), device="cuda").abs() + 1
    topk_idx = scores.topk(args.num_topk, dim=-1, sorted=False).indices
    topk_weights = torch.rand((args.num_tokens, args.num_topk), device="cuda")
    x_fp8 = per_token_fp8(x)
    per_rank, _, per_expert, in_rank, _ = buf.get_dispatch_layout(topk_idx, args.num_experts)
    rows, label = [], commit()  # label: the commit, or the config measured (--configs)

    def record(op, dtype, num_sms, chunk, us, nbytes):
        rows.append(dict(op=op, dtype=dtype, num_ranks=R, num_sms=num_sms, num_tokens=args.num_tokens,
                         hidden=args.hidden, num_topk=args.num_topk, num_experts=args.num_experts, chunk=chunk,
                         time_us=round(us, 2), nbytes=nbytes, gbps=round(nbytes / us / 1e3, 2), commit=label))

    def sweep(name, chunks, num_sms, call, nbytes):
        best = None
        for chunk in chunks:
            dist.barrier()
            us = bench(lambda: call(Config(num_sms, chunk)))  # noqa: B023
            if best is None or us < best[1]:
                best = (chunk, us)
        if rank == 0:
            print(f"[tuning] Best {name}: SMs {num_sms}, NVL chunk {best[0]}, {nbytes / best[1] / 1e3:.2f} GB/s (NVL), "
                  f"t: {best[1]:.2f} us", flush=True)
        return best

    def measure():
        """The whole set once: per SM count, the dispatch sweeps and bounds, then combine's."""
        for num_sms in args.num_sms:
            layout = dict(num_tokens_per_rank=per_rank, is_token_in_rank=in_rank, num_tokens_per_expert=per_expert,
                          topk_idx=topk_idx, topk_weights=topk_weights)
            recv_x, _, _, _, handle, _ = buf.dispatch(x, config=Config(num_sms, 24), **layout)
            bf16_nbytes = recv_x.numel() * 2
            fp8_nbytes = recv_x.numel() + recv_x.shape[0] * (args.hidden // 128) * 4
            for dtype, xin, nbytes in (("fp8", x_fp8, fp8_nbytes), ("bf16", x, bf16_nbytes)):
                chunk, us = sweep(f"dispatch ({dtype.upper()})", args.dispatch_chunks, num_sms,
                                  lambda c: buf.dispatch(xin, handle=handle, config=c), nbytes)  # noqa: B023
                record("dispatch", dtype, num_sms, chunk, us, nbytes)
                if not args.no_bound:
                    dist.barrier()
                    bound = bench(lambda: buf.raw_copy_dispatch(xin, handle, Config(num_sms, chunk)))  # noqa: B023
                    record("dispatch_bound", dtype, num_sms, chunk, bound, nbytes)
                    if rank == 0:
                        print(f"[bound] dispatch ({dtype.upper()}) raw copy: {bound:.2f} us; dispatch/bound "
                              f"{us / bound:.2f}", flush=True)
                if dtype == "bf16":
                    dist.barrier()
                    full = bench(lambda: buf.dispatch(x, config=Config(num_sms, chunk), **layout), warmups=10,  # noqa: B023
                                 iters=20)
                    record("dispatch_full", dtype, num_sms, chunk, full, nbytes)
            chunk, us = sweep("combine", args.combine_chunks, num_sms,
                              lambda c: buf.combine(recv_x, handle, config=c), bf16_nbytes)
            record("combine", "bf16", num_sms, chunk, us, bf16_nbytes)
            if not args.no_bound:
                dist.barrier()
                bound = bench(lambda: buf.raw_copy_combine(recv_x, handle, Config(num_sms, chunk)))  # noqa: B023
                record("combine_bound", "bf16", num_sms, chunk, bound, bf16_nbytes)
                if rank == 0:
                    print(f"[bound] combine raw copy: {bound:.2f} us; combine/bound {us / bound:.2f}", flush=True)

    def flush():
        """Appends the rows so far to --csv (rank 0), so a run cut short keeps its finished configs."""
        if rank == 0 and args.csv and rows:
            new = not os.path.exists(args.csv)
            with open(args.csv, "a", newline="") as f:
                w = csv.DictWriter(f, fieldnames=FIELDS)
                if new:
                    w.writeheader()
                w.writerows(rows)
        rows.clear()

    for rnd in range(args.rounds):
        for cfg_label, switches in configs or [(label, None)]:
            if switches is not None:
                buf.set_switches(**switches)
                label = cfg_label
                if rank == 0:
                    print(f"== config {cfg_label}, round {rnd + 1} of {args.rounds}: {buf.switches}", flush=True)
            measure()
            flush()
    dist.barrier()
    buf.destroy()
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
