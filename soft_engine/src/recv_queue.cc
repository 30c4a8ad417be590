// Receive queues (hw-spec 6.4, 9.4): the RQ and SRQ doorbells, the parse of
// a receive WQE from its ring, the SRQ's limit event, and the transport
// core's RecvQueuePort (peek and pop of the QP's RQ or SRQ), which records
// the ring index of every WQE taken for its CQE.
#include "engine_internal.h"

namespace simnic::soft_engine {

void SoftEngine::Impl::rq_doorbell(uint16_t ctx, uint32_t qpn, uint32_t index) {
    EngineQp* q = qp_of_ctx(ctx, qpn);
    if (!q) {
        stat(hw::stats_block::dma_faults);
        return;
    }
    q->rq_pi = index;
    // A QP in ERR completes what is posted to its RQ at once, flushed.
    if (q->state() == hw::QpState::Err && !q->on_srq()) {
        while (const tp::RecvWqe* w = q->peek()) {
            tp::Completion c;
            c.wr_id = w->wr_id;
            c.status = hw::WcStatus::WrFlushErr;
            c.opcode = hw::WcOpcode::Recv;
            c.qp_num = q->qpn;
            q->pop();
            q->post(tp::CqSide::Recv, c, false);
        }
    }
    writeback(*q);
}

void SoftEngine::Impl::srq_doorbell(uint16_t ctx, uint32_t srqn, uint32_t index) {
    uint8_t* e = entry(Table::Srqc, srqn);
    if (!e || srqn == 0 || g(e, Table::Srqc, hw::srqc::srqn) != srqn || g(e, Table::Srqc, hw::srqc::ctx_id) != ctx) {
        stat(hw::stats_block::dma_faults);
        return;
    }
    s(e, Table::Srqc, hw::srqc::pi, index);
}

bool SoftEngine::Impl::parse_recv(const HostDom& dom, uint64_t addr, uint32_t stride, uint32_t max_sge,
                                  tp::RecvWqe& w) {
    rq_wqe.resize(stride);
    if (!dom.read(addr, rq_wqe.data(), stride)) return false;
    if (rec) rec->add(Op::Kind::DmaRead, 0, stride, 0, DmaPurpose::RecvWqe);
    // The hwspec codec reads it, as the provider wrote it.
    hw::RecvWqe h;
    if (hw::decode_recv(rq_wqe.data(), stride, max_sge, h) != hw::WqeFault::None) return false;
    w = tp::RecvWqe{};
    w.wr_id = h.wr_id;
    for (uint32_t i = 0; i < h.num_sge; ++i) {
        tp::Sge sge;
        sge.addr = h.sge[i].addr;
        sge.length = h.sge[i].length;
        sge.lkey = h.sge[i].lkey;
        w.sg.push(sge);
    }
    return true;
}

const tp::RecvWqe* SoftEngine::Impl::srq_peek(EngineQp& q) {
    uint8_t* e = entry(Table::Srqc, q.srqn);
    if (!e || g(e, Table::Srqc, hw::srqc::srqn) != q.srqn || g(e, Table::Srqc, hw::srqc::error)) return nullptr;
    SrqState& st = srqs[q.srqn];
    if (st.peeked) return &*st.peeked;
    const uint32_t pi = uint32_t(g(e, Table::Srqc, hw::srqc::pi)), ci = uint32_t(g(e, Table::Srqc, hw::srqc::ci));
    if (pi == ci) return nullptr;
    const uint8_t ls = uint8_t(g(e, Table::Srqc, hw::srqc::log_size));
    const uint8_t lst = uint8_t(g(e, Table::Srqc, hw::srqc::log_stride));
    HostDom dom;
    tp::RecvWqe w;
    if (!host_dom(uint32_t(g(e, Table::Srqc, hw::srqc::domain_id)), dom) ||
        !parse_recv(dom, g(e, Table::Srqc, hw::srqc::base) + (uint64_t{hw::ring_slot(ci, ls)} << lst), 1u << lst,
                    uint32_t(g(e, Table::Srqc, hw::srqc::max_sge)), w)) {
        stat(hw::stats_block::dma_faults);
        s(e, Table::Srqc, hw::srqc::error, 1);
        post_event(uint16_t(g(e, Table::Srqc, hw::srqc::ctx_id)), hw::EventType::SrqErr, q.srqn,
                   uint32_t(hw::ErrorCause::SrqFault));
        return nullptr;
    }
    st.peeked = w;
    return &*st.peeked;
}

uint32_t SoftEngine::Impl::srq_pop(EngineQp& q) {
    uint8_t* e = entry(Table::Srqc, q.srqn);
    srqs[q.srqn].peeked.reset();
    if (!e) return 0;
    const uint32_t ci = uint32_t(g(e, Table::Srqc, hw::srqc::ci));
    const uint32_t pi = uint32_t(g(e, Table::Srqc, hw::srqc::pi));
    s(e, Table::Srqc, hw::srqc::ci, ci + 1);
    if (g(e, Table::Srqc, hw::srqc::limit_armed) && pi - (ci + 1) < g(e, Table::Srqc, hw::srqc::srq_limit)) {
        s(e, Table::Srqc, hw::srqc::limit_armed, 0);
        post_event(uint16_t(g(e, Table::Srqc, hw::srqc::ctx_id)), hw::EventType::SrqLimitReached, q.srqn);
    }
    return ci;
}

// ---- the transport core's RecvQueuePort ----

const tp::RecvWqe* EngineQp::peek() {
    if (on_srq()) return eng.srq_peek(*this);
    if (peeked) return &*peeked;
    if (rq_ci == rq_pi) return nullptr;
    const uint32_t stride = 1u << log_rq_stride;
    tp::RecvWqe w;
    if (!eng.parse_recv(qdom, rq_base + (uint64_t{hw::ring_slot(rq_ci, log_rq_size)} << log_rq_stride), stride,
                        max_recv_sge, w)) {
        eng.stat(hw::stats_block::dma_faults);
        fault = hw::ErrorCause::QueueFault;
        return nullptr;
    }
    peeked = w;
    return &*peeked;
}

void EngineQp::pop() {
    if (on_srq()) {
        recv_idx.push_back(eng.srq_pop(*this));
        return;
    }
    peeked.reset();
    recv_idx.push_back(rq_ci++);
}

}  // namespace simnic::soft_engine
