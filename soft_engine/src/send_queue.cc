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

// Decodes the WQE in sq_wqe; returns the status for a malformed one.
hw::WcStatus SoftEngine::Impl::decode_send(EngineQp& q, tp::SendWqe& w) {
    const uint32_t stride = 1u << q.log_sq_stride;
    const uint8_t* b = sq_wqe.data();
    namespace c = hw::ctrl_seg;
    const uint32_t op = uint32_t(hw::get(b, stride, c::opcode));
    w = tp::SendWqe{};
    w.wr_id = hw::get(b, stride, c::wr_id);
    w.opcode = hw::WrOpcode(op);
    if (hw::get(b, stride, c::fence)) w.send_flags |= hw::send_flags::kFence;
    if (hw::get(b, stride, c::signaled)) w.send_flags |= hw::send_flags::kSignaled;
    if (hw::get(b, stride, c::solicited)) w.send_flags |= hw::send_flags::kSolicited;
    const bool inl = hw::get(b, stride, c::inline_data) != 0;
    const uint32_t nsge = uint32_t(hw::get(b, stride, c::num_sge));
    const uint32_t imm = uint32_t(hw::get(b, stride, c::imm_inv));
    const uint32_t total = uint32_t(hw::get(b, stride, c::total_len));
    const auto o = hw::WrOpcode(op);
    const bool rdma = o == hw::WrOpcode::RdmaWrite || o == hw::WrOpcode::RdmaWriteWithImm ||
                      o == hw::WrOpcode::RdmaRead;
    const bool atomic = o == hw::WrOpcode::AtomicCmpAndSwp || o == hw::WrOpcode::AtomicFetchAndAdd;
    const bool send = o == hw::WrOpcode::Send || o == hw::WrOpcode::SendWithImm || o == hw::WrOpcode::SendWithInv;
    if (o == hw::WrOpcode::BindMw || o == hw::WrOpcode::LocalInv) {
        // Local operations (hw-spec 6.2, 6.5): no data.
        if (inl || nsge != 0) return hw::WcStatus::LocQpOpErr;
        if (o == hw::WrOpcode::LocalInv) {
            w.invalidate_rkey = imm;
            return hw::WcStatus::Success;
        }
        namespace bs = hw::bind_seg;
        if (c::kSize + bs::kSize > stride) return hw::WcStatus::LocQpOpErr;
        const uint8_t* s = b + c::kSize;
        w.bind.mw_rkey = uint32_t(hw::get(s, bs::kSize, bs::mw_rkey));
        w.bind.new_rkey = uint32_t(hw::get(s, bs::kSize, bs::new_rkey));
        w.bind.mr_lkey = uint32_t(hw::get(s, bs::kSize, bs::mr_lkey));
        w.bind.access = uint32_t(hw::get(s, bs::kSize, bs::access));
        w.bind.addr = hw::get(s, bs::kSize, bs::addr);
        w.bind.length = hw::get(s, bs::kSize, bs::length);
        return hw::WcStatus::Success;
    }
    if (!rdma && !atomic && !send) return hw::WcStatus::LocQpOpErr;
    if (o == hw::WrOpcode::SendWithInv) w.invalidate_rkey = imm;
    else w.imm_data = imm;
    uint32_t off = c::kSize;
    auto need = [&](uint32_t n) { return off + n <= stride; };
    if (rdma || atomic) {
        if (!need(hw::raddr_seg::kSize)) return hw::WcStatus::LocQpOpErr;
        w.remote_addr = hw::get(b + off, hw::raddr_seg::kSize, hw::raddr_seg::remote_va);
        w.rkey = uint32_t(hw::get(b + off, hw::raddr_seg::kSize, hw::raddr_seg::rkey));
        off += hw::raddr_seg::kSize;
    }
    if (atomic) {
        if (!need(hw::atomic_seg::kSize)) return hw::WcStatus::LocQpOpErr;
        w.compare_add = hw::get(b + off, hw::atomic_seg::kSize, hw::atomic_seg::compare_add);
        w.swap = hw::get(b + off, hw::atomic_seg::kSize, hw::atomic_seg::swap);
        off += hw::atomic_seg::kSize;
        if (w.remote_addr % 8 != 0) return hw::WcStatus::LocQpOpErr;
    }
    if (q.is_ud()) {
        if (!need(hw::ud_seg::kSize)) return hw::WcStatus::LocQpOpErr;
        const uint32_t ah = uint32_t(hw::get(b + off, hw::ud_seg::kSize, hw::ud_seg::ah_num));
        w.ud.remote_qpn = uint32_t(hw::get(b + off, hw::ud_seg::kSize, hw::ud_seg::dest_qpn));
        w.ud.remote_qkey = uint32_t(hw::get(b + off, hw::ud_seg::kSize, hw::ud_seg::qkey));
        off += hw::ud_seg::kSize;
        if (ah == 0) {
            if (!need(hw::av::kSize)) return hw::WcStatus::LocQpOpErr;
            build_av(b + off, hw::av::kSize, kSegAv, w.ud.av);
            off += hw::av::kSize;
        } else {
            const uint8_t* a = entry(Table::Ah, ah);
            if (!a || !g(a, Table::Ah, hw::ah_entry::valid) || g(a, Table::Ah, hw::ah_entry::pdn) != q.pdn ||
                g(a, Table::Ah, hw::ah_entry::ctx_id) != q.ctx)
                return hw::WcStatus::LocQpOpErr;
            build_av(a, hw::ah_entry::kSize, kAhAv, w.ud.av);
        }
    }
    if (inl) {
        if (o == hw::WrOpcode::RdmaRead || atomic || !need(hw::inline_seg::kSize)) return hw::WcStatus::LocQpOpErr;
        const uint32_t n = uint32_t(hw::get(b + off, hw::inline_seg::kSize, hw::inline_seg::byte_count));
        off += hw::inline_seg::kSize;
        if (n > q.max_inline || n > hw::kMaxInline || !need(n)) return hw::WcStatus::LocQpOpErr;
        w.send_flags |= hw::send_flags::kInline;
        w.inline_data.assign(b + off, b + off + n);
        if (n != total) return hw::WcStatus::LocLenErr;
    } else {
        if (nsge > q.max_send_sge || nsge > hw::kMaxSge) return hw::WcStatus::LocQpOpErr;
        uint64_t sum = 0;
        for (uint32_t i = 0; i < nsge; ++i) {
            if (!need(hw::data_seg::kSize)) return hw::WcStatus::LocQpOpErr;
            tp::Sge sge;
            sge.addr = hw::get(b + off, hw::data_seg::kSize, hw::data_seg::addr);
            sge.length = uint32_t(hw::get(b + off, hw::data_seg::kSize, hw::data_seg::length));
            sge.lkey = uint32_t(hw::get(b + off, hw::data_seg::kSize, hw::data_seg::lkey));
            w.sg.push(sge);
            sum += sge.length;
            off += hw::data_seg::kSize;
        }
        if (atomic && (nsge != 1 || sum != 8)) return hw::WcStatus::LocQpOpErr;
        if (!atomic && sum != total) return hw::WcStatus::LocLenErr;
    }
    return hw::WcStatus::Success;
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
