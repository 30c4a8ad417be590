#include "simnic/transport/qp.h"

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

void Qp::on_packet(const roce::Packet& pkt) {
    const roce::OpcodeInfo& info = pkt.opinfo();
    // A packet of another transport than the QP's is not for it.
    const roce::Transport t = roce::opcode_transport(pkt.hdr.bth.opcode);
    const roce::Transport want = ctx_.cfg.type == hw::QpType::Rc   ? roce::Transport::RC
                                 : ctx_.cfg.type == hw::QpType::Uc ? roce::Transport::UC
                                                               : roce::Transport::UD;
    if (!info.valid() || t != want) return;
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

}  // namespace simnic::transport
