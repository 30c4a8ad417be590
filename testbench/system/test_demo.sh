#!/usr/bin/env bash
# The README's first command (scripts/demo.sh) installs the build and runs
# scripts/demo-run.sh with `simnic` from PATH. This does the same with the
# build installed under a temporary prefix (the installed layout: simnic
# finds its verbs provider in PREFIX/lib/simnic by itself), and checks that
# every step shows what the README says it shows. The demo goes on past a
# failed tool (it is a show, with no pipefail, and its servers' exit codes
# are not its own), so its exit code alone would pass a demo whose pingpong
# never ran.
#   test_demo.sh DEMO_RUN BUILD_DIR
set -u
DEMO=$1 BUILD=$2
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
prefix=$(mktemp -d /tmp/simnic-demo-prefix.XXXXXX)
trap 'rm -rf "$prefix"' EXIT
cmake --install "$BUILD" --prefix "$prefix" >/dev/null || { echo "FAIL: cmake --install"; exit 1; }
unset SIMNIC SIMNIC_VERBS_LIB
out=$(PATH="$prefix/bin:$PATH" "$DEMO" 2>&1) || fail "demo-run.sh exited with $?"
echo "$out"
# Each step's evidence, in the demo's order: the synthetic capture decoded
# and dissected, the corrupted one caught by the C++ core and by the RTL
# engine, the soft device seen by ibv_devinfo, the pingpong and its capture
# on lo, ib_write_bw, the device's counters, the model device's pingpong
# and statistics, and the bench.
steps=(
  "# 40 packets: 40 RoCE v2 ok, 0 bad ICRC, 0 malformed"
  "RRoCE [0-9]+ RC Send First QP=0x000012"
  "# 40 packets: 32 RoCE v2 ok, 8 bad ICRC, 0 malformed"
  "verdicts: 32 ok, 8 bad; agree with the C\+\+ packet core on 40, disagree on 0"
  "hca_id:[[:space:]]+demo_lo"
  "state:[[:space:]]+PORT_ACTIVE"
  "^100 iters in [0-9.]+ seconds"
  "# 200 packets: 200 RoCE v2 ok, 0 bad ICRC, 0 malformed"
  "^ 65536 +2000 +[0-9.]+ +[0-9.]+"
  "rx_packets +[1-9][0-9]*$"
  "^1000 iters in [0-9.]+ seconds"
  "mac.tx_frames +[1-9][0-9]*$"
  "modelled throughput +[0-9.]+ Gb/s"
  "^Done\."
)
for s in "${steps[@]}"; do
  grep -Eq -- "$s" <<<"$out" || fail "the demo's output lacks /$s/"
done
# Nothing of the demo is left behind: every simnic process it started (its
# daemon's command line is "PREFIX/bin/simnic daemon") has ended.
if pgrep -f "^$prefix/bin/simnic" >/dev/null; then
  fail "a simnic process of the demo outlived it: $(pgrep -af "^$prefix/bin/simnic")"
fi
[ "$failures" -eq 0 ] || { echo "$failures failure(s)"; exit 1; }
echo "the demo showed all ${#steps[@]} steps' evidence"
