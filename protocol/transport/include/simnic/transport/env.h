// What the engine supplies to the transport core.
//
// The core holds the protocol (PSNs, ACKs, retries, state machines) and
// nothing else: memory, receive queues, completion queues, the wire and time
// belong to the engine. The soft engine implements these ports over process
// memory, its rings and a UDP socket; the cycle model implements them as
// SystemC channels. Each port is narrow so that a pipeline stage can be given
// only what it uses.
#pragma once

#include <cstddef>
#include <cstdint>

#include "simnic/congestion/dcqcn.h"
#include "simnic/congestion/notification_point.h"
#include "simnic/hw/verbs.h"
#include "simnic/roce/packet.h"
#include "simnic/transport/segmentation.h"
#include "simnic/transport/wqe.h"

namespace simnic::transport {

// ---- Memory: every access goes through the engine's MR table ----

enum class MemStatus : uint8_t {
    Ok = 0,
    BadKey,        // no valid MR (or MW) with this key
    OutOfBounds,   // [addr, addr + len) is not inside the region
    NoPermission,  // the region does not grant the access asked for
};

enum class KeyKind : uint8_t { Lkey, Rkey };

enum class AtomicOp : uint8_t { CompareSwap, FetchAdd };

class MemoryPort {
public:
    virtual ~MemoryPort() = default;
    // Each call checks the key, then `access` (a mask of hw::access; 0 asks
    // for local read, which every valid lkey grants), then the bounds, in
    // that order (rxe's lookup_mr, then mr_check_range), before it touches
    // anything, and touches nothing when it refuses. The order matters:
    // check_whole_mr's default takes OutOfBounds as a pass, so it must mean
    // the key and the rights were good.
    virtual MemStatus check(KeyKind kind, uint32_t key, uint64_t addr, uint64_t len,
                            uint32_t access) = 0;
    // A FLUSH of the whole MR (rxe's check_rkey skips mr_check_range for
    // it): the key and the rights, no range, and no refusal counted for a
    // range that is not asked for. `addr` is the RETH's, which means nothing
    // for an MR. A port that counts refusals overrides this.
    virtual MemStatus check_whole_mr(KeyKind kind, uint32_t key, uint64_t addr, uint32_t access) {
        const MemStatus st = check(kind, key, addr, 0, access);
        return st == MemStatus::OutOfBounds ? MemStatus::Ok : st;
    }
    virtual MemStatus read(KeyKind kind, uint32_t key, uint64_t addr, void* dst, size_t len,
                           uint32_t access) = 0;
    virtual MemStatus write(KeyKind kind, uint32_t key, uint64_t addr, const void* src,
                            size_t len, uint32_t access) = 0;
    // A requester's gather of one packet's bytes from an SGE of the WQE it is
    // sending: `sge_left` bytes of that SGE remain from `addr` on (len of
    // them wanted now). Only those belong to the WQE: the application may
    // rewrite the bytes past them (another WQE's buffer, not yet posted) at
    // any time, so a port that fetches ahead fetches no further than that.
    // `wqe_seq` names the WQE in its send queue (SqQueue's free-running
    // sequence): what was fetched ahead serves that WQE only, since once an
    // earlier one completes the application may refill the same buffer for
    // a later one.
    virtual MemStatus gather(uint32_t lkey, uint64_t addr, void* dst, size_t len, uint64_t sge_left,
                             uint64_t wqe_seq) {
        (void)sge_left;
        (void)wqe_seq;
        return read(KeyKind::Lkey, lkey, addr, dst, len, 0);
    }
    // A responder's read of one READ response packet's bytes: `left` bytes
    // of the READ remain from `addr` on (len of them wanted now), under an
    // rkey with REMOTE_READ. A NIC fetches a READ's data by DMA at its own
    // pace, ahead of the packets that carry it, and IBA leaves undefined what
    // a READ returns of bytes the responder's host changes while it is
    // served; so a port may fetch up to `left` bytes at once. `serve` names
    // this serving of the READ (the responder's count, new for every READ
    // and for every duplicate that replays one): what was fetched ahead
    // serves that one only, and a replay reads afresh.
    virtual MemStatus read_reply(uint32_t rkey, uint64_t addr, void* dst, size_t len, uint64_t left,
                                 uint64_t serve) {
        (void)left;
        (void)serve;
        return read(KeyKind::Rkey, rkey, addr, dst, len, hw::access::kRemoteRead);
    }
    // gather() and read_reply() without a copy, for a port that may already
    // hold the bytes (fetched ahead for this very WQE or READ serving). It
    // makes the same checks: a refusal is returned as gather() or
    // read_reply() would return it, with `view` null. Ok with `view` set:
    // the `len` bytes are there, valid until the port is next called. Ok
    // with `view` null: the port did nothing, and the caller calls gather()
    // or read_reply(). The default holds nothing.
    virtual MemStatus gather_view(uint32_t lkey, uint64_t addr, size_t len, uint64_t sge_left,
                                  uint64_t wqe_seq, const uint8_t*& view) {
        (void)lkey, (void)addr, (void)len, (void)sge_left, (void)wqe_seq;
        view = nullptr;
        return MemStatus::Ok;
    }
    virtual MemStatus read_reply_view(uint32_t rkey, uint64_t addr, size_t len, uint64_t left,
                                      uint64_t serve, const uint8_t*& view) {
        (void)rkey, (void)addr, (void)len, (void)left, (void)serve;
        view = nullptr;
        return MemStatus::Ok;
    }
    // A 64-bit atomic on [addr, addr + 8) under an rkey with REMOTE_ATOMIC. The
    // engine makes it atomic against every other atomic of the device. The
    // core has already checked 8-byte alignment.
    virtual MemStatus atomic(uint32_t rkey, uint64_t addr, AtomicOp op, uint64_t swap_add,
                             uint64_t compare, uint64_t& orig) = 0;
    // SEND_WITH_INV (responder) and LOCAL_INV (requester): invalidate the
    // MR or MW named by rkey, for this port's QP (hw-spec 6.5).
    virtual MemStatus invalidate(uint32_t rkey) = 0;
    // BIND_MW (requester): bind, rebind or unbind a window for this port's QP
    // with the checks of mw.h (hw-spec 6.5). Refuses without changing anything.
    virtual MemStatus bind_mw(const MwBind& b) = 0;
};

// ---- Receive queue (the QP's RQ, or its SRQ) ----

class RecvQueuePort {
public:
    virtual ~RecvQueuePort() = default;
    // The next receive WQE, without consuming it; nullptr when empty (the
    // responder then answers with an RNR NAK).
    virtual const RecvWqe* peek() = 0;
    // Consume the WQE peek() returned.
    virtual void pop() = 0;
};

// ---- Completions ----

enum class CqSide : uint8_t { Send, Recv };

// ibv_wc's fields the transport knows.
struct Completion {
    uint64_t wr_id = 0;
    hw::WcStatus status = hw::WcStatus::Success;
    hw::WcOpcode opcode = hw::WcOpcode::Send;
    uint32_t vendor_err = 0;
    uint32_t byte_len = 0;
    uint32_t imm_data = 0;  // host order; valid with wc_flags::kWithImm (or kWithInv: the rkey)
    uint32_t qp_num = 0;
    uint32_t src_qp = 0;
    uint32_t wc_flags = 0;  // hw::wc_flags
};

class CompletionPort {
public:
    virtual ~CompletionPort() = default;
    // `solicited`: a receive completion for a packet with SE set (for
    // ibv_req_notify_cq(solicited_only)).
    virtual void post(CqSide side, const Completion& c, bool solicited) = 0;
};

// ---- Wire ----

class WirePort {
public:
    virtual ~WirePort() = default;
    // A packet to send, all headers filled (Ethernet, IP, UDP, BTH and the
    // extension headers); pkt.payload is valid only during the call. The
    // engine may set fields the core does not own (IPv4 ID) and encodes it
    // with roce::encode_frame, which fills lengths, pad and ICRC.
    virtual void transmit(roce::Packet& pkt) = 0;
    // A request packet, with the segmentation step that made it: `wqe` the
    // WQE with start_pkt this packet, count 1 and the QP's noack before it,
    // `seg` what segmentation gave (segmentation.h). A cycle model keeps
    // them to check its segmentation stage's RTL; by default it is
    // transmit().
    virtual void transmit_request(roce::Packet& pkt, const SegWqe& wqe, const SegPacket& seg) {
        (void)wqe, (void)seg;
        transmit(pkt);
    }
    // Whether the port takes the requester's next packet now. A port whose
    // own receive path has fallen far behind what the device sent says no
    // (the soft engine's UDP port to the device itself on lo, where the
    // kernel drops what the receiving socket cannot hold): the requester
    // then stops before the packet, as at the RC window, and the engine
    // calls Qp::resume() once the port has drained. UC and UD have neither
    // a window nor retransmission, so without this a deep queue of large
    // UC SENDs from a device to itself lost messages for good.
    virtual bool can_transmit() { return true; }
};

// ---- Time ----

// RateLimit: DCQCN's rate limiter holds the requester's next packet until
// then (Requester::run); its expiry lets the requester go on.
enum class QpTimer : uint8_t { Retransmit, Rnr, RateLimit };
inline constexpr int kNumQpTimers = 3;

class TimerPort {
public:
    virtual ~TimerPort() = default;
    virtual uint64_t now_ns() = 0;  // monotonic
    // Arm (or re-arm) a timer of this QP; when it expires the engine calls
    // Qp::on_timer with it. Cancelling an idle timer is harmless.
    virtual void arm(QpTimer t, uint64_t deadline_ns) = 0;
    virtual void cancel(QpTimer t) = 0;
};

// ---- Asynchronous events ----

class EventPort {
public:
    virtual ~EventPort() = default;
    virtual void async_event(hw::EventType ev) = 0;
};

// ---- Optional state trace (names of state-machine steps) ----

enum class Unit : uint8_t { Requester, Responder, Completer };

class TracePort {
public:
    virtual ~TracePort() = default;
    virtual void state(Unit u, const char* name) = 0;
};

// ---- Optional counters of what the transport saw (the device's stats) ----

enum class Counter : uint8_t {
    DuplicateRequest,  // a request with a PSN already executed (rxe: RXE_CNT_DUP_REQ)
    OutOfSeqRequest,   // a gap in request PSNs, NAK'd (rxe: RXE_CNT_OUT_OF_SEQ_REQ)
    // Congestion control (docs/model.md, "Congestion control"):
    CePacket,          // a packet for this QP arrived CE-marked (with a notification point)
    CnpSent,           // the notification point answered a CE mark with a CNP
    CnpSuppressed,     // a CE mark asked for no CNP: one went to its QP less than N ago
    CnpReceived,       // a CNP for this QP arrived (acted on only with a reaction point)
    RateLimited,       // the rate limiter held a request packet back (armed RateLimit)
};

class CounterPort {
public:
    virtual ~CounterPort() = default;
    virtual void count(Counter c) = 0;
};

// The ports of one QP. All but `trace`, `counters`, `np` and `rp_observer`
// must be set.
//
// `np`: the device's DCQCN notification point (one per device, shared by its
// QPs). Set, a CE-marked packet for the QP may make it send a CNP to the QP
// that sent the packet (Qp::on_packet); null, CE marks are ignored. The
// reaction point is per QP: QpConfig::dcqcn.
struct TransportEnv {
    MemoryPort* mem = nullptr;
    RecvQueuePort* rq = nullptr;
    CompletionPort* cq = nullptr;
    WirePort* wire = nullptr;
    TimerPort* timers = nullptr;
    EventPort* events = nullptr;
    TracePort* trace = nullptr;
    CounterPort* counters = nullptr;
    congestion::NotificationPoint* np = nullptr;
    // Set: the QP's reaction point reports its changes to it, as the QPN
    // (`simnic fabric dcqcn` records them). Its owner tells it rp_end.
    congestion::RpObserver* rp_observer = nullptr;
};

}  // namespace simnic::transport
