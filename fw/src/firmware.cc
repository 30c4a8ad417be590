// SPDX-License-Identifier: Apache-2.0
// simnic firmware: construction, contexts, dispatch, the command-entry
// protocol, events and the port/GID state.
#include "simnic/fw/firmware.h"

#include <algorithm>
#include <vector>

#include "fw_internal.h"
#include "simnic/fw/gid.h"
#include "simnic/hw/cqe.h"
#include "simnic/roce/rules.h"

namespace simnic::fw {

namespace cb = hw::cap_block;
using hw::CmdOpcode;
using hw::CmdStatus;

// ---------------------------------------------------------------------------
// Allocators
// ---------------------------------------------------------------------------
bool Firmware::LowestFree::alloc(std::uint32_t& n) {
    if (!freed_.empty()) {
        n = *freed_.begin();
        freed_.erase(freed_.begin());
        return true;
    }
    if (next_ > hi_ || next_ < lo_) return false;
    n = next_++;
    return true;
}

void Firmware::LowestFree::free(std::uint32_t n) {
    if (n + 1 == next_) {
        --next_;
        // Keep the high-water mark tight so freed_ stays small.
        while (!freed_.empty() && *freed_.rbegin() + 1 == next_) {
            freed_.erase(std::prev(freed_.end()));
            --next_;
        }
    } else {
        freed_.insert(n);
    }
}

// ---------------------------------------------------------------------------
// Capability block defaults (hw-spec.md 2.4)
// ---------------------------------------------------------------------------
std::array<std::uint8_t, cb::kSize> default_cap_block(const DeviceLimits& lim) {
    namespace d = hw::caps_default;
    std::array<std::uint8_t, cb::kSize> c{};
    auto s = [&c](hw::Field f, std::uint64_t v) { put(c.data(), c.size(), f, v); };
    s(hw::reg_block_header::type, static_cast<std::uint32_t>(hw::BlockType::Cap));
    s(hw::reg_block_header::version, hw::kBlockVersion);
    s(hw::reg_block_header::next, hw::kBar0PortBlock);
    s(hw::reg_block_header::length, cb::kSize);
    s(cb::max_mr_size, d::max_mr_size);
    s(cb::page_size_cap, d::page_size_cap);
    s(cb::device_cap_flags, d::device_cap_flags);
    s(cb::max_qp, d::max_qp);
    s(cb::max_qp_wr, d::max_qp_wr);
    s(cb::max_sge, d::max_sge);
    s(cb::max_sge_rd, d::max_sge_rd);
    s(cb::max_cq, d::max_cq);
    s(cb::max_cqe, d::max_cqe);
    s(cb::max_mr, d::max_mr);
    s(cb::max_pd, d::max_pd);
    s(cb::max_qp_rd_atom, d::max_qp_rd_atom);
    s(cb::max_qp_init_rd_atom, d::max_qp_init_rd_atom);
    s(cb::max_res_rd_atom, d::max_res_rd_atom);
    s(cb::max_srq, d::max_srq);
    s(cb::max_srq_wr, d::max_srq_wr);
    s(cb::max_srq_sge, d::max_srq_sge);
    s(cb::max_ah, d::max_ah);
    s(cb::max_mw, d::max_mw);
    s(cb::max_pkeys, d::max_pkeys);
    s(cb::local_ca_ack_delay, d::local_ca_ack_delay);
    s(cb::atomic_cap, d::atomic_cap);
    s(cb::max_inline, d::max_inline);
    s(cb::max_mcast_grp, d::max_mcast_grp);
    s(cb::max_mcast_qp_attach, d::max_mcast_qp_attach);
    s(cb::max_total_mcast_qp_attach, d::max_total_mcast_qp_attach);
    s(cb::max_fast_reg_page_list_len, d::max_fast_reg_page_list_len);
    s(cb::phys_port_cnt, d::phys_port_cnt);
    s(cb::num_comp_vectors, d::num_comp_vectors);
    s(cb::max_ctx, lim.max_ctx);
    s(cb::max_domain, lim.max_domain);
    s(cb::log_max_cmdq, lim.log_max_cmdq);
    s(cb::log_max_eq, lim.log_max_eq);
    s(cb::log_max_sq_stride, hw::kMaxLogStride);
    s(cb::first_qpn, hw::kFirstUserQpn);
    s(cb::max_mtt, lim.max_mtt);
    s(cb::max_mbox_len, lim.max_mbox_len);
    s(cb::odp_general_caps, d::odp_general_caps);
    s(cb::odp_rc_caps, d::odp_rc_caps);
    s(cb::odp_uc_caps, d::odp_uc_caps);
    s(cb::odp_ud_caps, d::odp_ud_caps);
    return c;
}

// ---------------------------------------------------------------------------
// Construction and contexts
// ---------------------------------------------------------------------------
Firmware::Firmware(const FwConfig& cfg, TableStore& tables, NetdevInfo& netdev,
                   EventSink& events, EngineHooks* engine)
    : cfg_(cfg), tables_(tables), netdev_(netdev), events_(events), engine_(engine) {
    auto lim = [this](Table t, std::uint64_t want) {
        // Never hand out a number the store cannot hold.
        const std::uint64_t capn = tables_.capacity(t);
        return static_cast<std::uint32_t>(std::min<std::uint64_t>(want, capn ? capn - 1 : 0));
    };
    cqn_ = LowestFree(1, lim(Table::Cqc, cap(cb::max_cq)));
    srqn_ = LowestFree(1, lim(Table::Srqc, cap(cb::max_srq)));
    pdn_ = LowestFree(1, lim(Table::Pd, cap(cb::max_pd)));
    // MPT indices: MRs 1 .. max_mr, then windows up to max_mr + max_mw (9.5).
    const std::uint32_t mr_hi = lim(Table::Mpt, std::min<std::uint64_t>(cap(cb::max_mr), 0xFFFFFF));
    mpt_ = LowestFree(1, mr_hi);
    mw_ = LowestFree(mr_hi + 1,
                     lim(Table::Mpt, std::min<std::uint64_t>(mr_hi + cap(cb::max_mw), 0xFFFFFF)));
    ahn_ = LowestFree(1, lim(Table::Ah, cap(cb::max_ah)));
    // MCG numbers from 0: every entry of the table is a group.
    const std::uint32_t mcgs = static_cast<std::uint32_t>(
        std::min<std::uint64_t>(cap(cb::max_mcast_grp), tables_.capacity(Table::Mcg)));
    mcgn_ = mcgs ? LowestFree(0, mcgs - 1) : LowestFree(1, 0);
    dom_ = LowestFree(1, lim(Table::Domain, std::min<std::uint64_t>(cap(cb::max_domain), 0xFFFF)));
    mtt_ = base::RangeAllocator<std::uint32_t>(static_cast<std::uint32_t>(
        std::min<std::uint64_t>(cap(cb::max_mtt), tables_.capacity(Table::Mtt))));
    qpn_lo_ = static_cast<std::uint32_t>(cap(cb::first_qpn));
    const std::uint64_t qhi = std::min<std::uint64_t>(
        {std::uint64_t{qpn_lo_} + cap(cb::max_qp), std::uint64_t{tables_.capacity(Table::Qpc)},
         std::uint64_t{hw::kQpnMask} + 1});
    qpn_hi_ = qhi > qpn_lo_ ? static_cast<std::uint32_t>(qhi - 1) : 0;
    qpn_last_ = qpn_hi_;  // so the first QPN handed out is first_qpn
    refresh_locked();
}

hw::CmdStatus Firmware::open_context(std::uint16_t ctx_id, std::uint32_t pid,
                                     std::uint16_t* boot_domain) {
    std::lock_guard<std::mutex> lk(mu_);
    if (ctx_id >= cap(cb::max_ctx) || ctxs_.count(ctx_id)) return CmdStatus::BadParam;
    std::uint32_t d = 0;
    if (!dom_.alloc(d)) return CmdStatus::NoResources;
    Ctx& c = ctxs_[ctx_id];
    c.pid = pid;
    c.boot_domain = static_cast<std::uint16_t>(d);
    c.domains.insert(d);
    Entry e(ent(Table::Domain, d), Table::Domain);
    e.clear();
    e.set(hw::domain_entry::ctx_id, ctx_id);
    e.set(hw::domain_entry::kind, static_cast<std::uint8_t>(hw::DomainKind::Process));
    e.set(hw::domain_entry::pid, pid);
    e.set(hw::domain_entry::valid, 1);
    if (boot_domain) *boot_domain = c.boot_domain;
    return CmdStatus::Ok;
}

hw::CmdStatus Firmware::add_shm_object(std::uint16_t ctx_id, std::uint32_t handle,
                                       std::uint64_t size) {
    std::lock_guard<std::mutex> lk(mu_);
    auto it = ctxs_.find(ctx_id);
    if (it == ctxs_.end()) return CmdStatus::NoObject;
    it->second.shm[handle] = size;
    return CmdStatus::Ok;
}

bool Firmware::has_context(std::uint16_t ctx_id) const {
    std::lock_guard<std::mutex> lk(mu_);
    return ctxs_.count(ctx_id) != 0;
}

void Firmware::destroy_context(std::uint16_t ctx_id) {
    std::lock_guard<std::mutex> lk(mu_);
    auto it = ctxs_.find(ctx_id);
    if (it == ctxs_.end()) return;
    Ctx& c = it->second;
    // hw-spec.md 2.7: QP, SRQ, AH, MR, CQ, PD, domain. Each step drops the
    // references that would keep a later object busy.
    for (std::uint32_t n : std::vector<std::uint32_t>(c.qps.begin(), c.qps.end())) destroy_qp(c, n);
    for (std::uint32_t n : std::vector<std::uint32_t>(c.srqs.begin(), c.srqs.end())) destroy_srq(c, n);
    for (std::uint32_t n : std::vector<std::uint32_t>(c.ahs.begin(), c.ahs.end())) destroy_ah(c, n);
    for (std::uint32_t n : std::vector<std::uint32_t>(c.mws.begin(), c.mws.end())) dealloc_mw(c, n);
    for (std::uint32_t n : std::vector<std::uint32_t>(c.mrs.begin(), c.mrs.end())) dereg_mr(c, n);
    for (std::uint32_t n : std::vector<std::uint32_t>(c.cqs.begin(), c.cqs.end())) destroy_cq(c, n);
    for (std::uint32_t n : std::vector<std::uint32_t>(c.pds.begin(), c.pds.end())) dealloc_pd(c, n);
    for (std::uint32_t n : std::vector<std::uint32_t>(c.domains.begin(), c.domains.end()))
        detach_domain(c, n);
    ctxs_.erase(it);
}

// ---------------------------------------------------------------------------
// Command dispatch
// ---------------------------------------------------------------------------
namespace {

struct CmdShape {
    CmdOpcode op;
    std::uint32_t in;   // input layout size (hw-spec.md 5.4)
    std::uint32_t out;  // output layout size
};

constexpr std::uint32_t kHandle = hw::cmd_handle::kSize;

constexpr CmdShape kShapes[] = {
    {CmdOpcode::Nop, 0, 0},
    {CmdOpcode::QueryDevice, 0, hw::cap_block::kSize},
    {CmdOpcode::QueryPort, hw::cmd_query_port_in::kSize, hw::port_block::kSize},
    {CmdOpcode::QueryGid, hw::cmd_query_gid_in::kSize, hw::gid_entry::kSize},
    {CmdOpcode::QueryPkey, hw::cmd_query_pkey_in::kSize, hw::cmd_query_pkey_out::kSize},
    {CmdOpcode::AttachDomain, hw::cmd_attach_domain_in::kSize, kHandle},
    {CmdOpcode::DetachDomain, kHandle, 0},
    {CmdOpcode::AllocPd, 0, kHandle},
    {CmdOpcode::DeallocPd, kHandle, 0},
    {CmdOpcode::RegMr, hw::cmd_reg_mr_in::kSize, hw::cmd_reg_mr_out::kSize},
    {CmdOpcode::DeregMr, kHandle, 0},
    {CmdOpcode::AllocMw, hw::cmd_alloc_mw_in::kSize, kHandle},
    {CmdOpcode::DeallocMw, kHandle, 0},
    {CmdOpcode::ReregMr, hw::cmd_rereg_mr_in::kSize, hw::cmd_reg_mr_out::kSize},
    {CmdOpcode::AdviseMr, hw::cmd_advise_mr_in::kSize, hw::cmd_advise_mr_out::kSize},
    {CmdOpcode::CreateCq, hw::cmd_create_cq_in::kSize, kHandle},
    {CmdOpcode::ResizeCq, hw::cmd_resize_cq_in::kSize, 0},
    {CmdOpcode::DestroyCq, kHandle, 0},
    {CmdOpcode::ModifyCq, hw::cmd_modify_cq_in::kSize, 0},
    {CmdOpcode::CreateQp, hw::cmd_create_qp_in::kSize, kHandle},
    {CmdOpcode::ModifyQp, hw::qp_attr::kSize, 0},
    {CmdOpcode::QueryQp, kHandle, hw::qp_attr::kSize},
    {CmdOpcode::DestroyQp, kHandle, 0},
    {CmdOpcode::CreateSrq, hw::cmd_create_srq_in::kSize, kHandle},
    {CmdOpcode::ModifySrq, hw::cmd_modify_srq_in::kSize, 0},
    {CmdOpcode::QuerySrq, kHandle, hw::cmd_query_srq_out::kSize},
    {CmdOpcode::DestroySrq, kHandle, 0},
    {CmdOpcode::CreateAh, hw::cmd_create_ah_in::kSize, kHandle},
    {CmdOpcode::DestroyAh, kHandle, 0},
    {CmdOpcode::AttachMcast, hw::cmd_mcast_in::kSize, 0},
    {CmdOpcode::DetachMcast, hw::cmd_mcast_in::kSize, 0},
};

const CmdShape* shape_of(std::uint16_t op) {
    for (const CmdShape& s : kShapes)
        if (static_cast<std::uint16_t>(s.op) == op) return &s;
    return nullptr;
}

}  // namespace

CmdResult Firmware::execute(std::uint16_t ctx_id, std::uint16_t opcode, const std::uint8_t* in,
                            std::size_t in_len, std::size_t out_len) {
    std::lock_guard<std::mutex> lk(mu_);
    CmdResult r;
    if (in == nullptr) in_len = 0;
    auto it = ctxs_.find(ctx_id);
    if (it == ctxs_.end()) {
        fail(r, CmdStatus::NoObject, Syndrome::NoContext);
        return r;
    }
    dispatch(it->second, ctx_id, opcode, in, in_len, out_len, r);
    if (!r.ok()) r.out_bytes = 0;
    return r;
}

void Firmware::dispatch(Ctx& c, std::uint16_t id, std::uint16_t opcode, In in, std::size_t n,
                        std::size_t out_len, Out& r) {
    const CmdShape* s = shape_of(opcode);
    if (s == nullptr) {
        fail(r, CmdStatus::BadOpcode, Syndrome::BadOpcode);
        return;
    }
    const std::uint64_t max_mbox = cap(cb::max_mbox_len);
    if (n > max_mbox || out_len > max_mbox) {
        fail(r, CmdStatus::BadMbox, Syndrome::MboxTooLong);
        return;
    }
    if (n < s->in) {
        fail(r, CmdStatus::BadMbox, Syndrome::MboxInShort);
        return;
    }
    if (out_len < s->out) {
        fail(r, CmdStatus::BadMbox, Syndrome::MboxOutShort);
        return;
    }
    switch (s->op) {
        case CmdOpcode::Nop: return;
        case CmdOpcode::QueryDevice: return cmd_query_device(r);
        case CmdOpcode::QueryPort: return cmd_query_port(in, n, r);
        case CmdOpcode::QueryGid: return cmd_query_gid(in, n, r);
        case CmdOpcode::QueryPkey: return cmd_query_pkey(in, n, r);
        case CmdOpcode::AttachDomain: return cmd_attach_domain(c, id, in, n, r);
        case CmdOpcode::DetachDomain: return cmd_detach_domain(c, in, n, r);
        case CmdOpcode::AllocPd: return cmd_alloc_pd(c, id, r);
        case CmdOpcode::DeallocPd: return cmd_dealloc_pd(c, in, n, r);
        case CmdOpcode::RegMr: return cmd_reg_mr(c, id, in, n, r);
        case CmdOpcode::DeregMr: return cmd_dereg_mr(c, in, n, r);
        case CmdOpcode::AllocMw: return cmd_alloc_mw(c, id, in, n, r);
        case CmdOpcode::DeallocMw: return cmd_dealloc_mw(c, in, n, r);
        case CmdOpcode::ReregMr: return cmd_rereg_mr(c, in, n, r);
        case CmdOpcode::AdviseMr: return cmd_advise_mr(c, in, n, r);
        case CmdOpcode::CreateCq: return cmd_create_cq(c, id, in, n, r);
        case CmdOpcode::ResizeCq: return cmd_resize_cq(c, in, n, r);
        case CmdOpcode::DestroyCq: return cmd_destroy_cq(c, in, n, r);
        case CmdOpcode::ModifyCq: return cmd_modify_cq(c, in, n, r);
        case CmdOpcode::CreateQp: return cmd_create_qp(c, id, in, n, r);
        case CmdOpcode::ModifyQp: return cmd_modify_qp(c, in, n, r);
        case CmdOpcode::QueryQp: return cmd_query_qp(c, in, n, r);
        case CmdOpcode::DestroyQp: return cmd_destroy_qp(c, in, n, r);
        case CmdOpcode::CreateSrq: return cmd_create_srq(c, id, in, n, r);
        case CmdOpcode::ModifySrq: return cmd_modify_srq(c, in, n, r);
        case CmdOpcode::QuerySrq: return cmd_query_srq(c, in, n, r);
        case CmdOpcode::DestroySrq: return cmd_destroy_srq(c, in, n, r);
        case CmdOpcode::CreateAh: return cmd_create_ah(c, id, in, n, r);
        case CmdOpcode::DestroyAh: return cmd_destroy_ah(c, in, n, r);
        case CmdOpcode::AttachMcast: return cmd_attach_mcast(c, in, n, r);
        case CmdOpcode::DetachMcast: return cmd_detach_mcast(c, in, n, r);
    }
    fail(r, CmdStatus::BadOpcode, Syndrome::BadOpcode);
}

// ---------------------------------------------------------------------------
// The CMDQ_ENTRY protocol (hw-spec.md 5.1, 5.2)
// ---------------------------------------------------------------------------
hw::CmdStatus Firmware::run_entry(std::uint16_t ctx_id, std::uint8_t* entry,
                                  std::size_t entry_len, std::uint64_t mbox_base,
                                  std::uint64_t mbox_len, MailboxIo& io) {
    namespace ce = hw::cmdq_entry;
    if (entry == nullptr || entry_len < ce::kSize) return CmdStatus::Internal;
    auto g = [&](hw::Field f) { return hw::get(entry, entry_len, f); };
    const auto opcode = static_cast<std::uint16_t>(g(ce::opcode));
    const bool eqe_req = g(ce::eqe_req) != 0;
    const auto token = static_cast<std::uint32_t>(g(ce::token));
    const std::uint64_t in_addr = g(ce::in_addr), out_addr = g(ce::out_addr);
    const std::uint64_t in_len = g(ce::in_len), out_len = g(ce::out_len);

    auto inside = [&](std::uint64_t addr, std::uint64_t len) {
        return len == 0 || (addr >= mbox_base && len <= mbox_len && addr - mbox_base <= mbox_len - len);
    };
    CmdResult r;
    const std::uint64_t max_mbox = cap(cb::max_mbox_len);
    if (!inside(in_addr, in_len) || !inside(out_addr, out_len)) {
        fail(r, CmdStatus::BadMbox, Syndrome::MboxWindow);
    } else if (in_len > max_mbox || out_len > max_mbox) {
        fail(r, CmdStatus::BadMbox, Syndrome::MboxTooLong);
    } else {
        std::vector<std::uint8_t> inbuf(static_cast<std::size_t>(in_len));
        if (in_len != 0 && !io.read(in_addr, inbuf.data(), inbuf.size())) {
            fail(r, CmdStatus::BadMbox, Syndrome::MboxIo);
        } else {
            r = execute(ctx_id, opcode, inbuf.data(), inbuf.size(), static_cast<std::size_t>(out_len));
            if (r.ok() && r.out_bytes != 0 && !io.write(out_addr, r.out.data(), r.out_bytes)) {
                // The command took effect; only its reply was lost.
                fail(r, CmdStatus::BadMbox, Syndrome::MboxIo);
                r.out_bytes = 0;
            }
        }
    }
    if (!r.ok()) r.out_bytes = 0;
    put(entry, entry_len, ce::syndrome, r.syndrome);
    put(entry, entry_len, ce::out_bytes, r.out_bytes);
    put(entry, entry_len, ce::status, static_cast<std::uint8_t>(r.status));
    put(entry, entry_len, ce::owner, 0);
    if (eqe_req) {
        std::lock_guard<std::mutex> lk(mu_);
        post_event(ctx_id, hw::EventType::CmdCompletion, 0, 0, token,
                   static_cast<std::uint8_t>(r.status));
    }
    return r.status;
}

// ---------------------------------------------------------------------------
// Events (hw-spec.md 8)
// ---------------------------------------------------------------------------
void Firmware::post_event(std::uint16_t ctx_id, hw::EventType type, std::uint32_t obj,
                          std::uint32_t aux, std::uint32_t token, std::uint8_t status) {
    std::array<std::uint8_t, hw::kEqeSize> e{};
    hw::encode_eqe(hw::Eqe{type, obj, token, static_cast<hw::CmdStatus>(status), aux}, e.data());
    events_.post_eqe(ctx_id, e.data(), e.size());
}

void Firmware::post_event_all(hw::EventType type, std::uint32_t obj, std::uint32_t aux) {
    for (const auto& kv : ctxs_) post_event(kv.first, type, obj, aux);
}

// ---------------------------------------------------------------------------
// Port and GID table (hw-spec.md 2.5, 9.8)
// ---------------------------------------------------------------------------
void Firmware::refresh_netdev() {
    std::lock_guard<std::mutex> lk(mu_);
    refresh_locked();
}

void Firmware::refresh_locked() {
    namespace pb = hw::port_block;
    namespace ge = hw::gid_entry;
    const std::optional<NetdevSnapshot> nd = netdev_.query();
    std::array<std::uint8_t, pb::kSize> p = port_;
    auto s = [&p](hw::Field f, std::uint64_t v) { put(p.data(), p.size(), f, v); };
    const auto old_state = hw::get(port_.data(), port_.size(), pb::state);

    s(hw::reg_block_header::type, static_cast<std::uint32_t>(hw::BlockType::Port));
    s(hw::reg_block_header::version, hw::kBlockVersion);
    s(hw::reg_block_header::next, hw::kBar0DeviceBlocks[0].at);  // the device's blocks follow (layout.h)
    s(hw::reg_block_header::length, pb::kSize);
    s(pb::port_num, 1);
    s(pb::link_layer, hw::kLinkLayerEthernet);
    s(pb::max_mtu, cfg_.max_mtu);
    s(pb::active_width, 1);
    s(pb::active_speed, 1);
    s(pb::gid_tbl_len, cfg_.gid_tbl_len);
    s(pb::pkey_tbl_len, hw::caps_default::pkey_tbl_len);
    s(pb::max_vl_num, 1);
    s(pb::port_cap_flags, hw::caps_default::port_cap_flags);
    s(pb::max_msg_sz, hw::caps_default::max_msg_sz);
    const bool active = nd && nd->up && nd->running;
    s(pb::state, static_cast<std::uint8_t>(active ? hw::PortState::Active : hw::PortState::Down));
    s(pb::phys_state,
      static_cast<std::uint8_t>(active ? hw::PhysState::LinkUp : hw::PhysState::Polling));
    if (nd) {
        const auto amtu = static_cast<std::uint8_t>(roce::rxe_active_mtu(static_cast<int>(
            std::min<std::uint32_t>(nd->mtu, 0x7FFFFFFF))));
        s(pb::active_mtu, std::min(amtu, cfg_.max_mtu));
        s(pb::netdev_mtu, nd->mtu);
        s(pb::ifindex, nd->ifindex);
        hw::set_bytes(p.data(), p.size(), pb::mac, nd->mac.data(), nd->mac.size());
    } else if (!port_known_) {
        s(pb::active_mtu, static_cast<std::uint8_t>(hw::Mtu::M256));
    }
    port_ = p;
    const bool notify = port_known_;
    port_known_ = true;
    if (notify && old_state != hw::get(p.data(), p.size(), pb::state))
        post_event_all(active ? hw::EventType::PortActive : hw::EventType::PortErr, 1);
    if (!nd) return;

    // GIDs: index 0 is the default GID; other entries keep their index while
    // their address stays, a gone address frees its index, a new one takes
    // the lowest free index.
    const std::vector<Gid> want = netdev_gids(*nd);
    const std::uint32_t len = std::min<std::uint32_t>(cfg_.gid_tbl_len, tables_.capacity(Table::Gid));
    auto read_gid = [](const Entry& e) {
        Gid g{};
        hw::get_bytes(e.p, e.n, ge::gid, g.data(), g.size());
        return g;
    };
    // Every refresh that changes the table adds one to gid_gen (hw-spec
    // 2.5), after the table and under the same lock as QUERY_GID and
    // port_block(), so a driver's cached entries go stale with it.
    bool changed = false;
    auto write_gid = [&](std::uint32_t idx, const Gid& g) {
        changed = true;
        fence(Table::Gid, idx);
        Entry e(ent(Table::Gid, idx), Table::Gid);
        e.clear();
        hw::set_bytes(e.p, e.n, ge::gid, g.data(), g.size());
        e.set(ge::gid_type, static_cast<std::uint8_t>(hw::GidType::RoceV2));
        e.set(ge::valid, 1);
        e.set(ge::net_type, static_cast<std::uint8_t>(is_ipv4_mapped(g) ? hw::NetType::RoceV2Ipv4
                                                                          : hw::NetType::RoceV2Ipv6));
        e.set(ge::ndev_ifindex, nd->ifindex);
        unfence(Table::Gid, idx);
        if (notify) post_event_all(hw::EventType::GidChange, 1, idx);
    };
    if (len == 0) return;
    {
        Entry e0(ent(Table::Gid, 0), Table::Gid);
        if (!e0[ge::valid] || read_gid(e0) != want[0] || e0[ge::ndev_ifindex] != nd->ifindex)
            write_gid(0, want[0]);
    }
    std::vector<bool> present(want.size(), false);
    present[0] = true;
    for (std::uint32_t i = 1; i < len; ++i) {
        Entry e(ent(Table::Gid, i), Table::Gid);
        if (!e[ge::valid]) continue;
        const Gid g = read_gid(e);
        auto it = std::find(want.begin() + 1, want.end(), g);
        if (it != want.end() && !present[static_cast<std::size_t>(it - want.begin())]) {
            present[static_cast<std::size_t>(it - want.begin())] = true;
            continue;
        }
        changed = true;
        fence(Table::Gid, i);
        e.clear();
        unfence(Table::Gid, i);
        if (notify) post_event_all(hw::EventType::GidChange, 1, i);
    }
    std::uint32_t next_free = 1;
    for (std::size_t k = 1; k < want.size(); ++k) {
        if (present[k]) continue;
        while (next_free < len && Entry(ent(Table::Gid, next_free), Table::Gid)[ge::valid]) ++next_free;
        if (next_free >= len) break;  // table full: the address gets no GID
        write_gid(next_free, want[k]);
    }
    if (changed) {
        const auto g = hw::get(port_.data(), port_.size(), pb::gid_gen);
        put(port_.data(), port_.size(), pb::gid_gen, (g + 1) & 0xFFFFFFFFu);
    }
}

std::array<std::uint8_t, hw::cap_block::kSize> Firmware::cap_block() const { return cfg_.cap; }

std::array<std::uint8_t, hw::port_block::kSize> Firmware::port_block() const {
    std::lock_guard<std::mutex> lk(mu_);
    return port_;
}

std::array<std::uint8_t, hw::id_block::kSize> Firmware::id_block(hw::EngineKind kind,
                                                                std::uint16_t device_index) const {
    namespace ib = hw::id_block;
    Mac mac{};
    {
        std::lock_guard<std::mutex> lk(mu_);
        hw::get_bytes(port_.data(), port_.size(), hw::port_block::mac, mac.data(), mac.size());
    }
    std::array<std::uint8_t, ib::kSize> b{};
    auto s = [&b](hw::Field f, std::uint64_t v) { put(b.data(), b.size(), f, v); };
    s(hw::reg_block_header::type, static_cast<std::uint32_t>(hw::BlockType::Id));
    s(hw::reg_block_header::version, hw::kBlockVersion);
    s(hw::reg_block_header::next, hw::kBar0CapBlock);
    s(hw::reg_block_header::length, ib::kSize);
    s(ib::vendor_id, hw::kVendorId);
    s(ib::vendor_part_id, hw::kVendorPartId);
    s(ib::hw_rev, hw::kHwRev);
    s(ib::fw_major, hw::kFwMajor);
    s(ib::fw_minor, hw::kFwMinor);
    s(ib::fw_subminor, hw::kFwSubminor);
    s(ib::engine_kind, static_cast<std::uint8_t>(kind));
    s(ib::spec_version, hw::kSpecVersion);
    s(ib::node_guid, guid_from_mac(mac));
    s(ib::sys_image_guid, guid_from_mac(mac));
    s(ib::magic, hw::kMagic);
    s(ib::device_index, device_index);
    return b;
}

// ---------------------------------------------------------------------------
// Introspection
// ---------------------------------------------------------------------------
Firmware::Counts Firmware::counts() const {
    std::lock_guard<std::mutex> lk(mu_);
    Counts n;
    for (const auto& kv : ctxs_) {
        const Ctx& c = kv.second;
        n.qps += static_cast<std::uint32_t>(c.qps.size());
        n.cqs += static_cast<std::uint32_t>(c.cqs.size());
        n.srqs += static_cast<std::uint32_t>(c.srqs.size());
        n.mrs += static_cast<std::uint32_t>(c.mrs.size());
        n.pds += static_cast<std::uint32_t>(c.pds.size());
        n.ahs += static_cast<std::uint32_t>(c.ahs.size());
        n.domains += static_cast<std::uint32_t>(c.domains.size());
        n.mws += static_cast<std::uint32_t>(c.mws.size());
    }
    n.mtts = mtt_.used();
    n.mcgs = static_cast<std::uint32_t>(mcg_by_gid_.size());
    n.mcg_attach = mcg_attach_;
    return n;
}

Firmware::Counts Firmware::counts(std::uint16_t ctx_id) const {
    std::lock_guard<std::mutex> lk(mu_);
    Counts n;
    auto it = ctxs_.find(ctx_id);
    if (it == ctxs_.end()) return n;
    const Ctx& c = it->second;
    n.qps = static_cast<std::uint32_t>(c.qps.size());
    n.cqs = static_cast<std::uint32_t>(c.cqs.size());
    n.srqs = static_cast<std::uint32_t>(c.srqs.size());
    n.mrs = static_cast<std::uint32_t>(c.mrs.size());
    n.pds = static_cast<std::uint32_t>(c.pds.size());
    n.ahs = static_cast<std::uint32_t>(c.ahs.size());
    n.domains = static_cast<std::uint32_t>(c.domains.size());
    n.mws = static_cast<std::uint32_t>(c.mws.size());
    return n;
}

namespace {
// (number, owning context) of the objects in one of a context's sets whose
// numbers are the r.limit smallest above r.after, ascending. Each context's
// set is ordered, so each gives at most r.limit from its lower bound: a
// range costs the range times the contexts, not the table.
template <typename Ctxs, typename Set>
std::vector<std::pair<std::uint32_t, std::uint16_t>> owned(const Ctxs& ctxs, Set member,
                                                           const Firmware::ListRange& r) {
    std::vector<std::pair<std::uint32_t, std::uint16_t>> v;
    for (const auto& kv : ctxs) {
        const auto& set = kv.second.*member;
        auto it = r.after ? set.upper_bound(*r.after) : set.begin();
        for (std::size_t n = 0; it != set.end() && n < r.limit; ++it, ++n) v.emplace_back(*it, kv.first);
    }
    std::sort(v.begin(), v.end());
    if (v.size() > r.limit) v.resize(r.limit);
    return v;
}
}  // namespace

std::vector<std::uint32_t> Firmware::qpns(const ListRange& range) const {
    std::lock_guard<std::mutex> lk(mu_);
    std::vector<std::uint32_t> v;
    for (const auto& [qpn, ctx] : owned(ctxs_, &Ctx::qps, range)) v.push_back(qpn);
    return v;
}

std::vector<Firmware::CqListing> Firmware::cq_list(const ListRange& range) const {
    namespace cc = hw::cqc;
    std::lock_guard<std::mutex> lk(mu_);
    std::vector<CqListing> out;
    for (const auto& [cqn, ctx] : owned(ctxs_, &Ctx::cqs, range)) {
        const Entry e(tables_.entry(Table::Cqc, cqn), Table::Cqc);
        CqListing l;
        l.cqn = cqn;
        l.cqe = static_cast<std::uint32_t>(pow2(e[cc::log_size]) - 1);
        const auto r = cq_refs_.find(cqn);
        l.users = r == cq_refs_.end() ? 0 : r->second;
        l.ctx_id = ctx;
        l.pid = ctxs_.at(ctx).pid;
        out.push_back(l);
    }
    return out;
}

std::vector<Firmware::MrListing> Firmware::mr_list(const ListRange& range) const {
    namespace me = hw::mpt_entry;
    std::lock_guard<std::mutex> lk(mu_);
    std::vector<MrListing> out;
    for (const auto& [idx, ctx] : owned(ctxs_, &Ctx::mrs, range)) {
        const Entry e(tables_.entry(Table::Mpt, idx), Table::Mpt);
        MrListing l;
        l.mrn = idx;
        l.key = static_cast<std::uint32_t>(e[me::key]);
        l.iova = e[me::iova_start];
        l.length = e[me::length];
        l.pdn = static_cast<std::uint32_t>(e[me::pdn]);
        l.access = static_cast<std::uint16_t>(e[me::access]);
        l.ctx_id = ctx;
        l.pid = ctxs_.at(ctx).pid;
        out.push_back(l);
    }
    return out;
}

std::vector<Firmware::MwListing> Firmware::mw_list(const ListRange& range) const {
    namespace me = hw::mpt_entry;
    std::lock_guard<std::mutex> lk(mu_);
    std::vector<MwListing> out;
    for (const auto& [idx, ctx] : owned(ctxs_, &Ctx::mws, range)) {
        // The engine writes a window's binding: read it under the fence.
        if (engine_) engine_->fence(Table::Mpt, idx);
        const Entry e(tables_.entry(Table::Mpt, idx), Table::Mpt);
        MwListing l;
        l.mwn = idx;
        l.rkey = static_cast<std::uint32_t>(e[me::key]);
        l.type = static_cast<std::uint8_t>(e[me::kind]);
        l.state = static_cast<std::uint8_t>(e[me::mw_state]);
        l.pdn = static_cast<std::uint32_t>(e[me::pdn]);
        l.mr_key = static_cast<std::uint32_t>(e[me::mr_key]);
        l.addr = e[me::iova_start];
        l.length = e[me::length];
        l.qpn = static_cast<std::uint32_t>(e[me::bound_qpn]);
        if (engine_) engine_->unfence(Table::Mpt, idx);
        l.ctx_id = ctx;
        l.pid = ctxs_.at(ctx).pid;
        out.push_back(l);
    }
    return out;
}

std::vector<Firmware::PdListing> Firmware::pd_list(const ListRange& range) const {
    std::lock_guard<std::mutex> lk(mu_);
    std::vector<PdListing> out;
    for (const auto& [pdn, ctx] : owned(ctxs_, &Ctx::pds, range)) {
        const Entry e(tables_.entry(Table::Pd, pdn), Table::Pd);
        PdListing l;
        l.pdn = pdn;
        l.users = static_cast<std::uint32_t>(e[hw::pd_entry::refcnt]);
        l.ctx_id = ctx;
        l.pid = ctxs_.at(ctx).pid;
        out.push_back(l);
    }
    return out;
}

std::vector<Firmware::SrqListing> Firmware::srq_list(const ListRange& range) const {
    namespace sc = hw::srqc;
    namespace qc = hw::qpc;
    std::lock_guard<std::mutex> lk(mu_);
    // The QPs on each SRQ, from their QPCs.
    std::map<std::uint32_t, std::vector<std::uint32_t>> qps_of;
    for (const auto& [qpn, ctx] : owned(ctxs_, &Ctx::qps, ListRange{})) {
        (void)ctx;
        const Entry q(tables_.entry(Table::Qpc, qpn), Table::Qpc);
        if (q[qc::srq_en] != 0) qps_of[static_cast<std::uint32_t>(q[qc::srqn])].push_back(qpn);
    }
    std::vector<SrqListing> out;
    for (const auto& [srqn, ctx] : owned(ctxs_, &Ctx::srqs, range)) {
        const Entry e(tables_.entry(Table::Srqc, srqn), Table::Srqc);
        SrqListing l;
        l.srqn = srqn;
        l.pdn = static_cast<std::uint32_t>(e[sc::pdn]);
        l.max_wr = static_cast<std::uint32_t>(pow2(e[sc::log_size]));
        l.max_sge = static_cast<std::uint32_t>(e[sc::max_sge]);
        l.limit = e[sc::limit_armed] ? static_cast<std::uint32_t>(e[sc::srq_limit]) : 0;
        const auto q = qps_of.find(srqn);
        if (q != qps_of.end()) l.qpns = q->second;
        l.ctx_id = ctx;
        l.pid = ctxs_.at(ctx).pid;
        out.push_back(l);
    }
    return out;
}

// ---------------------------------------------------------------------------
// Shared checks and reference counts
// ---------------------------------------------------------------------------
bool Firmware::check_range(const Ctx& c, std::uint32_t dom, std::uint64_t addr,
                           std::uint64_t len, Out& r) {
    namespace de = hw::domain_entry;
    if (dom == 0 || c.domains.count(dom) == 0)
        return fail(r, CmdStatus::BadDomain, Syndrome::NoDomain);
    if (len != 0 && addr + (len - 1) < addr) return fail(r, CmdStatus::BadParam, Syndrome::Wraps);
    Entry e(ent(Table::Domain, dom), Table::Domain);
    if (e[de::kind] == static_cast<std::uint8_t>(hw::DomainKind::Shm)) {
        const std::uint64_t base = e[de::map_base], mlen = e[de::map_len];
        if (addr < base || len > mlen || addr - base > mlen - len)
            return fail(r, CmdStatus::BadParam, Syndrome::OutsideDomain);
    }
    return true;
}

void Firmware::pd_ref(std::uint32_t pdn, int delta) {
    Entry e(ent(Table::Pd, pdn), Table::Pd);
    e.set(hw::pd_entry::refcnt, static_cast<std::uint32_t>(
                                    static_cast<std::int64_t>(e[hw::pd_entry::refcnt]) + delta));
}

void Firmware::cq_ref(std::uint32_t cqn, int delta) {
    std::uint32_t& n = cq_refs_[cqn];
    n = static_cast<std::uint32_t>(static_cast<std::int64_t>(n) + delta);
    fence(Table::Cqc, cqn);
    Entry(ent(Table::Cqc, cqn), Table::Cqc).set(hw::cqc::ref_qps, std::min<std::uint32_t>(n, 255));
    unfence(Table::Cqc, cqn);
    if (n == 0) cq_refs_.erase(cqn);
}

}  // namespace simnic::fw
