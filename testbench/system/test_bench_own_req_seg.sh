#!/usr/bin/env bash
# The segmentation stage's worked example with a planted bug
# (rtl_model/rtl/req_seg/examples/roce_req_seg_buggy.sv) in a whole model
# device, as a designer runs it from docs/model.md: named in the config,
# verilated at run time into a fresh cache, run in the loop against the
# datapath. A message that is not a whole number of PMTUs is segmented
# right (no mismatch, every message done); one that is gets a RETH a byte
# too long and a last packet without AckReq: the mismatch is counted and
# dumped with both descriptors, the frames follow the RTL, and so no ACK
# comes back and the bench says the workload stalled (exit 1).
#   test_bench_own_req_seg.sh SIMNIC RTL_DIR WORK_DIR
set -u
SIMNIC=$1 RTL=$2 WORK=$3
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
rm -rf "$WORK" && mkdir -p "$WORK"
export XDG_CACHE_HOME=$WORK/cache  # a fresh cache: the design is built here
own=(--set req_seg.impl=rtl --set "req_seg.rtl_sources=$RTL/examples/roce_req_seg_buggy.sv"
     --set req_seg.rtl_top=roce_req_seg_buggy)

"$SIMNIC" bench --op write --size 6000 --depth 1 --messages 50 "${own[@]}" -s >"$WORK/ok.txt" 2>&1
rc=$?
cat "$WORK/ok.txt"
[ "$rc" -eq 0 ] || fail "6000-byte WRITEs with the example: exit $rc"
grep -Eq '^ +rtl\.req_seg_wqes +50\.000' "$WORK/ok.txt" || fail "50 WQEs through the example's RTL"
grep -Eq '^ +rtl\.req_seg_mismatches +0\.000' "$WORK/ok.txt" || fail "6000-byte WRITEs: a mismatch"
grep -Eq '^ +latency\.messages +50\.000' "$WORK/ok.txt" || fail "6000-byte WRITEs: not every message done"
ls "$XDG_CACHE_HOME"/simnic/rtl | grep -q '^req_seg-roce_req_seg_buggy-' || fail "no build in the cache"

"$SIMNIC" bench --op write --size 8192 --depth 1 "${own[@]}" -s >"$WORK/bug.txt" 2>&1
rc=$?
head -c 2000 "$WORK/bug.txt"; echo; tail -3 "$WORK/bug.txt"
[ "$rc" -eq 1 ] || fail "8192-byte WRITE with the example: exit $rc, not 1 (stalled)"
grep -Eq 'RTL mismatch in req_seg at cycle [0-9]+: WQE opcode 0, 8192 bytes, PMTU 4096, packets 0\+2: packet 0 from the RTL .*dma_len 8193 .*, from the datapath .*dma_len 8192 ' \
  "$WORK/bug.txt" || fail "the mismatch dump names packet 0's RETH DMA length, 8193 against 8192"
grep -q 'frame (4170 bytes):' "$WORK/bug.txt" || fail "the dump has the packet's frame"
grep -q 'simnic bench: the workload stalled: 0 of 1 messages completed' "$WORK/bug.txt" ||
  fail "the frames followed the RTL (no AckReq, no ACK): the bench should stall"
[ "$failures" -eq 0 ] || { echo "bench.own_req_seg_buggy: $failures checks failed"; exit 1; }
echo "bench.own_req_seg_buggy: passed"
