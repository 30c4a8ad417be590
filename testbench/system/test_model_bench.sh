#!/usr/bin/env bash
# `simnic bench` acceptance (issue 5), checked against the configured
# parameters rather than fixed numbers:
#  - 64 KiB WRITEs on one QP keep MAC TX at >= 90% of the configured line
#    rate, at the default configuration and at a slower, narrower one;
#  - with more active QPs than QPC entries, the QPC miss rate rises and
#    throughput falls;
#  - a sweep writes a CSV with one row per point and an SVG plot;
#  - bad parameters are refused with a message.
#
#   test_model_bench.sh SIMNIC
set -u
SIMNIC=$1
. "$(dirname "$0")/lib.sh"
sys_init --as-caller bench
trap sys_cleanup EXIT
field() { python3 -c 'import json,sys; print(json.load(sys.stdin)[sys.argv[1]])' "$1"; }
ge() { python3 -c 'import sys; sys.exit(0 if float(sys.argv[1]) >= float(sys.argv[2]) else 1)' "$1" "$2"; }
lt() { python3 -c 'import sys; sys.exit(0 if float(sys.argv[1]) < float(sys.argv[2]) else 1)' "$1" "$2"; }

# Line rate at two configurations.
for cfg in "" "--set mac.line_rate_gbps=25 --set mac.width_bytes=16 --set clock.freq_mhz=200"; do
  # shellcheck disable=SC2086
  j=$("$SIMNIC" bench --op write --size 65536 --qps 1 --depth 16 --messages 300 $cfg -j) || { fail "bench $cfg"; continue; }
  u=$(echo "$j" | field line_utilisation)
  errs=$(echo "$j" | field errors)
  echo "write 64 KiB ${cfg:-(defaults)}: line utilisation $u%"
  ge "$u" 90 || fail "64 KiB WRITE reaches only $u% of the line rate ($cfg)"
  [ "$errs" = 0 ] || fail "$errs error completions ($cfg)"
done

# QPC cache: 16 QPs fit in 64 entries, 1024 do not.
few=$("$SIMNIC" bench --op write --size 4096 --qps 16 --depth 4 --set qpc_cache.entries=64 -j) || fail "bench 16 QPs"
many=$("$SIMNIC" bench --op write --size 4096 --qps 1024 --depth 4 --set qpc_cache.entries=64 -j) || fail "bench 1024 QPs"
g1=$(echo "$few" | field gbps); g2=$(echo "$many" | field gbps)
h1=$(echo "$few" | field qpc_hit); h2=$(echo "$many" | field qpc_hit)
echo "16 QPs: $g1 Gb/s, QPC hit $h1%; 1024 QPs: $g2 Gb/s, QPC hit $h2%"
lt "$h2" "$h1" || fail "QPC hit rate did not fall with more QPs than entries ($h1 -> $h2)"
lt "$g2" "$g1" || fail "throughput did not fall with more QPs than QPC entries ($g1 -> $g2)"
ge "$h1" 99 || fail "16 QPs in a 64-entry QPC cache should hit (got $h1%)"

# The retransmit queue: a queue smaller than what one QP keeps in flight
# holds the requester back (and says so in its counters).
stat() { awk -v k="$2" '$1 == k {print $2}' <<<"$1"; }
big=$("$SIMNIC" bench --op write --size 65536 --messages 200 -s) || fail "bench rtq default"
small=$("$SIMNIC" bench --op write --size 65536 --messages 200 --set requester.retransmit_queue_entries=32 -s) ||
  fail "bench rtq 32"
gb=$(awk '/modelled throughput/ {print $3}' <<<"$big"); gs=$(awk '/modelled throughput/ {print $3}' <<<"$small")
echo "retransmit queue 1024: $gb Gb/s, peak $(stat "$big" requester.rtq_entries_peak); 32: $gs Gb/s, waited $(stat "$small" requester.rtq_full_wait) cycles"
ge "$(stat "$big" requester.rtq_entries_peak)" 16 || fail "the retransmit queue held fewer than a message's 16 packets"
[ "$(stat "$big" requester.rtq_overflows)" = 0.000 ] || fail "overflows with a 1024-entry retransmit queue"
lt "$gs" "$gb" || fail "a 32-entry retransmit queue did not slow 64 KiB WRITEs ($gb -> $gs)"
ge "$(stat "$small" requester.rtq_full_wait)" 1 || fail "no wait counted for a full retransmit queue"

# A sweep: CSV rows and a plot.
"$SIMNIC" bench --size 4096 --depth 2 --sweep qps=1..64 --series qpc_cache.entries=16,256 \
  --csv "$work/s.csv" --plot "$work/s.svg" >"$work/sweep.txt" || fail "sweep"
rows=$(($(wc -l <"$work/s.csv") - 1))
[ "$rows" -eq 14 ] || fail "sweep CSV has $rows rows, expected 14 (7 values x 2 series)"
grep -q '<svg' "$work/s.svg" && grep -q '</svg>' "$work/s.svg" || fail "no SVG plot"

# Bad input.
out=$("$SIMNIC" bench --set qpc_cache.wayz=4 2>&1) && fail "unknown config key accepted"
echo "$out" | grep -q "qpc_cache.ways" || fail "no suggestion for a misspelt key: $out"
out=$("$SIMNIC" bench --op frobnicate 2>&1) && fail "unknown op accepted"
out=$("$SIMNIC" bench --sweep qps=8..2 2>&1) && fail "empty range accepted"

sys_finish bench
