// The ports' MAC TX (udp_port.cc, wire_port.cc): the frames one engine step
// built, handed to the kernel together. On the UDP port each frame goes to
// the UDP socket of its source port (the kernel adds the IP and UDP headers
// the engine encoded the same way); on the wire port each whole frame is one
// datagram to the wire's hub. A run of frames on one socket is one
// sendmmsg: a system call per step, not per packet. Frames leave in the
// order they were built.
//
// A run of equal-sized frames to one destination on this host (a message's
// packets after its first) may go as one UDP GSO send: the kernel carries
// it through the stack once and cuts it into the same datagrams at the
// receiving socket, or hands it whole to a receiver that asked for UDP GRO
// (udp_port.cc). See udp_port.cc for when the port allows it.
//
// Measured and left out: sending from a second thread. On lo the sending
// system call also runs the receive side up to the destination socket, but
// with the application's core freed (hw-spec 3.5) a second thread did not
// raise ib_write_bw above the single thread's figure on 2 cores, and cost a
// hand-off on every latency-bound exchange.
#pragma once

#include <sys/socket.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

namespace simnic::soft_engine {

struct TxFrame {
    int fd = -1;  // the UDP socket of the frame's source port, or the wire's
    sockaddr_storage dst{};
    socklen_t dst_len = 0;      // 0: the socket's connected peer
    // What is sent: data[off, off + len). UDP port: from the BTH on; wire
    // port: the whole frame. The UDP port takes the engine's encoded frame
    // whole where it can (OutFrame::owner) and sends from its BTH, where it
    // copied the UDP payload out.
    std::vector<uint8_t> data;
    size_t off = 0, len = 0;
    const uint8_t* bytes() const { return data.data() + off; }
    // The frame's bytes: a copy of [p, p + n).
    void assign(const uint8_t* p, size_t n) {
        data.assign(p, p + n);
        off = 0;
        len = n;
    }
    // The frame's bytes: [at, at + n) of buf, which this frame takes; buf
    // gets this frame's old buffer back (a frame's worth, to be refilled).
    void take(std::vector<uint8_t>& buf, size_t at, size_t n) {
        data.swap(buf);
        off = at;
        len = n;
    }
    size_t counted = 0;  // what the statistics count of it (tx_bytes: from the BTH on)
    // UDP port: the IPv4 TOS or IPv6 traffic class the kernel writes (the
    // QP's address vector's, as rxe's prepare4/prepare6 write it); sent as
    // ancillary data when not 0, the sockets' own.
    uint8_t tos = 0;
    bool v6 = false;
    // UDP port: the frame may leave in one UDP GSO send with its neighbours
    // (see TxQueue::flush); only frames whose every segment the receiver
    // takes as the kernel splits it (a destination on this host).
    bool gso = false;
};

class TxQueue {
public:
    // Most frames queued before flush() is forced: one GSO send's worth of
    // segments (kMaxSegments in tx_queue.cc), so that a run of a message's
    // frames is not cut by the batch.
    static constexpr size_t kBatch = 64;

    // `sent(frame, ok)` counts each frame as sent (ok) or dropped.
    using Sent = std::function<void(const TxFrame& frame, bool ok)>;
    explicit TxQueue(Sent sent) : sent_(std::move(sent)) {}

    // The next frame to fill; buffers are reused from one step to the next.
    TxFrame& next();
    size_t pending() const { return n_; }
    // Sends every queued frame, in order.
    void flush();
    // Whether GSO sends are allowed at all; a GSO send the kernel refuses
    // (no UDP_SEGMENT on this path) turns them off for good and its frames
    // go one by one.
    bool gso_allowed() const { return gso_; }
    void set_gso_allowed(bool on) { gso_ = on && !gso_refused_; }

private:
    // How many frames from q_[i] on go in one UDP GSO send (1: alone).
    size_t gso_run(size_t i, size_t end) const;
    Sent sent_;
    std::vector<TxFrame> q_;
    size_t n_ = 0;
    bool gso_ = false;
    bool gso_refused_ = false;  // the kernel refused one: never again
};

}  // namespace simnic::soft_engine
