// The cycle-level pipeline of a `model` device (issue 5, docs/model.md).
//
// A SystemC model of the NIC's blocks: doorbell and WQE fetch, requester,
// TX build with ICRC insert, MAC TX and RX, parser, ICRC check, the RX
// transport stage (responder and completer), CQE and EQE writers, the QPC,
// MPT and MTT caches, the DMA engine with its PCIe link, and the management
// core that runs firmware commands. It owns no protocol: it is the soft
// engine's timing model (simnic/soft_engine/timing.h), so the stages call the
// engine's functional datapath at the simulated instant work reaches them,
// and play what it recorded through the blocks.
//
// Time. Simulated time advances only while the pipeline has work: an input
// that reaches an idle pipeline is stamped with the current simulated time,
// so an idle device costs no host CPU and an idle gap costs no simulated
// time. run() simulates until the pipeline is idle again, as fast as the
// host computes; frames leave through Datapath::wire_tx when they leave MAC
// TX in simulated time. Protocol timers stay in wall-clock time (the
// datapath's), so they never fire early against a slow real peer, and no
// input ever waits for simulated time to catch up with the wall clock; but
// a fabric's device, whose every peer shares its simulated time, keeps
// protocol time (the QPs' timers, DCQCN's clock) in simulated time
// (simulated_protocol_time()).
//
// Every method takes the process-wide SystemC lock: SystemC has one kernel
// per simulation context, and each Pipeline has its own context, so several
// model devices can live in one daemon; they simulate one at a time. The
// devices of a fabric share one context instead (SharedWire, below).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "simnic/model/config.h"
#include "simnic/soft_engine/timing.h"

namespace sc_core {
class sc_simcontext;
}

namespace simnic::model {

// The engine's side of the plug, as the model's blocks name it.
using soft_engine::Datapath;
using soft_engine::DmaPurpose;
using soft_engine::Doorbell;
using soft_engine::Op;
using soft_engine::OpRecord;
using soft_engine::TxFrameRec;

// A statistic of the model, in simulated time.
struct ModelStat {
    std::string name;
    double value = 0;
    std::string unit;  // "", "cycles", "ns", "%", "Gb/s", "B", ...
};

// A device in a fabric (rtl_model/model/fabric): its pipeline is built in a
// simulation context it shares with other devices and a switch, so they all
// live in one simulated time, and its wire ends are the fabric's instead of
// Datapath::wire_tx and the engine's port. The only change to the pipeline:
// MAC TX hands each frame to `tx` (at the simulated time its last bit
// leaves) instead of Datapath::wire_tx, and the context is the owner's, who
// elaborates and runs it (Fabric::start, Fabric::run). Frames arrive through
// rx_frame(), called by the fabric inside the simulation at the time their
// first bit reaches MAC RX.
struct SharedWire {
    sc_core::sc_simcontext* ctx = nullptr;  // the fabric's; outlives the pipeline
    std::function<void(std::vector<uint8_t>&& frame)> tx;
};

class Pipeline final : public soft_engine::TimingModel {
public:
    // `loopback`: MAC TX feeds MAC RX (no wire; `simnic bench`).
    static std::unique_ptr<Pipeline> create(const std::string& name, const ModelConfig& cfg,
                                            Datapath& datapath, bool loopback, std::string& err);
    // A TimingFactory for a soft engine: the pipeline of device `name`,
    // looped back when the engine is standalone. `*made` (if given) is set to
    // the pipeline, for its statistics and waveforms; it lives as long as
    // the engine.
    static soft_engine::TimingFactory factory(const std::string& name, const ModelConfig& cfg,
                                              Pipeline** made = nullptr);
    // A device of a fabric (SharedWire): the blocks are built in `wire.ctx`
    // under a module named `name`, and not elaborated: the context's owner
    // starts it once every device and switch is built (SystemC builds no
    // module after elaboration). run() then simulates the whole fabric
    // until it is idle, run_quantum() the whole fabric for one quantum (so
    // that the engines of the other devices take their doorbells in
    // between: the daemon's fabrics, soft_engine::EngineGroup).
    static std::unique_ptr<Pipeline> create_shared(const std::string& name, const ModelConfig& cfg,
                                                   Datapath& datapath, const SharedWire& wire, std::string& err);
    // The TimingFactory of such a device, for its soft engine (which must be
    // standalone: no port, the fabric is its wire; and no thread unless it
    // is in the fabric's EngineGroup).
    static soft_engine::TimingFactory shared_factory(const std::string& name, const ModelConfig& cfg,
                                                     SharedWire wire, Pipeline** made = nullptr);
    ~Pipeline() override;
    Pipeline(const Pipeline&) = delete;
    Pipeline& operator=(const Pipeline&) = delete;

