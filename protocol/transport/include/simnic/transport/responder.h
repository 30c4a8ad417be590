// The responder (rxe_resp.c): receives request packets, executes them and
// answers with ACKs, NAKs and READ/atomic responses.
//
// An explicit state machine: RespState lists every step, each step is one
// function returning the next, and process() drives them for one packet. The
// error states name their IBA error class (iba_error_class()). Everything the
// responder remembers between packets is in its members below; nothing about
// control flow is kept in flags.
#pragma once

#include <cstdint>
#include <vector>

#include "simnic/roce/packet.h"
#include "simnic/transport/qp_context.h"

namespace simnic::transport {

enum class RespState : uint8_t {
    GetReq,
    ChkPsn,
    ChkOpSeq,
    ChkOpValid,
    ChkResource,
    ChkLength,
    ChkRkey,
    Execute,
    ReadReply,
    AtomicReply,
    AtomicWriteReply,
    ProcessFlush,
    Complete,
    Acknowledge,
    Cleanup,
    DuplicateRequest,
    ErrMalformedWqe,
    ErrUnsupportedOpcode,
    ErrMisalignedAtomic,
    ErrPsnOutOfSeq,
    ErrMissingOpcodeFirst,
    ErrMissingOpcodeLastC,
    ErrMissingOpcodeLastD1E,
    ErrTooManyRdmaAtmReq,
    ErrRnr,
    ErrRkeyViolation,
    ErrInvalidateRkey,
    ErrLength,
    Error,
    Done,
};

const char* to_string(RespState s);
// "A".."E" and "D1E" as IBA 9.9.3 classifies responder errors; "" otherwise.
const char* iba_error_class(RespState s);

// A READ or atomic the responder has executed, kept so that a duplicate can
// be answered again (IBA 9.7.5.1.3): READs are re-executed from their RETH,
// atomics replay the original value instead of being applied twice.
// ATOMIC_WRITE and FLUSH keep one too (rxe_prepare_res): a duplicate is
// answered again without being executed again.
struct RespResource {
    enum class Type : uint8_t { None, Read, Atomic, AtomicWrite, Flush } type = Type::None;
    uint32_t first_psn = 0;
    uint32_t last_psn = 0;
    uint32_t cur_psn = 0;
    bool replay = false;
    bool started = false;  // READ: the FIRST (or ONLY) response has been sent
    // READ
    uint64_t va_org = 0;
    uint64_t va = 0;
    uint32_t rkey = 0;
    uint32_t length = 0;
    uint32_t resid = 0;
    uint64_t serve = 0;  // READ: this serving's number (MemoryPort::read_reply)
    // atomic
    uint64_t orig = 0;
};

class Responder {
public:
    explicit Responder(QpContext& qp);

    // Run the state machine on one request packet of this QP, as
    // decode_frame produced it (a UD receive copies its IP header from the
    // frame the packet was decoded from).
    void process(const roce::Packet& pkt);

    // The payload bytes process() would write to host memory for this
    // packet, found by the same checks (QP state, PSN, opcode sequence, the
    // QP's access, the MTU, the RETH's rkey and range or the receive WQE's
    // SGEs) but without executing anything: no state changes, no memory
    // written. 0: it would not place any (a duplicate, out of sequence, a
    // bad key, no receive WQE, not a SEND or WRITE). A NIC that writes a
    // payload as it streams in, before the ICRC verdict, places this much
    // of a packet that then turns out bad, and only inside memory these
    // checks validated. RC and UC only; a UD receive waits for the verdict.
    uint32_t placement(const roce::Packet& pkt) const;

    uint32_t expected_psn() const { return psn_; }
    uint32_t msn() const { return msn_; }

private:
    struct Pass;  // the packet being processed and what it found so far

    RespState step(RespState s, Pass& p);
    RespState get_req(Pass& p);
    RespState chk_psn(Pass& p);
    RespState chk_op_seq(Pass& p);
    RespState chk_op_valid(Pass& p);
    RespState chk_resource(Pass& p);
    RespState chk_length(Pass& p);
    RespState chk_rkey(Pass& p);
    RespState execute(Pass& p);
    RespState read_reply(Pass& p);
    RespState atomic_reply(Pass& p);
    RespState atomic_write_reply(Pass& p);
    RespState process_flush(Pass& p);
    RespState complete(Pass& p);
    RespState acknowledge(Pass& p);
    RespState duplicate_request(Pass& p);
    RespState error_state(RespState s, Pass& p);

    enum class Place : uint8_t { Ok, Overflow, Fault };
    Place place_in_recv(const uint8_t* data, size_t len);
    void abandon_partial_message();
    RespState class_ac_error(Pass& p, roce::NakCode code, hw::WcStatus status, hw::EventType ev);
    void send_ack(uint8_t opcode, uint8_t syndrome, uint32_t psn, uint64_t orig = 0,
                  const uint8_t* payload = nullptr, size_t len = 0);
    RespResource& prepare_resource(RespResource::Type t, uint32_t psn, uint32_t npkts);
    RespResource* find_resource(uint32_t psn);

    QpContext& qp_;
    // PSN state (IBA 9.7.2): the next expected PSN, the PSN after the last
    // message acknowledged, and the message sequence number.
    uint32_t psn_ = 0;
    uint32_t ack_psn_ = 0;
    uint32_t msn_ = 0;
    // Opcode of the last packet accepted, -1 after a READ or at start: what
    // the next packet's opcode is checked against.
    int opcode_ = -1;
    // RC: a PSN sequence error NAK has been sent and the requester has not
    // resynchronised yet; only one NAK is sent per error (IBA 9.7.5.1.2).
    enum class Sequence : uint8_t { InSequence, NakSent } sequence_ = Sequence::InSequence;
    // UC: a packet of the current message was lost; drop until a FIRST/ONLY.
    enum class UcMessage : uint8_t { Receiving, Dropping } uc_ = UcMessage::Receiving;
    // RDMA WRITE in progress (from its RETH).
    uint64_t va_ = 0;
    uint32_t rkey_ = 0;
    uint32_t resid_ = 0;
    uint32_t length_ = 0;
    // Responder resources, max_dest_rd_atomic of them, reused round robin.
    std::vector<RespResource> res_;
    uint64_t serves_ = 0;  // READs served or replayed so far (RespResource::serve)
    size_t res_head_ = 0;
    std::vector<uint8_t> buf_;
};

}  // namespace simnic::transport
