// SPDX-License-Identifier: Apache-2.0
// simnic firmware: CREATE_QP, MODIFY_QP (the QP state machine of hw-spec.md
// 5.7, table in hwspec's qp_fsm.h), QUERY_QP and DESTROY_QP.
#include <algorithm>

#include "fw_internal.h"
#include "simnic/hw/qp_fsm.h"
#include "simnic/hw/wqe.h"
#include "simnic/roce/rules.h"

namespace simnic::fw {

namespace cb = hw::cap_block;
namespace qa = hw::qp_attr;
namespace qc = hw::qpc;
namespace am = hw::qp_attr_mask;
using hw::CmdStatus;
using hw::QpState;

// Attribute ranges the mailbox widths already enforce (IB: retry_cnt and
// rnr_retry 0..7, timeout and min_rnr_timer 0..31, 24-bit QPNs and PSNs).
static_assert(qa::retry_cnt.width == 3 && qa::rnr_retry.width == 3, "3-bit retry counts");
static_assert(qa::timeout.width == 5 && qa::min_rnr_timer.width == 5, "5-bit timer codes");
static_assert(qa::dest_qp_num.width == 24 && qa::rq_psn.width == 24 && qa::sq_psn.width == 24,
              "24-bit QPN and PSNs");

namespace {

// Every attribute QUERY_QP reports (hw-spec.md 5.6.7).
constexpr std::uint32_t kQueryMask =
    am::kState | am::kCurState | am::kEnSqdAsyncNotify | am::kAccessFlags | am::kPkeyIndex |
    am::kPort | am::kQkey | am::kAv | am::kPathMtu | am::kTimeout | am::kRetryCnt |
    am::kRnrRetry | am::kRqPsn | am::kMaxQpRdAtomic | am::kMinRnrTimer | am::kSqPsn |
    am::kMaxDestRdAtomic | am::kDestQpn;
constexpr std::uint32_t kKnownMask = kQueryMask | am::kUnsupported;

bool is_state(std::uint64_t v) { return v <= static_cast<std::uint64_t>(QpState::Err); }

// Releases an engine fence on every path out of a scope.
class FenceGuard {
public:
    FenceGuard(EngineHooks* e, Table t, std::uint32_t i) : e_(e), t_(t), i_(i) {
        if (e_) e_->fence(t_, i_);
    }
    ~FenceGuard() {
        if (e_) e_->unfence(t_, i_);
    }
    FenceGuard(const FenceGuard&) = delete;
    FenceGuard& operator=(const FenceGuard&) = delete;

private:
    EngineHooks* e_;
    Table t_;
    std::uint32_t i_;
};

}  // namespace

bool Firmware::alloc_qpn(std::uint32_t& qpn) {
    if (qpn_hi_ < qpn_lo_) return false;
    // Cyclic: the next free number after the last one handed out (hw-spec.md 10).
    std::uint32_t cand = qpn_last_;
    for (std::uint64_t i = 0, span = std::uint64_t{qpn_hi_} - qpn_lo_ + 1; i < span; ++i) {
        cand = cand >= qpn_hi_ || cand < qpn_lo_ ? qpn_lo_ : cand + 1;
        if (Entry(ent(Table::Qpc, cand), Table::Qpc)[qc::qpn] != cand) {
            qpn_last_ = qpn = cand;
            return true;
        }
    }
    return false;
}

// ---------------------------------------------------------------------------
// CREATE_QP
// ---------------------------------------------------------------------------
void Firmware::cmd_create_qp(Ctx& c, std::uint16_t id, In in, std::size_t n, Out& r) {
    namespace q = hw::cmd_create_qp_in;
    auto g = [in, n](hw::Field f) { return hw::get(in, n, f); };
    const std::uint64_t type = g(q::qp_type);
    const bool srq_en = g(q::srq_en) != 0;
    const auto pdn = static_cast<std::uint32_t>(g(q::pdn));
    const auto scq = static_cast<std::uint32_t>(g(q::send_cqn));
    const auto rcq = static_cast<std::uint32_t>(g(q::recv_cqn));
    const auto srqn = static_cast<std::uint32_t>(g(q::srqn));
    const auto dom = static_cast<std::uint32_t>(g(q::domain_id));
    const std::uint64_t sq_base = g(q::sq_base), rq_base = g(q::rq_base);
    const std::uint64_t lsq = g(q::log_sq_size), lsqs = g(q::log_sq_stride);
    const std::uint64_t lrq = g(q::log_rq_size), lrqs = g(q::log_rq_stride);
    const std::uint64_t ssge = g(q::max_send_sge), rsge = g(q::max_recv_sge);
    const std::uint64_t inl = g(q::max_inline);

    if (type != static_cast<std::uint8_t>(hw::QpType::Rc) &&
        type != static_cast<std::uint8_t>(hw::QpType::Uc) &&
        type != static_cast<std::uint8_t>(hw::QpType::Ud)) {
        fail(r, CmdStatus::NotSupported, Syndrome::QpType);
        return;
    }
    if (!owns_pd(c, pdn)) {
        fail(r, CmdStatus::NoObject, Syndrome::NoPd);
        return;
    }
    if (c.cqs.count(scq) == 0 || c.cqs.count(rcq) == 0) {
        fail(r, CmdStatus::NoObject, Syndrome::NoCq);
        return;
    }
    if (srq_en) {
        if (c.srqs.count(srqn) == 0) {
            fail(r, CmdStatus::NoObject, Syndrome::NoSrq);
            return;
        }
        if (Entry(ent(Table::Srqc, srqn), Table::Srqc)[hw::srqc::pdn] != pdn) {
            fail(r, CmdStatus::BadParam, Syndrome::SrqPd);
            return;
        }
    }
    const std::uint64_t max_wr = cap(cb::max_qp_wr), max_sge = cap(cb::max_sge);
    if (pow2(lsq) > max_wr || (!srq_en && pow2(lrq) > max_wr)) {
        fail(r, CmdStatus::ExceedsCap, Syndrome::QueueSize);
        return;
    }
    if (ssge > max_sge || (!srq_en && rsge > max_sge)) {
        fail(r, CmdStatus::ExceedsCap, Syndrome::SgeCount);
        return;
    }
    if (inl > cap(cb::max_inline)) {
        fail(r, CmdStatus::ExceedsCap, Syndrome::InlineSize);
        return;
    }
    // The SQ slot holds the largest WQE the caps allow (hw-spec 5.6.7).
    if (lsqs < hw::kMinLogSqStride || lsqs > hw::kMaxLogStride || pow2(lsqs) < hw::send_wqe_max_size(ssge, inl)) {
        fail(r, CmdStatus::BadParam, Syndrome::Stride);
        return;
    }
    if (!srq_en && (lrqs < hw::kMinLogRqStride || lrqs > hw::kMaxLogStride ||
                    pow2(lrqs) < hw::recv_wqe_size(rsge))) {
        fail(r, CmdStatus::BadParam, Syndrome::Stride);
        return;
    }
    if (sq_base % pow2(lsqs) != 0 || (!srq_en && rq_base % pow2(lrqs) != 0)) {
        fail(r, CmdStatus::BadParam, Syndrome::Alignment);
        return;
    }
    if (!check_range(c, dom, sq_base, pow2(lsq + lsqs), r)) return;
    if (!srq_en && !check_range(c, dom, rq_base, pow2(lrq + lrqs), r)) return;
    std::uint32_t qpn = 0;
    if (live_qps_ >= cap(cb::max_qp) || !alloc_qpn(qpn)) {
        fail(r, CmdStatus::NoResources, Syndrome::TableFull);
        return;
    }
    {
        FenceGuard fg(engine_, Table::Qpc, qpn);
        Entry e(ent(Table::Qpc, qpn), Table::Qpc);
        e.clear();
        e.set(qc::state, static_cast<std::uint8_t>(QpState::Reset));
        e.set(qc::qp_type, type);
        e.set(qc::path_mtu, static_cast<std::uint8_t>(hw::Mtu::M256));  // rxe's initial value
        e.set(qc::sq_sig_all, g(q::sq_sig_all));
        e.set(qc::srq_en, srq_en);
        e.set(qc::port_num, 1);
        e.set(qc::pdn, pdn);
        e.set(qc::send_cqn, scq);
        e.set(qc::recv_cqn, rcq);
        e.set(qc::srqn, srq_en ? srqn : 0);
        e.set(qc::ctx_id, id);
        e.set(qc::domain_id, dom);
        e.set(qc::sq_base, sq_base);
        e.set(qc::rq_base, srq_en ? 0 : rq_base);
        e.set(qc::log_sq_size, lsq);
        e.set(qc::log_sq_stride, lsqs);
        e.set(qc::log_rq_size, srq_en ? 0 : lrq);
        e.set(qc::log_rq_stride, srq_en ? 0 : lrqs);
        e.set(qc::max_send_sge, ssge);
        e.set(qc::max_recv_sge, srq_en ? 0 : rsge);
        e.set(qc::max_inline, inl);
        e.set(qc::qpn, qpn);  // last: marks the entry as in use
    }
    pd_ref(pdn, +1);
    cq_ref(scq, +1);
    cq_ref(rcq, +1);
    if (srq_en) ++srq_refs_[srqn];
    ++dom_refs_[dom];
    ++live_qps_;
    c.qps.insert(qpn);
    put(r.out.data(), r.out.size(), hw::cmd_handle::handle, qpn);
    r.out_bytes = hw::cmd_handle::kSize;
}

// ---------------------------------------------------------------------------
// MODIFY_QP
// ---------------------------------------------------------------------------
void Firmware::cmd_modify_qp(Ctx& c, In in, std::size_t n, Out& r) {
    auto g = [in, n](hw::Field f) { return hw::get(in, n, f); };
    const auto qpn = static_cast<std::uint32_t>(g(qa::qpn));
    const auto mask = static_cast<std::uint32_t>(g(qa::attr_mask));
    if (c.qps.count(qpn) == 0) {
        fail(r, CmdStatus::NoObject, Syndrome::NoQp);
        return;
    }
    if (mask & am::kUnsupported) {
        fail(r, CmdStatus::NotSupported, Syndrome::MaskUnsupported);
        return;
    }
    if (mask & ~kKnownMask) {
        fail(r, CmdStatus::BadAttrMask, Syndrome::MaskUnknown);
        return;
    }
    // Without STATE the command is a transition from the current state to
    // itself (IBA 11.2.1.2's table, as ib_modify_qp_is_ok reads it for rxe):
    // the attributes that self-transition allows, none of a move's effects.
    const bool moves = (mask & am::kState) != 0;

    // The engine may move the state (RTS->SQE/ERR, drain): read, check and
    // write the entry under the fence; tell the engine after releasing it.
    QpState from = QpState::Reset, to = QpState::Reset;
    const bool done = [&]() -> bool {
        FenceGuard fg(engine_, Table::Qpc, qpn);
        std::uint8_t* live = ent(Table::Qpc, qpn);
        std::array<std::uint8_t, qc::kSize> q{};
        std::copy(live, live + qc::kSize, q.begin());
        Entry e(q.data(), Table::Qpc);

        from = static_cast<QpState>(e[qc::state]);
        const auto type = static_cast<hw::QpType>(e[qc::qp_type]);
        const std::uint64_t to_raw = moves ? g(qa::qp_state) : e[qc::state];
        if (!is_state(to_raw)) {
            return fail(r, CmdStatus::BadState, Syndrome::BadStateValue);
        }
        to = static_cast<QpState>(to_raw);
        if ((mask & am::kCurState) && g(qa::cur_state) != static_cast<std::uint64_t>(from)) {
            return fail(r, CmdStatus::BadState, Syndrome::CurStateMismatch);
        }
        const hw::QpTransition t = hw::qp_transition(from, to, type);
        if (!t.legal) {
            return fail(r, CmdStatus::BadState, Syndrome::IllegalTransition);
        }
        if ((mask & t.required) != t.required) {
            return fail(r, CmdStatus::BadAttrMask, Syndrome::AttrMissing);
        }
        if (!t.allows(mask | am::kState)) {
            return fail(r, CmdStatus::BadAttrMask, Syndrome::AttrNotAllowed);
        }
        // A drain in progress blocks leaving SQD except to RESET/ERR (rxe does the
        // same; hw-spec.md 5.7 states it for SQD->SQD).
        if (from == QpState::Sqd && (to == QpState::Sqd || to == QpState::Rts) && e[qc::sq_draining]) {
            return fail(r, CmdStatus::BadState, Syndrome::SqDraining);
        }

        // Value checks (hw-spec.md 5.6.7).
        if (mask & am::kPathMtu) {
            const std::uint64_t mtu = g(qa::path_mtu);
            if (mtu < static_cast<std::uint8_t>(hw::Mtu::M256) || mtu > static_cast<std::uint8_t>(hw::Mtu::M4096) ||
                mtu > cfg_.max_mtu) {
                return fail(r, CmdStatus::BadParam, Syndrome::PathMtu);
            }
            e.set(qc::path_mtu, mtu);
        }
        if (mask & am::kPort) {
            if (g(qa::port_num) != 1) {
                return fail(r, CmdStatus::BadParam, Syndrome::BadPort);
            }
            e.set(qc::port_num, 1);
        }
        if (mask & am::kPkeyIndex) {
            if (g(qa::pkey_index) >= hw::caps_default::pkey_tbl_len) {
                return fail(r, CmdStatus::BadParam, Syndrome::PkeyIndex);
            }
            e.set(qc::pkey_index, g(qa::pkey_index));
        }
        if (mask & am::kAccessFlags) {
            // Bits 0..3, 8 and 9; LOCAL_WRITE (bit 0) is accepted and has no
            // effect, as on rxe (perftest's SEND tests pass it). See
            // fw/README.md. FLUSH_GLOBAL and FLUSH_PERSISTENT need no device
            // capability here: rxe_qp_chk_attr takes every right it knows.
            if (g(qa::qp_access_flags) & ~std::uint64_t{hw::access::kQpAccess}) {
                return fail(r, CmdStatus::BadParam, Syndrome::QpAccess);
            }
            e.set(qc::qp_access_flags, g(qa::qp_access_flags));
        }
        if (mask & am::kMaxQpRdAtomic) {
            if (g(qa::max_rd_atomic) > cap(cb::max_qp_init_rd_atom)) {
                return fail(r, CmdStatus::ExceedsCap, Syndrome::RdAtomic);
            }
            e.set(qc::max_rd_atomic, g(qa::max_rd_atomic));
        }
        if (mask & am::kMaxDestRdAtomic) {
            if (g(qa::max_dest_rd_atomic) > cap(cb::max_qp_rd_atom)) {
                return fail(r, CmdStatus::ExceedsCap, Syndrome::DestRdAtomic);
            }
            e.set(qc::max_dest_rd_atomic, g(qa::max_dest_rd_atomic));
        }
        if (mask & am::kAv) {
            if (!apply_av(in, n, kAvQpAttr, q.data(), q.size(), kAvQpc, r)) return false;
        }
        if (mask & am::kQkey) e.set(qc::qkey, g(qa::qkey));
        if (mask & am::kDestQpn) e.set(qc::dest_qpn, g(qa::dest_qp_num));
        if (mask & am::kRqPsn) e.set(qc::rq_psn, g(qa::rq_psn));
        if (mask & am::kSqPsn) e.set(qc::sq_psn, g(qa::sq_psn));
        if (mask & am::kTimeout) e.set(qc::timeout, g(qa::timeout));
        if (mask & am::kRetryCnt) e.set(qc::retry_cnt, g(qa::retry_cnt));
        if (mask & am::kRnrRetry) e.set(qc::rnr_retry, g(qa::rnr_retry));
        if (mask & am::kMinRnrTimer) e.set(qc::min_rnr_timer, g(qa::min_rnr_timer));

        // Effects (hw-spec.md 5.7). The firmware also initialises the runtime
        // fields a transition defines, under the fence (fw/README.md).
        switch (moves ? to : QpState::Init) {  // INIT: the state with no effects
            case QpState::Reset:
                for (hw::Field f : {qc::sq_draining, qc::sq_pi, qc::sq_ci, qc::rq_pi, qc::rq_ci,
                                    qc::sq_psn, qc::rq_psn, qc::last_acked_psn, qc::msn, qc::ssn,
                                    qc::retry_left, qc::rnr_retry_left, qc::error_cause,
                                    qc::rd_atomic_inflight, qc::comm_est_sent})
                    e.set(f, 0);
                std::fill(q.begin() + 0x90, q.end(), 0);  // engine-private area
                break;
            case QpState::Err:
                if (from != QpState::Err)
                    e.set(qc::error_cause, static_cast<std::uint8_t>(hw::ErrorCause::ModifyToErr));
                break;
            case QpState::Rts:
                if (from == QpState::Rtr) {
                    e.set(qc::last_acked_psn, roce::psn_add(static_cast<std::uint32_t>(e[qc::sq_psn]), roce::kPsnMask));
                    e.set(qc::retry_left, e[qc::retry_cnt]);
                    e.set(qc::rnr_retry_left, e[qc::rnr_retry]);
                }
                if (from == QpState::Sqe) e.set(qc::error_cause, 0);
                break;
            case QpState::Sqd:
                if (from == QpState::Rts) {
                    e.set(qc::sq_draining, 1);
                    e.set(qc::en_sqd_async_notify,
                          (mask & am::kEnSqdAsyncNotify) ? g(qa::en_sqd_async_notify) : 0);
                }
                break;
            case QpState::Init:
            case QpState::Rtr:
            case QpState::Sqe:
                break;
        }
        e.set(qc::state, static_cast<std::uint8_t>(to));
        std::copy(q.begin(), q.end(), live);
        return true;
    }();
    if (done && engine_) engine_->qp_modified(qpn, from, to);
}

// ---------------------------------------------------------------------------
// QUERY_QP
// ---------------------------------------------------------------------------
void Firmware::cmd_query_qp(Ctx& c, In in, std::size_t n, Out& r) {
    const auto qpn = static_cast<std::uint32_t>(hw::get(in, n, hw::cmd_handle::handle));
    if (c.qps.count(qpn) == 0) {
        fail(r, CmdStatus::NoObject, Syndrome::NoQp);
        return;
    }
    std::array<std::uint8_t, qc::kSize> q{};
    {
        FenceGuard fg(engine_, Table::Qpc, qpn);
        const std::uint8_t* live = ent(Table::Qpc, qpn);
        std::copy(live, live + qc::kSize, q.begin());
    }
    const Entry e(q.data(), Table::Qpc);
    std::uint8_t* o = r.out.data();
    const std::size_t on = r.out.size();
    put(o, on, qa::qpn, qpn);
    put(o, on, qa::attr_mask, kQueryMask);
    put(o, on, qa::qp_state, e[qc::state]);
    put(o, on, qa::cur_state, e[qc::state]);
    put(o, on, qa::path_mtu, e[qc::path_mtu]);
    put(o, on, qa::en_sqd_async_notify, e[qc::en_sqd_async_notify]);
    put(o, on, qa::sq_draining, e[qc::sq_draining]);
    put(o, on, qa::qkey, e[qc::qkey]);
    put(o, on, qa::rq_psn, e[qc::rq_psn]);
    put(o, on, qa::sq_psn, e[qc::sq_psn]);
    put(o, on, qa::dest_qp_num, e[qc::dest_qpn]);
    put(o, on, qa::qp_access_flags, e[qc::qp_access_flags]);
    put(o, on, qa::port_num, e[qc::port_num]);
    put(o, on, qa::pkey_index, e[qc::pkey_index]);
    put(o, on, qa::timeout, e[qc::timeout]);
    put(o, on, qa::retry_cnt, e[qc::retry_cnt]);
    put(o, on, qa::rnr_retry, e[qc::rnr_retry]);
    put(o, on, qa::min_rnr_timer, e[qc::min_rnr_timer]);
    put(o, on, qa::max_rd_atomic, e[qc::max_rd_atomic]);
    put(o, on, qa::max_dest_rd_atomic, e[qc::max_dest_rd_atomic]);
    const AvFields& s = kAvQpc;
    const AvFields& d = kAvQpAttr;
    Gid dgid{};
    Mac dmac{};
    hw::get_bytes(q.data(), q.size(), s.dgid, dgid.data(), dgid.size());
    hw::set_bytes(o, on, d.dgid, dgid.data(), dgid.size());
    hw::get_bytes(q.data(), q.size(), s.dmac, dmac.data(), dmac.size());
    hw::set_bytes(o, on, d.dmac, dmac.data(), dmac.size());
    for (auto [sf, df] : {std::pair{s.sgid_index, d.sgid_index}, {s.hop_limit, d.hop_limit},
                          {s.traffic_class, d.traffic_class}, {s.sl, d.sl}, {s.grh, d.grh},
                          {s.net_type, d.net_type}, {s.flow_label, d.flow_label},
                          {s.static_rate, d.static_rate}})
        put(o, on, df, e[sf]);
    const bool srq = e[qc::srq_en] != 0;
    put(o, on, qa::max_send_wr, pow2(e[qc::log_sq_size]));
    put(o, on, qa::max_recv_wr, srq ? 0 : pow2(e[qc::log_rq_size]));
    put(o, on, qa::max_send_sge, e[qc::max_send_sge]);
    put(o, on, qa::max_recv_sge, e[qc::max_recv_sge]);
    put(o, on, qa::max_inline, e[qc::max_inline]);
    r.out_bytes = qa::kSize;
}

// ---------------------------------------------------------------------------
// DESTROY_QP
// ---------------------------------------------------------------------------
void Firmware::cmd_destroy_qp(Ctx& c, In in, std::size_t n, Out& r) {
    const auto qpn = static_cast<std::uint32_t>(hw::get(in, n, hw::cmd_handle::handle));
    if (c.qps.count(qpn) == 0) {
        fail(r, CmdStatus::NoObject, Syndrome::NoQp);
        return;
    }
    destroy_qp(c, qpn);
}

void Firmware::destroy_qp(Ctx& c, std::uint32_t qpn) {
    std::uint32_t pdn, scq, rcq, srqn, dom;
    bool srq_en;
    {
        FenceGuard fg(engine_, Table::Qpc, qpn);
        if (engine_) engine_->qp_destroying(qpn);
        Entry e(ent(Table::Qpc, qpn), Table::Qpc);
        pdn = static_cast<std::uint32_t>(e[qc::pdn]);
        scq = static_cast<std::uint32_t>(e[qc::send_cqn]);
        rcq = static_cast<std::uint32_t>(e[qc::recv_cqn]);
        srqn = static_cast<std::uint32_t>(e[qc::srqn]);
        dom = static_cast<std::uint32_t>(e[qc::domain_id]);
        srq_en = e[qc::srq_en] != 0;
        e.clear();  // qpn = 0: free; the number is reused only after the allocator wraps
    }
    // Its block of QPCs goes back once every QPC in it is free (the engine
    // dropped this QP under the fence above, and the others before).
    tables_.release(Table::Qpc, qpn,
                    [](const std::uint8_t* q) { return hw::get(q, entry_size(Table::Qpc), qc::qpn) == 0; });
    pd_ref(pdn, -1);
    cq_ref(scq, -1);
    cq_ref(rcq, -1);
    if (srq_en && --srq_refs_[srqn] == 0) srq_refs_.erase(srqn);
    if (--dom_refs_[dom] == 0) dom_refs_.erase(dom);
    orphan_mws(c, qpn);
    mcg_drop_qp(qpn);  // rxe_drop_all_mcast_groups
    --live_qps_;
    c.qps.erase(qpn);
}

}  // namespace simnic::fw
