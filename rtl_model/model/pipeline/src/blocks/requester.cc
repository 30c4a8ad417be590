#include "blocks/requester.h"

#include <algorithm>
#include <cstdio>
#include <utility>

#include "req_seg_rtl.h"
#include "simnic/roce/opcode.h"

namespace simnic::model {

using sim::now_ps;
using sim::wait_ps;
using sim::wait_until;

namespace {

// Packets k and k + 1 of one WQE's run through segmentation: the same WQE,
// the next packet. A READ's request is a transaction of its own.
bool continues(const TxFrameRec& a, const TxFrameRec& b) {
    const transport::SegWqe &x = a.seg_wqe, &y = b.seg_wqe;
    return b.has_seg && a.qpn == b.qpn && x.opcode != hw::WrOpcode::RdmaRead && x.qp_type == y.qp_type &&
           x.opcode == y.opcode && x.length == y.length && x.first_psn == y.first_psn && x.pmtu == y.pmtu &&
           x.remote_addr == y.remote_addr && x.rkey == y.rkey && x.solicited == y.solicited &&
           y.start_pkt == x.start_pkt + 1;
}

std::string show(const transport::SegPacket& p) {
    char w[200];
    std::snprintf(w, sizeof w,
                  "opcode %02x psn %06x payload %u+%u reth %d va %016llx rkey %08x dma_len %u ack_req %d se %d",
                  p.opcode, p.psn, p.payload_off, p.payload_len, p.reth, static_cast<unsigned long long>(p.reth_va),
                  p.reth_rkey, p.reth_dma_len, p.ack_req, p.se);
    return w;
}

}  // namespace

void RequesterBlock::rtl_segment(OpRecord& rec, std::vector<uint64_t>& cycles) {
    cycles.assign(rec.frames.size(), 0);
    for (size_t i = 0; i < rec.frames.size();) {
        if (!rec.frames[i].has_seg) {
            ++i;
            continue;
        }
        // The packets the datapath made of this WQE in one go: one
        // transaction, the WQE's descriptor granting that many.
        size_t n = 1;
        while (i + n < rec.frames.size() && continues(rec.frames[i + n - 1], rec.frames[i + n])) ++n;
        transport::SegWqe w = rec.frames[i].seg_wqe;
        w.count = uint32_t(n);
        const rtl::ReqSegResult r = nic.req_seg_rtl->run(w);
        ++nic.req_seg_rtl_wqes;
        nic.req_seg_rtl_packets += n;
        if (!r.gaps.empty()) nic.req_seg_rtl_latency = r.gaps[0];
        // Its own cycles: each packet's edges (the first's with the
        // descriptor's stalls and the latency).
        for (size_t k = 0; k < n && k < r.gaps.size(); ++k) cycles[i + k] = r.gaps[k];
        size_t bad = 0;
        while (bad < n && bad < r.packets.size() && r.packets[bad] == rec.frames[i + bad].seg) ++bad;
        if (bad < n || r.packets.size() != n) {
            ++nic.req_seg_rtl_mismatch;
            char head[160];
            std::snprintf(head, sizeof head, "WQE opcode %u, %u bytes, PMTU %u, packets %u+%zu: ", unsigned(w.opcode),
                          w.length, roce::ib_mtu_bytes(w.pmtu), w.start_pkt, n);
            std::string what = head;
            if (bad < n && bad < r.packets.size())
                what += "packet " + std::to_string(bad) + " from the RTL " + show(r.packets[bad]) +
                        ", from the datapath " + show(rec.frames[i + bad].seg);
            else
                what += std::to_string(r.packets.size()) + " packets from the RTL, " + std::to_string(n) +
                        " from the datapath";
            nic.rtl_mismatch("req_seg", what, rec.frames[i + std::min(bad, n - 1)].bytes);
        }
        i += n;
    }
}

void RequesterBlock::main() {
    for (;;) {
        uint64_t pushed = 0;
        TxnPtr t = nic.wqe_to_req.read(&pushed);
        sim::BlockStats& st = nic.blk[Nic::kRequester];
        // When the requester could start on the next packet (the stage time).
        uint64_t start = std::max(pushed, t->ready_ps);
        sim::stall_until(st, t->ready_ps);  // its WQEs are still on the way
        OpRecord& rec = t->rec;
        size_t requests = 0;
        for (const TxFrameRec& fr : rec.frames)
            if (is_rc_request(fr.opcode)) ++requests;
        // Packets the completer released continue what is already in flight
        // (the transport counts them against its own window): holding them
        // back could hold back the ACK that frees the queue.
        if (requests && !t->resume) {
            sim::StallScope waiting(&st);
            nic.rtq_admit(requests);  // room in the retransmit queue
        }
        sim::BusyScope busy(st);
        // With its RTL, segmentation's own cycles per packet.
        if (nic.req_seg_rtl) rtl_segment(rec, seg_cycles_);
        uint64_t payload_ready = now_ps(), writes_done = now_ps();
        // With cut-through, where each frame's payload comes in (TX build streams it).
        std::vector<DmaArrival> spans;
        std::vector<DmaArrival>* spans_of = nic.cut_through ? &spans : nullptr;
        for (size_t i = 0; i < rec.ops.size();) {
            const Op& o = rec.ops[i];
            if ((o.kind == Op::Kind::DmaRead && o.purpose == DmaPurpose::WqeFetch) || o.kind == Op::Kind::WqeFetched) {
                ++i;  // the doorbell block did these
                continue;
            }
            if (is_memory_op(o.kind)) {
                i = nic.play_memory(rec, i, st, payload_ready, writes_done, false, t->qpn, spans_of);
                continue;
            }
            switch (o.kind) {
                case Op::Kind::TxFrame: {
                    const uint64_t seg = nic.req_seg_rtl ? seg_cycles_[o.aux] : 0;
                    wait_ps(nic.cycles(seg ? seg : nic.cfg.requester.cycles_per_packet));
                    // An RC request holds a retransmit-queue entry until it
                    // is acknowledged.
                    const TxFrameRec& fr = rec.frames[o.aux];
                    if (is_rc_request(fr.opcode)) nic.rtq_take(fr.qpn, fr.psn);
                    FrameTok f{std::move(rec.frames[o.aux]), std::max(payload_ready, now_ps()), 0, std::exchange(spans, {})};
                    const uint64_t ready = f.ready_ps;
                    nic.req_to_txb.write(std::move(f), &st);
                    nic.stage_sample(Nic::kRequester, start, std::max(now_ps(), ready));
                    start = payload_ready = now_ps();
                    break;
                }
                case Op::Kind::Cqe:
                case Op::Kind::Eqe: i = nic.play_completion(rec, i, t->db.num, writes_done, st); break;
                default: break;
            }
            ++i;
        }
    }
}

}  // namespace simnic::model
