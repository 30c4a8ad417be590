#!/usr/bin/env bash
# `simnic resource show` and `simnic doctor` over more objects than one
# control reply carries: a process holding 25,000 MRs and 300 QPs (some
# 3 MB of JSON, past the protocol's 1 MiB message and the 416 KiB a default
# Linux lets a socket buffer). The daemon answers in pages (control/
# resources.h); every object must be listed once, in order, and the summary
# and the doctor's checks must still work. The same for `simnic stats` of a
# device with congestion control on and 6,000 QPs (each one's reaction
# point).
#
# In a network namespace of its own (a user namespace too when not root),
# so that its device on lo takes nobody's UDP 4791.
#   test_resource_pages.sh SIMNIC LIBSIMNIC_VERBS MANY_OBJECTS
set -u
. "$(dirname "$0")/lib.sh"
own_netns "$@"
SIMNIC=$1 LIB=$2 PROG=$3
MRS=25000 QPS=300
sys_init --as-caller pages
ip link set lo up
cleanup() {
  for p in ${holder:-} ${cc_holder:-} ${held:-}; do kill "$p" 2>/dev/null; done
  "$SIMNIC" daemon --stop >/dev/null 2>&1
  rm -rf "$work"
}
trap cleanup EXIT

# hold NAME ARGS...: many_objects ARGS in the background, its pid in
# $held, its output in $work/NAME.out; fails unless it says "ready"
# within 60 s.
hold() {
  local name=$1
  shift
  env LD_PRELOAD="$LIB" "$PROG" "$@" >"$work/$name.out" 2>&1 &
  held=$!
  for _ in $(seq 600); do
    grep -q ready "$work/$name.out" && return 0
    kill -0 "$held" 2>/dev/null || break
    sleep 0.1
  done
  grep -q ready "$work/$name.out"
}

"$SIMNIC" link add pages_lo type soft netdev lo || { echo "FAIL: link add"; exit 1; }
hold holder pages_lo "$MRS" "$QPS" || { echo "FAIL: many_objects: $(cat "$work/holder.out")"; exit 1; }
holder=$held

# The summary: counts only.
out=$("$SIMNIC" resource show 2>&1) || fail "resource show: $out"
grep -Eq "^0: pages_lo: pd 1 cq 1 qp $QPS mr $MRS srq 0 ah 0 ctx 1$" <<<"$out" || fail "summary: $out"

# Every MR once, in MR number order, each the holder's.
"$SIMNIC" resource show mr >"$work/mr.txt" 2>"$work/mr.err" || fail "resource show mr: $(cat "$work/mr.err")"
[ "$(wc -l <"$work/mr.txt")" -eq "$MRS" ] || fail "resource show mr listed $(wc -l <"$work/mr.txt") MRs, not $MRS"
awk '{print $4}' "$work/mr.txt" >"$work/mrn.txt"
sort -n -u "$work/mrn.txt" | cmp -s - "$work/mrn.txt" || fail "MR numbers not each once in order"
comm=$(basename "$PROG" | cut -c1-15)  # the kernel's 15 bytes of it
[ "$(grep -c " pid $holder comm $comm$" "$work/mr.txt")" -eq "$MRS" ] ||
  fail "MRs not all the holder's ($holder $comm): $(head -2 "$work/mr.txt")"
[ -s "$work/mr.err" ] && fail "resource show mr said: $(cat "$work/mr.err")"

# The same as JSON: longer than any one message.
"$SIMNIC" resource show mr -j >"$work/mr.json" || fail "resource show mr -j"
bytes=$(wc -c <"$work/mr.json")
[ "$bytes" -gt 1048576 ] || fail "the MR list is $bytes bytes of JSON: no longer than one message, nothing paged"
n=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))))' "$work/mr.json") ||
  fail "resource show mr -j is not JSON"
[ "$n" = "$MRS" ] || fail "resource show mr -j listed $n MRs"

# QPs, the PD (its users: every MR and QP), and the summary's JSON.
[ "$("$SIMNIC" resource show qp | grep -c " type RC state RESET ")" -eq "$QPS" ] || fail "resource show qp"
"$SIMNIC" resource show pd | grep -Eq "pdn 1 users $((MRS + QPS)) " || fail "resource show pd: $("$SIMNIC" resource show pd)"
python3 - "$QPS" <<PY || fail "resource show -j: $("$SIMNIC" resource show -j | head -c 300)"
import json, subprocess, sys
d = json.loads(subprocess.run(["$SIMNIC", "resource", "show", "-j"], capture_output=True, check=True).stdout)
assert len(d) == 1 and d[0]["name"] == "pages_lo", d
assert d[0]["mrs"] == $MRS and len(d[0]["qp_list"]) == int(sys.argv[1]), (d[0]["mrs"], len(d[0]["qp_list"]))
assert d[0]["gids"], "no GIDs"
assert "mr_list" not in d[0], "the summary carries the MR list"
PY

# The doctor reads every object's owner the same way.
out=$("$SIMNIC" doctor 2>&1)
grep -Eq "^OK +stale +every QP, CQ, MR, MW, PD and SRQ belongs to a running process" <<<"$out" ||
  fail "doctor's stale check: $out"
grep -Eq "^OK +gid +pages_lo " <<<"$out" || fail "doctor's gid check: $out"

# `simnic stats` of a device with congestion control on lists every RC QP's
# reaction point: 6,000 QPs in INIT, some 1.3 MB, come in pages too.
CCQPS=6000
kill "$holder"
wait "$holder" 2>/dev/null  # its context's connection closed: the device is free
"$SIMNIC" link delete pages_lo || fail "link delete pages_lo"  # lo's UDP 4791 for the next
printf '[congestion]\nenable = 1\n' >"$work/cc.toml"
"$SIMNIC" link add pages_cc type soft netdev lo config "$work/cc.toml" || fail "link add pages_cc"
hold cc_holder pages_cc 0 "$CCQPS" init ||
  fail "many_objects with congestion control: $(cat "$work/cc_holder.out")"
cc_holder=$held
"$SIMNIC" stats pages_cc >"$work/stats.txt" 2>"$work/stats.err" || fail "stats: $(cat "$work/stats.err")"
grep -q "^congestion control: on (DCQCN)$" "$work/stats.txt" || fail "stats: congestion control not on"
grep -E "^  qp " "$work/stats.txt" | awk '{print $2}' >"$work/ccqpn.txt"
[ "$(wc -l <"$work/ccqpn.txt")" -eq "$CCQPS" ] || fail "stats listed $(wc -l <"$work/ccqpn.txt") QPs, not $CCQPS"
sort -n -u "$work/ccqpn.txt" | cmp -s - "$work/ccqpn.txt" || fail "stats' QPs not each once in QPN order"
"$SIMNIC" stats pages_cc -j >"$work/stats.json" || fail "stats -j"
bytes=$(wc -c <"$work/stats.json")
[ "$bytes" -gt 1048576 ] || fail "the congestion list is $bytes bytes of JSON: nothing paged"
n=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["congestion"]["qps"]))' "$work/stats.json")
[ "$n" = "$CCQPS" ] || fail "stats -j listed $n QPs"
grep -q more_after "$work/stats.json" && fail "stats -j kept the daemon's page cursor"
kill "$cc_holder"

sys_finish "resource pages"
