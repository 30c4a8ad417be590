#!/usr/bin/env bash
# Command 2 of the README: set up a fresh Debian 12 machine, build, and run
# the whole test suite through ctest. CI (.ci/run) runs exactly this.
#
#  1. the normal build (gcc, -Werror): every test, RTL testbenches included;
#  2. the sanitizer build (clang, ASan + UBSan): the unit tests, the
#     decoder fuzzer for SIMNIC_FUZZ_SECONDS (default 60), the
#     control-socket fuzzer for SIMNIC_FUZZ_CONTROL_SECONDS (default: the
#     same), the CM fuzzer and the engine receive-path fuzzers (a soft device
#     and a model device) for the same (SIMNIC_FUZZ_CM_SECONDS,
#     SIMNIC_FUZZ_ENGINE_SECONDS in the cache); scripts/fuzz-inproc.sh runs
#     them for longer.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh

jobs=$(nproc)
fuzz_seconds=${SIMNIC_FUZZ_SECONDS:-60}
fuzz_control_seconds=${SIMNIC_FUZZ_CONTROL_SECONDS:-$fuzz_seconds}

echo "== build (gcc) =="
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo
cmake --build build -j"$jobs"

echo "== sanitizer build (clang-14, ASan + UBSan) =="
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug \
  -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 \
  -DSIMNIC_SANITIZE=ON -DSIMNIC_FUZZ=ON -DSIMNIC_FUZZ_SECONDS="$fuzz_seconds" \
  -DSIMNIC_FUZZ_CONTROL_SECONDS="$fuzz_control_seconds"
# Every unit-test executable (label `unit`: the unit_tests target), and the fuzzers.
cmake --build build-asan -j"$jobs" --target unit_tests fuzz_decode fuzz_make_seeds fuzz_control fuzz_make_control_seeds \
  fuzz_cm fuzz_make_cm_seeds fuzz_engine_rx fuzz_model_rx fuzz_make_engine_seeds

echo "== unit tests and fuzzers under ASan + UBSan =="
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build-asan -L 'unit|fuzz' --output-on-failure -j"$jobs"

echo "== all tests =="
ctest --test-dir build --output-on-failure -j"$jobs"
