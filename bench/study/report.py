"""The study's report: tables, crossovers, models, projections, the default-against-best check and plots, from the
merged rows (bench/study/analysis.py does the arithmetic). Everything lands in one folder:

  README.md           the report: per benchmark and PE count the paths' times by size with the best marked, the
                      crossovers, the fitted models, the MoE dispatch's device paths against the CPU-orchestrated
                      form (from which token count its host round trip no longer matters), the projection to PE
                      counts not measured (marked as such), the check of shoal's default paths and the findings in
                      plain words
  models.csv          per path: alpha (µs per operation), beta (GB/s), worst relative residual
  crossovers.csv      where the best path changes
  default_check.csv   shoal's own choice against the best forced path, per size
  defaults.json       the crossovers shoal's defaults take (collectives), with machine and commit
  <benchmark>_n<P>.png  time against size, one line per path (matplotlib)
"""
import csv
import json
import math
import pathlib
import sys

import analysis

PROJECT_PES = (16, 32, 64)


def size_text(n):
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return f"{n >> shift} {unit}"
    return f"{n} B"


def num(x, digits=3):
    if x is None or (isinstance(x, float) and math.isinf(x)):
        return "-"
    return f"{x:.{digits}g}"


def write_csv(path, header, rows):
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(header)
        w.writerows(rows)
    return path


def time_table(paths):
    """Markdown: one row per size, one column per path (µs), the fastest in bold."""
    names = sorted(paths, key=analysis.path_name)
    sizes = sorted({s for pts in paths.values() for s in pts})
    lines = ["| size | " + " | ".join(analysis.path_name(p) for p in names) + " |",
             "|---|" + "---|" * len(names)]
    for s in sizes:
        have = [paths[p][s] for p in names if s in paths[p]]
        best = min(have) if have else None
        cells = []
        for p in names:
            t = paths[p].get(s)
            cells.append("" if t is None else (f"**{num(t)}**" if t == best and len(have) > 1 else num(t)))
        lines.append(f"| {size_text(s)} | " + " | ".join(cells) + " |")
    return lines


