"""The study's tool (bench/study/): its arithmetic on made-up rows with known answers, the defaults it derives and
the code generator that takes them, and the whole pipeline on host-memory PEs (shoal-bench under shoalrun, rows,
models, crossovers, tables, plots), so that a broken pipeline fails on a CPU machine."""
import csv
import json
import math
import os
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench" / "study"))
sys.path.insert(0, str(ROOT / "codegen"))
import analysis  # noqa: E402
import gen_tuning  # noqa: E402
import plan  # noqa: E402
import report  # noqa: E402


def curve(alpha_us, beta_gbps, sizes):
    return {s: alpha_us + s / (beta_gbps * 1e3) for s in sizes}


SIZES = [8 << (2 * k) for k in range(12)]  # 8 B .. 32 MiB


def test_fit_recovers_a_known_model():
    m = analysis.fit(curve(2.5, 40.0, SIZES))
    assert m["alpha_us"] == pytest.approx(2.5, rel=1e-6)
    assert m["beta_gbps"] == pytest.approx(40.0, rel=1e-6)
    assert m["max_rel_err"] < 1e-9
    assert analysis.fit({8: 1.0}) is None
    flat = analysis.fit({8: 3.0, 64: 3.0, 512: 3.0})
    assert math.isinf(flat["beta_gbps"]) and flat["alpha_us"] == pytest.approx(3.0)


def test_crossover_between_a_cheap_and_a_wide_path():
    # thread-like: 1 µs + 10 GB/s; block-like: 5 µs + 200 GB/s. They cross where 1 + s/1e4 = 5 + s/2e5: s ~ 42105 B.
    paths = {("shoal", "thread", ""): curve(1.0, 10.0, SIZES), ("shoal", "block", ""): curve(5.0, 200.0, SIZES)}
    cross = analysis.crossovers(paths)
    assert len(cross) == 1
    lo, hi, a, b, at = cross[0]
    assert a[1] == "thread" and b[1] == "block"
    assert lo < 42105 <= hi
    assert at == pytest.approx(42105, rel=0.01)
    assert analysis.crossovers({("shoal", "thread", ""): curve(1.0, 10.0, SIZES)}) == []


def coll_rows(bench, n, algos, channels, default):
    """Rows as study.py merges them: the forced variants plus shoal's own choice ('' variant)."""
    rows = []

    def add(variant, pts):
        for s, t in pts.items():
            rows.append({"benchmark": bench, "impl": "shoal", "backend": "cuda", "num_pes": n, "scope": "stream",
                         "size_bytes": s, "latency_us": t, "bandwidth_gbps": 0, "busbw_gbps": 0, "ratio": 0,
                         "variant": variant})
    for a, pts in algos.items():
        add(f"algo={a}", pts)
    for k, pts in channels.items():
        add(f"channels={k}", pts)
    add("", default)
    return rows


def synthetic_broadcast(n=4):
    ll = curve(3.0, 5.0, SIZES)        # cheapest start, narrowest
    direct = curve(8.0, 150.0, SIZES)  # wins from ~27 KiB
    ce = curve(30.0, 400.0, SIZES)     # wins from ~1.9 MiB
    # channels: 1 CTA is slow for big messages, 64 best for big, 4 best in the middle
    channels = {1: curve(8.0, 20.0, SIZES), 4: curve(8.5, 80.0, SIZES), 16: curve(9.0, 140.0, SIZES),
                64: curve(10.0, 160.0, SIZES)}
    default = {s: min(ll[s], direct[s], ce[s]) * (1.3 if s == 2048 else 1.0) for s in SIZES}  # one bad size
    return coll_rows("broadcast", n, {"ll": ll, "direct": direct, "ce": ce}, channels, default)


def test_coll_defaults_from_forced_variants():
    g = analysis.groups(analysis.as_rows(synthetic_broadcast()))
    d = analysis.coll_defaults(g, "broadcast", 4)
    # LL wins while 3 + s/5e3 <= 8 + s/1.5e5: up to s ~ 25862 B; the largest measured size inside is 8 KiB.
    assert d["ll_max_bytes"] == 8 << 10
    # CE beats direct from 8 + s/1.5e5 >= 30 + s/4e5: s >= 5.28 MB; measured sizes from there: 8 MiB and 32 MiB.
    assert d["ce_min_bytes"] == 8 << 20
    assert d["bytes_per_channel"] in analysis.CHANNEL_BYTES
    assert analysis.coll_defaults(g, "allreduce", 4) is None  # no rows


def test_default_check_flags_a_default_off_by_more_than_ten_percent():
    g = analysis.groups(analysis.as_rows(synthetic_broadcast()))
    stream = g[("broadcast", 4)]
    checks = analysis.default_vs_best(stream, ("shoal", "stream", ""))
    bad = [c for c in checks if not c[5]]
    assert [c[0] for c in bad] == [2048]
    assert bad[0][4] == pytest.approx(1.3, rel=1e-6)


