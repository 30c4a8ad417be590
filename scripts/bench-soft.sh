#!/usr/bin/env bash
# Performance against the machine's own limits (issue 14). Absolute times on
# a shared machine move by tens of percent from hour to hour, so the script
# first measures the machine's limits itself (UDP ping-pong over lo, busy-
# polling and blocking; the kernel's UDP one-way ceiling at a RoCE packet's
# size; memcpy), then runs the RDMA tools on a soft device (through the
# kernel, and with `loopback on`) and on a model device, measures the limits
# again, and prints every figure beside its ratio to the better of the two
# measurements of its limit, the target ratio, and PASS or MISS. It is not a
# pass/fail test (exit status 0 whatever the figures); `--quick` is the CI
# smoke run (testbench/system: bench.smoke), which checks only that every row
# is printed.
#
#   scripts/bench-soft.sh [--cores 1|2] [--scale F] [--quick] [--netns]
#                         [--sets soft,loopback,model]
#
#   --cores 1   everything (limits, daemon, applications) on CPU 0 (taskset);
#               default: all CPUs.
#   --scale F   multiplies every iteration count (default 1).
#   --quick     a few hundred iterations per tool, short limit probes.
#   --netns     runs in a private network namespace (needs root or user
#               namespaces), which also gets a veth netdev of MTU 1500 for
#               the model device's active-MTU-1024 row; without it that row
#               reads "skipped".
#   --sets      which devices to run (default all three).
#   --repeat N  runs each point of the scaling curve (below) N times, in
#               turn, and takes the median: on a shared machine one
#               bandwidth run may land in a slow or a fast band (default 1).
#   --csv FILE  also writes every row to FILE (what, device, figure, unit,
#               limit, limit value, ratio, target, result), for plotting or
#               for comparing runs.
#
# After the table it prints the scaling curve of each soft set: ib_write_bw
# at 1, 2, 4 and 8 QPs, and 1, 2 and 4 application pairs at once (each
# pair's figure beside their sum), each point as a ratio to one QP. Every
# QP and every pair runs the iterations one QP runs.
#
# Binaries: $SIMNIC (default: the build tree's cli/simnic beside this script's
# build/, else `simnic` on PATH), $SIMNIC_BENCH_LIMITS (default: the build
# tree's testbench/bench/simnic_bench_limits), $SIMNIC_VERBS_LIB as `simnic
# exec` reads it.
set -euo pipefail

cores=2 scale=1 quick=0 netns=0 sets=soft,loopback,model inside=0 csv= repeat=1
args=("$@")
while [ $# -gt 0 ]; do
  case $1 in
  --cores) cores=$2; shift 2 ;;
  --scale) scale=$2; shift 2 ;;
  --quick) quick=1; shift ;;
  --netns) netns=1; shift ;;
  --sets) sets=$2; shift 2 ;;
  --csv) csv=$2; shift 2 ;;
  --repeat) repeat=$2; shift 2 ;;
  --inside) inside=1; shift ;;  # internal: already in the namespace / on the CPU set
  *) echo "usage: bench-soft.sh [--cores 1|2] [--scale F] [--quick] [--netns] [--sets soft,loopback,model] [--repeat N] [--csv FILE]" >&2
     exit 2 ;;
  esac
