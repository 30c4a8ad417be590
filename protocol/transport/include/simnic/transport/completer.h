// The completer (rxe_comp.c): consumes ACKs, NAKs and READ/atomic responses,
// completes send WQEs, and decides retries.
//
// An explicit state machine like the responder's. It runs for one response
// packet, for a retransmit-timer expiry, or with neither to complete WQEs
// that need no response (UC, UD) or that the requester failed.
#pragma once

#include <cstdint>

#include "simnic/roce/packet.h"
#include "simnic/transport/qp_context.h"

namespace simnic::transport {

enum class CompState : uint8_t {
    GetAck,
    GetWqe,
    CompWqe,
    CompAck,
    CheckPsn,
    CheckAck,
    Read,
    Atomic,
    WriteSend,
    UpdateComp,
    ErrorRetry,
    RnrRetry,
    Error,
    Done,
    Exit,
};

const char* to_string(CompState s);

class Completer {
public:
    explicit Completer(QpContext& qp) : qp_(qp) {}

    // A response packet (ACK, NAK, READ response, ATOMIC ACK) of this QP.
    void process(const roce::Packet& pkt);
    // The retransmit timer expired.
    void on_retransmit_timeout();
    // Complete what needs no response.
    void run();

private:
    struct Pass;

    void drive(Pass& p);
    CompState step(CompState s, Pass& p);
    CompState get_ack(Pass& p);
    CompState get_wqe(Pass& p);
    CompState comp_wqe(Pass& p);
    CompState comp_ack(Pass& p);
    CompState check_psn(Pass& p);
    CompState check_ack(Pass& p);
    CompState read(Pass& p);
    CompState atomic(Pass& p);
    CompState write_send(Pass& p);
    CompState update_comp(Pass& p);
    CompState error_retry(Pass& p);
    CompState rnr_retry(Pass& p);
    CompState error(Pass& p);
    void finish_head(hw::WcStatus status);

    QpContext& qp_;
};

}  // namespace simnic::transport
