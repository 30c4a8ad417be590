// The UDP port's MAC TX (udp_port.cc): the frames one engine step built,
// handed to the kernel together. Each frame goes to the UDP socket of its
// source port (the kernel adds the IP and UDP headers the engine encoded the
// same way), and a run of frames on one socket is one sendmmsg: a system
// call per step, not per packet. Frames leave in the order they were built.
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
    int fd = -1;  // the UDP socket of the frame's source port
    sockaddr_storage dst{};
    socklen_t dst_len = 0;
    std::vector<uint8_t> data;  // from the BTH on: the kernel adds IP and UDP
};

class TxQueue {
public:
    // Most frames queued before flush() is forced.
    static constexpr size_t kBatch = 32;

    // `sent(bytes, ok)` counts each frame as sent (ok) or dropped.
    explicit TxQueue(std::function<void(size_t bytes, bool ok)> sent) : sent_(std::move(sent)) {}

    // The next frame to fill; buffers are reused from one step to the next.
    TxFrame& next();
    size_t pending() const { return n_; }
    // Sends every queued frame, in order.
    void flush();

private:
    std::function<void(size_t, bool)> sent_;
    std::vector<TxFrame> q_;
    size_t n_ = 0;
};

}  // namespace simnic::soft_engine