def test_projection_fits_log_scaling():
    models = {n: {"alpha_us": 1.0 + 2.0 * math.log2(n), "beta_gbps": 100.0 / math.log2(n)} for n in (2, 4, 8)}
    at = analysis.scaling(models)
    alpha, beta = at(32)
    assert alpha == pytest.approx(11.0, rel=1e-6)
    assert beta == pytest.approx(20.0, rel=1e-6)
    assert analysis.scaling({2: models[2]}) is None


def test_report_writes_defaults_and_the_check(tmp_path):
    rows = synthetic_broadcast(2) + synthetic_broadcast(4)
    meta = {"machine": "test machine", "commit": "0", "date": "today", "platform": "gpu", "command": "test",
            "failed": [], "complete": True}
    written = {p.name for p in report.write([{k: str(v) for k, v in r.items()} for r in rows], tmp_path, meta)}
    assert {"README.md", "models.csv", "crossovers.csv", "default_check.csv", "defaults.json"} <= written
    defaults = json.loads((tmp_path / "defaults.json").read_text())
    assert defaults["source"]["machine"] == "test machine"
    assert [r["n_pes"] for r in defaults["coll"]["broadcast"]] == [2, 4]
    text = (tmp_path / "README.md").read_text()
    assert "| broadcast | 4 | 11/12 | 1.30 |" in text
    assert "Projection (model, not measurement)" in text
    with open(tmp_path / "default_check.csv") as f:
        assert sum(1 for r in csv.DictReader(f) if r["within_10pct"] == "0") == 2  # 2048 B at 2 and at 4 PEs


def test_generator_renders_the_table_and_refuses_bad_rows():
    good = {"source": {"machine": "m", "commit": "c", "date": "d", "command": "x"},
            "coll": {name: [{"n_pes": 2, "ll_max_bytes": 8192, "ce_min_bytes": 0, "bytes_per_channel": 65536},
                            {"n_pes": 8, "ll_max_bytes": 4096, "ce_min_bytes": 1 << 22, "bytes_per_channel": 1 << 17}]
                     for name in gen_tuning.COLLECTIVES},
            "stream_rma": [{"n_pes": 2, "kernel_max_bytes": 16384}]}
    text = gen_tuning.render(good)
    assert "GENERATED by codegen/gen_tuning.py" in text.splitlines()[0]
    assert "{2, 8192u, 0u, 65536u}," in text and "{8, 4096u, 4194304u, 131072u}," in text
    assert "k_stream_rma[] = {" in text and "{2, 16384u}," in text
    bad = json.loads(json.dumps(good))
    del bad["coll"]["fcollect"][0]["bytes_per_channel"]
    with pytest.raises(SystemExit):
        gen_tuning.render(bad)
    bad = json.loads(json.dumps(good))
    bad["coll"]["alltoall"] = []
    with pytest.raises(SystemExit):
        gen_tuning.render(bad)
    bad = json.loads(json.dumps(good))
    del bad["stream_rma"]
    with pytest.raises(SystemExit):
        gen_tuning.render(bad)


def test_checked_in_table_matches_its_defaults():
    r = subprocess.run([sys.executable, str(ROOT / "codegen" / "gen_tuning.py"), "--check"], capture_output=True,
                       text=True)
    assert r.returncode == 0, r.stdout + r.stderr


@pytest.mark.skipif(not os.environ.get("SHOAL_STUDY_BUILD"), reason="SHOAL_STUDY_BUILD (a shoal build) not given")
def test_pipeline_on_host_pes(tmp_path):
    out = tmp_path / "study"
    r = subprocess.run([sys.executable, str(ROOT / "bench" / "study" / "study.py"), "--platform", "host", "--quick",
                        "--out", str(out), "--build", os.environ["SHOAL_STUDY_BUILD"]],
                       capture_output=True, text=True, timeout=240, env={**os.environ, "SHOAL_BACKEND": "host"})
    assert r.returncode == 0, r.stdout + r.stderr
    with open(out / "study.csv") as f:
        rows = list(csv.DictReader(f))
    assert {r["num_pes"] for r in rows} == {"2", "4"}
    assert {"put_bw", "get_bw", "put_quiet_latency", "atomic_latency", "barrier_latency"} <= {r["benchmark"]
                                                                                               for r in rows}
    with open(out / "models.csv") as f:
        models = list(csv.DictReader(f))
    fitted = {(m["benchmark"], m["num_pes"], m["path"]) for m in models}
    assert ("put_bw", "2", "shoal/host") in fitted and ("put_bw", "4", "memcpy/host") in fitted
    assert ("put_bw", "2", "shoal/host/proxy") in fitted  # the proxy path, over UCX on loopback
    assert all(float(m["alpha_us"]) >= 0 for m in models)
    for name in ("put_bw_n2.png", "get_bw_n4.png"):
        data = (out / name).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 5000, name
    text = (out / "README.md").read_text()
    for heading in ("## Measurements", "### put_bw, 2 PEs", "## Models (measured)", "## Projection",
                    "## Findings"):
        assert heading in text, heading
    assert "| 8 B |" in text
    assert not (out / "defaults.json").exists()  # host PEs measure no collective variants


