#!/usr/bin/env bash
# Issue 12, section 2 by hand: the wire fuzzer (test_wire_fuzz.sh) for longer,
# seed after seed, against a soft and a model device.
#   scripts/fuzz-wire.sh [BUILD_DIR] [FRAMES_PER_RUN] [RUNS]   (default build 200000 5)
set -u
B=$(cd "${1:-build}" && pwd)
H=$(cd "$(dirname "$0")/../testbench/system" && pwd)
frames=${2:-200000} runs=${3:-5} bad=0
for ((i = 1; i <= runs; i++)); do
  for type in soft model; do
    SIMNIC_DEVICE_TYPE=$type "$H/test_wire_fuzz.sh" "$B/cli/simnic" "$B/verbs_provider/libsimnic-verbs.so" \
      "$B/testbench/system/simnic_hostile_target" "$frames" "$i" >"/tmp/simnic-fuzz-wire.$type.$i.log" 2>&1 || bad=$((bad + 1))
    echo "$type seed $i: $(tail -1 "/tmp/simnic-fuzz-wire.$type.$i.log")"
  done
done
[ "$bad" -eq 0 ]
