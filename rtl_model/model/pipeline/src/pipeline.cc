// The pipeline's top: one SystemC simulation context per device, its blocks,
// its inputs, run(), statistics and the waveform window.
#include "simnic/model/pipeline.h"

#include <stdlib.h>

#include <algorithm>
#include <cmath>

#include "blocks.h"
#include "simnic/base/clock.h"
#include "simnic/hw/layout.h"
#include "sim_context.h"

#include "icrc_engine_rtl.h"
#include "tx_build_rtl.h"
#ifdef SIMNIC_HAVE_RTL_PARSER
#include "roce_parser_rtl.h"
#endif

// libsystemc calls sc_main from its own main(); simnic's programs have their
// own main, so this definition only satisfies the link.
int sc_main(int, char**) { return 0; }

namespace simnic::model {

// Every use of this device's SystemC context, from any thread (sim_context.h).
using sim::SimGuard;

namespace {

// "TOO_SHORT" -> "too_short" (statistic names).
std::string lower(const char* s) {
    std::string r(s);
    for (char& c : r)
        if (c >= 'A' && c <= 'Z') c = char(c - 'A' + 'a');
    return r;
}

}  // namespace

struct Pipeline::Impl {
    std::string name;
    sc_core::sc_simcontext* ctx = nullptr;
    bool owns_ctx = true;  // false for a fabric's device (SharedWire)
    std::unique_ptr<Nic> nic;
    std::vector<std::unique_ptr<sc_core::sc_module>> blocks;
    std::unique_ptr<sc_core::sc_module> top;  // a fabric's device: the blocks' parent
    uint64_t sim_wall_ns = 0, sim_ps_run = 0;  // for the simulation speed
    uint64_t quanta = 0;                       // quanta simulated by run_quantum() since the last reset
    std::string trace_path, trace_fmt;
    uint64_t trace_from_cycle = 0, trace_to_cycle = 0;
    enum class TraceState { Idle, Armed, Recording, Done } trace_state = TraceState::Idle;

    uint64_t now_ps() const { return ctx->time_stamp().value(); }

    // One stretch of simulation (run, run_quantum, take_doorbells), counted
    // into sim.speed when it ends: the simulated and the wall time it took.
    struct Stretch {
        Impl& m;
        const uint64_t t0 = m.now_ps(), w0 = base::mono_ns();
        ~Stretch() {
            m.sim_wall_ns += base::mono_ns() - w0;
            m.sim_ps_run += m.now_ps() - t0;
        }
    };