def stream_rows(bench, n, kernel, ce, default):
    rows = []
    for variant, pts in (("stream=kernel", kernel), ("stream=ce", ce), ("", default)):
        for s, t in pts.items():
            rows.append({"benchmark": bench, "impl": "shoal", "backend": "cuda", "num_pes": n, "scope": "stream",
                         "size_bytes": s, "latency_us": t, "bandwidth_gbps": 0, "busbw_gbps": 0, "ratio": 0,
                         "variant": variant})
    return rows


def test_stream_default_is_where_the_kernel_stops_winning(tmp_path):
    kernel = curve(2.0, 20.0, SIZES)  # cheap to start, narrow: wins while 2 + s/2e4 <= 6 + s/2e5, up to ~88.9 KB
    ce = curve(6.0, 200.0, SIZES)
    default = {s: min(kernel[s], ce[s]) for s in SIZES}
    rows = stream_rows("put_on_stream", 2, kernel, ce, default) + stream_rows("get_on_stream", 2, kernel, ce, default)
    g = analysis.groups(analysis.as_rows(rows))
    assert analysis.stream_defaults(g, 2) == {"n_pes": 2, "kernel_max_bytes": 32 << 10}
    assert analysis.stream_defaults(g, 4) is None
    # A report of these rows alone keeps the collectives' part of the defaults already in OUT.
    prior = {"source": {}, "coll": {"broadcast": [{"n_pes": 2, "ll_max_bytes": 1, "ce_min_bytes": 2,
                                                    "bytes_per_channel": 3}]},
             "stream_rma": [{"n_pes": 2, "kernel_max_bytes": 0}]}
    (tmp_path / "defaults.json").write_text(json.dumps(prior))
    meta = {"machine": "m", "commit": "c", "date": "d", "platform": "gpu", "command": "x", "failed": [],
            "complete": True}
    report.write([{k: str(v) for k, v in r.items()} for r in rows], tmp_path, meta)
    d = json.loads((tmp_path / "defaults.json").read_text())
    assert d["stream_rma"] == [{"n_pes": 2, "kernel_max_bytes": 32 << 10}]
    assert d["coll"] == prior["coll"]
    assert "| put_on_stream | 2 | 12/12 |" in (tmp_path / "README.md").read_text()


def test_completion_cost_splits_the_quiet_from_the_puts():
    rows = []
    for k in (1, 4, 16, 64, 256):
        batch = 3.0 + k * 0.25  # a 3 µs quiet, 0.25 µs per put
        rows.append({"benchmark": "quiet_after_k", "impl": "shoal", "num_pes": 2, "scope": f"thread/k={k}",
                     "size_bytes": 64, "latency_us": batch / k})
    put_us, quiet_us, err = analysis.completion_cost(rows)[("shoal", 2, 64)]
    assert put_us == pytest.approx(0.25, rel=1e-6) and quiet_us == pytest.approx(3.0, rel=1e-6) and err < 1e-9


MOE_TOKENS = (128, 512, 2048, 8192, 16384)


def moe_rows(step, impl, scope, alpha_us, us_per_token, n=4, hidden=4096):
    """MoE dispatch rows as study.py merges them (size_bytes = tokens x hidden x 2, the step that measured them)."""
    return [{"benchmark": f"moe_dispatch_h{hidden}", "impl": impl, "backend": "cuda", "num_pes": n, "scope": scope,
             "size_bytes": k * hidden * 2, "latency_us": alpha_us + k * us_per_token, "bandwidth_gbps": 0,
             "busbw_gbps": 0, "ratio": 0, "variant": "", "section": "moe", "step": step} for k in MOE_TOKENS]


