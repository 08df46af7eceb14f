#!/usr/bin/env python3
"""Puts shoal-bench's proxy figures beside ucx_perftest's from the same run and checks issue 11's
targets: host put >= 1 MiB at >= 0.9x ucx_perftest's put bandwidth; small-op latency <= ucx_perftest's
+ 3 us; device-initiated put (its best scope per size) >= 0.8x host-initiated (when a device CSV is there).

usage: compare.py --dir DIR [--command TEXT] [--machine TEXT]
Reads DIR/shoal_host.csv, DIR/ucx_host.csv and, when present, DIR/shoal_device.csv and
DIR/shoal_device_host.csv (host-issued on GPU heaps); writes
DIR/compare.csv (shoal-bench's columns: ratio = shoal / reference, baseline = the reference, pair =
the target and whether it was met) and DIR/README.md (machine, command, the table, files).
"""
import argparse
import csv
import pathlib

MIB = 1 << 20
SLACK_US = 3.0


def load(path, impl=None):
    """(benchmark, size) -> row for one impl (the last row wins)."""
    out = {}
    if not path.exists():
        return out
    with path.open() as f:
        for r in csv.DictReader(f):
            if impl is None or r["impl"] == impl:
                out[(r["benchmark"], int(r["size_bytes"]))] = r
    return out


def load_best(path, impl):
    """(benchmark, size) -> the row of `impl` with the highest bandwidth over its scopes (device rows come at
    thread, warp and block scope; a thread-scope grid posts one proxy operation per thread)."""
    out = {}
    if not path.exists():
        return out
    with path.open() as f:
        for r in csv.DictReader(f):
            key = (r["benchmark"], int(r["size_bytes"]))
            if r["impl"] == impl and (key not in out or float(r["bandwidth_gbps"]) > float(out[key]["bandwidth_gbps"])):
                out[key] = r
    return out


