#!/usr/bin/env bash
# A soak (issue 12, section 6): for DURATION seconds, on a `simnic wire` that
# drops, duplicates and reorders 0.5% of frames each, between device wa (soft)
# and wb ($SIMNIC_DEVICE_TYPE, default model), all at once and over again:
#   - simnic_faults_app's RC case (SEND, WRITE, READ, both atomics: exactly
#     once, byte for byte) and its UD case, each round checked;
#   - rping -C 20 -V pairs (data checked);
#   - ib_write_bw pairs SIGKILLed 1-3 s in (their QPs must go with them);
#   - optionally ($SIMNIC_SOAK_BUSY=N) N busy loops keeping the CPUs late.
# Then: no checked flow failed, every killed process's objects are gone and
# the devices hold nothing (`simnic resource show`), the daemon's heap and
# mappings not growing after the first third (warm-up; sampled every 2 s, printed), the devices' and the
# wire's counters agree that traffic and faults happened.
#
#   test_soak.sh DURATION SIMNIC LIBSIMNIC_VERBS FAULTS_APP
set -u
DURATION=$1 SIMNIC=$2 LIB=$3 APP=$4
HERE=$(cd "$(dirname "$0")" && pwd)
TYPE_B=${SIMNIC_DEVICE_TYPE:-model}
SEED=${SIMNIC_SOAK_SEED:-$((1 + RANDOM))}
. "$HERE/lib.sh"
sys_init soak SIMNIC LIB APP
sys_dir out
OUT=$work/out
run() { "${AS[@]}" env LD_PRELOAD="$LIB" "$@"; }
busy=() flows=()
cleanup() {
  for p in "${busy[@]}" "${flows[@]}"; do kill -KILL "$p" 2>/dev/null; done
  [ -n "${wire_pid:-}" ] && kill "$wire_pid" 2>/dev/null
  sys_cleanup
}
trap cleanup EXIT
RANDOM=$SEED

"${AS[@]}" "$SIMNIC" wire --ready-file "$OUT/wire.ready" --stats "$OUT/wire.json" --seed "$SEED" \
  --fault drop=0.5%,dup=0.5%,reorder=0.5% -q &
wire_pid=$!
for _ in $(seq 50); do [ -s "$OUT/wire.ready" ] && break; sleep 0.1; done
WIRE=$(awk '{print $2}' "$OUT/wire.ready")
[ -n "$WIRE" ] || { echo "FAIL: the wire did not start"; exit 1; }
# SIMNIC_SOAK_DAEMON_WRAP (e.g. "heaptrack -o /tmp/soak"): the daemon runs
# under that profiler, started here instead of on demand by `link add`.
if [ -n "${SIMNIC_SOAK_DAEMON_WRAP:-}" ]; then
  "${AS[@]}" ${SIMNIC_SOAK_DAEMON_WRAP} "$SIMNIC" daemon -f >"$OUT/daemon.log" 2>&1 &
  for _ in $(seq 100); do [ -S "$SIMNIC_RUNTIME_DIR/simnicd.sock" ] && break; sleep 0.1; done
fi
sim link add wa type soft wire "127.0.0.1:$WIRE" addr 10.0.0.10/24 || { echo "FAIL: link add wa"; exit 1; }
devs+=(wa)
sim link add wb type "$TYPE_B" wire "127.0.0.1:$WIRE" addr 10.0.0.11/24 || { echo "FAIL: link add wb"; exit 1; }
devs+=(wb)
dpid=$(daemon_pid)
rss() { awk '$1 == "VmRSS:" {print $2}' "/proc/$dpid/status" 2>/dev/null; }
heap() { sim daemon --status 2>/dev/null | awk '$1 == "heap_in_use" {print $2}'; }
maps() { wc -l <"/proc/$dpid/maps" 2>/dev/null; }
mem() { echo "$(( $(date +%s) - start )) $(rss) $(heap) $(maps)"; }
for _ in $(seq "${SIMNIC_SOAK_BUSY:-0}"); do
  (while :; do :; done) &
  busy+=($!)
done
start=$(date +%s)
quiet_start=$(mem)
echo "soak: ${DURATION}s, wire 127.0.0.1:$WIRE seed $SEED, wa soft, wb $TYPE_B, ${#busy[@]} busy loops, daemon $dpid"

