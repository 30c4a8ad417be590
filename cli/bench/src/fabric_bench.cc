// `simnic bench --fabric`: an incast through the switch model
// (fabric_bench.h). The host side mirrors bench.cc's: each device is reached
// only as a driver reaches it (firmware commands, WQEs and CQEs in hw-spec's
// formats, doorbells), here one host per device of the fabric.
#include "simnic/bench/fabric_bench.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <chrono>
#include <cstring>
#include <memory>
#include <sstream>
#include <thread>
#include <unordered_map>

#include "simnic/base/clock.h"
#include "simnic/congestion/fluid/fluid_model.h"
#include "simnic/congestion/fluid/packet_sim.h"
#include "simnic/fw/firmware.h"
#include "simnic/fw/table_store.h"
#include "simnic/fw/wire_netdev.h"
#include "simnic/host/context.h"
#include "simnic/host/local_context.h"
#include "simnic/hw/cqe.h"
#include "simnic/hw/layout.h"
#include "simnic/hw/wqe.h"
#include "simnic/model/fabric/fabric.h"
#include "simnic/model/plot.h"
#include "simnic/roce/pcap_io.h"
#include "simnic/soft_engine/engine.h"

#include "host_memory.h"

namespace simnic::model {

namespace {

constexpr uint16_t kCtx = 1;

using bench_host::attach_shm_domain;
using bench_host::HostMem;
using bench_host::log2_ceil;
using bench_host::WorkRing;

// A draw in [0, 1) that depends only on (seed, n): splitmix64's finaliser
// of the two, so that a seed repeats its draws whatever else changes.
double unit_draw(uint64_t seed, uint64_t n) {
    uint64_t z = seed * 0x9E3779B97F4A7C15ull + (n + 1) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return double(z >> 11) * 0x1.0p-53;
}

struct Qp {
    uint32_t qpn = 0, cqn = 0;
    WorkRing sq, rq;
    uint8_t* cq = nullptr;
    uint32_t cq_ci = 0;
    size_t peer = 0;       // index of the peer QP in the other host's qps
    size_t flow = 0;       // sender: its flow (FabricBenchResult::flows)
    bool sender = false;
};

// One model device of the fabric and the host that drives it. Members in
// destruction order's reverse: the context before the firmware, the
// firmware before the engine, the host memory after the context.
struct Host {
    fabric::HostSpec spec;
    std::unique_ptr<fw::MemTableStore> tables;
    std::unique_ptr<fw::WireNetdev> netdev;
    host::LocalEventSink sink;
    HostMem bar;
    std::unique_ptr<soft_engine::SoftEngine> engine;
    std::unique_ptr<fw::Firmware> fw;
    Pipeline* pipe = nullptr;
    HostMem mem;
    std::unique_ptr<host::Context> ctx;
    uint16_t dom = 0;  // mem's SHM domain
    uint32_t pdn = 0, lkey = 0, rkey = 0;
    uint8_t log_q = 0, log_cq = 0;
    size_t data_off = 0;
    std::vector<Qp> qps;
    std::unordered_map<uint32_t, size_t> by_cqn;

    bool cmd(hw::CmdOpcode op, const uint8_t* in, size_t n, size_t out_cap, std::vector<uint8_t>* out,
             std::string& err) {
        host::CmdOutcome o;
        const int rc = ctx->command(op, in, n, out_cap, o);
        if (rc != 0 || o.status != hw::CmdStatus::Ok) {
            err = spec.name + ": firmware command " + std::to_string(int(op)) + " failed (status " +
                  std::to_string(int(o.status)) + ", syndrome " + std::to_string(o.syndrome) + ")";
            return false;
        }
        if (out) *out = o.out;
        return true;
    }
    static uint32_t handle(const std::vector<uint8_t>& o) {
        return o.size() >= 4 ? uint32_t(hw::get(o.data(), o.size(), hw::cmd_handle::handle)) : 0;
    }
};

fw::Gid mapped(uint32_t ip) {
    return {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, uint8_t(ip >> 24), uint8_t(ip >> 16), uint8_t(ip >> 8),
            uint8_t(ip)};
}

class FabricBench {
public:
    explicit FabricBench(const FabricBenchSpec& s) : spec_(s) {}
    ~FabricBench() {
        // The devices' pipelines live in the fabric's context: gone first.
        hosts_.clear();
    }
    bool run(FabricBenchResult& out, std::string& err);

private:
    bool device_setup(size_t i, std::string& err);
    bool host_setup(Host& h, uint32_t nqps, std::string& err);
    bool create_qp(Host& h, Qp& q, std::string& err);
    bool connect(Host& h, Qp& q, const Host& peer, uint32_t peer_qpn, std::string& err);
    bool modify(Host& h, uint32_t qpn, uint32_t mask, hw::QpState st, uint8_t* attr, std::string& err);
    void post_write(Host& h, Qp& q);
    void on_cqe(size_t host, uint32_t cqn);

