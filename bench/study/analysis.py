"""The study's analysis: rows of shoal-bench (one per benchmark, path and size) in, per-path models, the best path
at each size, crossovers and the defaults shoal takes from them out. Pure functions over lists of dicts, so that the
CPU tests feed them made-up rows with a known answer.

A *path* is one way of doing a benchmark's operation: (impl, scope, variant), where variant is what the study forced
for the run (e.g. "algo=ce", "channels=16", "ctas=8"; "" for shoal's own choice). Times are `latency_us`, the time of
one operation (one message, one collective call) at `size_bytes`.
"""
import math
from collections import defaultdict

import numpy as np

# A default is good when its time is within this factor of the best path's at the same size (issue 39's bar).
GOOD_ENOUGH = 1.10
# Collectives whose on-stream form can take the copy engines, and those shoal tunes per size and PE count.
CE_COLLECTIVES = ("broadcast", "fcollect", "alltoall")
TUNED_COLLECTIVES = ("allreduce", "broadcast", "fcollect", "alltoall")
# Candidate bytes per on-stream channel (CTA) for the direct algorithm.
CHANNEL_BYTES = tuple(1 << k for k in range(14, 22))  # 16 KiB .. 2 MiB


def path_of(r):
    return (r["impl"], r["scope"], r.get("variant", ""))


def path_name(p):
    impl, scope, variant = p
    return "/".join(x for x in (impl, scope, variant) if x)


def as_rows(dict_rows):
    """CSV dicts to typed rows (numbers parsed); rows without a positive time are dropped (a failed point)."""
    out = []
    for r in dict_rows:
        t = dict(r)
        t["num_pes"] = int(float(t.get("num_pes") or 0))
        t["size_bytes"] = int(float(t.get("size_bytes") or 0))
        for k in ("latency_us", "bandwidth_gbps", "busbw_gbps", "ratio"):
            t[k] = float(t.get(k) or 0.0)
        t.setdefault("variant", "")
        if t["latency_us"] > 0:
            out.append(t)
    return out


def groups(rows):
    """(benchmark, num_pes) -> path -> size -> time (µs); several rows of one point keep the fastest (the median
    was taken inside each run already; a repeated run of the same point is a second sample of the same path)."""
    g = defaultdict(lambda: defaultdict(dict))
    for r in rows:
        pts = g[(r["benchmark"], r["num_pes"])][path_of(r)]
        s = r["size_bytes"]
        pts[s] = min(pts.get(s, math.inf), r["latency_us"])
    return g


def fit(points):
    """Least-squares fit of t(s) = alpha + s / (beta * 1e3) over {size: µs}, weighted for relative error (sizes span
    many decades). Returns alpha (µs per operation), beta (GB/s; inf when time does not grow with size) and the
    largest relative residual; None with fewer than two sizes."""
    if len(points) < 2:
        return None
    s = np.array(sorted(points), dtype=float)
    t = np.array([points[k] for k in sorted(points)], dtype=float)
    w = 1.0 / t
    a = np.stack([w, w * s], axis=1)
    (alpha, slope), *_ = np.linalg.lstsq(a, w * t, rcond=None)
    alpha = max(float(alpha), 0.0)
    slope = float(slope)
    beta = math.inf if slope <= 0 else 1.0 / (slope * 1e3)
    model = alpha + s * max(slope, 0.0)
    worst = float(np.max(np.abs(model - t) / t))
    return {"alpha_us": alpha, "beta_gbps": beta, "max_rel_err": worst, "sizes": len(points)}


def predict(model, size):
    beta = model["beta_gbps"]
    return model["alpha_us"] + (0.0 if math.isinf(beta) else size / (beta * 1e3))


def best_by_size(paths):
    """path -> {size: t} to size -> (best path, its time), over the sizes every path measured or any path measured."""
    sizes = sorted({s for pts in paths.values() for s in pts})
    out = {}
    for s in sizes:
        cands = [(pts[s], p) for p, pts in paths.items() if s in pts]
        t, p = min(cands)
        out[s] = (p, t)
    return out


