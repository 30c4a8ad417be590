#!/usr/bin/env bash
# Unmodified ibstat (infiniband-diags, on libibumad) against simnic devices,
# through `simnic exec`: the CA list, each CA's record as ibstat prints a
# kernel rxe device, and the GUIDs checked against ibv_devinfo's. A second
# device (on a veth in a private network namespace, so root only)
# checks that the list holds both; without root that part is skipped. The
# libibmad tools (perfquery) must fail cleanly: simnic has no MAD interface.
#   test_ibstat.sh SIMNIC LIBSIMNIC_VERBS
set -u
SIMNIC=$1 LIB=$2
DEV=simt_lo DEV2=simt_d0
export SIMNIC_RUNTIME_DIR=$(mktemp -d /tmp/simnic-ibstat.XXXXXX)
export SIMNIC_VERBS_LIB=$LIB
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
ns=""
in_ns() { if [ -n "$ns" ]; then ip netns exec "$ns" "$@"; else "$@"; fi; }
cleanup() {
  in_ns "$SIMNIC" daemon --stop >/dev/null 2>&1
  [ -n "$ns" ] && ip netns del "$ns" 2>/dev/null
  rm -rf "$SIMNIC_RUNTIME_DIR"
}
trap cleanup EXIT

command -v ibstat >/dev/null || { echo "FAIL: ibstat not installed (infiniband-diags)"; exit 1; }

if [ "$(id -u)" -eq 0 ]; then
  ns=simnic-ibstat-$$
  ip netns add "$ns" || { echo "FAIL: ip netns add"; exit 1; }
  ip -n "$ns" link set lo up
  # A veth pair (no dummy module in containers); d0's peer stays idle.
  ip -n "$ns" link add d0 type veth peer name d0p
  ip -n "$ns" addr add 10.202.0.1/24 dev d0
  ip -n "$ns" link set d0p up
  ip -n "$ns" link set d0 up
else
  echo "not root: the two-device checks are skipped"
fi

# run CMD...: under `simnic exec`; sets $out (stdout), $err (stderr), $rc.
run() {
  local e; e=$(mktemp)
  out=$(in_ns "$SIMNIC" exec -- "$@" 2>"$e"); rc=$?
  err=$(cat "$e"); rm -f "$e"
}
# ok WHAT: the last run exited 0 and wrote nothing to stderr.
ok() {
  [ "$rc" -eq 0 ] || fail "$1 exited $rc: $err"
  [ -z "$err" ] || fail "$1 wrote to stderr: $err"
}
has() { grep -Eq -- "$1" <<<"$out" || fail "no line matching /$1/ in:"$'\n'"$out"; }
same() { [ "$out" == "$2" ] || fail "$1 printed:"$'\n'"$out"$'\n'"instead of:"$'\n'"$2"; }

in_ns "$SIMNIC" link add "$DEV" type soft netdev lo || { echo "FAIL: simnic link add $DEV"; exit 1; }
if [ -n "$ns" ]; then
  in_ns "$SIMNIC" link add "$DEV2" type soft netdev d0 || { echo "FAIL: simnic link add $DEV2"; exit 1; }
fi

