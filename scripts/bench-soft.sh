#!/usr/bin/env bash
# Benchmark of a soft device bound to lo (issue 4): prints figures beside the
# reference ones; it is not a pass/fail test. Needs `simnic` on PATH (or
# SIMNIC=path) with libsimnic-verbs.so where `simnic exec` finds it.
#   scripts/bench-soft.sh [ITERATIONS_SCALE]
set -euo pipefail
SIMNIC=${SIMNIC:-simnic}
scale=${1:-1}
export SIMNIC_RUNTIME_DIR=$(mktemp -d /tmp/simnic-bench.XXXXXX)
dev=bench_lo
cleanup() {
  "$SIMNIC" link delete "$dev" >/dev/null 2>&1 || true
  "$SIMNIC" daemon --stop >/dev/null 2>&1 || true
  rm -rf "$SIMNIC_RUNTIME_DIR"
}
trap cleanup EXIT
# pair ARGS...: server and client of one tool on the device; the client's
# output is left in $out.
pair() {
  "$SIMNIC" exec -- "$@" >"$SIMNIC_RUNTIME_DIR/server.out" 2>&1 &
  local server=$!
  sleep 1
  out=$("$SIMNIC" exec -- "$@" 127.0.0.1 2>&1)
  wait "$server" || true
}

# run_set LOOPBACK: the three benchmarks on a fresh device; sets r_bw, r_lat, r_pp.
run_set() {
  "$SIMNIC" link add "$dev" type soft netdev lo loopback "$1"
  pair ib_write_bw -d "$dev" -F -s 65536 -n $((5000 * scale)) --report_gbits
  r_bw=$(awk '$1 == 65536 {print $4}' <<<"$out")
  pair ib_send_lat -d "$dev" -F -s 2 -n $((10000 * scale))
  r_lat=$(awk '$1 == 2 {print $5}' <<<"$out")          # t_typical
  pair ibv_rc_pingpong -g 1 -d "$dev" -n $((10000 * scale))
  local pp
  pp=$(sed -n 's/.* = \([0-9.]*\) Mbit\/sec/\1/p' <<<"$out")
  r_pp=$(awk -v m="$pp" 'BEGIN {printf "%.2f", m / 1000}')
  "$SIMNIC" link delete "$dev"
}

# Default: every frame through the kernel's UDP stack on lo (tcpdump sees it).
run_set off
write_bw=$r_bw send_lat=$r_lat pingpong_gbits=$r_pp
# rxe's same-host shortcut (loopback on): frames to the device's own address
# go from its TX straight to its RX.
run_set on
lb_bw=$r_bw lb_lat=$r_lat lb_pp=$r_pp

# The kernel's own ceiling on this machine: UDP over lo at a RoCE packet's
# size, one sending and one receiving thread, no RDMA work at all.
udp_bench=${SIMNIC_BENCH_UDP:-$(dirname "$(command -v "$SIMNIC")")/../testbench/bench/simnic_bench_udp_lo}
udp_line="(simnic_bench_udp_lo not found: set SIMNIC_BENCH_UDP)"
[ -x "$udp_bench" ] && udp_line=$("$udp_bench" 2)

cpus=$(nproc)
printf '\nsimnic soft device on lo, %s CPUs (%s)\n\n' "$cpus" "$(date -u +%F)"
printf '%-36s %14s %16s %22s %12s\n' "benchmark" "simnic soft" "loopback on" "tutorial kernel rxe" "target"
printf '%-36s %14s %16s %22s %12s\n' "ib_write_bw -s 65536 --report_gbits" "${write_bw} Gb/s" "${lb_bw} Gb/s" "2.4 Gb/s" ">= 20 Gb/s"
printf '%-36s %14s %16s %22s %12s\n' "ib_send_lat -s 2 (typical)" "${send_lat} us" "${lb_lat} us" "23-35 us" "<= 5 us"
printf '%-36s %14s %16s %22s %12s\n' "ibv_rc_pingpong -g 1 -n 10000" "${pingpong_gbits} Gb/s" "${lb_pp} Gb/s" "1.5 Gb/s" ">= 4 Gb/s"
printf '\nThe kernel path'"'"'s ceiling here: %s\n' "$udp_line"
cat <<'REF'

Other reference points: a recent kernel's rxe on a 2-vCPU VM over veth,
ib_send_lat about 3 us; the rxe maintainers' workqueue rework, about
100 Gb/s in multi-core loopback; this machine class's memcpy, about 73 Gb/s
on one core; a ConnectX-6, under 1 us and 100-200 Gb/s.

Kernel rxe hands traffic between QPs of one device from its TX to its RX
without the netdev (rig test rig.kernel61), so its figures on lo compare
with the "loopback on" column; the default column pays the kernel's UDP path
twice per packet, bounded by the ceiling above.
REF