done
[[ "$repeat" =~ ^[1-9][0-9]*$ ]] || { echo "bench-soft.sh: --repeat takes a whole number of runs, 1 or more (not '$repeat')" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
if [ -n "$csv" ] && [ "$inside" -eq 0 ]; then
  : >"$csv" || { echo "bench-soft.sh: cannot write $csv" >&2; exit 2; }
  echo "what,device,figure,unit,limit,limit_value,ratio,target,result" >"$csv"
fi
if [ "$inside" -eq 0 ]; then
  pre=()
  [ "$cores" = 1 ] && pre+=(taskset -c 0)
  if [ "$netns" -eq 1 ]; then
    exec unshare --net --fork "${pre[@]}" bash -c 'ip link set lo up && exec "$@"' sh "$0" --inside "${args[@]}"
  fi
  [ ${#pre[@]} -gt 0 ] && exec "${pre[@]}" "$0" --inside "${args[@]}"
fi

build=${SIMNIC_BUILD_DIR:-$here/../build}
if [ -z "${SIMNIC:-}" ]; then
  if [ -x "$build/cli/simnic" ]; then SIMNIC=$build/cli/simnic; else SIMNIC=simnic; fi
fi
LIMITS=${SIMNIC_BENCH_LIMITS:-$(dirname "$(command -v "$SIMNIC")")/../testbench/bench/simnic_bench_limits}
[ -x "$LIMITS" ] || { echo "bench-soft.sh: $LIMITS not found: set SIMNIC_BENCH_LIMITS" >&2; exit 1; }

export SIMNIC_RUNTIME_DIR=$(mktemp -d /tmp/simnic-bench.XXXXXX)
chmod 700 "$SIMNIC_RUNTIME_DIR"
devs=()
server=
cleanup() {
  [ -n "$server" ] && kill "$server" 2>/dev/null
  local d
  for d in "${devs[@]}"; do "$SIMNIC" link delete "$d" >/dev/null 2>&1 || true; done
  "$SIMNIC" daemon --stop >/dev/null 2>&1 || true
  rm -rf "$SIMNIC_RUNTIME_DIR"
}
trap cleanup EXIT

if [ "$quick" -eq 1 ]; then
  lat_n=200 bw_n=100 pp_n=200 trips=2000 probe_s=0.3
else
  lat_n=$(awk -v s="$scale" 'BEGIN {print int(10000 * s)}')
  bw_n=$(awk -v s="$scale" 'BEGIN {print int(5000 * s)}')
  pp_n=$lat_n trips=$(awk -v s="$scale" 'BEGIN {print int(20000 * s)}') probe_s=2
fi

# The machine's limits: busy and blocking UDP half round trip (64-byte
# datagrams), the UDP one-way ceiling at a 4096-MTU RoCE packet's size (BTH,
# payload, ICRC: 4112 bytes, 16 per system call), and memcpy.
declare -A lim
limits() {
  local k v
  while read -r k v; do
    case $k in
    *_us) [ -z "${lim[$k]:-}" ] || awk -v a="$v" -v b="${lim[$k]}" 'BEGIN {exit !(a < b)}' && lim[$k]=$v ;;
    *) [ -z "${lim[$k]:-}" ] || awk -v a="$v" -v b="${lim[$k]}" 'BEGIN {exit !(a > b)}' && lim[$k]=$v ;;
    esac
    lim_runs[$k]="${lim_runs[$k]:-}${lim_runs[$k]:+ / }$v"
  done < <("$LIMITS" pingpong busy 64 "$trips"; "$LIMITS" pingpong block 64 "$trips"
           "$LIMITS" ceiling "$probe_s" 4112 16; "$LIMITS" memcpy 64 "$probe_s")
}
declare -A lim_runs

# The device under test and the tools' figures (fig[SET.ROW]).
declare -A fig
port=18515
dev=
addr=127.0.0.1

wait_listen() {  # PORT: up to 10 s for a server to listen
  local i
  for i in $(seq 200); do
    ss -Hltn "sport = :$1" | grep -q . && return 0
    sleep 0.05
  done
  return 1
}
# pair TOOL ARGS...: server and client of one tool on $dev; the client's
# output is left in $out (empty if it failed).
pair() {
  port=$((port + 1))
  "$SIMNIC" exec -- "$@" -p "$port" >"$SIMNIC_RUNTIME_DIR/server.out" 2>&1 &
  server=$!
  out=
  if wait_listen "$port"; then
    out=$(timeout 120 "$SIMNIC" exec -- "$@" -p "$port" "$addr" 2>&1) || out=
  fi
  wait "$server" 2>/dev/null || true
  server=
}
# Figures from perftest's and ibv_rc_pingpong's reports.
lat_typical() { awk '$1 ~ /^[0-9]+$/ && NF >= 5 && $2 ~ /^[0-9]+$/ {v = $5} END {print v}' <<<"$out"; }
bw_average() { awk '$1 ~ /^[0-9]+$/ && NF >= 5 && $2 ~ /^[0-9]+$/ {v = $4} END {print v}' <<<"$out"; }
pp_gbits() { sed -n 's/.* = \([0-9.]*\) Mbit\/sec/\1/p' <<<"$out" | awk '{printf "%.2f", $1 / 1000}'; }
pp_half_rtt() { sed -n 's/.* = \([0-9.]*\) usec\/iter/\1/p' <<<"$out" | awk '{printf "%.2f", $1 / 2}'; }

link_add() {  # DEV ARGS...
  dev=$1
  shift
  "$SIMNIC" link add "$dev" "$@"
  devs+=("$dev")
}
link_delete() {
  "$SIMNIC" link delete "$dev"
  devs=("${devs[@]/$dev/}")
}

# The daemon's CPU time (user + system, in clock ticks).
daemon_ticks() {
  local pid
  pid=$(sed -n 's/.*"pid":\([0-9]*\).*/\1/p' "$SIMNIC_RUNTIME_DIR/simnicd.state" 2>/dev/null)
  awk '{print $14 + $15}' "/proc/$pid/stat" 2>/dev/null || echo 0
}

# The tools every set runs on a device; S is the set's name.
run_latency() {  # S
  local s=$1 d=(-d "$dev" -F)
  pair ib_send_lat "${d[@]}" -s 2 -n "$lat_n";        fig[$s.send_lat]=$(lat_typical)
  pair ib_read_lat "${d[@]}" -s 2 -n "$lat_n";        fig[$s.read_lat]=$(lat_typical)
  pair ib_send_lat "${d[@]}" -s 2 -n "$lat_n" -e;     fig[$s.send_lat_e]=$(lat_typical)
  pair ibv_rc_pingpong -g 1 -d "$dev" -s 64 -n "$pp_n" -e; fig[$s.pp_e]=$(pp_half_rtt)
}
run_bandwidth() {  # S
  local s=$1 d=(-d "$dev" -F -s 65536 --report_gbits) q r k
  pair ib_send_bw "${d[@]}" -n "$bw_n";               fig[$s.send_bw]=$(bw_average)
  pair ib_read_bw "${d[@]}" -n "$bw_n";               fig[$s.read_bw]=$(bw_average)
  pair ibv_rc_pingpong -g 1 -d "$dev" -n "$pp_n";     fig[$s.pp]=$(pp_gbits)
  # The scaling curve: one QP, more QPs of one pair, two and four
  # application pairs at once (their sum, and each pair's figure). With
  # --repeat the points take turns, so that a slow spell of the machine
  # falls on all of them alike, and each is the median of its runs. Every
  # QP runs the same iterations as the one QP does (perftest's -n is per
  # QP): splitting one QP's iterations over eight left each 626 messages,
  # and the ramp at both ends of so short a run cost -q 8 a fifth of its
  # figure (loopback, alternating: 14.3-19.5 Gb/s against 16.6-24.1 with
  # -n 5000 per QP, one QP 18.7-25.0).
  for r in $(seq "$repeat"); do
    pair ib_write_bw "${d[@]}" -n "$bw_n";            add_run "$s.write_bw" "$(bw_average)"
    for q in 2 4 8; do
      pair ib_write_bw "${d[@]}" -n "$bw_n" -q "$q";  add_run "$s.write_bw_q$q" "$(bw_average)"
    done
    pairs_at_once "$s" 2
    pairs_at_once "$s" 4
  done
  for k in write_bw write_bw_q2 write_bw_q4 write_bw_q8 write_bw_2pairs write_bw_4pairs; do
    fig[$s.$k]=$(median ${runs[$s.$k]})
  done
}
# add_run KEY FIGURE: one run's figure of a curve point ("-" if it gave none).
declare -A runs
add_run() { runs[$1]="${runs[$1]:-}${runs[$1]:+ }${2:--}"; }
# median FIGURE...: of those that are numbers; nothing if none is.
median() {
  printf '%s\n' "$@" | grep -E '^[0-9.]+$' | sort -g |
    awk '{a[NR] = $1} END {if (NR) printf "%.2f", NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'
}
# pairs_at_once S N: N servers, then N clients started together, each its own
# ib_write_bw on the device (one QP each): one run of the point
# S.write_bw_Npairs, their sum, and fig[S.write_bw_Npairs_each] their
# figures (the last run's). A run in which a pair printed no figure has no
# sum ("-"), not a short one.
pairs_at_once() {
  local s=$1 n=$2 d=(-d "$dev" -F -s 65536 --report_gbits) k pids=() each=() v sum=0 ok=1
  for k in $(seq "$n"); do
    "$SIMNIC" exec -- ib_write_bw "${d[@]}" -n "$bw_n" -p $((port + k)) >/dev/null 2>&1 & pids+=($!)
  done
  for k in $(seq "$n"); do wait_listen $((port + k)) || true; done
  for k in $(seq "$n"); do
    "$SIMNIC" exec -- ib_write_bw "${d[@]}" -n "$bw_n" -p $((port + k)) "$addr" \
      >"$SIMNIC_RUNTIME_DIR/c$k.out" 2>&1 & pids+=($!)
  done
  wait "${pids[@]}" 2>/dev/null || true
  for k in $(seq "$n"); do
    out=$(cat "$SIMNIC_RUNTIME_DIR/c$k.out")
    v=$(bw_average)
    if [ -n "$v" ]; then each+=("$v"); sum=$(awk -v a="$sum" -v b="$v" 'BEGIN {printf "%.2f", a + b}'); else ok=0; fi
  done
  port=$((port + n))
  fig[$s.write_bw_${n}pairs_each]="${each[*]}"
  [ "$ok" -eq 1 ] || sum=
  add_run "$s.write_bw_${n}pairs" "$sum"
}

IFS=, read -r -a want <<<"$sets"
has() { [[ " ${want[*]} " == *" $1 "* ]]; }

limits
if has soft; then
  link_add bench_lo type soft netdev lo
  # An idle device costs no CPU: the daemon's time over 2 s with a device and
  # no traffic (after the engine's spin after setup has ended).
  sleep 0.5
  t0=$(daemon_ticks); sleep 2; t1=$(daemon_ticks)
  fig[idle.cpu]=$(awk -v d=$((t1 - t0)) -v hz="$(getconf CLK_TCK)" 'BEGIN {printf "%.3f", d / hz / 2}')
  run_latency soft
  run_bandwidth soft
  link_delete
fi
if has loopback; then
  link_add bench_lo type soft netdev lo loopback on
  run_latency loopback
  run_bandwidth loopback
  link_delete
fi
if has model; then
  link_add bench_model type model netdev lo
  pair ib_send_lat -d "$dev" -F -s 2 -n "$lat_n"; fig[model.send_lat]=$(lat_typical)
  pair ib_write_bw -d "$dev" -F -s 65536 --report_gbits -n "$bw_n"; fig[model.write_bw]=$(bw_average)
  link_delete
  # Active MTU 1024: a model device on a netdev of MTU 1500, which only a
  # private namespace may create (one end of a veth pair; its address is
  # local, so the kernel carries the traffic over lo).
  if [ "$netns" -eq 1 ] && ip link add bench1500 type veth peer name bench1500p 2>/dev/null; then
    ip link set bench1500p up
    ip link set bench1500 mtu 1500 up
    ip addr add 10.231.0.1/24 dev bench1500
    addr=10.231.0.1
    link_add bench_m1500 type model netdev bench1500
    pair ib_write_bw -d "$dev" -F -s 65536 --report_gbits -n "$bw_n"; fig[model.write_bw_mtu1024]=$(bw_average)
    link_delete
    addr=127.0.0.1
  fi
  # The cycle model's own speed with the Verilated parser and ICRC engine.
  msgs=2000; [ "$quick" -eq 1 ] && msgs=100
  fig[model.rtl_cycles]=$("$SIMNIC" bench --messages "$msgs" --set parser.impl=rtl --set icrc.impl=rtl 2>/dev/null |
    awk '/simulation speed/ {printf "%.2f", $3 / 1e6}')
fi
limits

# ---- the table ----
busy=${lim[udp_pingpong_busy_half_rtt_us]} block=${lim[udp_pingpong_block_half_rtt_us]}
ceil=${lim[udp_ceiling_gbits]} memcpy=${lim[memcpy_gbits]}
printf '\nsimnic performance against this machine'"'"'s limits (%s UTC, %s, %s of %s CPUs, load %s)\n' \
  "$(date -u '+%F %H:%M')" "$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)" \
  "$(nproc)" "$(nproc --all)" "$(cut -d' ' -f1-3 /proc/loadavg)"
printf '\nlimits (best of the measurements before and after the tools):\n'
printf '  %-58s %9s   (%s)\n' \
  "UDP ping-pong over lo, 64 B, busy-polling: half round trip" "$busy us" "${lim_runs[udp_pingpong_busy_half_rtt_us]}" \
  "UDP ping-pong over lo, 64 B, blocking: half round trip" "$block us" "${lim_runs[udp_pingpong_block_half_rtt_us]}" \
  "UDP one way over lo, 4112-B datagrams, 16 per call" "$ceil Gb/s" "${lim_runs[udp_ceiling_gbits]}" \
  "memcpy, one thread, 64 MiB" "$memcpy Gb/s" "${lim_runs[memcpy_gbits]}"
printf '\n%-34s %-9s %11s  %-22s %7s %7s  %s\n' "what" "device" "figure" "limit" "ratio" "target" "result"
passes=0 misses=0
# ratio_of A B: A / B to two places, or nothing when B is not a positive
# number (a limit or a one-QP figure the run did not give: mawk prints inf
# for a division by zero, gawk stops).
ratio_of() { awk -v a="$1" -v b="$2" 'BEGIN {if (b + 0 > 0) printf "%.2f", a / b}'; }
# row WHAT SET KEY UNIT LIMIT_NAME LIMIT_VALUE le|ge TARGET
row() {
  local what=$1 set=$2 key=$3 unit=$4 lname=$5 lval=$6 dir=$7 target=$8 v ratio res
  v=${fig[$key]:-}
  [ -z "$v" ] || ratio=$(ratio_of "$v" "$lval")
  if [ -z "$v" ] || [ -z "$ratio" ]; then
    res="NO FIGURE"
    [ -z "$v" ] || res="NO LIMIT"
    printf '%-34s %-9s %11s  %-22s %7s %7s  %s\n' "$what" "$set" "${v:--}" "$lname" "-" "$([ "$dir" = le ] && echo '<=' || echo '>=') $target" "$res"
    csv_row "$what" "$set" "$v" "$unit" "$lname" "$lval" "" "$dir $target" "$res"
    misses=$((misses + 1))
    return
  fi
  if awk -v r="$ratio" -v t="$target" -v d="$dir" 'BEGIN {exit !(d == "le" ? r <= t : r >= t)}'; then
    res=PASS passes=$((passes + 1))
  else
    res=MISS misses=$((misses + 1))
  fi
  printf '%-34s %-9s %11s  %-22s %7s %7s  %s\n' "$what" "$set" "$v $unit" "$lname" "${ratio}x" \
    "$([ "$dir" = le ] && echo '<=' || echo '>=') $target" "$res"
  csv_row "$what" "$set" "$v" "$unit" "$lname" "$lval" "$ratio" "$dir $target" "$res"
}
# csv_row FIELD...: one CSV line, each field quoted (names hold commas).
csv_row() {
  [ -n "$csv" ] || return 0
  local f line=
  for f in "$@"; do line+="${line:+,}\"${f//\"/\"\"}\""; done
  echo "$line" >>"$csv"
}
skip() { printf '%-34s %-9s %11s  %s\n' "$1" "$2" "-" "skipped ($3)"; }
for s in soft loopback; do
  has "$s" || continue
  [ "$s" = soft ] && lt=1.5 bwt=1.0 rdt=0.8 || lt=1.0 bwt=3 rdt=3
  row "ib_send_lat -s 2, typical" "$s" "$s.send_lat" us "UDP busy half RTT" "$busy" le "$lt"
  row "ib_read_lat -s 2, typical" "$s" "$s.read_lat" us "UDP busy half RTT" "$busy" le "$lt"
  row "ib_send_lat -s 2 -e, typical" "$s" "$s.send_lat_e" us "UDP blocking half RTT" "$block" le 1.5
  row "ibv_rc_pingpong -s 64 -e, half RTT" "$s" "$s.pp_e" us "UDP blocking half RTT" "$block" le 1.5
  row "ib_write_bw -s 65536" "$s" "$s.write_bw" Gb/s "UDP one-way ceiling" "$ceil" ge "$bwt"
  row "ib_send_bw -s 65536" "$s" "$s.send_bw" Gb/s "UDP one-way ceiling" "$ceil" ge "$bwt"
  row "ib_read_bw -s 65536" "$s" "$s.read_bw" Gb/s "UDP one-way ceiling" "$ceil" ge "$rdt"
  row "ibv_rc_pingpong -g 1 (4 KiB)" "$s" "$s.pp" Gb/s "tutorial's rxe 1.5" 1.5 ge 2
  one=${fig[$s.write_bw]:-0}
  for q in 2 4 8; do
    row "ib_write_bw -s 65536 -q $q" "$s" "$s.write_bw_q$q" Gb/s "same, -q 1: $one" "$one" ge 0.9
  done
  for n in 2 4; do
    row "ib_write_bw, $n pairs at once (sum)" "$s" "$s.write_bw_${n}pairs" Gb/s "same, one pair: $one" "$one" ge 0.9
  done
done
if has soft; then
  row "idle device, daemon CPU" soft idle.cpu cores "one core" 1 le 0.01
fi
if has model; then
  row "ib_send_lat -s 2, typical" model model.send_lat us "issue's 20 us" 20 le 1.0
  row "ib_write_bw -s 65536 (MTU 4096)" model model.write_bw Gb/s "issue's 5 Gb/s" 5 ge 1.0
  if [ -n "${fig[model.write_bw_mtu1024]:-}" ] || [ "$netns" -eq 1 ]; then
    row "ib_write_bw -s 65536 (MTU 1024)" model model.write_bw_mtu1024 Gb/s "issue's 2 Gb/s" 2 ge 1.0
  else
    skip "ib_write_bw -s 65536 (MTU 1024)" model "needs --netns for a netdev of MTU 1500"
  fi
  row "simnic bench, RTL parser + ICRC" model model.rtl_cycles "M cyc/s" "issue's 2 M cycles/s" 2 ge 1.0
fi
printf '\n%d PASS, %d MISS (figures and limits from this run; not a test)\n' "$passes" "$misses"

# The scaling curve: the same 64 KiB WRITEs spread over more QPs of one
# pair, and over more application pairs at once; a point is its sum and
# its ratio to one QP of one pair.
point() {  # KEY: "FIGURE (RATIOx)", or "-" when the run gave none
  local v=${fig[$1]:-}
  [ -n "$v" ] || { printf -- '-'; return; }
  local r
  r=$(ratio_of "$v" "$one")
  printf '%s (%sx)' "$v" "${r:--}"
}
if has soft || has loopback; then
  printf '\nscaling of ib_write_bw -s 65536, Gb/s (ratio to one QP of one pair):\n'
fi
for s in soft loopback; do
  has "$s" || continue
  one=${fig[$s.write_bw]:-0}
  printf '  %-9s QPs of one pair   1: %s   2: %s   4: %s   8: %s\n' "$s" "${fig[$s.write_bw]:--}" \
    "$(point "$s.write_bw_q2")" "$(point "$s.write_bw_q4")" "$(point "$s.write_bw_q8")"
  printf '  %-9s pairs at once     1: %s   2: %s   4: %s\n' "$s" "${fig[$s.write_bw]:--}" \
    "$(point "$s.write_bw_2pairs")" "$(point "$s.write_bw_4pairs")"
  printf '  %-9s each pair         2: %s   4: %s\n' "$s" "${fig[$s.write_bw_2pairs_each]:--}" \
    "${fig[$s.write_bw_4pairs_each]:--}"
  if [ "$repeat" -gt 1 ]; then
    printf '  %-9s runs (median above) QPs 1: %s; 2: %s; 4: %s; 8: %s; pairs 2: %s; 4: %s\n' "$s" \
      "${runs[$s.write_bw]}" "${runs[$s.write_bw_q2]}" "${runs[$s.write_bw_q4]}" "${runs[$s.write_bw_q8]}" \
      "${runs[$s.write_bw_2pairs]}" "${runs[$s.write_bw_4pairs]}"
  fi
done
