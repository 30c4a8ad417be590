// The soft device's MAC TX: hands the frames the engine built to the kernel.
//
// On the default path every frame goes through the kernel's UDP stack, and
// on lo the sending system call also runs the receive side up to the
// destination socket (the loopback softirq). That kernel work was a third of
// the engine thread's time under bulk traffic. A busy step's frames are
// therefore queued to a second thread, which sends them while the engine
// goes on with the next doorbell or received packet; a lone frame (a
// latency-bound exchange) is sent inline, since a hand-off to another thread
// would cost more than it saves. Frames leave in the order they were built:
// nothing is sent inline while the thread still holds queued frames.
#pragma once

#include <sys/socket.h>

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace simnic::soft_engine {

struct TxFrame {
    int fd = -1;  // the UDP socket of the frame's source port
    sockaddr_storage dst{};
    socklen_t dst_len = 0;
    std::vector<uint8_t> data;  // from the BTH on: the kernel adds IP and UDP
};

class TxPump {
public:
    // Most frames per sendmmsg, and per batch the engine hands over.
    static constexpr size_t kBatch = 32;
    // Fewest frames a batch needs to be worth a hand-off to the thread.
    static constexpr size_t kHandOffMin = 4;

    // `sent(bytes, ok)` counts each frame as sent (ok) or dropped; it is
    // called from either thread. `threaded` false: every batch is sent
    // inline (a device that is not on a real wire, or tests).
    TxPump(std::function<void(size_t bytes, bool ok)> sent, bool threaded);
    ~TxPump();  // stops the thread; queued frames are dropped uncounted
    TxPump(const TxPump&) = delete;
    TxPump& operator=(const TxPump&) = delete;

    // The batch being filled by the engine thread: add frames, then flush().
    TxFrame& next();
    size_t pending() const { return n_; }
    // Sends (or queues) what next() gave out since the last flush.
    void flush();

    // Frames queued to the thread and not yet sent (for statistics/tests).
    size_t queued() const { return queued_.load(std::memory_order_relaxed); }
    uint64_t handed_off_batches() const { return handoffs_; }

private:
    void send(std::vector<TxFrame>& b, size_t n);
    void run();

    std::function<void(size_t, bool)> sent_;
    std::vector<TxFrame> cur_;
    size_t n_ = 0;
    uint64_t handoffs_ = 0;

    // Shared with the thread.
    std::mutex mu_;
    std::condition_variable cv_;
    std::deque<std::pair<std::vector<TxFrame>, size_t>> work_;  // batches and their frame counts
    std::vector<std::vector<TxFrame>> spare_;                      // sent batches, buffers kept
    std::atomic<size_t> queued_{0};
    std::atomic<bool> sleeping_{false};
    bool stop_ = false;
    std::thread thread_;
};

}  // namespace simnic::soft_engine