    void trace_close() {
        nic->wave_undeclare();
        if (auto w = nic->tap.finish(now_ps())) {
            std::string err;
            w->close(err);
        }
        trace_state = TraceState::Done;
    }
    void trace_update() {
        if (trace_state == TraceState::Idle || trace_state == TraceState::Done) return;
        const uint64_t c = now_ps() / nic->period_ps;
        if (trace_state == TraceState::Armed && c >= trace_from_cycle) trace_state = TraceState::Recording;
        if (c >= trace_to_cycle) trace_close();
    }
    // run_quantum's and run_unless_lagging's stretches (counted in `quanta`
    // when `count`).
    bool run_quanta(bool count, const std::function<bool(bool sent)>& stop);
};

namespace {

// A device's blocks under one module named after it: in a fabric's shared
// context, several devices' blocks ("doorbell", "mac_tx", ...) would
// otherwise clash by name. Built in the constructor so that SystemC makes
// the blocks its children.
struct DeviceTop : sc_core::sc_module {
    DeviceTop(sc_core::sc_module_name n, const std::function<void()>& build) : sc_core::sc_module(n) { build(); }
};

}  // namespace

std::unique_ptr<Pipeline> Pipeline::create(const std::string& name, const ModelConfig& cfg, Datapath& datapath,
                                           bool loopback, std::string& err) {
    return build(name, cfg, datapath, loopback, nullptr, err);
}

std::unique_ptr<Pipeline> Pipeline::create_shared(const std::string& name, const ModelConfig& cfg,
                                                  Datapath& datapath, const SharedWire& wire, std::string& err) {
    if (!wire.ctx || !wire.tx) {
        err = "a fabric device needs the fabric's context and wire";
        return nullptr;
    }
    return build(name, cfg, datapath, false, &wire, err);
}

std::unique_ptr<Pipeline> Pipeline::build(const std::string& name, const ModelConfig& cfg, Datapath& datapath,
                                          bool loopback, const SharedWire* shared, std::string& err) {
    if (!validate_config(cfg, err)) return nullptr;
#ifndef SIMNIC_HAVE_RTL_PARSER
    if (is_rtl(cfg.parser.impl)) {
        err = std::string("parser.impl = \"") + to_string(cfg.parser.impl) + "\": this build has no Verilated parser";
        return nullptr;
    }
#endif
    // A Verilated block moves the beats it was built for: in a datapath of
    // another width its cycles would be another design's. The built-in
    // designs are verilated at 512 with simnic, so they are refused rather
    // than silently rescaled; one's own (rtl_sources) is built at the
    // device's width (nic.cc), as is a built-in design named there.
    auto width_ok = [&](const char* block, BlockImpl impl, const char* what, size_t rtl_bytes) {
        if (cfg.mac.width_bytes == rtl_bytes) return true;
        const std::string b = block, w = std::to_string(cfg.mac.width_bytes * 8);
        err = b + ".impl = \"" + to_string(impl) + "\": the Verilated " + what + " moves " +
              std::to_string(rtl_bytes) + " bytes per cycle (DataWidth " + std::to_string(rtl_bytes * 8) +
              "), the datapath mac.width_bytes = " + std::to_string(cfg.mac.width_bytes) + "; set mac.width_bytes = " +
              std::to_string(rtl_bytes) + " or name the RTL in " + b + ".rtl_sources and " + b +
              ".rtl_top to build it at DataWidth " + w + " (docs/model.md, Your own RTL)";
        return false;
    };
    if (cfg.icrc.impl == BlockImpl::rtl && cfg.icrc.rtl_sources.empty() &&
        !width_ok("icrc", cfg.icrc.impl, "ICRC engine", rtl::IcrcEngineRtl::kBeatBytes))
        return nullptr;
    if (cfg.tx_build.impl == BlockImpl::rtl && cfg.tx_build.rtl_sources.empty() &&
        !width_ok("tx_build", cfg.tx_build.impl, "TX header builder", rtl::TxBuildRtl::kBeatBytes))
        return nullptr;
#ifdef SIMNIC_HAVE_RTL_PARSER
    const bool own_parser = cfg.parser.impl == BlockImpl::rtl && !cfg.parser.rtl_sources.empty();
    if (is_rtl(cfg.parser.impl) && !own_parser &&
        !width_ok("parser", cfg.parser.impl, "parser", rtl::RoceParserRtl::kBeatBytes))
        return nullptr;
#endif
    // SystemC prints a banner on its first use unless told not to.
    setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 0);
    auto impl = std::make_unique<Impl>();
    impl->name = name;
    SimGuard g(nullptr);
    impl->owns_ctx = shared == nullptr;
    impl->ctx = shared ? shared->ctx : new sc_core::sc_simcontext;
    sc_core::sc_curr_simcontext = impl->ctx;
    try {
        impl->nic = std::make_unique<Nic>(cfg, datapath, loopback);
    } catch (const std::exception& e) {
        err = e.what();  // one's own RTL that could not be built or loaded
        return nullptr;
    }
    Nic& n = *impl->nic;
    if (shared) n.wire_sink = shared->tx;
    auto& b = impl->blocks;
    auto blocks = [&] {
        b.push_back(std::make_unique<DoorbellBlock>("doorbell", n));
        b.push_back(std::make_unique<RequesterBlock>("requester", n));
        b.push_back(std::make_unique<TxBuildBlock>("tx_build", n));
        b.push_back(std::make_unique<MacTxBlock>("mac_tx", n));
        b.push_back(std::make_unique<MacRxBlock>("mac_rx", n));
        b.push_back(std::make_unique<ParserBlock>("parser", n));
        b.push_back(std::make_unique<IcrcCheckBlock>("icrc_check", n));
        b.push_back(std::make_unique<RxTransportBlock>("rx_transport", n));
        b.push_back(std::make_unique<CqeWriterBlock>("cqe_writer", n));
        b.push_back(std::make_unique<EqeWriterBlock>("eqe_writer", n));
        b.push_back(std::make_unique<MgmtCoreBlock>("mgmt_core", n));
        b.push_back(std::make_unique<TimerBlock>("timers", n));
    };
    if (shared) {
        impl->top = std::make_unique<DeviceTop>(name.c_str(), blocks);
        // The fabric elaborates its context once everything is built.
        return std::unique_ptr<Pipeline>(new Pipeline(std::move(impl)));
    }
    blocks();
    // Elaborate and start every thread (they block on their inputs). That
    // first step has no timed activity, which SystemC would warn about.
    sc_core::sc_report_handler::set_actions(sc_core::SC_ID_NO_SC_START_ACTIVITY_, sc_core::SC_DO_NOTHING);
    sc_core::sc_start(sc_core::SC_ZERO_TIME);
    return std::unique_ptr<Pipeline>(new Pipeline(std::move(impl)));
}