end=$(( $(date +%s) + DURATION ))
TCP=$(free_port 4000)
counts_file=$OUT/counts
: >"$counts_file"
# A checked flow: runs CMD until the end, counting rounds; a failure is kept.
flow() {
  local name=$1 n=0
  shift
  while [ "$(date +%s)" -lt "$end" ]; do
    if "$@" >"$OUT/$name.last" 2>&1; then n=$((n + 1)); else
      cp "$OUT/$name.last" "$OUT/$name.failed.$n"
      echo "$name failed" >>"$counts_file"
    fi
  done
  echo "$name $n" >>"$counts_file"
}
app_case() {
  "${AS[@]}" env SIMNIC_TEST_DEVICE=wa SIMNIC_TEST_PEER=wb SIMNIC_FAULTS_ITERS=20 SIMNIC_FAULTS_KIND=dup \
    timeout 120 "$SIMNIC" exec -- "$APP" -w NoTests "$1"
}
rping_pair() {
  local port=$((TCP + RANDOM % 1000)) sp rc
  run timeout 60 rping -s -a 10.0.0.10 -p "$port" -C 20 -V >"$OUT/rping.s" 2>&1 &
  sp=$!
  for _ in $(seq 30); do
    sleep 0.2
    run timeout 60 rping -c -I 10.0.0.11 -a 10.0.0.10 -p "$port" -C 20 -V >"$OUT/rping.c" 2>&1
    rc=$?
    grep -q "REJECTED, error 8" "$OUT/rping.c" || break
  done
  wait "$sp" && [ "$rc" -eq 0 ] && return 0
  # What the flow keeps of a failed round: both sides' output.
  echo "rping client exited $rc"; cat "$OUT/rping.c"; echo "--- server:"; cat "$OUT/rping.s"
  return 1
}
# No `timeout` nor function in front: $! must be ib_write_bw itself (setpriv
# and env exec it), or the SIGKILL would miss it.
killed_pair() {
  local port=$((TCP + 1000 + RANDOM % 1000)) sp cp
  "${AS[@]}" env LD_PRELOAD="$LIB" ib_write_bw -d wa -p "$port" -D 10 >/dev/null 2>&1 &
  sp=$!
  sleep 0.3
  "${AS[@]}" env LD_PRELOAD="$LIB" ib_write_bw -d wb -p "$port" -D 10 127.0.0.1 >/dev/null 2>&1 &
  cp=$!
  sleep "$((1 + RANDOM % 3))"
  kill -KILL "$cp" "$sp" 2>/dev/null
  wait "$cp" "$sp" 2>/dev/null
  return 0
}
flow rc app_case "faults: RC*" &
flows+=($!)
flow ud app_case "faults: UD*" &
flows+=($!)
flow rping rping_pair &
flows+=($!)
flow killed killed_pair &
flows+=($!)
# The daemon's memory every 2 s ("SECONDS_IN RSS_KIB HEAP_IN_USE_BYTES
# MAPPINGS"), for the checks and the figures printed at the end.
start=$(date +%s)
: >"$OUT/mem"
while [ "$(date +%s)" -lt "$end" ]; do
  mem >>"$OUT/mem"
  sleep 2
