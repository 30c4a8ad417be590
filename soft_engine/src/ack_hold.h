// Which ACKs may wait at the port for their flow's next packet (MAC TX,
// between the engine's steps).
//
// In a ping-pong (ib_send_lat, ibv_rc_pingpong, a request and its reply
// in middleware), a responder's ACK is followed a few microseconds later by
// the same QP's reply to the same peer QP. Sent alone, the ACK costs a
// sendmmsg on this side and a pass with a recvmmsg on the other; held at
// the port until the reply is queued, both leave in one sendmmsg and arrive
// in one recvmmsg. Measured on lo: ib_send_lat's half round trip falls by
// about a fifth (soft and model devices; docs/architecture.md, "ACKs that
// wait for their reply").
//
// A held ACK is a late ACK, so only a flow that has shown it replies holds
// one, as Linux TCP delays an ACK only in its ping-pong mode:
// - a flow (the peer's IP address and QP: an ACK and the same QP's next
//   request carry both alike) enters the mode when a request of its own
//   follows one of its ACKs within the hold time (a response does not: a
//   NAK, a READ response or an atomic ACK is no reply to the peer);
// - in the mode, its pure ACKs wait at most the hold time; any other packet
//   (of any flow, or none: UD, CNP, a NAK) ends the wait for the whole
//   queue, which leaves in order;
// - a hold that runs out, its flow having sent nothing, ends the mode: a
//   flow that only receives (ib_write_bw's responder, a one-way stream of
//   SENDs waited on one at a time) never has an ACK held twice in a row.
// The frames and their order are unchanged; only when an ACK leaves moves.
//
// Pure logic on a clock the caller passes, so that it is tested by hand
// (soft_engine/tests/test_ack_hold.cpp).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace simnic::soft_engine {

struct OutFrame;

class AckHold {
public:
    // One side of an RC connection as seen from the frames that leave: the
    // peer's IP address (IPv4 in its first 4 bytes) and its QP.
    struct Flow {
        std::array<uint8_t, 16> dst{};
        uint32_t dqpn = 0;
        bool operator==(const Flow& o) const { return dqpn == o.dqpn && dst == o.dst; }
    };
    // What a frame leaving through the port is to the hold.
    enum class Kind : uint8_t {
        PureAck,  // RC ACKNOWLEDGE with an ACK syndrome: may wait
        Request,  // an RC request: what a held ACK waits for
        Flow,     // another packet of an RC flow (READ response, NAK, atomic ACK)
        Other,    // of no RC flow (UC, UD, CNP, or not RoCE): never waits
    };
    // The frame's kind and, unless Other, its flow.
    static Kind classify(const OutFrame& f, Flow& flow);

    // 0: never hold (every step's frames leave at its end, as before).
    explicit AckHold(uint64_t hold_ns = 0) : hold_ns_(hold_ns) {}
    uint64_t hold_ns() const { return hold_ns_; }

    // A frame joined the port's queue at `now` (ns, any monotonic clock).
    void queued(Kind k, const Flow& flow, uint64_t now);
    // Whether the queue may stay unsent at the end of a step at `now`: it
    // holds only ACKs of flows in the ping-pong mode, the oldest of them
    // younger than the hold time.
    bool may_wait(uint64_t now) const { return !held_.empty() && !must_send_ && now < deadline_; }
    // Whether any ACK is being held (the engine sends before it sleeps).
    bool holding() const { return !held_.empty(); }
    // The queue left at `now`. If that is because the hold ran out, its
    // flows leave the ping-pong mode. `now` is read only while holding().
    void sent(uint64_t now);

    // For tests, and TX_STATS_BLOCK (hw-spec 2.6.2).
    struct Counters {
        uint64_t held = 0;     // ACKs that waited
        uint64_t joined = 0;   // holds ended by a packet of the ACK's own flow
        uint64_t expired = 0;  // holds that ran out
    };
    const Counters& counters() const { return counters_; }
    bool in_pingpong(const Flow& flow) const;

private:
    struct Entry {
        Flow flow;
        bool valid = false;
        bool pingpong = false;
        bool held = false;    // in held_
        bool acked = false;   // a pure ACK queued since its last other packet...
        uint64_t ack_ns = 0;  // ...at this time
    };
    // A direct-mapped table: a collision forgets a flow's mode, which only
    // sends an ACK at once that could have waited.
    static constexpr size_t kEntries = 256;
    static size_t slot(const Flow& flow);
    Entry& entry(const Flow& flow);

    uint64_t hold_ns_;
    std::array<Entry, kEntries> table_{};
    std::vector<uint16_t> held_;  // slots with an ACK waiting in the queue
    uint64_t deadline_ = 0;       // the oldest held ACK's (valid while held_ is not empty)
    bool must_send_ = false;      // the queue holds a frame that may not wait
    Counters counters_;
};

}  // namespace simnic::soft_engine
