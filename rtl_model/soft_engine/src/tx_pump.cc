#include "tx_pump.h"

#include <sys/socket.h>
#include <time.h>

#include <utility>

namespace simnic::soft_engine {

namespace {
uint64_t mono_ns() {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}
}  // namespace

TxPump::TxPump(std::function<void(size_t, bool)> sent, bool threaded) : sent_(std::move(sent)) {
    if (threaded) thread_ = std::thread([this] { run(); });
}

TxPump::~TxPump() {
    {
        std::lock_guard<std::mutex> lk(mu_);
        stop_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
}

TxFrame& TxPump::next() {
    if (n_ == cur_.size()) cur_.emplace_back();
    return cur_[n_++];
}

void TxPump::flush() {
    if (n_ == 0) return;
    const size_t n = n_;
    n_ = 0;
    // Inline: no thread, or a small batch while the thread has nothing queued
    // (so order is kept).
    if (!thread_.joinable() || (n < kHandOffMin && queued_.load(std::memory_order_acquire) == 0)) {
        send(cur_, n);
        return;
    }
    bool wake = false;
    {
        std::lock_guard<std::mutex> lk(mu_);
        std::vector<TxFrame> fresh;
        if (!spare_.empty()) {
            fresh = std::move(spare_.back());
            spare_.pop_back();
        }
        work_.emplace_back(std::move(cur_), n);
        cur_ = std::move(fresh);
        queued_.fetch_add(n, std::memory_order_release);
        wake = sleeping_.load(std::memory_order_relaxed);
    }
    ++handoffs_;
    if (wake) cv_.notify_one();
}

void TxPump::send(std::vector<TxFrame>& b, size_t n) {
    mmsghdr msgs[kBatch];
    iovec ivs[kBatch];
    size_t i = 0;
    while (i < n) {
        // One sendmmsg per run of frames on the same socket.
        size_t j = i;
        while (j < n && j - i < kBatch && b[j].fd == b[i].fd) {
            TxFrame& t = b[j];
            ivs[j - i] = iovec{t.data.data(), t.data.size()};
            msgs[j - i] = mmsghdr{};
            msgs[j - i].msg_hdr.msg_name = &t.dst;
            msgs[j - i].msg_hdr.msg_namelen = t.dst_len;
            msgs[j - i].msg_hdr.msg_iov = &ivs[j - i];
            msgs[j - i].msg_hdr.msg_iovlen = 1;
            ++j;
        }
        const int sent = sendmmsg(b[i].fd, msgs, unsigned(j - i), MSG_DONTWAIT);
        for (size_t k = i; k < j; ++k)
            sent_(b[k].data.size(), sent >= 0 && k - i < size_t(sent) && msgs[k - i].msg_len == b[k].data.size());
        i = j;
    }
}

void TxPump::run() {
    // Spin (yielding) this long after the last batch before sleeping: under
    // bulk traffic batches come every few microseconds, and a condition
    // variable's wake-up costs the engine a system call each time.
    constexpr uint64_t kSpinNs = 100'000;
    uint64_t last = mono_ns();
    std::unique_lock<std::mutex> lk(mu_);
    while (!stop_) {
        if (work_.empty()) {
            lk.unlock();
            const uint64_t now = mono_ns();
            if (now - last < kSpinNs) {
                std::this_thread::yield();
                lk.lock();
                continue;
            }
            lk.lock();
            sleeping_.store(true, std::memory_order_relaxed);
            cv_.wait(lk, [this] { return stop_ || !work_.empty(); });
            sleeping_.store(false, std::memory_order_relaxed);
            continue;
        }
        auto [batch, n] = std::move(work_.front());
        work_.pop_front();
        lk.unlock();
        send(batch, n);
        queued_.fetch_sub(n, std::memory_order_release);
        last = mono_ns();
        lk.lock();
        spare_.push_back(std::move(batch));
    }
}

}  // namespace simnic::soft_engine
