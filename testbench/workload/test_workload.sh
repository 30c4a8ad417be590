#!/usr/bin/env bash
# simnic-workload between a soft and a model device on a `simnic wire` over
# lo (their TCP side channel over lo too). As an ordinary user: under root
# the test drops to `nobody` for everything it starts (lib.sh).
#
#   test_workload.sh CASE SIMNIC LIBSIMNIC_VERBS SIMNIC_WORKLOAD
#
# CASE:
#   soft_model  the integrity set and seeds 1-12 with the model device as
#               requester, the integrity set and seeds 13-24 with the soft one
#   mtu4096     devices of MTU 9000 (active MTU 4096): integrity set, seeds
#   broken      the checker catches a corrupted byte (a WRITE's, a READ's, an
#               atomic's), the shrinker cuts a failing case down to one
#               message, and the command it prints fails the same way again;
#               --no-empty-rdma turns the empty RDMA messages into 1-byte ones
#   faults      a wire dropping and reordering 2% (then duplicating too, then
#               corrupting and delaying): RC exact, UC and UD lose messages
#               and nothing else
# Results go to $SIMNIC_COVERIFY_RESULTS/results.jsonl (kind workload) when
# that is set.
set -u
CASE=$1 SIMNIC=$2 LIB=$3 WL=$4
SYS=$(cd "$(dirname "$0")/../system" && pwd)
. "$SYS/lib.sh"
sys_init workload SIMNIC LIB WL
sys_dir out
OUT=$work/out
RESULTS=()
if [ -n "${SIMNIC_COVERIFY_RESULTS:-}" ]; then
  # The results file is shared with the other harnesses, which may have
  # made it as root; the program runs as the test's unprivileged user.
  mkdir -p "$SIMNIC_COVERIFY_RESULTS" && chmod 777 "$SIMNIC_COVERIFY_RESULTS" 2>/dev/null
  touch "$SIMNIC_COVERIFY_RESULTS/results.jsonl" && chmod 666 "$SIMNIC_COVERIFY_RESULTS/results.jsonl" 2>/dev/null
  RESULTS=(--results "$SIMNIC_COVERIFY_RESULTS/results.jsonl")
fi
server_pid=

