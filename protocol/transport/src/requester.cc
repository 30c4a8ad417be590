#include "simnic/transport/requester.h"

#include <algorithm>

#include "simnic/roce/ecn.h"
#include "simnic/roce/headers.h"
#include "simnic/roce/opcode.h"
#include "simnic/roce/rules.h"
#include "simnic/transport/segmentation.h"

namespace simnic::transport {

namespace op = roce::op;
using roce::psn_add;
using roce::psn_diff;

namespace {

// rxe's opcode table (rxe_wr_opcode_info): LOCAL_INV, FLUSH and
// ATOMIC_WRITE on RC only, BIND_MW on RC and UC.
bool opcode_allowed(hw::QpType t, hw::WrOpcode o) {
    switch (t) {
        case hw::QpType::Rc:
            return true;
        case hw::QpType::Uc:
            return o == hw::WrOpcode::Send || o == hw::WrOpcode::SendWithImm ||
                   o == hw::WrOpcode::RdmaWrite || o == hw::WrOpcode::RdmaWriteWithImm ||
                   o == hw::WrOpcode::BindMw;
        case hw::QpType::Ud:
            return o == hw::WrOpcode::Send || o == hw::WrOpcode::SendWithImm;
    }
    return false;
}

}  // namespace

PostStatus Requester::post(const SendWqe& wqe) {
    if (!opcode_allowed(qp_.cfg.type, wqe.opcode)) return PostStatus::InvalidOpcode;
    if (wqe.sg.num_sge > kMaxSge) return PostStatus::TooManySge;
    const uint64_t len = wqe.length();
    if (len > (uint64_t{1} << 31)) return PostStatus::BadLength;
    if (qp_.cfg.type == hw::QpType::Ud && len > qp_.mtu()) return PostStatus::BadLength;
    if (hw::is_atomic(wqe.opcode) && (wqe.is_inline() || len != 8)) return PostStatus::BadLength;
    if (wqe.opcode == hw::WrOpcode::RdmaRead && wqe.is_inline()) return PostStatus::BadLength;
    // ATOMIC_WRITE carries exactly its 8 bytes, inline (ibv_wr_atomic_write
    // copies them from the caller); FLUSH carries none.
    if (wqe.opcode == hw::WrOpcode::AtomicWrite && (!wqe.is_inline() || len != 8))
        return PostStatus::BadLength;
    if (wqe.opcode == hw::WrOpcode::Flush && (wqe.is_inline() || wqe.sg.num_sge != 0))
        return PostStatus::BadLength;
    if (hw::is_local_op(wqe.opcode) && (wqe.is_inline() || wqe.sg.num_sge != 0))
        return PostStatus::InvalidOpcode;  // a local operation carries no data
    SqEntry e;
    e.wr = wqe;
    if (qp_.state == hw::QpState::Err) {
        // rxe accepts the WQE and its completer flushes it straight away.
        qp_.complete_send(e, hw::WcStatus::WrFlushErr);
        return PostStatus::Flushed;
    }
    qp_.sq.push(std::move(e));
    return PostStatus::Ok;
}

// First packet of a WQE: claim what it needs and give it its PSNs. False when
// it must wait (fence, max_rd_atomic).
bool Requester::start_wqe(SqEntry& e) {
    // rxe's fence waits for every earlier WQE to complete, which is stronger
    // than IBA's "earlier READs and atomics" and never wrong.
    if ((e.wr.send_flags & hw::send_flags::kFence) && qp_.req.next_seq != qp_.sq.head_seq()) return false;
    if (hw::is_read_or_atomic(e.wr.opcode) && !e.holds_rd_atomic) {
        if (qp_.req.rd_atomic_credits == 0) return false;
        --qp_.req.rd_atomic_credits;
        e.holds_rd_atomic = true;
    }
    e.npkts = seg_npkts(e.wr.opcode, e.wr.length(), qp_.mtu());
    e.first_psn = qp_.req.psn;
    e.last_psn = psn_add(e.first_psn, e.npkts - 1);
    e.state = WqeState::Processing;
    qp_.req.started_end = std::max(qp_.req.started_end, qp_.req.next_seq + 1);
    return true;
}

void Requester::execute_local(SqEntry& e) {
    // rxe_do_local_ops: the operation acts at once, and the WQE completes in
    // SQ order behind the earlier ones (no ACK will come for it).
    MemStatus st = MemStatus::Ok;
    hw::WcStatus fail = hw::WcStatus::LocQpOpErr;
    if (e.wr.opcode == hw::WrOpcode::BindMw) {
        qp_.trace(Unit::Requester, "BIND_MW");
        st = qp_.env.mem->bind_mw(e.wr.bind);
        fail = hw::WcStatus::MwBindErr;
    } else {
        qp_.trace(Unit::Requester, "LOCAL_INV");
        st = qp_.env.mem->invalidate(e.wr.invalidate_rkey);
    }
    e.npkts = 0;
    if (st != MemStatus::Ok) {
        // The completer reports it when it reaches it and moves the QP to
        // ERR (rxe: wqe_state_error, the requester stops).
        e.state = WqeState::Error;
        e.status = fail;
        return;
    }
    e.state = WqeState::Done;
    ++qp_.req.next_seq;
    qp_.req.next_pkt = 0;
    qp_.req.started_end = std::max(qp_.req.started_end, qp_.req.next_seq);
}

void Requester::restart() {
    // Go back to the oldest unacknowledged PSN (rxe's req_retry). WQEs before
    // it that are fully acknowledged have already been completed, so the
    // head WQE holds that PSN, possibly in its middle.
    qp_.req.retry = ReqRetry::None;
    qp_.req.psn = qp_.comp.psn;
    qp_.req.next_seq = qp_.sq.head_seq();
    qp_.req.next_pkt = 0;
    qp_.req.noack_pkts = 0;
    for (uint64_t s = qp_.sq.head_seq(); s < qp_.sq.tail_seq(); ++s) {
        SqEntry* e = qp_.sq.at(s);
        // A local operation has acted already and is never repeated.
        if (hw::is_local_op(e->wr.opcode) && e->state == WqeState::Done) continue;
        if (e->state == WqeState::Posted || e->state == WqeState::Done ||
            e->state == WqeState::Error)
            break;
        e->state = WqeState::Posted;  // will be sent again; PSNs and credit kept
    }
    SqEntry* h = qp_.sq.head();
    if (h && h->state == WqeState::Posted && h->npkts > 0 &&
        psn_diff(qp_.comp.psn, h->first_psn) > 0 &&
        psn_diff(qp_.comp.psn, h->last_psn) <= 0) {
        // Mid-message: resume at the packet holding comp.psn. For a READ this
        // becomes a new READ request for the rest of the data, whose RETH
        // starts that many MTUs further (the response packets already received
        // were placed by the completer).
        h->state = WqeState::Processing;
        qp_.req.next_pkt = static_cast<uint32_t>(psn_diff(qp_.comp.psn, h->first_psn));
    }
}

SegWqe Requester::seg_wqe(const SqEntry& e) const {
    SegWqe w;
    w.qp_type = qp_.cfg.type;
    w.opcode = e.wr.opcode;
    w.length = e.wr.opcode == hw::WrOpcode::Flush ? e.wr.flush_len : static_cast<uint32_t>(e.wr.length());
    w.first_psn = e.first_psn;
    w.pmtu = qp_.cfg.path_mtu;
    w.remote_addr = e.wr.remote_addr;
    w.rkey = e.wr.rkey;
    w.solicited = (e.wr.send_flags & hw::send_flags::kSolicited) != 0;
    w.start_pkt = qp_.req.next_pkt;
    w.count = 1;
    w.noack = qp_.req.noack_pkts;
    return w;
}

void Requester::send_packet(SqEntry& e) {
    QpContext& qp = qp_;
    const uint32_t k = qp.req.next_pkt;
    const bool read = e.wr.opcode == hw::WrOpcode::RdmaRead;

    // Segmentation: opcode, PSN, RETH, payload slice, AckReq and SE.
    const SegWqe w = seg_wqe(e);
    const SegPacket seg = seg_packet(w, k, qp.req.noack_pkts);

    roce::Packet p;
    const bool ud = qp.cfg.type == hw::QpType::Ud;
    qp.init_packet(p, ud ? e.wr.ud.av : qp.cfg.av, ud ? e.wr.ud.remote_qpn : qp.cfg.dest_qpn);
    auto& h = p.hdr;
    h.bth.opcode = seg.opcode;
    h.bth.psn = seg.psn;
    h.bth.se = seg.se;
    h.bth.ack_req = seg.ack_req;
    const roce::OpcodeInfo& info = roce::opcode_info(h.bth.opcode);
    if (info.has(roce::Ext::DETH)) {
        const uint32_t qk = e.wr.ud.remote_qkey;
        h.deth.qkey = (qk & 0x80000000u) ? qp.cfg.qkey : qk;
        h.deth.src_qp = qp.cfg.qpn;
    }
    if (info.has(roce::Ext::FETH)) {
        h.feth.placement = e.wr.flush_placement;
        h.feth.selectivity = e.wr.flush_selectivity;
    }
    if (seg.reth) {
        h.reth.va = seg.reth_va;
        h.reth.rkey = seg.reth_rkey;
        h.reth.dma_len = seg.reth_dma_len;
    }
    if (info.has(roce::Ext::AtomicETH)) {
        h.atomic.va = e.wr.remote_addr;
        h.atomic.rkey = e.wr.rkey;
        const bool cas = e.wr.opcode == hw::WrOpcode::AtomicCmpAndSwp;
        h.atomic.swap_add = cas ? e.wr.swap : e.wr.compare_add;
        h.atomic.compare = cas ? e.wr.compare_add : 0;
    }
    if (info.has(roce::Ext::ImmDt)) h.imm = e.wr.imm_data;
    if (info.has(roce::Ext::IETH)) h.ieth_rkey = e.wr.invalidate_rkey;

    if (info.has(roce::kPayload) && !read) {
        const uint64_t off = seg.payload_off;
        const size_t n = seg.payload_len;
        payload_.resize(n);
        const uint8_t* view = nullptr;
        if (e.wr.is_inline()) {
            std::copy_n(e.wr.inline_data.begin() + static_cast<std::ptrdiff_t>(off), n,
                        payload_.begin());
        } else {
            // Gather [off, off + n) of the message from the SGEs. A packet
            // within one SGE is taken in place where the port already holds
            // its bytes (a read-ahead of this WQE), else copied.
            uint64_t pos = 0;
            size_t got = 0;
            for (size_t i = 0; i < e.wr.sg.num_sge && got < n; ++i) {
                const Sge& s = e.wr.sg.sge[i];
                if (pos + s.length <= off + got) {
                    pos += s.length;
                    continue;
                }
                const uint64_t in = off + got - pos;
                const size_t take = static_cast<size_t>(std::min<uint64_t>(s.length - in, n - got));
                MemStatus st = MemStatus::Ok;
                if (take == n)
                    st = qp.env.mem->gather_view(s.lkey, s.addr + in, n, s.length - in, qp.req.next_seq, view);
                if (st == MemStatus::Ok && !view)
                    st = qp.env.mem->gather(s.lkey, s.addr + in, payload_.data() + got, take, s.length - in,
                                            qp.req.next_seq);
                if (st != MemStatus::Ok) {
                    // rxe: a bad local SGE completes the WQE with a local
                    // protection error and the QP goes to ERR.
                    e.state = WqeState::Error;
                    e.status = hw::WcStatus::LocProtErr;
                    return;
                }
                got += take;
                pos += s.length;
            }
        }
        p.payload = view ? view : payload_.data();
        p.payload_len = n;
    }

    // Congestion control on: the packet takes part in ECN (ECT(0)), so that
    // a congested switch marks it CE instead of dropping it. Only request
    // packets: they are what the rate limiter paces, and a CNP for an ACK's
    // or READ response's CE mark would lower a rate nothing applies.
    if (qp.rp) roce::set_ecn(p, roce::Ecn::Ect0);
    const uint32_t wire_bytes = qp.rp ? frame_bytes(e) : 0;
    qp.env.wire->transmit_request(p, w, seg);
    if (qp.rp) qp.rp->on_bytes_sent(wire_bytes, qp.env.timers->now_ns());
    if (h.bth.ack_req) qp.arm_retransmit_timer();

    if (read) {
        qp.req.psn = psn_add(e.last_psn, 1);
        qp.req.next_pkt = e.npkts;
    } else {
        qp.req.psn = psn_add(qp.req.psn, 1);
        ++qp.req.next_pkt;
    }
    if (qp.req.next_pkt >= e.npkts) {
        // RC waits for the response; UC and UD are done once sent.
        e.state = qp.is_rc() ? WqeState::Pending : WqeState::Done;
        ++qp.req.next_seq;
        qp.req.next_pkt = 0;
    }
}

uint32_t Requester::frame_bytes(const SqEntry& e) const {
    const QpContext& qp = qp_;
    const uint32_t mtu = qp.mtu();
    const uint32_t k = qp.req.next_pkt;
    const bool read = e.wr.opcode == hw::WrOpcode::RdmaRead;
    const uint8_t opcode = request_opcode(qp.cfg.type, e.wr.opcode, read ? 0 : k, read ? 1 : e.npkts);
    const roce::OpcodeInfo& info = roce::opcode_info(opcode);
    uint64_t payload = 0;
    if (info.has(roce::kPayload) && !read) payload = std::min<uint64_t>(mtu, e.wr.length() - uint64_t{k} * mtu);
    const AddressVector& av = qp.cfg.type == hw::QpType::Ud ? e.wr.ud.av : qp.cfg.av;
    const size_t ip = av.ip_version == roce::IpVersion::V4 ? roce::kIpv4HdrBytes : roce::kIpv6HdrBytes;
    const uint64_t padded = (payload + 3) & ~uint64_t{3};
    return static_cast<uint32_t>(roce::kEthHdrBytes + ip + roce::kUdpHdrBytes + info.hdr_bytes + padded +
                                 roce::kIcrcBytes);
}

bool Requester::pace(const SqEntry& e) {
    if (!qp_.rp) return true;
    congestion::DcqcnRp& rp = *qp_.rp;
    const uint64_t now = qp_.env.timers->now_ns();
    rp.advance(now);
    // At line rate the port's MAC is the only limit, unless the engine asks
    // for line-rate pacing (a fabric: DcqcnConfig::pace_line_rate). The soft
    // engine on a host's clock has no line rate and is not slowed by a
    // timer per packet.
    if (!rp.rate_limited() && !rp.config().pace_line_rate) return true;
    const uint64_t at = rp.earliest_send_ns(frame_bytes(e), now);
    if (at <= now) return true;
    qp_.env.timers->arm(QpTimer::RateLimit, at);
    qp_.count(Counter::RateLimited);
    return false;
}

size_t Requester::run() {
    size_t sent = 0;
    // SQD: finish (and resend, on a retry) what was started before the drain,
    // start nothing new (rxe's req_next_wqe() in SQD).
    const bool sqd = qp_.state == hw::QpState::Sqd;
    if (qp_.state != hw::QpState::Rts && !sqd) return 0;
    if (qp_.req.retry == ReqRetry::RnrWait) return 0;
    if (qp_.req.retry == ReqRetry::Now) restart();
    for (;;) {
        qp_.trace(Unit::Requester, "NEXT_WQE");
        if (sqd && qp_.req.next_seq >= qp_.req.started_end) break;
        SqEntry* e = qp_.sq.at(qp_.req.next_seq);
        if (!e) break;
        if (e->state == WqeState::Error) break;  // the completer reports it
        if (hw::is_local_op(e->wr.opcode)) {
            if (e->state == WqeState::Done) {  // acted before a retry went back
                ++qp_.req.next_seq;
                continue;
            }
            // rxe's fence: wait until every earlier WQE has completed.
            if ((e->wr.send_flags & hw::send_flags::kFence) && qp_.req.next_seq != qp_.sq.head_seq()) break;
            execute_local(*e);
            if (e->state == WqeState::Error) break;
            continue;
        }
        if (e->state == WqeState::Posted && qp_.req.next_pkt == 0 && !start_wqe(*e)) break;
        // The window: never more than kMaxUnackedPsns beyond the oldest
        // unacknowledged PSN (RC only: UC and UD get no ACKs).
        if (qp_.is_rc() &&
            psn_diff(qp_.req.psn, psn_add(qp_.comp.psn, kMaxUnackedPsns)) > 0)
            break;
        // The port's back-pressure (WirePort::can_transmit): resumed by the
        // engine through Qp::resume().
        if (!qp_.env.wire->can_transmit()) {
            qp_.trace(Unit::Requester, "PORT_HELD");
            break;
        }
        if (!pace(*e)) {
            qp_.trace(Unit::Requester, "RATE_LIMITED");
            break;
        }
        qp_.trace(Unit::Requester, "SEND_PACKET");
        send_packet(*e);
        if (e->state == WqeState::Error) break;  // the completer reports it
        ++sent;
    }
    return sent;
}

}  // namespace simnic::transport