def plot(paths, title, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print(f"study: no matplotlib in {sys.executable}; {path.name} not drawn (scripts/install_deps.sh installs "
              "it in build/venv)", file=sys.stderr)
        return None
    fig, ax = plt.subplots(figsize=(7, 4.2))
    for p in sorted(paths, key=analysis.path_name):
        pts = paths[p]
        xs = sorted(pts)
        ax.plot(xs, [pts[x] for x in xs], marker="o", markersize=3, label=analysis.path_name(p))
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("message size (bytes)")
    ax.set_ylabel("time per operation (µs)")
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def findings_for(bench, n, paths, cross):
    """Plain-words lines for one benchmark at one PE count: which path wins where."""
    if len(paths) < 2:
        (p, pts), = paths.items()
        m = analysis.fit(pts)
        if not m:
            return []
        return [f"{bench} at {n} PEs ({analysis.path_name(p)}): {num(m['alpha_us'])} µs per operation, "
                f"{num(m['beta_gbps'])} GB/s for large messages."]
    best = analysis.best_by_size(paths)
    sizes = sorted(best)
    first = analysis.path_name(best[sizes[0]][0])
    if not cross:
        return [f"{bench} at {n} PEs: {first} is fastest at every measured size ({size_text(sizes[0])} to "
                f"{size_text(sizes[-1])})."]
    parts = [f"{first} up to {size_text(cross[0][0])}"]
    for lo, hi, _, b, at in cross:
        where = f" (models cross near {size_text(at)})" if at else ""
        parts.append(f"{analysis.path_name(b)} from {size_text(hi)}{where}")
    return [f"{bench} at {n} PEs, the fastest path: " + "; ".join(parts) + "."]


def write(rows, out, meta):
    out = pathlib.Path(out)
    typed = analysis.as_rows(rows)
    g = analysis.groups(typed)
    written = []
    md = ["# The study: where device-initiated issue wins", "",
          f"Measured on **{meta['machine']}** at `{meta['commit']}` ({meta['date']}, platform {meta['platform']}), "
          f"by `{meta['command']}`. Every time in one table comes from the same run; the tables list time per "
          "operation in µs (lower is better; the fastest path at each size in bold).", ""]
    if not meta.get("complete", True):
        md += [f"**Incomplete run**: steps that failed or were not reached: {', '.join(meta['failed']) or 'budget'}.",
               ""]
    model_rows, cross_rows, findings = [], [], []
    by_bench = {}
    for (bench, n) in sorted(g):
        by_bench.setdefault(bench, []).append(n)
    md += ["## Measurements", ""]
    for bench in sorted(by_bench):
        for n in sorted(by_bench[bench]):
            paths = g[(bench, n)]
            md += [f"### {bench}, {n} PEs", ""]
            md += time_table(paths) + [""]
            cross = analysis.crossovers(paths) if len(paths) > 1 else []
            for lo, hi, a, b, at in cross:
                cross_rows.append([bench, n, lo, hi, analysis.path_name(a), analysis.path_name(b), at or ""])
            for p, pts in sorted(paths.items(), key=lambda kv: analysis.path_name(kv[0])):
                m = analysis.fit(pts)
                if m:
                    model_rows.append([bench, n, analysis.path_name(p), f"{m['alpha_us']:.6g}",
                                       "inf" if math.isinf(m["beta_gbps"]) else f"{m['beta_gbps']:.6g}",
                                       f"{m['max_rel_err']:.3g}", m["sizes"]])
            f = findings_for(bench, n, paths, cross)
            findings += f
            md += [*f, ""]
            if len({s for pts in paths.values() for s in pts}) > 1:
                png = plot(paths, f"{bench}, {n} PEs", out / f"{bench}_n{n}.png")
                if png:
                    written.append(png)
                    md += [f"![{bench}, {n} PEs]({png.name})", ""]
    written.append(write_csv(out / "models.csv", ["benchmark", "num_pes", "path", "alpha_us", "beta_gbps",
                                                   "max_rel_err", "sizes"], model_rows))
    written.append(write_csv(out / "crossovers.csv", ["benchmark", "num_pes", "best_below", "best_from", "from_path",
                                                       "to_path", "model_cross_bytes"], cross_rows))
    md += model_section(model_rows)
    md += completion_section(typed)
    moe_md, moe_findings = moe_section(typed)
    md += moe_md
    findings += moe_findings
    md += projection_section(g)
    check, defaults = defaults_section(g, meta, out / "defaults.json")
    md += check["md"]
    written.append(write_csv(out / "default_check.csv", ["benchmark", "num_pes", "size_bytes", "default_us",
                                                          "best_path", "best_us", "ratio", "within_10pct"],
                             check["rows"]))
    if defaults:
        (out / "defaults.json").write_text(json.dumps(defaults, indent=2) + "\n")
        written.append(out / "defaults.json")
    md += ["## Findings", ""] + [f"- {f}" for f in findings + check["findings"]] + [""]
    (out / "README.md").write_text("\n".join(md))
    written.append(out / "README.md")
    return written


def model_section(model_rows):
    md = ["## Models (measured)", "",
          "Each path fitted as t(s) = alpha + s / beta over its measured sizes (weighted for relative error): alpha "
          "is the cost of one operation, beta the bandwidth it tends to for large messages.", "",
          "| benchmark | PEs | path | alpha (µs) | beta (GB/s) | worst residual | sizes |", "|---|---|---|---|---|---|---|"]
    for b, n, p, a, beta, e, k in model_rows:
        md.append(f"| {b} | {n} | {p} | {num(float(a))} | {num(float(beta))} | {float(e):.0%} | {k} |")
    return md + [""]


def completion_section(typed):
    """quiet_after_k as a per-size model: the cost of one more outstanding put and of the quiet that ends them."""
    cost = analysis.completion_cost(typed)
    if not cost:
        return []
    md = ["## Completion cost (measured)", "",
          "From `quiet_after_k`: the time of k puts and one quiet fitted as T(k) = quiet + k x put over k = 1 .. 4096.",
          "", "| impl | PEs | message | per put (µs) | quiet (µs) | worst residual |", "|---|---|---|---|---|---|"]
    for (impl, n, size), (put_us, quiet_us, err) in sorted(cost.items()):
        md.append(f"| {impl} | {n} | {size_text(size)} | {num(put_us)} | {num(quiet_us)} | {err:.0%} |")
    return md + [""]


def moe_section(typed):
    """The MoE dispatch: each device-initiated path against the CPU-orchestrated form of its own run, in tokens per
    PE: where the device path is faster, and from where the CPU form's host round trip no longer matters."""
    pairs = analysis.moe_round_trip(typed)
    if not pairs:
        return [], []
    md = ["## MoE dispatch: device-initiated against CPU-orchestrated (measured)", "",
          "Each device-initiated path against the CPU-orchestrated form measured in the same run: shoal.ep's paths "
          "against `cpu/copy_engine` (bench/study/moe_a2a.py), the plain kernel on shoal's public device API "
          "(`shoal/device`) against `cpu/copy_engine_plain` (shoal-bench-moe: counts by on-stream fcollect, the host "
          "round trip, one copy-engine put per peer, an on-stream barrier). Token counts are per PE. *Round trip "
          "stops mattering*: from this count on, the CPU form is within 10 % of the device path (or faster) at every "
          "larger measured count (never: not in the measured range). *Fixed-cost gap*: the CPU form's alpha minus "
          "the device path's, of t = alpha + tokens x slope fitted to each, its host round trip per call.", "",
          "| benchmark | PEs | device path | CPU form | tokens measured | device faster up to | round trip stops "
          "mattering from | models cross near | fixed-cost gap (µs) |", "|---|---|---|---|---|---|---|---|---|"]
    findings = []
    for p in pairs:
        faster = f"{p['device_faster_up_to']} tokens" if p["device_faster_up_to"] else "never"
        within = f"{p['cpu_within_from']} tokens" if p["cpu_within_from"] else "never"
        cross = f"{p['model_cross_tokens']} tokens" if p["model_cross_tokens"] else "-"
        dev, cpu = analysis.path_name(p["device"]), analysis.path_name(p["cpu"])
        md.append(f"| {p['benchmark']} | {p['num_pes']} | {dev} | {cpu} | {p['tokens'][0]} .. {p['tokens'][-1]} | "
                  f"{faster} | {within} | {cross} | {num(p['fixed_gap_us'])} |")
        last = p["tokens"][-1]
        if not p["device_faster_up_to"]:
            faster_text = f"{cpu} is already as fast at {p['tokens'][0]} tokens"
        elif p["device_faster_up_to"] == last:
            faster_text = f"{dev} is faster at every measured count"
        else:
            faster_text = f"{dev} is faster up to {faster}"
        within_text = (f"the CPU form's round trip stops mattering from {within}" if p["cpu_within_from"] else
                       f"the CPU form's round trip still matters at {last} tokens")
        findings.append(f"{p['benchmark']} at {p['num_pes']} PEs, {dev} against {cpu}: {faster_text}; {within_text}.")
    return md + [""], findings


def projection_section(g):
    """alpha and beta fitted across the measured PE counts and projected beyond them, marked as projection."""
    by_path = {}
    for (bench, n), paths in g.items():
        for p, pts in paths.items():
            by_path.setdefault((bench, p), {})[n] = analysis.fit(pts)
    md = ["## Projection (model, not measurement)", "",
          "For paths measured at two or more PE counts, alpha(n) = a0 + a1 log2 n and 1/beta(n) = b0 + b1 log2 n "
          f"fitted to the measured models and evaluated at {', '.join(map(str, PROJECT_PES))} PEs. These PE counts "
          "were not measured: the rows are projections.", ""]
    rows = []
    for (bench, p), per_n in sorted(by_path.items(), key=lambda kv: (kv[0][0], analysis.path_name(kv[0][1]))):
        at = analysis.scaling(per_n)
        if not at:
            continue
        measured = ", ".join(str(n) for n in sorted(per_n))
        cells = []
        for n in PROJECT_PES:
            alpha, beta = at(n)
            cells.append(f"{num(alpha)} µs, {num(beta)} GB/s")
        rows.append(f"| {bench} | {analysis.path_name(p)} | {measured} | " + " | ".join(cells) + " |")
    if not rows:
        return md + ["No path was measured at two PE counts.", ""]
    head = "| benchmark | path | measured at | " + " | ".join(f"{n} PEs (projected)" for n in PROJECT_PES) + " |"
    return md + [head, "|---|---|---|" + "---|" * len(PROJECT_PES)] + rows + [""]


def defaults_section(g, meta, prior=None):
    """shoal's own on-stream choice against every forced variant, and the defaults the variants give."""
    md = ["## shoal's defaults against the best path", ""]
    rows, findings, table = [], [], {}
    stream_table = []
    for (bench, n), paths in sorted(g.items()):
        if bench not in analysis.TUNED_COLLECTIVES and bench not in analysis.STREAM_BENCHMARKS:
            continue
        if bench in analysis.STREAM_BENCHMARKS:
            d = analysis.stream_defaults(g, n)
            if d and d not in stream_table:
                stream_table.append(d)
        else:
            d = analysis.coll_defaults(g, bench, n)
            if d:
                table.setdefault(bench, []).append(d)
        stream = {p: pts for p, pts in paths.items() if p[0] == "shoal" and p[1] == "stream"}
        default = ("shoal", "stream", "")
        if default not in stream or len(stream) < 2:
            continue
        checks = analysis.default_vs_best(stream, default)
        misses = [c for c in checks if not c[5]]
        for s, t, bp, bt, ratio, ok in checks:
            rows.append([bench, n, s, f"{t:.6g}", analysis.path_name(bp), f"{bt:.6g}", f"{ratio:.4f}", int(ok)])
        worst = max(checks, key=lambda c: c[4])
        findings.append(f"{bench} at {n} PEs on a stream: shoal's default is within 10 % of the best forced path at "
                        f"{len(checks) - len(misses)} of {len(checks)} sizes (worst {worst[4]:.2f}x at "
                        f"{size_text(worst[0])}, best there {analysis.path_name(worst[2])}).")
    if not rows and not table and not stream_table:
        md += ["This run measured no forced variants of the on-stream calls (they need GPU heaps).", ""]
        return {"md": md, "rows": rows, "findings": findings}, None
    if rows:
        md += ["| call | PEs | sizes within 10 % | worst ratio |", "|---|---|---|---|"]
        for bench in analysis.TUNED_COLLECTIVES + analysis.STREAM_BENCHMARKS:
            for n in sorted({r[1] for r in rows if r[0] == bench}):
                mine = [r for r in rows if r[0] == bench and r[1] == n]
                good = sum(r[7] for r in mine)
                md.append(f"| {bench} | {n} | {good}/{len(mine)} | {max(float(r[6]) for r in mine):.2f} |")
        md.append("")
    defaults = None
    if table or stream_table:
        # A run that measured one part keeps the other part of the defaults already in OUT (an earlier run's).
        old = json.loads(prior.read_text()) if prior is not None and prior.exists() else {}
        defaults = {"source": {k: meta[k] for k in ("machine", "commit", "date", "command")},
                    "coll": {**old.get("coll", {}), **table}, "stream_rma": stream_table or old.get("stream_rma", [])}
        if stream_table:
            md += ["On-stream puts and gets take the SM copy kernel up to: " +
                   "; ".join(f"{d['n_pes']} PEs: {size_text(d['kernel_max_bytes']) if d['kernel_max_bytes'] else 'never'}"
                             for d in stream_table) + ".", ""]
        md += ["The defaults these runs give (`defaults.json`; `scripts/study.sh --write-defaults` puts them in "
               "`src/common/tuning_gen.hpp`):", "",
               "| collective | PEs | LL up to | copy engines from | bytes per channel |", "|---|---|---|---|---|"]
        for bench, ds in table.items():
            for d in ds:
                ce = size_text(d["ce_min_bytes"]) if d["ce_min_bytes"] else "never"
                md.append(f"| {bench} | {d['n_pes']} | {size_text(d['ll_max_bytes'])} | {ce} | "
                          f"{size_text(d['bytes_per_channel'])} |")
        md.append("")
    return {"md": md, "rows": rows, "findings": findings}, defaults
