#include "simnic/bench/bench.h"

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <unordered_map>

#include "simnic/base/clock.h"
#include "simnic/fw/firmware.h"
#include "simnic/fw/linux_netdev.h"
#include "simnic/fw/table_store.h"
#include "simnic/host/context.h"
#include "simnic/host/local_context.h"
#include "simnic/hw/cqe.h"
#include "simnic/hw/layout.h"
#include "simnic/hw/wqe.h"
#include "simnic/soft_engine/engine.h"

#include "host_memory.h"

namespace simnic::model {

bool parse_bench_op(const std::string& s, BenchOp& op) {
    if (s == "write") op = BenchOp::Write;
    else if (s == "read") op = BenchOp::Read;
    else if (s == "send") op = BenchOp::Send;
    else return false;
    return true;
}
const char* to_string(BenchOp op) {
    switch (op) {
        case BenchOp::Write: return "write";
        case BenchOp::Read: return "read";
        case BenchOp::Send: return "send";
    }
    return "?";
}

namespace {

constexpr uint16_t kCtx = 1;

using bench_host::attach_shm_domain;
using bench_host::HostMem;
using bench_host::log2_ceil;
using bench_host::WorkRing;

// Every WQE carries one SGE, or (--inline) its data inline: the strides
// the verbs provider would choose for those caps (hw-spec 5.6.7).
constexpr uint8_t log_sq_stride(uint32_t max_inline) {
    return std::max(hw::kMinLogSqStride, log2_ceil(hw::send_wqe_max_size(1, max_inline)));
}
constexpr uint8_t kLogRqStride = std::max(hw::kMinLogRqStride, log2_ceil(hw::recv_wqe_size(1)));



// The bench in two halves, as in a host with a NIC: the device (tables,
// firmware, the engine's datapath inside the cycle-level pipeline, MAC TX
// looped to MAC RX) and the host, which reaches it only as a driver does,
// through a host::Context: firmware commands, WQEs and CQEs in its own
// memory in hw-spec's formats (the hwspec codec), and doorbells.
class Bench {
public:
    Bench(const BenchSpec& s) : spec_(s) {}
    bool run(BenchResult& out, std::string& err);

private:
    struct Qp {
        uint32_t qpn = 0, cqn = 0;
        WorkRing sq, rq;
        uint8_t* cq = nullptr;
        uint32_t cq_ci = 0;
        uint32_t outstanding = 0;
    };

    bool device_setup(std::string& err);
    bool host_setup(std::string& err);
    bool cmd(hw::CmdOpcode op, const uint8_t* in, size_t n, size_t out_cap, std::vector<uint8_t>* out,
             std::string& err) {
        host::CmdOutcome o;
        const int rc = ctx_->command(op, in, n, out_cap, o);
        if (rc != 0 || o.status != hw::CmdStatus::Ok) {
            err = "firmware command " + std::to_string(int(op)) + " failed (status " + std::to_string(int(o.status)) +
                  ", syndrome " + std::to_string(o.syndrome) + ")";
            return false;
        }
        if (out) *out = o.out;
        return true;
    }
    uint32_t handle(const std::vector<uint8_t>& o) {
        return o.size() >= 4 ? uint32_t(hw::get(o.data(), o.size(), hw::cmd_handle::handle)) : 0;
    }
    bool create_qp(Qp& q, std::string& err);
    bool modify(uint32_t qpn, uint32_t mask, hw::QpState st, uint8_t* attr, std::string& err);
    void post_send(Qp& q);
    void post_recv(Qp& q);
    void on_cqe(uint32_t cqn);
    void begin_measurement();
    bool arm_trace();

