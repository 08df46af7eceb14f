#!/usr/bin/env bash
# shoal-bench's --help and the scripts around it: --help names every benchmark (each one accepted),
# the committed result CSVs under docs/results/ have the columns shoal-bench writes today, and
# bench/plot.py says how to get matplotlib when it is missing and draws single-point benchmarks
# (barrier, atomic, one-size ping-pong) as bar charts.
# Usage: bench_tools_test.sh SHOAL_BENCH SHOALRUN SOURCE_DIR
set -u
bench=${1:?usage: bench_tools_test.sh SHOAL_BENCH SHOALRUN SOURCE_DIR}
shoalrun=${2:?}
src=${3:?}
source "$(dirname "$0")/check_lib.sh"

# --- --help lists the benchmarks; every name it lists is one shoal-bench accepts.
"$bench" --help >"$tmp/help" 2>&1
names=$(sed -n '/^Benchmarks/,/^Run between/p' "$tmp/help" | grep -E '^    ' | tr -s ' ' '\n' | grep . | sort -u)
unknown=""
for n in $names; do
  # One process: after the name check it stops for want of a second PE (status 2), not "unknown".
  timeout 20 "$bench" "$n" >"$tmp/one" 2>&1
  grep -q "unknown benchmark" "$tmp/one" && unknown="$unknown $n"
done
timeout 20 "$bench" no_such_benchmark >"$tmp/one" 2>&1
if [ "$(wc -w <<<"$names")" -ge 6 ] && grep -qw put_bw <<<"$names" && grep -qw barrier_latency <<<"$names" &&
  [ -z "$unknown" ] && grep -q "unknown benchmark 'no_such_benchmark'" "$tmp/one"; then
  pass "--help lists $(wc -w <<<"$names") benchmarks, all accepted"
else
  fail "--help benchmark list (names: $(echo $names); rejected:$unknown)"
  cat "$tmp/help"
fi

# --- docs/results/: every CSV has the header shoal-bench writes now (scale.py writes it with \r\n);
# docs/results/ep/ holds bench/ep/*.py's own columns (DeepEP's way of reporting).
if timeout 60 "$shoalrun" -n 2 --timeout 50 -- "$bench" barrier_latency -n 5 -w 1 -r 1 --csv "$tmp/now.csv" \
  >"$tmp/run" 2>&1; then
  want=$(head -1 "$tmp/now.csv")
  stale=""
  while IFS= read -r f; do
    [ "$(head -1 "$f" | tr -d '\r')" = "$want" ] || stale="$stale ${f#"$src"/}"
  done < <(find "$src/docs/results" -name '*.csv' -not -path '*/results/ep/*')
  if [ -z "$stale" ]; then
    pass "docs/results CSVs have today's columns"
  else
    fail "docs/results CSVs with other columns than '$want':$stale"
  fi
else
  fail "shoal-bench barrier_latency on 2 PEs"; cat "$tmp/run"
fi

# --- plot.py without matplotlib: a message saying how to install it, not a traceback.
mkdir -p "$tmp/nompl/matplotlib"
echo 'raise ImportError("hidden by bench_tools_test")' >"$tmp/nompl/matplotlib/__init__.py"
PYTHONPATH="$tmp/nompl" python3 "$src/bench/plot.py" "$tmp/none.csv" -o "$tmp/p" >"$tmp/out" 2>&1
rc=$?
if [ "$rc" -ne 0 ] && grep -q "plot.py needs matplotlib" "$tmp/out" && grep -q "apt-get install python3-matplotlib" "$tmp/out" &&
  ! grep -q Traceback "$tmp/out"; then
  pass "plot.py without matplotlib says how to install it"
else
  fail "plot.py without matplotlib (rc $rc)"; cat "$tmp/out"
fi

# --- plot.py: curves where there are sizes to join, bars where there is one point per curve.
if python3 -c 'import matplotlib' 2>/dev/null; then
  cat >"$tmp/r.csv" <<'CSV'
benchmark,impl,backend,num_pes,scope,size_bytes,iterations,latency_us,bandwidth_gbps,ratio,baseline,busbw_gbps,pair
put_bw,shoal,host,2,host,8,100,0.0261,0.3060,0.1228,memcpy,0.0000,
put_bw,shoal,host,2,host,64,100,0.0281,2.3060,0.1228,memcpy,0.0000,
barrier_latency,shoal,host,2,host,0,100,0.2640,0.0000,0.0000,,0.0000,
atomic_latency,shoal,host,2,host,8,100,0.0260,0.0000,12.5050,local std::atomic,0.0000,
atomic_latency,local,host,2,host,8,100,0.0020,0.0000,0.0000,,0.0000,
p_ping_pong,shoal,cuda,2,thread,4,1000,0.8151,0.0000,1.1528,raw,0.0000,0-1
CSV
  python3 "$src/bench/plot.py" "$tmp/r.csv" -o "$tmp/plots" >"$tmp/out" 2>&1
  rc=$?
  ok=1
  for b in barrier_latency atomic_latency p_ping_pong; do
    grep -qx "wrote $tmp/plots/$b.png (bars)" "$tmp/out" || ok=0
  done
  grep -qx "wrote $tmp/plots/put_bw.png" "$tmp/out" || ok=0
  for f in "$tmp"/plots/*.png; do [ -s "$f" ] || ok=0; done
  if [ "$rc" -eq 0 ] && [ "$ok" -eq 1 ]; then
    pass "plot.py: bars for single-point benchmarks, curves for put_bw"
  else
    fail "plot.py chart kinds (rc $rc)"; cat "$tmp/out"
  fi
else
  echo "skipped: plot.py drawing (no matplotlib)"
fi

finish_checks "bench tool"
