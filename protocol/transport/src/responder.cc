#include "simnic/transport/responder.h"

#include <algorithm>
#include <cstring>

#include "simnic/roce/opcode.h"
#include "simnic/roce/rules.h"

namespace simnic::transport {

namespace op = roce::op;
using roce::psn_add;
using roce::psn_diff;

namespace {
constexpr uint8_t kAckSyndrome = 0x1f;  // ACK, "no credit count" (seen on rxe)
constexpr size_t kGrhBytes = 40;        // a UD receive buffer starts with the GRH
}  // namespace

struct Responder::Pass {
    const roce::Packet* pkt = nullptr;
    uint32_t mask = 0;
    RespResource* res = nullptr;  // READ/atomic being answered (new or replayed)
};

Responder::Responder(QpContext& qp) : qp_(qp) {
    psn_ = qp.cfg.rq_psn & roce::kPsnMask;
    ack_psn_ = psn_;
    res_.resize(qp.cfg.max_dest_rd_atomic);
}

void Responder::process(const roce::Packet& pkt) {
    Pass p;
    p.pkt = &pkt;
    p.mask = pkt.opinfo().mask;
    RespState s = RespState::GetReq;
    while (s != RespState::Done) {
        qp_.trace(Unit::Responder, to_string(s));
        s = step(s, p);
    }
}

uint32_t Responder::placement(const roce::Packet& pkt) const {
    const uint32_t mask = pkt.opinfo().mask;
    const size_t len = pkt.payload_len;
    switch (qp_.state) {
        case hw::QpState::Rtr:
        case hw::QpState::Rts:
        case hw::QpState::Sqd:
        case hw::QpState::Sqe: break;
        default: return 0;
    }
    if (!(mask & roce::kRequest) || !(mask & (roce::kSend | roce::kWrite)) || len == 0) return 0;
    if (!qp_.is_rc() && qp_.cfg.type != hw::QpType::Uc) return 0;
    // chk_psn: only the expected PSN is executed (a duplicate is not placed again).
    if (pkt.hdr.bth.psn != psn_) return 0;
    if (qp_.cfg.type == hw::QpType::Uc && uc_ == UcMessage::Dropping) return 0;
    // chk_op_seq
    const uint32_t prev = opcode_ < 0 ? 0 : roce::opcode_info(static_cast<uint8_t>(opcode_)).mask;
    const uint32_t fam = roce::kSend | roce::kWrite;
    const bool open = (prev & fam) && !(prev & roce::kLast);
    const bool continues = (mask & fam) && !(mask & roce::kFirst);
    if (open ? !(continues && (prev & fam) == (mask & fam)) : continues) return 0;
    // chk_op_valid
    if ((mask & roce::kWrite) && !(qp_.cfg.access_flags & hw::access::kRemoteWrite)) return 0;
    // chk_length
    const uint32_t mtu = qp_.mtu();
    const bool first = mask & roce::kFirst, last = mask & roce::kLast;
    if (first && last ? len > mtu : (first || (mask & roce::kMiddle)) ? len != mtu : len > mtu) return 0;
    // chk_resource: a message that takes a receive WQE needs one.
    const RecvWqe* w = qp_.recv ? &qp_.recv->wqe : nullptr;
    if ((mask & roce::kUsesRecvWqe) && !w) {
        w = qp_.env.rq->peek();
        if (!w || w->sg.num_sge > kMaxSge) return 0;
    }
    if (mask & roce::kWrite) {
        // chk_rkey: a FIRST or ONLY brings its RETH, a MIDDLE or LAST goes on where it left.
        uint64_t va = va_;
        uint32_t rkey = rkey_, resid = resid_;
        if (mask & roce::kHasReth) {
            va = pkt.hdr.reth.va;
            rkey = pkt.hdr.reth.rkey;
            resid = pkt.hdr.reth.dma_len;
            if (resid > (1u << 31)) return 0;
        }
        if (resid > mtu ? len != mtu : len != resid) return 0;
        if (qp_.env.mem->check(KeyKind::Rkey, rkey, va, len, hw::access::kRemoteWrite) != MemStatus::Ok) return 0;
        return static_cast<uint32_t>(len);
    }
    // A SEND: the receive WQE's SGEs from where the message is, each under its lkey.
    uint32_t idx = qp_.recv ? qp_.recv->sge_index : 0, off = qp_.recv ? qp_.recv->sge_offset : 0;
    size_t left = len;
    for (; left > 0; ++idx, off = 0) {
        if (idx >= w->sg.num_sge) return 0;  // overflow: a length error, nothing placed
        const Sge& sg = w->sg.sge[idx];
        const size_t n = std::min<size_t>(sg.length - off, left);
        if (n > 0 && qp_.env.mem->check(KeyKind::Lkey, sg.lkey, sg.addr + off, n, hw::access::kLocalWrite) !=
                         MemStatus::Ok)
            return 0;
        left -= n;
    }
    return static_cast<uint32_t>(len);
}

RespState Responder::step(RespState s, Pass& p) {
    switch (s) {
        case RespState::GetReq: return get_req(p);
        case RespState::ChkPsn: return chk_psn(p);
        case RespState::ChkOpSeq: return chk_op_seq(p);
        case RespState::ChkOpValid: return chk_op_valid(p);
        case RespState::ChkResource: return chk_resource(p);
        case RespState::ChkLength: return chk_length(p);
        case RespState::ChkRkey: return chk_rkey(p);
        case RespState::Execute: return execute(p);
        case RespState::ReadReply: return read_reply(p);
        case RespState::AtomicReply: return atomic_reply(p);
        case RespState::AtomicWriteReply: return atomic_write_reply(p);
        case RespState::ProcessFlush: return process_flush(p);
        case RespState::Complete: return complete(p);
        case RespState::Acknowledge: return acknowledge(p);
        case RespState::DuplicateRequest: return duplicate_request(p);
        case RespState::Cleanup: return RespState::Done;
        case RespState::Error:
            qp_.enter_error();
            return RespState::Cleanup;
        case RespState::Done: return RespState::Done;
        default: return error_state(s, p);
    }
}

RespState Responder::get_req(Pass& p) {
    switch (qp_.state) {
        case hw::QpState::Rtr:
        case hw::QpState::Rts:
        case hw::QpState::Sqd:
        case hw::QpState::Sqe: break;
        default: return RespState::Cleanup;  // not receiving: drop
    }
    if (!(p.mask & roce::kRequest)) return RespState::Cleanup;
    return RespState::ChkPsn;
}

RespState Responder::chk_psn(Pass& p) {
    const int diff = psn_diff(p.pkt->hdr.bth.psn, psn_);
    switch (qp_.cfg.type) {
        case hw::QpType::Rc:
            if (diff > 0) {
                // A gap: NAK once, then drop silently until the requester
                // resends the expected PSN.
                if (sequence_ == Sequence::NakSent) return RespState::Cleanup;
                sequence_ = Sequence::NakSent;
                if (qp_.env.counters) qp_.env.counters->count(Counter::OutOfSeqRequest);
                return RespState::ErrPsnOutOfSeq;
            }
            if (diff < 0) {
                if (qp_.env.counters) qp_.env.counters->count(Counter::DuplicateRequest);
                return RespState::DuplicateRequest;
            }
            sequence_ = Sequence::InSequence;
            break;
        case hw::QpType::Uc:
            if (uc_ == UcMessage::Dropping || diff != 0) {
                // UC never resends: a lost packet loses its message. A packet
                // that starts a message resynchronises on its PSN.
                if (p.mask & roce::kFirst) {
                    abandon_partial_message();
                    uc_ = UcMessage::Receiving;
                    return RespState::ChkOpSeq;
                }
                uc_ = UcMessage::Dropping;
                return RespState::Cleanup;
            }
            break;
        case hw::QpType::Ud: break;
    }
    return RespState::ChkOpSeq;
}

RespState Responder::chk_op_seq(Pass& p) {
    if (qp_.cfg.type == hw::QpType::Ud) return RespState::ChkOpValid;
    // A SEND or WRITE message left open by the previous packet must be
    // continued by a MIDDLE or LAST of the same kind; otherwise the packet
    // must not be a MIDDLE or LAST.
    const uint32_t prev = opcode_ < 0 ? 0 : roce::opcode_info(static_cast<uint8_t>(opcode_)).mask;
    const uint32_t fam = roce::kSend | roce::kWrite;
    const bool open = (prev & fam) && !(prev & roce::kLast);
    const bool continues = (p.mask & fam) && !(p.mask & roce::kFirst);
    const bool ok = open ? continues && (prev & fam) == (p.mask & fam) : !continues;
    if (ok) return RespState::ChkOpValid;
    if (qp_.cfg.type == hw::QpType::Rc)
        return open ? RespState::ErrMissingOpcodeLastC : RespState::ErrMissingOpcodeFirst;
    if (open) return RespState::ErrMissingOpcodeLastD1E;
    uc_ = UcMessage::Dropping;  // a MIDDLE/LAST without its FIRST
    return RespState::Cleanup;
}

RespState Responder::chk_op_valid(Pass& p) {
    const uint32_t acc = qp_.cfg.access_flags;
    switch (qp_.cfg.type) {
        case hw::QpType::Rc:
            // ATOMIC WRITE needs the QP's REMOTE_WRITE, as a WRITE does;
            // FLUSH the right of each placement type it asks for (rxe's
            // check_qp_attr_access).
            if (((p.mask & roce::kRead) && !(acc & hw::access::kRemoteRead)) ||
                ((p.mask & (roce::kWrite | roce::kAtomicWrite)) && !(acc & hw::access::kRemoteWrite)) ||
                ((p.mask & roce::kAtomic) && !(acc & hw::access::kRemoteAtomic)))
                return RespState::ErrUnsupportedOpcode;
            if (p.mask & roce::kFlush) {
                const uint8_t plt = p.pkt->hdr.feth.placement;
                if (((plt & roce::feth::kPlacementGlobal) && !(acc & hw::access::kFlushGlobal)) ||
                    ((plt & roce::feth::kPlacementPersistent) && !(acc & hw::access::kFlushPersistent)))
                    return RespState::ErrUnsupportedOpcode;
            }
            break;
        case hw::QpType::Uc:
            if ((p.mask & roce::kWrite) && !(acc & hw::access::kRemoteWrite)) {
                uc_ = UcMessage::Dropping;
                return RespState::Cleanup;
            }
            break;
        case hw::QpType::Ud:
            // Q_Key check (rxe does it on receive): mismatches are dropped.
            if (p.pkt->hdr.deth.qkey != qp_.cfg.qkey) return RespState::Cleanup;
            break;
    }
    return RespState::ChkResource;
}

RespState Responder::chk_resource(Pass& p) {
    // ATOMIC WRITE takes a responder resource as READs and atomics do (its
    // replay state). FLUSH keeps one too; rxe does not count it here, but a
    // QP with max_dest_rd_atomic 0 has none to keep, so it is refused alike.
    if (p.mask & (roce::kRead | roce::kAtomic | roce::kAtomicWrite | roce::kFlush))
        return res_.empty() ? RespState::ErrTooManyRdmaAtmReq : RespState::ChkLength;
    if ((p.mask & roce::kUsesRecvWqe) && !qp_.recv) {
        const RecvWqe* w = qp_.env.rq->peek();
        if (!w) return RespState::ErrRnr;
        if (w->sg.num_sge > kMaxSge) return RespState::ErrMalformedWqe;
        qp_.recv = RecvCursor{*w, 0, 0, 0};
        qp_.env.rq->pop();
    }
    return RespState::ChkLength;
}

RespState Responder::chk_length(Pass& p) {
    const uint32_t mtu = qp_.mtu();
    const size_t len = p.pkt->payload_len;
    if (p.mask & roce::kPayload) {
        const bool first = p.mask & roce::kFirst, last = p.mask & roce::kLast;
        if (first && last) {
            if (len > mtu) return RespState::ErrLength;
        } else if (first || (p.mask & roce::kMiddle)) {
            if (len != mtu) return RespState::ErrLength;
        } else if (last) {
            if (len == 0 || len > mtu) return RespState::ErrLength;
        }
    }
    if ((p.mask & (roce::kWrite | roce::kRead | roce::kAtomicWrite | roce::kFlush)) &&
        (p.mask & roce::kHasReth) &&
        p.pkt->hdr.reth.dma_len > (1u << 31))
        return RespState::ErrLength;
    return RespState::ChkRkey;
}

RespState Responder::chk_rkey(Pass& p) {
    const auto& h = p.pkt->hdr;
    uint32_t access = 0;
    bool whole_mr = false;
    if (p.mask & (roce::kRead | roce::kWrite | roce::kAtomicWrite)) {
        if (p.mask & roce::kHasReth) {
            va_ = h.reth.va;
            rkey_ = h.reth.rkey;
            resid_ = length_ = h.reth.dma_len;
            // A zero-length READ or WRITE needs no valid address or key
            // (C9-88); an ATOMIC WRITE always does.
            if (h.reth.dma_len == 0 && !(p.mask & roce::kAtomicWrite)) return RespState::Execute;
        }
        access = (p.mask & roce::kRead) ? hw::access::kRemoteRead : hw::access::kRemoteWrite;
    } else if (p.mask & roce::kFlush) {
        va_ = h.reth.va;
        rkey_ = h.reth.rkey;
        resid_ = length_ = h.reth.dma_len;
        if (h.feth.placement & roce::feth::kPlacementGlobal) access |= hw::access::kFlushGlobal;
        if (h.feth.placement & roce::feth::kPlacementPersistent) access |= hw::access::kFlushPersistent;
        // A FLUSH of the whole MR needs a valid key with the rights, not a
        // range: its RETH's address and length mean nothing.
        whole_mr = h.feth.selectivity == roce::feth::kSelectMr;
    } else if (p.mask & roce::kAtomic) {
        va_ = h.atomic.va;
        rkey_ = h.atomic.rkey;
        resid_ = 8;
        access = hw::access::kRemoteAtomic;
    } else {
        return RespState::Execute;
    }
    // An ATOMIC WRITE places exactly 8 bytes (IBA A19.4.2): a RETH or a
    // payload of another length is an invalid request. Let through, 8 bytes
    // were read from a shorter payload (past the end of the frame) and
    // written where the key was checked for fewer (found by fuzz_engine_rx).
    if ((p.mask & roce::kAtomicWrite) && (resid_ != 8 || p.pkt->payload_len != 8)) return RespState::ErrLength;
    const MemStatus st = whole_mr ? qp_.env.mem->check_whole_mr(KeyKind::Rkey, rkey_, va_, access)
                                  : qp_.env.mem->check(KeyKind::Rkey, rkey_, va_, resid_, access);
    if (st != MemStatus::Ok) return RespState::ErrRkeyViolation;
    if (p.mask & (roce::kWrite | roce::kAtomicWrite)) {
        // The packet must carry exactly what the RETH still announces.
        const size_t len = p.pkt->payload_len;
        if (resid_ > qp_.mtu() ? len != qp_.mtu() : len != resid_) return RespState::ErrLength;
    }
    return RespState::Execute;
}

Responder::Place Responder::place_in_recv(const uint8_t* data, size_t len) {
    RecvCursor& rc = *qp_.recv;
    while (len > 0) {
        if (rc.sge_index >= rc.wqe.sg.num_sge) return Place::Overflow;
        const Sge& s = rc.wqe.sg.sge[rc.sge_index];
        const size_t room = s.length - rc.sge_offset;
        const size_t n = std::min(room, len);
        if (n > 0 && qp_.env.mem->write(KeyKind::Lkey, s.lkey, s.addr + rc.sge_offset, data, n,
                                        hw::access::kLocalWrite) != MemStatus::Ok)
            return Place::Fault;
        data += n;
        len -= n;
        rc.placed += static_cast<uint32_t>(n);
        rc.sge_offset += static_cast<uint32_t>(n);
        if (rc.sge_offset == s.length) {
            ++rc.sge_index;
            rc.sge_offset = 0;
        }
    }
    return Place::Ok;
}

void Responder::abandon_partial_message() {
    // Keep the receive WQE but rewind it: the next message fills it from the
    // start (rxe resets the WQE's DMA state the same way).
    if (qp_.recv) qp_.recv = RecvCursor{qp_.recv->wqe, 0, 0, 0};
    opcode_ = -1;
}

RespState Responder::execute(Pass& p) {
    const roce::Packet& pkt = *p.pkt;
    if (p.mask & roce::kSend) {
        if (qp_.cfg.type == hw::QpType::Ud) {
            // Like rxe, a UD receive buffer gets the 40-byte GRH first; over
            // IPv4 that is 20 zero bytes and the IPv4 header. The frame the
            // packet was decoded from starts payload_off bytes before it.
            uint8_t grh[kGrhBytes] = {};
            const uint8_t* frame = pkt.payload - pkt.payload_off;
            if (pkt.ip_version == roce::IpVersion::V4)
                std::memcpy(grh + 20, frame + pkt.l3_off, roce::kIpv4HdrBytes);
            else
                std::memcpy(grh, frame + pkt.l3_off, roce::kIpv6HdrBytes);
            const Place r = place_in_recv(grh, kGrhBytes);
            if (r != Place::Ok)
                return r == Place::Overflow ? RespState::ErrLength : RespState::ErrMalformedWqe;
        }
        const Place r = place_in_recv(pkt.payload, pkt.payload_len);
        if (r != Place::Ok)
            return r == Place::Overflow ? RespState::ErrLength : RespState::ErrMalformedWqe;
    } else if (p.mask & roce::kWrite) {
        if (pkt.payload_len > 0) {
            if (qp_.env.mem->write(KeyKind::Rkey, rkey_, va_, pkt.payload, pkt.payload_len,
                                   hw::access::kRemoteWrite) != MemStatus::Ok)
                return RespState::ErrRkeyViolation;
            va_ += pkt.payload_len;
            resid_ -= static_cast<uint32_t>(pkt.payload_len);
        }
    } else if (p.mask & roce::kRead) {
        // The MSN counts the READ now (IBA C9-148); its responses carry it.
        msn_ = psn_add(msn_, 1);
        return RespState::ReadReply;
    } else if (p.mask & roce::kAtomic) {
        return RespState::AtomicReply;
    } else if (p.mask & roce::kAtomicWrite) {
        return RespState::AtomicWriteReply;
    } else if (p.mask & roce::kFlush) {
        return RespState::ProcessFlush;
    }
    if (p.mask & roce::kHasIeth) {
        if (qp_.env.mem->invalidate(pkt.hdr.ieth_rkey) != MemStatus::Ok)
            return RespState::ErrInvalidateRkey;
    }
    if (p.mask & roce::kLast) msn_ = psn_add(msn_, 1);
    psn_ = psn_add(pkt.hdr.bth.psn, 1);
    ack_psn_ = psn_;
    opcode_ = pkt.hdr.bth.opcode;
    if (p.mask & roce::kCompletes) return RespState::Complete;
    return qp_.is_rc() ? RespState::Acknowledge : RespState::Cleanup;
}

RespResource& Responder::prepare_resource(RespResource::Type t, uint32_t psn, uint32_t npkts) {
    RespResource& r = res_[res_head_];
    res_head_ = (res_head_ + 1) % res_.size();
    r = RespResource{};
    r.type = t;
    r.first_psn = r.cur_psn = psn;
    r.last_psn = psn_add(psn, npkts - 1);
    return r;
}

RespResource* Responder::find_resource(uint32_t psn) {
    for (RespResource& r : res_) {
        if (r.type == RespResource::Type::None) continue;
        if (psn_diff(psn, r.first_psn) >= 0 && psn_diff(psn, r.last_psn) <= 0) return &r;
    }
    return nullptr;
}

RespState Responder::read_reply(Pass& p) {
    const uint32_t mtu = qp_.mtu();
    if (!p.res) {
        const uint32_t npkts = std::max<uint32_t>(1, (resid_ + mtu - 1) / mtu);
        RespResource& r = prepare_resource(RespResource::Type::Read, p.pkt->hdr.bth.psn, npkts);
        r.va_org = r.va = va_;
        r.rkey = rkey_;
        r.length = r.resid = resid_;
        r.serve = ++serves_;
        p.res = &r;
    }
    RespResource& r = *p.res;
    uint8_t opcode;
    if (!r.started)
        opcode = r.resid <= mtu ? op::RC_RDMA_READ_RESPONSE_ONLY : op::RC_RDMA_READ_RESPONSE_FIRST;
    else
        opcode = r.resid > mtu ? op::RC_RDMA_READ_RESPONSE_MIDDLE : op::RC_RDMA_READ_RESPONSE_LAST;
    r.started = true;
    const uint32_t n = std::min(r.resid, mtu);
    // The key is checked again at every packet: the MR may have gone since.
    // The bytes in place where the port already holds them, else copied.
    const uint8_t* view = nullptr;
    if (n > 0 && qp_.env.mem->read_reply_view(r.rkey, r.va, n, r.resid, r.serve, view) != MemStatus::Ok)
        return RespState::ErrRkeyViolation;
    if (!view) {
        buf_.resize(n);
        if (n > 0 && qp_.env.mem->read_reply(r.rkey, r.va, buf_.data(), n, r.resid, r.serve) != MemStatus::Ok)
            return RespState::ErrRkeyViolation;
    }
    send_ack(opcode, kAckSyndrome, r.cur_psn, 0, view ? view : buf_.data(), n);
    r.va += n;
    r.resid -= n;
    r.cur_psn = psn_add(r.cur_psn, 1);
    if (r.resid > 0) return RespState::ReadReply;  // one packet per step
    if (!r.replay) opcode_ = -1;
    if (psn_diff(r.cur_psn, psn_) >= 0) psn_ = r.cur_psn;
    return RespState::Cleanup;
}

RespState Responder::atomic_reply(Pass& p) {
    if (!p.res) {
        const auto& a = p.pkt->hdr.atomic;
        if (a.va & 7) return RespState::ErrMisalignedAtomic;
        const bool cas = p.pkt->hdr.bth.opcode == op::RC_COMPARE_SWAP;
        uint64_t orig = 0;
        if (qp_.env.mem->atomic(a.rkey, a.va, cas ? AtomicOp::CompareSwap : AtomicOp::FetchAdd,
                                a.swap_add, a.compare, orig) != MemStatus::Ok)
            return RespState::ErrRkeyViolation;
        RespResource& r = prepare_resource(RespResource::Type::Atomic, p.pkt->hdr.bth.psn, 1);
        r.orig = orig;
        p.res = &r;
        msn_ = psn_add(msn_, 1);
        psn_ = psn_add(p.pkt->hdr.bth.psn, 1);
        ack_psn_ = psn_;
        opcode_ = p.pkt->hdr.bth.opcode;
    }
    return RespState::Acknowledge;
}

// The memory placement extensions' requests: executed once, remembered in a
// responder resource, and answered (here or from duplicate_request) by
// acknowledge().
RespState Responder::atomic_write_reply(Pass& p) {
    if (!p.res) {
        // IBA A19.4.2: the 8 bytes land at an 8-byte aligned address, all
        // at once. The write is one 8-byte access of the engine, atomic
        // against the device's other atomics as CMP_SWAP and FETCH_ADD are.
        if (va_ & 7) return RespState::ErrMisalignedAtomic;
        if (qp_.env.mem->write(KeyKind::Rkey, rkey_, va_, p.pkt->payload, 8,
                               hw::access::kRemoteWrite) != MemStatus::Ok)
            return RespState::ErrRkeyViolation;
        p.res = &prepare_resource(RespResource::Type::AtomicWrite, p.pkt->hdr.bth.psn, 1);
        msn_ = psn_add(msn_, 1);
        psn_ = psn_add(p.pkt->hdr.bth.psn, 1);
        ack_psn_ = psn_;
        opcode_ = p.pkt->hdr.bth.opcode;
    }
    return RespState::Acknowledge;
}

RespState Responder::process_flush(Pass& p) {
    if (!p.res) {
        // Every earlier request of the QP was executed before this one, and
        // the engine's writes reach host memory before it answers: the
        // range is globally visible already. No simnic memory is persistent
        // and REG_MR refuses FLUSH_PERSISTENT, but REREG_MR grants it as rxe
        // does (hw-spec 5.6.11); such a flush is then answered as rxe answers
        // one over memory that is not pmem, with nothing more to do.
        p.res = &prepare_resource(RespResource::Type::Flush, p.pkt->hdr.bth.psn, 1);
        msn_ = psn_add(msn_, 1);
        psn_ = psn_add(p.pkt->hdr.bth.psn, 1);
        ack_psn_ = psn_;
        opcode_ = p.pkt->hdr.bth.opcode;
    }
    return RespState::Acknowledge;
}

RespState Responder::complete(Pass& p) {
    const roce::Packet& pkt = *p.pkt;
    if (qp_.recv) {
        Completion c;
        c.wr_id = qp_.recv->wqe.wr_id;
        c.qp_num = qp_.cfg.qpn;
        const bool write_imm = (p.mask & roce::kWrite) && (p.mask & roce::kHasImmDt);
        c.opcode = write_imm ? hw::WcOpcode::RecvRdmaWithImm : hw::WcOpcode::Recv;
        c.byte_len = write_imm ? length_ : qp_.recv->placed;
        // rxe marks every user-space receive completion with GRH.
        c.wc_flags = hw::wc_flags::kGrh;
        if (p.mask & roce::kHasImmDt) {
            c.wc_flags |= hw::wc_flags::kWithImm;
            c.imm_data = pkt.hdr.imm;
        }
        if (p.mask & roce::kHasIeth) {
            c.wc_flags |= hw::wc_flags::kWithInv;
            c.imm_data = pkt.hdr.ieth_rkey;
        }
        if (p.mask & roce::kHasDeth) c.src_qp = pkt.hdr.deth.src_qp;
        qp_.recv.reset();
        qp_.env.cq->post(CqSide::Recv, c, pkt.hdr.bth.se);
    }
    return qp_.is_rc() ? RespState::Acknowledge : RespState::Cleanup;
}

RespState Responder::acknowledge(Pass& p) {
    if (!qp_.is_rc()) return RespState::Cleanup;
    if (p.mask & roce::kAtomic)
        send_ack(op::RC_ATOMIC_ACKNOWLEDGE, kAckSyndrome, p.pkt->hdr.bth.psn, p.res->orig);
    else if (p.mask & (roce::kAtomicWrite | roce::kFlush))
        // rxe's send_read_response_ack: an RDMA READ RESPONSE ONLY without
        // payload, whether or not the request asked for an ACK.
        send_ack(op::RC_RDMA_READ_RESPONSE_ONLY, kAckSyndrome, p.pkt->hdr.bth.psn);
    else if (p.pkt->hdr.bth.ack_req)
        send_ack(op::RC_ACKNOWLEDGE, kAckSyndrome, p.pkt->hdr.bth.psn);
    return RespState::Cleanup;
}

RespState Responder::duplicate_request(Pass& p) {
    const auto& h = p.pkt->hdr;
    if (p.mask & (roce::kSend | roce::kWrite)) {
        // Already executed: acknowledge again, up to the last PSN acknowledged
        // (IBA C9-105), whether or not the duplicate asks for an ACK.
        send_ack(op::RC_ACKNOWLEDGE, kAckSyndrome, psn_add(ack_psn_, roce::kPsnMask));
        return RespState::Cleanup;
    }
    RespResource* r = find_resource(h.bth.psn);
    if (!r) return RespState::Cleanup;  // too old to answer: class D, dropped
    if (p.mask & roce::kRead) {
        // Re-execute from the duplicate's RETH, which must lie within the
        // original request (it may start later when resent mid-message).
        const uint64_t va = h.reth.va;
        const uint32_t len = h.reth.dma_len;
        if (r->type != RespResource::Type::Read || va < r->va_org || len > r->length ||
            va + len > r->va_org + r->length || h.reth.rkey != r->rkey)
            return RespState::Cleanup;
        r->cur_psn = h.bth.psn;
        r->started = h.bth.psn != r->first_psn;
        r->replay = true;
        r->va_org = r->va = va;
        r->resid = len;
        r->serve = ++serves_;  // served afresh: nothing fetched for the first serving is reused
        p.res = r;
        return RespState::ReadReply;
    }
    if (p.mask & (roce::kAtomicWrite | roce::kFlush)) {
        // Answered again, not executed again (oA19-14, oA19-15).
        const auto want = (p.mask & roce::kFlush) ? RespResource::Type::Flush
                                                  : RespResource::Type::AtomicWrite;
        if (r->type != want) return RespState::Cleanup;
        r->replay = true;
        r->cur_psn = h.bth.psn;
        p.res = r;
        return RespState::Acknowledge;
    }
    if (r->type != RespResource::Type::Atomic) return RespState::Cleanup;
    r->replay = true;
    r->cur_psn = h.bth.psn;
    p.res = r;
    return RespState::AtomicReply;  // answers with the saved value
}

RespState Responder::class_ac_error(Pass& p, roce::NakCode code, hw::WcStatus status,
                                    hw::EventType ev) {
    // Class A and C: complete the receive WQE in use with the error, NAK the
    // packet, and take the QP to ERR (rxe treats A and C alike).
    if (qp_.recv) {
        Completion c;
        c.wr_id = qp_.recv->wqe.wr_id;
        c.status = status;
        c.opcode = hw::WcOpcode::Recv;
        c.qp_num = qp_.cfg.qpn;
        qp_.recv.reset();
        qp_.env.cq->post(CqSide::Recv, c, false);
    }
    send_ack(op::RC_ACKNOWLEDGE,
             roce::make_syndrome(roce::AethType::Nak, static_cast<uint8_t>(code)),
             p.pkt->hdr.bth.psn);
    qp_.env.events->async_event(ev);
    return RespState::Error;
}

RespState Responder::error_state(RespState s, Pass& p) {
    const bool rc = qp_.is_rc();
    using roce::NakCode;
    switch (s) {
        case RespState::ErrPsnOutOfSeq:
            // Class B: NAK with the PSN we expect; the requester resends from it.
            send_ack(op::RC_ACKNOWLEDGE,
                     roce::make_syndrome(roce::AethType::Nak,
                                         static_cast<uint8_t>(NakCode::PsnSequenceError)),
                     psn_);
            return RespState::Cleanup;
        case RespState::ErrRnr:
            // Class B: no receive WQE. RC answers with an RNR NAK carrying our
            // minimum RNR timer and drops the packet; UC and UD just drop it.
            if (rc)
                send_ack(op::RC_ACKNOWLEDGE,
                         roce::make_syndrome(roce::AethType::RnrNak, qp_.cfg.min_rnr_timer),
                         p.pkt->hdr.bth.psn);
            else if (qp_.cfg.type == hw::QpType::Uc)
                uc_ = UcMessage::Dropping;
            return RespState::Cleanup;
        case RespState::ErrMissingOpcodeLastD1E:
            // UC, class D1: the previous message lost its end. Forget it; a
            // packet that starts a message is then taken as the new one
            // (rxe drops this packet too and so loses the next message).
            abandon_partial_message();
            if (p.mask & roce::kFirst) return RespState::ChkOpValid;
            uc_ = UcMessage::Dropping;
            return RespState::Cleanup;
        case RespState::ErrMissingOpcodeFirst:
        case RespState::ErrMissingOpcodeLastC:
        case RespState::ErrUnsupportedOpcode:
        case RespState::ErrMisalignedAtomic:
        case RespState::ErrTooManyRdmaAtmReq:
        case RespState::ErrInvalidateRkey:
            if (!rc) break;
            return class_ac_error(p, NakCode::InvalidRequest, hw::WcStatus::RemInvReqErr,
                                  hw::EventType::QpReqErr);
        case RespState::ErrLength:
            // The requester sees an invalid request; our receive WQE, if the
            // message overflowed it, a local length error (IBA 9.7.5.2.2).
            // Deliberately not rxe: kernel rxe (6.1 and 6.12) NAKs an
            // overflowing SEND with a remote operational error and completes
            // the receive with LOC_QP_OP_ERR, its copy_data() never giving
            // the -ENOSPC that would select its length path
            // (docs/rxe-wire-rules.md#verbs-answers, coverify recv_too_small).
            if (!rc) break;
            return class_ac_error(p, NakCode::InvalidRequest, hw::WcStatus::LocLenErr,
                                  hw::EventType::QpReqErr);
        case RespState::ErrRkeyViolation:
            if (!rc) break;
            return class_ac_error(p, NakCode::RemoteAccessError, hw::WcStatus::RemAccessErr,
                                  hw::EventType::QpAccessErr);
        case RespState::ErrMalformedWqe:
            if (!rc) break;
            return class_ac_error(p, NakCode::RemoteOperationalError, hw::WcStatus::LocQpOpErr,
                                  hw::EventType::QpFatal);
        default: break;
    }
    // UC and UD: errors drop the message silently (class D1/E); the receive
    // WQE is rewound for the next message.
    abandon_partial_message();
    if (qp_.cfg.type == hw::QpType::Uc) uc_ = UcMessage::Dropping;
    return RespState::Cleanup;
}

void Responder::send_ack(uint8_t opcode, uint8_t syndrome, uint32_t psn, uint64_t orig,
                         const uint8_t* payload, size_t len) {
    roce::Packet a;
    qp_.init_packet(a, qp_.cfg.av, qp_.cfg.dest_qpn);
    a.hdr.bth.opcode = opcode;
    a.hdr.bth.psn = psn & roce::kPsnMask;
    a.hdr.aeth.syndrome = syndrome;
    a.hdr.aeth.msn = msn_;
    a.hdr.atomic_ack.orig = orig;
    a.payload = payload;
    a.payload_len = len;
    qp_.env.wire->transmit(a);
}

const char* to_string(RespState s) {
    switch (s) {
        case RespState::GetReq: return "GET_REQ";
        case RespState::ChkPsn: return "CHK_PSN";
        case RespState::ChkOpSeq: return "CHK_OP_SEQ";
        case RespState::ChkOpValid: return "CHK_OP_VALID";
        case RespState::ChkResource: return "CHK_RESOURCE";
        case RespState::ChkLength: return "CHK_LENGTH";
        case RespState::ChkRkey: return "CHK_RKEY";
        case RespState::Execute: return "EXECUTE";
        case RespState::ReadReply: return "READ_REPLY";
        case RespState::AtomicReply: return "ATOMIC_REPLY";
        case RespState::AtomicWriteReply: return "ATOMIC_WRITE_REPLY";
        case RespState::ProcessFlush: return "PROCESS_FLUSH";
        case RespState::Complete: return "COMPLETE";
        case RespState::Acknowledge: return "ACKNOWLEDGE";
        case RespState::Cleanup: return "CLEANUP";
        case RespState::DuplicateRequest: return "DUPLICATE_REQUEST";
        case RespState::ErrMalformedWqe: return "ERR_MALFORMED_WQE";
        case RespState::ErrUnsupportedOpcode: return "ERR_UNSUPPORTED_OPCODE";
        case RespState::ErrMisalignedAtomic: return "ERR_MISALIGNED_ATOMIC";
        case RespState::ErrPsnOutOfSeq: return "ERR_PSN_OUT_OF_SEQ";
        case RespState::ErrMissingOpcodeFirst: return "ERR_MISSING_OPCODE_FIRST";
        case RespState::ErrMissingOpcodeLastC: return "ERR_MISSING_OPCODE_LAST_C";
        case RespState::ErrMissingOpcodeLastD1E: return "ERR_MISSING_OPCODE_LAST_D1E";
        case RespState::ErrTooManyRdmaAtmReq: return "ERR_TOO_MANY_RDMA_ATM_REQ";
        case RespState::ErrRnr: return "ERR_RNR";
        case RespState::ErrRkeyViolation: return "ERR_RKEY_VIOLATION";
        case RespState::ErrInvalidateRkey: return "ERR_INVALIDATE_RKEY";
        case RespState::ErrLength: return "ERR_LENGTH";
        case RespState::Error: return "ERROR";
        case RespState::Done: return "DONE";
    }
    return "?";
}

const char* iba_error_class(RespState s) {
    switch (s) {
        case RespState::ErrPsnOutOfSeq:
        case RespState::ErrRnr: return "B";
        case RespState::ErrMissingOpcodeFirst:
        case RespState::ErrMissingOpcodeLastC:
        case RespState::ErrUnsupportedOpcode:
        case RespState::ErrMisalignedAtomic:
        case RespState::ErrTooManyRdmaAtmReq:
        case RespState::ErrRkeyViolation:
        case RespState::ErrInvalidateRkey:
        case RespState::ErrLength: return "C";
        case RespState::ErrMalformedWqe: return "A";
        case RespState::ErrMissingOpcodeLastD1E: return "D1E";
        default: return "";
    }
}

}  // namespace simnic::transport
