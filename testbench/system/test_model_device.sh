#!/usr/bin/env bash
# A model device as its users see it (issue 5), as an ordinary user:
#  - `link add ... type model config FILE` rejects a bad config with a clear
#    message and accepts a good one;
#  - ibv_rc_pingpong runs against it, `simnic stats` shows the pipeline's
#    figures in simulated time (per-stage times included) and resets them,
#    `simnic trace` writes VCD and FST files with every signal group and
#    refuses a window that starts in the past;
#  - differential: the same workload on a soft and a model device gives the
#    same packets (opcodes and lengths), every one with a valid ICRC.
#
#   test_model_device.sh SIMNIC LIBSIMNIC_VERBS
set -u
SIMNIC=$1 LIB=$2
DEV=simmodel_lo
. "$(dirname "$0")/lib.sh"
sys_init model SIMNIC LIB
PORT=$(free_port 3)
sys_dir out
cleanup() {
  sim link delete "$DEV" >/dev/null 2>&1
  sim daemon --stop >/dev/null 2>&1
  sys_cleanup
}
trap cleanup EXIT

# pingpong DEV PCAPNAME: ibv_rc_pingpong server and client on DEV.
pingpong() {
  sim exec -- ibv_rc_pingpong -d "$1" -g 1 -p "$PORT" -n 200 -s 3000 >"$work/out/server.txt" 2>&1 &
  local spid=$!
  wait_listen "$PORT" "$spid"
  sim exec -- ibv_rc_pingpong -d "$1" -g 1 -p "$PORT" -n 200 -s 3000 127.0.0.1 >"$work/out/client.txt" 2>&1
  local crc=$?
  wait "$spid"; local src=$?
  [ $crc -eq 0 ] && [ $src -eq 0 ] || { fail "ibv_rc_pingpong on $1 (client $crc, server $src)"; cat "$work/out/client.txt" "$work/out/server.txt"; }
  PORT=$((PORT + 1))
}

# --- config errors are clear and nothing is created ---
printf '[qpc_cache]\nways = 3\n' >"$work/out/bad.toml"
out=$(sim link add "$DEV" type model netdev lo config "$work/out/bad.toml" 2>&1) && fail "a bad config was accepted"
echo "$out" | grep -q "qpc_cache.ways" || fail "bad config message does not name the key: $out"
printf '[qpc_cache]\nentires = 64\n' >"$work/out/typo.toml"
out=$(sim link add "$DEV" type model netdev lo config "$work/out/typo.toml" 2>&1) && fail "an unknown key was accepted"
echo "$out" | grep -q "did you mean 'qpc_cache.entries'" || fail "no suggestion for a misspelt key: $out"
sim link show "$DEV" >/dev/null 2>&1 && fail "a device exists after failed link adds"
# A soft device's config holds [congestion] only (congestion control).
out=$(sim link add "$DEV" type soft netdev lo config "$work/out/bad.toml" 2>&1) && fail "config accepted for a soft device"
echo "$out" | grep -q "\[qpc_cache\] is a model device's; a soft device's config holds \[congestion\] only" ||
  fail "a soft device's config with a model table: $out"

# --- a model device with a config: pingpong, stats, trace ---
printf '[clock]\nfreq_mhz = 250\n[qpc_cache]\nentries = 64\nways = 4\n' >"$work/out/good.toml"
sim link add "$DEV" type model netdev lo config "$work/out/good.toml" pcap "$work/out/model.pcap" ||
  { echo "FAIL: link add type model"; exit 1; }
sim link show "$DEV" | grep -q "link $DEV/1 state ACTIVE" || fail "link show of the model device"
sim trace "$DEV" vcd "$work/out/wave.vcd" --cycles 2000000 || fail "simnic trace vcd"
pingpong "$DEV"
sim trace "$DEV" stop >/dev/null || fail "simnic trace stop"
stats=$(sim stats "$DEV")
echo "$stats" | grep -q "model (simulated time)" || fail "stats has no model section"
for k in sim.cycles sim.stats_cycles block.parser.utilisation cache.qpc.hit_rate dma.read_latency_avg latency.median \
  mac.tx_throughput stage.parser.median stage.responder.p99 chan.mac_rx_to_parser.transfers; do
  echo "$stats" | grep -q "$k" || fail "stats lacks $k"
