#!/usr/bin/env python3
"""Joins shoal-bench and shoal-bench-nvshmem CSVs of one run and checks the issue-3 targets (device
RMA and sync vs NVSHMEM) and the issue-4 targets (collectives: shoal vs NCCL rows of the same
shoal-bench process, and shoal's one-block device collectives vs NVSHMEM's).

usage: compare.py shoal.csv [more.csv ...] [--markdown out.md]
       compare.py --sweep cfg1.csv cfg2.csv ... [--markdown out.md]

CSVs may come in any order and number: a file with `nvshmem-<version>` rows (or `nvshmem`, before the
impl named the version) is NVSHMEM's (shoal-bench-nvshmem[-<version>], with or without --coll), any
other is shoal-bench's. Files of several NVSHMEM releases may come together (shoal-bench-nvshmem built
against 3.4.5, shoal-bench-nvshmem-3.8.0 against 3.8.0): every NVSHMEM target is then judged against
each release, one line per release, and a table sets the ratios side by side. For every target it
prints the figure, the target, the measured values and the ratio, and whether the target is met.
Ratios against the plain SM copy come from the shoal run itself (same-run baseline); ratios against
NVSHMEM join the CSVs on (benchmark, scope, size). Collective bandwidth targets compare shoal's
best of stream/graph with NCCL's best of stream/graph. A row whose data check failed counts as not
met; a target whose rows are missing says so ("no NVSHMEM rows", "no NCCL rows") and is not measured.
--sweep prints one line per configuration file (shoal's stream/graph rows at 8 B and 256 MiB) and the
best configuration per figure (scripts/gpu.sh collsweep).
Exit status: 0 (a report was printed), 2 on bad input.
"""
import argparse
import csv
import pathlib
import sys

MIB = 1 << 20


