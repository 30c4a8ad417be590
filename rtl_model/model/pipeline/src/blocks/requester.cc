#include "blocks/requester.h"

#include <algorithm>
#include <cstdio>
#include <utility>

#include "req_seg_frame.h"
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

void RequesterBlock::rtl_transactions(const OpRecord& rec) {
    seg_first_.assign(rec.frames.size(), 0);
    seg_count_.assign(rec.frames.size(), 0);
    for (size_t i = 0; i < rec.frames.size();) {
        if (!rec.frames[i].has_seg) {
            ++i;
            continue;
        }
        // The packets the datapath made of this WQE in one go: one
        // transaction, the WQE's descriptor granting that many.
        size_t n = 1;
        while (i + n < rec.frames.size() && continues(rec.frames[i + n - 1], rec.frames[i + n])) ++n;
        for (size_t k = i; k < i + n; ++k) {
            seg_first_[k] = i;
            seg_count_[k] = n;
        }
        i += n;
    }
}

void RequesterBlock::rtl_packet(OpRecord& rec, size_t j, sim::BlockStats& st) {
    rtl::ReqSegRtl& seg = *nic.req_seg_rtl;
    if (seg_first_[j] == j) {
        if (txn_.open) rtl_close(rec);
        txn_ = SegTxn{};
        txn_.open = true;
        txn_.first = j;
        txn_.n = seg_count_[j];
        txn_.w = rec.frames[j].seg_wqe;
        txn_.w.count = uint32_t(txn_.n);
        txn_.offered_at = seg.cycles();
        for (size_t k = j; k < j + txn_.n; ++k) txn_.want.push_back(rec.frames[k].seg);
        seg.offer(txn_.w);
        ++nic.req_seg_rtl_wqes;
        nic.req_seg_rtl_packets += txn_.n;
    }
    if (!txn_.open || txn_.ended) {
        // The RTL ended the transaction early (a mismatch): this packet
        // costs the C++ model's cycles.
        wait_ps(nic.cycles(nic.cfg.requester.cycles_per_packet));
    } else {
        // Edge by edge until the block hands this packet over, `base` the
        // start of the cycle whose edge is the first of `edges`. Only this
        // block writes req_to_txb, so its room can only grow while the
        // edges run: once m_ready_i is high it stays high until the packet
        // is taken, and those edges are waited at once.
        uint64_t base = now_ps(), edges = 0;
        for (;;) {
            if (nic.req_to_txb.full()) {
                // m_ready_i is low on every edge before TX build takes an
                // entry; the first edge at or after that sees the room (the
                // model's queues hand over in zero time). The RTL's edges
                // run meanwhile, its own work too. Each low edge is a cycle
                // of stall, counted once known.
                wait_until(base + nic.cycles(edges));
                const uint64_t t0 = base = now_ps();
                edges = 0;
                if (st.tap) st.tap->set(t0, st.stall_sig, 1);
                nic.req_to_txb.wait_room();
                const uint64_t low = std::max<uint64_t>(1, (now_ps() - t0 + nic.period_ps - 1) / nic.period_ps) - 1;
                for (uint64_t k = 0; k < low; ++k) seg.step(false);
                nic.req_seg_rtl_ready_low += nic.low_edges_counted(st, t0, low);
                sim::add_stall(st, t0, t0 + nic.cycles(low));
                if (st.tap) st.tap->set(now_ps(), st.stall_sig, 0);
                base = t0 + nic.cycles(low);  // the next edge ends the cycle from here
            }
            const rtl::ReqSegEdge e = seg.step(true);
            ++edges;
            if (e.packet) {
                txn_.packets.push_back(e.p);
                txn_.ended = e.last || txn_.packets.size() > txn_.n;
                if (txn_.packets.size() == 1) nic.req_seg_rtl_latency = seg.cycles() - txn_.offered_at;
                break;
            }
        }
        wait_until(base + nic.cycles(edges));
    }
    if (txn_.open) {
        const size_t k = j - txn_.first;
        const bool given = k < txn_.packets.size();
        if (!given || txn_.packets[k] != txn_.want[k]) {
            if (txn_.bad == SIZE_MAX) {
                txn_.bad = k;
                txn_.bad_frame = rec.frames[j].bytes;  // as the datapath built it
            }
            // The pipeline follows the RTL: the frame carries its BTH and
            // RETH fields (req_seg_frame.h), or goes as built where it
            // cannot, counted. A frame the RTL gave no descriptor for (it
            // ended the transaction early) goes as built, the transaction
            // counted as a mismatch only.
            TxFrameRec& fr = rec.frames[j];
            const rtl::SegSplice how =
                given ? rtl::splice_seg_packet(fr.bytes, txn_.want[k], txn_.packets[k]) : rtl::SegSplice::NotAFrame;
            if (how == rtl::SegSplice::Spliced) {
                fr.opcode = txn_.packets[k].opcode;  // what the waveform shows of it
                fr.psn = txn_.packets[k].psn & 0xffffff;
            } else if (given) {
                ++nic.req_seg_rtl_skipped;
                if (txn_.skipped == SIZE_MAX) {
                    txn_.skipped = k;
                    txn_.skipped_why = rtl::to_string(how);
                }
            }
        }
    }
    if (j + 1 == seg_first_[j] + seg_count_[j] && txn_.open) rtl_close(rec);
}

