// SystemC plumbing shared by the pipeline's blocks: the handshake channel
// between two blocks, the per-block counters, and the waveform tap.
#pragma once

#include <systemc>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <queue>
#include <string>
#include <vector>

#include "simnic/base/ring.h"
#include "simnic/model/wave_writer.h"

namespace simnic::model::sim {

using sc_core::sc_time;
using sc_core::SC_PS;

// The time resolution is 1 ps, so a time's value is its picoseconds: a
// delay is built from its value, not from a double and a unit (which
// scales and rounds it, a cost every block paid at every wait).
//
// The current time is read from the simulation context inline: the
// library's sc_time_stamp() is an out-of-line call (to find the context),
// which every block makes several times per packet (2% of a simulation's
// instructions under callgrind).
inline uint64_t now_ps() {
    const sc_core::sc_simcontext* c = sc_core::sc_curr_simcontext;
    return (c ? c->time_stamp() : sc_core::sc_time_stamp()).value();
}
inline void wait_until(uint64_t t_ps) {
    const uint64_t n = now_ps();
    if (t_ps > n) sc_core::wait(sc_time::from_value(t_ps - n));
}
inline void wait_ps(uint64_t d) {
    if (d) sc_core::wait(sc_time::from_value(d));
}

// The waveform of one simulation: the writer, the window [from, to) in ps,
// and the value of every signal. Values are kept from the moment the
// waveform is armed, so the window opens with every signal's value at its
// first instant, and changes may be scheduled ahead of the simulation (the
// DMA engine knows when a tag frees before the simulation gets there).
// Nothing here runs unless a waveform is armed: the hooks in the channels
// and blocks test on() first.
//
// Every change also writes `cycle`, the pipeline clock's cycle number at the
// change's time (time / period): the file carries the cycle of each event
// without a clock that would toggle every cycle.
class Tap {
public:
    static constexpr uint32_t kNone = UINT32_MAX;

    bool on() const { return w_ != nullptr; }
    // Arms the waveform: [from, to) ps, clock period ps. Declares `cycle`.
    void start(std::unique_ptr<WaveWriter> w, uint64_t from, uint64_t to, uint64_t period) {
        w_ = std::move(w);
        from_ = from;
        to_ = to;
        period_ = period;
        open_ = false;
        now_ = 0;
        last_step_ = 0;
        val_.clear();
        gen_.clear();
        pend_.clear();
        evs_ = {};
        seq_ = 0;
        cycle_ = w_->add_signal("nic", "cycle", 32);
        track(0);
    }
    // Declares a signal holding `value` now.
    uint32_t declare(const std::string& scope, const std::string& name, unsigned width, uint64_t value) {
        const uint32_t s = w_->add_signal(scope, name, width);
        if (s == WaveWriter::kInvalidSignal) return kNone;
        track(value);
        return s;
    }
    // Writes what is due up to `now` (ps, not beyond the window), marks the
    // end with a last `cycle` change, and hands the writer back for closing.
    std::unique_ptr<WaveWriter> finish(uint64_t now) {
        if (w_ && to_ > 0) {
            const uint64_t end = std::min(now, to_ - 1);
            advance(end);
            if (open_ && end != last_step_) {
                last_step_ = end;
                w_->change(end, cycle_, end / period_);
            }
        }
        return std::move(w_);
    }
    uint64_t from() const { return from_; }
    uint64_t to() const { return to_; }
    uint64_t period() const { return period_; }

    // `sig` holds v from t (the current time) on.
    void set(uint64_t t, uint32_t sig, uint64_t v) {
        if (sig == kNone) return;
        advance(t);
        ++gen_[sig];
        pend_[sig] = 0;
        if (val_[sig] == v) return;
        val_[sig] = v;
        emit(t, sig, v);
    }
    // `sig` holds v from t (>= the current time) on, unless set() or
    // set_later() is called for it again before t.
    void set_later(uint64_t t, uint32_t sig, uint64_t v) {
        if (sig == kNone) return;
        if (t <= now_) return set(now_, sig, v);
        const uint32_t g = ++gen_[sig];
        pend_[sig] = t;
        evs_.push(Ev{t, seq_++, sig, g, false, 0, v});
    }
    // A counter: `delta` is added to `sig` at t (>= the current time).
    void add_at(uint64_t t, uint32_t sig, int64_t delta) {
        if (sig == kNone) return;
        if (t < now_) t = now_;
        evs_.push(Ev{t, seq_++, sig, 0, true, delta, 0});
    }
    // A strobe: `sig` is 1 during [t, t + len), longer where pulses overlap.
    void pulse(uint64_t t, uint32_t sig, uint64_t len) {
        if (sig == kNone) return;
        advance(t);
        if (val_[sig] == 0) set(t, sig, 1);
        if (pend_[sig] == 0 || t + len > pend_[sig]) set_later(t + len, sig, 0);
    }

private:
    struct Ev {
        uint64_t t, seq;
        uint32_t sig, gen;
        bool add;
        int64_t delta;
        uint64_t value;
        bool operator>(const Ev& o) const { return t != o.t ? t > o.t : seq > o.seq; }
    };