    FabricBenchSpec spec_;
    std::unique_ptr<fabric::Fabric> fabric_;
    std::vector<std::unique_ptr<Host>> hosts_;
    size_t recv_ = 0;
    std::vector<std::pair<size_t, size_t>> flows_;  // (sender, destination) host indexes
    uint8_t log_stride_ = 0, log_rq_stride_ = 0;
    // Per flow (sender).
    std::vector<uint64_t> posted_, done_, errors_, first_ps_, last_ps_;
    std::vector<std::vector<double>> bytes_bin_;
    // The flows' frames leaving their senders' MAC TX (the fabric's tap):
    // bytes per bin, frames and bytes in all.
    std::vector<std::vector<double>> wire_bin_;
    std::vector<uint64_t> wire_frames_, wire_bytes_;
    // The reaction points of the flow's QPs: the mean of their Rc, Rt and
    // alpha (Gb/s, Gb/s, fraction) at the present simulated time.
    struct RpMean {
        unsigned qps = 0;
        double rc_gbps = 0, rt_gbps = 0, alpha = 0;
        uint64_t rate_limited_ns = 0, cnps = 0;  // summed
    };
    RpMean rp_mean(size_t fl);
    // With congestion control on, each flow's RpMean at every bin's end
    // from t0 (FabricFlow::rc_gbps_series and the others).
    bool sample_rp_ = false;
    uint64_t next_rp_ps_ = 0;
    std::vector<std::vector<RpMean>> rp_bins_;
    void sample_rp_due(uint64_t upto_ps);
    void run_to(uint64_t ps);
    void run_while_busy();
    uint64_t t0_ps_ = 0;
    bool measuring_ = false;
    uint64_t pfc_to_hosts_ = 0, last_pfc_ps_ = 0;
    bool more(size_t fl) const {
        if (spec_.duration_us > 0) return double(fabric_->now_ps() - t0_ps_) < spec_.duration_us * 1e6;
        return posted_[fl] < spec_.messages;
    }
    uint64_t all_done_ = 0, total_ = 0;
};

bool FabricBench::device_setup(size_t i, std::string& err) {
    auto h = std::make_unique<Host>();
    h->spec = spec_.topo.hosts[i];
    fw::FwConfig fc;
    fc.cap = fw::default_cap_block();
    h->tables = std::make_unique<fw::MemTableStore>(fw::table_capacities(fc.cap.data(), fc.gid_tbl_len));
    // The device's own addresses, as on a wire; its neighbours are the
    // topology's hosts (a static table: no ARP crosses the fabric).
    const fabric::Topology* topo = &spec_.topo;
    const uint32_t ip = h->spec.ipv4;
    h->netdev = std::make_unique<fw::WireNetdev>(
        "fabric " + h->spec.name, h->spec.mac, 9000,
        std::array<uint8_t, 4>{uint8_t(ip >> 24), uint8_t(ip >> 16), uint8_t(ip >> 8), uint8_t(ip)},
        std::vector<fw::Gid>{}, [topo](const fw::Gid& g) -> std::optional<fw::Mac> {
            for (const fabric::HostSpec& o : topo->hosts)
                if (mapped(o.ipv4) == g) return o.mac;
            return std::nullopt;
        });
    if (!h->bar.alloc(4096)) {
        err = "out of memory";
        return false;
    }
    soft_engine::EngineConfig ec;
    ec.device = h->spec.name;
    ec.netdev = "lo";  // unused but for the engine's address-only port: the GIDs are the WireNetdev's
    ec.tables = h->tables.get();
    ec.events = &h->sink;
    ec.bar = h->bar.p;
    ec.timing = fabric_->factory(i, spec_.cfg);
    ec.standalone = true;
    // The host's memory is an SHM domain (bench_host::attach_shm_domain).
    ec.shm = h->sink.offer_shm();
    // Congestion control as a device's config turns it on (the daemon does
    // the same, daemon/src/device_runtime.cc): the reaction points' line
    // rate is the host's link's unless the table gives one.
    const model::CongestionConfig& cc = spec_.cfg.congestion;
    ec.congestion.on = cc.enable != 0;
    ec.congestion.rp = cc.dcqcn(h->spec.rate_gbps);
    ec.congestion.np = cc.np();
    if (spec_.rp_observer) ec.congestion.observer = spec_.rp_observer(i);
    h->engine = soft_engine::SoftEngine::create(ec, err);
    if (!h->engine) return false;
    h->pipe = fabric_->device(i);
    h->fw = std::make_unique<fw::Firmware>(fc, *h->tables, *h->netdev, h->sink, h->engine.get());
    const auto port = h->fw->port_block();
    std::memcpy(h->bar.p + hw::kBar0PortBlock, port.data(), port.size());
    hosts_.push_back(std::move(h));
    return true;
}

bool FabricBench::host_setup(Host& h, uint32_t nqps, std::string& err) {
    Pipeline* pipe = h.pipe;
    h.ctx = host::open_local_context(*h.fw, h.sink, h.spec.name, kCtx, uint32_t(getpid()), 0,
                                     [pipe](uint16_t ctx, hw::DbKind kind, uint32_t num, uint32_t index,
                                            uint8_t cq_cmd) {
                                         pipe->doorbell(Doorbell{ctx, uint8_t(kind), num, index, cq_cmd});
                                     });
    if (!h.ctx) {
        err = "cannot open a context on " + h.spec.name;
        return false;
    }
    std::vector<uint8_t> o;
    uint8_t none[4] = {};
    if (!h.cmd(hw::CmdOpcode::AllocPd, none, sizeof none, hw::cmd_handle::kSize, &o, err)) return false;
    h.pdn = Host::handle(o);
    h.log_q = uint8_t(std::max<uint32_t>(1, log2_ceil(spec_.depth)));
    h.log_cq = uint8_t(log2_ceil(2 * spec_.depth + 1));
    auto page = [](size_t n) { return (n + 4095) & ~size_t(4095); };
    const size_t sq_bytes = page(size_t(1) << (h.log_q + log_stride_));
    const size_t rq_bytes = page(size_t(1) << (h.log_q + log_rq_stride_));
    const size_t cq_bytes = page((size_t(1) << h.log_cq) * hw::kCqeSize);
    const size_t per_qp = sq_bytes + rq_bytes + cq_bytes;
    const size_t data_len = 2 * size_t(spec_.size) + 4096;
    if (!h.mem.alloc_shared(per_qp * nqps + data_len + 4096)) {
        err = "out of memory";
        return false;
    }
    if (!attach_shm_domain(*h.ctx, h.mem, h.dom, err)) {
        err = h.spec.name + ": " + err;
        return false;
    }
    h.data_off = per_qp * nqps;
    uint8_t mr[hw::cmd_reg_mr_in::kSize] = {};
    hw::set(mr, hw::cmd_reg_mr_in::pdn, h.pdn);
    hw::set(mr, hw::cmd_reg_mr_in::access, hw::access::kAll);
    hw::set(mr, hw::cmd_reg_mr_in::domain_id, h.dom);
    hw::set(mr, hw::cmd_reg_mr_in::iova, h.mem.addr(h.data_off));
    hw::set(mr, hw::cmd_reg_mr_in::length, data_len);
    hw::set(mr, hw::cmd_reg_mr_in::host_addr, h.mem.addr(h.data_off));
    if (!h.cmd(hw::CmdOpcode::RegMr, mr, sizeof mr, hw::cmd_reg_mr_out::kSize, &o, err)) return false;
    h.lkey = uint32_t(hw::get(o.data(), o.size(), hw::cmd_reg_mr_out::lkey));
    h.rkey = uint32_t(hw::get(o.data(), o.size(), hw::cmd_reg_mr_out::rkey));
    h.qps.resize(nqps);
    size_t off = 0;
    for (Qp& q : h.qps) {
        q.sq = WorkRing{h.mem.p + off, h.log_q, log_stride_};
        off += sq_bytes;
        q.rq = WorkRing{h.mem.p + off, h.log_q, log_rq_stride_};
        off += rq_bytes;
        q.cq = h.mem.p + off;
        off += cq_bytes;
        if (!create_qp(h, q, err)) return false;
        h.by_cqn[q.cqn] = size_t(&q - h.qps.data());
    }
    return true;
}

bool FabricBench::modify(Host& h, uint32_t qpn, uint32_t mask, hw::QpState st, uint8_t* attr, std::string& err) {
    hw::set(attr, hw::qp_attr::kSize, hw::qp_attr::qpn, qpn);
    hw::set(attr, hw::qp_attr::kSize, hw::qp_attr::attr_mask, mask | hw::qp_attr_mask::kState);
    hw::set(attr, hw::qp_attr::kSize, hw::qp_attr::qp_state, uint8_t(st));
    return h.cmd(hw::CmdOpcode::ModifyQp, attr, hw::qp_attr::kSize, 0, nullptr, err);
}

bool FabricBench::create_qp(Host& h, Qp& q, std::string& err) {
    std::vector<uint8_t> o;
    uint8_t cq[hw::cmd_create_cq_in::kSize] = {};
    hw::set(cq, hw::cmd_create_cq_in::log_size, h.log_cq);
    hw::set(cq, hw::cmd_create_cq_in::domain_id, h.dom);
    hw::set(cq, hw::cmd_create_cq_in::base, reinterpret_cast<uint64_t>(q.cq));
    if (!h.cmd(hw::CmdOpcode::CreateCq, cq, sizeof cq, hw::cmd_handle::kSize, &o, err)) return false;
    q.cqn = Host::handle(o);
    namespace c = hw::cmd_create_qp_in;
    uint8_t in[c::kSize] = {};
    hw::set(in, c::qp_type, uint8_t(hw::QpType::Rc));
    hw::set(in, c::pdn, h.pdn);
    hw::set(in, c::send_cqn, q.cqn);
    hw::set(in, c::recv_cqn, q.cqn);
    hw::set(in, c::domain_id, h.dom);
    hw::set(in, c::sq_base, reinterpret_cast<uint64_t>(q.sq.base));
    hw::set(in, c::rq_base, reinterpret_cast<uint64_t>(q.rq.base));
    hw::set(in, c::log_sq_size, q.sq.log_size);
    hw::set(in, c::log_sq_stride, q.sq.log_stride);
    hw::set(in, c::log_rq_size, q.rq.log_size);
    hw::set(in, c::log_rq_stride, q.rq.log_stride);
    hw::set(in, c::max_send_sge, 1);
    hw::set(in, c::max_recv_sge, 1);
    if (!h.cmd(hw::CmdOpcode::CreateQp, in, sizeof in, hw::cmd_handle::kSize, &o, err)) return false;
    q.qpn = Host::handle(o);
    namespace m = hw::qp_attr_mask;
    namespace f = hw::qp_attr;
    uint8_t at[f::kSize] = {};
    hw::set(at, f::port_num, 1);
    hw::set(at, f::qp_access_flags, hw::access::kRemoteWrite | hw::access::kRemoteRead);
    return modify(h, q.qpn, m::kPkeyIndex | m::kPort | m::kAccessFlags, hw::QpState::Init, at, err);
}

// RTR then RTS, connected to `peer_qpn` on `peer` (its IPv4 address, GID 1:
// ::ffff:a.b.c.d as WireNetdev orders the GID table).
bool FabricBench::connect(Host& h, Qp& q, const Host& peer, uint32_t peer_qpn, std::string& err) {
    namespace m = hw::qp_attr_mask;
    namespace f = hw::qp_attr;
    uint8_t at[f::kSize] = {};
    hw::AddressVector av;
    av.dgid = mapped(peer.spec.ipv4);
    av.sgid_index = 1;
    av.hop_limit = 64;
    av.traffic_class = spec_.traffic_class;
    av.grh = true;
    hw::encode_av(at + f::av_dgid.offset, av);
    hw::set(at, f::path_mtu, uint8_t(hw::Mtu::M4096));
    hw::set(at, f::dest_qp_num, peer_qpn);
    hw::set(at, f::max_dest_rd_atomic, 16);
    hw::set(at, f::min_rnr_timer, 1);
    if (!modify(h, q.qpn, m::kAv | m::kPathMtu | m::kDestQpn | m::kRqPsn | m::kMaxDestRdAtomic | m::kMinRnrTimer,
                hw::QpState::Rtr, at, err))
        return false;
    std::memset(at, 0, sizeof at);
    hw::set(at, f::timeout, spec_.timeout);
    hw::set(at, f::retry_cnt, 7);
    hw::set(at, f::rnr_retry, 7);
    hw::set(at, f::max_rd_atomic, 16);
    return modify(h, q.qpn, m::kSqPsn | m::kTimeout | m::kRetryCnt | m::kRnrRetry | m::kMaxQpRdAtomic,
                  hw::QpState::Rts, at, err);
}

void FabricBench::post_write(Host& h, Qp& q) {
    const Host& r = *hosts_[flows_[q.flow].second];
    hw::SendWqe w;
    w.opcode = hw::WrOpcode::RdmaWrite;
    w.signaled = true;
    w.wr_id = posted_[q.flow];
    w.raddr = {r.mem.addr(r.data_off + spec_.size + 4096), r.rkey};
    w.num_sge = 1;
    w.sge[0] = {h.mem.addr(h.data_off), spec_.size, h.lkey};
    hw::encode_send(w, hw::QpType::Rc, q.sq.slot(q.sq.pi), 1u << q.sq.log_stride);
    ++q.sq.pi;
    if (posted_[q.flow] == 0) first_ps_[q.flow] = fabric_->now_ps();
    ++posted_[q.flow];
    h.ctx->ring_doorbell(hw::DbKind::Sq, q.qpn, q.sq.pi);
}

FabricBench::RpMean FabricBench::rp_mean(size_t fl) {
    Host& h = *hosts_[flows_[fl].first];
    RpMean m;
    for (const soft_engine::QpCongestionStats& c : h.engine->congestion_stats()) {
        const bool mine = std::any_of(h.qps.begin(), h.qps.end(),
                                      [&](const Qp& q) { return q.sender && q.flow == fl && q.qpn == c.qpn; });
        if (!mine) continue;
        ++m.qps;
        m.rc_gbps += c.rate_bps / 1e9;
        m.rt_gbps += c.target_rate_bps / 1e9;
        m.alpha += c.alpha;
        m.rate_limited_ns += c.counters.rate_limited_ns;
        m.cnps += c.counters.cnps_received;
    }
    if (m.qps) {
        m.rc_gbps /= m.qps;
        m.rt_gbps /= m.qps;
        m.alpha /= m.qps;
    }
    return m;
}

// Samples every flow's reaction points at each bin end up to `upto_ps`
// that the simulation has reached (the caller ran it there).
void FabricBench::sample_rp_due(uint64_t upto_ps) {
    if (!sample_rp_) return;
    const uint64_t bin_ps = spec_.bin_ns * 1000;
    for (; next_rp_ps_ <= upto_ps; next_rp_ps_ += bin_ps)
        for (size_t fl = 0; fl < flows_.size(); ++fl) rp_bins_[fl].push_back(rp_mean(fl));
}

// Simulates to `ps`, stopping at each bin's end on the way to sample.
// Stopping changes nothing simulated: the scheduler runs the same events
// in the same order, and reading a reaction point only applies the timers
// due by then, which it would apply at the same times later.
void FabricBench::run_to(uint64_t ps) {
    while (sample_rp_ && next_rp_ps_ <= ps) {
        fabric_->run_until(next_rp_ps_);
        sample_rp_due(next_rp_ps_);
    }
    fabric_->run_until(ps);
}

// Simulates until idle, as Fabric::run(), sampling at each bin's end.
void FabricBench::run_while_busy() {
    if (!sample_rp_) {
        fabric_->run();
        return;
    }
    while (fabric_->run_until_or_idle(next_rp_ps_)) sample_rp_due(next_rp_ps_);
}

// A CQE became visible on host `hi` (in simulated time): consume them, post
// the next WRITE while the flow has messages left.
void FabricBench::on_cqe(size_t hi, uint32_t cqn) {
    Host& h = *hosts_[hi];
    auto it = h.by_cqn.find(cqn);
    if (it == h.by_cqn.end()) return;
    Qp& q = h.qps[it->second];
    while (const uint8_t* e = hw::cqe_peek(q.cq, q.cq_ci, h.log_cq)) {
        const hw::Cqe c = hw::decode_cqe(e);
        ++q.cq_ci;
        if (!c.is_send || !q.sender) continue;
        const size_t fl = q.flow;
        const uint64_t now = fabric_->now_ps();
        if (c.status == hw::WcStatus::Success) {
            ++done_[fl];
            last_ps_[fl] = now;
            const size_t bin = size_t(now / (spec_.bin_ns * 1000));
            if (bytes_bin_[fl].size() <= bin) bytes_bin_[fl].resize(bin + 1, 0);
            bytes_bin_[fl][bin] += spec_.size;
        } else {
            ++errors_[fl];
        }
        ++all_done_;
        if (more(fl) && c.status == hw::WcStatus::Success) post_write(h, q);
    }
    h.ctx->ring_doorbell(hw::DbKind::Cq, q.cqn, q.cq_ci, 0);
}

uint64_t stat_of(const std::vector<std::pair<std::string, uint64_t>>& s, const char* name) {
    for (const auto& [n, v] : s)
        if (n == name) return v;
    return 0;
}
double model_stat(const std::vector<ModelStat>& s, const char* name) {
    for (const ModelStat& m : s)
        if (m.name == name) return m.value;
    return 0;
}

bool FabricBench::run(FabricBenchResult& out, std::string& err) {
    if (spec_.qps == 0 || spec_.depth == 0 || spec_.size == 0 || spec_.messages == 0) {
        err = "qps, depth, size and messages must be at least 1";
        return false;
    }
    if (!(spec_.duration_us >= 0)) {
        err = "the duration must not be negative";
        return false;
    }
    const fabric::Topology& t = spec_.topo;
    auto find = [&](const std::string& name, size_t& idx) {
        for (size_t i = 0; i < t.hosts.size(); ++i)
            if (t.hosts[i].name == name) {
                idx = i;
                return true;
            }
        err = "no host named '" + name + "' in the topology";
        return false;
    };
    if (!spec_.flows.empty()) {
        for (const FabricBenchSpec::Flow& f : spec_.flows) {
            size_t from = 0, to = 0;
            if (!find(f.from, from) || !find(f.to, to)) return false;
            if (from == to) {
                err = "flow " + f.from + " -> " + f.to + ": a host cannot send to itself through the switch";
                return false;
            }
            flows_.emplace_back(from, to);
        }
    } else {
        if (!spec_.receiver.empty() && !find(spec_.receiver, recv_)) return false;
        if (spec_.senders.empty()) {
            for (size_t i = 0; i < t.hosts.size(); ++i)
                if (i != recv_) flows_.emplace_back(i, recv_);
        } else {
            for (const std::string& s : spec_.senders) {
                size_t i = 0;
                if (!find(s, i)) return false;
                if (i == recv_) {
                    err = "host '" + s + "' is the receiver; it cannot also send to itself";
                    return false;
                }
                flows_.emplace_back(i, recv_);
            }
        }
    }
    log_stride_ = std::max(hw::kMinLogSqStride, log2_ceil(hw::send_wqe_max_size(1, 0)));
    log_rq_stride_ = std::max(hw::kMinLogRqStride, log2_ceil(hw::recv_wqe_size(1)));
    fabric::Topology topo = spec_.topo;
    if (topo.sw.depth_sample_ps == 0) topo.sw.depth_sample_ps = 1'000'000;  // 1 us
    fabric_ = fabric::Fabric::create(topo, err);
    if (!fabric_) return false;
    for (size_t i = 0; i < t.hosts.size(); ++i)
        if (!device_setup(i, err)) return false;
    if (!fabric_->start(err)) return false;
    std::unique_ptr<roce::PcapWriter> pcap;
    if (!spec_.pcap.empty()) {
        pcap = roce::PcapWriter::open(spec_.pcap, err);
        if (!pcap) return false;
    }
    const size_t nflows = flows_.size();
    // Each frame leaving a sender's MAC TX for a flow's destination (by
    // destination MAC) counts for that flow, in the bin of the time it left.
    wire_bin_.assign(nflows, {});
    wire_frames_.assign(nflows, 0);
    wire_bytes_.assign(nflows, 0);
    {
        roce::PcapWriter* w = pcap.get();
        fabric_->tap([this, w](size_t host, bool to_host, const std::vector<uint8_t>& f, uint64_t ps) {
            if (w) w->write(f, ps / 1'000'000);
            if (!measuring_ || f.size() < 14) return;
            if (to_host) {
                // A PFC frame (MAC control) reaching a host: when pauses happen.
                if (f[12] == 0x88 && f[13] == 0x08) {
                    ++pfc_to_hosts_;
                    last_pfc_ps_ = ps - t0_ps_;
                }
                return;
            }
            for (size_t fl = 0; fl < flows_.size(); ++fl) {
                if (flows_[fl].first != host) continue;
                const auto& mac = spec_.topo.hosts[flows_[fl].second].mac;
                if (!std::equal(mac.begin(), mac.end(), f.begin())) continue;
                ++wire_frames_[fl];
                wire_bytes_[fl] += f.size();
                const size_t bin = size_t((ps - t0_ps_) / (spec_.bin_ns * 1000));
                if (wire_bin_[fl].size() <= bin) wire_bin_[fl].resize(bin + 1, 0);
                wire_bin_[fl][bin] += double(f.size());
                break;
            }
        });
    }
    posted_.assign(nflows, 0);
    done_.assign(nflows, 0);
    errors_.assign(nflows, 0);
    first_ps_.assign(nflows, 0);
    last_ps_.assign(nflows, 0);
    bytes_bin_.assign(nflows, {});
    // Each flow's QPs on its sender, and as many on its destination.
    std::vector<uint32_t> nqps(hosts_.size(), 0), next(hosts_.size(), 0);
    for (const auto& [from, to] : flows_) {
        nqps[from] += spec_.qps;
        nqps[to] += spec_.qps;
    }
    for (size_t i = 0; i < hosts_.size(); ++i)
        if (nqps[i] && !host_setup(*hosts_[i], nqps[i], err)) return false;
    for (size_t fl = 0; fl < nflows; ++fl) {
        Host& s = *hosts_[flows_[fl].first];
        Host& d = *hosts_[flows_[fl].second];
        for (uint32_t k = 0; k < spec_.qps; ++k) {
            Qp& sq = s.qps[next[flows_[fl].first]++];
            Qp& rq = d.qps[next[flows_[fl].second]++];
            sq.flow = fl;
            sq.sender = true;
            if (!connect(s, sq, d, rq.qpn, err) || !connect(d, rq, s, sq.qpn, err)) return false;
        }
    }
    for (size_t i = 0; i < hosts_.size(); ++i) {
        hosts_[i]->pipe->on_cqe([this, i](uint32_t cqn) { on_cqe(i, cqn); });
    }
    fabric_->run();  // the setup's commands
    for (Host* h : [&] {
             std::vector<Host*> v;
             for (auto& p : hosts_) v.push_back(p.get());
             return v;
         }())
        h->pipe->reset_stats();
    total_ = uint64_t(nflows) * spec_.messages;
    const uint64_t t0 = fabric_->now_ps();
    t0_ps_ = t0;
    for (size_t fl = 0; fl < nflows; ++fl) first_ps_[fl] = t0;
    measuring_ = true;  // the wire series from here, binned from t0
    sample_rp_ = spec_.cfg.congestion.enable != 0;
    next_rp_ps_ = t0 + spec_.bin_ns * 1000;  // the first bin's end
    rp_bins_.assign(nflows, {});
    // Each flow's start: t0, or t0 plus its draw from the jitter
    // (splitmix64 of the switch's seed and the flow, so that a seed repeats).
    std::vector<uint64_t> start(nflows, t0);
    if (spec_.start_jitter_us > 0)
        for (size_t fl = 0; fl < nflows; ++fl)
            start[fl] = t0 + uint64_t(unit_draw(spec_.topo.sw.seed, fl) * spec_.start_jitter_us * 1e6);
    std::vector<size_t> order(nflows);
    for (size_t fl = 0; fl < nflows; ++fl) order[fl] = fl;
    std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) { return start[x] < start[y]; });
    // Each flow's queues filled at its start (every sender's at the same
    // instant without jitter), round robin over its QPs.
    std::vector<bool> starting(nflows, false);
    for (size_t k = 0; k < nflows;) {
        const uint64_t at = start[order[k]];
        run_to(at);
        std::fill(starting.begin(), starting.end(), false);
        for (; k < nflows && start[order[k]] == at; ++k) starting[order[k]] = true;
        for (uint32_t d = 0; d < spec_.depth; ++d)
            for (auto& hp : hosts_)
                for (Qp& q : hp->qps)
                    if (q.sender && starting[q.flow] && (spec_.duration_us > 0 || posted_[q.flow] < spec_.messages))
                        post_write(*hp, q);
    }
    const uint64_t w0 = base::mono_ns();
    for (;;) {
        run_while_busy();
        uint64_t ended = 0;
        for (size_t fl = 0; fl < nflows; ++fl) ended += done_[fl] + errors_[fl];
        if (spec_.duration_us > 0) {
            // Posting stops at the duration; then what was posted ends.
            uint64_t posted = 0;
            bool posting = false;
            for (size_t fl = 0; fl < nflows; ++fl) {
                posted += posted_[fl];
                posting |= more(fl);
            }
            total_ = posted;
            if (!posting && ended >= posted) break;
        } else if (ended >= total_) {
            break;
        }
        // Idle with messages outstanding. The protocol timers are the
        // fabric's (simulated time), so an idle fabric has none armed and
        // this is a stall; the engines are still given their host-time
        // timers, if any, until the wall-clock limit.
        if (double(base::mono_ns() - w0) / 1e9 > spec_.wall_limit_s) {
            err = "the workload stalled: " + std::to_string(ended) + " of " + std::to_string(total_) +
                  " messages ended after " + std::to_string(spec_.wall_limit_s) + " s";
            return false;
        }
        ++out.timer_polls;
        bool any = false;
        for (auto& h : hosts_) any |= h->engine->poll(base::mono_ns());
        if (!any) std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    out.wall_s = double(base::mono_ns() - w0) / 1e9;
    if (pcap) {
        fabric_->tap(nullptr);
        pcap->flush();
    }
    out.sim_ns = double(fabric_->now_ps() - t0) / 1000.0;
    {
        double payload = 0, wire = 0;
        for (size_t fl = 0; fl < nflows; ++fl) {
            payload += double(done_[fl]) * spec_.size;
            wire += double(wire_bytes_[fl]);
        }
        out.goodput_gbps = out.sim_ns > 0 ? payload * 8.0 / out.sim_ns : 0;
        out.wire_gbps = out.sim_ns > 0 ? wire * 8.0 / out.sim_ns : 0;
    }
    out.bin_ns = double(spec_.bin_ns);
    std::ostringstream depth;
    fabric_->write_depth_csv(depth);  // flushes every switch's series
    out.depth_csv = depth.str();
    for (size_t fl = 0; fl < nflows; ++fl) {
        const size_t hi = flows_[fl].first;
        Host& h = *hosts_[hi];
        FabricFlow f;
        f.host = h.spec.name;
        f.to = hosts_[flows_[fl].second]->spec.name;
        f.messages = done_[fl];
        f.errors = errors_[fl];
        const uint64_t span = last_ps_[fl] > first_ps_[fl] ? last_ps_[fl] - first_ps_[fl] : 0;
        f.gbps = span ? double(done_[fl]) * spec_.size * 8.0 * 1000.0 / double(span) : 0;
        const auto st = soft_engine::read_stats(h.bar.p);
        f.retransmits = stat_of(st, "retransmits");
        f.naks_received = stat_of(st, "rx_nak_psn_seq");
        const auto ms = h.pipe->stats();
        f.pfc_received = uint64_t(model_stat(ms, "mac.pfc_rx_frames"));
        f.pfc_held = uint64_t(model_stat(ms, "mac.pfc_paused_frames"));
        const auto at = fabric_->host_at(hi);
        for (unsigned p = 0; p < fabric::kPriorities; ++p) f.drops += fabric_->sw(at.first).counters(at.second, p).drops;
        f.ce_marked = fabric_->ce_frames_from(hi);
        f.cnp_received = stat_of(st, "cnp_received");
        f.rate_limit_holds = stat_of(st, "rate_limit_holds");
        f.wire_frames = wire_frames_[fl];
        f.wire_bytes = wire_bytes_[fl];
        f.starts_us = {double(start[fl] - t0) / 1e6};
        // The flow's QPs' reaction points, as `simnic stats` shows them.
        const RpMean rp = rp_mean(fl);
        f.rate_gbps = rp.rc_gbps;
        f.target_rate_gbps = rp.rt_gbps;
        f.alpha = rp.alpha;
        f.rate_limited_ns = rp.rate_limited_ns;
        f.rp_cnps = rp.cnps;
        for (const RpMean& b : rp_bins_[fl]) {
            f.rc_gbps_series.push_back(b.rc_gbps);
            f.rt_gbps_series.push_back(b.rt_gbps);
            f.alpha_series.push_back(b.alpha);
        }
        // Bins from the measurement's start.
        const size_t b0 = size_t(t0 / (spec_.bin_ns * 1000));
        for (size_t b = b0; b < bytes_bin_[fl].size(); ++b)
            f.gbps_series.push_back(bytes_bin_[fl][b] * 8.0 / double(spec_.bin_ns));
        for (double bytes : wire_bin_[fl]) f.wire_gbps_series.push_back(bytes * 8.0 / double(spec_.bin_ns));
        out.flows.push_back(std::move(f));
    }
    for (size_t k = 0; k < fabric_->switches(); ++k) {
        const fabric::Switch& sw = fabric_->sw(k);
        FabricBenchResult::SwitchPorts sp;
        sp.name = sw.name();
        sp.pauses_sent.assign(sw.ports(), 0);
        sp.drops.assign(sw.ports(), 0);
        sp.marks.assign(sw.ports(), 0);
        for (uint32_t port = 0; port < sw.ports(); ++port) {
            fabric::PortPrioCounters c;
            for (unsigned p = 0; p < fabric::kPriorities; ++p) c.add(sw.counters(port, p));
            sp.pauses_sent[port] = c.pause_sent;
            sp.drops[port] = c.drops;
            sp.marks[port] = c.ecn_marked;
            out.switch_drops += c.drops;
            out.switch_marks += c.ecn_marked;
            out.switch_pauses += c.pause_sent;
            out.switch_resumes += c.resume_sent;
            bool dest = false;
            for (const auto& fl : flows_) dest |= fabric_->host_at(fl.second) == std::make_pair(uint32_t(k), port);
            if (dest) out.max_queue_bytes = std::max(out.max_queue_bytes, c.max_depth_bytes);
        }
        for (uint32_t port = 0; port < sw.ports(); ++port) out.switch_no_route += sw.port_counters(port).no_route;
        out.shared_peak = std::max(out.shared_peak, sw.shared_peak());
        out.switches.push_back(std::move(sp));
    }
    std::vector<bool> counted(hosts_.size(), false);
    for (const auto& fl : flows_)
        if (!counted[fl.second]) {
            counted[fl.second] = true;
            const auto st = soft_engine::read_stats(hosts_[fl.second]->bar.p);
            out.receiver_naks_sent += stat_of(st, "tx_nak_psn_seq");
            out.receiver_ce_packets += stat_of(st, "ce_packets");
            out.receiver_cnp_sent += stat_of(st, "cnp_sent");
            out.receiver_cnp_suppressed += stat_of(st, "cnp_suppressed");
        }
    out.congestion_on = spec_.cfg.congestion.enable != 0;
    out.pfc_frames_to_hosts = pfc_to_hosts_;
    out.last_pfc_ns = double(last_pfc_ps_) / 1000.0;
    // The destinations' egress queues over time: the deepest of them at
    // each sample.
    out.start_ns = double(t0) / 1000.0;
    out.depth_sample_ns = double(topo.sw.depth_sample_ps) / 1000.0;
    for (size_t k = 0; k < fabric_->switches(); ++k)
        for (uint32_t port = 0; port < fabric_->sw(k).ports(); ++port) {
            bool dest = false;
            for (const auto& fl : flows_) dest |= fabric_->host_at(fl.second) == std::make_pair(uint32_t(k), port);
            if (!dest) continue;
            for (unsigned p = 0; p < fabric::kPriorities; ++p) {
                const std::vector<uint64_t>& s = fabric_->sw(k).depth_series(port, p);
                if (out.dest_depth_bytes.size() < s.size()) out.dest_depth_bytes.resize(s.size(), 0);
                for (size_t i = 0; i < s.size(); ++i)
                    out.dest_depth_bytes[i] = std::max(out.dest_depth_bytes[i], double(s[i]));
            }
        }
    return true;
}

}  // namespace