    BenchSpec spec_;
    // The device.
    std::unique_ptr<fw::MemTableStore> tables_;
    std::unique_ptr<fw::LinuxNetdev> netdev_;
    host::LocalEventSink sink_;
    HostMem bar_;
    std::unique_ptr<soft_engine::SoftEngine> engine_;
    std::unique_ptr<fw::Firmware> fw_;
    Pipeline* pipe_ = nullptr;
    // The host: its memory outlives its context, whose end destroys the
    // QPs and CQs that use it.
    HostMem mem_;
    std::unique_ptr<host::Context> ctx_;
    uint16_t dom_ = 0;  // mem_'s SHM domain
    uint32_t pdn_ = 0, lkey_ = 0, rkey_ = 0;
    uint8_t log_q_ = 0, log_cq_ = 0;
    size_t data_off_ = 0, data_len_ = 0;
    hw::SendWqe send_;  // the WQE every post sends, but for its wr_id
    hw::RecvWqe recv_;  // likewise for receives
    std::vector<Qp> qps_;
    std::unordered_map<uint32_t, size_t> by_cqn_;
    uint64_t posted_ = 0, done_ = 0, errors_ = 0, last_cqe_cycle_ = 0;
    uint64_t warmup_ = 0, total_ = 0;  // messages before the measurement; in all
    uint32_t rd_atomic_ = 16;          // the QPs' max_rd_atomic and max_dest_rd_atomic
    uint32_t max_inline_ = 0;          // the QPs' max_inline (--inline: the message size)
    hw::Mtu path_mtu_ = hw::Mtu::M4096;  // the QPs' path MTU (BenchSpec::mtu)
    bool measuring_ = false;
    uint64_t cqes_ = 0;            // CQEs the host consumed, in all
    uint64_t c0_ = 0, done0_ = 0, cqes0_ = 0;  // at the measurement's start
    std::string trace_err_;
};

bool Bench::device_setup(std::string& err) {
    fw::FwConfig fc;
    fc.cap = fw::default_cap_block();
    tables_ = std::make_unique<fw::MemTableStore>(fw::table_capacities(fc.cap.data(), fc.gid_tbl_len));
    // The GIDs of lo: a self-connected QP addresses 127.0.0.1.
    netdev_ = std::make_unique<fw::LinuxNetdev>("lo");
    if (!bar_.alloc(4096)) {
        err = "out of memory";
        return false;
    }
    soft_engine::EngineConfig ec;
    ec.device = "bench";
    ec.netdev = "lo";
    ec.tables = tables_.get();
    ec.events = &sink_;
    ec.bar = bar_.p;
    ec.timing = Pipeline::factory("bench", spec_.cfg, &pipe_);
    ec.standalone = true;
    // The host's memory is an SHM domain (bench_host::attach_shm_domain).
    ec.shm = sink_.offer_shm();
    engine_ = soft_engine::SoftEngine::create(ec, err);
    if (!engine_) return false;
    fw_ = std::make_unique<fw::Firmware>(fc, *tables_, *netdev_, sink_, engine_.get());
    // BAR0's port block: the datapath takes the active MTU from it.
    const auto port = fw_->port_block();
    std::memcpy(bar_.p + hw::kBar0PortBlock, port.data(), port.size());
    return true;
}

bool Bench::host_setup(std::string& err) {
    // The device has no doorbell FIFO thread here: each doorbell enters the
    // model's doorbell block at the simulated instant it is rung, as the
    // engine hands a model device's FIFO entries over.
    ctx_ = host::open_local_context(*fw_, sink_, "bench", kCtx, uint32_t(getpid()), 0,
                                    [this](uint16_t ctx, hw::DbKind kind, uint32_t num, uint32_t index,
                                           uint8_t cq_cmd) {
                                        pipe_->doorbell(Doorbell{ctx, uint8_t(kind), num, index, cq_cmd});
                                    });
    if (!ctx_) {
        err = "cannot open a context on the bench device";
        return false;
    }
    std::vector<uint8_t> o;
    uint8_t none[4] = {};
    if (!cmd(hw::CmdOpcode::AllocPd, none, sizeof none, hw::cmd_handle::kSize, &o, err)) return false;
    pdn_ = handle(o);

    const uint32_t depth = std::max<uint32_t>(1, spec_.depth);
    log_q_ = uint8_t(std::max<uint32_t>(1, log2_ceil(depth)));
    log_cq_ = uint8_t(log2_ceil(2 * depth + 1));
    // Each ring on its own 4 KiB-aligned range (hw-spec: ring bases are aligned).
    auto page = [](size_t n) { return (n + 4095) & ~size_t(4095); };
    const size_t sq_bytes = page(size_t(1) << (log_q_ + log_sq_stride(max_inline_)));
    const size_t rq_bytes = page(size_t(1) << (log_q_ + kLogRqStride));
    const size_t cq_bytes = page((size_t(1) << log_cq_) * hw::kCqeSize);
    const size_t per_qp = sq_bytes + rq_bytes + cq_bytes;
    // Every QP reads and writes the same two message-sized areas: the bench
    // measures the device, not the data.
    data_len_ = 2 * size_t(std::max<uint32_t>(spec_.size, 8)) + 4096;
    if (!mem_.alloc_shared(per_qp * spec_.qps + data_len_ + 4096)) {
        err = "out of memory for " + std::to_string(spec_.qps) + " QPs";
        return false;
    }
    if (!attach_shm_domain(*ctx_, mem_, dom_, err)) return false;
    data_off_ = per_qp * spec_.qps;
    uint8_t mr[hw::cmd_reg_mr_in::kSize] = {};
    hw::set(mr, hw::cmd_reg_mr_in::pdn, pdn_);
    hw::set(mr, hw::cmd_reg_mr_in::access, hw::access::kAll);
    hw::set(mr, hw::cmd_reg_mr_in::domain_id, dom_);
    hw::set(mr, hw::cmd_reg_mr_in::iova, mem_.addr(data_off_));
    hw::set(mr, hw::cmd_reg_mr_in::length, data_len_);
    hw::set(mr, hw::cmd_reg_mr_in::host_addr, mem_.addr(data_off_));
    if (!cmd(hw::CmdOpcode::RegMr, mr, sizeof mr, hw::cmd_reg_mr_out::kSize, &o, err)) return false;
    lkey_ = uint32_t(hw::get(o.data(), o.size(), hw::cmd_reg_mr_out::lkey));
    rkey_ = uint32_t(hw::get(o.data(), o.size(), hw::cmd_reg_mr_out::rkey));

    // The workload's WQEs: one SGE on the first area; WRITE and READ target
    // the second, where SENDs land.
    const uint64_t local = mem_.addr(data_off_), remote = mem_.addr(data_off_ + data_len_ / 2);
    send_.opcode = spec_.op == BenchOp::Write  ? hw::WrOpcode::RdmaWrite
                   : spec_.op == BenchOp::Read ? hw::WrOpcode::RdmaRead
                                               : hw::WrOpcode::Send;
    send_.signaled = true;
    send_.raddr = {remote, rkey_};
    send_.num_sge = 1;
    send_.sge[0] = {local, spec_.size, lkey_};
    if (max_inline_) {
        send_.num_sge = 0;
        send_.inline_data = true;
        send_.inline_bytes = mem_.p + data_off_;
        send_.inline_len = spec_.size;
    }
    recv_.num_sge = 1;
    recv_.sge[0] = {remote, spec_.size, lkey_};
    if (hw::send_wqe_size(send_, hw::QpType::Rc) > (1u << log_sq_stride(max_inline_)) ||
        hw::recv_wqe_size(recv_.num_sge) > (1u << kLogRqStride)) {
        err = "the bench's WQEs do not fit their strides";
        return false;
    }

    qps_.resize(spec_.qps);
    size_t off = 0;
    for (Qp& q : qps_) {
        q.sq = WorkRing{mem_.p + off, log_q_, log_sq_stride(max_inline_)};
        off += sq_bytes;
        q.rq = WorkRing{mem_.p + off, log_q_, kLogRqStride};
        off += rq_bytes;
        q.cq = mem_.p + off;
        off += cq_bytes;
        if (!create_qp(q, err)) return false;
        by_cqn_[q.cqn] = size_t(&q - qps_.data());
    }
    return true;
}

bool Bench::modify(uint32_t qpn, uint32_t mask, hw::QpState st, uint8_t* attr, std::string& err) {
    hw::set(attr, hw::qp_attr::kSize, hw::qp_attr::qpn, qpn);
    hw::set(attr, hw::qp_attr::kSize, hw::qp_attr::attr_mask, mask | hw::qp_attr_mask::kState);
    hw::set(attr, hw::qp_attr::kSize, hw::qp_attr::qp_state, uint8_t(st));
    return cmd(hw::CmdOpcode::ModifyQp, attr, hw::qp_attr::kSize, 0, nullptr, err);
}

bool Bench::create_qp(Qp& q, std::string& err) {
    std::vector<uint8_t> o;
    uint8_t cq[hw::cmd_create_cq_in::kSize] = {};
    hw::set(cq, hw::cmd_create_cq_in::log_size, log_cq_);
    hw::set(cq, hw::cmd_create_cq_in::domain_id, dom_);
    hw::set(cq, hw::cmd_create_cq_in::base, reinterpret_cast<uint64_t>(q.cq));
    if (!cmd(hw::CmdOpcode::CreateCq, cq, sizeof cq, hw::cmd_handle::kSize, &o, err)) return false;
    q.cqn = handle(o);
    if (spec_.cq_mod) {
        // As ibv_modify_cq does it (the verbs provider's modify_cq).
        namespace mc = hw::cmd_modify_cq_in;
        uint8_t in[mc::kSize] = {};
        hw::set(in, mc::cqn, q.cqn);
        hw::set(in, mc::attr_mask, hw::cq_attr_mask::kModerate);
        hw::set(in, mc::cq_count, spec_.cq_mod->count);
        hw::set(in, mc::cq_period, spec_.cq_mod->period_us);
        if (!cmd(hw::CmdOpcode::ModifyCq, in, sizeof in, 0, nullptr, err)) return false;
    }
    namespace c = hw::cmd_create_qp_in;
    uint8_t in[c::kSize] = {};
    hw::set(in, c::qp_type, uint8_t(hw::QpType::Rc));
    hw::set(in, c::pdn, pdn_);
    hw::set(in, c::send_cqn, q.cqn);
    hw::set(in, c::recv_cqn, q.cqn);
    hw::set(in, c::domain_id, dom_);
    hw::set(in, c::sq_base, reinterpret_cast<uint64_t>(q.sq.base));
    hw::set(in, c::rq_base, reinterpret_cast<uint64_t>(q.rq.base));
    hw::set(in, c::log_sq_size, q.sq.log_size);
    hw::set(in, c::log_sq_stride, q.sq.log_stride);
    hw::set(in, c::log_rq_size, q.rq.log_size);
    hw::set(in, c::log_rq_stride, q.rq.log_stride);
    hw::set(in, c::max_send_sge, 1);
    hw::set(in, c::max_recv_sge, 1);
    hw::set(in, c::max_inline, max_inline_);
    if (!cmd(hw::CmdOpcode::CreateQp, in, sizeof in, hw::cmd_handle::kSize, &o, err)) return false;
    q.qpn = handle(o);

    namespace m = hw::qp_attr_mask;
    namespace f = hw::qp_attr;
    uint8_t at[f::kSize] = {};
    hw::set(at, f::port_num, 1);
    hw::set(at, f::qp_access_flags, hw::access::kRemoteWrite | hw::access::kRemoteRead | hw::access::kRemoteAtomic);
    if (!modify(q.qpn, m::kPkeyIndex | m::kPort | m::kAccessFlags, hw::QpState::Init, at, err)) return false;
    std::memset(at, 0, sizeof at);
    hw::AddressVector av;  // 127.0.0.1, GID 1 of lo
    av.dgid = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 127, 0, 0, 1};
    av.sgid_index = 1;
    av.hop_limit = 64;
    av.grh = true;
    hw::encode_av(at + f::av_dgid.offset, av);
    hw::set(at, f::path_mtu, uint8_t(path_mtu_));
    hw::set(at, f::dest_qp_num, q.qpn);  // connected to itself
    hw::set(at, f::max_dest_rd_atomic, rd_atomic_);
    hw::set(at, f::min_rnr_timer, 1);
    if (!modify(q.qpn, m::kAv | m::kPathMtu | m::kDestQpn | m::kRqPsn | m::kMaxDestRdAtomic | m::kMinRnrTimer,
                hw::QpState::Rtr, at, err))
        return false;
    std::memset(at, 0, sizeof at);
    hw::set(at, f::timeout, 14);
    hw::set(at, f::retry_cnt, 7);
    hw::set(at, f::rnr_retry, 7);
    hw::set(at, f::max_rd_atomic, rd_atomic_);
    return modify(q.qpn, m::kSqPsn | m::kTimeout | m::kRetryCnt | m::kRnrRetry | m::kMaxQpRdAtomic,
                  hw::QpState::Rts, at, err);
}

void Bench::post_recv(Qp& q) {
    recv_.wr_id = q.rq.pi;
    hw::encode_recv(recv_, q.rq.slot(q.rq.pi), q.rq.stride());  // fits: checked in host_setup
    ++q.rq.pi;
    ctx_->ring_doorbell(hw::DbKind::Rq, q.qpn, q.rq.pi);
}

void Bench::post_send(Qp& q) {
    send_.wr_id = posted_;
    hw::encode_send(send_, hw::QpType::Rc, q.sq.slot(q.sq.pi), q.sq.stride());  // fits: checked in host_setup
    ++q.sq.pi;
    ++q.outstanding;
    ++posted_;
    ctx_->ring_doorbell(hw::DbKind::Sq, q.qpn, q.sq.pi);
}

// The host model, run inside the simulation when a CQE of `cqn` becomes
// visible: consume every CQE the ring holds, keep the QP's queue full, and
// return the CQEs with one CQ doorbell. The engine writes a CQE to memory
// before the model makes it visible, so a call may find the ring already
// emptied by an earlier one; it still rings, and the figures count on that.
void Bench::on_cqe(uint32_t cqn) {
    auto it = by_cqn_.find(cqn);
    if (it == by_cqn_.end()) return;
    Qp& q = qps_[it->second];
    while (const uint8_t* e = hw::cqe_peek(q.cq, q.cq_ci, log_cq_)) {
        const hw::Cqe c = hw::decode_cqe(e);
        const bool ok = c.status == hw::WcStatus::Success;
        ++q.cq_ci;
        ++cqes_;
        if (!ok) ++errors_;
        if (c.is_send) {
            --q.outstanding;
            if (ok) ++done_;
            last_cqe_cycle_ = pipe_->cycle();
            if (!measuring_ && done_ + errors_ >= warmup_) begin_measurement();
            if (ok && posted_ < total_) post_send(q);
        } else if (ok && spec_.op == BenchOp::Send) {
            post_recv(q);
        }
    }
    // Woken by an interrupt: re-arm for the next completion with the
    // consumer index (an arm finding CQEs not yet seen fires at once).
    ctx_->ring_doorbell(hw::DbKind::Cq, q.cqn, q.cq_ci, spec_.events ? uint8_t(hw::CqArm::Next) : 0);
}

// The measurement starts: the figures so far (the warm-up's) are dropped,
// the caches keep what they hold. Called before the first doorbell (no
// warm-up) or inside the simulation, when the warm-up's last message
// completes.
void Bench::begin_measurement() {
    measuring_ = true;
    pipe_->reset_stats();
    c0_ = pipe_->cycle();
    done0_ = done_;
    cqes0_ = cqes_;
    if (!spec_.trace_path.empty() && !spec_.trace_from && !arm_trace()) spec_.trace_path.clear();
}

bool Bench::arm_trace() {
    // A window to the end of the run unless told: the run closes it.
    const uint64_t cycles = spec_.trace_cycles ? spec_.trace_cycles : uint64_t(1) << 40;
    return pipe_->trace(spec_.trace_path, spec_.trace_format, spec_.trace_from, cycles, trace_err_);
}

bool Bench::run(BenchResult& out, std::string& err) {
    if (spec_.qps == 0 || spec_.depth == 0 || spec_.size == 0) {
        err = "qps, depth and size must be at least 1";
        return false;
    }
    path_mtu_ = hw::Mtu(0);
    for (uint8_t m = uint8_t(hw::Mtu::M256); m <= uint8_t(hw::Mtu::M4096); ++m)
        if (spec_.mtu == 128u << m) path_mtu_ = hw::Mtu(m);
    if (path_mtu_ == hw::Mtu(0)) {
        err = "mtu " + std::to_string(spec_.mtu) + ": a path MTU is 256, 512, 1024, 2048 or 4096 bytes";
        return false;
    }
    // A READ holds one of its QP's max_rd_atomic credits until its response
    // is in; the rest of a deeper queue waits in the send queue.
    if (spec_.op == BenchOp::Read)
        rd_atomic_ = std::clamp<uint32_t>(spec_.depth, 16,
                                          std::min(hw::caps_default::max_qp_init_rd_atom, hw::caps_default::max_qp_rd_atom));
    if (spec_.inline_data) {
        if (spec_.op == BenchOp::Read) {
            err = "--inline: an RDMA READ sends no data, so none to carry inline (SEND and WRITE only)";
            return false;
        }
        if (spec_.size > hw::kMaxInline) {
            err = "--inline: " + std::to_string(spec_.size) + " bytes do not fit inline (the device's max_inline is " +
                  std::to_string(hw::kMaxInline) + ")";
            return false;
        }
        max_inline_ = spec_.size;
    }
    if (spec_.cq_mod && spec_.cq_mod->period_us > hw::kMaxCqPeriodUs) {
        err = "CQ moderation period " + std::to_string(spec_.cq_mod->period_us) + " us: at most " +
              std::to_string(hw::kMaxCqPeriodUs) + " (ibv_modify_cq's cq_period, mlx5's MLX5_MAX_CQ_PERIOD)";
        return false;
    }
    if (spec_.messages == 0)
        spec_.messages = std::max<uint64_t>(uint64_t(spec_.qps) * spec_.depth * 4,
                                            std::min<uint64_t>(2000, (uint64_t(256) << 20) / spec_.size));
    warmup_ = spec_.warmup ? *spec_.warmup : uint64_t(spec_.qps) * spec_.depth;
    total_ = warmup_ + spec_.messages;
    if (!device_setup(err) || !host_setup(err)) return false;
    if (spec_.events) {
        // Each CQ armed before the first message; the host reacts only to
        // the interrupts (on_cqe re-arms after draining).
        pipe_->on_cq_event([this](uint32_t cqn) { on_cqe(cqn); });
        for (const Qp& q : qps_) ctx_->ring_doorbell(hw::DbKind::Cq, q.cqn, q.cq_ci, uint8_t(hw::CqArm::Next));
    } else {
        pipe_->on_cqe([this](uint32_t cqn) { on_cqe(cqn); });
    }
    pipe_->run();  // setup's doorbell-free commands leave nothing to do, but be sure
    if (!spec_.trace_path.empty() && spec_.trace_from && !arm_trace()) {
        err = trace_err_;
        return false;
    }
    if (warmup_ == 0) begin_measurement();
    // Fill every QP's queue, round robin, so no QP starts far ahead.
    for (uint32_t k = 0; k < spec_.depth; ++k)
        for (Qp& q : qps_) {
            if (spec_.op == BenchOp::Send) post_recv(q);
            if (posted_ < total_) post_send(q);
        }
    const uint64_t w0 = base::mono_ns();
    pipe_->run();
    out.wall_s = double(base::mono_ns() - w0) / 1e9;
    if (!spec_.trace_path.empty()) pipe_->trace_stop();
    if (!trace_err_.empty()) {
        err = trace_err_;
        return false;
    }
    out.warmup = warmup_;
    out.rd_atomic = spec_.op == BenchOp::Read ? rd_atomic_ : 0;
    out.messages = done_ - done0_;
    out.errors = errors_;
    if (done_ + errors_ != posted_ || !measuring_) {
        err = "the workload stalled: " + std::to_string(done_) + " of " + std::to_string(posted_) +
              " messages completed";
        if (spec_.events && spec_.cq_mod && spec_.cq_mod->count > 1 && spec_.cq_mod->period_us == 0)
            err += " (a CQ moderated by a count without a period holds its event until " +
                   std::to_string(spec_.cq_mod->count) + " CQEs are written; give it a period)";
        return false;
    }
    const double period_ps = spec_.cfg.clock_period_ps();
    out.sim_cycles = last_cqe_cycle_ - c0_;
    out.sim_ns = double(out.sim_cycles) * period_ps / 1000.0;
    out.gbps = out.sim_ns > 0 ? double(out.messages) * spec_.size * 8.0 / out.sim_ns : 0;
    out.msg_rate_mps = out.sim_ns > 0 ? double(out.messages) / out.sim_ns * 1000.0 : 0;
    out.stats = pipe_->stats();
    for (const ModelStat& s : out.stats) {
        if (s.name == "latency.min") out.lat_min_ns = s.value;
        else if (s.name == "latency.median") out.lat_median_ns = s.value;
        else if (s.name == "latency.p99") out.lat_p99_ns = s.value;
        else if (s.name == "cache.qpc.hit_rate") out.qpc_hit = s.value;
        else if (s.name == "cache.mpt.hit_rate") out.mpt_hit = s.value;
        else if (s.name == "cache.mtt.hit_rate") out.mtt_hit = s.value;
        else if (s.name == "mac.tx_line_utilisation") out.line_utilisation = s.value;
        else if (s.name == "cq.interrupts") out.events = uint64_t(s.value);
    }
    out.completions = cqes_ - cqes0_;
    out.cycles_per_s = out.wall_s > 0 ? double(out.sim_cycles) / out.wall_s : 0;
    return true;
}

}  // namespace

bool run_bench(const BenchSpec& spec, BenchResult& out, std::string& err) {
    Bench b(spec);
    return b.run(out, err);
}

}  // namespace simnic::model
