// The requester (rxe_req.c): turns send WQEs into request packets.
//
// It segments each message into path-MTU packets with the FIRST/MIDDLE/LAST/
// ONLY opcodes, assigns PSNs (a READ takes one PSN per response packet), sets
// AckReq on the last packet of each RC request, and honours the window of
// unacknowledged PSNs, max_rd_atomic and the fence flag. When the completer
// asks for a retry it goes back to the oldest unacknowledged PSN, resuming a
// message in its middle when that PSN is inside one.
#pragma once

#include <cstdint>
#include <vector>

#include "simnic/transport/qp_context.h"
#include "simnic/transport/segmentation.h"

namespace simnic::transport {

enum class PostStatus : uint8_t {
    Ok = 0,
    InvalidOpcode,  // not allowed on this QP type
    TooManySge,
    BadLength,      // > 2^31, UD longer than the MTU, atomic local buffer not 8 bytes
    Flushed,        // QP in ERR: completed at once with WR_FLUSH_ERR
};

class Requester {
public:
    explicit Requester(QpContext& qp) : qp_(qp) {}

    // Validate and queue a WQE (ibv_post_send after decoding).
    PostStatus post(const SendWqe& wqe);
    // Send every packet that may be sent now. Returns the number sent.
    size_t run();

private:
    bool start_wqe(SqEntry& e);
    // BIND_MW and LOCAL_INV: act on the MPT through the memory port.
    void execute_local(SqEntry& e);
    // The segmentation step of e's next packet (segmentation.h).
    SegWqe seg_wqe(const SqEntry& e) const;
    void send_packet(SqEntry& e);
    // DCQCN's rate limiter (QpContext::rp): true if the next packet of `e`
    // may leave now; else it arms QpTimer::RateLimit for when it may.
    bool pace(const SqEntry& e);
    // The Ethernet frame the next packet of `e` makes, in bytes (without
    // preamble, inter-frame gap and FCS): what the rate limiter counts.
    uint32_t frame_bytes(const SqEntry& e) const;
    void restart();

    QpContext& qp_;
    std::vector<uint8_t> payload_;  // gather buffer for one packet
};

}  // namespace simnic::transport