def load(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def index(rows):
    """(benchmark, impl, scope, size) -> row."""
    return {(r["benchmark"], r["impl"], r["scope"], int(r["size_bytes"])): r for r in rows}


def failed(r):
    return r.get("baseline") == "DATA-CHECK-FAILED"


def full_grid_scope(rows):
    """The largest block grid of the put_bw rows, e.g. 'block/132x512'."""
    best = None
    for r in rows:
        if r["benchmark"] == "put_bw" and r["scope"].startswith("block/"):
            ctas = int(r["scope"].split("/")[1].split("x")[0])
            if best is None or ctas > best[0]:
                best = (ctas, r["scope"])
    return best[1] if best else None


def fmt_size(n):
    for unit, shift in (("G", 30), ("M", 20), ("K", 10)):
        if n >= (1 << shift) and n % (1 << shift) == 0:
            return f"{n >> shift}{unit}"
    return str(n)


def table(head, lines):
    """A markdown table (also readable as text)."""
    widths = [max(len(str(x[i])) for x in list(lines) + [head]) for i in range(len(head))]
    out = ["| " + " | ".join(h.ljust(w) for h, w in zip(head, widths)) + " |",
           "|" + "|".join("-" * (w + 2) for w in widths) + "|"]
    for line in lines:
        out.append("| " + " | ".join(str(x).ljust(w) for x, w in zip(line, widths)) + " |")
    return "\n".join(out)


class report:
    def __init__(self):
        self.lines = []
        # Lines judged against one NVSHMEM release: (figure, target with plain "NVSHMEM", label, ratio, status).
        self.versus = []

    def add(self, figure, target, detail, ratio, met, status=None, versus=None):
        """versus: (NVSHMEM label, the target's text without the version) when the line compares with a release."""
        if status is None:
            status = "n/a" if met is None else ("met" if met else "NOT met")
        ratio_text = "-" if ratio is None else f"{ratio:.3f}"
        self.lines.append((figure, target, detail, ratio_text, status))
        if versus is not None:
            self.versus.append((figure, versus[1], versus[0], ratio_text, status))

    def text(self):
        return table(("figure", "target", "measured", "ratio", "status"), self.lines)

    def side_by_side(self):
        """One line per figure, the ratio and status against each NVSHMEM release in its own column; None
        unless the lines compare with two releases or more."""
        labels = sorted({v[2] for v in self.versus}, key=version_key)
        if len(labels) < 2:
            return None
        cells = {}
        for figure, target, label, ratio, status in self.versus:
            cells.setdefault((figure, target), {})[label] = ratio if ratio == "-" else f"{ratio} ({status})"
        head = ("figure", "target") + tuple(f"x {nv_name(v)}" for v in labels)
        return table(head, [(f, t) + tuple(c.get(v, "-") for v in labels) for (f, t), c in cells.items()])


def bw_vs_copy(rep, shoal, impl, scope, target):
    """Block put >= 1 MiB on `scope`: impl / plain SM copy (the row's own same-run ratio), worst size."""
    pts = sorted((k[3], r) for k, r in shoal.items()
                 if k[0] == "put_bw" and k[1] == impl and k[2] == scope and k[3] >= MIB)
    if not pts:
        rep.add(f"put_bw {impl} {scope} >= 1M", f">= {target} x sm_copy", "no rows", None, None)
        return
    bad = [s for s, r in pts if failed(r)]
    worst_size, worst = min(pts, key=lambda p: float(p[1]["ratio"]))
    ratio = float(worst["ratio"])
    detail = (f"worst at {fmt_size(worst_size)}: {float(worst['bandwidth_gbps']):.1f} GB/s; "
              f"largest {fmt_size(pts[-1][0])}: {float(pts[-1][1]['bandwidth_gbps']):.1f} GB/s "
              f"(x{float(pts[-1][1]['ratio']):.3f})")
    if bad:
        detail += f"; DATA CHECK FAILED at {', '.join(fmt_size(s) for s in bad)}"
    rep.add(f"put_bw {impl} {scope} >= 1M", f">= {target} x sm_copy", detail, ratio, ratio >= target and not bad)


def vs_nvshmem(rep, shoal, nvs, figure, bench, impl, scope, sizes, target, higher_is_better):
    """shoal / NVSHMEM on (bench, scope, size) for each size; the worst ratio decides. One line per
    NVSHMEM release in `nvs` (label -> index of that release's CSVs)."""
    if not nvs:
        rep.add(figure, target_text(target, higher_is_better), "no NVSHMEM run", None, None)
        return
    for label, nv in nvs.items():
        vs_one_nvshmem(rep, shoal, nv, label, figure, bench, impl, scope, sizes, target, higher_is_better)


def vs_one_nvshmem(rep, shoal, nv, label, figure, bench, impl, scope, sizes, target, higher_is_better):
    tgt = target_text(target, higher_is_better, label)
    versus = (label, target_text(target, higher_is_better))
    ratios = []
    bad = False
    for size in sizes:
        s = shoal.get((bench, impl, scope, size))
        n = nv.get((bench, label, scope, size))
        if s is None or n is None:
            continue
        bad = bad or failed(s) or failed(n)
        if higher_is_better:
            ratios.append((float(s["bandwidth_gbps"]) / max(float(n["bandwidth_gbps"]), 1e-12), size, s, n))
        else:
            ratios.append((float(s["latency_us"]) / max(float(n["latency_us"]), 1e-12), size, s, n))
    if not ratios:
        rep.add(figure, tgt, "no matching rows", None, None, versus=versus)
        return
    worst = min(ratios, key=lambda x: x[0]) if higher_is_better else max(ratios, key=lambda x: x[0])
    ratio, size, s, n = worst
    if higher_is_better:
        detail = f"{float(s['bandwidth_gbps']):.1f} vs {float(n['bandwidth_gbps']):.1f} GB/s"
    else:
        detail = f"{float(s['latency_us']):.3f} vs {float(n['latency_us']):.3f} us"
    # The two binaries run one after the other, so clocks and link state differ between them; each
    # row also carries its ratio to a baseline measured in its own run (SM copy or raw flags). Their
    # quotient is shown as a second view, not used for met/not met.
    try:
        norm = float(s["ratio"]) / float(n["ratio"])
        if float(s["ratio"]) > 0 and float(n["ratio"]) > 0:
            detail += f" (vs own-run baselines: x{norm:.3f})"
    except (KeyError, ValueError, ZeroDivisionError):
        pass
    if len(ratios) > 1:
        detail = f"worst at {fmt_size(size)}: " + detail
    if bad:
        detail += "; DATA CHECK FAILED"
    met = (ratio >= target) if higher_is_better else (ratio <= target)
    rep.add(figure, tgt, detail, ratio, met and not bad, versus=versus)


def busbw(r):
    try:
        return float(r.get("busbw_gbps") or 0)
    except ValueError:
        return 0.0


def lat(r):
    try:
        return float(r.get("latency_us") or 0)
    except ValueError:
        return 0.0


COLL_BENCHES = ("allreduce", "allreduce_scratch", "broadcast", "fcollect", "alltoall", "team_barrier", "barrier")
LATENCY_MAX = 64 << 10  # up to here a collective is judged by latency, above by busBW (as shoal-bench does)


def coll_rows(rows, bench, impl, scope=None, size=None):
    """Rows of one collective and impl; scope None: any, 'block': any block/1x<t>; size None: any."""
    out = []
    for r in rows or ():
        if r["benchmark"] != bench or r["impl"] != impl:
            continue
        if scope == "block" and not r["scope"].startswith("block/"):
            continue
        if scope not in (None, "block") and r["scope"] != scope:
            continue
        if size is not None and int(r["size_bytes"]) != size:
            continue
        out.append(r)
    return out


def best_bw(rows):
    """The row with the highest busBW among rows whose data checked out (None if none)."""
    good = [r for r in rows if not failed(r) and busbw(r) > 0]
    return max(good, key=busbw) if good else None


def pick_block(rows, scope):
    """The block row of `scope` if present, else any block row (another thread count)."""
    same = [r for r in rows if r["scope"] == scope]
    return (same or rows or [None])[0]


def block_vs_nvshmem(rep, shoal_rows, nv_sets, bench, size, target, figure):
    """Device block scope, latency: shoal's one-CTA row / NVSHMEM's (same size), lower is better; one
    line per NVSHMEM release of `nv_sets` (label -> rows)."""
    s_rows = coll_rows(shoal_rows, bench, "shoal", "block", size)
    if not s_rows:
        rep.add(figure, f"<= {target} x NVSHMEM", f"no shoal block row at {fmt_size(size)}", None, None,
                "not measured")
        return
    for label, nv_rows in (nv_sets or {"nvshmem": []}).items():
        block_vs_one_nvshmem(rep, s_rows[0], nv_rows, label, bench, size, target, figure)


def block_vs_one_nvshmem(rep, s, nv_rows, label, bench, size, target, figure):
    tgt = f"<= {target} x {nv_name(label)}"
    versus = (label, f"<= {target} x NVSHMEM")
    if not coll_rows(nv_rows, bench, label):
        rep.add(figure, tgt, f"shoal {lat(s):.3f} us ({s['scope']}); no NVSHMEM rows", None, None, "not measured",
                versus)
        return
    n = pick_block(coll_rows(nv_rows, bench, label, "block", size), s["scope"])
    if n is None:
        rep.add(figure, tgt, f"shoal {lat(s):.3f} us; no NVSHMEM block row at {fmt_size(size)}", None, None,
                "not measured", versus)
        return
    ratio = lat(s) / max(lat(n), 1e-12)
    detail = f"{lat(s):.3f} vs {lat(n):.3f} us ({s['scope']} vs {n['scope']})"
    bad = failed(s) or failed(n)
    if bad:
        detail += "; DATA CHECK FAILED"
    rep.add(figure, tgt, detail, ratio, ratio <= target and not bad, versus=versus)


def graph_vs_nccl(rep, rows, bench, size, target, figure):
    """On-stream calls replayed from a CUDA graph, latency: shoal graph / NCCL graph (same run)."""
    tgt = f"<= {target} x NCCL (graph)"
    s_rows = coll_rows(rows, bench, "shoal", "graph", size)
    n_rows = coll_rows(rows, bench, "nccl", "graph", size)
    if not s_rows:
        rep.add(figure, tgt, f"no shoal graph row at {fmt_size(size)}", None, None, "not measured")
        return
    s = s_rows[0]
    if not n_rows:
        why = "no NCCL graph row" if coll_rows(rows, bench, "nccl") else "no NCCL rows (NCCL not built in?)"
        rep.add(figure, tgt, f"shoal {lat(s):.3f} us; {why}", None, None, "not measured")
        return
    n = n_rows[0]
    ratio = lat(s) / max(lat(n), 1e-12)
    detail = f"{lat(s):.3f} vs {lat(n):.3f} us"
    st = coll_rows(rows, bench, "shoal", "stream", size)
    nst = coll_rows(rows, bench, "nccl", "stream", size)
    if st and nst:
        detail += f" (stream: {lat(st[0]):.3f} vs {lat(nst[0]):.3f} us)"
    bad = failed(s) or failed(n)
    if bad:
        detail += "; DATA CHECK FAILED"
    rep.add(figure, tgt, detail, ratio, ratio <= target and not bad)


def bw_vs_nccl(rep, rows, bench, size, target):
    """busBW at `size`: shoal's best of stream/graph against NCCL's best of stream/graph (same run)."""
    figure = f"{bench} {fmt_size(size)} busBW"
    tgt = f">= {target} x NCCL"
    s_all = [r for r in coll_rows(rows, bench, "shoal", None, size) if r["scope"] in ("stream", "graph")]
    n_all = [r for r in coll_rows(rows, bench, "nccl", None, size) if r["scope"] in ("stream", "graph")]
    if not s_all:
        rep.add(figure, tgt, f"no shoal stream/graph row at {fmt_size(size)}", None, None, "not measured")
        return
    s = best_bw(s_all)
    n = best_bw(n_all)
    if n is None:
        rep.add(figure, tgt, "no NCCL rows (NCCL not built in?)" if not n_all else "no NCCL row that checked out",
                None, None, "not measured")
        return
    if s is None:
        rep.add(figure, tgt, "DATA CHECK FAILED on every shoal row", 0.0, False)
        return
    ratio = busbw(s) / max(busbw(n), 1e-12)
    detail = f"{busbw(s):.1f} ({s['scope']}) vs {busbw(n):.1f} GB/s ({n['scope']})"
    bad = [r["scope"] for r in s_all if failed(r)]
    if bad:
        detail += f"; DATA CHECK FAILED ({', '.join(bad)})"
    rep.add(figure, tgt, detail, ratio, ratio >= target and not bad)


def coll_report(rows, nv_sets):
    """The issue-4 target table; None when the run has no collective rows. nv_sets: label -> rows of
    each NVSHMEM release (empty: no NVSHMEM run)."""
    if not any(r["benchmark"] in COLL_BENCHES for r in rows):
        return None
    rep = report()
    block_vs_nvshmem(rep, rows, nv_sets, "allreduce", 8, 0.5, "device block-scope allreduce 8B")
    graph_vs_nccl(rep, rows, "allreduce", 8, 0.6, "graph allreduce 8B")
    bw_vs_nccl(rep, rows, "allreduce", 256 * MIB, 1.1)
    bw_vs_nccl(rep, rows, "alltoall", 256 * MIB, 1.2)
    bw_vs_nccl(rep, rows, "broadcast", 256 * MIB, 1.0)
    bw_vs_nccl(rep, rows, "fcollect", 256 * MIB, 1.0)
    block_vs_nvshmem(rep, rows, nv_sets, "alltoall", MIB, 0.5, "device block-scope alltoall 1M")
    # Information, not targets: barriers against NVSHMEM's.
    for bench, scopes in (("team_barrier", ("block",)), ("barrier", ("stream", "graph"))):
        for scope in scopes:
            for s in coll_rows(rows, bench, "shoal", scope):
                for label, nv_rows in (nv_sets or {"nvshmem": []}).items():
                    n = pick_block(coll_rows(nv_rows, bench, label, scope), s["scope"])
                    if n is None:
                        rep.add(f"(info) {bench} {s['scope']}", "-", f"{lat(s):.3f} us; no {nv_name(label)} row", None,
                                None, "info")
                    else:
                        rep.add(f"(info) {bench} {s['scope']}", "-",
                                f"{lat(s):.3f} vs {lat(n):.3f} us ({nv_name(label)})", lat(s) / max(lat(n), 1e-12),
                                None, "info")
    return rep


KEY_SIZES = (8, 64 << 10, MIB, 16 * MIB, 256 * MIB)


def coll_key_table(rows, nv_sets):
    """shoal / NCCL / each NVSHMEM release at a few sizes per (collective, scope): latency up to 64K,
    busBW above."""
    labels = list(nv_sets) or ["nvshmem"]
    head = (("collective", "scope", "size", "shoal", "NCCL") + tuple(nv_name(v) for v in labels) + ("x NCCL",) +
            tuple(f"x {nv_name(v)}" for v in labels))
    lines = []
    scopes = []
    for r in rows:
        if r["benchmark"] in COLL_BENCHES and r["impl"] == "shoal" and r["scope"] not in scopes:
            scopes.append(r["scope"])
    for bench in COLL_BENCHES:
        for scope in scopes:
            nccl_scope = "graph" if scope == "graph" else "stream"
            sizes = [0] if bench.endswith("barrier") else KEY_SIZES
            for size in sizes:
                s = coll_rows(rows, bench, "shoal", scope, size)
                if not s:
                    continue
                s = s[0]
                n = coll_rows(rows, "allreduce" if bench == "allreduce_scratch" else bench, "nccl", nccl_scope, size)
                v_scope = "block" if scope.startswith("block/") else scope
                vs = [pick_block(coll_rows(nv_sets.get(v, []), bench, v, v_scope, size), scope) for v in labels]
                by_lat = size <= LATENCY_MAX

                def val(r):
                    if r is None:
                        return "-"
                    text = f"{lat(r):.2f} us" if by_lat else f"{busbw(r):.1f} GB/s"
                    return text + (" FAILED" if failed(r) else "")

                def ratio(r):
                    if r is None:
                        return "-"
                    if by_lat:
                        return f"{lat(s) / max(lat(r), 1e-12):.3f}"
                    return f"{busbw(s) / max(busbw(r), 1e-12):.3f}"

                n = n[0] if n else None
                lines.append((bench, scope, fmt_size(size) if size else "-", val(s), val(n)) +
                             tuple(val(v) for v in vs) + (ratio(n),) + tuple(ratio(v) for v in vs))
    if not lines:
        return None
    widths = [max(len(str(x[i])) for x in lines + [head]) for i in range(len(head))]
    out = ["| " + " | ".join(h.ljust(w) for h, w in zip(head, widths)) + " |",
           "|" + "|".join("-" * (w + 2) for w in widths) + "|"]
    for line in lines:
        out.append("| " + " | ".join(str(x).ljust(w) for x, w in zip(line, widths)) + " |")
    return "\n".join(out)


def sweep_report(paths):
    """--sweep: one shoal-bench collective CSV per configuration (the file name says which, e.g.
    ch32_auto.csv); shoal's stream/graph rows at 8 B (latency) and 256 MiB (busBW) side by side, with
    NCCL's rows from whichever file has them."""
    configs = []
    nccl = {}
    for p in paths:
        rows = load(p)
        configs.append((pathlib.Path(p).stem, rows))
        for r in rows:
            if r["impl"] == "nccl" and not failed(r):
                nccl.setdefault((r["benchmark"], r["scope"], int(r["size_bytes"])), r)
    head = ("config", "collective", "scope", "8B us", "x NCCL", "256M busBW", "x NCCL")
    lines = []
    best = {}
    for label, rows in configs:
        for bench in ("allreduce", "broadcast", "fcollect", "alltoall", "barrier"):
            for scope in ("stream", "graph"):
                small = coll_rows(rows, bench, "shoal", scope, 0 if bench == "barrier" else 8)
                big = coll_rows(rows, bench, "shoal", scope, 256 * MIB)
                if not small and not big:
                    continue
                cells = [label, bench, scope]
                for r, size, by_lat in ((small, 0 if bench == "barrier" else 8, True), (big, 256 * MIB, False)):
                    if not r:
                        cells += ["-", "-"]
                        continue
                    r = r[0]
                    v = lat(r) if by_lat else busbw(r)
                    cells.append(f"{v:.2f}" + (" FAILED" if failed(r) else ""))
                    n = nccl.get((bench, scope, size))
                    nv = (lat(n) if by_lat else busbw(n)) if n else 0
                    cells.append(f"{v / nv:.3f}" if nv > 0 else "-")
                    key = (bench, scope, "8B" if by_lat else "256M")
                    if not failed(r) and (key not in best or (v < best[key][0] if by_lat else v > best[key][0])):
                        best[key] = (v, label)
                lines.append(tuple(cells))
    if not lines:
        return "no shoal stream/graph rows in the sweep files"
    widths = [max(len(str(x[i])) for x in lines + [head]) for i in range(len(head))]
    out = ["| " + " | ".join(h.ljust(w) for h, w in zip(head, widths)) + " |",
           "|" + "|".join("-" * (w + 2) for w in widths) + "|"]
    for line in lines:
        out.append("| " + " | ".join(str(x).ljust(w) for x, w in zip(line, widths)) + " |")
    out.append("")
    out.append("best configuration per figure:")
    for (bench, scope, size), (v, label) in sorted(best.items()):
        unit = "us" if size == "8B" else "GB/s busBW"
        out.append(f"  {bench:<10} {scope:<7} {size:>4}: {label} ({v:.2f} {unit})")
    return "\n".join(out)


def target_text(target, higher_is_better, label="nvshmem"):
    return f"{'>=' if higher_is_better else '<='} {target} x {nv_name(label)}"


def nv_name(label):
    """'nvshmem-3.8.0' -> 'NVSHMEM 3.8.0'; 'nvshmem' (a CSV from before the impl named the version) -> 'NVSHMEM'."""
    return "NVSHMEM" + (" " + label[len("nvshmem-"):] if label.startswith("nvshmem-") else "")


def is_nvshmem(impl):
    return impl == "nvshmem" or impl.startswith("nvshmem-")


def version_key(label):
    """Sort key: the unversioned label first, then by version number."""
    parts = label[len("nvshmem-"):].split(".") if label.startswith("nvshmem-") else []
    return tuple(int(p) if p.isdigit() else 0 for p in parts)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("csv", nargs="+", help="shoal-bench and shoal-bench-nvshmem CSVs (told apart by their rows)")
    ap.add_argument("--markdown", help="also write the tables to this file")
    ap.add_argument("--sweep", action="store_true",
                    help="the CSVs are one collective run per configuration: print them side by side")
    args = ap.parse_args()
    if args.sweep:
        try:
            text = sweep_report(args.csv)
        except (OSError, KeyError, ValueError) as e:
            print(f"compare.py: {e}", file=sys.stderr)
            return 2
        print(text)
        if args.markdown:
            with open(args.markdown, "w") as f:
                f.write(text + "\n")
        return 0
    # nv_sets: NVSHMEM label ("nvshmem-3.8.0") -> the rows of its files (its own baselines included).
    shoal_rows, nv_sets = [], {}
    try:
        for path in args.csv:
            rows = load(path)
            labels = {r["impl"] for r in rows if is_nvshmem(r["impl"])}
            if not labels:
                shoal_rows += rows
            for label in labels:
                nv_sets.setdefault(label, []).extend(rows)
    except (OSError, KeyError) as e:
        print(f"compare.py: {e}", file=sys.stderr)
        return 2
    nv_sets = dict(sorted(nv_sets.items(), key=lambda kv: version_key(kv[0])))
    versions = ", ".join(nv_name(v) for v in nv_sets) or "NVSHMEM"
    shoal = index(shoal_rows)
    nv = {label: index(rows) for label, rows in nv_sets.items()}
    impls = sorted({r["impl"] for r in shoal_rows if r["impl"].startswith("shoal")})
    full = full_grid_scope(shoal_rows)
    small = sorted({r["scope"] for r in shoal_rows
                    if r["benchmark"] == "put_bw" and r["scope"].startswith("block/") and r["scope"] != full})
    grid32 = "block/32x512" if "block/32x512" in small else (small[0] if small else None)
    big_sizes = sorted({int(r["size_bytes"]) for r in shoal_rows
                        if r["benchmark"] == "put_bw" and int(r["size_bytes"]) >= MIB})

    rep = None
    if any(r["benchmark"] not in COLL_BENCHES for r in shoal_rows):
        rep = report()
        for impl in impls:
            if full:
                bw_vs_copy(rep, shoal, impl, full, 0.98)
        for impl in impls:
            if grid32:
                vs_nvshmem(rep, shoal, nv, f"put_bw {impl} {grid32} >= 1M", "put_bw", impl, grid32, big_sizes, 1.05,
                           True)
        for impl in impls:
            for scope in [s for s in (grid32, full) if s]:
                vs_nvshmem(rep, shoal, nv, f"put_bw {impl} {scope} 64K", "put_bw", impl, scope, [65536], 1.5, True)
        vs_nvshmem(rep, shoal, nv, "p_ping_pong half round trip", "p_ping_pong", "shoal", "thread", [4], 0.6, False)
        ps_scope = sorted({r["scope"] for r in shoal_rows if r["benchmark"] == "put_signal_ping_pong"})
        for scope in ps_scope:
            vs_nvshmem(rep, shoal, nv, f"put_signal_ping_pong {scope} 8B-4K", "put_signal_ping_pong", "shoal", scope,
                       [8 << i for i in range(10)], 0.6, False)
        vs_nvshmem(rep, shoal, nv, "putmem+quiet 1K, one thread", "put_quiet_latency", "shoal", "thread", [1024], 0.5,
                   False)
        vs_nvshmem(rep, shoal, nv, "uint64 atomic_fetch_add", "atomic_latency", "shoal", "thread", [8], 1.0, False)
        vs_nvshmem(rep, shoal, nv, "device barrier_all (thread)", "barrier_latency", "shoal", "thread", [0], 0.4,
                   False)
        # Information, not targets: the other barrier, and each latency against its raw same-run floor.
        for scope in sorted({r["scope"] for r in shoal_rows if r["benchmark"] == "barrier_latency"} - {"thread"}):
            vs_nvshmem(rep, shoal, nv, f"(info) sync_all_block {scope}", "barrier_latency", "shoal", scope, [0], 0.4,
                       False)
        print(f"Issue 3 targets (device RMA, sync) vs {versions}:")
        print(rep.text())
        if rep.side_by_side():
            print("\nIssue 3 side by side (ratio to each NVSHMEM; details above):")
            print(rep.side_by_side())
    coll = coll_report(shoal_rows, nv_sets)
    keys = coll_key_table(shoal_rows, nv_sets) if coll is not None else None
    if coll is not None:
        runs = "their own runs" if len(nv_sets) > 1 else "its own run"
        print(f"\nIssue 4 targets (collectives; shoal and NCCL from one process, {versions} from {runs}):")
        print(coll.text())
        if coll.side_by_side():
            print("\nIssue 4 side by side (ratio to each NVSHMEM; details above):")
            print(coll.side_by_side())
        if keys:
            print("\nCollectives at key sizes (latency up to 64K, busBW above; block rows vs NCCL stream):")
            print(keys)

    if rep is not None:
        print("\nSame-run baselines (shoal rows; bandwidth: x plain SM copy on the same grid, latency: x raw flags):")
        for r in shoal_rows:
            if (r["impl"].startswith("shoal") and r["benchmark"] != "put_bw" and r["ratio"] and float(r["ratio"]) > 0
                    and r["benchmark"] not in COLL_BENCHES):
                if r["benchmark"].endswith("_bw") or r["benchmark"].endswith("_bidir"):
                    if int(r["size_bytes"]) not in (65536, MIB, 256 * MIB):
                        continue
                print(f"  {r['benchmark']:<22} {r['impl']:<10} {r['scope']:<14} {fmt_size(int(r['size_bytes'])):>6}"
                      f"  {float(r['latency_us']):10.3f} us  {float(r['bandwidth_gbps']):8.1f} GB/s"
                      f"  x{float(r['ratio']):.3f} {r['baseline']}")
    if args.markdown:
        with open(args.markdown, "w") as f:
            if rep is not None:
                f.write(f"## Issue 3: device RMA and sync vs {versions}\n\n" + rep.text() + "\n")
                if rep.side_by_side():
                    f.write("\n### Side by side: ratio to each NVSHMEM\n\n" + rep.side_by_side() + "\n")
            if coll is not None:
                f.write(f"\n## Issue 4: collectives vs NCCL and {versions}\n\n" + coll.text() + "\n")
                if coll.side_by_side():
                    f.write("\n### Side by side: ratio to each NVSHMEM\n\n" + coll.side_by_side() + "\n")
                if keys:
                    f.write("\n### Collectives at key sizes\n\n" + keys + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
