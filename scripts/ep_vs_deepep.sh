#!/usr/bin/env bash
# shoal.ep beside DeepEP V1 on one GPU machine, in one call: builds shoal (Release, the Python package) and DeepEP
# V1 from DEEPEP_SRC side by side, optionally runs DeepEP's own test files against shoal.ep, then alternates DeepEP's
# tuning sweep (its tests/test_intranode.py, unchanged but for the one-GPU harness and the SM count) with shoal's
# (bench/ep/bench_normal.py: the same sweep and timing, plus the raw-copy bound) for every rank and SM count, and
# writes the merged table, CSV and plot (bench/ep/compare_deepep.py). Ranks share the GPU under a private MPS
# daemon when the machine has fewer GPUs than ranks. DeepEP's code stays outside this tree.
#
#   scripts/ep_vs_deepep.sh DEEPEP_SRC        results in $OUT/ep (or ./gpu-out/ep)
#
# SHOAL_EP_RANKS ("2 4"), SHOAL_EP_SMS ("24 12"), SHOAL_EP_ROUNDS (2): the benchmark grid; SHOAL_EP_TESTS=1 also runs
# DeepEP's test_intranode.py and test_low_latency.py against shoal.ep (tests/deepep/run_deepep_tests.py) and shoal's
# own EP tests first; SHOAL_EP_BENCH=0 skips the benchmarks. SHOAL_EP_BUILD: shoal's build folder (build/gpu);
# SHOAL_EP_BUILD_ALL=1 builds every target of it (preset gpu) instead of only the Python package. DeepEP's build
# (without its object files) can be kept for a later machine: SHOAL_EP_DEEPEP_SAVE=FILE.tar.xz writes it after the
# build, SHOAL_EP_DEEPEP_PREBUILT=FILE.tar.xz unpacks it instead of building.
# SHOAL_EP_TEST_TIMEOUT bounds each test run (500 s for the ctests, 900 for DeepEP's files).
# SHOAL_EP_CONFIGS="LABEL[:VAR=V,...] ...": each shoal process measures every config of the normal mode's switches
# (bench_normal.py --configs, in the order given), so that each one is beside the same DeepEP runs; the table then
# has a row per config (labelled) and says which meets 0.9x DeepEP's time where.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
src=$(realpath "${1:?usage: $0 DEEPEP_SRC}")
out=${OUT:-$PWD/gpu-out}/ep
mkdir -p "$out"
source scripts/env.sh
source scripts/mps.sh
B=${SHOAL_EP_BUILD:-build/gpu}
t0=$(date +%s)
el() { echo "$(($(date +%s) - t0)) s"; }

build_shoal() {
  if [[ ${SHOAL_EP_BUILD_ALL:-0} == 1 ]]; then
    cmake --preset gpu -B "$B" >"$out/build_shoal.log" 2>&1 && cmake --build "$B" -j "$(nproc)" >>"$out/build_shoal.log" 2>&1
    return
  fi
  cmake -S . -B "$B" -G Ninja -DCMAKE_BUILD_TYPE=Release -DSHOAL_BUILD_PYTHON=ON >"$out/build_shoal.log" 2>&1 &&
    cmake --build "$B" -j "$(nproc)" --target shoal_py_core shoal_py_ep shoalrun >>"$out/build_shoal.log" 2>&1
}
# DeepEP builds in a copy; the NVSHMEM wheel's headers need CUDA's CCCL folder on its include path.
deepep=/tmp/deepep-build
build_deepep() {
  [[ -f $deepep/.built ]] && return 0
  if [[ -n ${SHOAL_EP_DEEPEP_PREBUILT:-} ]]; then
    rm -rf "$deepep" && mkdir -p "$deepep" && tar -xJf "$SHOAL_EP_DEEPEP_PREBUILT" -C "$deepep" && touch "$deepep/.built"
    return
  fi
  rm -rf "$deepep" && cp -r "$src" "$deepep" || return 1
  local cccl
  cccl=$(dirname "$(dirname "$(command -v nvcc)")")/include/cccl
  sed -i "s|include_dirs = \['csrc/'\]|include_dirs = ['csrc/', '$cccl']|" "$deepep/setup.py"
  (cd "$deepep" && MAX_JOBS=$(nproc) python3 setup.py build_ext --inplace) >"$out/build_deepep.log" 2>&1 &&
    touch "$deepep/.built" || return 1
  if [[ -n ${SHOAL_EP_DEEPEP_SAVE:-} ]]; then
    tar -cJf "$SHOAL_EP_DEEPEP_SAVE" -C "$deepep" --exclude=./build --exclude=./.built . 2>>"$out/build_deepep.log"
  fi
}
build_shoal &
bs=$!
build_deepep &
bd=$!
wait $bs || { echo "shoal build failed:"; grep -E "error|FAILED" "$out/build_shoal.log" | head -20; exit 1; }
wait $bd || { echo "DeepEP build failed:"; tail -20 "$out/build_deepep.log"; exit 1; }
echo "builds: $(el)"
export PYTHONPATH=$PWD/$B/python${PYTHONPATH:+:$PYTHONPATH}

