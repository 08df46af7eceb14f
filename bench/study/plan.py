"""The study's runs: which shoal-bench invocations, at which PE counts, with which path forced.

Each step is one `shoalrun -n PES -- shoal-bench ARGS --csv FILE` with an environment (or another program of the
build under shoalrun, or a Python script under torch.distributed.run, writing the same columns); its rows get the step's
`variant` (the path it forced, "" for shoal's own choice) and `section`. On GPUs the plan covers the report's
sections; on host-memory PEs (a CPU machine, CI) it runs the host set at a few sizes, which exercises the whole
pipeline (rows, models, crossovers, tables, plots) without a GPU.
"""
from dataclasses import dataclass, field

GPU_SMS = 132  # an H100's or H200's SMs
P2P_CTAS = (1, 8, 32, GPU_SMS)  # up to one CTA per SM
COLL_PES = (2, 4, 8)
COLL_BENCHMARKS = ("allreduce", "broadcast", "fcollect", "alltoall")
COLL_CHANNELS = (1, 4, 16, 64)
LATENCY_SET = ("p_ping_pong", "put_signal_ping_pong", "put_quiet_latency", "atomic_latency", "barrier_latency")
COMPLETION_SET = ("quiet_after_k", "fence_cost", "signal_vs_flag")
HOST_SET = ("put_bw", "get_bw", "p_ping_pong", "put_quiet_latency", "atomic_latency", "barrier_latency")
# The proxy path (the off-node picture): every peer through UCX over TCP loopback, on one machine.
PROXY_ENV = {"SHOAL_DISABLE_P2P": "1", "UCX_TLS": "tcp", "UCX_NET_DEVICES": "lo"}
PROXY_SET = ("put_bw", "get_bw", "p_ping_pong", "put_quiet_latency", "atomic_latency")
# The MoE dispatch on shoal's public device API (bench/study/moe_plain*), in the build folder.
MOE_PLAIN_PROGRAM = "bench/shoal-bench-moe"


@dataclass
class Step:
    name: str  # unique; the step's files are <name>.csv and <name>.log
    section: str  # p2p, latency, completion, host_issued, proxy, moe, coll, coll_variants; host on host PEs
    pes: int
    args: list
    env: dict = field(default_factory=dict)
    variant: str = ""
    timeout_s: int = 600
    script: str = ""  # a Python benchmark run under torch.distributed.run instead of shoal-bench (it writes the
    #                   same CSV columns): its path from the repository root
    program: str = ""  # a program of the build run under shoalrun instead of shoal-bench (same columns, same
    #                    --csv option): its path in the build folder


