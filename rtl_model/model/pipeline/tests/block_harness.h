// The testbench harness of one pipeline block (src/blocks/).
//
// A BlockBench<Block> owns a SystemC simulation context of its own (entered
// with sim::SimGuard, as a Pipeline does), a Nic with the ModelConfig under
// test and a FakeDatapath, and ONE block: the block under test. Nothing else
// of the pipeline exists, so the block's input channels are the test's to
// drive and its output channels the test's to watch:
//
//   tb::BlockBench<MacTxBlock> b(cfg);
//   b.drive(b.nic().txb_to_mac, {{0, frame_a}, {0, frame_b}});  // driver thread
//   const auto& out = b.watch(b.nic().wire_in);                 // monitor thread
//   b.run();                                                    // until idle
//   CHECK(out[0].t_ps == ...);
//
// Drivers, monitors and test threads are SC_THREADs, so they must be set up
// before the first run() (SystemC creates no module once it has started);
// inputs pushed with Chan::push_input may be added between runs. Test
// threads only record: the assertions go after run(), in the test body
// (an exception thrown inside a SystemC thread would not reach Catch).
//
// A bench makes its context current for its whole life: use one bench at a
// time (a second one, created while the first lives, must be destroyed
// before the first is used again).
//
// What a block hands to the backend (frames on the wire, exec_* calls) is
// recorded by the FakeDatapath with the simulated time of the call; what an
// exec_* call "did" is whatever the test's hook writes into the OpRecord.
#pragma once

#include <systemc>

#include <stdlib.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "nic.h"
#include "sim_context.h"
#include "simnic/roce/packet.h"

namespace simnic::model::tb {

// An item that left a channel (or reached the backend), and when, in ps.
template <typename T>
struct Seen {
    uint64_t t_ps = 0;
    T item;
};

// The functional datapath, as the test scripts it.
class FakeDatapath final : public Datapath {
public:
    // What each exec_* records into the block's OpRecord (nothing if unset).
    std::function<void(const Doorbell&, OpRecord&)> on_doorbell;
    std::function<void(const std::vector<uint8_t>&, OpRecord&)> on_rx;
    std::function<void(uint32_t qpn, uint8_t timer, OpRecord&)> on_timer;

    // Every call, with its simulated time.
    std::vector<Seen<Doorbell>> doorbells;
    std::vector<Seen<std::vector<uint8_t>>> rx;
    std::vector<Seen<std::pair<uint32_t, uint8_t>>> timers;
    std::vector<Seen<std::vector<uint8_t>>> wire;

    void exec_doorbell(const Doorbell& db, OpRecord& rec) override {
        doorbells.push_back({sim::now_ps(), db});
        if (on_doorbell) on_doorbell(db, rec);
    }
    void exec_rx(const uint8_t* f, size_t n, bool, OpRecord& rec, const roce::Packet*) override {
        rx.push_back({sim::now_ps(), std::vector<uint8_t>(f, f + n)});
        if (on_rx) on_rx(rx.back().item, rec);
    }
    void exec_timer(uint32_t qpn, uint8_t timer, OpRecord& rec) override {
        timers.push_back({sim::now_ps(), {qpn, timer}});
        if (on_timer) on_timer(qpn, timer, rec);
    }
    void wire_tx(const uint8_t* f, size_t n) override { wire.push_back({sim::now_ps(), std::vector<uint8_t>(f, f + n)}); }
    // Frames the parser (bad header) or the ICRC check dropped.
    void rx_dropped(bool bad_icrc) override { ++(bad_icrc ? dropped_icrc : dropped_hdr); }
    uint64_t dropped_hdr = 0, dropped_icrc = 0;
    // Frames placed before a bad ICRC verdict that the model asked about,
    // and what the test says was placed (0 without on_probe).
    std::function<uint32_t(const std::vector<uint8_t>&, OpRecord&)> on_probe;
    std::vector<Seen<std::vector<uint8_t>>> probes;
    uint32_t probe_placement(const uint8_t* f, size_t n, OpRecord& rec) override {
        probes.push_back({sim::now_ps(), std::vector<uint8_t>(f, f + n)});
        return on_probe ? on_probe(probes.back().item, rec) : 0;
    }
    // The application's completion events the model sent: (CQN, the
    // moderation period that held it, ns), with when.
    void cq_event(uint32_t cqn, uint64_t period_ns, uint32_t cqes_to_count) override {
        cq_events.push_back({sim::now_ps(), {cqn, period_ns}});
        cq_event_counts.push_back(cqes_to_count);
    }
    std::vector<Seen<std::pair<uint32_t, uint64_t>>> cq_events;
    std::vector<uint32_t> cq_event_counts;  // each call's cqes_to_count
};

// A test process: an SC_THREAD that runs `body` once.
class TbProcess : public sc_core::sc_module {
public:
    SC_HAS_PROCESS(TbProcess);
    TbProcess(sc_core::sc_module_name n, std::function<void()> body) : sc_core::sc_module(n), body_(std::move(body)) {
        SC_THREAD(main);
    }

private:
    void main() { body_(); }
    std::function<void()> body_;
};

template <typename Block>
class BlockBench {
public:
    explicit BlockBench(const ModelConfig& cfg = ModelConfig{}, bool loopback = false) : guard_(nullptr) {
        setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 0);
        ctx_ = new sc_core::sc_simcontext;
        sc_core::sc_curr_simcontext = ctx_;
        nic_ = std::make_unique<Nic>(cfg, be, loopback);
        dut_ = std::make_unique<Block>("dut", *nic_);
    }
    ~BlockBench() {
        procs_.clear();
        dut_.reset();
        nic_.reset();
        delete ctx_;
    }
    BlockBench(const BlockBench&) = delete;
    BlockBench& operator=(const BlockBench&) = delete;

