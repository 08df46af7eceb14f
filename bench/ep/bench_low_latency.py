"""Low-latency EP benchmark (shoal.ep low-latency mode), DeepEP's test_low_latency.py shapes and figures.

Run one process per PE under shoalrun with the CUDA backend, e.g.
    SHOAL_BACKEND=cuda shoalrun -n 2 -- python bench/ep/bench_low_latency.py --csv docs/results/ep/ll.csv
Defaults: 128 tokens per rank, hidden 7168, top-8, 288 experts, FP8 dispatch, BF16 combine. Reports
per-call latency (µs, CUDA events around each call after a device sync and a barrier; mode "eager":
the Python call, "graph": a CUDA-graph replay of it, i.e. the kernels) and bandwidth as DeepEP does:
bytes of the valid (token, expert) selections over the call's time (FP8 message = hidden + hidden/128*4
+ 16 bytes; BF16 = 2*hidden). Also the send and receive halves (return_recv_hook=True) separately, and the
raw-copy bound of each op in graph mode (op "dispatch_bound"/"combine_bound": the same kernels with the
receiving half waiting for nothing, i.e. the same bytes on the same blocks with no protocol), printed as
call / bound ratios.
"""

import argparse
import csv
import statistics
import sys
from types import SimpleNamespace

import torch

import shoal.core as sc
from shoal import _core
from shoal.ep._low_latency import LowLatency


def timed(fn, iters, warmup):
    """Per-call µs of fn() (each call starts after a device sync and a barrier of every PE)."""
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for i in range(warmup + iters):
        torch.cuda.synchronize()
        _core.barrier_all()
        start.record()
        fn()
        end.record()
        end.synchronize()
        if i >= warmup:
            times.append(start.elapsed_time(end) * 1e3)
    return times


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tokens", type=int, default=128)
    ap.add_argument("--hidden", type=int, default=7168)
    ap.add_argument("--topk", type=int, default=8)
    ap.add_argument("--experts", type=int, default=288)
    ap.add_argument("--iters", type=int, default=50)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--recv-blocks", type=int, default=64)
    ap.add_argument("--csv", default="", help="append rows here (PE 0)")
    args = ap.parse_args()

    sc.init()
    me, r = sc.my_pe(), sc.n_pes()
    torch.cuda.set_device(me % torch.cuda.device_count())
    dev = torch.device("cuda", torch.cuda.current_device())
    t, h, k, e = args.tokens, args.hidden, args.topk, args.experts
    nbytes = LowLatency.get_low_latency_rdma_size_hint(t, h, r, e)
    ll = LowLatency(SimpleNamespace(rank=me, group_size=r, group=None, num_nvl_bytes=0, num_rdma_bytes=nbytes,
                                    device=dev))
    ll.num_recv_blocks = args.recv_blocks
    torch.manual_seed(me)
    x = torch.randn(t, h, dtype=torch.bfloat16, device=dev)
    idx = (torch.randn(t, e, device=dev).abs() + 1).topk(k, dim=1).indices.to(torch.int64)
    for _ in range(10):  # DeepEP masks 10 random selections
        idx[torch.randint(t, (1,)), torch.randint(k, (1,))] = -1
    w = torch.rand(t, k, device=dev)
    selections = int((idx >= 0).sum())
    fp8_msg, bf16_msg = h + h // 128 * 4 + 16, 2 * h

    ll.check_topk_values = False  # no device->host read per call
    state = {}

    def dispatch(hook=False, raw=False):
        state["d"] = ll.low_latency_dispatch(x, idx, t, e, use_fp8=True, return_recv_hook=hook, _raw_copy=raw)
        state["hook"] = state["d"][4]

    dispatch()
    (recv_x, _), _, handle, _, _ = state["d"]
    y = recv_x.float().to(torch.bfloat16)  # stands in for the expert GEMM's output

    def combine(hook=False, raw=False):
        state["hook"] = ll.low_latency_combine(y, idx, w, handle, return_recv_hook=hook, _raw_copy=raw)[2]

    def graph(fn):
        """fn captured once; replays launch its kernels without Python in between."""
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g, stream=s):
            fn()
        torch.cuda.synchronize()
        return g

    rows = []

    def record(op, dtype, mode, times, nbytes_moved):
        avg = statistics.mean(times)
        gbps = nbytes_moved / 1e3 / avg if nbytes_moved else 0.0
        rows.append(dict(pes=r, tokens=t, hidden=h, topk=k, experts=e, op=op, dtype=dtype, mode=mode,
                         us_avg=round(avg, 2), us_min=round(min(times), 2),
                         us_median=round(statistics.median(times), 2), gbps=round(gbps, 1),
                         recv_blocks=args.recv_blocks))

    d_bytes, c_bytes = selections * fp8_msg, selections * bf16_msg
    record("dispatch", "fp8", "eager", timed(dispatch, args.iters, args.warmup), d_bytes)
    record("combine", "bf16", "eager", timed(combine, args.iters, args.warmup), c_bytes)
    g_d, g_c = graph(dispatch), graph(combine)
    record("dispatch", "fp8", "graph", timed(g_d.replay, args.iters, args.warmup), d_bytes)
    record("combine", "bf16", "graph", timed(g_c.replay, args.iters, args.warmup), c_bytes)
    g_db, g_cb = graph(lambda: dispatch(raw=True)), graph(lambda: combine(raw=True))
    record("dispatch_bound", "fp8", "graph", timed(g_db.replay, args.iters, args.warmup), d_bytes)
    record("combine_bound", "bf16", "graph", timed(g_cb.replay, args.iters, args.warmup), c_bytes)
    # Send and receive halves (return_recv_hook=True), each a graph; the receive starts after a
    # barrier, so its time is the receive kernel alone (the data has landed).
    for op, fn, dtype in (("dispatch", dispatch, "fp8"), ("combine", combine, "bf16")):
        g_send = graph(lambda: fn(hook=True))
        g_recv = graph(lambda: state["hook"]())
        send_t, recv_t = [], []
        for i in range(args.warmup + args.iters):
            s_us = timed(g_send.replay, 1, 0)[0]
            r_us = timed(g_recv.replay, 1, 0)[0]
            if i >= args.warmup:
                send_t.append(s_us)
                recv_t.append(r_us)
        record(op + "_send", dtype, "graph", send_t, 0)
        record(op + "_recv", dtype, "graph", recv_t, 0)

    if me == 0:
        avg = {(row["op"], row["mode"]): row["us_avg"] for row in rows}
        for op in ("dispatch", "combine"):
            print(f"[bound] {op} graph: {avg[(op, 'graph')]:.2f} us, raw copy {avg[(op + '_bound', 'graph')]:.2f} us, "
                  f"call / bound {avg[(op, 'graph')] / avg[(op + '_bound', 'graph')]:.2f}", flush=True)
        out = csv.DictWriter(sys.stdout, fieldnames=list(rows[0]))
        out.writeheader()
        out.writerows(rows)
        if args.csv:
            with open(args.csv, "a", newline="") as f:
                wr = csv.DictWriter(f, fieldnames=list(rows[0]))
                if f.tell() == 0:
                    wr.writeheader()
                wr.writerows(rows)
    torch.cuda.synchronize()
    _core.barrier_all()
    ll.destroy()
    sc.finalize()


if __name__ == "__main__":
    main()
