// Keys (hw-spec 11.2): the MPT entries the engine checks every lkey and rkey
// against, decoded once into MptView; the translation of a checked range to
// host addresses through the MTT; and memory windows (hw-spec 6.5), whose
// ENG fields the engine writes on BIND_MW, LOCAL_INV and SEND_WITH_INV
// after mw.h (the transport core) has decided.
#include <algorithm>

#include "engine_internal.h"
#include "mpt_mw.h"

namespace simnic::soft_engine {

// The MPT entries in use, decoded once: every packet checks one, and the
// bit-field reads were a tenth of the engine's time. The firmware changes
// an MPT or domain entry only between fence() and unfence(), which drop
// what they cover (see SoftEngine::unfence).
const SoftEngine::Impl::MptView* SoftEngine::Impl::mpt_view(uint32_t idx) {
    auto it = mpt_views.find(idx);
    if (it != mpt_views.end()) return &it->second;
    const uint8_t* m = idx ? entry(Table::Mpt, idx) : nullptr;
    if (!m) return nullptr;
    MptView v;
    v.valid = g(m, Table::Mpt, hw::mpt_entry::valid) != 0;
    v.key = uint32_t(g(m, Table::Mpt, hw::mpt_entry::key));
    v.ctx = uint32_t(g(m, Table::Mpt, hw::mpt_entry::ctx_id));
    v.pdn = uint32_t(g(m, Table::Mpt, hw::mpt_entry::pdn));
    v.rights = uint32_t(g(m, Table::Mpt, hw::mpt_entry::access));
    v.iova = g(m, Table::Mpt, hw::mpt_entry::iova_start);
    v.length = g(m, Table::Mpt, hw::mpt_entry::length);
    v.zero_based = g(m, Table::Mpt, hw::mpt_entry::zero_based) != 0;
    v.mtt_mode = g(m, Table::Mpt, hw::mpt_entry::mtt_mode) != 0;
    v.host_addr = g(m, Table::Mpt, hw::mpt_entry::host_addr);
    v.log_page = uint32_t(g(m, Table::Mpt, hw::mpt_entry::log_page_size));
    v.mtt_base = uint32_t(g(m, Table::Mpt, hw::mpt_entry::mtt_base));
    v.mtt_count = uint32_t(g(m, Table::Mpt, hw::mpt_entry::mtt_count));
    v.domain = uint32_t(g(m, Table::Mpt, hw::mpt_entry::domain_id));
    v.mw = mpt_is_mw(m);
    v.on_demand = g(m, Table::Mpt, hw::mpt_entry::on_demand) != 0;
    if (!host_dom(v.domain, v.mem)) v.mem = HostDom{};
    return &mpt_views.emplace(idx, v).first->second;
}

// The MR check of hw-spec 11.2, then (with `pid`) the host addresses of
// [va, va + len) into `out`. `room`: the bytes of the MR from va on.
tp::MemStatus SoftEngine::Impl::translate(const EngineQp& q, tp::KeyKind kind, uint32_t key, uint64_t va,
                                          uint64_t len, uint32_t access, pid_t* pid, std::vector<iovec>* out,
                                          bool quiet, uint64_t* room, bool* on_demand, bool whole_mr) {
    uint32_t idx = hw::key_index(key);
    const MptView* m = mpt_view(idx);
    if (rec && !quiet) rec->add(Op::Kind::Mpt, idx);
    auto stat = [&](hw::Field f) {
        if (!quiet) this->stat(f);
    };
    auto refuse = [&](tp::MemStatus st) {
        stat(kind == tp::KeyKind::Lkey ? hw::stats_block::local_prot_err : hw::stats_block::remote_access_err);
        return st;
    };
    bool windowed = false;
    if (m && m->valid && m->mw) {
        // An rkey naming a window (hw-spec 11.2): the window's checks, then
        // the access goes on in the MR it is bound to, at the MR address.
        if (kind != tp::KeyKind::Rkey || m->ctx != q.ctx) return refuse(tp::MemStatus::BadKey);
        const tp::MwRecord w = read_mw(entry(Table::Mpt, idx));
        uint64_t mr_va = 0;
        const tp::MemStatus st = tp::window_access(w, key, tp::MwQp{q.qpn, q.pdn}, va, len, access, mr_va);
        if (st != tp::MemStatus::Ok) return refuse(st);
        key = w.mr_key;
        va = mr_va;
        idx = hw::key_index(key);
        m = mpt_view(idx);
        if (rec && !quiet) rec->add(Op::Kind::Mpt, idx);
        windowed = true;
    }
    if (!m || !m->valid || m->mw || m->key != key || m->ctx != q.ctx) return refuse(tp::MemStatus::BadKey);
    // Through a window, the bind checked the MR's PD and rights (rxe).
    if (!windowed && m->pdn != q.pdn) return refuse(tp::MemStatus::BadKey);
    if (!windowed && (m->rights & access) != access) return refuse(tp::MemStatus::NoPermission);
    const uint64_t iova = m->iova;
    const uint64_t mlen = m->length;
    const bool zb = m->zero_based;
    const uint64_t start = zb ? 0 : iova;
    if (whole_mr) return tp::MemStatus::Ok;  // only a check: nothing is translated
    if (va < start || va + len < va || va + len > start + mlen) return refuse(tp::MemStatus::OutOfBounds);
    if (room) *room = start + mlen - va;
    if (on_demand) *on_demand = m->on_demand;
    if (!pid) return tp::MemStatus::Ok;
    if (!m->mem.ok()) {
        stat(hw::stats_block::dma_faults);
        return refuse(tp::MemStatus::BadKey);
    }
    *pid = m->mem.base ? kMappedHere : m->mem.pid;
    out->clear();
    const uint64_t off0 = va - start;
    if (!m->mtt_mode) {
        out->push_back(iovec{reinterpret_cast<void*>(m->host_addr + off0), len});
        return mapped_here(*m, *out) ? tp::MemStatus::Ok : refuse(tp::MemStatus::OutOfBounds);
    }
    const uint32_t lps = m->log_page;
    const uint64_t ps = uint64_t{1} << lps;
    const uint64_t base_off = (zb ? 0 : (iova & (ps - 1)));
    uint64_t off = off0 + base_off;
    uint64_t left = len;
    const uint32_t mtt_base = m->mtt_base;
    const uint32_t mtt_count = m->mtt_count;
    while (left > 0) {
        const uint64_t page = off >> lps;
        if (page >= mtt_count) return refuse(tp::MemStatus::OutOfBounds);
        const uint8_t* t = entry(Table::Mtt, mtt_base + uint32_t(page));
        if (rec && !quiet) rec->add(Op::Kind::Mtt, mtt_base + uint32_t(page));
        const uint64_t pa = t ? g(t, Table::Mtt, hw::mtt_entry::page_addr) : 0;
        if (pa == 0) {
            stat(hw::stats_block::dma_faults);
            return refuse(tp::MemStatus::OutOfBounds);
        }
        const uint64_t in = off & (ps - 1);
        const uint64_t n = std::min(left, ps - in);
        if (!out->empty() && reinterpret_cast<uint64_t>(out->back().iov_base) + out->back().iov_len == pa + in)
            out->back().iov_len += n;
        else
            out->push_back(iovec{reinterpret_cast<void*>(pa + in), n});
        off += n;
        left -= n;
    }
    return mapped_here(*m, *out) ? tp::MemStatus::Ok : refuse(tp::MemStatus::OutOfBounds);
}

// An MR in an SHM domain: its host addresses (the process's, where it
// mapped the object) become this process's addresses of the same bytes.
// Each range must lie inside the domain's mapping; the firmware checked a
// direct MR's range at registration, but an MTT entry or a mapping cut
// short (map_len beyond the object) is only seen here, and the device
// never reaches past its object (hw-spec 1.3, 11).
bool SoftEngine::Impl::mapped_here(const MptView& m, std::vector<iovec>& out) {
    if (!m.mem.base) return true;
    for (iovec& v : out) {
        uint8_t* p = m.mem.at(reinterpret_cast<uint64_t>(v.iov_base), v.iov_len);
        if (!p) {
            stat(hw::stats_block::dma_faults);
            return false;
        }
        v.iov_base = p;
    }
    return true;
}

// ---- memory windows (hw-spec 6.5): the engine writes the ENG fields ----

// The MPT entry a key of the QP's context names, or null.
uint8_t* SoftEngine::Impl::mpt_of(const EngineQp& q, uint32_t key) {
    const uint32_t idx = hw::key_index(key);
    uint8_t* e = idx ? entry(Table::Mpt, idx) : nullptr;
    if (!e || !g(e, Table::Mpt, hw::mpt_entry::valid) || g(e, Table::Mpt, hw::mpt_entry::ctx_id) != q.ctx)
        return nullptr;
    if (rec) rec->add(Op::Kind::Mpt, idx);
    return e;
}

// One more or one fewer window bound to the MR `key` (rxe's num_mw).
void SoftEngine::Impl::count_mw(const EngineQp& q, uint32_t key, int delta) {
    if (uint8_t* mr = key ? mpt_of(q, key) : nullptr) {
        const uint64_t n = g(mr, Table::Mpt, hw::mpt_entry::mw_count);
        s(mr, Table::Mpt, hw::mpt_entry::mw_count, delta > 0 ? n + 1 : (n ? n - 1 : 0));
    }
}

tp::MemStatus SoftEngine::Impl::bind_mw(const EngineQp& q, const tp::MwBind& b) {
    uint8_t* e = mpt_of(q, b.mw_rkey);
    if (!e || !mpt_is_mw(e)) return tp::MemStatus::BadKey;
    tp::MwRecord w = read_mw(e);
    uint8_t* mr = b.length ? mpt_of(q, b.mr_lkey) : nullptr;
    if (mr && mpt_is_mw(mr)) mr = nullptr;
    tp::MrFacts f;
    if (mr) f = read_mr_facts(mr);
    const tp::MwQp qp{q.qpn, q.pdn};
    const tp::MemStatus st = tp::check_bind(w, mr ? &f : nullptr, b, qp);
    if (st != tp::MemStatus::Ok) return st;
    count_mw(q, w.mr_key, -1);
    tp::apply_bind(w, b, qp);
    write_mw(e, w);
    count_mw(q, w.mr_key, +1);
    mpt_views.erase(hw::key_index(b.mw_rkey));
    return tp::MemStatus::Ok;
}

// LOCAL_INV and SEND_WITH_INV. Only windows: rxe invalidates fast-
// registration MRs alone, and every MR here is a user MR.
tp::MemStatus SoftEngine::Impl::invalidate(const EngineQp& q, uint32_t rkey) {
    uint8_t* e = mpt_of(q, rkey);
    if (!e || !mpt_is_mw(e)) return tp::MemStatus::BadKey;
    tp::MwRecord w = read_mw(e);
    const tp::MemStatus st = tp::check_invalidate(w, rkey);
    if (st != tp::MemStatus::Ok || w.state != hw::MwState::Valid) return st;
    count_mw(q, w.mr_key, -1);
    tp::apply_invalidate(w);
    write_mw(e, w);
    mpt_views.erase(hw::key_index(rkey));
    return tp::MemStatus::Ok;
}

// ---- the transport core's MemoryPort: checks and windows ----

tp::MemStatus EngineQp::check(tp::KeyKind kind, uint32_t key, uint64_t addr, uint64_t len, uint32_t access) {
    return eng.translate(*this, kind, key, addr, len, access, nullptr, nullptr);
}

tp::MemStatus EngineQp::check_whole_mr(tp::KeyKind kind, uint32_t key, uint64_t addr, uint32_t access) {
    return eng.translate(*this, kind, key, addr, 0, access, nullptr, nullptr, false, nullptr, nullptr, true);
}

tp::MemStatus EngineQp::invalidate(uint32_t rkey) { return eng.invalidate(*this, rkey); }
tp::MemStatus EngineQp::bind_mw(const tp::MwBind& b) { return eng.bind_mw(*this, b); }

}  // namespace simnic::soft_engine