def models_cross_at(ma, mb):
    """The size where two fitted models give the same time (None when they are parallel or either is missing)."""
    if not ma or not mb:
        return None
    ia = 0.0 if math.isinf(ma["beta_gbps"]) else 1.0 / (ma["beta_gbps"] * 1e3)
    ib = 0.0 if math.isinf(mb["beta_gbps"]) else 1.0 / (mb["beta_gbps"] * 1e3)
    if abs(ib - ia) <= 1e-9 * max(abs(ia), abs(ib)):  # parallel (to rounding)
        return None
    return (ma["alpha_us"] - mb["alpha_us"]) / (ib - ia)


def crossovers(paths):
    """Where the best path changes as the size grows: [(size_below, size_at, from_path, to_path, model_size)], with
    model_size the size where the two paths' fitted models cross (None when they do not cross in between)."""
    best = best_by_size(paths)
    sizes = sorted(best)
    out = []
    for lo, hi in zip(sizes, sizes[1:]):
        a, b = best[lo][0], best[hi][0]
        if a == b:
            continue
        x = models_cross_at(fit(paths[a]), fit(paths[b]))
        cross = int(x) if x is not None and lo <= x <= hi else None
        out.append((lo, hi, a, b, cross))
    return out


def variant_paths(paths, impl="shoal", scope="stream", prefix="algo="):
    """The paths of one impl/scope whose variant starts with prefix, keyed by the rest ("ll", "ce", "16")."""
    return {p[2][len(prefix):]: pts for p, pts in paths.items()
            if p[0] == impl and p[1] == scope and p[2].startswith(prefix)}


def largest_prefix_where(sizes, ok):
    """The largest size s such that ok(x) holds for every measured x <= s; 0 when it fails at the smallest."""
    best = 0
    for s in sorted(sizes):
        if not ok(s):
            break
        best = s
    return best


def smallest_suffix_where(sizes, ok):
    """The smallest size s such that ok(x) holds for every measured x >= s; 0 (never) when it fails at the largest."""
    best = 0
    for s in sorted(sizes, reverse=True):
        if not ok(s):
            break
        best = s
    return best


def choose_channel_bytes(channel_paths, total_of, max_channels):
    """The bytes per channel B (from CHANNEL_BYTES) whose rule channels = clamp(ceil(total / B), 1, max_channels)
    loses least against the best measured channel count, summed over sizes as relative excess time. channel_paths:
    {channels (int): {size: t}}; total_of(size): the bytes a call moves through one PE. None without data."""
    if not channel_paths:
        return None
    counts = sorted(channel_paths)
    sizes = sorted({s for pts in channel_paths.values() for s in pts})
    best_cost, best_b = math.inf, None
    for b in CHANNEL_BYTES:
        cost = 0.0
        for s in sizes:
            have = [k for k in counts if s in channel_paths[k]]
            if not have:
                continue
            want = min(max(math.ceil(total_of(s) / b), 1), max_channels)
            k = min(have, key=lambda c: abs(math.log2(c) - math.log2(want)))
            cost += channel_paths[k][s] / min(channel_paths[c][s] for c in have) - 1.0
        if cost < best_cost - 1e-12:
            best_cost, best_b = cost, b
    return best_b


def coll_total(benchmark, size, n_pes):
    """Bytes one PE moves in a call of `benchmark` at nccl-tests' `size` (what the channel rule divides)."""
    if benchmark in ("fcollect", "alltoall"):
        return size
    if benchmark == "allreduce":
        return size * 2 * max(n_pes - 1, 1) // max(n_pes, 1)
    return size