    void track(uint64_t v) {
        val_.push_back(v);
        gen_.push_back(0);
        pend_.push_back(0);
    }
    // Applies every scheduled change up to and including t, in time order.
    void advance(uint64_t t) {
        while (!evs_.empty() && evs_.top().t <= t) {
            const Ev e = evs_.top();
            evs_.pop();
            now_ = std::max(now_, e.t);
            if (!open_ && e.t >= from_) open_window();
            if (e.add) {
                val_[e.sig] = uint64_t(int64_t(val_[e.sig]) + e.delta);
            } else {
                if (e.gen != gen_[e.sig] || val_[e.sig] == e.value) continue;
                pend_[e.sig] = 0;
                val_[e.sig] = e.value;
            }
            emit(e.t, e.sig, val_[e.sig]);
        }
        now_ = std::max(now_, t);
        if (!open_ && now_ >= from_) open_window();
    }
    // The window opens at `from` with every signal's value then.
    void open_window() {
        open_ = true;
        last_step_ = from_;
        w_->change(from_, cycle_, from_ / period_);
        for (uint32_t s = 0; s < val_.size(); ++s)
            if (s != cycle_) w_->change(from_, s, val_[s]);
    }
    void emit(uint64_t t, uint32_t sig, uint64_t v) {
        if (!open_ || t >= to_) return;  // outside the window only the state changes
        if (t != last_step_) {
            last_step_ = t;
            w_->change(t, cycle_, t / period_);
        }
        w_->change(t, sig, v);
    }

    std::unique_ptr<WaveWriter> w_;
    uint64_t from_ = 0, to_ = 0, period_ = 1, now_ = 0, last_step_ = 0, seq_ = 0;
    bool open_ = false;
    uint32_t cycle_ = 0;
    std::vector<uint64_t> val_, pend_;  // pend_: when a pending set_later() is due (0: none)
    std::vector<uint32_t> gen_;
    std::priority_queue<Ev, std::vector<Ev>, std::greater<Ev>> evs_;
};

// What a channel shows on the waveform about an item.
struct Probe {
    uint32_t qpn = 0, psn = 0, opcode = 0, bytes = 0;
};

// Per-block counters, in simulated picoseconds, and the block's busy and
// stall signals on the waveform (Tap::kNone when not traced).
struct BlockStats {
    uint64_t items = 0;     // transactions handled
    uint64_t busy_ps = 0;   // time spent working on a transaction
    uint64_t stall_ps = 0;  // time blocked: output full, or waiting for memory
    uint64_t since_ps = 0;  // the last reset: time before it is not counted
    uint32_t busy_depth = 0, stall_depth = 0;  // open busy and stall intervals
    // When the open busy / stall interval began: a block that works on
    // several items at once (the RX transport's contexts) counts the time
    // any of them is busy or stalled once, as its busy and stall signals
    // show it.
    uint64_t busy_open_ps = 0, stall_open_ps = 0;
    Tap* tap = nullptr;                        // set while a waveform is armed
    uint32_t busy_sig = Tap::kNone, stall_sig = Tap::kNone;