bool run_fabric_bench(const FabricBenchSpec& spec, FabricBenchResult& out, std::string& err) {
    FabricBench b(spec);
    return b.run(out, err);
}

std::string fabric_throughput_csv(const FabricBenchResult& r) {
    std::ostringstream os;
    os << "time_us";
    size_t bins = 0;
    for (const FabricFlow& f : r.flows) {
        os << "," << f.host << "_" << f.to << "_gbps";
        bins = std::max(bins, f.gbps_series.size());
    }
    os << "\n";
    for (size_t b = 0; b < bins; ++b) {
        os << double(b) * r.bin_ns / 1000.0;
        for (const FabricFlow& f : r.flows) os << "," << (b < f.gbps_series.size() ? f.gbps_series[b] : 0.0);
        os << "\n";
    }
    return os.str();
}

std::string fabric_rates_csv(const FabricBenchResult& r) {
    std::ostringstream os;
    os << "# simnic bench --fabric: each flow's frames leaving its sender, Gb/s per " << r.bin_ns / 1000.0
       << " us (t_us: the interval's end, from the measurement's start)\n";
    os << "t_us";
    size_t bins = 0;
    for (size_t i = 0; i < r.flows.size(); ++i) {
        os << ",rate_gbps_" << i;
        bins = std::max(bins, r.flows[i].wire_gbps_series.size());
    }
    const bool queue = !r.dest_depth_bytes.empty() && r.depth_sample_ns > 0;
    if (queue) os << ",queue_bytes";
    os << "\n";
    for (size_t b = 0; b < bins; ++b) {
        const double end_ns = double(b + 1) * r.bin_ns;
        os << end_ns / 1000.0;
        for (const FabricFlow& f : r.flows) os << "," << (b < f.wire_gbps_series.size() ? f.wire_gbps_series[b] : 0.0);
        if (queue) {
            // The sample at the interval's end (or the last one).
            const size_t k = std::min(r.dest_depth_bytes.size() - 1, size_t((r.start_ns + end_ns) / r.depth_sample_ns));
            os << "," << r.dest_depth_bytes[k];
        }
        os << "\n";
    }
    return os.str();
}

