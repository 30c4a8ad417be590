#!/usr/bin/env bash
# Hostile frames into a device (issue 12, section 2): hostile_target gives
# device wa QPs of every type in INIT, RTR, RTS and ERR and MRs of every
# access mix, each between canary pages and PROT_NONE guards; wire_fuzz.py,
# on the same `simnic wire` with wb's MAC and address, sends it malformed
# RoCE frames (every header field, lengths, truncations, bad ICRCs, bad
# opcodes, RETHs and AtomicETHs at the MRs' edges; most with valid ICRCs) and
# CM MADs to QP1 mutated from the golden rping captures. Then: the daemon is
# the same process and serves, the target's canaries and read-only MRs are
# intact and an RC WRITE works, no frame wa sent carries a canary page's
# bytes (a READ outside an MR), the device counted the drops.
#
#   test_wire_fuzz.sh SIMNIC LIBSIMNIC_VERBS HOSTILE_TARGET [FRAMES [SEED]]
# (type of wa: $SIMNIC_DEVICE_TYPE, default soft)
set -u
SIMNIC=$1 LIB=$2 TARGET=$3 FRAMES=${4:-${SIMNIC_FUZZ_FRAMES:-20000}} SEED=${5:-$((1 + RANDOM))}
HERE=$(cd "$(dirname "$0")" && pwd)
GOLDEN=$(cd "$HERE/../golden" && pwd)
. "$HERE/lib.sh"
sys_init wirefuzz SIMNIC LIB TARGET
sys_dir out
OUT=$work/out
cleanup() {
  [ -n "${tpid:-}" ] && kill "$tpid" 2>/dev/null
  [ -n "${wire_pid:-}" ] && kill "$wire_pid" 2>/dev/null
  sys_cleanup
}
trap cleanup EXIT

"${AS[@]}" "$SIMNIC" wire --ready-file "$OUT/wire.ready" --pcap "$OUT/wire.pcap" -q &
wire_pid=$!
for _ in $(seq 50); do [ -s "$OUT/wire.ready" ] && break; sleep 0.1; done
WIRE=$(awk '{print $2}' "$OUT/wire.ready")
[ -n "$WIRE" ] || { echo "FAIL: the wire did not start"; exit 1; }
sim link add wa type "${SIMNIC_DEVICE_TYPE:-soft}" wire "127.0.0.1:$WIRE" addr 10.0.0.10/24 || { echo "FAIL: link add wa"; exit 1; }
devs+=(wa)
sim link add wb type soft wire "127.0.0.1:$WIRE" addr 10.0.0.11/24 || { echo "FAIL: link add wb"; exit 1; }
devs+=(wb)
mac() { sim link show -j "$1" | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["mac"])'; }
MAC_A=$(mac wa) MAC_B=$(mac wb)
dpid=$(daemon_pid)

"${AS[@]}" env SIMNIC_TEST_DEVICE=wa SIMNIC_TEST_PEER=wb timeout 900 "$SIMNIC" exec -- \
  "$TARGET" "$OUT/target.txt" "$OUT/done" >"$OUT/target.out" 2>&1 &
tpid=$!
for _ in $(seq 100); do [ -s "$OUT/target.txt" ] && break; sleep 0.1; done
[ -s "$OUT/target.txt" ] || { echo "FAIL: the target did not start: $(cat "$OUT/target.out")"; exit 1; }
# QPs and MRs the target describes; wa has spoken (ARP) with wb: the fuzzer
# takes wb's MAC and address.
mads=$(ls "$GOLDEN"/6.1/*/*rping*.pcap "$GOLDEN"/6.12/*/*rping*.pcap 2>/dev/null)
python3 "$HERE/wire_fuzz.py" "$WIRE" "$OUT/target.txt" --mac "$MAC_A" --src-mac "$MAC_B" \
  --src-ip 10.0.0.11 --dst-ip 10.0.0.10 --frames "$FRAMES" --seed "$SEED" --mad $mads || fail "wire_fuzz.py"
sleep 1
# The daemon is the one that started, and answers.
[ "$(daemon_pid)" = "$dpid" ] && kill -0 "$dpid" 2>/dev/null || fail "the daemon died"
sim stats wa >"$OUT/stats.out" || fail "simnic stats wa"
touch "$OUT/done"
wait "$tpid"
rc=$?
tpid=
cat "$OUT/target.out"
[ "$rc" -eq 0 ] || fail "hostile_target exited $rc"
drops=$(awk '$1 == "icrc_errors" || $1 ~ /^rx_drops/ || $1 ~ /^tx_nak/ {s += $2} END {print s + 0}' "$OUT/stats.out")
echo "wa: $(awk '$1 ~ /^(rx_packets|icrc_errors|rx_drops_bad_hdr|rx_drops_no_qp|rx_drops_qkey|rx_drops_pkey|tx_nak_inv_req|tx_nak_psn_seq|tx_nak_rem_access|remote_access_err|dma_faults)$/ {printf "%s %s ", $1, $2}' "$OUT/stats.out")"
[ "$drops" -gt 0 ] || fail "the device counted no dropped or refused frame"
# The fuzzer sends bad ICRCs and broken headers: a soft device counts them
# in its decode, a model device in its parser and ICRC stages, under the
# same names.
for k in icrc_errors rx_drops_bad_hdr; do
  [ "$(awk -v k="$k" '$1 == k {print $2}' "$OUT/stats.out")" -gt 0 ] 2>/dev/null || fail "$k not counted"
done
kill "$wire_pid"; wait "$wire_pid" 2>/dev/null; wire_pid=
# No frame from wa carries 16 bytes of a canary page (0xC5): a READ or an
# atomic outside its MR would.
python3 - "$OUT/wire.pcap" "$MAC_A" <<'PY' || fail "a frame of wa carries canary bytes"
import struct, sys
mac = bytes.fromhex(sys.argv[2].replace(":", ""))
f = open(sys.argv[1], "rb"); f.read(24); n = bad = 0
while True:
    h = f.read(16)
    if len(h) < 16: break
    d = f.read(struct.unpack("<IIII", h)[2])
    if d[6:12] != mac: continue
    n += 1
    bad += b"\xc5" * 16 in d
print(f"wire: {n} frames from wa, {bad} with canary bytes")
sys.exit(bad != 0)
PY
wait_no_qps || fail "QPs left behind"
nothing_left "after the target" qps cqs mrs pds
sys_finish "wire fuzz ($FRAMES frames, seed $SEED)"