    void reset(uint64_t now) {
        items = busy_ps = stall_ps = 0;
        since_ps = now;
    }
};

// Measures a busy interval: construct at the start of the work.
class BusyScope {
public:
    // `item`: this interval is a transaction of its own (counted in
    // items), not more work on one already counted. `from_ps` (>= now):
    // the work starts then, on the block's own time ahead of the kernel's
    // (the block waits only where it next meets another one).
    explicit BusyScope(BlockStats& s, bool item = true, uint64_t from_ps = 0) : s_(s) {
        const uint64_t t0 = std::max(from_ps, now_ps());
        s_.items += item;
        if (s_.busy_depth++ != 0) return;
        s_.busy_open_ps = t0;
        if (s_.tap) s_.tap->set_later(t0, s_.busy_sig, 1);
    }
    ~BusyScope() {
        if (--s_.busy_depth != 0) return;
        const uint64_t t = now_ps();
        s_.busy_ps += t - std::max(s_.busy_open_ps, std::min(t, s_.since_ps));
        if (s_.tap) s_.tap->set(t, s_.busy_sig, 0);
    }
    BusyScope(const BusyScope&) = delete;
    BusyScope& operator=(const BusyScope&) = delete;

private:
    BlockStats& s_;
};

// Measures a stall: construct where the block starts waiting (for room in
// its output, for memory, for a resource). No block: nothing is counted.
class StallScope {
public:
    explicit StallScope(BlockStats* s) : s_(s) {
        if (!s_ || s_->stall_depth++ != 0) return;
        s_->stall_open_ps = now_ps();
        if (s_->tap) s_->tap->set(s_->stall_open_ps, s_->stall_sig, 1);
    }
    ~StallScope() {
        if (!s_ || --s_->stall_depth != 0) return;
        const uint64_t t = now_ps();
        s_->stall_ps += t - std::max(s_->stall_open_ps, std::min(t, s_->since_ps));
        if (s_->tap) s_->tap->set(t, s_->stall_sig, 0);
    }
    StallScope(const StallScope&) = delete;
    StallScope& operator=(const StallScope&) = delete;

private:
    BlockStats* s_;
};

// Counts [from, to) (ps, to <= now) as the block's stall after the fact:
// for a stall whose length is only known when it ends, such as an RTL
// output held while its m_ready_i was low (whole edges, decided by when the
// consumer made room). The stall signal on the waveform is the caller's.
inline void add_stall(BlockStats& s, uint64_t from, uint64_t to) {
    if (to > from) s.stall_ps += to - std::max(from, std::min(to, s.since_ps));
}

// Waits until `t` (ps), counting the wait as the block's stall.
inline void stall_until(BlockStats& st, uint64_t t) {
    if (t <= now_ps()) return;
    StallScope s(&st);
    wait_until(t);
}

// A bounded FIFO between two blocks: the producer's valid, the consumer's
// ready. write() blocks while the FIFO is full (the producer stalls); read()
// blocks while it is empty. The time a producer spends blocked is its stall.
//
// On the waveform (scope nic.<channel>): `valid` while the FIFO holds an
// item and through the cycle in which the consumer takes it; `ready` while
// the consumer waits, and through that cycle too. So every transfer is a
// cycle with valid and ready high, as on an RTL valid/ready interface, also
// where the model moves an item in zero time (the consumer was waiting).
// `count` counts the transfers since the statistics' last reset exactly
// (several in one cycle included: the pulses merge, the count does not),
// `level` is the FIFO's fill, and qpn, psn, opcode and bytes describe the
// item at the head (after the last one leaves, that one).
//
// What the waveform shows of an item comes from `probe`, called only while
// a waveform is armed.
template <typename T>
class Chan {
public:
    using ProbeFn = Probe (*)(const T&);
    Chan(std::string name, size_t depth, ProbeFn probe = nullptr)
        : name_(std::move(name)), depth_(depth), probe_(probe) {}

    void write(T v, BlockStats* st) {
        if (q_.size() >= depth_) {
            StallScope s(st);
            wait_room();
        }
        push(std::move(v));
    }
    // Blocks while the FIFO is full (the caller counts the stall).
    void wait_room() {
        ++room_waiters_;
        while (q_.size() >= depth_) sc_core::wait(popped_);
        --room_waiters_;
    }
    // Blocks while the FIFO is full, but not past `t_ps`; true if it has room.
    bool wait_room_until(uint64_t t_ps) {
        ++room_waiters_;
        while (q_.size() >= depth_ && now_ps() < t_ps) sc_core::wait(sc_time::from_value(t_ps - now_ps()), popped_);
        --room_waiters_;
        return q_.size() < depth_;
    }
    // `pushed_ps` (if given): when the item was written.
    T read(uint64_t* pushed_ps = nullptr) {
        if (q_.empty()) {
            waiting_ = true;
            if (tap_) tap_->set(now_ps(), sig_ready_, 1);
            while (q_.empty()) sc_core::wait(pushed_);
            waiting_ = false;
        }
        Slot s = q_.pop_front();
        ++popped_count_;
        if (pushed_ps) *pushed_ps = s.t;
        if (tap_) show_pop();
        // Only a blocked producer needs the event: a notification nobody
        // waits for is still queued and triggered by the kernel, and most
        // transfers find room.
        if (room_waiters_) popped_.notify(sc_core::SC_ZERO_TIME);
        return std::move(s.v);
    }
    // Writes from outside the simulation's processes (inputs): never blocks.
    void push_input(T v) { push(std::move(v)); }
    bool empty() const { return q_.empty(); }
    size_t size() const { return q_.size(); }
    size_t depth() const { return depth_; }
    const std::string& name() const { return name_; }
    // Notified when an item is written, for a process that waits on several
    // channels at once (wait_any); a process blocked in read() needs nothing.
    const sc_core::sc_event& data_event() const { return pushed_; }
    // Counts a process waiting on data_event() outside read(): the
    // notification is only made while one waits.
    void watch(int d) { watchers_ += d; }
    bool full() const { return q_.size() >= depth_; }
    uint64_t transfers() const { return pushed_count_; }
    // Items the consumer took since reset_count(): the transfers across the
    // channel.
    uint64_t taken() const { return popped_count_ - popped_base_; }
    void reset_count() {
        popped_base_ = popped_count_;
        if (tap_) tap_->set(now_ps(), sig_count_, 0);
    }