std::string fabric_dcqcn_csv(const FabricBenchResult& r, const std::string& about) {
    std::ostringstream os;
    if (about.empty())
        os << "# simnic bench --fabric: each flow's DCQCN reaction point (the mean over its QPs) at each "
           << r.bin_ns / 1000.0 << " us from the measurement's start: Rc and Rt in Gb/s, alpha\n";
    else
        os << "# " << about << "\n";
    os << "t_us";
    size_t bins = 0;
    for (const FabricFlow& f : r.flows) {
        const std::string n = f.host + "_" + f.to;
        os << "," << n << "_rc_gbps," << n << "_rt_gbps," << n << "_alpha";
        bins = std::max(bins, f.rc_gbps_series.size());
    }
    os << "\n";
    for (size_t b = 0; b < bins; ++b) {
        os << double(b + 1) * r.bin_ns / 1000.0;
        for (const FabricFlow& f : r.flows) {
            for (const std::vector<double>* s : {&f.rc_gbps_series, &f.rt_gbps_series, &f.alpha_series}) {
                os << ",";
                if (b < s->size() && !std::isnan((*s)[b])) os << (*s)[b];
            }
        }
        os << "\n";
    }
    return os.str();
}

std::string fabric_dcqcn_svg(const FabricBenchResult& r, const std::string& title) {
    PlotSpec p;
    p.title = title;
    p.x = {"simulated time (us)"};
    p.y_left = {"Rc, the rate limiter's rate (Gb/s)"};
    p.y_right = {"alpha"};
    p.y_left.min = p.y_right.min = 0;
    p.y_right.max = 1;
    for (const FabricFlow& f : r.flows) {
        Series rc{f.host + " -> " + f.to + ", Rc", {}, {}};
        Series alpha{f.host + " -> " + f.to + ", alpha", {}, {}};
        // (A NaN, where a QP did not exist, is no point: render_svg leaves
        // out what is not finite.)
        for (size_t b = 0; b < f.rc_gbps_series.size(); ++b) {
            const double t_us = double(b + 1) * r.bin_ns / 1000.0;
            rc.x.push_back(t_us);
            rc.y.push_back(f.rc_gbps_series[b]);
            alpha.x.push_back(t_us);
            alpha.y.push_back(f.alpha_series[b]);
        }
        p.left.push_back(std::move(rc));
        p.right.push_back(std::move(alpha));
    }
    return render_svg(p);
}