def size_text(n):
    for unit, div in (("MiB", MIB), ("KiB", 1024)):
        if n >= div and n % div == 0:
            return f"{n // div} {unit}"
    return f"{n} B"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dir", required=True)
    ap.add_argument("--command", default="")
    ap.add_argument("--machine", default="")
    args = ap.parse_args()
    d = pathlib.Path(args.dir)
    shoal = load(d / "shoal_host.csv", "shoal")
    ucx = load(d / "ucx_host.csv", "ucx_perftest")
    device = load_best(d / "shoal_device.csv", "shoal")
    device_host = load(d / "shoal_device_host.csv", "shoal")  # host-issued on the same GPU heaps
    typical = load(d / "shoal_host_typical.csv", "shoal")

    rows = []  # measure, size, shoal, ucx, unit, relation, target, met

    csv_rows = []  # the same, in shoal-bench's CSV columns (bench_tools_test keeps docs/results uniform)

    def add(measure, size, s, u, unit, kind, target_text, met):
        rows.append([measure, size_text(size), f"{s:.3f}", f"{u:.3f}" if u is not None else "", unit, kind,
                     target_text, met])
        bench, _, ref = measure.partition(" (vs ")
        lat, bw = (s, 0.0) if unit == "us" else (size / (s * 1e3) if s > 0 else 0.0, s)
        ratio = s / u if u else 0.0
        csv_rows.append([bench.replace(" ", "_"), "shoal", "host", 2, "host", size, 0, f"{lat:.4f}", f"{bw:.4f}",
                         f"{ratio:.4f}", ref.rstrip(")").replace(",", ";"), "0.0000",
                         f"target {target_text}: {met or 'info'}".replace(",", ";")])

    for bench, ref, target in (("put_bw", "put_bw", 0.9), ("put_bw", "am_bw", 0.9), ("get_bw", "get_bw", None)):
        for (b, n), r in sorted(shoal.items()):
            if b != bench or (ref, n) not in ucx:
                continue
            s, u = float(r["bandwidth_gbps"]), float(ucx[(ref, n)]["bandwidth_gbps"])
            ratio = s / u if u > 0 else 0.0
            has_target = target is not None and n >= MIB
            add(f"{bench} (vs ucp_{ref.replace('get_bw', 'get')})", n, s, u, "GB/s", f"{ratio:.2f}x",
                f">= {target}x" if has_target else "(info)", ("yes" if ratio >= target else "NO") if has_target else "")
    # Small-op latency: (shoal benchmark, ucx row, how many ucx one-way latencies make the same work).
    for bench, ref, times, why in (("p_ping_pong", "p_ping_pong", 1, "ucp_put_lat"),
                                   ("put_signal_ping_pong", "p_ping_pong", 1, "ucp_put_lat"),
                                   ("put_quiet_latency", "p_ping_pong", 2, "2x ucp_put_lat (a round trip)"),
                                   ("atomic_latency", "atomic_latency", 1, "ucp_fadd")):
        # 8 B where measured, else shoal's smallest size (--quick starts at 16 B).
        sized = sorted(n for (b, n) in shoal if b == bench)
        r = shoal.get((bench, 8 if 8 in sized else (sized[0] if sized else 8)))
        u = ucx.get((ref, 8))
        if r is None or u is None:
            continue
        s, base = float(r["latency_us"]), times * float(u["latency_us"])
        add(f"{bench} mean (vs {why})", int(r["size_bytes"]), s, base, "us", f"{s - base:+.1f} us",
            f"<= +{SLACK_US:g} us", "yes" if s <= base + SLACK_US else "NO")
        t = typical.get((bench, 8))
        if t is not None and u["pair"].startswith("p50="):
            s, base = float(t["latency_us"]), times * float(u["pair"][4:])
            add(f"{bench} typical (vs {why} p50)", 8, s, base, "us", f"{s - base:+.1f} us", f"<= +{SLACK_US:g} us",
                "yes" if s <= base + SLACK_US else "NO")
    for (b, n), r in sorted(device.items()):
        if b != "put_bw" or n < MIB or ("put_bw", n) not in shoal:
            continue
        s, h = float(r["bandwidth_gbps"]), float(shoal[("put_bw", n)]["bandwidth_gbps"])
        ratio = s / h if h > 0 else 0.0
        add("device put_bw (vs host put_bw)", n, s, h, "GB/s", f"{ratio:.2f}x ({r['scope']})", ">= 0.8x",
            "yes" if ratio >= 0.8 else "NO")
        if ("put_bw", n) in device_host:
            h = float(device_host[("put_bw", n)]["bandwidth_gbps"])
            ratio = s / h if h > 0 else 0.0
            add("device put_bw (vs host-issued put_bw, same GPU heaps)", n, s, h, "GB/s",
                f"{ratio:.2f}x ({r['scope']})", ">= 0.8x", "yes" if ratio >= 0.8 else "NO")

    header = ["measure", "size", "shoal", "reference", "unit", "shoal vs reference", "target", "met"]
    with (d / "compare.csv").open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["benchmark", "impl", "backend", "num_pes", "scope", "size_bytes", "iterations", "latency_us",
                    "bandwidth_gbps", "ratio", "baseline", "busbw_gbps", "pair"])
        w.writerows(csv_rows)
    table = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    table += ["| " + " | ".join(r) + " |" for r in rows]
    missed = sum(1 for r in rows if r[-1] == "NO")
    met = sum(1 for r in rows if r[-1] == "yes")
    plots = sorted(p.name for p in (d / "plots").glob("*.png")) if (d / "plots").is_dir() else []
    text = [
        "# shoal's proxy transport beside ucx_perftest (same run, same transport)",
        "",
        "Generated by `bench/proxy/run.sh` (bench/proxy/compare.py); do not edit by hand.",
        "",
        f"- command: `{args.command}`" if args.command else "",
        f"- machine: {args.machine}" if args.machine else "",
        "- shoal: `shoal-bench` host-issued set at 2 PEs, `SHOAL_DISABLE_P2P=1` (every peer on the UCX proxy);"
        " ucx_perftest: a server/client pair on 127.0.0.1; both `UCX_TLS=tcp UCX_NET_DEVICES=lo`.",
        "- statistics: *mean* = mean time per operation on both sides (shoal: median over 5 repetitions of the"
        " mean; ucx_perftest: its `overall` column); *typical* = shoal's median over 201 repetitions of 10"
        " operations, in the median of 5 launches (shoal_host_typical.csv; every launch in"
        " shoal_host_typical_runs.csv) against ucx_perftest's 50th percentile (ucx_host.csv, column `pair`).",
        "",
        f"Targets met: {met}, missed: {missed}. Why, the profile and what was tried: [analysis.md](analysis.md)"
        " (by hand).",
        "",
    ] + table + [
        "",
        "Files: `shoal_host.csv`, `shoal_host_typical.csv`, `shoal_host_typical_runs.csv`, `ucx_host.csv`" + (", `shoal_device.csv`" if device else "") +
        (", `shoal_device_host.csv`" if device_host else "") +
        ", `compare.csv`" + ("; plots: " + ", ".join(f"`plots/{p}`" for p in plots) if plots else ""),
        "",
    ]
    (d / "README.md").write_text("\n".join(line for line in text if line is not None) + "\n")
    print("\n".join(table))
    print(f"compare.py: {met} target(s) met, {missed} missed; wrote {d / 'compare.csv'} and {d / 'README.md'}")


if __name__ == "__main__":
    main()
