// One QP of the transport core: the shared context and its three units,
// wired the way rxe's tasks are (a response runs the completer and then the
// requester, which may resume; a request runs the responder).
//
// An engine that keeps the units in separate threads or pipeline stages can
// drive requester(), responder() and completer() itself instead; Qp only
// sequences them.
#pragma once

#include "simnic/transport/completer.h"
#include "simnic/transport/qp_context.h"
#include "simnic/transport/requester.h"
#include "simnic/transport/responder.h"

namespace simnic::transport {

class Qp {
public:
    Qp(const QpConfig& cfg, const TransportEnv& env);
    Qp(const Qp&) = delete;
    Qp& operator=(const Qp&) = delete;

    // The state the firmware's modify_qp settled on (it checks transitions).
    // ERR flushes both queues.
    void set_state(hw::QpState s);
    hw::QpState state() const { return ctx_.state; }

    // ibv_post_send of one decoded WQE; sends what it can at once.
    PostStatus post_send(const SendWqe& wqe);
    // A packet addressed to this QP, as decode_frame produced it.
    void on_packet(const roce::Packet& pkt);
    void on_timer(QpTimer t);
    // The port takes packets again after it held the requester back
    // (WirePort::can_transmit): the requester goes on where it stopped.
    void resume() { progress(); }
    // A receive WQE was posted: nothing to do (the peer retries after its RNR
    // timer), kept so that engines have one place to call.
    void on_recv_posted() {}

    QpTransportState snapshot() const;
    // The reaction point's state, brought up to `now_ns` (its timers run
    // lazily: each event of the QP advances them first).
    QpCongestionState congestion(uint64_t now_ns);

    Requester& requester() { return req_; }
    Responder& responder() { return resp_; }
    Completer& completer() { return comp_; }
    QpContext& context() { return ctx_; }

private:
    void progress();
    // DCQCN's notification point: a CE-marked packet for this QP may ask
    // for a CNP to the QP that sent it.
    void notify_congestion(const roce::Packet& pkt);

    QpContext ctx_;
    Requester req_;
    Responder resp_;
    Completer comp_;
};

}  // namespace simnic::transport
