#include "simnic/transport/qp_context.h"

namespace simnic::transport {

namespace {
hw::WcOpcode wc_opcode_of(hw::WrOpcode op) {
    switch (op) {
        case hw::WrOpcode::RdmaWrite:
        case hw::WrOpcode::RdmaWriteWithImm: return hw::WcOpcode::RdmaWrite;
        case hw::WrOpcode::RdmaRead: return hw::WcOpcode::RdmaRead;
        case hw::WrOpcode::AtomicCmpAndSwp: return hw::WcOpcode::CompSwap;
        case hw::WrOpcode::AtomicFetchAndAdd: return hw::WcOpcode::FetchAdd;
        case hw::WrOpcode::LocalInv: return hw::WcOpcode::LocalInv;
        case hw::WrOpcode::BindMw: return hw::WcOpcode::BindMw;
        case hw::WrOpcode::Flush: return hw::WcOpcode::Flush;
        case hw::WrOpcode::AtomicWrite: return hw::WcOpcode::AtomicWrite;
        case hw::WrOpcode::Send:
        case hw::WrOpcode::SendWithImm:
        case hw::WrOpcode::SendWithInv: return hw::WcOpcode::Send;
    }
    return hw::WcOpcode::Send;
}
}  // namespace

QpContext::QpContext(const QpConfig& c, const TransportEnv& e) : cfg(c), env(e) {
    req.psn = cfg.sq_psn & roce::kPsnMask;
    req.rd_atomic_credits = cfg.max_rd_atomic;
    comp.psn = req.psn;
    reset_retry_counters();
    // The RP starts at line rate; its timers run from the QP's creation.
    if (cfg.dcqcn) {
        rp.emplace(*cfg.dcqcn, env.timers->now_ns());
        if (env.rp_observer) rp->observe(env.rp_observer, cfg.qpn);
    }
    // rxe keeps one source port per QP: from the address vector's flow label
    // or the QPN pair for connected QPs, from its own QPN for UD.
    sport_ = cfg.type == hw::QpType::Ud ? roce::roce_udp_sport_unconnected(cfg.qpn)
                                    : roce::roce_udp_sport(cfg.qpn, cfg.dest_qpn, cfg.av.flow_label);
}

void QpContext::init_packet(roce::Packet& p, const AddressVector& av, uint32_t dqpn) const {
    p = roce::Packet{};
    p.eth.src = av.src_mac;
    p.eth.dst = av.dst_mac;
    p.ip_version = av.ip_version;
    if (av.ip_version == roce::IpVersion::V4) {
        p.eth.ethertype = roce::kEtherTypeIpv4;
        p.ip4.src = av.src_ip4;
        p.ip4.dst = av.dst_ip4;
        p.ip4.ttl = av.hop_limit;
        p.ip4.tos = av.traffic_class;
    } else {
        p.eth.ethertype = roce::kEtherTypeIpv6;
        p.ip6.src = av.src_ip6;
        p.ip6.dst = av.dst_ip6;
        p.ip6.hop_limit = av.hop_limit;
        p.ip6.traffic_class = av.traffic_class;
        p.ip6.flow_label = av.flow_label & 0xfffff;
    }
    p.udp.sport = sport_;
    p.hdr.bth.pkey = cfg.pkey;
    p.hdr.bth.dqpn = dqpn & roce::kPsnMask;
}

void QpContext::complete_send(const SqEntry& e, hw::WcStatus status) {
    const bool signaled = cfg.sq_sig_all || (e.wr.send_flags & hw::send_flags::kSignaled);
    if (status == hw::WcStatus::Success && !signaled) return;
    Completion c;
    c.wr_id = e.wr.wr_id;
    c.status = status;
    c.opcode = wc_opcode_of(e.wr.opcode);
    c.qp_num = cfg.qpn;
    if (status == hw::WcStatus::Success) {
        // rxe reports the message length for every opcode.
        c.byte_len = static_cast<uint32_t>(e.wr.length());
    }
    env.cq->post(CqSide::Send, c, false);
}

void QpContext::arm_retransmit_timer() {
    const uint64_t t = retransmit_timeout_ns(cfg.timeout);
    if (t != 0 && is_rc()) env.timers->arm(QpTimer::Retransmit, env.timers->now_ns() + t);
}

void QpContext::enter_error() {
    if (state == hw::QpState::Err) return;
    state = hw::QpState::Err;
    sq_draining = false;  // no SQ_DRAINED: the flush ends the drain
    env.timers->cancel(QpTimer::Retransmit);
    env.timers->cancel(QpTimer::Rnr);
    env.timers->cancel(QpTimer::RateLimit);
    // Send queue: every WQE not yet completed, in order.
    while (SqEntry* e = sq.head()) {
        complete_send(*e, e->state == WqeState::Error ? e->status : hw::WcStatus::WrFlushErr);
        sq.pop();
    }
    req.next_seq = sq.head_seq();
    req.next_pkt = 0;
    req.retry = ReqRetry::None;
    // Receive side: the WQE in use, then the RQ (an SRQ belongs to other QPs
    // too and is left alone, as rxe does).
    Completion c;
    c.status = hw::WcStatus::WrFlushErr;
    c.opcode = hw::WcOpcode::Recv;
    c.qp_num = cfg.qpn;
    if (recv) {
        c.wr_id = recv->wqe.wr_id;
        env.cq->post(CqSide::Recv, c, false);
        recv.reset();
    }
    if (!cfg.srq) {
        while (const RecvWqe* w = env.rq->peek()) {
            c.wr_id = w->wr_id;
            env.rq->pop();
            env.cq->post(CqSide::Recv, c, false);
        }
    } else {
        // The WQE in use is flushed and a QP in ERR takes no more from the
        // SRQ: the last WQE has been reached (rxe_resp.c, flush_recv_queue()
        // for a QP with an SRQ).
        env.events->async_event(hw::EventType::QpLastWqeReached);
    }
}

void QpContext::begin_sq_drain() {
    sq_draining = true;
}

void QpContext::check_sq_drained() {
    if (!sq_draining || state != hw::QpState::Sqd) return;
    if (sq.head_seq() < req.started_end) return;  // a started WQE is not complete yet
    sq_draining = false;
    if (cfg.en_sqd_async_notify) env.events->async_event(hw::EventType::SqDrained);
}

uint64_t rnr_timeout_ns(uint8_t code) {
    // IBA table 45, in units of 10 ns.
    static constexpr uint32_t k10ns[32] = {
        65536000, 1000,    2000,    3000,    4000,    6000,    8000,    12000,
        16000,    24000,   32000,   48000,   64000,   96000,   128000,  192000,
        256000,   384000,  512000,  768000,  1024000, 1536000, 2048000, 3072000,
        4096000,  6144000, 8192000, 12288000, 16384000, 24576000, 32768000, 49152000,
    };
    return uint64_t{k10ns[code & 31]} * 10;
}

}  // namespace simnic::transport
