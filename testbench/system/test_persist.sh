#!/usr/bin/env bash
# Devices that come back (issue 16): `simnic link add ... persist` keeps a
# device in the user's list (SIMNIC_CONFIG_DIR here, else
# ${XDG_CONFIG_HOME:-~/.config}/simnic/devices.jsonl), every daemon that
# starts later creates it again before it answers, asking again for the same
# device changes nothing, `simnic link delete` forgets it (running or not;
# not while in use, when the delete is refused),
# and a device that cannot be created again (its netdev gone) is logged,
# named by simnic doctor, and skipped while the others come back. As an ordinary user (lib.sh drops to
# nobody under root).
#
#   test_persist.sh SIMNIC LIBSIMNIC_VERBS
set -u
SIMNIC=$1 LIB=$2
. "$(dirname "$0")/lib.sh"
sys_init persist SIMNIC LIB
sys_dir cfg out
export SIMNIC_CONFIG_DIR=$work/cfg
list=$SIMNIC_CONFIG_DIR/devices.jsonl
trap 'sim daemon --stop >/dev/null 2>&1; [ -n "${wire_pid:-}" ] && kill "$wire_pid"; rm -rf "$work"' EXIT

# A wire for the devices that are not on lo (one device per netdev).
"${AS[@]}" "$SIMNIC" wire --ready-file "$work/out/wire.ready" -q &
wire_pid=$!
for _ in $(seq 50); do [ -s "$work/out/wire.ready" ] && break; sleep 0.1; done
W=127.0.0.1:$(awk '{print $2}' "$work/out/wire.ready")  # "PID PORT"
[ "$W" != 127.0.0.1: ] || { echo "FAIL: the wire did not start"; exit 1; }

expect() {
  local rc=$1 pat=$2; shift 2
  out=$("$@" 2>&1); local got=$?
  [ "$got" -eq "$rc" ] || fail "'$*' exited $got, expected $rc: $out"
  [[ "$out" =~ $pat ]] || fail "'$*' printed '$out', expected /$pat/"
}
# A new daemon: started by a command that needs one (link add), or by
# `simnic daemon --start`.
restart_n=0
restart() {
  sim daemon --stop
  if [ $((restart_n++ % 2)) -eq 0 ]; then
    expect 0 '^$' sim link add probe0 type soft wire "$W" addr 10.9.9.9/24
    expect 0 '^$' sim link delete probe0
  else
    expect 0 '^$' sim daemon --start
  fi
}

# Kept: a soft device on lo and a model device on a wire (absolute pcap path).
cd "$work/out"
expect 0 '^$' sim link add keep_lo type soft netdev lo persist
expect 0 '^$' sim link add keep_w type model wire $W addr 10.1.1.1/24 persist pcap w.pcap
expect 0 '^$' sim link add temp0 type soft wire $W addr 10.2.2.2/24
[ "$(wc -l <"$list")" -eq 2 ] || fail "the list holds $(wc -l <"$list") devices, not 2: $(cat "$list")"
grep -q "\"pcap\":\"$work/out/w.pcap\"" "$list" || fail "the pcap path is not kept absolute: $(cat "$list")"

# A new daemon creates the kept ones, not the other, before the command
# that started it goes on.
restart
expect 0 "link keep_lo/1 state ACTIVE .* netdev lo" sim link show keep_lo
expect 0 "link keep_w/1 .* wire $W .* addr 10.1.1.1/24" sim link show keep_w
expect 1 "no device temp0" sim link show temp0
# The same request again is nothing new; a different one for a kept name
# fails as any clash does and the list stays.
expect 0 '^$' sim link add keep_lo type soft netdev lo persist
expect 1 "already" sim link add keep_lo type model netdev lo persist
grep -q '"name":"keep_lo".*"type":"soft"' "$list" || fail "the kept keep_lo changed: $(cat "$list")"

# In use (a pingpong server waiting on it): delete is refused and the
# device stays kept, as it stays running; the server's client ends it.
port=$(free_port)
app timeout 60 ibv_rc_pingpong -d keep_lo -g 1 -p "$port" -n 5 >"$work/out/server.out" 2>&1 &
spid=$!
wait_listen "$port" "$spid" || fail "the pingpong server does not listen: $(cat "$work/out/server.out")"
expect 1 "keep_lo is in use by" sim link delete keep_lo
grep -q '"name":"keep_lo"' "$list" || fail "a device in use was forgotten: $(cat "$list")"
app timeout 60 ibv_rc_pingpong -d keep_lo -g 1 -p "$port" -n 5 127.0.0.1 >"$work/out/client.out" 2>&1 ||
  fail "client: $(cat "$work/out/client.out")"
wait "$spid" || fail "server: $(cat "$work/out/server.out")"

# Deleting forgets, whether the device runs or not.
expect 0 '^$' sim link delete keep_w
grep -q keep_w "$list" && fail "keep_w still kept after link delete"
sim daemon --stop
expect 0 "forgot the kept device keep_lo" sim link delete keep_lo
[ -s "$list" ] && fail "the list is not empty: $(cat "$list")"
restart
expect 0 '^$' sim link show

# A kept device whose netdev is gone is skipped (and logged); the rest come back.
expect 0 '^$' sim link add keep_a type soft wire $W addr 10.3.3.3/24 persist
sed -i '1i {"op":"link_add","name":"gone0","type":"soft","netdev":"nosuchif0"}' "$list"
restart
expect 0 "link keep_a/1" sim link show keep_a
expect 1 "no device gone0" sim link show gone0
grep -q "kept device gone0 not created" "$SIMNIC_RUNTIME_DIR/simnicd.log" || fail "the daemon's log does not say gone0 failed"
# simnic doctor names it, with the log's reason and the fix.
out=$(sim doctor 2>&1) && fail "doctor passed with the kept gone0 not running"
[[ "$out" =~ FAIL\ +kept\ gone0\ +kept\ device\ gone0\ is\ not\ running:.*nosuchif0 ]] || fail "doctor on gone0: $out"
[[ "$out" =~ forget\ it:\ simnic\ link\ delete\ gone0 ]] || fail "doctor's fix for gone0: $out"
sys_finish cli.persist