std::string fabric_throughput_svg(const FabricBenchResult& r, const std::string& title) {
    PlotSpec p;
    p.title = title;
    p.x = {"simulated time (us)"};
    p.y_left = {"throughput (Gb/s)"};
    p.y_left.min = 0;
    for (const FabricFlow& f : r.flows) {
        Series s{f.host + " -> " + f.to, {}, {}};
        for (size_t b = 0; b < f.gbps_series.size(); ++b) {
            s.x.push_back(double(b) * r.bin_ns / 1000.0);
            s.y.push_back(f.gbps_series[b]);
        }
        p.left.push_back(std::move(s));
    }
    return render_svg(p);
}

std::string fabric_depth_svg(const FabricBenchResult& r, const std::string& title) {
    // The depth CSV: time_ns, then a column per queue that held a frame.
    PlotSpec p;
    p.title = title;
    p.x = {"simulated time (us)"};
    p.y_left = {"egress queue depth (KB)"};
    p.y_left.min = 0;
    std::istringstream is(r.depth_csv);
    std::string line;
    std::vector<Series> cols;
    bool head = true;
    while (std::getline(is, line)) {
        std::vector<std::string> cells;
        std::stringstream ls(line);
        for (std::string c; std::getline(ls, c, ',');) cells.push_back(c);
        if (cells.empty()) continue;
        if (head) {
            for (size_t i = 1; i < cells.size(); ++i) cols.push_back(Series{cells[i], {}, {}});
            head = false;
            continue;
        }
        const double t_us = std::stod(cells[0]) / 1000.0;
        for (size_t i = 1; i < cells.size() && i - 1 < cols.size(); ++i) {
            cols[i - 1].x.push_back(t_us);
            cols[i - 1].y.push_back(std::stod(cells[i]) / 1000.0);
        }
    }
    p.left = std::move(cols);
    return render_svg(p);
}

