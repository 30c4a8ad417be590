// The Datapath of timing.h: a model device's pipeline stages call these at
// the simulated instant each step happens. Each runs the same protocol code
// a soft device runs, with `rec` set so that every table access, DMA, frame,
// CQE and EQE of the step is recorded for the stage to charge.
#include "engine_internal.h"
#include "tx_queue.h"

namespace simnic::soft_engine {

namespace {

// `rec` is set for the duration of one step.
struct Recording {
    Recording(SoftEngine::Impl& m, OpRecord& r) : m_(m) { m_.rec = &r; }
    ~Recording() { m_.rec = nullptr; }
    SoftEngine::Impl& m_;
};

}  // namespace

void SoftEngine::Impl::exec_doorbell(const Doorbell& db, OpRecord& r) {
    Recording g(*this, r);
    doorbell(db.ctx, hw::DbKind(db.kind), db.num, db.index, db.cq_cmd, db.cq_seen);
}

void SoftEngine::Impl::exec_rx(const uint8_t* frame, size_t len, bool icrc_checked, OpRecord& r,
                               const roce::Packet* decoded) {
    Recording g(*this, r);
    if (len > roce::kEthHdrBytes)
        rx_deliver(frame + roce::kEthHdrBytes, len - roce::kEthHdrBytes, icrc_checked ? RxTrust::Icrc : RxTrust::None,
                   frame, decoded);
}

void SoftEngine::Impl::rx_dropped(bool bad_icrc) {
    stat(bad_icrc ? hw::stats_block::icrc_errors : hw::stats_block::rx_drops_bad_hdr);
}

uint32_t SoftEngine::Impl::probe_placement(const uint8_t* frame, size_t len, OpRecord& r) {
    Recording g(*this, r);
    if (len <= roce::kEthHdrBytes) return 0;
    roce::Packet pkt;
    roce::DecodeOptions o;
    o.check_icrc = false;  // the frame is known bad: what its headers ask is what was placed
    if (!roce::decode_ip_packet(frame + roce::kEthHdrBytes, len - roce::kEthHdrBytes, pkt, o).ok()) return 0;
    if ((pkt.hdr.bth.pkey & 0x7FFF) != 0x7FFF) return 0;
    auto it = qps.find(pkt.hdr.bth.dqpn);
    if (it == qps.end() || ctx_gone(it->second->ctx)) return 0;
    return it->second->core->responder().placement(pkt);
}

void SoftEngine::Impl::exec_timer(uint32_t qpn, uint8_t t, OpRecord& r) {
    Recording g(*this, r);
    auto it = qps.find(qpn);
    if (it != qps.end() && t < tp::kNumQpTimers) fire_timer(*it->second, t);
}

// A frame leaving MAC TX joins the port's queue, which goes to the kernel
// at the end of the quantum (end_batch), or every kWireTxRun frames: one
// sendmmsg for a message's packets, and one UDP GSO send where the port
// allows it. Sent one by one as each protocol step ended (after()), a
// 64 KiB WRITE at MTU 4096 was sixteen system calls, and each of them
// first wrote the payload combined so far with its own process_vm_writev.
// The run stays below the ports' own batch: at that a port sends without
// asking, before tx_flush has written the posted writes the frames follow.
static_assert(SoftEngine::Impl::kWireTxRun < TxQueue::kBatch, "a run of wire frames must fit in a port's batch");

void SoftEngine::Impl::wire_tx(const uint8_t* frame, size_t len) {
    send_frame(frame, len, false);
    if (tx_unflushed >= kWireTxRun) tx_flush();
}

}  // namespace simnic::soft_engine
