// SystemC plumbing shared by the pipeline's blocks: the handshake channel
// between two blocks, the per-block counters, and the waveform tap.
#pragma once

#include <systemc>

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "simnic/model/wave_writer.h"

namespace simnic::model::sim {

using sc_core::sc_time;
using sc_core::SC_PS;

inline uint64_t now_ps() { return sc_core::sc_time_stamp().value(); }  // resolution is 1 ps
inline void wait_until(uint64_t t_ps) {
    const uint64_t n = now_ps();
    if (t_ps > n) sc_core::wait(sc_time(double(t_ps - n), SC_PS));
}
inline void wait_ps(uint64_t d) {
    if (d) sc_core::wait(sc_time(double(d), SC_PS));
}

// Records the handshakes of the channels that are being traced.
class Tap {
public:
    // The writer is open and the window [from, to) in ps is current.
    bool active(uint64_t t) const { return w_ && t >= from_ && t < to_; }
    WaveWriter* writer() { return w_.get(); }
    void start(std::unique_ptr<WaveWriter> w, uint64_t from, uint64_t to) {
        w_ = std::move(w);
        from_ = from;
        to_ = to;
    }
    std::unique_ptr<WaveWriter> take() { return std::move(w_); }
    uint64_t from() const { return from_; }
    uint64_t to() const { return to_; }

private:
    std::unique_ptr<WaveWriter> w_;
    uint64_t from_ = 0, to_ = 0;
};

// What a channel shows on the waveform about the item in flight.
struct Probe {
    uint32_t qpn = 0, psn = 0, opcode = 0, bytes = 0;
};

// A bounded FIFO between two blocks: the producer's valid, the consumer's
// ready. write() blocks while the FIFO is full (the producer stalls); read()
// blocks while it is empty. The time a producer spends blocked is its stall.
template <typename T>
class Chan {
public:
    Chan(std::string name, size_t depth) : name_(std::move(name)), depth_(depth) {}

    void write(T v, const Probe& p, uint64_t* stall_ps) {
        const uint64_t t0 = now_ps();
        while (q_.size() >= depth_) sc_core::wait(popped_);
        if (stall_ps) *stall_ps += now_ps() - t0;
        q_.push_back(std::move(v));
        ++pushed_count_;
        show(true, p);
        pushed_.notify(sc_core::SC_ZERO_TIME);
    }
    T read() {
        if (q_.empty()) {
            show_ready(true);
            while (q_.empty()) sc_core::wait(pushed_);
            show_ready(false);
        }
        T v = std::move(q_.front());
        q_.pop_front();
        if (q_.empty()) show(false, Probe{});
        popped_.notify(sc_core::SC_ZERO_TIME);
        return v;
    }
    // Writes from outside the simulation's processes (inputs): never blocks.
    void push_input(T v, const Probe& p) {
        q_.push_back(std::move(v));
        ++pushed_count_;
        show(true, p);
        pushed_.notify(sc_core::SC_ZERO_TIME);
    }
    bool empty() const { return q_.empty(); }
    size_t size() const { return q_.size(); }
    size_t depth() const { return depth_; }
    const std::string& name() const { return name_; }
    const sc_core::sc_event& data_event() const { return pushed_; }
    uint64_t transfers() const { return pushed_count_; }

    // Declares this channel's signals on the waveform.
    void declare(Tap& tap) {
        tap_ = &tap;
        WaveWriter* w = tap.writer();
        const std::string scope = "nic." + name_;
        sig_valid_ = w->add_signal(scope, "valid", 1);
        sig_ready_ = w->add_signal(scope, "ready", 1);
        sig_qpn_ = w->add_signal(scope, "qpn", 24);
        sig_psn_ = w->add_signal(scope, "psn", 24);
        sig_op_ = w->add_signal(scope, "opcode", 8);
        sig_bytes_ = w->add_signal(scope, "bytes", 16);
        sig_level_ = w->add_signal(scope, "level", 8);
    }
    void undeclare() { tap_ = nullptr; }

private:
    void show(bool valid, const Probe& p) {
        if (!tap_ || !tap_->active(now_ps())) return;
        WaveWriter* w = tap_->writer();
        const uint64_t t = now_ps();
        w->change(t, sig_valid_, valid ? 1 : 0);
        if (valid) {
            w->change(t, sig_qpn_, p.qpn & 0xFFFFFF);
            w->change(t, sig_psn_, p.psn & 0xFFFFFF);
            w->change(t, sig_op_, p.opcode & 0xFF);
            w->change(t, sig_bytes_, p.bytes & 0xFFFF);
        }
        w->change(t, sig_level_, q_.size() > 255 ? 255 : q_.size());
    }
    void show_ready(bool r) {
        if (!tap_ || !tap_->active(now_ps())) return;
        tap_->writer()->change(now_ps(), sig_ready_, r ? 1 : 0);
    }

    std::string name_;
    size_t depth_;
    std::deque<T> q_;
    sc_core::sc_event pushed_, popped_;
    uint64_t pushed_count_ = 0;
    Tap* tap_ = nullptr;
    uint32_t sig_valid_ = 0, sig_ready_ = 0, sig_qpn_ = 0, sig_psn_ = 0, sig_op_ = 0, sig_bytes_ = 0,
             sig_level_ = 0;
};

// Per-block counters, in simulated picoseconds.
struct BlockStats {
    uint64_t items = 0;     // transactions handled
    uint64_t busy_ps = 0;   // time spent working on a transaction
    uint64_t stall_ps = 0;  // time blocked: output full, or waiting for memory
};

// Measures a busy interval: construct at the start of the work.
class BusyScope {
public:
    explicit BusyScope(BlockStats& s) : s_(s), t0_(now_ps()) { ++s_.items; }
    ~BusyScope() { s_.busy_ps += now_ps() - t0_; }
    BusyScope(const BusyScope&) = delete;
    BusyScope& operator=(const BusyScope&) = delete;

private:
    BlockStats& s_;
    uint64_t t0_;
};

}  // namespace simnic::model::sim
