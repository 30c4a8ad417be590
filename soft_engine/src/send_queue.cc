// Send queues (hw-spec 6.2): the SQ doorbell, the fetch of each posted WQE
// from the application's ring, its decode into the transport core's
// SendWqe, and the map from the core's SQ sequence numbers back to ring
// indices, which CQEs carry.
#include <algorithm>

#include "engine_internal.h"

namespace simnic::soft_engine {

void SoftEngine::Impl::sq_doorbell(uint16_t ctx, uint32_t qpn, uint32_t index) {
    EngineQp* q = qp_of_ctx(ctx, qpn);
    if (!q) {
        stat(hw::stats_block::dma_faults);
        return;
    }
    if (index - q->sq_fetch > (1u << q->log_sq_size)) {
        stat(hw::stats_block::dma_faults);
        q->fault = hw::ErrorCause::LocQpOp;
        after(*q);
        return;
    }
    q->sq_pi = index;
    fetch_sq(*q);
    writeback(*q);
}

// Decodes the WQE in sq_wqe with the hwspec codec (the same one the verbs
// provider encodes with) into the transport core's SendWqe; returns the
// status for a malformed one. The codec checks what the slot alone shows;
// the engine adds what needs device state: the AH of a UD WQE.
hw::WcStatus SoftEngine::Impl::decode_send(EngineQp& q, tp::SendWqe& w) {
    hw::SendWqe h;
    const hw::WqeFault f =
        hw::decode_send(sq_wqe.data(), {q.type(), 1u << q.log_sq_stride, q.max_send_sge, q.max_inline}, h);
    w = tp::SendWqe{};
    w.wr_id = h.wr_id;
    w.opcode = h.opcode;
    if (h.fence) w.send_flags |= hw::send_flags::kFence;
    if (h.signaled) w.send_flags |= hw::send_flags::kSignaled;
    if (h.solicited) w.send_flags |= hw::send_flags::kSolicited;
    if (h.opcode == hw::WrOpcode::LocalInv || h.opcode == hw::WrOpcode::SendWithInv) {
        w.invalidate_rkey = h.imm_inv;
    } else if (h.opcode == hw::WrOpcode::Flush) {
        w.flush_placement = hw::wqe_flush_placement(h.imm_inv);
        w.flush_selectivity = hw::wqe_flush_selectivity(h.imm_inv);
        w.flush_len = h.raddr.flush_len;
    } else if (h.opcode != hw::WrOpcode::BindMw) {
        w.imm_data = h.imm_inv;
    }
    // A UD WQE naming an AH: the AH must be this context's and PD's. The
    // check comes before the data's, so a bad AH is LOC_QP_OP_ERR whatever
    // the lengths say.
    if (q.is_ud() && !hw::is_local_op(h.opcode) && h.ud.ah_num != 0 &&
        (f == hw::WqeFault::None || f == hw::WqeFault::LengthMismatch)) {
        const uint8_t* a = entry(Table::Ah, h.ud.ah_num);
        if (!a || !g(a, Table::Ah, hw::ah_entry::valid) || g(a, Table::Ah, hw::ah_entry::pdn) != q.pdn ||
            g(a, Table::Ah, hw::ah_entry::ctx_id) != q.ctx)
            return hw::WcStatus::LocQpOpErr;
    }
    if (f != hw::WqeFault::None && f != hw::WqeFault::LengthMismatch) return hw::wqe_fault_status(f);
    if (h.opcode == hw::WrOpcode::BindMw) {
        w.bind.mw_rkey = h.bind.mw_rkey;
        w.bind.new_rkey = h.bind.new_rkey;
        w.bind.mr_lkey = h.bind.mr_lkey;
        w.bind.access = h.bind.access;
        w.bind.addr = h.bind.addr;
        w.bind.length = h.bind.length;
    }
    w.remote_addr = h.raddr.remote_va;
    w.rkey = h.raddr.rkey;
    w.compare_add = h.atomic.compare_add;
    w.swap = h.atomic.swap;
    if (q.is_ud() && !hw::is_local_op(h.opcode)) {
        w.ud.remote_qpn = h.ud.dest_qpn;
        w.ud.remote_qkey = h.ud.qkey;
        if (h.ud.ah_num == 0) build_av(h.av, w.ud.av);
        else build_av(hw::decode_av(entry(Table::Ah, h.ud.ah_num) + hw::ah_entry::av_dgid.offset), w.ud.av);
    }
    if (h.inline_data) {
        w.send_flags |= hw::send_flags::kInline;
        w.inline_data.assign(h.inline_bytes, h.inline_bytes + h.inline_len);
    } else {
        for (uint32_t i = 0; i < h.num_sge; ++i) {
            tp::Sge sge;
            sge.addr = h.sge[i].addr;
            sge.length = h.sge[i].length;
            sge.lkey = h.sge[i].lkey;
            w.sg.push(sge);
        }
    }
    return hw::wqe_fault_status(f);
}

// A WQE the engine refuses before the core sees it: its error CQE, and
// the QP to ERR.
void SoftEngine::Impl::fail_wqe(EngineQp& q, uint32_t idx, const tp::SendWqe& w, hw::WcStatus st) {
    tp::Completion c;
    c.wr_id = w.wr_id;
    c.status = st;
    c.opcode = hw::WcOpcode::Send;
    c.qp_num = q.qpn;
    c.vendor_err = uint32_t(cause_of(st));
    if (q.cause == hw::ErrorCause::None) q.cause = cause_of(st);
    write_cqe(q.send_cqn, c, idx, true, false);
    q.core->set_state(hw::QpState::Err);
}

// Every WQE posted and not yet fetched, into the core (from RTS on).
void SoftEngine::Impl::fetch_sq(EngineQp& q) {
    const hw::QpState st = q.state();
    if (st == hw::QpState::Reset || st == hw::QpState::Init) return;
    const uint32_t stride = 1u << q.log_sq_stride;
    sq_wqe.resize(std::max<size_t>(stride, 16));
    while (q.sq_fetch != q.sq_pi) {
        const uint32_t idx = q.sq_fetch;
        const uint64_t addr = q.sq_base + (uint64_t{hw::ring_slot(idx, q.log_sq_size)} << q.log_sq_stride);
        if (!q.qdom.read(addr, sq_wqe.data(), stride)) {
            stat(hw::stats_block::dma_faults);
            q.fault = hw::ErrorCause::QueueFault;
            after(q);
            return;
        }
        ++q.sq_fetch;
        if (rec) {
            rec->add(Op::Kind::DmaRead, 0, stride, 0, DmaPurpose::WqeFetch);
            rec->add(Op::Kind::WqeFetched, q.qpn, 0, idx);
        }
        tp::SendWqe w;
        const hw::WcStatus dst = decode_send(q, w);
        if (dst != hw::WcStatus::Success) {
            run(q, [&] { fail_wqe(q, idx, w, dst); });
            continue;
        }
        q.seqmap.emplace_back(q.core->context().sq.tail_seq(), idx);
        q.posting_index = idx;
        tp::PostStatus ps = tp::PostStatus::Ok;
        run(q, [&] { ps = q.core->post_send(w); });
        q.posting_index.reset();
        if (ps == tp::PostStatus::Ok || ps == tp::PostStatus::Flushed) {
            if (ps == tp::PostStatus::Flushed && !q.seqmap.empty()) q.seqmap.pop_back();
            continue;
        }
        if (!q.seqmap.empty()) q.seqmap.pop_back();
        run(q, [&] {
            fail_wqe(q, idx, w, ps == tp::PostStatus::BadLength ? hw::WcStatus::LocLenErr : hw::WcStatus::LocQpOpErr);
        });
    }
}

}  // namespace simnic::soft_engine
