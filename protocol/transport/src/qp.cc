#include "simnic/transport/qp.h"

#include "simnic/roce/ecn.h"
#include "simnic/roce/opcode.h"

namespace simnic::transport {

Qp::Qp(const QpConfig& cfg, const TransportEnv& env)
    : ctx_(cfg, env), req_(ctx_), resp_(ctx_), comp_(ctx_) {}

void Qp::set_state(hw::QpState s) {
    if (s == hw::QpState::Err) {
        ctx_.enter_error();
        return;
    }
    const hw::QpState from = ctx_.state;
    ctx_.state = s;
    // RTS->SQD starts a drain (SQD->SQD does not); leaving SQD ends one (the
    // firmware lets a QP leave SQD only once drained, or to RESET/ERR).
    if (s == hw::QpState::Sqd && from == hw::QpState::Rts)
        ctx_.begin_sq_drain();
    else if (s != hw::QpState::Sqd)
        ctx_.sq_draining = false;
    progress();
}

PostStatus Qp::post_send(const SendWqe& wqe) {
    const PostStatus st = req_.post(wqe);
    if (st == PostStatus::Ok) progress();
    return st;
}

void Qp::progress() {
    // The requester sends; the completer then completes what needs no
    // response (UC, UD) or what the requester failed; a completion may free
    // a credit or a fence, so go round until nothing moves. Each round sends
    // or completes something, and both are finite, so this ends.
    for (;;) {
        const size_t before = ctx_.sq.size();
        const size_t sent = req_.run();
        comp_.run();
        if (sent == 0 && ctx_.sq.size() == before) break;
    }
    ctx_.check_sq_drained();
}

void Qp::notify_congestion(const roce::Packet& pkt) {
    if (!ctx_.env.np || roce::ecn_of(pkt) != roce::Ecn::Ce) return;
    // Only a QP that takes part in traffic answers (rxe's QP takes packets
    // from RTR on; RESET and INIT drop them before the QP sees them).
    if (ctx_.state != hw::QpState::Rtr && ctx_.state != hw::QpState::Rts && ctx_.state != hw::QpState::Sqd)
        return;
    ctx_.count(Counter::CePacket);
    if (!ctx_.env.np->on_ce(ctx_.cfg.qpn, ctx_.env.timers->now_ns())) {
        ctx_.count(Counter::CnpSuppressed);
        return;
    }
    // The BTH names only the receiving QP: the sender is the connected
    // peer, or for UD the DETH's source QP.
    const bool ud = ctx_.cfg.type == hw::QpType::Ud;
    roce::Packet cnp = roce::make_cnp(pkt, ud ? pkt.hdr.deth.src_qp : ctx_.cfg.dest_qpn,
                                       ctx_.env.np->config().cnp_dscp);
    ctx_.env.wire->transmit(cnp);
    ctx_.count(Counter::CnpSent);
}

void Qp::on_packet(const roce::Packet& pkt) {
    if (roce::is_cnp(pkt)) {
        // A CNP for this QP (its DestQP): the reaction point lowers the
        // rate. It belongs to no transport (opcode prefix 100b), so nothing
        // else of the QP sees it.
        ctx_.count(Counter::CnpReceived);
        if (ctx_.rp && ctx_.state != hw::QpState::Err) ctx_.rp->on_cnp(ctx_.env.timers->now_ns());
        return;
    }
    const roce::OpcodeInfo& info = pkt.opinfo();
    // A packet of another transport than the QP's is not for it.
    const roce::Transport t = roce::opcode_transport(pkt.hdr.bth.opcode);
    const roce::Transport want = ctx_.cfg.type == hw::QpType::Rc   ? roce::Transport::RC
                                 : ctx_.cfg.type == hw::QpType::Uc ? roce::Transport::UC
                                                               : roce::Transport::UD;
    if (!info.valid() || t != want) return;
    notify_congestion(pkt);
    if (info.has(roce::kRequest)) {
        resp_.process(pkt);
    } else if (info.has(roce::kResponse)) {
        comp_.process(pkt);
        progress();
    }
}

void Qp::on_timer(QpTimer t) {
    if (t == QpTimer::Retransmit) {
        comp_.on_retransmit_timeout();
    } else if (t == QpTimer::RateLimit) {
        // The rate limiter's hold is over: progress() runs the requester,
        // which asks the limiter again.
    } else if (ctx_.req.retry == ReqRetry::RnrWait) {
        ctx_.req.retry = ReqRetry::Now;
    }
    progress();
}

QpTransportState Qp::snapshot() const {
    QpTransportState s;
    s.state = ctx_.state;
    s.sq_psn = ctx_.req.psn;
    s.comp_psn = ctx_.comp.psn;
    s.rq_psn = resp_.expected_psn();
    s.msn = resp_.msn();
    s.sq_outstanding = static_cast<uint32_t>(ctx_.sq.size());
    s.sq_draining = ctx_.sq_draining;
    return s;
}

QpCongestionState Qp::congestion(uint64_t now_ns) {
    QpCongestionState c;
    if (!ctx_.rp) return c;
    congestion::DcqcnRp& rp = *ctx_.rp;
    rp.advance(now_ns);
    c.on = true;
    c.rate_bps = rp.rate_bps();
    c.target_rate_bps = rp.target_rate_bps();
    c.alpha = rp.alpha();
    c.rate_limited = rp.rate_limited();
    c.counters = rp.counters();
    return c;
}

}  // namespace simnic::transport
