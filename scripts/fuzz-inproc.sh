#!/usr/bin/env bash
# Issue 12, section 2 by hand: the in-process libFuzzer targets for longer
# than CI's bounded runs, each over a corpus kept between runs (seeded from
# its seed program the first time), with ASan and UBSan.
#   scripts/fuzz-inproc.sh [SECONDS_EACH] [TARGETS...]
#     default: 600 s each of fuzz_engine_rx fuzz_model_rx fuzz_cm fuzz_decode fuzz_control
# Environment: BUILD_DIR (default build-fuzz, configured here with clang-14),
# CORPUS_DIR (default /tmp/simnic-fuzz-corpus), JOBS (parallel fuzzing
# processes per target, default 1). Crashes land in $CORPUS_DIR/<target>.crashes.
# Per target it prints libFuzzer's final stats (runs, executions per second)
# and the coverage reached (cov: edges, ft: features).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-600}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(fuzz_engine_rx fuzz_model_rx fuzz_cm fuzz_decode fuzz_control)
B=$(realpath -m "${BUILD_DIR:-build-fuzz}")
C=${CORPUS_DIR:-/tmp/simnic-fuzz-corpus}
jobs=${JOBS:-1}
if [ ! -f "$B/CMakeCache.txt" ]; then
  cmake -S . -B "$B" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 -DSIMNIC_SANITIZE=ON -DSIMNIC_FUZZ=ON
fi
seeds_of() {
  case $1 in
    fuzz_engine_rx | fuzz_model_rx) echo fuzz_make_engine_seeds ;;
    fuzz_cm) echo fuzz_make_cm_seeds ;;
    fuzz_decode) echo fuzz_make_seeds ;;
    fuzz_control) echo fuzz_make_control_seeds ;;
    *) echo "unknown target $1" >&2; exit 2 ;;
  esac
}
build_targets=()
for t in "${targets[@]}"; do build_targets+=("$t" "$(seeds_of "$t")"); done
cmake --build "$B" -j2 --target "${build_targets[@]}"
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
bad=0
for t in "${targets[@]}"; do
  # A model device's SystemC context leaks its threads' stacks when deleted.
  leaks=1
  [ "$t" != fuzz_model_rx ] || leaks=0
  export ASAN_OPTIONS=detect_leaks=$leaks:abort_on_error=1
  mkdir -p "$C/$t" "$C/$t.crashes"
  [ -n "$(ls -A "$C/$t")" ] || "$B/testbench/fuzz/$(seeds_of "$t")" "$C/$t"
  log="$C/$t.log"
  # Several jobs: libFuzzer writes each one's log as fuzz-N.log in the
  # current directory (here $C/$t.jobs).
  par=()
  if [ "$jobs" -gt 1 ]; then
    mkdir -p "$C/$t.jobs"
    par=(-jobs="$jobs" -workers="$jobs")
  fi
  if ! (cd "$C/$t.jobs" 2>/dev/null || cd "$C"; "$B/testbench/fuzz/$t" -max_total_time="$seconds" \
      -rss_limit_mb=2048 -print_final_stats=1 "${par[@]}" -artifact_prefix="$C/$t.crashes/" "$C/$t") >"$log" 2>&1; then
    bad=$((bad + 1))
    echo "$t: FAILED, see $log and $C/$t.crashes"
  fi
  # Only the logs that exist: under pipefail, grep's status 2 for a missing
  # file (no $C/$t.jobs with one job) ended the script after its first target.
  logs=("$log")
  [ "$jobs" -le 1 ] || logs+=("$C/$t.jobs"/fuzz-*.log)
  echo "$t: $(grep -hE 'DONE' "${logs[@]}" | tail -1)"
  grep -hE '^stat::(number_of_executed_units|average_exec_per_sec)' "${logs[@]}" | tr '\n' ' ' || true
  echo
done
[ "$bad" -eq 0 ]
