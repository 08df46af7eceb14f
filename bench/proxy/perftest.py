#!/usr/bin/env python3
"""Runs ucx_perftest server/client pairs on this machine and writes the results as shoal-bench CSV
rows (impl "ucx_perftest"), so bench/plot.py and compare.py read them beside shoal's.

usage: perftest.py --csv OUT [--sizes 8,16,...] [--mem host|cuda] [--ucx-perftest PATH]

The transport is whatever UCX_TLS / UCX_NET_DEVICES say (run.sh sets tcp on lo). Mapping to
shoal-bench's benchmarks (same statistic: mean time per operation):
  ucp_put_bw  -> put_bw          (bandwidth, every size)
  ucp_get     -> get_bw          (bandwidth, every size)
  ucp_am_bw   -> am_bw           (active-message bandwidth, sizes >= 1 MiB: what the transport moves
                                  when both sides progress; ucp_put_bw's server does not progress its
                                  worker, and over tcp a put needs the target's progress)
  ucp_put_lat -> p_ping_pong     (one-way latency of an 8-byte put, half a round trip)
  ucp_fadd    -> atomic_latency  (fetch-and-add round trip, 8 bytes)
  ucp_add     -> atomic_add_rate (posted add, time per operation; no shoal counterpart)
The 50th percentile ucx_perftest prints is kept in the "pair" column as "p50=<us>".
"""
import argparse
import os
import socket
import subprocess
import sys
import time

FIELDS = ("benchmark,impl,backend,num_pes,scope,size_bytes,iterations,latency_us,bandwidth_gbps,ratio,baseline,"
          "busbw_gbps,pair")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def iterations(test, nbytes):
    if test in ("ucp_put_bw", "ucp_get", "ucp_am_bw"):
        return max(3, min(2000, (16 << 20) // max(nbytes, 1)))
    return 2000


def run_pair(exe, test, nbytes, mem, timeout_s):
    """One server + client run; returns the client's final numbers (the -f line) or None."""
    port = free_port()
    iters = iterations(test, nbytes)
    common = ["-t", test, "-s", str(nbytes), "-n", str(iters), "-w", str(max(iters // 10, 5)), "-f"]
    if mem != "host":
        common += ["-m", f"{mem},{mem}"]
    server = subprocess.Popen([exe, "-p", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for attempt in range(20):  # the server needs a moment to listen
            time.sleep(0.1 * (attempt + 1))
            try:
                out = subprocess.run([exe, "127.0.0.1", "-p", str(port)] + common, capture_output=True, text=True,
                                     timeout=timeout_s).stdout
            except subprocess.TimeoutExpired:
                return None
            for line in out.splitlines():
                v = line.replace("Final:", "").split()
                if len(v) == 8 and all(t.replace(".", "", 1).isdigit() for t in v):
                    # iterations, p50 lat, avg lat, overall lat (us), avg bw, overall bw (MB/s), avg mr, overall mr
                    return {"iters": int(v[0]), "p50_us": float(v[1]), "overall_us": float(v[3]),
                            "overall_mbs": float(v[5])}
            if server.poll() is not None:
                return None
        return None
    finally:
        server.kill()
        server.wait()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--csv", required=True)
    ap.add_argument("--sizes", default=",".join(str(8 << i) for i in range(24)))
    ap.add_argument("--mem", default="host", choices=("host", "cuda"))
    ap.add_argument("--ucx-perftest", default="ucx_perftest")
    ap.add_argument("--timeout", type=float, default=120)
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",") if s]
    plan = [("ucp_put_bw", "put_bw", n) for n in sizes] + [("ucp_get", "get_bw", n) for n in sizes]
    plan += [("ucp_am_bw", "am_bw", n) for n in sizes if n >= 1 << 20]
    plan += [("ucp_put_lat", "p_ping_pong", 8), ("ucp_fadd", "atomic_latency", 8), ("ucp_add", "atomic_add_rate", 8)]
    rows = []
    for test, bench, nbytes in plan:
        r = run_pair(args.ucx_perftest, test, nbytes, args.mem, args.timeout)
        if r is None:
            print(f"perftest.py: {test} -s {nbytes}: no result (timeout or failure)", file=sys.stderr)
            continue
        lat = r["overall_us"]
        gbps = r["overall_mbs"] * (1 << 20) / 1e9 if bench.endswith("_bw") else 0.0
        if bench.endswith("_bw") and gbps > 0:
            lat = nbytes / (gbps * 1e3)
        print(f"  {test:12s} {nbytes:>9d} B  {lat:10.3f} us  {gbps:8.3f} GB/s  (p50 {r['p50_us']:.3f} us)", flush=True)
        rows.append(f"{bench},ucx_perftest,{args.mem},2,host,{nbytes},{r['iters']},{lat:.4f},{gbps:.4f},0.0000,,"
                    f"0.0000,p50={r['p50_us']:.3f}")
    with open(args.csv, "w") as f:
        f.write(FIELDS + "\n" + "\n".join(rows) + "\n")
    print(f"perftest.py: {len(rows)} rows in {args.csv} (UCX_TLS={os.environ.get('UCX_TLS', '')}, "
          f"UCX_NET_DEVICES={os.environ.get('UCX_NET_DEVICES', '')})")


if __name__ == "__main__":
    main()