def gpu_plan(quick=False, pes=COLL_PES, gpus=1):
    """The GPU study. quick: fewer sizes and grids (a smoke run of the same steps)."""
    steps = []
    big = "16M" if quick else "256M"
    step_f = "16" if quick else "4"
    ctas = (1, 132) if quick else P2P_CTAS
    for scope in ("thread", "warp", "block"):
        for c in ctas:
            steps.append(Step(f"p2p_{scope}_c{c}", "p2p", 2,
                              ["put_bw", "get_bw", "-s", scope, "-c", str(c), "-b", "8", "-e", big, "-f", step_f],
                              variant=f"ctas={c}"))
    steps.append(Step("latency", "latency", 2, list(LATENCY_SET) + ["-b", "8", "-e", "1M", "-f", "8"]))
    steps.append(Step("completion", "completion", 2, list(COMPLETION_SET) + ["-b", "8", "-e", "32K", "-f", "8"]))
    steps.append(Step("host_issued", "host_issued", 2,
                      ["--host-issued", "put_bw", "get_bw", "put_quiet_latency", "atomic_latency", "put_on_stream",
                       "get_on_stream", "-b", "8", "-e", big, "-f", step_f]))
    # The on-stream put/get with each path forced: the crossover shoal's default takes (stream_rma in defaults.json).
    for path, limit in (("ce", "0"), ("kernel", "1G")):
        steps.append(Step(f"on_stream_{path}", "host_issued", 2,
                          ["--host-issued", "put_on_stream", "get_on_stream", "-b", "8", "-e", "16M" if quick else "64M",
                           "-f", step_f], env={"SHOAL_STREAM_KERNEL_BYTES": limit}, variant=f"stream={path}"))
    moe_tokens = ["128", "2048"] if quick else ["128", "512", "2048", "8192", "16384"]
    for n in pes:
        steps.append(Step(f"moe_n{n}", "moe", n, ["--tokens", *moe_tokens], script="bench/study/moe_a2a.py"))
        # The same dispatch as a plain kernel on shoal's public device API, beside its own CPU-orchestrated form.
        steps.append(Step(f"moe_plain_n{n}", "moe", n, ["--tokens", *moe_tokens], program=MOE_PLAIN_PROGRAM))
    # Needs a build with UCX (CMake preset gpu-proxy); cuda_copy lets UCX stage GPU memory.
    steps.append(Step("proxy", "proxy", 2, list(PROXY_SET) + ["-b", "8", "-e", "16M", "-f", step_f],
                      env={**PROXY_ENV, "UCX_TLS": "tcp,cuda_copy"}, variant="proxy"))
    coll_sizes = ["-b", "8", "-e", big, "-f", step_f]
    for n in pes:
        # NCCL refuses two ranks on one GPU: its rows only where every PE has its own GPU.
        nccl = {"SHOAL_BENCH_NCCL": "1" if n <= gpus else "0"}
        steps.append(Step(f"coll_n{n}", "coll", n, list(COLL_BENCHMARKS) + ["barrier"] + coll_sizes,
                          env={"SHOAL_BENCH_COLL_SCOPES": "block,stream,graph", **nccl}))
        only_stream = {"SHOAL_BENCH_COLL_SCOPES": "stream", "SHOAL_BENCH_NCCL": "0"}
        for algo in ("ll", "direct", "ce"):
            names = [b for b in COLL_BENCHMARKS if algo != "ce" or b != "allreduce"]
            sizes = ["-b", "8", "-e", "1M", "-f", step_f] if algo == "ll" else coll_sizes
            steps.append(Step(f"coll_n{n}_{algo}", "coll_variants", n, names + sizes,
                              env={**only_stream, "SHOAL_COLL_ALGO": algo}, variant=f"algo={algo}"))
        # PEs sharing a GPU: shoal limits a collective to SMs / (PEs per GPU) channels (so that every PE's CTAs are
        # resident together); a forced count above that would measure the limit again under another name.
        limit = GPU_SMS // -(-n // max(1, gpus)) if n > gpus else None
        for k in ((1, 64) if quick else COLL_CHANNELS):
            if limit is not None and k > limit:
                continue
            steps.append(Step(f"coll_n{n}_ch{k}", "coll_variants", n, list(COLL_BENCHMARKS) + ["-b", "64K", "-e", big,
                                                                                             "-f", step_f],
                              env={**only_stream, "SHOAL_COLL_ALGO": "direct", "SHOAL_COLL_CHANNELS": str(k)},
                              variant=f"channels={k}"))
    return steps


def host_plan(quick=False, pes=(2, 4)):
    """Host-memory PEs: the host set at each PE count, and over the proxy at 2 (what a CPU machine can measure)."""
    sizes = ["-b", "8", "-e", "64K" if quick else "16M", "-f", "8"]
    reps = ["-r", "3", "-n", "50"] if quick else []
    steps = [Step(f"host_n{n}", "host", n, list(HOST_SET) + sizes + reps, env={"SHOAL_BACKEND": "host"})
             for n in pes]
    steps.append(Step("host_proxy_n2", "proxy", 2, list(PROXY_SET) + sizes + reps,
                      env={"SHOAL_BACKEND": "host", **PROXY_ENV}, variant="proxy"))
    return steps