std::string fabric_fluid_svg(const FabricBenchResult& r, const FabricFluid& ff, const std::string& title) {
    PlotSpec p;
    p.title = title;
    p.x = {"simulated time (us)"};
    p.y_left = {"on the wire (Gb/s)"};
    p.y_right = {"fluid model (Gb/s)"};
    // One scale for both: the two sides are the same quantity.
    double top = 0;
    for (const auto* s : {&ff.fabric, &ff.fluid})
        for (const std::vector<double>& f : s->rate_bps)
            for (double v : f) top = std::max(top, v / 1e9);
    p.y_left.min = p.y_right.min = 0;
    p.y_left.max = p.y_right.max = top > 0 ? top : 1;
    // The model is integrated in steps far finer than the fabric's bins: a
    // point per bin (the last step at or before the bin's end) keeps the
    // file small and its markers apart.
    const double bin_s = ff.fabric.t_s.size() > 1 ? ff.fabric.t_s[1] - ff.fabric.t_s[0] : 0;
    for (size_t i = 0; i < ff.fabric.flows(); ++i) {
        const std::string name = i < r.flows.size() ? r.flows[i].host + " -> " + r.flows[i].to : "flow " + std::to_string(i);
        Series wire{name + ", fabric", {}, {}};
        for (size_t k = 0; k < ff.fabric.samples(); ++k) {
            wire.x.push_back(ff.fabric.t_s[k] * 1e6);
            wire.y.push_back(ff.fabric.rate_bps[i][k] / 1e9);
        }
        p.left.push_back(std::move(wire));
        if (i >= ff.fluid.flows()) continue;
        Series fluid{name + ", fluid model", {}, {}};
        double next = 0;
        for (size_t k = 0; k < ff.fluid.samples(); ++k) {
            const bool last = k + 1 == ff.fluid.samples();
            if (ff.fluid.t_s[k] < next && !last) continue;
            fluid.x.push_back(ff.fluid.t_s[k] * 1e6);
            fluid.y.push_back(ff.fluid.rate_bps[i][k] / 1e9);
            next = ff.fluid.t_s[k] + bin_s;
        }
        p.right.push_back(std::move(fluid));
    }
    return render_svg(p);
}