    FakeDatapath be;

    Nic& nic() { return *nic_; }
    Block& dut() { return *dut_; }
    const ModelConfig& cfg() const { return nic_->cfg; }
    // One pipeline clock cycle, ps.
    uint64_t period() const { return nic_->period_ps; }
    uint64_t now_ps() const { return ctx_->time_stamp().value(); }

    // A driver: writes the items into `ch` in order, each no earlier than
    // its time (ps). Writes block while `ch` is full, as a producing block's
    // would.
    template <typename T>
    void drive(sim::Chan<T>& ch, std::vector<std::pair<uint64_t, T>> items) {
        auto q = std::make_shared<std::vector<std::pair<uint64_t, T>>>(std::move(items));
        thread("driver_" + ch.name(), [&ch, q] {
            for (auto& [at, v] : *q) {
                sim::wait_until(at);
                ch.write(std::move(v), nullptr);
            }
        });
    }
    template <typename T>
    void drive(sim::Chan<T>& ch, uint64_t at_ps, T item) {
        std::vector<std::pair<uint64_t, T>> v;
        v.emplace_back(at_ps, std::move(item));
        drive(ch, std::move(v));
    }

    // A monitor: from `from_ps` on, takes every item out of `ch` as soon as
    // it is there, recording when. Until `from_ps` nothing is taken, so the
    // channel fills and its producer stalls.
    template <typename T>
    const std::vector<Seen<T>>& watch(sim::Chan<T>& ch, uint64_t from_ps = 0) {
        auto seen = std::make_shared<std::vector<Seen<T>>>();
        keep_.push_back(seen);
        thread("monitor_" + ch.name(), [&ch, from_ps, out = seen.get()] {
            sim::wait_until(from_ps);
            for (;;) {
                T v = ch.read();
                out->push_back(Seen<T>{sim::now_ps(), std::move(v)});
            }
        });
        return *seen;
    }

    // Any other test process (it may wait, push, and record).
    void thread(const std::string& name, std::function<void()> body) {
        if (started_) throw std::logic_error("BlockBench: add test processes before the first run()");
        procs_.push_back(
            std::make_unique<TbProcess>(sc_core::sc_gen_unique_name(name.c_str()), std::move(body)));
    }

    // Simulates until no process has anything left to do; returns the
    // simulated time then, ps.
    uint64_t run() {
        started_ = true;
        sc_core::sc_start();
        return now_ps();
    }

private:
    sim::SimGuard guard_;  // first: held for the bench's life, released last
    sc_core::sc_simcontext* ctx_ = nullptr;
    std::unique_ptr<Nic> nic_;
    std::unique_ptr<Block> dut_;
    std::vector<std::unique_ptr<TbProcess>> procs_;
    std::vector<std::shared_ptr<void>> keep_;
    bool started_ = false;
};

// ---- stimulus ----

// A RoCE v2 frame (IPv4, lengths, checksum and ICRC filled in) of `opcode`
// to QP `dqpn` with `payload` bytes (RETH as the opcode needs it); `edit`
// may change the headers before encoding, to make a malformed one.
inline std::vector<uint8_t> roce_frame(uint8_t opcode, uint32_t dqpn, uint32_t psn, size_t payload,
                                       const std::function<void(roce::Packet&)>& edit = {}) {
    roce::Packet p;
    p.eth.dst = {0x02, 0, 0, 0, 0, 1};
    p.eth.src = {0x02, 0, 0, 0, 0, 2};
    p.ip4.src = 0x0A000001;
    p.ip4.dst = 0x0A000002;
    p.udp.sport = 0xC000;
    p.hdr.bth.opcode = opcode;
    p.hdr.bth.dqpn = dqpn;
    p.hdr.bth.psn = psn;
    p.hdr.reth.va = 0x10000;
    p.hdr.reth.rkey = 0x1234;
    p.hdr.reth.dma_len = uint32_t(payload);
    std::vector<uint8_t> data(payload);
    for (size_t i = 0; i < payload; ++i) data[i] = uint8_t(i * 7 + 1);
    p.payload = data.data();
    p.payload_len = payload;
    if (edit) edit(p);
    std::vector<uint8_t> f;
    if (!roce::encode_frame(p, f)) throw std::invalid_argument("roce_frame: opcode and payload do not fit");
    return f;
}

// A frame of `len` bytes that only the timing blocks see (MAC, TX build
// without the RTL ICRC engine): its contents do not matter.
inline std::vector<uint8_t> bytes_frame(size_t len, uint8_t seed = 0) {
    std::vector<uint8_t> f(len);
    for (size_t i = 0; i < len; ++i) f[i] = uint8_t(seed + i);
    return f;
}

// A received frame as MAC RX hands it on: a Txn ready at `ready_ps`.
inline TxnPtr rx_txn(std::vector<uint8_t> frame, uint64_t ready_ps = 0) {
    auto t = std::make_shared<Txn>();
    t->kind = Txn::Kind::Rx;
    t->t_in = ready_ps;
    t->ready_ps = ready_ps;
    t->frame = std::move(frame);
    return t;
}

}  // namespace simnic::model::tb
