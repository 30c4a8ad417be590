// The cycle-level pipeline of a `model` device (issue 5, docs/model.md).
//
// A SystemC model of the NIC's blocks: doorbell and WQE fetch, requester,
// TX build with ICRC insert, MAC TX and RX, parser, ICRC check, the RX
// transport stage (responder and completer), CQE and EQE writers, the QPC,
// MPT and MTT caches, the DMA engine with its PCIe link, and the management
// core that runs firmware commands. It owns no protocol: the stages call the
// functional datapath through Backend at the simulated instant work reaches
// them, and play what it recorded (ops.h) through the blocks.
//
// Time. Simulated time advances only while the pipeline has work: an input
// that reaches an idle pipeline is stamped with the current simulated time,
// so an idle device costs no host CPU and an idle gap costs no simulated
// time. run() simulates until the pipeline is idle again, as fast as the
// host computes; frames leave through Backend::wire_tx when they leave MAC
// TX in simulated time. Protocol timers stay in wall-clock time (the
// datapath's), so they never fire early against a slow real peer, and no
// input ever waits for simulated time to catch up with the wall clock.
//
// Every method takes the process-wide SystemC lock: SystemC has one kernel
// per simulation context, and each Pipeline has its own context, so several
// model devices can live in one daemon; they simulate one at a time.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "simnic/model/config.h"
#include "simnic/model/ops.h"

namespace simnic::model {

// A doorbell as the doorbell FIFO delivers it (hw-spec 3.4).
struct Doorbell {
    uint16_t ctx = 0;
    uint8_t kind = 0;  // hw::DbKind
    uint32_t num = 0;
    uint32_t index = 0;
    uint32_t cq_cmd = 0;
};

// The functional datapath, as the stages call it. Each exec_* runs the
// protocol for one input and records what it did into `rec`.
class Backend {
public:
    virtual ~Backend() = default;
    virtual void exec_doorbell(const Doorbell& db, OpRecord& rec) = 0;
    // An Ethernet frame that passed the parser and the ICRC check.
    virtual void exec_rx(const uint8_t* frame, size_t len, OpRecord& rec) = 0;
    virtual void exec_timer(uint32_t qpn, uint8_t timer, OpRecord& rec) = 0;
    // A frame leaves MAC TX (the wire backend sends it).
    virtual void wire_tx(const uint8_t* frame, size_t len) = 0;
};

// A statistic of the model, in simulated time.
struct ModelStat {
    std::string name;
    double value = 0;
    std::string unit;  // "", "cycles", "ns", "%", "Gb/s", "B", ...
};

class Pipeline {
public:
    // `loopback`: MAC TX feeds MAC RX (no wire; `simnic bench`).
    static std::unique_ptr<Pipeline> create(const std::string& name, const ModelConfig& cfg,
                                            Backend& backend, bool loopback, std::string& err);
    ~Pipeline();
    Pipeline(const Pipeline&) = delete;
    Pipeline& operator=(const Pipeline&) = delete;

    // Inputs, stamped with the current simulated time.
    void doorbell(const Doorbell& db);
    void rx_frame(const uint8_t* frame, size_t len);
    void timer(uint32_t qpn, uint8_t timer);
    void fw_command(uint16_t opcode);
    // The QP was reset, moved to error or destroyed: what it holds in the
    // retransmit queue will never be acknowledged.
    void qp_reset(uint32_t qpn);
    // The CQ, SRQ or QP (hw::DbKind `kind`, number `num`) is being
    // destroyed: doorbells rung for it and not yet at the doorbell block are
    // dropped there, so that they never reach an object that reuses the
    // number.
    void forget_doorbells(uint8_t kind, uint32_t num);

    // Simulates until no block has work. Returns simulated cycles advanced.
    uint64_t run();
    // Simulates at most `cycles` more (the bench uses run()).
    uint64_t cycle() const;

    // Called (inside the simulation, at the simulated time the CQE becomes
    // visible in host memory) after each CQE write; the bench's host model
    // reacts to completions here and may call doorbell().
    void on_cqe(std::function<void(uint32_t cqn)> f);

    // Statistics: simulated cycles and time, per-block utilisation and
    // stalls, cache hit rates, DMA bytes and latency, message latency
    // (min/median/p99) and throughput.
    std::vector<ModelStat> stats() const;
    // Resets every counter and histogram (not the caches' contents).
    void reset_stats();

    // Waveform of the blocks' handshakes from cycle `from` (0: now) for
    // `cycles` cycles, into `path` ("vcd" or "fst"). The file is complete
    // when the window has been simulated or at trace_stop()/destruction.
    bool trace(const std::string& path, const std::string& format, uint64_t from, uint64_t cycles,
               std::string& err);
    // "idle", "armed FILE from N", "recording FILE until N", "done FILE"
    std::string trace_state() const;
    void trace_stop();

    struct Impl;

private:
    explicit Pipeline(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
};

}  // namespace simnic::model