soft_engine::TimingFactory Pipeline::factory(const std::string& name, const ModelConfig& cfg, Pipeline** made) {
    // The config is copied: the engine may build its model after the
    // caller's copy is gone.
    return [name, cfg, made](Datapath& datapath, bool standalone,
                             std::string& err) -> std::unique_ptr<soft_engine::TimingModel> {
        std::unique_ptr<Pipeline> p = create(name, cfg, datapath, standalone, err);
        if (made) *made = p.get();
        return p;
    };
}

soft_engine::TimingFactory Pipeline::shared_factory(const std::string& name, const ModelConfig& cfg, SharedWire wire,
                                                    Pipeline** made) {
    return [name, cfg, wire, made](Datapath& datapath, bool, std::string& err)
               -> std::unique_ptr<soft_engine::TimingModel> {
        std::unique_ptr<Pipeline> p = create_shared(name, cfg, datapath, wire, err);
        if (made) *made = p.get();
        return p;
    };
}

Pipeline::Pipeline(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Pipeline::~Pipeline() {
    SimGuard g(impl_->ctx);
    if (impl_->trace_state == Impl::TraceState::Armed || impl_->trace_state == Impl::TraceState::Recording)
        impl_->trace_close();
    impl_->blocks.clear();
    impl_->top.reset();  // after its children
    impl_->nic.reset();
    if (impl_->owns_ctx) delete impl_->ctx;
}

void Pipeline::doorbell(const Doorbell& db) {
    SimGuard g(impl_->ctx);
    TxnPtr t = impl_->nic->txns.take();
    t->kind = Txn::Kind::Doorbell;
    t->t_in = impl_->now_ps();
    t->db = db;
    t->qpn = db.num;
    auto ep = impl_->nic->db_epoch.find(Nic::db_key(db.kind, db.num));
    if (ep != impl_->nic->db_epoch.end()) t->db_epoch = ep->second;
    // A receive queue's producer index is a register that the RX path reads
    // when a packet comes: a frame arriving after the doorbell finds the
    // WQEs it announced however long the doorbell block takes to get to it
    // (rxe's post_recv is as immediate). Taken in the block instead, a UD or
    // UC SEND that arrived while the block worked through other doorbells
    // met an empty RQ and was dropped (found by simnic-workload: a receiver
    // posts, tells its peer over TCP, the peer's first SENDs vanish). The
    // block still spends the doorbell's cycles and QPC lookup.
    // A CQ's consumer index is such a register too, read by the CQE writer:
    // taken in the block, a CQ doorbell that returned entries could be
    // overtaken by a later RQ doorbell whose flush CQE then found the CQ
    // still full and was lost (hw-spec 7.2), where rxe's CQE writer reads
    // the consumer index the application has just moved.
    // An arm (cq_cmd 1 or 2) is no register but a command the doorbell
    // block carries out, mmio_ns and its cycle later, as hardware does: the
    // consumer index is taken here, the arm goes on alone (arm-only, with
    // the consumer index the CQ has when the block gets to it, so the block
    // never puts back an older one). A CQE written in between fires the
    // arm at once (its cq_seen, hw-spec 7.3): no wake-up is lost.
    if (db.kind == uint8_t(hw::DbKind::Rq) || db.kind == uint8_t(hw::DbKind::Srq)) {
        impl_->nic->be.exec_doorbell(t->db, t->rec);
        t->executed = true;
    } else if (db.kind == uint8_t(hw::DbKind::Cq)) {
        Doorbell ci_only = db;
        ci_only.cq_cmd = 0;
        impl_->nic->be.exec_doorbell(ci_only, t->rec);
        impl_->nic->cq_ci_rung[db.num] = db.index;
        t->executed = db.cq_cmd == 0;
    }
    ++impl_->nic->db_in_flight;
    impl_->nic->db_in.push_input(t);
}

void Pipeline::forget_doorbells(uint8_t kind, uint32_t num) {
    SimGuard g(impl_->ctx);
    ++impl_->nic->db_epoch[Nic::db_key(kind, num)];
    if (kind == uint8_t(hw::DbKind::Cq)) {
        impl_->nic->cq_ci_rung.erase(num);
        if (impl_->nic->forget_cq_event) impl_->nic->forget_cq_event(num);
    }
}

void Pipeline::rx_frame(const uint8_t* frame, size_t len) {
    rx_frame(std::vector<uint8_t>(frame, frame + len));
}

void Pipeline::rx_frame(std::vector<uint8_t>&& frame) {
    SimGuard g(impl_->ctx);
    impl_->nic->wire_in.push_input(std::move(frame));
}

bool Pipeline::tx_frame(const uint8_t* frame, size_t len) {
    if (impl_->owns_ctx) return false;  // not a fabric's device: it has a port
    SimGuard g(impl_->ctx);
    FrameTok f;
    f.f.bytes.assign(frame, frame + len);
    const sim::Probe bth = probe_frame(f.f.bytes);
    f.f.qpn = bth.qpn;
    f.f.psn = bth.psn;
    f.f.opcode = uint8_t(bth.opcode);
    f.ready_ps = impl_->now_ps();  // all there: the CM built it in host memory
    impl_->nic->qp1_to_txb.push_input(std::move(f));
    return true;
}

void Pipeline::timer(uint32_t qpn, uint8_t timer) {
    SimGuard g(impl_->ctx);
    TxnPtr t = impl_->nic->txns.take();
    t->kind = Txn::Kind::Timer;
    t->t_in = impl_->now_ps();
    t->qpn = qpn;
    t->timer = timer;
    impl_->nic->timer_in.push_input(t);
}

void Pipeline::fw_command(uint16_t opcode) {
    SimGuard g(impl_->ctx);
    impl_->nic->fw_in.push_input(opcode);
}

void Pipeline::qp_reset(uint32_t qpn) {
    SimGuard g(impl_->ctx);
    impl_->nic->rtq_drop(qpn);
    // Its protocol timers (simulated time) will not be wanted.
    impl_->nic->timer_drop_qp(qpn);
    // Its receive ring starts over: nothing prefetched is valid.
    impl_->nic->rq_prefetched.erase(qpn);
    impl_->nic->rq_rung.erase(qpn);
    impl_->nic->rq_stride.erase(qpn);
    // Its send WQEs will never complete with a latency to sample.
    impl_->nic->wqe_start.drop_qp(qpn);
}

// A fabric's device: every peer lives in this simulated time (the fabric's
// context), so protocol time can be simulated time too. A device with a
// real wire or none keeps host time (pipeline.h, "Time").
bool Pipeline::simulated_protocol_time() const { return !impl_->owns_ctx; }

uint64_t Pipeline::now_ns() const {
    SimGuard g(impl_->ctx);
    return impl_->now_ps() / 1000;
}

void Pipeline::arm_timer(uint32_t qpn, uint8_t timer, uint64_t deadline_ns) {
    SimGuard g(impl_->ctx);
    impl_->nic->timer_arm(qpn, timer, deadline_ns * 1000);
}

void Pipeline::cancel_timer(uint32_t qpn, uint8_t timer) {
    SimGuard g(impl_->ctx);
    impl_->nic->timer_cancel(qpn, timer);
}

uint64_t Pipeline::run() {
    SimGuard g(impl_->ctx);
    Impl& m = *impl_;
    const Impl::Stretch span{m};
    if (m.trace_state == Impl::TraceState::Armed || m.trace_state == Impl::TraceState::Recording) {
        // Stop at the end of the waveform window (or earlier, when idle) so
        // the file is closed on time.
        const uint64_t end = m.trace_to_cycle * m.nic->period_ps;
        if (end > m.now_ps())
            sc_core::sc_start(sc_core::sc_time(double(end - m.now_ps()), sc_core::SC_PS),
                              sc_core::SC_EXIT_ON_STARVATION);
        m.trace_update();
    }
    sc_core::sc_start();  // until no block has work
    m.trace_update();
    return (m.now_ps() - span.t0) / m.nic->period_ps;
}

// Quantum after quantum until the model is idle or `stop` says so after
// one (`sent`: frames left for the wire in it); true if work is left. A
// waveform window closes on time. No input enters between the quanta, so
// the events are those one stretch to idle would run, in the same order.
bool Pipeline::Impl::run_quanta(bool count, const std::function<bool(bool sent)>& stop) {
    SimGuard g(ctx);
    const Stretch span{*this};
    const uint64_t q = nic->cfg.wire.quantum_cycles;
    while (sc_core::sc_pending_activity(ctx)) {
        const uint64_t sent = nic->wire_frames;
        const uint64_t now = now_ps();
        uint64_t d = q * nic->period_ps;
        // Nothing happens before the next event: go there. (A quantum that
        // ends before it would not move the clock: SC_EXIT_ON_STARVATION
        // stays at the last event.)
        d = std::max<uint64_t>(d, sc_core::sc_time_to_pending_activity(ctx).value());
        sc_core::sc_starvation_policy policy = sc_core::SC_EXIT_ON_STARVATION;
        if (trace_state == TraceState::Armed || trace_state == TraceState::Recording) {
            const uint64_t to = trace_to_cycle * nic->period_ps;
            if (to > now && to - now < d) {
                d = to - now;
                policy = sc_core::SC_RUN_TO_TIME;
            }
        }
        sc_core::sc_start(sc_core::sc_time(double(d), sc_core::SC_PS), policy);
        trace_update();
        if (count) ++quanta;
        if (stop(nic->wire_frames != sent)) break;
    }
    return sc_core::sc_pending_activity(ctx);
}

bool Pipeline::run_unless_lagging(const std::function<bool()>& lagging) {
    Impl& m = *impl_;
    // A fabric's shared time, a waveform window (run() closes it) and the
    // loopback shortcut (no port to lag) run as run() does.
    if (m.nic->cfg.wire.quantum_cycles == 0 || m.nic->loopback || !m.owns_ctx ||
        m.trace_state == Impl::TraceState::Armed || m.trace_state == Impl::TraceState::Recording) {
        run();
        return false;
    }
    return m.run_quanta(false, [&](bool sent) { return sent && lagging(); });
}

bool Pipeline::run_quantum() {
    Impl& m = *impl_;
    if (m.nic->cfg.wire.quantum_cycles == 0 || m.nic->loopback) {
        run();
        return false;
    }
    // Until frames left for the wire: those may come back (the device's
    // own, through the kernel) or be answered, so the engine takes its turn
    // at the port first. Work that never reaches the wire (firmware
    // commands queued up, a long local burst) still runs to the end at
    // once, as run() does. A fabric's device: the whole fabric advanced one
    // quantum. Its wire is inside the simulation, but the applications of
    // the other devices ring doorbells meanwhile: their engines take them
    // before the next quantum (soft_engine's EngineGroup), so that senders
    // on several devices overlap in simulated time as they do in wall time.
    return m.run_quanta(true, [&](bool sent) { return sent || !m.owns_ctx; });
}

uint64_t Pipeline::quiet_gap_ns() const {
    const Impl& m = *impl_;
    if (m.owns_ctx) return 0;
    SimGuard g(m.ctx);
    if (!sc_core::sc_pending_activity(m.ctx)) return 0;
    const uint64_t to = sc_core::sc_time_to_pending_activity(m.ctx).value();  // ps
    return to > m.nic->cfg.wire.quantum_cycles * m.nic->period_ps ? to / 1000 : 0;
}

bool Pipeline::take_doorbells() {
    Impl& m = *impl_;
    if (m.owns_ctx) {
        run();
        return false;
    }
    SimGuard g(m.ctx);
    Nic& n = *m.nic;
    if (n.db_in_flight > 0) {
        const Impl::Stretch span{m};
        n.pause_when_doorbells_taken = true;
        sc_core::sc_start(sc_core::sc_time(double(kTakeDoorbellsPs), sc_core::SC_PS),
                          sc_core::SC_EXIT_ON_STARVATION);
        n.pause_when_doorbells_taken = false;
        m.trace_update();
    }
    return sc_core::sc_pending_activity(m.ctx);
}

uint64_t Pipeline::cycle() const { return impl_->now_ps() / impl_->nic->period_ps; }

void Pipeline::on_cqe(std::function<void(uint32_t)> f) {
    SimGuard g(impl_->ctx);
    impl_->nic->on_cqe = std::move(f);
}

void Pipeline::on_cq_event(std::function<void(uint32_t)> f) {
    SimGuard g(impl_->ctx);
    impl_->nic->on_cq_event = std::move(f);
}

void Pipeline::reset_stats() {
    SimGuard g(impl_->ctx);
    impl_->nic->reset_stats();
    impl_->sim_wall_ns = impl_->sim_ps_run = impl_->quanta = 0;
}

std::vector<ModelStat> Pipeline::stats() const {
    SimGuard g(impl_->ctx);
    const Impl& m = *impl_;
    const Nic& n = *m.nic;
    std::vector<ModelStat> s;
    const uint64_t now_abs = m.now_ps();
    // Every rate and utilisation is over the time since the last reset.
    const uint64_t now = now_abs - std::min(now_abs, n.stats_since_ps);
    s.push_back({"sim.cycles", double(now_abs / n.period_ps), "cycles"});
    s.push_back({"sim.time", double(now_abs) / 1000.0, "ns"});
    s.push_back({"sim.stats_cycles", double(now / n.period_ps), "cycles"});
    if (!n.loopback) {
        // A device with a wire: how often it looked at it (docs/model.md,
        // "Simulated time"), and how late a frame may cross it.
        s.push_back({"wire.quantum_cycles", double(n.cfg.wire.quantum_cycles), "cycles"});
        s.push_back({"wire.quanta", double(m.quanta), ""});
    }
    s.push_back({"sim.speed", m.sim_wall_ns ? double(m.sim_ps_run / n.period_ps) * 1e9 / double(m.sim_wall_ns) : 0,
                 "cycles/s"});
    for (int b = 0; b < Nic::kNumBlocks; ++b) {
        const sim::BlockStats& bs = n.blk[b];
        const std::string p = std::string("block.") + Nic::block_name(b);
        s.push_back({p + ".items", double(bs.items), ""});
        s.push_back({p + ".utilisation", now ? 100.0 * double(bs.busy_ps) / double(now) : 0, "%"});
        s.push_back({p + ".stall_cycles", double(bs.stall_ps / n.period_ps), "cycles"});
    }
    // The time items spend in each block (Nic::stage), where items passed.
    for (int b = 0; b < Nic::kNumBlocks; ++b) {
        const Histogram& h = n.stage[b];
        if (!h.count()) continue;
        const std::string p = std::string("stage.") + Nic::block_name(b);
        s.push_back({p + ".samples", double(h.count()), ""});
        s.push_back({p + ".min", double(h.min()) / 1000.0, "ns"});
        s.push_back({p + ".median", double(h.quantile(0.5)) / 1000.0, "ns"});
        s.push_back({p + ".p99", double(h.quantile(0.99)) / 1000.0, "ns"});
        s.push_back({p + ".max", double(h.max()) / 1000.0, "ns"});
    }
    // Items taken from each channel.
    const_cast<Nic&>(n).each_chan(
        [&](auto& c) { s.push_back({"chan." + c.name() + ".transfers", double(c.taken()), ""}); });
    auto cache = [&](const char* name, const TableCache& c) {
        const std::string p = std::string("cache.") + name;
        s.push_back({p + ".hits", double(c.stats().hits), ""});
        s.push_back({p + ".misses", double(c.stats().misses), ""});
        s.push_back({p + ".evictions", double(c.stats().evictions), ""});
        s.push_back({p + ".hit_rate", 100.0 * c.stats().hit_rate(), "%"});
    };
    cache("qpc", n.qpc);
    cache("mpt", n.mpt);
    cache("mtt", n.mtt);
    const DmaEngine::Stats& d = n.dma.stats();
    for (size_t i = 0; i < size_t(DmaPurpose::kCount); ++i) {
        const char* pn = to_string(DmaPurpose(i));
        if (d.read_bytes[i]) s.push_back({std::string("dma.read_bytes.") + pn, double(d.read_bytes[i]), "B"});
        if (d.write_bytes[i]) s.push_back({std::string("dma.write_bytes.") + pn, double(d.write_bytes[i]), "B"});
    }
    s.push_back({"dma.reads", double(d.reads), ""});
    s.push_back({"dma.writes", double(d.writes), ""});
    s.push_back({"dma.read_latency_avg", d.reads ? double(d.read_latency_sum_ps) / double(d.reads) / 1000.0 : 0, "ns"});
    s.push_back({"dma.read_latency_max", double(d.read_latency_max_ps) / 1000.0, "ns"});
    s.push_back({"dma.tag_wait", double(d.tag_wait_ps) / 1000.0, "ns"});
    s.push_back({"dma.link_in_utilisation", now ? 100.0 * double(d.in_busy_ps) / double(now) : 0, "%"});
    s.push_back({"dma.link_out_utilisation", now ? 100.0 * double(d.out_busy_ps) / double(now) : 0, "%"});
    s.push_back({"mac.tx_frames", double(n.tx_frames), ""});
    s.push_back({"mac.rx_frames", double(n.rx_frames), ""});
    s.push_back({"mac.tx_payload_bytes", double(n.tx_payload_bytes), "B"});
    if (n.wire_sink) {
        // A fabric's device: the PFC pauses its MAC TX honoured.
        s.push_back({"mac.pfc_rx_frames", double(n.pfc_rx_frames), ""});
        s.push_back({"mac.pfc_paused_frames", double(n.pfc_paused_frames), ""});
        s.push_back({"mac.pfc_paused_time", double(n.pfc_paused_ps) / 1000.0, "ns"});
    }
    const uint64_t span = n.last_tx_ps > n.first_tx_ps ? n.last_tx_ps - n.first_tx_ps : 0;
    s.push_back({"mac.tx_throughput", span ? double(n.tx_payload_bytes) * 8000.0 / double(span) : 0, "Gb/s"});
    s.push_back({"mac.tx_line_utilisation",
                 span ? 100.0 * double(n.tx_wire_bytes) * 8000.0 / double(span) / n.cfg.mac.line_rate_gbps : 0, "%"});
    s.push_back({"rx.drops_parser", double(n.rx_drops_parser), ""});
    for (size_t v = 0; v < n.rx_drops_parser_reason.size(); ++v)
        if (n.rx_drops_parser_reason[v])
            s.push_back({std::string("rx.drops_parser.") + lower(roce::kParseVerdictIds[v]),
                         double(n.rx_drops_parser_reason[v]), ""});
    s.push_back({"rx.drops_icrc", double(n.rx_drops_icrc), ""});
    if (n.place_before_verdict) {
        s.push_back({"rx.placed_before_verdict", double(n.rx_placed_before_verdict), ""});
        s.push_back({"rx.dropped_after_placement", double(n.rx_dropped_after_placement), ""});
    }
    // Rung and not yet carried out: what a held fabric's applications have
    // posted (simnic fabric hold), or a doorbell block behind its work.
    s.push_back({"doorbell.waiting", double(n.db_in_flight), ""});
    if (n.cfg.doorbell.wqe_by_mmio_bytes) s.push_back({"doorbell.wqe_by_mmio", double(n.wqe_by_mmio), ""});
    if (n.cfg.doorbell.recv_wqe_prefetch) {
        s.push_back({"doorbell.recv_wqe_prefetch_hits", double(n.recv_wqe_prefetch_hits), ""});
        s.push_back({"doorbell.recv_wqe_prefetch_misses", double(n.recv_wqe_prefetch_misses), ""});
    }
    if (n.icrc_rtl) {
        s.push_back({"rtl.icrc_mismatches", double(n.icrc_rtl_mismatch), ""});
        s.push_back({"rtl.icrc_rx_mismatches", double(n.icrc_rx_rtl_mismatch), ""});
        s.push_back({"rtl.icrc_latency", double(n.icrc_rtl_latency), "cycles"});
        s.push_back({"rtl.icrc_ready_low", double(n.icrc_rtl_ready_low), "cycles"});
    }
    if (n.tx_build_rtl) {
        s.push_back({"rtl.tx_build_mismatches", double(n.tx_build_rtl_mismatch), ""});
        s.push_back({"rtl.tx_build_skipped", double(n.tx_build_rtl_skipped), ""});
        s.push_back({"rtl.tx_build_latency", double(n.tx_build_rtl_latency), "cycles"});
        s.push_back({"rtl.tx_build_ready_low", double(n.tx_build_rtl_ready_low), "cycles"});
    }
    if (n.req_seg_rtl) {
        s.push_back({"rtl.req_seg_wqes", double(n.req_seg_rtl_wqes), ""});
        s.push_back({"rtl.req_seg_packets", double(n.req_seg_rtl_packets), ""});
        s.push_back({"rtl.req_seg_mismatches", double(n.req_seg_rtl_mismatch), ""});
        s.push_back({"rtl.req_seg_skipped", double(n.req_seg_rtl_skipped), ""});
        s.push_back({"rtl.req_seg_latency", double(n.req_seg_rtl_latency), "cycles"});
        s.push_back({"rtl.req_seg_ready_low", double(n.req_seg_rtl_ready_low), "cycles"});
    }
    if (n.parser_rtl) {
        s.push_back({"rtl.parser_mismatches", double(n.parser_rtl_mismatch), ""});
        s.push_back({"rtl.parser_latency", double(n.parser_rtl_latency), "cycles"});
        s.push_back({"rtl.parser_ready_low", double(n.parser_rtl_ready_low), "cycles"});
    }
    std::vector<uint64_t> lat = n.latency_ps.kept();
    s.push_back({"latency.messages", double(n.latency_ps.count()), ""});
    if (!lat.empty()) {
        std::sort(lat.begin(), lat.end());
        auto q = [&](double f) { return double(lat[std::min(lat.size() - 1, size_t(f * double(lat.size())))]) / 1000.0; };
        s.push_back({"latency.min", double(n.latency_ps.min()) / 1000.0, "ns"});
        s.push_back({"latency.median", q(0.5), "ns"});
        s.push_back({"latency.p99", q(0.99), "ns"});
        s.push_back({"latency.max", double(n.latency_ps.max()) / 1000.0, "ns"});
    }
    s.push_back({"requester.rtq_entries_used", double(n.rtq_used), ""});
    s.push_back({"requester.rtq_entries_peak", double(n.rtq_peak), ""});
    s.push_back({"requester.rtq_full_wait", double(n.rtq_wait_ps / n.period_ps), "cycles"});
    s.push_back({"requester.rtq_overflows", double(n.rtq_overflows), ""});
    s.push_back({"eq.eqes", double(n.eqes), ""});
    // MSI-X interrupts of CQs armed for events, and their mean time from the
    // CQE written (in host memory) to the application woken.
    s.push_back({"cq.interrupts", double(n.interrupts), ""});
    s.push_back({"cq.interrupt_wake_avg",
                 n.interrupts ? double(n.interrupt_wake_ps) / double(n.interrupts) / 1000.0 : 0, "ns"});
    // CQ arms the doorbell block carried out, and CQEs whose event
    // interrupt moderation held (cq.moderation_count, _period_ns).
    s.push_back({"cq.arms", double(n.cq_arms), ""});
    s.push_back({"cq.moderated_cqes", double(n.moderated_cqes), ""});
    s.push_back({"fw.commands", double(n.fw_commands), ""});
    return s;
}

bool Pipeline::trace(const std::string& path, const std::string& format, std::optional<uint64_t> from,
                     uint64_t cycles, std::string& err) {
    SimGuard g(impl_->ctx);
    Impl& m = *impl_;
    WaveWriter::Format f;
    if (!WaveWriter::parse_format(format, f)) {
        err = "unknown waveform format '" + format + "' (vcd or fst)";
        return false;
    }
    if (cycles == 0) {
        err = "--cycles must be at least 1";
        return false;
    }
    Nic& n = *m.nic;
    const uint64_t now_c = m.now_ps() / n.period_ps;
    // Simulated time only moves on: what is past cannot be recorded.
    if (from && *from < now_c) {
        err = "--from " + std::to_string(*from) + ": the device is at cycle " + std::to_string(now_c) +
              " already, and a waveform cannot start in the past (leave --from out to start now, or give a "
              "cycle from " + std::to_string(now_c) + " on)";
        return false;
    }
    if (m.trace_state == Impl::TraceState::Armed || m.trace_state == Impl::TraceState::Recording) m.trace_close();
    auto w = WaveWriter::open(path, f, err);
    if (!w) return false;
    // From now: this very instant, so that a waveform armed with a
    // statistics reset covers exactly what the statistics count.
    const uint64_t start = from ? *from : now_c;
    const uint64_t from_ps = from ? *from * n.period_ps : m.now_ps();
    n.tap.start(std::move(w), from_ps, (start + cycles) * n.period_ps, n.period_ps);
    n.wave_declare();
    m.trace_path = path;
    m.trace_fmt = format;
    m.trace_from_cycle = start;
    m.trace_to_cycle = start + cycles;
    m.trace_state = Impl::TraceState::Armed;
    return true;
}

std::string Pipeline::trace_state() const {
    SimGuard g(impl_->ctx);
    const Impl& m = *impl_;
    switch (m.trace_state) {
        case Impl::TraceState::Idle: return "idle";
        case Impl::TraceState::Armed:
            return "armed " + m.trace_path + " cycles " + std::to_string(m.trace_from_cycle) + ".." +
                   std::to_string(m.trace_to_cycle);
        case Impl::TraceState::Recording:
            return "recording " + m.trace_path + " until cycle " + std::to_string(m.trace_to_cycle);
        case Impl::TraceState::Done: return "done " + m.trace_path;
    }
    return "idle";
}

void Pipeline::trace_stop() {
    SimGuard g(impl_->ctx);
    if (impl_->trace_state == Impl::TraceState::Armed || impl_->trace_state == Impl::TraceState::Recording)
        impl_->trace_close();
}

}  // namespace simnic::model
