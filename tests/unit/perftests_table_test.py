#!/usr/bin/env python3
"""scripts/nvshmem_perftests_table.py on a synthetic OUT of scripts/nvshmem_perftests.sh (no GPU): the figures of
both sides' logs (shoalrun's "[PE] " prefix and mpirun's bare lines, NVSHMEM_MACHINE_READABLE_OUTPUT's format) go to
results.csv; summary.md says per program what built and ran, with the first error line of a failed build or run,
and puts shoal beside NVSHMEM with the ratio oriented so that above 1 is shoal better, for latency and bandwidth.

Usage: perftests_table_test.py SOURCE_DIR"""
import csv
import pathlib
import subprocess
import sys
import tempfile


def write(path: pathlib.Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def main() -> int:
    src = pathlib.Path(sys.argv[1])
    with tempfile.TemporaryDirectory() as tmp:
        out = pathlib.Path(tmp)
        bw, lat, rdx, host = ("device/pt-to-pt/shmem_put_bw.cu", "device/pt-to-pt/shmem_p_latency.cu",
                              "device/coll/redmaxloc_latency.cu", "host/pt-to-pt/latency.cpp")
        write(out / "build.csv", "".join(f"{impl},{p},{state}\n" for impl in ("shoal", "nvshmem")
                                         for p, state in ((bw, "ok"), (lat, "ok"), (rdx, "compile"), (host, "ok"))))
        for impl in ("shoal", "nvshmem"):
            write(out / "build" / impl / "device/coll/redmaxloc_latency.log",
                  "nvcc ...\nredmaxloc_latency.cu(135): error: identifier \"MAX_ELEMS\" is undefined\n")
        write(out / "runs.csv", "\n".join([
            'shoal,device/pt-to-pt/shmem_put_bw.cu,1,"-b 8 -e 16",0',
            'nvshmem,device/pt-to-pt/shmem_put_bw.cu,1,"-b 8 -e 16",0',
            'shoal,device/pt-to-pt/shmem_p_latency.cu,1,"",0',
            'nvshmem,device/pt-to-pt/shmem_p_latency.cu,1,"",0',
            'shoal,host/pt-to-pt/latency.cpp,1,"",0',
            'nvshmem,host/pt-to-pt/latency.cpp,1,"",124',
        ]) + "\n")
        logs = out / "logs"
        write(logs / "shoal/device_pt-to-pt_shmem_put_bw.1.log",
              "[0] shmem_put_bw\n[0] &&&& PERF shmem_put_bw___block___size__8___BW 10.500000 +GB/sec\n"
              "[0] &&&& PERF shmem_put_bw___block___size__16___BW 21.000000 +GB/sec\n")
        write(logs / "nvshmem/device_pt-to-pt_shmem_put_bw.1.log",
              "shmem_put_bw\n&&&& PERF shmem_put_bw___block___size__8___BW 7.000000 +GB/sec\n"
              "&&&& PERF shmem_put_bw___block___size__16___BW 28.000000 +GB/sec\n")
        write(logs / "shoal/device_pt-to-pt_shmem_p_latency.1.log",
              "[1] &&&& PERF shmem_p_latency___thread___size__4___latency 2.000000 -us\n")
        write(logs / "nvshmem/device_pt-to-pt_shmem_p_latency.1.log",
              "&&&& PERF shmem_p_latency___thread___size__4___latency 3.000000 -us\n")
        write(logs / "shoal/host_pt-to-pt_latency.1.log", "&&&& PERF latency___host___size__8___latency 5.0 -us\n")
        write(logs / "nvshmem/host_pt-to-pt_latency.1.log", "init ok\nbootstrap failed: timed out waiting\n")
        rc = subprocess.run([sys.executable, str(src / "scripts/nvshmem_perftests_table.py"), str(out), str(out)],
                            capture_output=True, text=True)
        assert rc.returncode == 0, rc.stdout + rc.stderr
        rows = list(csv.DictReader((out / "results.csv").open()))
        got = {(r["impl"], r["job"], r["subjob"], r["size"], r["metric"]): (float(r["value"]), r["higher_is_better"])
               for r in rows}
        assert len(rows) == 7, rows
        assert got[("shoal", "shmem_put_bw", "block", "8", "BW")] == (10.5, "True")
        assert got[("nvshmem", "shmem_put_bw", "block", "16", "BW")] == (28.0, "True")
        assert got[("shoal", "shmem_p_latency", "thread", "4", "latency")] == (2.0, "False")
        md = (out / "summary.md").read_text()

        def line_of(start: str) -> str:
            hit = [ln for ln in md.splitlines() if ln.startswith(start)]
            assert len(hit) == 1, (start, md)
            return hit[0]

        assert line_of(f"| `{bw}` |") == f"| `{bw}` | ok (1 run) | ok (1 run) |"
        assert "does not compile: redmaxloc_latency.cu(135): error: identifier" in line_of(f"| `{rdx}` |")
        host_line = line_of(f"| `{host}` |")
        assert host_line.startswith(f"| `{host}` | ok (1 run) | exit 124 []: bootstrap failed: timed out"), host_line
        # Ratios: bandwidth shoal / NVSHMEM (10.5 / 7 = 1.50, 21 / 28 = 0.75), latency NVSHMEM / shoal (3 / 2).
        assert line_of("| 8 | 10.500 | 7.000 |") == "| 8 | 10.500 | 7.000 | 1.50 |"
        assert line_of("| 16 | 21.000 | 28.000 |") == "| 16 | 21.000 | 28.000 | 0.75 |"
        assert line_of("| 4 | 2.000 | 3.000 |") == "| 4 | 2.000 | 3.000 | 1.50 |"
        assert line_of("| 8 | 5.000 |  |") == "| 8 | 5.000 |  |  |"  # a figure of one side only: no ratio
    print("ok: perftests table: figures of both sides, build and run failures named, ratios oriented")
    return 0


if __name__ == "__main__":
    sys.exit(main())
