// State one QP's requester, completer and responder share, as rxe keeps it in
// struct rxe_qp: the send queue with per-WQE PSN bookkeeping, the requester's
// and completer's PSN cursors, and the QP state. The three units read and
// write it; nothing else does.
#pragma once

#include <cstdint>
#include <optional>

#include "simnic/base/ring.h"
#include "simnic/congestion/dcqcn.h"
#include "simnic/roce/packet.h"
#include "simnic/transport/env.h"
#include "simnic/transport/qp_config.h"
#include "simnic/transport/wqe.h"

namespace simnic::transport {

// rxe: at most this many PSNs may be sent beyond the oldest unacknowledged.
inline constexpr uint32_t kMaxUnackedPsns = 128;
// rxe: a long message asks for an ACK at least this often.
inline constexpr uint32_t kMaxPktsPerAck = 64;

// Life of a send WQE (rxe's wqe_state).
enum class WqeState : uint8_t {
    Posted,      // not started
    Processing,  // some packets sent
    Pending,     // all packets sent, awaiting the response (RC)
    Done,        // finished without error, completion not yet generated
    Error,       // finished with `status`, completion not yet generated
};

struct SqEntry {
    SendWqe wr;
    WqeState state = WqeState::Posted;
    hw::WcStatus status = hw::WcStatus::Success;
    uint32_t first_psn = 0;
    uint32_t last_psn = 0;
    uint32_t npkts = 1;               // packets of the message (READ: of its response)
    bool holds_rd_atomic = false;     // owns one of max_rd_atomic's credits
};

// Send WQEs addressed by a free-running sequence number; the oldest not yet
// completed is at head_seq. A ring, not a std::deque: an SqEntry is larger
// than a deque block, so a deque took and freed a block per WQE. Pointers
// from at() and head() last until the next push; no caller keeps one longer.
class SendQueue {
public:
    uint64_t head_seq() const { return head_seq_; }
    uint64_t tail_seq() const { return head_seq_ + q_.size(); }
    size_t size() const { return q_.size(); }
    bool empty() const { return q_.empty(); }
    SqEntry* at(uint64_t seq) {
        return seq >= head_seq_ && seq < tail_seq() ? &q_[size_t(seq - head_seq_)] : nullptr;
    }
    SqEntry* head() { return q_.empty() ? nullptr : &q_.front(); }
    void push(SqEntry&& e) { q_.push_back(std::move(e)); }
    void pop() {
        q_.drop_front();
        ++head_seq_;
    }

private:
    base::Ring<SqEntry> q_;
    uint64_t head_seq_ = 0;
};

// Why the requester is not simply sending the next packet.
enum class ReqRetry : uint8_t {
    None,      // go on with new packets
    Now,       // go back to the completer's PSN before sending anything
    RnrWait,   // an RNR NAK came: send nothing until the RNR timer expires
};

struct RequesterState {
    uint64_t next_seq = 0;   // SQ entry being sent
    uint32_t next_pkt = 0;   // packet index inside it
    uint32_t psn = 0;        // next PSN to send
    uint32_t rd_atomic_credits = 0;
    uint32_t noack_pkts = 0;
    ReqRetry retry = ReqRetry::None;
    // One past the newest SQ entry ever started (given its PSNs). In SQD the
    // requester sends (and resends) only entries before it, and the drain is
    // over once every one of them has completed.
    uint64_t started_end = 0;
};

struct CompleterState {
    uint32_t psn = 0;      // oldest PSN not yet acknowledged
    int opcode = -1;       // last READ response opcode of an unfinished READ, or -1
    uint8_t retry_cnt = 0; // left for this WQE
    uint8_t rnr_retry = 0;
    // A retry sequence has begun: until a response moves the QP forward
    // (reset_retry_counters), only the retransmit timer may begin another,
    // not every NAK, duplicate or response past a lost READ answer that
    // follows (rxe_comp.c: comp.started_retry).
    bool started_retry = false;
};

// A receive WQE the responder took from the RQ/SRQ, and where the message
// being received has got to in it.
struct RecvCursor {
    RecvWqe wqe;
    uint32_t sge_index = 0;
    uint32_t sge_offset = 0;
    uint32_t placed = 0;  // bytes written so far
};

class QpContext {
public:
    QpContext(const QpConfig& cfg, const TransportEnv& env);

    QpConfig cfg;
    TransportEnv env;
    hw::QpState state = hw::QpState::Reset;
    SendQueue sq;
    RequesterState req;
    CompleterState comp;
    std::optional<RecvCursor> recv;  // the responder's current receive WQE
    // RTS->SQD drain in progress (hw-spec 5.7, QPC.sq_draining).
    bool sq_draining = false;
    // DCQCN's reaction point, when cfg.dcqcn is set: the requester's rate
    // limiter, lowered by CNPs for the QP.
    std::optional<congestion::DcqcnRp> rp;

    uint32_t mtu() const { return roce::ib_mtu_bytes(cfg.path_mtu); }
    bool is_rc() const { return cfg.type == hw::QpType::Rc; }

    // Ethernet, IP, UDP and the BTH fields common to every packet of this QP
    // (P_Key, destination QPN); the caller sets opcode, PSN and the rest.
    void init_packet(roce::Packet& p, const AddressVector& av, uint32_t dqpn) const;

    void count(Counter c) const {
        if (env.counters) env.counters->count(c);
    }
    void trace(Unit u, const char* state_name) const {
        if (env.trace) env.trace->state(u, state_name);
    }
    // The send completion of `e`: posted when signaled or on error.
    void complete_send(const SqEntry& e, hw::WcStatus status);
    void reset_retry_counters() {
        comp.retry_cnt = cfg.retry_cnt;
        comp.rnr_retry = cfg.rnr_retry;
        comp.started_retry = false;
    }
    void arm_retransmit_timer();
    // Move the QP to ERR and flush both queues (IBV_WC_WR_FLUSH_ERR), as
    // rxe_qp_error and the flush paths of rxe_comp/rxe_resp do. A QP on an
    // SRQ then raises QP_LAST_WQE_REACHED, once per entry into ERR.
    void enter_error();
    // RTS->SQD: start draining the send queue.
    void begin_sq_drain();
    // Ends the drain once every WQE started before it has completed, raising
    // SQ_DRAINED if en_sqd_async_notify. Call after each step of the QP.
    void check_sq_drained();

private:
    uint16_t sport_ = 0;
};

}  // namespace simnic::transport