def synthetic_moe():
    # The plain kernel: 20 us + 0.1 us/token; its CPU form 120 us + 0.09 us/token. The CPU form is within 10 % from
    # 120 + 0.09k <= 1.1 (20 + 0.1k), k >= 4900 (measured: 8192); the device path is faster while k < 10000.
    # shoal.ep: 50 us + 0.1 us/token against moe_a2a.py's CPU form 1000 us + 0.1 us/token: within 10 % only from
    # k >= 94500 tokens (never here), parallel models.
    return (moe_rows("moe_plain_n4", "shoal", "device", 20.0, 0.1) +
            moe_rows("moe_plain_n4", "cpu", "copy_engine_plain", 120.0, 0.09) +
            moe_rows("moe_n4", "shoal.ep", "normal", 50.0, 0.1) + moe_rows("moe_n4", "cpu", "copy_engine", 1000.0, 0.1))


def test_moe_round_trip_pairs_each_device_path_with_its_own_run():
    pairs = analysis.moe_round_trip(analysis.as_rows(synthetic_moe()))
    got = {(analysis.path_name(p["device"]), analysis.path_name(p["cpu"])): p for p in pairs}
    assert set(got) == {("shoal/device", "cpu/copy_engine_plain"), ("shoal.ep/normal", "cpu/copy_engine")}
    plain = got[("shoal/device", "cpu/copy_engine_plain")]
    assert plain["tokens"] == list(MOE_TOKENS) and plain["num_pes"] == 4
    assert plain["device_faster_up_to"] == 8192 and plain["cpu_within_from"] == 8192
    assert plain["fixed_gap_us"] == pytest.approx(100.0, rel=1e-6)
    assert plain["model_cross_tokens"] == pytest.approx(10000, abs=1)
    ep = got[("shoal.ep/normal", "cpu/copy_engine")]
    assert ep["device_faster_up_to"] == 16384 and ep["cpu_within_from"] == 0
    assert ep["fixed_gap_us"] == pytest.approx(950.0, rel=1e-6) and ep["model_cross_tokens"] is None
    # Rows without a step are one run: every device path against every CPU form.
    no_step = [{k: v for k, v in r.items() if k != "step"} for r in synthetic_moe()]
    assert len(analysis.moe_round_trip(analysis.as_rows(no_step))) == 4


def test_report_shows_the_plain_kernel_in_the_moe_section(tmp_path):
    meta = {"machine": "m", "commit": "c", "date": "d", "platform": "gpu", "command": "x", "failed": [],
            "complete": True}
    report.write([{k: str(v) for k, v in r.items()} for r in synthetic_moe()], tmp_path, meta)
    text = (tmp_path / "README.md").read_text()
    assert "## MoE dispatch: device-initiated against CPU-orchestrated (measured)" in text
    assert ("| moe_dispatch_h4096 | 4 | shoal/device | cpu/copy_engine_plain | 128 .. 16384 | 8192 tokens | "
            "8192 tokens | 10000 tokens | 100 |") in text
    assert ("| moe_dispatch_h4096 | 4 | shoal.ep/normal | cpu/copy_engine | 128 .. 16384 | 16384 tokens | never | - "
            "| 950 |") in text
    # The plain kernel and its CPU form are paths of their own in the benchmark's table (and its figure).
    table = text.split("### moe_dispatch_h4096, 4 PEs", 1)[1].split("\n\n", 2)[1]
    for name in ("shoal/device", "cpu/copy_engine_plain", "shoal.ep/normal", "cpu/copy_engine"):
        assert f" {name} |" in table.splitlines()[0], name
    assert ("shoal/device against cpu/copy_engine_plain: shoal/device is faster up to 8192 tokens; the CPU form's "
            "round trip stops mattering from 8192 tokens.") in text
    assert ("shoal.ep/normal against cpu/copy_engine: shoal.ep/normal is faster at every measured count; the CPU "
            "form's round trip still matters at 16384 tokens.") in text


def test_gpu_plan_runs_the_plain_moe_kernel_at_each_pe_count():
    steps = {s.name: s for s in plan.gpu_plan(quick=True, pes=(2, 4))}
    for n in (2, 4):
        st = steps[f"moe_plain_n{n}"]
        assert st.section == "moe" and st.pes == n and st.program == plan.MOE_PLAIN_PROGRAM and not st.script
        assert st.args[:1] == ["--tokens"] and steps[f"moe_n{n}"].args == st.args  # the same token counts


def test_dry_run_lists_the_plain_moe_step(tmp_path):
    # A dry run lists the steps without a build.
    r = subprocess.run([sys.executable, str(ROOT / "bench" / "study" / "study.py"), "--platform", "gpu", "--dry-run",
                        "--quick", "--only", "moe", "--pes", "2", "--build", str(tmp_path / "no_build"),
                        "--out", str(tmp_path / "out")], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "study: moe_n2: torch.distributed.run --nproc_per_node=2 bench/study/moe_a2a.py" in r.stdout
    assert "study: moe_plain_n2: shoalrun -n 2 -- shoal-bench-moe --tokens 128 2048" in r.stdout
    assert not (tmp_path / "out").exists()
