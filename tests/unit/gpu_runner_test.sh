#!/usr/bin/env bash
# scripts/gpu.sh without a GPU: --help documents every step and option; --dry-run plans the expected commands in
# order for a few option sets; and real runs against stand-in cmake, ctest, nvidia-smi and MPS control programs
# (first on PATH) record parts in the state, skip the done ones with --resume, refuse a part that does not fit
# the budget, run risky tests last, fail on a failing test, and stop the MPS daemon they started.
# Usage: gpu_runner_test.sh SOURCE_DIR
set -u
src=${1:?usage: gpu_runner_test.sh SOURCE_DIR}
runner=$src/scripts/gpu.sh
# shellcheck source=tests/unit/check_lib.sh
source "$(dirname "$0")/check_lib.sh"

# --- stand-ins ------------------------------------------------------------------------------------------------------
fake=$tmp/bin
mkdir -p "$fake"
calls=$tmp/calls
: >"$calls"
cat >"$fake/cmake" <<EOF
#!/usr/bin/env bash
echo "cmake \$*" >>"$calls"
exit \${FAKE_CMAKE_RC:-0}
EOF
# ctest: a JSON listing of three GPU tests (b.np2 labelled risky), or one test's run: "Passed", unless its name is
# in FAKE_FAIL.
cat >"$fake/ctest" <<EOF
#!/usr/bin/env bash
if [[ " \$* " == *" --show-only=json-v1 "* ]]; then
  cat <<'JSON'
{"kind": "ctestInfo", "tests": [
 {"name": "b.np2", "properties": [{"name": "LABELS", "value": ["gpu", "risky"]}, {"name": "TIMEOUT", "value": 150.0}]},
 {"name": "a.np2", "properties": [{"name": "LABELS", "value": ["gpu"]}, {"name": "TIMEOUT", "value": 40.0}]},
 {"name": "c.np2", "properties": [{"name": "LABELS", "value": ["gpu", "mp"]}, {"name": "TIMEOUT", "value": 30.0}]}]}
JSON
  exit 0
