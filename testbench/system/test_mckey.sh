#!/bin/bash
# mckey (rdmacm-utils), unmodified, on a device bound to lo: UD multicast
# through rdma_cm (issue 11). Two receivers join 239.1.2.3, one with two IDs
# (two UD QPs of one process attached to the group), the other with one; a
# sender joins and sends 10 messages of 100 bytes to the group. Every QP of
# the group gets every message: each receiver reports its transfers complete
# and exits 0. While the group has members the netdev is a member of the IP
# group (IGMP, `ip maddr`), and it leaves with the last QP; the device holds
# nothing once the tools are gone.
#   test_mckey.sh SIMNIC LIB
set -u
SIMNIC=$1 LIB=$2
DEV=simmc_lo
GROUP=239.1.2.3
. "$(dirname "$0")/lib.sh"
sys_init mckey SIMNIC LIB

trap 'sys_cleanup recv1_pid recv2_pid' EXIT

link_add "$DEV"

in_group() { ip maddr show dev lo 2>/dev/null | grep -q "inet  *$GROUP\$"; }
in_group && fail "lo is in $GROUP before anyone joined"

app timeout 60 stdbuf -oL mckey -m "$GROUP" -b 127.0.0.1 -c 2 >"$work/recv1.out" 2>&1 &
recv1_pid=$!
app timeout 60 stdbuf -oL mckey -m "$GROUP" -b 127.0.0.1 >"$work/recv2.out" 2>&1 &
recv2_pid=$!
# Receivers are ready once each ID has its join event (their QPs are then
# attached: librdmacm attaches before it hands the event over).
for _ in $(seq 100); do
  [ "$(grep -c '^mckey: joined dgid: ::ffff:239.1.2.3' "$work/recv1.out")" -eq 2 ] &&
    grep -q '^mckey: joined dgid: ::ffff:239.1.2.3' "$work/recv2.out" && break
  sleep 0.1
done
grep -q '^mckey: joined dgid: ::ffff:239.1.2.3 mlid 0x0 sl 0' "$work/recv2.out" ||
  fail "receiver's join event: $(cat "$work/recv2.out")"
in_group || fail "lo is not in $GROUP while QPs are attached: $(ip maddr show dev lo)"

app timeout 60 stdbuf -oL mckey -m "$GROUP" -s -b 127.0.0.1 >"$work/send.out" 2>&1
send_rc=$?
[ "$send_rc" -eq 0 ] || fail "sender exited $send_rc: $(cat "$work/send.out")"
grep -q '^data transfers complete' "$work/send.out" || fail "sender report: $(cat "$work/send.out")"

for r in 1 2; do
  pidvar=recv${r}_pid
  wait "${!pidvar}"
  rc=$?
  printf -v "$pidvar" '%s' ''
  [ "$rc" -eq 0 ] || fail "receiver $r exited $rc: $(cat "$work/recv$r.out")"
  grep -q '^data transfers complete' "$work/recv$r.out" || fail "receiver $r report: $(cat "$work/recv$r.out")"
  grep -q '^return status 0' "$work/recv$r.out" || fail "receiver $r status: $(cat "$work/recv$r.out")"
done

# The daemon learns of each process's end from its closed connection.
for _ in $(seq 50); do
  sim resource show -j 2>&1 | grep -Eq '"contexts":0[,}]' && break
  sleep 0.1
done
nothing_left "after exit" qps cqs mrs pds
in_group && fail "lo still in $GROUP after every QP left"

sys_finish mckey