# What ibv_devinfo says: firmware version, node GUID, and GID 0 whose
# interface ID is the port GUID.
# guids DEV: sets $fw_ver, $node_guid and $port_guid (16 hex digits each).
guids() {
  run ibv_devinfo -v -d "$1"
  ok "ibv_devinfo -v -d $1"
  fw_ver=$(sed -n 's/^[[:space:]]*fw_ver:[[:space:]]*\([0-9.]*\)$/\1/p' <<<"$out")
  [ -n "$fw_ver" ] || fail "$1: no fw_ver in ibv_devinfo's output"
  node_guid=$(sed -n 's/^[[:space:]]*node_guid:[[:space:]]*\([0-9a-f:]*\)$/\1/p' <<<"$out" | tr -d :)
  local gid0; gid0=$(sed -n 's/^[[:space:]]*GID\[  0\]:[[:space:]]*\([0-9a-f:]*\),.*/\1/p' <<<"$out")
  port_guid=$(python3 -c 'import ipaddress,sys; print(ipaddress.IPv6Address(sys.argv[1]).packed[8:].hex())' "$gid0")
  [ ${#node_guid} -eq 16 ] || fail "$1: no node_guid in ibv_devinfo's output"
  [ ${#port_guid} -eq 16 ] || fail "$1: no GID 0 in ibv_devinfo's output"
}
guids "$DEV"
# lo's MAC is all zeros: both are the EUI-64 02:00:00:ff:fe:00:00:00.
[ "$node_guid" == 020000fffe000000 ] || fail "node GUID $node_guid"
[ "$port_guid" == 020000fffe000000 ] || fail "port GUID $port_guid"

T=$'\t'
# A kernel rxe device as ibstat prints it: no CA type or hardware version
# (rxe's sysfs has no hca_type or hw_rev), 1X SDR (rxe's speed on a netdev
# without ethtool link settings), no LIDs, the CM capability only; the
# firmware version is ibv_devinfo's.
ca_block() { # NAME NODE_GUID PORT_GUID
  printf '%s\n' "CA '$1'" "${T}CA type: " "${T}Number of ports: 1" "${T}Firmware version: $fw_ver" \
    "${T}Hardware version: " "${T}Node GUID: 0x$2" "${T}System image GUID: 0x$2" "${T}Port 1:"
  port_lines "$T$T" "$3"
}
port_lines() { # INDENT PORT_GUID
  printf '%s\n' "$1State: Active" "$1Physical state: LinkUp" "$1Rate: 2.5" "$1Base lid: 0" \
    "$1LMC: 0" "$1SM lid: 0" "$1Capability mask: 0x00010000" "$1Port GUID: 0x$2" \
    "$1Link layer: Ethernet"
}
want=$(ca_block "$DEV" "$node_guid" "$port_guid")

run ibstat "$DEV"
ok "ibstat $DEV"
same "ibstat $DEV" "$want"

run ibstat "$DEV" 1
ok "ibstat $DEV 1"
same "ibstat $DEV 1" "$(printf '%s\n' "CA: '$DEV'" "Port 1:"; port_lines "" "$port_guid")"

run ibstat -s "$DEV"
ok "ibstat -s $DEV"
same "ibstat -s $DEV" "$(ca_block "$DEV" "$node_guid" "$port_guid" | head -7)"

run ibstat -p "$DEV"
ok "ibstat -p $DEV"
same "ibstat -p $DEV" "0x$port_guid"

run ibstat "$DEV" 2
[ "$rc" -eq 255 ] || fail "ibstat $DEV 2 exited $rc, not 255"
grep -q "'$DEV' has no port number 2 - max (1)" <<<"$err" || fail "ibstat $DEV 2: stderr '$err'"

# An unknown name: ibstat's own error, as without simnic.
run ibstat nosuchdev
[ "$rc" -eq 255 ] || fail "ibstat nosuchdev exited $rc, not 255"
grep -q "main: 'nosuchdev' IB device can't be found" <<<"$err" || fail "ibstat nosuchdev: stderr '$err'"

# No MAD interface: a libibmad tool fails with its own message, no crash.
if command -v perfquery >/dev/null; then
  run perfquery -C "$DEV" -P 1
  # 255 is its exit(-1); 129-159 would be a signal.
  [ "$rc" -eq 255 ] || fail "perfquery -C $DEV exited $rc: $err"
  grep -q "can't open UMAD port ($DEV:1)" <<<"$err" || fail "perfquery -C $DEV: stderr '$err'"
fi

# Every CA: ours in the list, sorted, each with its record.
run ibstat -l
ok "ibstat -l"
has "^$DEV$"
run ibstat
ok "ibstat"
grep -qxF "CA '$DEV'" <<<"$out" || fail "ibstat: no CA '$DEV' in:"$'\n'"$out"
[[ $out == *"$want"* ]] || fail "ibstat: the $DEV record differs from:"$'\n'"$want"$'\n'"in:"$'\n'"$out"
run ibstat -p
ok "ibstat -p"
has "^0x$port_guid$"

if [ -n "$ns" ]; then
  lo_guid=$port_guid
  guids "$DEV2"
  [ "$node_guid" != 020000fffe000000 ] || fail "$DEV2 has lo's node GUID"
  run ibstat -l
  ok "ibstat -l"
  # ibstat sorts the list by name.
  [ "$(grep -E "^($DEV|$DEV2)$" <<<"$out")" == "$DEV2"$'\n'"$DEV" ] || fail "ibstat -l: '$out'"
  run ibstat
  ok "ibstat"
  [[ $out == *"$(ca_block "$DEV2" "$node_guid" "$port_guid")"* ]] || fail "ibstat: no $DEV2 record in:"$'\n'"$out"
  [[ $out == *"$want"* ]] || fail "ibstat: no $DEV record with two devices"
  run ibstat -p
  ok "ibstat -p"
  has "^0x$port_guid$"
  has "^0x$lo_guid$"
  in_ns "$SIMNIC" link delete "$DEV2" || fail "simnic link delete $DEV2"
fi

in_ns "$SIMNIC" link delete "$DEV" || fail "simnic link delete $DEV"
# Gone from the list with the device.
run ibstat -l
ok "ibstat -l (no device)"
grep -q "^simt_" <<<"$out" && fail "ibstat -l still lists: $out"

if [ "$failures" -eq 0 ]; then echo "ibstat: all checks passed"; exit 0; fi
echo "ibstat: $failures checks failed"; exit 1