void RequesterBlock::rtl_close(OpRecord& rec) {
    rtl::ReqSegRtl& seg = *nic.req_seg_rtl;
    txn_.open = false;
    while (!txn_.ended) {
        const rtl::ReqSegEdge e = seg.step(true);
        if (!e.packet) continue;
        txn_.packets.push_back(e.p);
        txn_.ended = e.last || txn_.packets.size() > txn_.n;
    }
    const size_t i = txn_.first, n = txn_.n;
    const std::vector<transport::SegPacket>& got = txn_.packets;
    size_t bad = 0;
    while (bad < n && bad < got.size() && got[bad] == txn_.want[bad]) ++bad;
    if (bad == n && got.size() == n) return;
    ++nic.req_seg_rtl_mismatch;
    const transport::SegWqe& w = txn_.w;
    char head[160];
    std::snprintf(head, sizeof head, "WQE opcode %u, %u bytes, PMTU %u, packets %u+%zu: ", unsigned(w.opcode), w.length,
                  roce::ib_mtu_bytes(w.pmtu), w.start_pkt, n);
    std::string what = head;
    if (bad < n && bad < got.size())
        what += "packet " + std::to_string(bad) + " from the RTL " + show(got[bad]) + ", from the datapath " +
                show(txn_.want[bad]);
    else
        what += std::to_string(got.size()) + " packets from the RTL, " + std::to_string(n) + " from the datapath";
    if (txn_.skipped != SIZE_MAX)
        what += "; packet " + std::to_string(txn_.skipped) + " sent as built: " + txn_.skipped_why;
    // The frame of the packet found wrong: kept if it was sent already.
    const size_t at = std::min(bad, n - 1);
    nic.rtl_mismatch("req_seg", what, at == txn_.bad ? txn_.bad_frame : rec.frames[i + at].bytes);
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
        if (nic.req_seg_rtl) rtl_transactions(rec);
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
                    // An RC request holds a retransmit-queue entry until it
                    // is acknowledged: the datapath's PSN, which its ACKs
                    // name (the RTL's may differ on the wire).
                    const TxFrameRec& fr = rec.frames[o.aux];
                    const bool rc_request = is_rc_request(fr.opcode);
                    const uint32_t qpn = fr.qpn, psn = fr.psn;
                    if (nic.req_seg_rtl && fr.has_seg)
                        rtl_packet(rec, o.aux, st);
                    else
                        wait_ps(nic.cycles(nic.cfg.requester.cycles_per_packet));
                    if (rc_request) nic.rtq_take(qpn, psn);
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
        // A transaction whose last packet the record did not play.
        if (txn_.open) rtl_close(rec);
    }
}

}  // namespace simnic::model
