#!/usr/bin/env bash
# libsimnic-verbs.so exports libibverbs', librdmacm's and libibumad's names
# only, covers every libibverbs and librdmacm entry point the common tools
# import that can receive a simnic object and every libibumad one that takes a
# CA name or record, and changes nothing for a process that sees no simnic
# device.
set -u
LIB=$1
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

exports=$(nm -D --defined-only "$LIB" | awk '{print $3}' | sed 's/@.*//' | sort -u)
for s in $exports; do
  case $s in ibv_*|_ibv_*|rdma_*|umad_*|stat|stat64|lstat|lstat64|access|eaccess|euidaccess|faccessat|open|open64) ;; *) fail "unexpected export $s" ;; esac
done

# Imports that never see a device object: strings and global switches.
object_free='^(ibv_wc_status_str|ibv_node_type_str|ibv_port_state_str|ibv_event_type_str|ibv_fork_init|ibv_is_fork_initialized|ibv_rate_to_mult|mult_to_ibv_rate|ibv_rate_to_mbps|mbps_to_ibv_rate)$'
for tool in ibv_devices ibv_devinfo ibv_rc_pingpong ibv_uc_pingpong ibv_ud_pingpong \
            ibv_srq_pingpong ib_write_bw ib_send_lat; do
  path=$(command -v "$tool") || continue
  for s in $(objdump -T "$path" | awk '$NF ~ /^_?ibv_/ && /\*UND\*/ {print $NF}' | sort -u); do
    [[ $s =~ $object_free ]] && continue
    grep -qx "$s" <<<"$exports" || fail "$tool imports $s, which libsimnic-verbs.so does not define"
  done
done
# librdmacm: every rdma_* the tools import (rsocket's r* calls take no CM object).
for tool in rping ib_write_bw ib_send_bw; do
  path=$(command -v "$tool") || continue
  for s in $(objdump -T "$path" | awk '$NF ~ /^rdma_/ && /\*UND\*/ {print $NF}' | sort -u); do
    grep -qx "$s" <<<"$exports" || fail "$tool imports $s, which libsimnic-verbs.so does not define"
  done
done
# And librdmacm's whole public API, so that no call on a simnic object
# reaches the real library.
for s in $(objdump -T /usr/lib/x86_64-linux-gnu/librdmacm.so.1 2>/dev/null | awk '$NF ~ /^rdma_/ && !/\*UND\*/ {print $NF}' | sort -u); do
  grep -qx "$s" <<<"$exports" || fail "librdmacm exports $s, which libsimnic-verbs.so does not define"
done

# libibumad: the calls that take a CA name or a CA/port record must all be
# defined (those on a port id never see a simnic device: umad_open_port
# refuses one). Checked against what ibstat and libibmad (every other diag
# goes through it) import, and what libibumad calls of its own exports
# through its PLT (those internal calls bind to ours too).
umad_named=(umad_get_ca umad_release_ca umad_get_port umad_release_port umad_get_ca_portguids
            umad_get_cas_names umad_get_issm_path umad_open_port umad_get_ca_device_list
            umad_free_ca_device_list)
for s in "${umad_named[@]}"; do
  grep -qx "$s" <<<"$exports" || fail "libsimnic-verbs.so does not define $s"
done
umad_imports() {
  objdump -T "$1" | awk '$NF ~ /^umad_/ && /\*UND\*/ {print $NF}'
  objdump -R "$1" | awk '$2 == "R_X86_64_JUMP_SLOT" && $3 ~ /^umad_/ {sub(/@.*/, "", $3); print $3}'
}
for f in /usr/sbin/ibstat /lib/x86_64-linux-gnu/libibmad.so.5 /lib/x86_64-linux-gnu/libibumad.so.3; do
  [ -e "$f" ] || continue
  for s in $(umad_imports "$f" | sort -u); do
    case " ${umad_named[*]} " in *" $s "*) ;; *) continue ;; esac
    grep -qx "$s" <<<"$exports" || fail "$f imports $s, which libsimnic-verbs.so does not define"
  done
done

# No simnic device (an empty runtime directory, so no daemon): the tools
# behave exactly as without the library, except that where libibverbs finds
# no kernel RDMA (ENOSYS, "Function not implemented") the device list fails
# with ENODEV: the process wants simnic devices and there are none.
export SIMNIC_RUNTIME_DIR=$(mktemp -d /tmp/simnic-verbs-exports.XXXXXX)
trap 'rm -rf "$SIMNIC_RUNTIME_DIR"' EXIT
cmds=(ibv_devices "ibv_devinfo -l" "rping -s -a 127.0.0.1 -C 1")
command -v ibstat >/dev/null && cmds+=(ibstat "ibstat -l" "ibstat -p")
for cmd in "${cmds[@]}"; do
  want=$($cmd 2>&1); want_rc=$?
  want=${want//"Failed to get IB devices list: Function not implemented"/"Failed to get IB devices list: No such device"}
  got=$(LD_PRELOAD=$LIB $cmd 2>&1); got_rc=$?
  [ "$got" == "$want" ] || fail "'$cmd' printed '$got' with the library, '$want' without"
  [ "$got_rc" -eq "$want_rc" ] || fail "'$cmd' exited $got_rc with the library, $want_rc without"
done
[ -e "$SIMNIC_RUNTIME_DIR/simnicd.sock" ] && fail "listing devices started a daemon"

if [ "$failures" -eq 0 ]; then echo "verbs exports: all checks passed"; exit 0; fi
echo "verbs exports: $failures checks failed"; exit 1
