#!/usr/bin/env bash
# Unmodified Debian ibverbs tools against a simnic device, through
# LD_PRELOAD=libsimnic-verbs.so: `simnic link add` in a runtime directory of
# the test's own, the tool, then `simnic link delete`. No root needed.
#   test_tools.sh ibv_devices|ibv_devinfo SIMNIC LIBSIMNIC_VERBS
set -u
TOOL=$1 SIMNIC=$2 LIB=$3
DEV=simt_lo
export SIMNIC_RUNTIME_DIR=$(mktemp -d /tmp/simnic-verbs-tools.XXXXXX)
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
cleanup() {
  "$SIMNIC" daemon --stop >/dev/null 2>&1
  rm -rf "$SIMNIC_RUNTIME_DIR"
}
trap cleanup EXIT

# run CMD...: sets $out (stdout), $err (stderr) and $rc.
run() {
  local e; e=$(mktemp)
  out=$(LD_PRELOAD=$LIB "$@" 2>"$e"); rc=$?
  err=$(cat "$e"); rm -f "$e"
}
# has REGEX: $out contains a line matching the extended regex.
has() { grep -Eq -- "$1" <<<"$out" || fail "$TOOL: no line matching /$1/ in:"$'\n'"$out"; }

"$SIMNIC" link add "$DEV" type soft netdev lo || { echo "FAIL: simnic link add"; exit 1; }

case $TOOL in
ibv_devices)
  run ibv_devices
  [ "$rc" -eq 0 ] || fail "ibv_devices exited $rc: $err"
  [ -z "$err" ] || fail "ibv_devices wrote to stderr: $err"
  has '^ +device[[:space:]]+node GUID$'
  # lo's MAC is all zeros: node GUID = EUI-64 02:00:00:ff:fe:00:00:00.
  has "^ +$DEV[[:space:]]+020000fffe000000$"
  ;;
ibv_devinfo)
  run ibv_devinfo -l
  [ "$rc" -eq 0 ] || fail "ibv_devinfo -l exited $rc: $err"
  has "^"$'\t'"$DEV$"
  run ibv_devinfo -v -d "$DEV"
  [ "$rc" -eq 0 ] || fail "ibv_devinfo -v exited $rc: $err"
  [ -z "$err" ] || fail "ibv_devinfo -v wrote to stderr: $err"
  T=$'\t'
  has "^hca_id:$T$DEV$"
  has "transport:$T+InfiniBand \(0\)$"
  has "fw_ver:$T+[0-9]+\.[0-9]+\.[0-9]+$"
  has "node_guid:$T+0200:00ff:fe00:0000$"
  has "sys_image_guid:$T+0200:00ff:fe00:0000$"
  has "vendor_id:$T+0xffffff$"
  has "vendor_part_id:$T+0$"
  has "phys_port_cnt:$T+1$"
  has "max_mr_size:$T+0xffffffffffffffff$"
  has "page_size_cap:$T+0xfffff000$"
  has "max_qp:$T+1048560$"
  has "max_qp_wr:$T+1048576$"
  has "max_sge:$T+32$"
  has "max_sge_rd:$T+32$"
  has "max_cq:$T+1048576$"
  has "max_cqe:$T+32767$"
  has "max_mr:$T+524287$"
  has "max_pd:$T+1048576$"
  has "max_qp_rd_atom:$T+128$"
  has "max_res_rd_atom:$T+258048$"
  has "max_qp_init_rd_atom:$T+128$"
  has "atomic_cap:$T+ATOMIC_HCA \(1\)$"
  has "max_srq:$T+917503$"
  has "max_srq_sge:$T+27$"
  has "max_ah:$T+32767$"
  has "max_pkeys:$T+64$"
  has "local_ca_ack_delay:$T+15$"
  has "state:$T+PORT_ACTIVE \(4\)$"
  has "max_mtu:$T+4096 \(5\)$"
  # lo's MTU is 65536: 65536 - 80 rounds down to 4096 (the rxe rule).
  has "active_mtu:$T+4096 \(5\)$"
  has "link_layer:$T+Ethernet$"
  has "max_msg_sz:$T+0x800000$"
  has "port_cap_flags:$T+0x00010000$"
  has "pkey_tbl_len:$T+1$"
  has "gid_tbl_len:$T+1024$"
  has "phys_state:$T+LINK_UP \(5\)$"
  has "GID\[  0\]:$T+fe80::200:ff:fe00:0, RoCE v2$"
  has "GID\[  1\]:$T+::ffff:127\.0\.0\.1, RoCE v2$"
  # Without -d the device is listed next to any real ones.
  run ibv_devinfo
  [ "$rc" -eq 0 ] || fail "ibv_devinfo exited $rc: $err"
  has "^hca_id:$T$DEV$"
  ;;
*)
  echo "unknown tool $TOOL"; exit 2 ;;
esac

"$SIMNIC" link delete "$DEV" || fail "simnic link delete"
if [ "$failures" -eq 0 ]; then echo "$TOOL: all checks passed"; exit 0; fi
echo "$TOOL: $failures checks failed"; exit 1