def coll_defaults(g, benchmark, n_pes, max_channels=64):
    """The on-stream defaults of one collective at one PE count from the forced-variant runs: ll_max_bytes (LL up to
    it), ce_min_bytes (copy engines from it; 0 = never), bytes_per_channel (direct). None without algo= rows."""
    paths = g.get((benchmark, n_pes))
    if not paths:
        return None
    algos = variant_paths(paths)
    if "ll" not in algos or "direct" not in algos:
        return None
    others = {k: v for k, v in algos.items() if k != "ll"}

    def ll_wins(s):
        rivals = [pts[s] for pts in others.values() if s in pts]
        return s in algos["ll"] and (not rivals or algos["ll"][s] <= min(rivals))

    ll_max = largest_prefix_where(algos["ll"].keys(), ll_wins)
    ce_min = 0
    if benchmark in CE_COLLECTIVES and "ce" in algos:
        def ce_wins(s):
            return s in algos["ce"] and s in algos["direct"] and algos["ce"][s] <= algos["direct"][s]
        ce_min = smallest_suffix_where(set(algos["ce"]) & set(algos["direct"]), ce_wins)
    channels = {int(k): v for k, v in variant_paths(paths, prefix="channels=").items() if k.isdigit()}
    per_channel = choose_channel_bytes(channels, lambda s: coll_total(benchmark, s, n_pes), max_channels)
    return {"n_pes": n_pes, "ll_max_bytes": ll_max, "ce_min_bytes": ce_min,
            "bytes_per_channel": per_channel or 64 * 1024}


def completion_cost(rows):
    """quiet_after_k's rows (time per put at k puts before one quiet) as a per-size model of the batch time,
    T(k) = quiet_us + k * put_us: what one more outstanding put costs and what the quiet itself costs. Returns
    {(impl, num_pes, size): (put_us, quiet_us, worst relative residual)} for sizes measured at >= 2 values of k."""
    by = defaultdict(dict)
    for r in rows:
        if r["benchmark"] != "quiet_after_k" or not r["scope"].startswith("thread/k="):
            continue
        k = int(r["scope"].split("=", 1)[1])
        by[(r["impl"], r["num_pes"], r["size_bytes"])][k] = r["latency_us"] * k  # the batch's time
    out = {}
    for key, pts in by.items():
        m = fit(pts)  # alpha: the quiet; slope: one put
        if m:
            put_us = 0.0 if math.isinf(m["beta_gbps"]) else 1.0 / (m["beta_gbps"] * 1e3)
            out[key] = (put_us, m["alpha_us"], m["max_rel_err"])
    return out


STREAM_BENCHMARKS = ("put_on_stream", "get_on_stream")


def stream_defaults(g, n_pes):
    """The on-stream put/get default at one PE count from the forced-path runs: kernel_max_bytes, the largest size up
    to which the SM kernel is no slower than the copy engine at every measured size, for puts and gets alike (0: the
    copy engine always). None without both forced paths."""
    limits = []
    for bench in STREAM_BENCHMARKS:
        paths = g.get((bench, n_pes))
        if not paths:
            continue
        forced = variant_paths(paths, prefix="stream=")
        if "kernel" not in forced or "ce" not in forced:
            continue
        k, c = forced["kernel"], forced["ce"]
        limits.append(largest_prefix_where(set(k) & set(c), lambda s: k[s] <= c[s]))  # noqa: B023
    if not limits:
        return None
    return {"n_pes": n_pes, "kernel_max_bytes": min(limits)}


def default_vs_best(paths, default_path):
    """For each size the default path measured: (size, default time, best path, best time, ratio, good)."""
    out = []
    if default_path not in paths:
        return out
    for s, t in sorted(paths[default_path].items()):
        cands = [(pts[s], p) for p, pts in paths.items() if s in pts]
        bt, bp = min(cands)
        ratio = t / bt
        out.append((s, t, bp, bt, ratio, ratio <= GOOD_ENOUGH))
    return out


