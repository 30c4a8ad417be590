#!/usr/bin/env bash
# `simnic bench` acceptance (issue 5), checked against the configured
# parameters rather than fixed numbers:
#  - 64 KiB WRITEs on one QP keep MAC TX at >= 90% of the configured line
#    rate, at the default configuration and at a slower, narrower one;
#  - with more active QPs than QPC entries, the QPC miss rate rises and
#    throughput falls;
#  - warm-up keeps cold misses out of the figures (--warmup 0: the old way);
#  - READ depth sets max_rd_atomic up to the device's limit, and says so;
#  - a sweep writes a CSV with one row per point and every column, and an
#    SVG plot of any columns, with 0 a number on the x axis;
#  - --cq-mod (per-CQ moderation through MODIFY_CQ) reports completions
#    and events, JSON and sweep columns alike, and refuses what
#    ibv_modify_cq would;
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

# The retransmit queue: a queue that holds only one 64 KiB message's 16
# packets holds the requester back (the next message waits for the last
# one's ACK) and says so in its counters. From the first doorbell
# (--warmup 0), when the 16 messages posted at once all want in: later the
# transport's own window paces a 64 KiB stream, and the packets the
# completer releases never wait for the queue. (32 entries, two messages,
# cover the ACK's round trip: no slowdown. It used to show one, from
# watchdog overflows: RQ and CQ doorbells filled the requester's queue
# behind a requester waiting for room, so the completer could not hand it
# released packets and stopped taking ACKs.)
stat() { awk -v k="$2" '$1 == k {print $2}' <<<"$1"; }
big=$("$SIMNIC" bench --op write --size 65536 --messages 200 --warmup 0 -s) || fail "bench rtq default"
small=$("$SIMNIC" bench --op write --size 65536 --messages 200 --warmup 0 --set requester.retransmit_queue_entries=16 -s) ||
  fail "bench rtq 16"
gb=$(awk '/modelled throughput/ {print $3}' <<<"$big"); gs=$(awk '/modelled throughput/ {print $3}' <<<"$small")
echo "retransmit queue 1024: $gb Gb/s, peak $(stat "$big" requester.rtq_entries_peak); 16: $gs Gb/s, waited $(stat "$small" requester.rtq_full_wait) cycles"
ge "$(stat "$big" requester.rtq_entries_peak)" 16 || fail "the retransmit queue held fewer than a message's 16 packets"
[ "$(stat "$big" requester.rtq_overflows)" = 0.000 ] || fail "overflows with a 1024-entry retransmit queue"
lt "$gs" "$gb" || fail "a 16-entry retransmit queue did not slow 64 KiB WRITEs ($gb -> $gs)"
[ "$(stat "$small" requester.rtq_overflows)" = 0.000 ] || fail "overflows with a 16-entry retransmit queue: ACKs stopped"
ge "$(stat "$small" requester.rtq_full_wait)" 1 || fail "no wait counted for a full retransmit queue"

# Warm-up: 16 QPs in a 64-entry QPC cache miss only while cold, so after
# the default warm-up every lookup hits; --warmup 0 measures from the first
# doorbell, cold misses included, exactly as before warm-up existed.
warm=$("$SIMNIC" bench --op write --size 4096 --qps 16 --depth 4 --set qpc_cache.entries=64 -j) || fail "bench warm"
cold=$("$SIMNIC" bench --op write --size 4096 --qps 16 --depth 4 --set qpc_cache.entries=64 --warmup 0 -j) ||
  fail "bench cold"
echo "QPC hit rate: $(echo "$cold" | field qpc_hit)% from cold, $(echo "$warm" | field qpc_hit)% after $(echo "$warm" | field warmup) messages of warm-up"
[ "$(echo "$warm" | field qpc_hit)" = 100.0 ] || fail "cold misses counted after the warm-up"
lt "$(echo "$cold" | field qpc_hit)" 100 || fail "no cold misses without warm-up"
[ "$(echo "$cold" | field warmup)" = 0 ] || fail "--warmup 0 ran a warm-up"

# READ depth: max_rd_atomic follows the depth up to the device's 128, and
# the bench says when the depth is deeper than what may be in flight.
for d in 16 64 4096; do
  j=$("$SIMNIC" bench --op read --size 4096 --depth $d --messages 400 -j) || fail "read depth $d"
  ra=$(echo "$j" | field rd_atomic)
  exp=$((d < 128 ? d : 128))
  [ "$ra" = "$exp" ] || fail "READ depth $d: max_rd_atomic $ra, expected $exp"
done
"$SIMNIC" bench --op read --size 4096 --depth 4096 --messages 400 | grep -q "READs in flight .*128 per QP" ||
  fail "READ depth 4096 does not say that 128 READs are in flight"