cleanup() {
  [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null
  [ -n "${wire_pid:-}" ] && kill "$wire_pid" 2>/dev/null
  sys_cleanup
}
trap cleanup EXIT

# start_wire [FAULT RULE...]: a wire on an ephemeral port, its counters in
# $OUT/wire-stats.json; then wa (soft) and wb (model) on it, of $MTU.
start_wire() {
  local f fault=()
  for f in "$@"; do fault+=(--fault "$f"); done
  rm -f "$OUT/wire.ready"
  "${AS[@]}" "$SIMNIC" wire --ready-file "$OUT/wire.ready" --stats "$OUT/wire-stats.json" --seed 7 -q "${fault[@]}" &
  wire_pid=$!
  for _ in $(seq 50); do [ -s "$OUT/wire.ready" ] && break; sleep 0.1; done
  WIRE=$(awk '{print $2}' "$OUT/wire.ready")
  [ -n "$WIRE" ] || { echo "FAIL: the wire did not start"; exit 1; }
  sim link add wa type soft wire "127.0.0.1:$WIRE" addr 10.0.0.10/24 mtu "${MTU:-1500}" ||
    { echo "FAIL: link add wa"; exit 1; }
  sim link add wb type model wire "127.0.0.1:$WIRE" addr 10.0.0.11/24 mtu "${MTU:-1500}" ||
    { echo "FAIL: link add wb"; exit 1; }
}
stop_wire() {
  sim link delete wa; sim link delete wb
  kill "$wire_pid"; wait "$wire_pid" 2>/dev/null; wire_pid=
}

# workload SERVER_DEV CLIENT_DEV TAG ARGS...: a server on SERVER_DEV, the
# client on CLIENT_DEV with ARGS; the client's output in $OUT/TAG.out, its
# exit status in $rc. The server must end cleanly whatever the verdict.
workload() {
  local sdev=$1 cdev=$2 tag=$3 port
  shift 3
  port=$(free_port)
  "${AS[@]}" env LD_PRELOAD="$LIB" timeout 150 "$WL" -d "$sdev" -g 1 -p "$port" >"$OUT/$tag.server" 2>&1 &
  server_pid=$!
  wait_listen "$port" "$server_pid" || { fail "$tag: the server did not listen: $(cat "$OUT/$tag.server")"; return; }
  "${AS[@]}" env LD_PRELOAD="$LIB" timeout 150 "$WL" -d "$cdev" -g 1 -p "$port" "$@" 127.0.0.1 >"$OUT/$tag.out" 2>&1
  rc=$?
  wait "$server_pid" || fail "$tag: the server exited $?: $(tail -3 "$OUT/$tag.server")"
  server_pid=
  grep -q "cases served" "$OUT/$tag.server" || fail "$tag: the server did not finish: $(tail -3 "$OUT/$tag.server")"
  tail -1 "$OUT/$tag.out"
}
# must_pass TAG: the run passed, and says so in its summary.
must_pass() {
  [ "$rc" -eq 0 ] && grep -q "^simnic-workload: pass:" "$OUT/$1.out" ||
    fail "$1: exited $rc: $(grep -A1 FAIL "$OUT/$1.out" | head -6)"
}

case_soft_model() {
  start_wire
  workload wa wb model_req --integrity --seeds 1-12 -v "${RESULTS[@]}" --target model --peer soft
  must_pass model_req
  grep -q "integrity 1: pass: integrity RC mtu 1024 qps 2 msgs 66" "$OUT/model_req.out" ||
    fail "the integrity set's RC case did not run"
  [ "$(grep -c '^seed [0-9]*: pass' "$OUT/model_req.out")" -eq 12 ] || fail "not 12 seeds passed"
  workload wb wa soft_req --integrity --seeds 13-24 "${RESULTS[@]}" --target soft --peer model
  must_pass soft_req
  # Every QP, CQ and MR the cases made is gone.
  nothing_left "after the runs" qps cqs mrs pds
  stop_wire
}

case_mtu4096() {
  MTU=9000 start_wire
  workload wa wb mtu4096 --integrity --seeds 101-108 -v "${RESULTS[@]}" --target model --peer soft
  must_pass mtu4096
  grep -q "integrity 1: pass: integrity UD mtu 4096" "$OUT/mtu4096.out" || fail "the integrity set did not run at MTU 4096"
  grep -q '"mtu": 4096' "${SIMNIC_COVERIFY_RESULTS:-$OUT}/results.jsonl" 2>/dev/null || [ ${#RESULTS[@]} -eq 0 ] ||
    fail "the results line does not say MTU 4096"
  stop_wire
}

case_broken() {
  start_wire
  # 1. One byte of a WRITE's source spoiled after the payload was written:
  # the responder's memory check names the message and the byte.
  workload wa wb write --integrity-only RC --inject-corrupt 30 --shrink
  [ "$rc" -eq 1 ] || fail "a corrupted WRITE passed (exit $rc)"
  grep -q "responder's memory differs in 1 bytes, first at message 30 (write 1025 B)" "$OUT/write.out" ||
    fail "the corrupted WRITE was not named: $(grep -m2 'differs\|FAIL' "$OUT/write.out")"
  # The shrinker: down to that one WRITE, and a command that reproduces it.
  grep -q "shrunk in [0-9]* runs to 1 message(s)" "$OUT/write.out" ||
    fail "the shrinker did not reach one message: $(grep shrunk "$OUT/write.out")"
  grep -q "QP 0 message 30: write" "$OUT/write.out" || fail "the minimal case is not message 30"
  local again
  again=$(sed -n 's/^rerun: [^ ]* -d wb -g 1 -p [0-9]* \(.*\) SERVER$/\1/p' "$OUT/write.out")
  [ -n "$again" ] || fail "no rerun command: $(tail -3 "$OUT/write.out")"
  read -r -a again_args <<<"$again"
  workload wa wb rerun "${again_args[@]}"
  [ "$rc" -eq 1 ] && grep -q "1 cases.*1 failed" "$OUT/rerun.out" && grep -q "message 30 (write" "$OUT/rerun.out" ||
    fail "the rerun command ($again) did not fail the same way: $(tail -2 "$OUT/rerun.out")"
  # 2. A READ's data and an atomic's result spoiled on arrival: the
  # requester's checks catch them.
  workload wa wb read --integrity-only RC --inject-corrupt 55
  [ "$rc" -eq 1 ] && grep -q "requester's memory differs in 1 bytes, first at message 55 (read" "$OUT/read.out" ||
    fail "a corrupted READ was not caught: $(grep -m1 'FAIL\|pass' "$OUT/read.out")"
  workload wa wb atomic --integrity-only RC --inject-corrupt 61
  [ "$rc" -eq 1 ] && grep -q "message 61 (faa) returned" "$OUT/atomic.out" ||
    fail "a corrupted atomic result was not caught: $(grep -m1 'FAIL\|pass' "$OUT/atomic.out")"
  # 3. A drawn case (seed 5: RC, sends and writes on 2 QPs; its message 40
  # on QP 0 is a 149-byte WRITE) with a spoiled byte, and the shrinker
  # starting from a random case.
  workload wa wb seed --seed 5 --inject-corrupt 40 --shrink
  [ "$rc" -eq 1 ] && grep -q "message 40 (write 149 B): byte 74 of its WRITE target" "$OUT/seed.out" ||
    fail "a corrupted WRITE of a drawn case was not caught: $(grep -m2 'FAIL\|differs' "$OUT/seed.out")"
  grep -q "shrunk in [0-9]* runs to 1 message(s)" "$OUT/seed.out" ||
    fail "seed 5 was not shrunk to one message: $(grep shrunk "$OUT/seed.out")"
  grep "shrunk\|^rerun" "$OUT/write.out" "$OUT/seed.out"
  # 4. --no-empty-rdma: the integrity set's zero-length WRITE, WRITE_IMM and
  # READ (one of each on each of its 2 QPs) carry 1 byte instead, on both
  # sides (the server takes the case from the client), and nothing else.
  workload wa wb plain --integrity-only RC
  must_pass plain
  workload wa wb noempty --integrity-only RC --no-empty-rdma
  must_pass noempty
  local b0 b1
  b0=$(sed -n 's/^simnic-workload: pass: .* messages, \([0-9]*\) bytes in .*/\1/p' "$OUT/plain.out")
  b1=$(sed -n 's/^simnic-workload: pass: .* messages, \([0-9]*\) bytes in .*/\1/p' "$OUT/noempty.out")
  [ -n "$b0" ] && [ -n "$b1" ] && [ $((b1 - b0)) -eq 6 ] ||
    fail "--no-empty-rdma should add 6 bytes to the RC integrity set (6 empty RDMA messages): $b0 -> $b1"
  stop_wire
}

wire_stat() {  # wire_stat KEY: the sum of KEY over the wire's fault rules
  python3 - "$OUT/wire-stats.json" "$1" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
def walk(o, k):
    if isinstance(o, dict):
        return sum(walk(v, k) if isinstance(v, (dict, list)) else (v if n == k and isinstance(v, int) else 0)
                   for n, v in o.items())
    if isinstance(o, list):
        return sum(walk(v, k) for v in o)
    return 0
print(walk(s, k=sys.argv[2]))
PY
}

case_faults() {
  start_wire drop=2%,reorder=2%
  workload wa wb loss --integrity --seeds 1-8 --loss-ok -v "${RESULTS[@]}" --target model --peer soft \
    --name "integrity + seeds 1-8, 2% drop and reorder"
  must_pass loss
  grep -q "UC/UD messages lost: [1-9]" "$OUT/loss.out" || fail "nothing was lost on UC/UD: is the wire lossy?"
  stop_wire
  echo "wire: dropped $(wire_stat dropped), reordered $(wire_stat reordered) frames"
  [ "$(wire_stat dropped)" -gt 0 ] || fail "the wire dropped nothing"
  # Duplication too: RC still exact; a duplicated UC or UD frame may deliver
  # its message twice (UD has no PSN check, UC restarts at any first packet).
  start_wire drop=1%,dup=2%
  workload wb wa dup --integrity --seeds 9-14 --dup-ok "${RESULTS[@]}" --target soft --peer model \
    --name "integrity + seeds 9-14, 1% drop, 2% duplication"
  must_pass dup
  stop_wire
  echo "wire: dropped $(wire_stat dropped), duplicated $(wire_stat duplicated) frames"
  # Corruption and late frames without duplication: a UC or UD message
  # whose frame was lost or spoiled is missing, and no other arrives twice
  # (--loss-ok without --dup-ok) or differs.
  start_wire drop=2%,reorder=2%,corrupt=3%,delay=2ms,delayed=2%
  workload wa wb ucud --integrity-only UC,UD --seeds 15-16 --qp-type UC --loss-ok "${RESULTS[@]}" \
    --target model --peer soft --name "UC, UD integrity + seeds 15-16, 2% drop, reorder, delay, 3% corrupt"
  must_pass ucud
  grep -q "pass: 4 cases" "$OUT/ucud.out" || fail "--integrity-only UC,UD with 2 seeds should run 4 cases"
  stop_wire
  echo "wire: dropped $(wire_stat dropped), corrupted $(wire_stat corrupted), delayed $(wire_stat delayed) frames"
  [ "$(wire_stat corrupted)" -gt 0 ] || fail "the wire corrupted nothing"
}

"case_$CASE"
sys_finish "workload.$CASE"