ranks=(${SHOAL_EP_RANKS:-2 4})
max_ranks=0
for r in "${ranks[@]}"; do ((r > max_ranks)) && max_ranks=$r; done
gpus=$(nvidia-smi -L | wc -l)
((gpus < max_ranks)) && mps_start
run_tests=(python3 tests/deepep/run_deepep_tests.py --deepep-src "$src" --timeout "${SHOAL_EP_TEST_TIMEOUT:-900}")

if [[ ${SHOAL_EP_TESTS:-0} == 1 ]]; then
  for t in python_ep_normal_test.np2 python_ep_low_latency_test.np2; do
    timeout 600 ctest --test-dir "$B" -R "^${t//./\\.}\$" --timeout "${SHOAL_EP_TEST_TIMEOUT:-500}" --output-on-failure >"$out/ctest_$t.log" 2>&1
    echo "$t: $(grep -E 'tests passed|tests failed' "$out/ctest_$t.log") ($(el))"
  done
  for t in intranode low_latency; do
    "${run_tests[@]}" --impl shoal --test "$t" --log "$out/deepep_test_${t}_shoal.log" --csv "$out/deepep_tests.csv" \
      >/dev/null 2>&1
    echo "DeepEP test_$t.py against shoal.ep: $(tail -1 "$out/deepep_test_${t}_shoal.log") ($(el))"
  done
fi

if [[ ${SHOAL_EP_BENCH:-1} == 1 ]]; then
  configs=()
  [[ -n ${SHOAL_EP_CONFIGS:-} ]] && read -ra configs <<<"--configs $SHOAL_EP_CONFIGS"
  for round in $(seq "${SHOAL_EP_ROUNDS:-2}"); do
    for r in "${ranks[@]}"; do
      for sms in ${SHOAL_EP_SMS:-24 12}; do
        "${run_tests[@]}" --impl deepep --deepep-build "$deepep" --test intranode --num-processes "$r" --num-sms "$sms" \
          --log "$out/deepep_r${r}_s${sms}_${round}.log" --csv "$out/deepep.csv" >/dev/null 2>&1
        echo "round $round: DeepEP ${r} ranks ${sms} SMs: $(grep -c 'Best' "$out/deepep_r${r}_s${sms}_${round}.log") best rows ($(el))"
        timeout 600 python3 -m torch.distributed.run --nproc_per_node="$r" bench/ep/bench_normal.py --num-sms "$sms" \
          "${configs[@]}" --csv "$out/shoal.csv" >"$out/shoal_r${r}_s${sms}_${round}.log" 2>&1
        echo "round $round: shoal.ep ${r} ranks ${sms} SMs: rc=$? $(grep -c 'Best' "$out/shoal_r${r}_s${sms}_${round}.log") best rows ($(el))"
      done
    done
  done
  python3 bench/ep/compare_deepep.py "$out/deepep.csv" "$out/shoal.csv" -o "$out"
fi