# A sweep: CSV rows with every column, and a plot of the columns asked for.
"$SIMNIC" bench --size 4096 --depth 2 --sweep qps=1..64 --series qpc_cache.entries=16,256 \
  --csv "$work/s.csv" --plot "$work/s.svg" >"$work/sweep.txt" || fail "sweep"
rows=$(($(wc -l <"$work/s.csv") - 1))
[ "$rows" -eq 14 ] || fail "sweep CSV has $rows rows, expected 14 (7 values x 2 series)"
grep -q '<svg' "$work/s.svg" && grep -q '</svg>' "$work/s.svg" || fail "no SVG plot"
for col in gbps latency_median_ns qpc_hit_pct block.requester.utilisation stage.parser.p99 dma.tag_wait; do
  head -1 "$work/s.csv" | tr -d '\r' | tr ',' '\n' | grep -qx "$col" || fail "sweep CSV lacks column $col"
done
# A swept value of 0 is a number on the axis; latency and a stage on the axes.
"$SIMNIC" bench --size 4096 --messages 100 --sweep dma.write_latency_ns=0,200,400 --y latency_median_ns \
  --y2 stage.cqe_writer.median --csv "$work/z.csv" --plot "$work/z.svg" >/dev/null || fail "sweep from 0"
grep -q 'class="tick-x"[^>]*>0<' "$work/z.svg" || fail "a swept 0 is not at 0 on the x axis"
grep -q '<title>latency_median_ns</title>' "$work/z.svg" || fail "latency is not plotted"
grep -q '<title>stage.cqe_writer.median</title>' "$work/z.svg" || fail "a stage's time is not on the right axis"
out=$("$SIMNIC" bench --size 4096 --messages 50 --sweep qps=1,2 --y latency_p50 --csv "$work/x.csv" \
  --plot "$work/x.svg" 2>&1) && fail "an unknown column to plot was accepted"
echo "$out" | grep -q "no column 'latency_p50'" || fail "no reason for refusing --y latency_p50: $out"

# Per-CQ moderation: the JSON's completions and events, and a sweep of the
# count with its columns (the figures themselves: test_bench_latency.cpp).
j=$("$SIMNIC" bench --op write --size 64 --messages 400 --events --cq-mod 8,100 -j) || fail "bench --cq-mod"
c=$(echo "$j" | field completions) e=$(echo "$j" | field events)
[ "$c" = 400 ] || fail "--cq-mod 8,100: $c completions for 400 WRITEs"
ge "$e" 1 && ge "$((c / 8 + 1))" "$e" || fail "--cq-mod 8,100: $e events for $c completions, not 1..$((c / 8 + 1))"
[ "$(echo "$j" | field cq_mod_count)" = 8 ] || fail "the JSON does not carry the moderation's count"
"$SIMNIC" bench --op write --size 64 --messages 400 --events --cq-mod 1,100 --sweep cq_mod_count=1,8 \
  --y completions_per_event --csv "$work/m.csv" --plot "$work/m.svg" >"$work/m.txt" || fail "sweep cq_mod_count"
grep -q "events  compl/event" "$work/m.txt" || fail "a sweep with --events does not print its events"
for col in completions events completions_per_event; do
  head -1 "$work/m.csv" | tr -d '\r' | tr ',' '\n' | grep -qx "$col" || fail "sweep CSV lacks column $col"
done
out=$("$SIMNIC" bench --events --cq-mod 8,4096 2>&1) && fail "a period beyond 4095 us accepted"
echo "$out" | grep -q "0..4095" || fail "no reason for refusing --cq-mod 8,4096: $out"
out=$("$SIMNIC" bench --events --cq-mod eight 2>&1) && fail "--cq-mod eight accepted"
out=$("$SIMNIC" bench --events --size 64 --depth 4 --messages 40 --cq-mod 8 2>&1) &&
  fail "a count the depth never reaches, without a period, ran"
echo "$out" | grep -q "give it a period" || fail "no reason for a stalled count without a period: $out"

# Bad input.
out=$("$SIMNIC" bench --set qpc_cache.wayz=4 2>&1) && fail "unknown config key accepted"
echo "$out" | grep -q "qpc_cache.ways" || fail "no suggestion for a misspelt key: $out"
# Every bad override, each cited by its place on the command line.
out=$("$SIMNIC" bench --set mac.ifg_bytes=8 --set qpc_cache.entries=0 --set dma.wayz=1 2>&1) && fail "bad overrides accepted"
echo "$out" | grep -q -- "--set #2: qpc_cache.entries = 0 is out of range" || fail "--set #2 not cited: $out"
echo "$out" | grep -q -- "--set #3: unknown key 'dma.wayz'" || fail "--set #3 not cited: $out"
out=$("$SIMNIC" bench --op frobnicate 2>&1) && fail "unknown op accepted"
out=$("$SIMNIC" bench --sweep qps=8..2 2>&1) && fail "empty range accepted"

sys_finish bench