fi
echo "ctest \$*" >>"$calls"
sleep "\${FAKE_SLEEP:-0}"
while [[ \$# -gt 0 ]]; do [[ \$1 == -R ]] && re=\$2; shift; done
name=\${re#^}; name=\${name%\\$}; name=\${name//\\\\/}
if [[ " \${FAKE_FAIL:-} " == *" \$name "* ]]; then
  echo "1/1 Test #1: \$name .....***Failed    0.01 sec"; exit 8
fi
echo "1/1 Test #1: \$name .....   Passed    0.01 sec"
echo "100% tests passed out of 1"  # CMake 4's wording
EOF
printf '#!/bin/sh\nexit 0\n' >"$fake/nvidia-smi"  # no GPU listed
printf '#!/bin/sh\nexit 0\n' >"$fake/nvcc"
cat >"$fake/nvidia-cuda-mps-control" <<EOF
#!/usr/bin/env bash
if [[ \${1:-} == -d ]]; then echo "mps start" >>"$calls"; else echo "mps \$(cat)" >>"$calls"; fi
EOF
chmod +x "$fake"/*
export PATH=$fake:$PATH
unset OUT SHOAL_UCX_WHEEL SHOAL_NVSHMEM_HOME SHOAL_NVSHMEM_BUNDLE CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY
bdir=$tmp/build
mkdir -p "$bdir"
touch "$bdir/CTestTestfile.cmake"
run() { "$runner" --build-dir "$bdir" "$@" >"$tmp/stdout" 2>&1; }
# in_order FILE PATTERN...: each pattern (grep -E) on a line after the previous one's.
in_order() {
  local file=$1 at=0 n
  shift
  for p in "$@"; do
    n=$(tail -n +$((at + 1)) "$file" | grep -nE -m1 -- "$p" | cut -d: -f1)
    [[ -n $n ]] || { echo "  missing (in order): $p"; return 1; }
    at=$((at + n))
  done
}

# --- --help ---------------------------------------------------------------------------------------------------------
if "$runner" --help >"$tmp/help" 2>&1; then
  missing=""
  for w in build test rma coll variants collsweep scale proxy ep-bench ep-ab ab ab-test repeat ep perftests \
    --out --budget --margin --resume --mps --no-mps --preset --ucx-bundle --nvshmem-home --nvshmem-bundle --pes \
    --test-pes --risky --rounds --dry-run "Exit status"; do
    grep -qE -- "(^| )$w( |,|:|$)" "$tmp/help" || missing="$missing $w"
  done
  if [[ -z $missing ]]; then pass "--help names every step and option"; else fail "--help lacks:$missing"; fi
else
  fail "--help exited non-zero"
fi
"$runner" >"$tmp/none" 2>&1
rc=$?
"$runner" no_such_step >"$tmp/bad" 2>&1
rc2=$?
"$runner" ab >"$tmp/noarg" 2>&1
rc3=$?
if ((rc == 2 && rc2 == 2 && rc3 == 2)) && grep -q "not a step" "$tmp/bad" && grep -q "ab needs" "$tmp/noarg"; then
  pass "no step, an unknown step and a missing argument are usage errors (2)"
else
  fail "usage errors: rc $rc $rc2 $rc3"
fi

# --- --dry-run ------------------------------------------------------------------------------------------------------
: >"$calls"
if run --dry-run --out "$tmp/d1" rma -- -e 64M && in_order "$tmp/stdout" '^\[build\]' \
  "cmake --preset gpu -B $bdir -DSHOAL_GPU_TEST_PES=2" "cmake --build $bdir .*--target shoal-bench shoalrun" \
  '^\[rma\]' "shoalrun -n 2 .*shoal-bench put_bw get_bw .* -e 64M --csv $tmp/d1/bench/shoal.csv" \
  'bench/compare.py' 'bench/plot.py' && [[ ! -s $calls && ! -e $tmp/d1/state.tsv ]]; then
  pass "dry run of rma: a build of the benchmarks first, then shoal-bench with the passed options, compare, plot"
else
  fail "dry run of rma"
  cat "$tmp/stdout"
fi
if run --dry-run --out "$tmp/d2" --ucx-bundle "$tmp/ucx-1.22.0.tar.xz" --nvshmem-bundle "$tmp/nvshmem-3.8.0.tar.xz" \
  --test-pes "2;4" test && in_order "$tmp/stdout" "scripts/ucx_wheel.sh $tmp/ucx-1.22.0.tar.xz" \
  "cmake --preset gpu-proxy .*'-DSHOAL_GPU_TEST_PES=2;4'.*-DSHOAL_NVSHMEM_EXTRA_HOMES=.*nvshmem-3.8.0/nvshmem -Ducx_DIR=" \
  "cmake --build $bdir -j [0-9]+\$" '^\[test/a.np2\] ~40 s' '^\[test/c.np2\] ~30 s' '^\[test/b.np2\] ~60 s' \
  "ctest --test-dir $bdir -R '\^b\\\\.np2\\$'"; then
  pass "dry run with both bundles: preset gpu-proxy, the whole build, one part per test, the risky one last"
else
  fail "dry run with bundles"
  cat "$tmp/stdout"
fi
if run --dry-run --out "$tmp/d3" --no-build repeat x.np2 3 ab /base && ! grep -q "cmake --preset" "$tmp/stdout" &&
  [[ $(grep -c "ctest --test-dir $bdir -R '^x\\\\.np2\\$'" "$tmp/stdout") == 3 ]] &&
  in_order "$tmp/stdout" '^\[repeat/x.np2/3\]' '^\[ab/build\]' 'cmake -S /base -B build/ab-base' \
    'cmake -S \. -B build/ab-new' '^\[ab/round4\]' 'build/ab-new/bench/shoal-bench' 'bench/ab_compare.py'; then
  pass "dry run of --no-build repeat and ab: three runs, both trees built alike, four rounds, the table"
else
  fail "dry run of repeat and ab"
  cat "$tmp/stdout"
fi
if SHOAL_EP_AB_RANKS="2 4" run --dry-run --out "$tmp/d5" --rounds 3 ep-ab off on:SHOAL_EP_SELF_DIRECT=1,SHOAL_EP_INTERLEAVE=1 &&
  in_order "$tmp/stdout" "cmake --build $bdir .*shoal_py_core shoal_py_ep" '^\[ep-ab/r2_s24\] ~102 s' \
    "PYTHONPATH=$bdir/python timeout -k 10 306 .*--nproc_per_node=2 bench/ep/bench_normal.py --num-sms 24 --configs off on:SHOAL_EP_SELF_DIRECT=1,SHOAL_EP_INTERLEAVE=1 --rounds 3 " \
    '^\[ep-ab/r4_s24\]' '--nproc_per_node=4 ' 'bench/ep/ab_ep.py .* --base off' &&
  { run --dry-run --out "$tmp/d6" ep-ab 'bad label:SHOAL_EP_INTERLEAVE=1'; grep -q "a CONFIG is LABEL" "$tmp/stdout"; } &&
  grep -q "failed: ep-ab" "$tmp/stdout" &&
  { run --dry-run --out "$tmp/d6b" ep-ab off x:SHOAL_EP_TIMEOUT_S=1; grep -q "VAR one of SHOAL_EP_L2_DISCARD" "$tmp/stdout"; } &&
  { run --dry-run --out "$tmp/d6c" ep-ab off x:SHOAL_EP_INTERLEAVE=2; grep -q "failed: ep-ab" "$tmp/stdout"; }; then
  pass "dry run of ep-ab: the Python package built, one process per rank count with every config and round, compared to the first; bad configs refused"
else
  fail "dry run of ep-ab"
  cat "$tmp/stdout"
fi
if SHOAL_EP_CONFIGS="off on:SHOAL_EP_INTERLEAVE=1" run --dry-run --out "$tmp/d6d" --no-build ep /src &&
  in_order "$tmp/stdout" '^\[ep\] ~600 s' 'scripts/ep_vs_deepep.sh /src' &&
  { SHOAL_EP_CONFIGS="off x:SHOAL_EP_TIMEOUT_S=1" run --dry-run --out "$tmp/d6e" --no-build ep /src
    grep -q "^ep: 'x:SHOAL_EP_TIMEOUT_S=1': a CONFIG is LABEL" "$tmp/stdout" && grep -q "failed: ep" "$tmp/stdout" &&
    ! grep -q "ep_vs_deepep.sh" "$tmp/stdout"; }; then
  pass "dry run of ep with SHOAL_EP_CONFIGS: the configs checked before anything runs, a bad one refused"
else
  fail "dry run of ep with SHOAL_EP_CONFIGS"
  cat "$tmp/stdout"
fi
if run --dry-run --out "$tmp/d7" --no-build perftests /src &&
  in_order "$tmp/stdout" '^\[perftests/build\]' 'BUILD_ONLY=1' '^\[perftests/run-device-pt-to-pt\]' \
    'RUN_ONLY=1 ONLY=\^device/pt-to-pt/ PES=2 scripts/nvshmem_perftests.sh /src' '^\[perftests/run-device-coll\]' \
    '^\[perftests/run-device-tile\]' '^\[perftests/run-host\]' 'ONLY=\^host/'; then
  pass "dry run of perftests: the build, then one run part per group of programs"
else
  fail "dry run of perftests"
  cat "$tmp/stdout"
fi
if run --dry-run --out "$tmp/d4" --budget 900 --margin 30 build rma coll &&
  in_order "$tmp/stdout" '^\[build\] ~480 s, from 0 s' '^\[rma\] ~330 s, from 480 s' \
    '^coll +not started: needs ~300 s, 60 s left of the budget' 'left for a --resume call: coll'; then
  pass "dry run with --budget: parts that fit are planned, the first that does not is refused"
else
  fail "dry run with a budget"
  cat "$tmp/stdout"
fi

# --- real runs against the stand-ins --------------------------------------------------------------------------------
o=$tmp/r1
: >"$calls"
run --out "$o" build test
rc=$?
if ((rc == 0)) && in_order "$calls" "^cmake --preset gpu -B $bdir" "^cmake --build $bdir" "^ctest .*-R \^a" \
  "^ctest .*-R \^c" "^ctest .*-R \^b" && [[ $(cut -f1,2 "$o/state.tsv" | tr '\t\n' ': ') == \
  "build:passed test/a.np2:passed test/c.np2:passed test/b.np2:passed " ]] && [[ -s $o/logs/test_a.np2.log ]] &&
  grep -q "4 part(s) run" "$o/summary.txt"; then
  pass "a run records the build and each test in the state, the risky test last, logs per part, a summary"
else
  fail "first run (rc=$rc)"
  cat "$tmp/stdout" "$calls" "$o/state.tsv"
fi
: >"$calls"
run --out "$o" --resume build test
rc=$?
if ((rc == 0)) && [[ ! -s $calls ]] && [[ $(grep -c "done earlier:" "$tmp/stdout") == 4 ]]; then
  pass "--resume skips every part done"
else
  fail "--resume ran parts again (rc=$rc)"
  cat "$tmp/stdout" "$calls"
fi
: >"$calls"
sed -i '/^test\/b.np2/d' "$o/state.tsv"
run --out "$o" --resume test
if [[ $(cat "$calls") == "ctest --test-dir $bdir -R ^b\\.np2\$ -V --timeout 150" ]]; then
  pass "--resume runs what the state lacks, and only that"
else
  fail "--resume with one part left"
  cat "$calls"
fi
: >"$calls"
run --out "$tmp/r2" --budget 100 --margin 10 build test
rc=$?
if ((rc == 3)) && [[ ! -s $calls ]] && grep -Eq "^build .*not started: needs ~480 s, (90|8[0-9]) s left" "$tmp/stdout" &&
  grep -q "left for a --resume call: build test/a.np2 test/c.np2 test/b.np2" "$tmp/stdout"; then
  pass "--budget refuses a build that cannot fit: nothing runs, everything is left, exit 3"
else
  fail "--budget with a build (rc=$rc)"
  cat "$tmp/stdout" "$calls"
fi
: >"$calls"
FAKE_SLEEP=2 run --out "$tmp/r3" --no-build --budget 72 --margin 10 test
rc=$?
if ((rc == 3)) && [[ $(grep -c "^ctest" "$calls") == 2 ]] && grep -q "^test/b.np2 .*not started: needs ~60 s" \
  "$tmp/stdout"; then
  : >"$calls"
  run --out "$tmp/r3" --no-build --resume --budget 300 --margin 10 test  # room for b whatever the start took
  rc=$?
  if ((rc == 0)) && [[ $(cat "$calls") == *"-R ^b\\.np2\$"* && $(grep -c "^ctest" "$calls") == 1 ]]; then
    pass "--budget starts the tests that fit and leaves the next; --resume then runs only that one"
  else
    fail "the resumed call after a budget stop (rc=$rc)"
    cat "$tmp/stdout" "$calls"
  fi
else
  fail "--budget between tests (rc=$rc)"
  cat "$tmp/stdout" "$calls"
fi
: >"$calls"
FAKE_FAIL=a.np2 run --out "$tmp/r4" --no-build --mps test
rc=$?
if ((rc == 1)) && grep -q "^test/a.np2 .*failed" "$tmp/stdout" && grep -q "failed: test/a.np2" "$tmp/stdout" &&
  in_order "$calls" "^mps start" "^ctest" "^mps quit" && [[ $(tail -1 "$calls") == "mps quit" ]]; then
  pass "a failing test fails the run (exit 1); --mps starts the daemon first and stops it at the end"
else
  fail "failing test under --mps (rc=$rc)"
  cat "$tmp/stdout" "$calls"
fi
: >"$calls"
FAKE_CMAKE_RC=1 run --out "$tmp/r5" build test
rc=$?
if ((rc == 1)) && [[ $(grep -c . "$calls") == 1 ]] && ! grep -q "^build" "$tmp/r5/state.tsv" &&
  grep -q "not run (the build failed)" "$tmp/stdout"; then
  pass "a failed configure stops the run, stays out of the state, exit 1"
else
  fail "failed build (rc=$rc)"
  cat "$tmp/stdout" "$calls"
fi
run --out "$tmp/r6" --no-build repeat a.np2 2
rc=$?
if ((rc == 0)) && grep -q "repeat a.np2: 0 of 2 runs failed" "$tmp/stdout" && [[ ! -e $tmp/r6/repeat/fail_1.log ]]; then
  pass "repeat: runs of a passing test count as passed (ctest's exit status and its summary line)"
else
  fail "repeat of a passing test (rc=$rc)"
  cat "$tmp/stdout"
fi
FAKE_FAIL=a.np2 run --out "$tmp/r7" --no-build repeat a.np2 2
rc=$?
if ((rc == 1)) && grep -q "repeat a.np2: 2 of 2 runs failed" "$tmp/stdout" && [[ -s $tmp/r7/repeat/fail_2.log ]]; then
  pass "repeat: failing runs are counted and their logs kept"
else
  fail "repeat of a failing test (rc=$rc)"
  cat "$tmp/stdout"
fi
finish_checks gpu_runner