done
cycles=$(echo "$stats" | awk '$1=="sim.cycles"{print $2}')
[ "${cycles:-0}" -gt 0 ] || fail "no simulated cycles after a pingpong: $cycles"
msgs=$(echo "$stats" | awk '$1=="latency.messages"{print $2}')
[ "${msgs:-0}" -ge 200 ] || fail "latency histogram has ${msgs:-0} messages, expected >= 200"
tx=$(echo "$stats" | awk '$1=="mac.tx_frames"{print $2}')
[ "${tx:-0}" -ge 400 ] || fail "mac.tx_frames ${tx:-0}, expected >= 400"
# The waveform: a VCD header, our channels, and value changes.
grep -q '^\$enddefinitions' "$work/out/wave.vcd" || fail "VCD has no definitions"
grep -q 'mac_rx_to_parser' "$work/out/wave.vcd" || fail "VCD lacks the parser's input channel"
changes=$(grep -c '^#' "$work/out/wave.vcd")
[ "$changes" -gt 100 ] || fail "VCD has only $changes time steps"
for sig in ' cycle ' ' busy ' ' stall ' ' tags_in_flight ' ' rtq_entries_used ' ' hit ' ' count '; do
  grep -q "\$var wire [0-9]* [^ ]*$sig" "$work/out/wave.vcd" || fail "VCD lacks signal$sig"
done
# A waveform cannot start in the past: refused, with the reason.
out=$(sim trace "$DEV" vcd "$work/out/past.vcd" --from 1 2>&1) && fail "a waveform starting in the past was accepted"
echo "$out" | grep -q "cannot start in the past" || fail "no reason given for refusing --from 1: $out"
# stats --reset: read, then every figure starts again (the clock runs on).
sim stats "$DEV" --reset | grep -q "reset after this reading" || fail "stats --reset did not say it reset"
after=$(sim stats "$DEV")
for k in block.parser.items latency.messages mac.tx_frames sim.stats_cycles; do
  v=$(echo "$after" | awk -v k=$k '$1==k{print $2}')
  [ "$v" = 0 ] || fail "$k is $v after stats --reset"
done
[ "$(echo "$after" | awk '$1=="sim.cycles"{print $2}')" = "$cycles" ] || fail "sim.cycles changed by a reset"
sim trace "$DEV" fst "$work/out/wave.fst" --cycles 100000 || fail "simnic trace fst"
pingpong "$DEV"
sim trace "$DEV" stop >/dev/null
[ -s "$work/out/wave.fst" ] || fail "FST file is empty"
out=$(sim trace "$DEV" ghw "$work/out/x" 2>&1) && fail "unknown waveform format accepted"
sim link delete "$DEV" || fail "link delete of the model device"

# --- differential: the same workload on a soft device ---
sim link add "$DEV" type soft netdev lo pcap "$work/out/soft.pcap" || { echo "FAIL: link add soft"; exit 1; }
pingpong "$DEV"
sim link delete "$DEV"
# Every packet of both decodes with a valid ICRC (--strict fails otherwise),
# and both devices sent the same packets: same opcodes, same payload lengths.
summary() {
  "$SIMNIC" pcap --strict "$1" | sed -n 's/.* \(RC_[A-Z_]*\) .*payload=\([0-9]*\).*/\1 \2/p; s/.* \(RC_ACKNOWLEDGE\) .*/\1/p' | sort | uniq -c
}
soft=$(summary "$work/out/soft.pcap") || fail "soft capture has a bad packet"
# The model's capture holds both pingpongs: compare against twice the soft one.
model=$(summary "$work/out/model.pcap") || fail "model capture has a bad packet"
soft2=$(echo "$soft" | awk '{ $1 = $1 * 2; print }')
model_n=$(echo "$model" | awk '{ $1 = $1; print }')
if [ "$soft2" != "$model_n" ]; then
  fail "soft and model devices sent different packets"
  echo "soft (x2):"; echo "$soft2"; echo "model:"; echo "$model_n"
fi
[ -n "$soft" ] || fail "soft capture is empty"

sys_finish "model device"
