// The QP life cycle, as rxe_qp.c holds it: the QPC entry the firmware
// writes is loaded into an EngineQp and the transport core's Qp (the
// attributes, the address vector, the transitions of hw-spec 5.7), each step
// of the core is followed by what it left behind (a fault to act on, frames
// to send), and the QP's dynamic state is published into the QPC, where
// QUERY_QP and `simnic resource show` read it. Who owns which fact of a QP:
// see EngineQp (engine_internal.h).
#include <algorithm>

#include "engine_internal.h"

namespace simnic::soft_engine {

hw::ErrorCause cause_of(hw::WcStatus s) {
    switch (s) {
        case hw::WcStatus::Success: return hw::ErrorCause::None;
        case hw::WcStatus::LocLenErr: return hw::ErrorCause::LocLen;
        case hw::WcStatus::LocQpOpErr: return hw::ErrorCause::LocQpOp;
        case hw::WcStatus::LocProtErr: return hw::ErrorCause::LocProt;
        case hw::WcStatus::RemAccessErr: return hw::ErrorCause::RemAccess;
        case hw::WcStatus::RemInvReqErr: return hw::ErrorCause::RemInvReq;
        case hw::WcStatus::RemOpErr: return hw::ErrorCause::RemOp;
        case hw::WcStatus::RetryExcErr: return hw::ErrorCause::RetryExc;
        case hw::WcStatus::RnrRetryExcErr: return hw::ErrorCause::RnrRetryExc;
        case hw::WcStatus::BadRespErr: return hw::ErrorCause::BadResp;
        case hw::WcStatus::MwBindErr: return hw::ErrorCause::MwBind;
        default: return hw::ErrorCause::None;
    }
}

// The address vector of an AV embedded in `buf` (a QPC, an AH entry or a
// UD WQE's segment), its source GID from the GID table.
void SoftEngine::Impl::build_av(const hw::AddressVector& a, tp::AddressVector& av) {
    uint8_t sgid[16] = {};
    if (const uint8_t* ge = entry(Table::Gid, a.sgid_index))
        hw::get_bytes(ge, hw::gid_entry::kSize, hw::gid_entry::gid, sgid, 16);
    av = tp::AddressVector{};
    const uint8_t* dgid = a.dgid.data();
    // An IPv4-mapped GID (::ffff:a.b.c.d) is RoCE v2 over IPv4; any other
    // GID is an IPv6 address (RoCE v2 over IPv6), as rxe decides.
    static constexpr uint8_t kMapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    if (std::memcmp(dgid, kMapped, 12) == 0) {
        av.ip_version = roce::IpVersion::V4;
        av.dst_ip4 = uint32_t(dgid[12]) << 24 | uint32_t(dgid[13]) << 16 | uint32_t(dgid[14]) << 8 | dgid[15];
        av.src_ip4 = uint32_t(sgid[12]) << 24 | uint32_t(sgid[13]) << 16 | uint32_t(sgid[14]) << 8 | sgid[15];
        if (av.src_ip4 == 0) av.src_ip4 = port->ipv4();
    } else {
        av.ip_version = roce::IpVersion::V6;
        std::copy(dgid, dgid + 16, av.dst_ip6.begin());
        std::copy(sgid, sgid + 16, av.src_ip6.begin());
    }
    std::copy(a.dmac.begin(), a.dmac.end(), av.dst_mac.begin());
    if (cfg.bar) {
        uint8_t smac[6] = {};
        hw::get_bytes(cfg.bar + hw::kBar0PortBlock, hw::port_block::kSize, hw::port_block::mac, smac, 6);
        std::copy(smac, smac + 6, av.src_mac.begin());
    }
    av.flow_label = a.flow_label;
    av.hop_limit = a.hop_limit ? a.hop_limit : 64;
    av.traffic_class = a.traffic_class;
}

// The core's attributes, from the QPC entry of `qpn` as the firmware wrote it.
tp::TransportEnv EngineQp::env() {
    tp::TransportEnv e;
    e.mem = this;
    e.rq = this;
    e.cq = this;
    e.wire = this;
    e.timers = this;
    e.events = this;
    e.counters = this;
    if (eng.cfg.congestion.on) {
        e.np = &eng.np;
        e.rp_observer = eng.cfg.congestion.observer;
    }
    return e;
}

tp::QpConfig SoftEngine::Impl::qp_config(uint32_t qpn, const uint8_t* e) {
    const auto type = hw::QpType(g(e, Table::Qpc, hw::qpc::qp_type));
    tp::QpConfig c;
    c.type = type == hw::QpType::Rc ? hw::QpType::Rc : type == hw::QpType::Uc ? hw::QpType::Uc : hw::QpType::Ud;
    c.qpn = qpn;
    c.dest_qpn = uint32_t(g(e, Table::Qpc, hw::qpc::dest_qpn));
    // The port's active MTU bounds every QP (hw-spec 5.6.7: a larger path MTU is
    // clamped to it, as rxe does). A UD QP has no path MTU of its own: like
    // rxe's get_mtu(), its messages are bounded by the port's active MTU.
    uint8_t active = cfg.bar ? uint8_t(hw::get(cfg.bar + hw::kBar0PortBlock, hw::port_block::kSize,
                                               hw::port_block::active_mtu))
                             : 0;
    if (active < 1 || active > 5) active = uint8_t(roce::IbMtu::Mtu1024);
    uint8_t mtu = uint8_t(g(e, Table::Qpc, hw::qpc::path_mtu));
    if (mtu < 1 || mtu > 5) mtu = uint8_t(roce::IbMtu::Mtu1024);
    if (type == hw::QpType::Ud || mtu > active) mtu = active;
    c.path_mtu = roce::IbMtu(mtu);
    c.sq_psn = uint32_t(g(e, Table::Qpc, hw::qpc::sq_psn));
    c.rq_psn = uint32_t(g(e, Table::Qpc, hw::qpc::rq_psn));
    c.retry_cnt = uint8_t(g(e, Table::Qpc, hw::qpc::retry_cnt));
    c.rnr_retry = uint8_t(g(e, Table::Qpc, hw::qpc::rnr_retry));
    c.timeout = uint8_t(g(e, Table::Qpc, hw::qpc::timeout));
    c.min_rnr_timer = uint8_t(g(e, Table::Qpc, hw::qpc::min_rnr_timer));
    c.max_rd_atomic = uint8_t(g(e, Table::Qpc, hw::qpc::max_rd_atomic));
    c.max_dest_rd_atomic = uint8_t(g(e, Table::Qpc, hw::qpc::max_dest_rd_atomic));
    c.access_flags = uint32_t(g(e, Table::Qpc, hw::qpc::qp_access_flags));
    c.qkey = uint32_t(g(e, Table::Qpc, hw::qpc::qkey));
    c.sq_sig_all = g(e, Table::Qpc, hw::qpc::sq_sig_all) != 0;
    c.srq = g(e, Table::Qpc, hw::qpc::srq_en) != 0;
    c.en_sqd_async_notify = g(e, Table::Qpc, hw::qpc::en_sqd_async_notify) != 0;
    if (type != hw::QpType::Ud) build_av(hw::decode_av(e + hw::qpc::av_dgid.offset), c.av);
    if (cfg.congestion.on) {
        c.dcqcn = cfg.congestion.rp;
        // In a fabric the requester keeps the line rate itself, so that a
        // CNP acts on the next packet (DcqcnConfig::pace_line_rate).
        c.dcqcn->pace_line_rate = sim_time;
    }
    return c;
}

void SoftEngine::Impl::drop_qp(uint32_t qpn) {
    np.forget(qpn);
    const auto it = qps.find(qpn);
    if (it == qps.end()) return;
    if (congestion::RpObserver* o = cfg.congestion.observer; o && it->second->core) {
        // Its timers' changes up to now are told first.
        const uint64_t now = protocol_now();
        it->second->core->congestion(now);
        o->rp_end(qpn, now);
    }
    qps.erase(it);
}

// The QPC fields the engine itself acts on.
void SoftEngine::Impl::load_static(EngineQp& q, const uint8_t* e) {
    q.ctx = uint16_t(g(e, Table::Qpc, hw::qpc::ctx_id));
    q.pdn = uint32_t(g(e, Table::Qpc, hw::qpc::pdn));
    q.send_cqn = uint32_t(g(e, Table::Qpc, hw::qpc::send_cqn));
    q.recv_cqn = uint32_t(g(e, Table::Qpc, hw::qpc::recv_cqn));
    q.srqn = uint32_t(g(e, Table::Qpc, hw::qpc::srqn));
    q.sq_base = g(e, Table::Qpc, hw::qpc::sq_base);
    q.rq_base = g(e, Table::Qpc, hw::qpc::rq_base);
    q.log_sq_size = uint8_t(g(e, Table::Qpc, hw::qpc::log_sq_size));
    q.log_sq_stride = uint8_t(g(e, Table::Qpc, hw::qpc::log_sq_stride));
    q.log_rq_size = uint8_t(g(e, Table::Qpc, hw::qpc::log_rq_size));
    q.log_rq_stride = uint8_t(g(e, Table::Qpc, hw::qpc::log_rq_stride));
    q.max_send_sge = uint32_t(g(e, Table::Qpc, hw::qpc::max_send_sge));
    q.max_recv_sge = uint32_t(g(e, Table::Qpc, hw::qpc::max_recv_sge));
    q.max_inline = uint32_t(g(e, Table::Qpc, hw::qpc::max_inline));
    host_dom(uint32_t(g(e, Table::Qpc, hw::qpc::domain_id)), q.qdom);
}

// The firmware may have changed the QPC entry of `qpn` (a MODIFY_QP: a new
// state, new attributes): the core follows it. The state the firmware
// wrote is compared with the core's, which is the QP's state.
void SoftEngine::Impl::reload_qp(uint32_t qpn) {
    uint8_t* e = entry(Table::Qpc, qpn);
    if (!e) return;
    const bool live = g(e, Table::Qpc, hw::qpc::qpn) == qpn && qpn != 0;
    const hw::QpState st = live ? hw::QpState(g(e, Table::Qpc, hw::qpc::state)) : hw::QpState::Reset;
    auto it = qps.find(qpn);
    if (st == hw::QpState::Reset) {
        drop_qp(qpn);
        if (pipe) pipe->qp_reset(qpn);
        return;
    }
    if (it == qps.end()) it = qps.emplace(qpn, std::make_unique<EngineQp>(*this, qpn)).first;
    EngineQp& q = *it->second;
    load_static(q, e);
    const hw::QpState from = q.state();
    if (from == st) {
        // Same state: attributes may have changed (RTS->RTS, SQD->SQD).
        if (st != hw::QpState::Err) {
            tp::QpContext& c = q.core->context();
            const tp::QpConfig n = qp_config(qpn, e);
            c.cfg.timeout = n.timeout;
            c.cfg.retry_cnt = n.retry_cnt;
            c.cfg.rnr_retry = n.rnr_retry;
            c.cfg.min_rnr_timer = n.min_rnr_timer;
            c.cfg.access_flags = n.access_flags;
            c.cfg.qkey = n.qkey;
        }
        return;
    }
    // INIT and RTR set the attributes the core is built from (the path, the
    // PSNs); a QP that reaches another state without a core (RESET->ERR)
    // gets one too.
    if (st == hw::QpState::Init || st == hw::QpState::Rtr || !q.core)
        q.core = std::make_unique<tp::Qp>(qp_config(qpn, e), q.env());
    switch (st) {
        case hw::QpState::Init:
        case hw::QpState::Rtr:
            q.core->set_state(st);
            writeback(q);
            return;
        case hw::QpState::Rts: {
            tp::QpContext& c = q.core->context();
            const tp::QpConfig n = qp_config(qpn, e);
            if (from == hw::QpState::Rtr || from == hw::QpState::Init) {
                c.cfg.sq_psn = n.sq_psn;
                c.req.psn = n.sq_psn & roce::kPsnMask;
                c.comp.psn = c.req.psn;
                c.cfg.max_rd_atomic = n.max_rd_atomic;
                c.req.rd_atomic_credits = n.max_rd_atomic;
                q.hi_psn = c.req.psn;
            }
            c.cfg.timeout = n.timeout;
            c.cfg.retry_cnt = n.retry_cnt;
            c.cfg.rnr_retry = n.rnr_retry;
            c.cfg.min_rnr_timer = n.min_rnr_timer;
            c.reset_retry_counters();
            run(q, [&] { q.core->set_state(hw::QpState::Rts); });
            fetch_sq(q);
            return;
        }
        case hw::QpState::Sqd:
        case hw::QpState::Sqe:
            // RTS->SQD: the firmware set sq_draining and en_sqd_async_notify;
            // the core drains and writeback() clears sq_draining when done.
            if (st == hw::QpState::Sqd)
                q.core->context().cfg.en_sqd_async_notify = g(e, Table::Qpc, hw::qpc::en_sqd_async_notify) != 0;
            run(q, [&] { q.core->set_state(st); });
            return;
        case hw::QpState::Err:
            if (q.cause == hw::ErrorCause::None) q.cause = hw::ErrorCause::ModifyToErr;
            run(q, [&] { q.core->set_state(hw::QpState::Err); });  // after() resets it in the model
            return;
        case hw::QpState::Reset: return;  // handled above
    }
}

void SoftEngine::Impl::after(EngineQp& q, bool was_err) {
    // What this step sent goes out now, in one sendmmsg: a message's
    // packets together, a lone ACK without waiting for the batch's end
    // (unless its flow replies: ack_hold.h). A
    // model device's step (rec set) sends nothing itself: its frames leave
    // MAC TX later, and the port's queue then holds other steps' frames,
    // which go together at the quantum's end (wire_tx).
    if (!rec) tx_step_end();
    if (!q.core) return;
    if (q.fault != hw::ErrorCause::None && q.core->state() != hw::QpState::Err) {
        q.cause = q.fault;
        q.fault = hw::ErrorCause::None;
        post_event(q.ctx, hw::EventType::QpFatal, q.qpn, uint32_t(q.cause));
        q.core->set_state(hw::QpState::Err);
    }
    q.fault = hw::ErrorCause::None;
    // Entering ERR: what the timing model holds in flight for the QP will
    // never be acknowledged.
    if (!was_err && q.core->state() == hw::QpState::Err && pipe) pipe->qp_reset(q.qpn);
    writeback(q);
}

// The QPC fields writeback() publishes: dword fields all, so that one is
// compared and stored as the 32-bit word holding it.
constexpr hw::Field kPublished[] = {hw::qpc::state,  hw::qpc::error_cause,    hw::qpc::sq_pi,  hw::qpc::rq_pi,
                                    hw::qpc::rq_ci,  hw::qpc::sq_ci,          hw::qpc::sq_psn, hw::qpc::last_acked_psn,
                                    hw::qpc::rq_psn, hw::qpc::msn,            hw::qpc::sq_draining};
constexpr bool all_dword_fields() {
    for (const hw::Field& f : kPublished)
        if (f.is_wide() || f.offset + 4u > hw::qpc::kSize) return false;
    return true;
}
static_assert(all_dword_fields(), "writeback() stores dwords");

// The QP's dynamic state, published into its QPC entry, where QUERY_QP,
// MODIFY_QP's checks and `simnic resource show` read it. Each field is
// read from its one owner: the state, PSNs, MSN and drain from the core, the
// ring cursors and the error cause from the EngineQp. It runs after every
// step of the QP, so a dword is stored only when it changes (most steps
// move a PSN or two).
void SoftEngine::Impl::writeback(EngineQp& q) {
    uint8_t* e = entry(Table::Qpc, q.qpn);
    if (!e || g(e, Table::Qpc, hw::qpc::qpn) != q.qpn) return;
    auto publish = [e](hw::Field f, uint32_t v) {
        uint8_t* w = e + f.offset;
        const uint32_t m = uint32_t(hw::mask_of(f.width)) << f.lo;
        const uint32_t old = uint32_t(hw::load_le(w, 4));
        const uint32_t now = (old & ~m) | ((v << f.lo) & m);
        if (now != old) hw::store_le(w, 4, now);
    };
    const hw::QpState st = q.state();
    uint32_t sq_ci = q.sq_fetch;
    if (q.core && !q.core->context().sq.empty()) sq_ci = ring_index_of(q, q.core->context().sq.head_seq());
    publish(hw::qpc::state, uint8_t(st));
    publish(hw::qpc::error_cause, uint8_t(q.cause));
    publish(hw::qpc::sq_pi, q.sq_pi);
    publish(hw::qpc::rq_pi, q.rq_pi);
    publish(hw::qpc::rq_ci, q.rq_ci);
    publish(hw::qpc::sq_ci, sq_ci);
    // Before RTR the PSNs are the firmware's attributes, not yet the core's;
    // before RTS, so are the requester's.
    if (!q.core || st == hw::QpState::Reset || st == hw::QpState::Init) return;
    const tp::QpTransportState t = q.core->snapshot();
    if (st != hw::QpState::Rtr) {
        publish(hw::qpc::sq_psn, t.sq_psn);
        publish(hw::qpc::last_acked_psn, roce::psn_add(t.comp_psn, roce::kPsnMask));
    }
    publish(hw::qpc::rq_psn, t.rq_psn);
    publish(hw::qpc::msn, t.msn);
    publish(hw::qpc::sq_draining, t.sq_draining ? 1u : 0u);
}

}  // namespace simnic::soft_engine