done
wait "${flows[@]}"
flows=()
for p in "${busy[@]}"; do kill "$p" 2>/dev/null; done
busy=()
cat "$counts_file"
grep -q failed "$counts_file" && for f in "$OUT"/*.failed.*; do echo "--- $f:"; tail -30 "$f"; fail "$(basename "$f")"; done
for k in rc ud rping killed; do grep -Eq "^$k [1-9]" "$counts_file" || fail "flow $k never completed a round"; done
[ "$(daemon_pid)" = "$dpid" ] && kill -0 "$dpid" 2>/dev/null || fail "the daemon died"
wait_no_qps || fail "QPs left behind (a stuck or leaked QP): $(sim resource show qp)"
nothing_left "after the soak" qps cqs mrs pds
quiet_end=$(mem)
# Memory after warm-up. The first third is warm-up: the devices' receive
# rings and stashes, their spare buffers (up to 256 each), the read-ahead
# copies (up to 8 each), the model's caches and the CM's tables fill as
# the traffic's bursts reach new highs (in 60 s runs the heap in use rose
# until 22-25 s). The rest is split in three parts, compared by their
# floors: a leak raises the floor, while a burst in flight (a go-back-N of a
# full window through a model device's pipeline holds hundreds of frames)
# raises only the samples taken during it. A leak grows for as long as the
# traffic runs, so it raises the floor from the first part to the second
# AND from the second to the third; a bounded pool reaching a new high
# (a larger burst than any before it) raises it once and stays: CI's 90 s
# run saw the heap in use step 11.7 -> 14.3 MiB at 47 s, then stay at
# 14.8-14.9 to the end, with every object freed afterwards.
#   - heap in use (the daemon's own count, `simnic daemon --status`): fails
#     when the floor rises by 1 MiB or more at both steps (a leak of
#     51 KiB/s in the 90 s run, of 2.6 KiB/s in 30 minutes; the leak the
#     30-minute soak found first was 5.8 KiB/s);
#   - mappings (a process's queue memory the daemon kept after it died
#     would add some per killed process, 7 for an ib_write_bw pair's two
#     contexts, and about 13 pairs are killed per part in 90 s): fails when
#     the floor rises by 16 or more at both steps (the floor moves with the
#     flows alive at its sample: 218, 221 and 229 in a run with no leak);
#   - the resident set is printed, not checked: the allocator keeps what a
#     burst freed, so it climbs to the highest burst yet (in a 60 s run on
#     a slow machine it rose 1.6 MiB in one step at 46 s).
# The end, after every object is gone, is printed beside the start.
python3 - "$OUT/mem" "$quiet_start" "$quiet_end" <<'PY'
import sys
pts = [tuple(map(int, l.split())) for l in open(sys.argv[1]) if len(l.split()) == 4]
if len(pts) < 8:
    print("daemon memory: too few samples"); sys.exit(1)
T = pts[-1][0] or 1
step = max(1, len(pts) // 12)
sel = pts[::step] + ([pts[-1]] if (len(pts) - 1) % step else [])
print("daemon (s: RSS MiB / heap in use MiB / mappings): " +
      ", ".join(f"{t}: {r / 1024:.1f}/{h / 2**20:.1f}/{m}" for t, r, h, m in sel))
# After the first third (warm-up), three parts of equal length.
edges = [T / 3 + (T - T / 3) * k / 3 for k in range(3)] + [float("inf")]
parts = [[p for p in pts if lo <= p[0] < hi] for lo, hi in zip(edges, edges[1:])]
if any(not ps for ps in parts):
    print("daemon memory: a part after warm-up has no sample"); sys.exit(1)
floor = lambda ps, i: min(p[i] for p in ps)
peak = lambda ps, i: max(p[i] for p in ps)
floors = lambda i: [floor(ps, i) for ps in parts]
q0, q1 = (list(map(int, a.split())) for a in sys.argv[2:4])
if len(q0) != 4 or len(q1) != 4:
    print(f"daemon memory: no figures while idle (before: '{sys.argv[2]}', after: '{sys.argv[3]}')"); sys.exit(1)
mib = lambda v: f"{v / 2**20:.2f}"
print(f"daemon heap in use: floors {' / '.join(mib(v) for v in floors(2))} MiB in the three parts after warm-up "
      f"(peaks {' / '.join(mib(peak(ps, 2)) for ps in parts)}); idle before the traffic {mib(q0[2])}, after {mib(q1[2])}")
print(f"daemon mappings: floors {' / '.join(str(v) for v in floors(3))} in the three parts; idle before {q0[3]}, after {q1[3]}")
print(f"daemon VmRSS: peaks {' / '.join(f'{peak(ps, 1) / 1024:.1f}' for ps in parts)} MiB in the three parts; "
      f"idle before {q0[1] / 1024:.1f}, after {q1[1] / 1024:.1f}")
def grows(i, by):
    f = floors(i)
    return f[1] - f[0] >= by and f[2] - f[1] >= by
bad = []
if grows(2, 2**20): bad.append("the daemon's heap in use kept growing after warm-up")
if grows(3, 16): bad.append("the daemon's mappings kept growing after warm-up")
for b in bad: print("FAIL: " + b)
sys.exit(1 if bad else 0)
PY
[ $? -eq 0 ] || fail "the daemon's memory kept growing after warm-up"
for d in wa wb; do echo "$d: $(sim stats "$d" | awk '$1 ~ /^(tx_packets|rx_packets|retransmits|timeouts|duplicate_requests|latency.messages)$/ {printf "%s %s ", $1, $2}')"; done
python3 - "$OUT/wire.json" <<'PY' || fail "wire counters"
import json, sys
s = json.load(open(sys.argv[1])); f = s["faults"][0]
print(f"wire: {s['frames_in']} frames, {f['dropped']} dropped, {f['duplicated']} duplicated, {f['reordered']} reordered")
sys.exit(not (s["frames_in"] > 0 and f["dropped"] > 0))
PY
sys_finish "soak ${DURATION}s ($TYPE_B)"
