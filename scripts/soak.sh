#!/usr/bin/env bash
# Issue 12, section 6 by hand: the soak (testbench/system/test_soak.sh) for
# DURATION seconds (default 1800), soft and model devices on a lossy wire,
# with BUSY busy loops (default 2) keeping the CPUs late.
#   scripts/soak.sh [BUILD_DIR] [DURATION] [BUSY]
set -u
B=$(cd "${1:-build}" && pwd)
H=$(cd "$(dirname "$0")/../testbench/system" && pwd)
SIMNIC_SOAK_BUSY=${3:-2} "$H/test_soak.sh" "${2:-1800}" "$B/cli/simnic" "$B/verbs_provider/libsimnic-verbs.so" \
  "$B/testbench/system/simnic_faults_app"
