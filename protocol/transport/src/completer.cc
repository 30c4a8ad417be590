#include "simnic/transport/completer.h"

#include <algorithm>
#include <cstring>

#include "simnic/roce/opcode.h"
#include "simnic/roce/rules.h"

namespace simnic::transport {

namespace op = roce::op;
using roce::psn_add;
using roce::psn_diff;

struct Completer::Pass {
    const roce::Packet* pkt = nullptr;  // cleared once the packet is consumed
    uint32_t mask = 0;
    bool timeout = false;
    bool timeout_retry = false;  // ErrorRetry came from the retransmit timer (rxe: comp.timeout_retry)
    hw::WcStatus status = hw::WcStatus::Success;  // for the Error state
};

void Completer::process(const roce::Packet& pkt) {
    Pass p;
    p.pkt = &pkt;
    p.mask = pkt.opinfo().mask;
    drive(p);
}

void Completer::on_retransmit_timeout() {
    Pass p;
    p.timeout = true;
    drive(p);
}

void Completer::run() {
    Pass p;
    drive(p);
}

void Completer::drive(Pass& p) {
    CompState s = CompState::GetAck;
    while (s != CompState::Exit) {
        qp_.trace(Unit::Completer, to_string(s));
        s = step(s, p);
    }
}

CompState Completer::step(CompState s, Pass& p) {
    switch (s) {
        case CompState::GetAck: return get_ack(p);
        case CompState::GetWqe: return get_wqe(p);
        case CompState::CompWqe: return comp_wqe(p);
        case CompState::CompAck: return comp_ack(p);
        case CompState::CheckPsn: return check_psn(p);
        case CompState::CheckAck: return check_ack(p);
        case CompState::Read: return read(p);
        case CompState::Atomic: return atomic(p);
        case CompState::WriteSend: return write_send(p);
        case CompState::UpdateComp: return update_comp(p);
        case CompState::ErrorRetry: return error_retry(p);
        case CompState::RnrRetry: return rnr_retry(p);
        case CompState::Error: return error(p);
        case CompState::Done:
            p.pkt = nullptr;  // the packet is consumed; sweep what is left
            return CompState::GetAck;
        case CompState::Exit: return CompState::Exit;
    }
    return CompState::Exit;
}

CompState Completer::get_ack(Pass& p) {
    if (qp_.state == hw::QpState::Err) return CompState::Exit;
    if (p.timeout) {
        // Retransmit timer: retry if requests are still unacknowledged.
        p.timeout = false;
        const SqEntry* e = qp_.sq.head();
        if (e && (e->state == WqeState::Pending || e->state == WqeState::Processing) &&
            roce::psn_before(qp_.comp.psn, qp_.req.psn)) {
            p.timeout_retry = true;
            return CompState::ErrorRetry;
        }
    }
    return CompState::GetWqe;
}

CompState Completer::get_wqe(Pass& p) {
    const SqEntry* e = qp_.sq.head();
    if (!e || e->state == WqeState::Posted) return p.pkt ? CompState::Done : CompState::Exit;
    if (e->state == WqeState::Done) return CompState::CompWqe;
    if (e->state == WqeState::Error) {
        p.status = e->status;
        return CompState::Error;
    }
    return p.pkt ? CompState::CheckPsn : CompState::Exit;
}

void Completer::finish_head(hw::WcStatus status) {
    SqEntry* e = qp_.sq.head();
    if (e->holds_rd_atomic) ++qp_.req.rd_atomic_credits;
    qp_.complete_send(*e, status);
    qp_.sq.pop();
}

CompState Completer::comp_wqe(Pass& p) {
    // Complete the head WQE without a response of its own: it needs none
    // (UC, UD), or a later response acknowledged it implicitly.
    SqEntry* e = qp_.sq.head();
    if (p.pkt && e->state == WqeState::Pending && psn_diff(e->last_psn, qp_.comp.psn) >= 0) {
        qp_.comp.psn = psn_add(e->last_psn, 1);
        qp_.comp.opcode = -1;
    }
    finish_head(hw::WcStatus::Success);
    return CompState::GetWqe;
}

CompState Completer::check_psn(Pass& p) {
    const SqEntry* e = qp_.sq.head();
    const uint32_t psn = p.pkt->hdr.bth.psn;
    if (psn_diff(psn, e->last_psn) > 0) {
        // The response is for a later WQE: this one was acknowledged
        // implicitly, unless it is a READ or atomic whose data never came.
        if (e->state != WqeState::Pending) return CompState::Done;
        if (hw::is_read_or_atomic(e->wr.opcode)) return CompState::ErrorRetry;
        qp_.reset_retry_counters();
        return CompState::CompWqe;
    }
    const int diff = psn_diff(psn, qp_.comp.psn);
    if (diff < 0) {
        // Most likely the answer to a resent request. An atomic's carries
        // its value, to be placed before the WQE completes.
        if (psn == e->last_psn)
            return p.pkt->hdr.bth.opcode == op::RC_ATOMIC_ACKNOWLEDGE ? CompState::CheckAck : CompState::CompAck;
        if (p.pkt->hdr.bth.opcode == op::RC_ACKNOWLEDGE &&
            (qp_.comp.opcode == op::RC_RDMA_READ_RESPONSE_FIRST ||
             qp_.comp.opcode == op::RC_RDMA_READ_RESPONSE_MIDDLE))
            return CompState::CheckAck;
        return CompState::Done;
    }
    // A gap in READ responses: drop; the retransmit timer resends the rest.
    if (diff > 0 && hw::is_read_or_atomic(e->wr.opcode)) return CompState::Done;
    return CompState::CheckAck;
}

CompState Completer::check_ack(Pass& p) {
    const SqEntry* e = qp_.sq.head();
    const uint8_t opc = p.pkt->hdr.bth.opcode;
    const uint8_t syn = p.pkt->hdr.aeth.syndrome;
    // Inside a multi-packet READ response only MIDDLE and LAST may follow,
    // unless the READ was resent from its start.
    if (qp_.comp.opcode == op::RC_RDMA_READ_RESPONSE_FIRST ||
        qp_.comp.opcode == op::RC_RDMA_READ_RESPONSE_MIDDLE) {
        const bool cont = opc == op::RC_RDMA_READ_RESPONSE_MIDDLE ||
                          opc == op::RC_RDMA_READ_RESPONSE_LAST;
        const bool restart = p.pkt->hdr.bth.psn == e->first_psn &&
                             (opc == op::RC_RDMA_READ_RESPONSE_FIRST ||
                              opc == op::RC_RDMA_READ_RESPONSE_ONLY);
        if (!cont && !restart && opc != op::RC_ACKNOWLEDGE) return CompState::Done;
    }
    switch (opc) {
        case op::RC_RDMA_READ_RESPONSE_FIRST:
        case op::RC_RDMA_READ_RESPONSE_LAST:
        case op::RC_RDMA_READ_RESPONSE_ONLY:
            if (roce::aeth_type(syn) != roce::AethType::Ack) {
                p.status = hw::WcStatus::BadRespErr;
                return CompState::Error;
            }
            // ATOMIC WRITE is answered by a READ RESPONSE ONLY without
            // payload, and completes as a WRITE does (rxe's check_ack);
            // FLUSH's answer goes the READ way, placing nothing.
            if (opc == op::RC_RDMA_READ_RESPONSE_ONLY && e->wr.opcode == hw::WrOpcode::AtomicWrite) {
                qp_.reset_retry_counters();
                return CompState::WriteSend;
            }
            [[fallthrough]];
        case op::RC_RDMA_READ_RESPONSE_MIDDLE:
            if (e->wr.opcode != hw::WrOpcode::RdmaRead && e->wr.opcode != hw::WrOpcode::Flush) {
                p.status = hw::WcStatus::BadRespErr;
                return CompState::Error;
            }
            qp_.reset_retry_counters();
            return CompState::Read;
        case op::RC_ATOMIC_ACKNOWLEDGE:
            if (roce::aeth_type(syn) != roce::AethType::Ack || !hw::is_atomic(e->wr.opcode)) {
                p.status = hw::WcStatus::BadRespErr;
                return CompState::Error;
            }
            qp_.reset_retry_counters();
            return CompState::Atomic;
        case op::RC_ACKNOWLEDGE:
            switch (roce::aeth_type(syn)) {
                case roce::AethType::Ack:
                    qp_.reset_retry_counters();
                    return CompState::WriteSend;
                case roce::AethType::RnrNak: return CompState::RnrRetry;
                case roce::AethType::Nak:
                    switch (static_cast<roce::NakCode>(roce::aeth_value(syn))) {
                        case roce::NakCode::PsnSequenceError:
                            // Everything before the NAK'd PSN arrived: resume there.
                            if (psn_diff(p.pkt->hdr.bth.psn, qp_.comp.psn) > 0) {
                                qp_.comp.psn = p.pkt->hdr.bth.psn;
                                qp_.comp.opcode = -1;
                            }
                            return CompState::ErrorRetry;
                        case roce::NakCode::InvalidRequest:
                            p.status = hw::WcStatus::RemInvReqErr;
                            return CompState::Error;
                        case roce::NakCode::RemoteAccessError:
                            p.status = hw::WcStatus::RemAccessErr;
                            return CompState::Error;
                        case roce::NakCode::RemoteOperationalError:
                            p.status = hw::WcStatus::RemOpErr;
                            return CompState::Error;
                        default:
                            p.status = hw::WcStatus::BadRespErr;
                            return CompState::Error;
                    }
                case roce::AethType::Reserved: break;
            }
            p.status = hw::WcStatus::BadRespErr;
            return CompState::Error;
        default:
            p.status = hw::WcStatus::BadRespErr;
            return CompState::Error;
    }
}

CompState Completer::read(Pass& p) {
    // Place the response at its offset in the message, found from its PSN:
    // a READ resent from its middle lands where it belongs.
    SqEntry& e = *qp_.sq.head();
    uint64_t off = uint64_t(psn_diff(p.pkt->hdr.bth.psn, e.first_psn)) * qp_.mtu();
    const uint8_t* data = p.pkt->payload;
    size_t len = p.pkt->payload_len;
    for (size_t i = 0; i < e.wr.sg.num_sge && len > 0; ++i) {
        const Sge& s = e.wr.sg.sge[i];
        if (off >= s.length) {
            off -= s.length;
            continue;
        }
        const size_t n = static_cast<size_t>(std::min<uint64_t>(s.length - off, len));
        if (qp_.env.mem->write(KeyKind::Lkey, s.lkey, s.addr + off, data, n, hw::access::kLocalWrite) !=
            MemStatus::Ok) {
            p.status = hw::WcStatus::LocProtErr;
            return CompState::Error;
        }
        data += n;
        len -= n;
        off = 0;
    }
    if (len > 0) {  // more data than the READ asked for
        p.status = hw::WcStatus::LocLenErr;
        return CompState::Error;
    }
    return (p.mask & roce::kLast) ? CompState::CompAck : CompState::UpdateComp;
}

CompState Completer::atomic(Pass& p) {
    // The original remote value goes to the local buffer, in host order as
    // ibv_post_send documents.
    SqEntry& e = *qp_.sq.head();
    const uint64_t orig = p.pkt->hdr.atomic_ack.orig;
    const Sge& s = e.wr.sg.sge[0];
    if (qp_.env.mem->write(KeyKind::Lkey, s.lkey, s.addr, &orig, sizeof orig,
                           hw::access::kLocalWrite) != MemStatus::Ok) {
        p.status = hw::WcStatus::LocProtErr;
        return CompState::Error;
    }
    return CompState::CompAck;
}

CompState Completer::write_send(Pass& p) {
    const SqEntry* e = qp_.sq.head();
    // A plain ACK never completes a READ or an atomic: their data comes in
    // their own responses. One can carry such a request's PSN: a responder
    // answers a duplicate SEND or WRITE with an ACK for the last PSN it
    // executed (C9-105, as rxe's duplicate_request), which may be an atomic
    // whose ATOMIC ACKNOWLEDGE was lost. Completing the atomic on that ACK
    // left its result buffer unwritten (found by simnic-workload under 3%
    // loss, and by the fault tests on a corrupting wire); ignoring it lets
    // the retransmit timer fetch the saved result. rxe's completer
    // (do_write_send) has the same gap.
    if (hw::is_read_or_atomic(e->wr.opcode)) return CompState::Done;
    if (e->state == WqeState::Pending && e->last_psn == p.pkt->hdr.bth.psn) return CompState::CompAck;
    return CompState::UpdateComp;
}

CompState Completer::comp_ack(Pass& p) {
    finish_head(hw::WcStatus::Success);
    return psn_diff(p.pkt->hdr.bth.psn, qp_.comp.psn) >= 0 ? CompState::UpdateComp
                                                            : CompState::Done;
}

CompState Completer::update_comp(Pass& p) {
    qp_.comp.opcode = (p.mask & roce::kLast) ? -1 : p.pkt->hdr.bth.opcode;
    if (psn_diff(p.pkt->hdr.bth.psn, qp_.comp.psn) >= 0)
        qp_.comp.psn = psn_add(p.pkt->hdr.bth.psn, 1);
    // Progress: restart the retransmit timer, or stop it when all is acked.
    if (qp_.comp.psn == qp_.req.psn)
        qp_.env.timers->cancel(QpTimer::Retransmit);
    else
        qp_.arm_retransmit_timer();
    return CompState::Done;
}

CompState Completer::error_retry(Pass& p) {
    const SqEntry* e = qp_.sq.head();
    if (!e || e->state == WqeState::Posted) return CompState::Done;
    // Already waiting out an RNR NAK: the resend it schedules covers this
    // (the requests sent after the NAK'd one draw a PSN sequence NAK).
    if (qp_.req.retry == ReqRetry::RnrWait) return CompState::Done;
    // One resend at a time, as rxe: the responses to a resent window arrive
    // one by one, and each that passes a READ or atomic still waiting for
    // its data sends here; resending the whole window for each of them
    // multiplied the traffic by the window (260,000 packets resent for
    // 120 timeouts at 2% loss, found by simnic-workload, and by the rig
    // against kernel rxe under 5% loss), so that RC under loss hardly
    // progressed. A response that makes progress ends the resend
    // (reset_retry_counters); the timer may always start another.
    if (qp_.comp.started_retry && !p.timeout_retry) return CompState::Done;
    if (qp_.comp.retry_cnt > 0) {
        if (qp_.cfg.retry_cnt != 7) --qp_.comp.retry_cnt;  // 7: for ever
        if (roce::psn_before(qp_.comp.psn, qp_.req.psn)) {
            qp_.req.retry = ReqRetry::Now;
            qp_.comp.started_retry = true;
        }
        return CompState::Done;
    }
    p.status = hw::WcStatus::RetryExcErr;
    return CompState::Error;
}

CompState Completer::rnr_retry(Pass& p) {
    if (qp_.comp.rnr_retry > 0) {
        if (qp_.cfg.rnr_retry != 7) --qp_.comp.rnr_retry;  // 7: for ever
        // Resend from the NAK'd request once the RNR timer the responder
        // asked for has run out; nothing goes out meanwhile.
        if (psn_diff(p.pkt->hdr.bth.psn, qp_.comp.psn) > 0) qp_.comp.psn = p.pkt->hdr.bth.psn;
        qp_.req.retry = ReqRetry::RnrWait;
        qp_.env.timers->cancel(QpTimer::Retransmit);
        qp_.env.timers->arm(QpTimer::Rnr, qp_.env.timers->now_ns() +
                                              rnr_timeout_ns(roce::aeth_value(p.pkt->hdr.aeth.syndrome)));
        return CompState::Done;
    }
    p.status = hw::WcStatus::RnrRetryExcErr;
    return CompState::Error;
}

CompState Completer::error(Pass& p) {
    // The head WQE completes with the error (always reported, signaled or
    // not), and the QP goes to ERR, which flushes the rest.
    if (qp_.sq.head()) finish_head(p.status);
    qp_.enter_error();
    return CompState::Exit;
}

const char* to_string(CompState s) {
    switch (s) {
        case CompState::GetAck: return "GET_ACK";
        case CompState::GetWqe: return "GET_WQE";
        case CompState::CompWqe: return "COMP_WQE";
        case CompState::CompAck: return "COMP_ACK";
        case CompState::CheckPsn: return "CHECK_PSN";
        case CompState::CheckAck: return "CHECK_ACK";
        case CompState::Read: return "READ";
        case CompState::Atomic: return "ATOMIC";
        case CompState::WriteSend: return "WRITE_SEND";
        case CompState::UpdateComp: return "UPDATE_COMP";
        case CompState::ErrorRetry: return "ERROR_RETRY";
        case CompState::RnrRetry: return "RNR_RETRY";
        case CompState::Error: return "ERROR";
        case CompState::Done: return "DONE";
        case CompState::Exit: return "EXIT";
    }
    return "?";
}

}  // namespace simnic::transport