    // Declares this channel's signals on the waveform, with their values now.
    void declare(Tap& tap) {
        const std::string scope = "nic." + name_;
        const Probe h = q_.empty() ? Probe{} : probe(q_.front().v);
        sig_valid_ = tap.declare(scope, "valid", 1, q_.empty() ? 0 : 1);
        sig_ready_ = tap.declare(scope, "ready", 1, waiting_ ? 1 : 0);
        sig_count_ = tap.declare(scope, "count", 32, taken() & 0xFFFFFFFF);
        sig_level_ = tap.declare(scope, "level", 16, std::min<size_t>(q_.size(), 0xFFFF));
        sig_qpn_ = tap.declare(scope, "qpn", 24, h.qpn & 0xFFFFFF);
        sig_psn_ = tap.declare(scope, "psn", 24, h.psn & 0xFFFFFF);
        sig_op_ = tap.declare(scope, "opcode", 8, h.opcode & 0xFF);
        sig_bytes_ = tap.declare(scope, "bytes", 16, h.bytes & 0xFFFF);
        tap_ = &tap;
    }
    void undeclare() { tap_ = nullptr; }

private:
    struct Slot {
        T v;
        uint64_t t;  // written at, ps
    };

    Probe probe(const T& v) const { return probe_ ? probe_(v) : Probe{}; }
    void push(T v) {
        const uint64_t t = now_ps();
        q_.push_back(Slot{std::move(v), t});
        ++pushed_count_;
        if (tap_) show_push(t);
        if (waiting_ || watchers_) pushed_.notify(sc_core::SC_ZERO_TIME);
    }
    void show_probe(uint64_t t, const Probe& p) {
        tap_->set(t, sig_qpn_, p.qpn & 0xFFFFFF);
        tap_->set(t, sig_psn_, p.psn & 0xFFFFFF);
        tap_->set(t, sig_op_, p.opcode & 0xFF);
        tap_->set(t, sig_bytes_, p.bytes & 0xFFFF);
    }
    void show_push(uint64_t t) {
        tap_->set(t, sig_valid_, 1);
        if (q_.size() == 1) show_probe(t, probe(q_.back().v));
        tap_->set(t, sig_level_, std::min<size_t>(q_.size(), 0xFFFF));
    }
    void show_pop() {
        const uint64_t t = now_ps();
        tap_->pulse(t, sig_ready_, tap_->period());
        tap_->set(t, sig_count_, taken() & 0xFFFFFFFF);
        tap_->set(t, sig_level_, std::min<size_t>(q_.size(), 0xFFFF));
        // The transfer's cycle shows valid; the next item's values, if any.
        if (!q_.empty())
            show_probe(t, probe(q_.front().v));
        else
            tap_->set_later(t + tap_->period(), sig_valid_, 0);
    }

    std::string name_;
    size_t depth_;
    ProbeFn probe_;
    base::Ring<Slot> q_;  // not a std::deque: that allocated every few items
    sc_core::sc_event pushed_, popped_;
    uint64_t pushed_count_ = 0, popped_count_ = 0, popped_base_ = 0;
    Tap* tap_ = nullptr;
    bool waiting_ = false;  // the consumer is blocked in read()
    int watchers_ = 0;      // processes waiting on data_event() (watch())
    int room_waiters_ = 0;  // producers blocked on a full FIFO
    uint32_t sig_valid_ = Tap::kNone, sig_ready_ = Tap::kNone, sig_count_ = Tap::kNone, sig_level_ = Tap::kNone,
             sig_qpn_ = Tap::kNone, sig_psn_ = Tap::kNone, sig_op_ = Tap::kNone, sig_bytes_ = Tap::kNone;
};

// Blocks until one of `chans` holds an item; `any` is the or-list of their
// data events.
template <typename... C>
void wait_any(const sc_core::sc_event_or_list& any, C&... chans) {
    if ((!chans.empty() || ...)) return;
    (chans.watch(1), ...);
    while ((chans.empty() && ...)) sc_core::wait(any);
    (chans.watch(-1), ...);
}

}  // namespace simnic::model::sim
