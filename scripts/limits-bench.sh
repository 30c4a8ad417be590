#!/usr/bin/env bash
# Issue 12, section 5 by hand: 10,000 QPs and 100,000 MRs at once on one soft
# device, all usable; the daemon's memory per QP and per MR, creation and
# teardown times; then the per-object limits and their errors. QPS or MRS
# "max": the device's advertised max_qp / max_mr, and one more refused.
#   scripts/limits-bench.sh [BUILD_DIR] [QPS] [MRS]
# Issue 11: "max" and an object instead (pd, cq, srq, ah, mw): exactly the
# advertised max_pd / max_cq / max_srq / max_ah / max_mw of it, one more
# refused with rxe's errno (EINVAL), all destroyed; times and memory per
# object (limits_app.cpp's [max_OBJECT] case). "max srq_wr": one SRQ of
# max_srq_wr WQEs of max_srq_sge SGEs each, one WQE or SGE more refused.
#   scripts/limits-bench.sh [BUILD_DIR] max pd|cq|srq|ah|mw|srq_wr
set -u
B=$(cd "${1:-build}" && pwd)
H=$(cd "$(dirname "$0")/../testbench/system" && pwd)
run() {
  "$H/run_limits.sh" "$B/cli/simnic" "$B/verbs_provider/libsimnic-verbs.so" "$B/testbench/system/simnic_limits_app" "$@"
}
case "${2:-}:${3:-}" in
  max:pd | max:cq | max:srq | max:ah | max:mw | max:srq_wr)
    SIMNIC_LIMITS_TIMEOUT=${SIMNIC_LIMITS_TIMEOUT:-3600} run "[max_$3]"
    exit ;;
esac
# The advertised max_qp (about a million) takes about 70 s on a loaded
# 2-core machine (41 s to create, 22 s to destroy), and at its peak 6.2 GB of
# the application's memory (docs/reliability.md).
timeout=1200
[ "${2:-}" != max ] || timeout=3600
SIMNIC_LIMITS_TIMEOUT=${SIMNIC_LIMITS_TIMEOUT:-$timeout} SIMNIC_LIMITS_QPS=${2:-10000} SIMNIC_LIMITS_MRS=${3:-100000} run