FabricBenchResult mean_of_runs(const std::vector<FabricBenchResult>& runs) {
    if (runs.empty()) return {};
    // The runs of one fabric and workload have the same flows; any other
    // takes no part.
    std::vector<const FabricBenchResult*> same;
    for (const FabricBenchResult& r : runs)
        if (r.flows.size() == runs[0].flows.size()) same.push_back(&r);
    FabricBenchResult m = runs[0];
    const double n = double(same.size());
    auto average = [&](std::vector<double>& into, auto&& series_of) {
        size_t len = into.size();
        for (const FabricBenchResult* r : same) len = std::min(len, series_of(*r).size());
        into.assign(len, 0.0);
        for (const FabricBenchResult* r : same)
            for (size_t b = 0; b < len; ++b) into[b] += series_of(*r)[b] / n;
    };
    for (size_t i = 0; i < m.flows.size(); ++i) {
        FabricFlow& f = m.flows[i];
        f.wire_frames = f.wire_bytes = 0;
        f.starts_us.clear();
        for (const FabricBenchResult* r : same) {
            f.wire_frames += r->flows[i].wire_frames;
            f.wire_bytes += r->flows[i].wire_bytes;
            f.starts_us.insert(f.starts_us.end(), r->flows[i].starts_us.begin(), r->flows[i].starts_us.end());
        }
        average(f.wire_gbps_series,
                [i](const FabricBenchResult& r) -> const std::vector<double>& { return r.flows[i].wire_gbps_series; });
        average(f.gbps_series,
                [i](const FabricBenchResult& r) -> const std::vector<double>& { return r.flows[i].gbps_series; });
        average(f.rc_gbps_series,
                [i](const FabricBenchResult& r) -> const std::vector<double>& { return r.flows[i].rc_gbps_series; });
        average(f.rt_gbps_series,
                [i](const FabricBenchResult& r) -> const std::vector<double>& { return r.flows[i].rt_gbps_series; });
        average(f.alpha_series,
                [i](const FabricBenchResult& r) -> const std::vector<double>& { return r.flows[i].alpha_series; });
    }
    average(m.dest_depth_bytes, [](const FabricBenchResult& r) -> const std::vector<double>& { return r.dest_depth_bytes; });
    m.goodput_gbps = m.wire_gbps = 0;
    for (const FabricBenchResult* r : same) {
        m.goodput_gbps += r->goodput_gbps / n;
        m.wire_gbps += r->wire_gbps / n;
    }
    return m;
}