def scaling(models_by_pes):
    """Fits alpha(n) = a0 + a1 * log2(n) and 1/beta(n) = b0 + b1 * log2(n) over the PE counts measured (at least two),
    the form of a tree- or ring-shaped cost; returns a function n -> (alpha, beta) or None."""
    ns = sorted(n for n, m in models_by_pes.items() if m)
    if len(ns) < 2:
        return None
    x = np.log2(np.array(ns, dtype=float))
    a = np.array([models_by_pes[n]["alpha_us"] for n in ns])
    ib = np.array([0.0 if math.isinf(models_by_pes[n]["beta_gbps"]) else 1.0 / models_by_pes[n]["beta_gbps"]
                   for n in ns])
    ca = np.polyfit(x, a, 1)
    cb = np.polyfit(x, ib, 1)

    def at(n):
        lx = math.log2(n)
        alpha = max(float(np.polyval(ca, lx)), 0.0)
        inv = float(np.polyval(cb, lx))
        return alpha, (math.inf if inv <= 0 else 1.0 / inv)
    return at


MOE_PREFIX = "moe_dispatch_h"


def moe_tokens(benchmark, size_bytes):
    """Tokens per PE of a MoE dispatch row: size_bytes = tokens x hidden x 2 (BF16), hidden from the name
    moe_dispatch_h<hidden>."""
    hidden = int(benchmark[len(MOE_PREFIX):])
    return size_bytes // (2 * hidden)


def is_cpu_orchestrated(path):
    """The MoE section's CPU-orchestrated forms (impl "cpu": moe_a2a.py's copy_engine, shoal-bench-moe's
    copy_engine_plain); every other MoE path is device-initiated (shoal.ep's, the plain kernel shoal/device)."""
    return path[0] == "cpu"


def moe_round_trip(rows):
    """The MoE section: each device-initiated path against the CPU-orchestrated form measured in the same run (the
    same step: moe_a2a.py pairs shoal.ep's paths with cpu/copy_engine, shoal-bench-moe the plain kernel with
    cpu/copy_engine_plain; rows without a step form one run), per MoE benchmark and PE count, in tokens per PE:
      device_faster_up_to  the largest token count up to which the device path is faster at every measured count
                           (0: not at the smallest)
      cpu_within_from      the token count from which the CPU form is within GOOD_ENOUGH of the device path (or
                           faster) at every larger measured count: where its host round trip no longer matters
                           (0: not even at the largest)
      fixed_gap_us         alpha(CPU form) - alpha(device path) of the fitted models t = alpha + tokens * slope: the
                           CPU form's extra cost per call, its round trip (None with fewer than two counts)
      model_cross_tokens   where the two models give the same time, inside the measured counts (None: parallel, or
                           outside them)
    Returns a list of dicts (benchmark, num_pes, step, device, cpu, tokens and the four above), sorted."""
    by = defaultdict(lambda: defaultdict(dict))
    for r in rows:
        if not r["benchmark"].startswith(MOE_PREFIX):
            continue
        pts = by[(r["benchmark"], r["num_pes"], r.get("step", "") or "")][path_of(r)]
        k = moe_tokens(r["benchmark"], r["size_bytes"])
        pts[k] = min(pts.get(k, math.inf), r["latency_us"])
    out = []
    for (bench, n, step), paths in sorted(by.items()):
        for cpu_path in sorted((p for p in paths if is_cpu_orchestrated(p)), key=path_name):
            for dev_path in sorted((p for p in paths if not is_cpu_orchestrated(p)), key=path_name):
                common = sorted(set(paths[dev_path]) & set(paths[cpu_path]))
                if not common:
                    continue
                dev = {k: paths[dev_path][k] for k in common}
                cpu = {k: paths[cpu_path][k] for k in common}
                md, mc = fit(dev), fit(cpu)
                cross = models_cross_at(md, mc)
                inside = cross is not None and common[0] <= cross <= common[-1]
                out.append({
                    "benchmark": bench, "num_pes": n, "step": step, "device": dev_path, "cpu": cpu_path,
                    "tokens": common,
                    "device_faster_up_to": largest_prefix_where(common, lambda k: dev[k] < cpu[k]),  # noqa: B023
                    "cpu_within_from": smallest_suffix_where(common,
                                                             lambda k: cpu[k] <= GOOD_ENOUGH * dev[k]),  # noqa: B023
                    "fixed_gap_us": mc["alpha_us"] - md["alpha_us"] if md and mc else None,
                    "model_cross_tokens": int(cross) if inside else None,
                })
    return out
