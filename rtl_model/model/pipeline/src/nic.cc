// What the blocks share (nic.h): the Nic's construction and counters, and
// the two helpers every block that touches memory uses: a table lookup
// through a cache, and playing a record's memory ops through the caches and
// the DMA engine.
#include "nic.h"

#include <algorithm>

#include "simnic/roce/rules.h"

#include "icrc_engine_rtl.h"
#ifdef SIMNIC_HAVE_RTL_PARSER
#include "roce_parser_rtl.h"
#endif

namespace simnic::model {

using sim::now_ps;
using sim::wait_ps;
using sim::wait_until;

Nic::Nic(const ModelConfig& c, Datapath& b, bool lb)
    : cfg(c), be(b), loopback(lb), period_ps(uint64_t(c.clock_period_ps() + 0.5)), dma(c.dma),
      qpc(c.qpc_cache), mpt(c.mpt_cache), mtt(c.mtt_cache) {
    if (cfg.icrc.impl == BlockImpl::rtl) icrc_rtl = std::make_unique<rtl::IcrcEngineRtl>();
#ifdef SIMNIC_HAVE_RTL_PARSER
    if (cfg.parser.impl == BlockImpl::rtl) parser_rtl = std::make_shared<rtl::RoceParserRtl>();
#endif
}
Nic::~Nic() = default;

const char* Nic::block_name(int b) {
    static const char* const n[kNumBlocks] = {"doorbell", "requester", "tx_build", "mac_tx",
                                              "mac_rx", "parser", "icrc_check", "responder",
                                              "completer", "cqe_writer", "eqe_writer", "mgmt_core"};
    return b >= 0 && b < kNumBlocks ? n[b] : "?";
}

void Nic::rtq_admit(size_t n) {
    const uint64_t t0 = sim::now_ps();
    while (rtq_used > 0 && rtq_used + n > cfg.requester.retransmit_queue_entries) {
        // The ACK that makes room may depend on packets queued behind this
        // work (the datapath chose where AckReq goes). A real requester must
        // not deadlock on that; the model admits the work after
        // kRtqWatchdogCycles without an ACK and counts an overflow, which
        // says the queue is too small for the workload.
        const size_t before = rtq_used;
        sc_core::wait(sc_core::sc_time(double(cycles(kRtqWatchdogCycles)), sc_core::SC_PS), rtq_freed);
        if (rtq_used >= before && rtq_used + n > cfg.requester.retransmit_queue_entries) {
            ++rtq_overflows;
            break;
        }
    }
    rtq_wait_ps += sim::now_ps() - t0;
}

void Nic::rtq_take(uint32_t qpn, uint32_t psn) {
    std::deque<uint32_t>& q = rtq[qpn];
    for (uint32_t p : q)
        if (p == psn) return;  // a retransmission: its entry is still held
    q.push_back(psn);
    rtq_peak = std::max(rtq_peak, ++rtq_used);
}

void Nic::rtq_ack(uint32_t qpn, uint32_t psn, bool nak) {
    auto it = rtq.find(qpn);
    if (it == rtq.end()) return;
    std::deque<uint32_t>& q = it->second;
    size_t freed = 0;
    while (!q.empty() && (roce::psn_before(q.front(), psn) || (!nak && q.front() == psn))) {
        q.pop_front();
        ++freed;
    }
    if (freed) {
        rtq_used -= freed;
        rtq_freed.notify(sc_core::SC_ZERO_TIME);
    }
}

void Nic::rtq_drop(uint32_t qpn) {
    auto it = rtq.find(qpn);
    if (it == rtq.end()) return;
    rtq_used -= it->second.size();
    rtq.erase(it);
    rtq_freed.notify(sc_core::SC_ZERO_TIME);
}

void Nic::reset_stats() {
    rtq_peak = rtq_used;
    rtq_wait_ps = 0;
    rtq_overflows = 0;
    for (auto& s : blk) s = sim::BlockStats{};
    dma.reset_stats();
    qpc.reset_stats();
    mpt.reset_stats();
    mtt.reset_stats();
    rx_drops_parser = rx_drops_icrc = icrc_rtl_mismatch = parser_rtl_mismatch = 0;
    rx_drops_parser_reason.fill(0);
    tx_frames = tx_wire_bytes = tx_payload_bytes = rx_frames = 0;
    first_tx_ps = last_tx_ps = 0;
    eqes = fw_commands = 0;
    latency_ps.clear();
}

void Nic::lookup(TableCache& cache, uint32_t key, sim::BlockStats& st) {
    wait_ps(cycles(cache.config().hit_cycles));
    if (cache.access(key)) return;
    const uint64_t t0 = now_ps();
    const uint64_t t = dma.read(t0, cache.config().entry_bytes, DmaPurpose::Context);
    st.stall_ps += t - t0;
    wait_until(t);
}

size_t Nic::play_memory(OpRecord& rec, size_t i, sim::BlockStats& st, uint64_t& payload_ready,
                        uint64_t& writes_done, bool block_on_reads) {
    for (; i < rec.ops.size() && is_memory_op(rec.ops[i].kind); ++i) {
        const Op& o = rec.ops[i];
        switch (o.kind) {
            case Op::Kind::Qpc: lookup(qpc, o.id, st); break;
            case Op::Kind::Mpt: lookup(mpt, o.id, st); break;
            case Op::Kind::Mtt: lookup(mtt, o.id, st); break;
            case Op::Kind::DmaRead: {
                const uint64_t t0 = now_ps();
                const uint64_t t = dma.read(t0, o.bytes, o.purpose);
                // Payload for a frame overlaps with what follows; anything the
                // datapath must see before it can go on (a receive WQE, an
                // atomic's old value) is waited for.
                if (!block_on_reads && o.purpose == DmaPurpose::Payload) {
                    payload_ready = std::max(payload_ready, t);
                } else {
                    st.stall_ps += t - t0;
                    wait_until(t);
                }
                break;
            }
            case Op::Kind::DmaWrite:
                writes_done = std::max(writes_done, dma.write(now_ps(), o.bytes, o.purpose));
                break;
            default: break;
        }
    }
    return i;
}

}  // namespace simnic::model