bool fabric_fluid(const FabricBenchSpec& spec, const FabricBenchResult& r, double from_s, double window_s,
                  FabricFluid& out, std::string& err, bool reference) {
    namespace fl = congestion::fluid;
    if (r.flows.empty() || r.bin_ns <= 0) {
        err = "the run has no flows to compare";
        return false;
    }
    if (!r.congestion_on) {
        err = "congestion control is off in the run: there is no DCQCN to compare (turn it on with the devices' "
              "config, [congestion] enable = 1)";
        return false;
    }
    const fabric::Topology& t = spec.topo;
    auto host = [&](const std::string& name) -> const fabric::HostSpec* {
        for (const fabric::HostSpec& h : t.hosts)
            if (h.name == name) return &h;
        return nullptr;
    };
    const fabric::HostSpec* dest = host(r.flows[0].to);
    const fabric::HostSpec* src = host(r.flows[0].host);
    if (!dest || !src) {
        err = "the run's hosts are not the topology's";
        return false;
    }
    for (const FabricFlow& f : r.flows)
        if (f.to != r.flows[0].to) {
            err = "the fluid model has one bottleneck: every flow must go to one destination";
            return false;
        }
    uint64_t frames = 0, bytes = 0;
    for (const FabricFlow& f : r.flows) {
        frames += f.wire_frames;
        bytes += f.wire_bytes;
    }
    if (!frames) {
        err = "the run sent no frames";
        return false;
    }
    const double frame = double(bytes) / double(frames);
    fl::Scenario& sc = out.scenario;
    sc.flows = unsigned(r.flows.size());
    // The destination's link carries frame + 20 bytes of preamble and gap
    // per frame; DCQCN counts the frame.
    const double overhead = double(t.sw.overhead_bytes);
    sc.bottleneck_bps = dest->rate_gbps * 1e9 * frame / (frame + overhead);
    sc.packet_bytes = uint32_t(frame + 0.5);
    sc.link_delay_s = double(src->delay_ps + t.sw.forwarding_latency_ps) * 1e-12;
    const uint8_t dscp = spec.traffic_class >> 2;
    const fabric::SwitchPriorityConfig& pc = t.sw.priority[t.sw.dscp_to_priority[dscp] % fabric::kPriorities];
    sc.red.kmin_bytes = double(pc.kmin_bytes);
    sc.red.kmax_bytes = double(pc.kmax_bytes);
    sc.red.pmax = pc.pmax;
    sc.rp = spec.cfg.congestion.dcqcn(src->rate_gbps);
    sc.np = spec.cfg.congestion.np();
    size_t bins = 0;
    for (const FabricFlow& f : r.flows) bins = std::max(bins, f.wire_gbps_series.size());
    sc.sample_s = r.bin_ns * 1e-9;
    sc.duration_s = double(bins) * sc.sample_s;
    // Each run's start times (one set for a run, one per run for a mean of
    // runs); none when every flow started at the measurement's start, as
    // without jitter.
    std::vector<std::vector<double>> starts(r.flows[0].starts_us.size(), std::vector<double>(r.flows.size()));
    bool together = true;
    for (size_t i = 0; i < r.flows.size(); ++i) {
        const std::vector<double>& st = r.flows[i].starts_us;
        if (st.size() != starts.size()) {
            err = "the flows have start times for different numbers of runs";
            return false;
        }
        for (size_t k = 0; k < st.size(); ++k) {
            starts[k][i] = st[k] * 1e-6;
            together &= st[k] == 0;
        }
    }
    if (together) starts.assign(1, {});
    // A model's series for this run: the mean of its runs for each set of
    // start times.
    auto over_starts = [&](auto&& model, const char* what, fl::Series& into) {
        std::vector<fl::Series> runs;
        for (const std::vector<double>& st : starts) {
            fl::Scenario one = sc;
            one.start_s = st;
            model(one, runs);
        }
        if (!fl::ensemble_mean(runs, into, err)) {
            err = std::string(what) + ": " + err;
            return false;
        }
        return true;
    };
    sc.start_s = starts[0];
    if (const std::string bad = fl::check(sc); !bad.empty()) {
        err = "the fabric's run is no fluid scenario:\n" + bad;
        return false;
    }
    if (!over_starts([](const fl::Scenario& one, std::vector<fl::Series>& runs) { runs.push_back(fl::integrate_fluid(one)); },
                     "the fluid model", out.fluid))
        return false;
    out.fabric = fl::Series{};
    out.fabric.rate_bps.assign(r.flows.size(), {});
    const bool queue = !r.dest_depth_bytes.empty() && r.depth_sample_ns > 0;
    for (size_t b = 0; b < bins; ++b) {
        const double end_ns = double(b + 1) * r.bin_ns;
        out.fabric.t_s.push_back(end_ns * 1e-9);
        for (size_t i = 0; i < r.flows.size(); ++i) {
            const auto& s = r.flows[i].wire_gbps_series;
            out.fabric.rate_bps[i].push_back(b < s.size() ? s[b] * 1e9 : 0);
        }
        if (queue) {
            const size_t k =
                std::min(r.dest_depth_bytes.size() - 1, size_t((r.start_ns + end_ns) / r.depth_sample_ns));
            out.fabric.queue_bytes.push_back(r.dest_depth_bytes[k]);
        }
    }
    out.flows = fl::compare(out.fluid, out.fabric, from_s, window_s);
    const fl::Series fabric_mean = fl::mean_of_flows(out.fabric), fluid_mean = fl::mean_of_flows(out.fluid);
    out.transient = fl::compare(fluid_mean, fabric_mean, 0, 1e-3);
    const double end = out.fabric.t_s.empty() ? 0 : out.fabric.t_s.back();
    out.fabric_queue_bytes = queue ? fl::mean_queue(out.fabric, from_s, end) : 0;
    out.fluid_queue_bytes = fl::mean_queue(out.fluid, from_s, end);
    out.fair_bps = sc.bottleneck_bps / sc.flows;
    out.fabric_converged_s = fl::convergence_time(fabric_mean, out.fair_bps, 1e-3, 0.1);
    out.fluid_converged_s = fl::convergence_time(fluid_mean, out.fair_bps, 1e-3, 0.1);
    if (!reference) return true;
    if (!over_starts(
            [](const fl::Scenario& one, std::vector<fl::Series>& runs) {
                for (uint64_t seed = 1; seed <= FabricFluid::kReferenceSeeds; ++seed)
                    runs.push_back(fl::simulate_packets(one, seed));
            },
            "the packet-level reference", out.reference))
        return false;
    const fl::Series reference_mean = fl::mean_of_flows(out.reference);
    out.transient_reference = fl::compare(reference_mean, fabric_mean, 0, 1e-3);
    out.transient_reference_share = fl::compare(reference_mean, fabric_mean, 0, 1e-3, out.fair_bps);
    out.reference_fluid = fl::compare(fluid_mean, reference_mean, 0, 1e-3);
    out.reference_converged_s = fl::convergence_time(reference_mean, out.fair_bps, 1e-3, 0.1);
    return true;
}

}  // namespace simnic::model
