// ACKs held at the port for their flow's next packet (ack_hold.h).
#include "ack_hold.h"

#include <cstring>

#include "port.h"
#include "simnic/roce/headers.h"
#include "simnic/roce/opcode.h"

namespace simnic::soft_engine {

AckHold::Kind AckHold::classify(const OutFrame& f, Flow& flow) {
    const size_t b = f.bth();
    if (b + roce::kBthBytes > f.ip_end) return Kind::Other;
    const uint8_t opcode = f.data[b];
    if (roce::opcode_transport(opcode) != roce::Transport::RC) return Kind::Other;
    flow.dqpn = uint32_t(f.data[b + 5]) << 16 | uint32_t(f.data[b + 6]) << 8 | f.data[b + 7];
    flow.dst = {};
    // The IP destination: IPv4 at 16 of its header, IPv6 at 24.
    if (f.v6) std::memcpy(flow.dst.data(), f.ip() + 24, 16);
    else std::memcpy(flow.dst.data(), f.ip() + 16, 4);
    // An AETH follows the BTH; its syndrome's top bits say ACK or NAK.
    const bool has_aeth = b + roce::kBthBytes + 4 <= f.ip_end;
    if (opcode == roce::op::RC_ACKNOWLEDGE && has_aeth &&
        roce::aeth_type(f.data[b + roce::kBthBytes]) == roce::AethType::Ack)
        return Kind::PureAck;
    return roce::opcode_info(opcode).has(roce::kRequest) ? Kind::Request : Kind::Flow;
}

size_t AckHold::slot(const Flow& flow) {
    // FNV-1a over the address and the QP number.
    uint32_t h = 2166136261u;
    for (uint8_t c : flow.dst) h = (h ^ c) * 16777619u;
    for (int i = 0; i < 3; ++i) h = (h ^ ((flow.dqpn >> (8 * i)) & 0xFF)) * 16777619u;
    return h % kEntries;
}

AckHold::Entry& AckHold::entry(const Flow& flow) {
    Entry& e = table_[slot(flow)];
    if (!e.valid || !(e.flow == flow)) {
        const bool held = e.held;  // the slot stays in held_ until the queue leaves
        e = Entry{};
        e.flow = flow;
        e.valid = true;
        e.held = held;
    }
    return e;
}

bool AckHold::in_pingpong(const Flow& flow) const {
    const Entry& e = table_[slot(flow)];
    return e.valid && e.flow == flow && e.pingpong;
}

void AckHold::queued(Kind k, const Flow& flow, uint64_t now) {
    if (hold_ns_ == 0 || k == Kind::Other) {
        must_send_ = true;
        return;
    }
    Entry& e = entry(flow);
    if (k != Kind::PureAck) {
        // Its own request soon after its ACK: a held ACK would have gone
        // with it. (Any packet of the flow sends a held ACK with it.)
        if (k == Kind::Request && e.acked && now - e.ack_ns <= hold_ns_) e.pingpong = true;
        if (e.held && e.acked) ++counters_.joined;
        e.acked = false;
        must_send_ = true;
        return;
    }
    e.acked = true;
    e.ack_ns = now;
    if (!e.pingpong) {
        must_send_ = true;
        return;
    }
    if (e.held) return;  // the same flow again: the first one's deadline stands
    if (held_.empty()) deadline_ = now + hold_ns_;
    e.held = true;
    held_.push_back(uint16_t(&e - table_.data()));
    ++counters_.held;
}

void AckHold::sent(uint64_t now) {
    if (!held_.empty()) {
        // Sent for no other reason than the hold running out: its flows
        // did not reply in time, and hold no more ACKs until they do.
        const bool expired = !must_send_ && now >= deadline_;
        if (expired) ++counters_.expired;
        for (uint16_t s : held_) {
            if (expired) table_[s].pingpong = false;
            table_[s].held = false;
        }
        held_.clear();
    }
    deadline_ = 0;
    must_send_ = false;
}

}  // namespace simnic::soft_engine