    // soft_engine::TimingModel. Inputs are stamped with the current
    // simulated time; the retransmit queue forgets what a reset QP holds;
    // doorbells of a destroyed object are dropped at the doorbell block.
    void doorbell(const Doorbell& db) override;
    void rx_frame(const uint8_t* frame, size_t len) override;
    void rx_frame(std::vector<uint8_t>&& frame) override;
    // A fabric's device only (its wire is the fabric; any other device sends
    // QP1's MADs to its port): the frame joins TX build's input now and
    // leaves MAC TX for the fabric like the datapath's frames.
    bool tx_frame(const uint8_t* frame, size_t len) override;
    void timer(uint32_t qpn, uint8_t timer) override;
    void fw_command(uint16_t opcode) override;
    void qp_reset(uint32_t qpn) override;
    void forget_doorbells(uint8_t kind, uint32_t num) override;
    // Protocol time (timing.h): simulated on a fabric's device (a device
    // built by create_shared), host time on every other. Simulated, the
    // timers are kept by the TimerBlock and expire into the completer; a
    // QP's timers are dropped by qp_reset().
    bool simulated_protocol_time() const override;
    // The applications' completion events go out at the CQE writer's
    // interrupt (behind the CQE, held by the CQ's moderation, cq.msix_ns
    // later): Datapath::cq_event.
    bool delivers_cq_events() const override { return true; }
    uint64_t now_ns() const override;
    void arm_timer(uint32_t qpn, uint8_t timer, uint64_t deadline_ns) override;
    void cancel_timer(uint32_t qpn, uint8_t timer) override;
    // Simulates until no block has work. Returns simulated cycles advanced.
    uint64_t run() override;
    bool run_unless_lagging(const std::function<bool()>& lagging) override;
    // Simulates in quanta of wire.quantum_cycles until idle, or until the
    // end of a quantum in which frames left for the wire (until idle when 0,
    // or without a wire); true if work is left. docs/model.md, "Simulated
    // time and wall-clock time".
    bool run_quantum() override;
    // A fabric's device: the time to the fabric's next event when it is
    // more than a quantum away (timing.h); 0 on any other device.
    uint64_t quiet_gap_ns() const override;
    // Own time: run() to idle. A fabric's device: its whole fabric is
    // simulated until this device's doorbell block has taken every doorbell
    // rung so far, not to idle, which never comes while a QP's protocol
    // timer keeps re-arming in simulated time (a requester waiting out RNR
    // NAKs with rnr_retry 7, or resending to a peer that is gone with
    // retry_cnt 7, which rxe also takes as for ever; DCQCN's timers); at
    // most kTakeDoorbellsPs of simulated time.
    bool take_doorbells() override;
    static constexpr uint64_t kTakeDoorbellsPs = 1'000'000'000;  // 1 ms
    // Simulates at most `cycles` more (the bench uses run()).
    uint64_t cycle() const;

    // Called (inside the simulation, at the simulated time the CQE becomes
    // visible in host memory) after each CQE write; the bench's host model
    // reacts to completions here and may call doorbell().
    void on_cqe(std::function<void(uint32_t cqn)> f);
    // Called when a CQ's MSI-X interrupt has woken the application
    // (cq.msix_ns, then cq.poll_ns for its poll), in simulated time.
    void on_cq_event(std::function<void(uint32_t cqn)> f);

    // Statistics: simulated cycles and time, per-block utilisation and
    // stalls, cache hit rates, DMA bytes and latency, message latency
    // (min/median/p99) and throughput.
    std::vector<ModelStat> stats() const;
    // Resets every counter and histogram (not the caches' contents).
    void reset_stats();

    // Waveform of the blocks' handshakes from cycle `from` (none: now) for
    // `cycles` cycles, into `path` ("vcd" or "fst"): the signals are listed
    // in docs/model.md (Waveforms). A `from` before the current cycle is
    // refused: simulated time does not go back. The file is complete when
    // the window has been simulated or at trace_stop()/destruction.
    bool trace(const std::string& path, const std::string& format, std::optional<uint64_t> from, uint64_t cycles,
               std::string& err);
    // "idle", "armed FILE from N", "recording FILE until N", "done FILE"
    std::string trace_state() const;
    void trace_stop();

    struct Impl;

private:
    static std::unique_ptr<Pipeline> build(const std::string& name, const ModelConfig& cfg, Datapath& datapath,
                                           bool loopback, const SharedWire* shared, std::string& err);
    explicit Pipeline(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
};

}  // namespace simnic::model
