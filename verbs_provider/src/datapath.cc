// The data path (see provider.h): poll_cq and the ibv_cq_ex iterator over a
// CQ's ring (hw-spec 7), req_notify_cq, send WQEs (6.2) from post_send and
// the ibv_wr_* ops, receive WQEs (6.4) from post_recv and post_srq_recv, and
// their doorbells (3.3). Only per-queue mutexes, and no system call of its
// own (the doorbell's eventfd write happens only when the engine sleeps, 3.4).
#include "provider_internal.h"

#include <endian.h>
#include <sched.h>

#include <cstdlib>
#include <cstring>

#include "simnic/base/clock.h"

namespace simnic::verbs {

using namespace detail;

namespace {

// Empty polls of one CQ before poll_cq yields the CPU once (see op_poll_cq).
constexpr std::uint32_t kPollsBeforeYield = 16;

// A context whose CQs have been empty this long naps in poll_cq, this long at
// most (see cq_relax).
constexpr std::uint64_t kNapAfterNs = 100'000;
constexpr std::uint64_t kNapNs = 500'000;

// ---- CQ polling ----
void retire(SimCq& cq, const std::uint8_t* e) {
    const auto qpn = static_cast<std::uint32_t>(hw::get(e, hw::cqe::kSize, hw::cqe::qp_num));
    const auto idx = static_cast<std::uint32_t>(hw::get(e, hw::cqe::kSize, hw::cqe::wqe_index));
    const bool is_send = hw::get(e, hw::cqe::kSize, hw::cqe::is_send) != 0;
    for (SimQp* qp : cq.qps) {
        if (qp->qpn != qpn) continue;
        // Everything up to and including the completed WQE is free (6.1).
        Wq& wq = is_send ? qp->sq : (qp->srq ? qp->srq->wq : qp->rq);
        wq.ci.store(idx + 1, std::memory_order_release);
        return;
    }
}

void translate(const std::uint8_t* e, ibv_wc& wc) {
    auto g = [e](hw::Field f) { return hw::get(e, hw::cqe::kSize, f); };
    std::memset(&wc, 0, sizeof wc);
    wc.wr_id = g(hw::cqe::wr_id);
    wc.status = static_cast<ibv_wc_status>(g(hw::cqe::status));
    wc.opcode = static_cast<ibv_wc_opcode>(g(hw::cqe::opcode));
    wc.vendor_err = static_cast<std::uint32_t>(g(hw::cqe::vendor_err));
    wc.byte_len = static_cast<std::uint32_t>(g(hw::cqe::byte_len));
    const auto flags = static_cast<std::uint8_t>(g(hw::cqe::wc_flags));
    const auto imm = static_cast<std::uint32_t>(g(hw::cqe::imm_inv));
    if (flags & hw::wc_flags::kWithImm) wc.imm_data = htobe32(imm);  // 7.1
    else if (flags & hw::wc_flags::kWithInv) wc.invalidated_rkey = imm;
    wc.qp_num = static_cast<std::uint32_t>(g(hw::cqe::qp_num));
    wc.src_qp = static_cast<std::uint32_t>(g(hw::cqe::src_qp));
    unsigned wf = 0;
    if (flags & hw::wc_flags::kGrh) wf |= IBV_WC_GRH;
    if (flags & hw::wc_flags::kWithImm) wf |= IBV_WC_WITH_IMM;
    if (flags & hw::wc_flags::kWithInv) wf |= IBV_WC_WITH_INV;
    wc.wc_flags = wf;
    wc.pkey_index = static_cast<std::uint16_t>(g(hw::cqe::pkey_index));
    wc.slid = static_cast<std::uint16_t>(g(hw::cqe::slid));
    wc.sl = static_cast<std::uint8_t>(g(hw::cqe::sl));
    wc.dlid_path_bits = static_cast<std::uint8_t>(g(hw::cqe::dlid_path_bits));
}

// The CQE at the consumer index if the driver owns it (7.2), else null.
// Under cq.mu. 3.3 rule 2: the owner dword with acquire, then the rest.
// With the device gone, an empty ring yields the next flush error instead
// (fatal.cc).
const std::uint8_t* cq_peek(SimCq& cq) {
    const std::uint8_t* e =
        cq.ring + (std::size_t{hw::ring_slot(cq.ci, cq.log_size)} * hw::cqe::kSize);
    const std::uint32_t ow = __atomic_load_n(
        reinterpret_cast<const std::uint32_t*>(e + hw::cqe::owner.offset), __ATOMIC_ACQUIRE);
    if (((ow >> hw::cqe::owner.lo) & 1u) != hw::phase_of(cq.ci, cq.log_size))
        return cq.ctx->fatal.load(std::memory_order_acquire) ? flush_cqe(cq) : nullptr;
    return e;
}

// Consumes the CQE cq_peek returned, once it has been read: its WQEs are
// free and the consumer index moves on. The device learns it at cq_batch_end.
void cq_pop(SimCq& cq, const std::uint8_t* e) {
    retire(cq, e);
    ++cq.ci;
}

// Ends a batch that consumed `n` CQEs (under cq.mu): one CQ doorbell for the
// batch, after the entries were read (rule 3). True if the caller should
// yield the CPU once it has let go of the CQ.
bool cq_batch_end(SimCq& cq, std::uint32_t n) {
    if (n > 0) {
        cq.ctx->hc->ring_doorbell(hw::DbKind::Cq, cq.cqn, cq.ci, 0);
        // A completion ends the context's empty spell (cq_relax starts the
        // next one's clock).
        if (cq.ctx->last_cqe_ns.load(std::memory_order_relaxed) != 0)
            cq.ctx->last_cqe_ns.store(0, std::memory_order_relaxed);
        cq.empty_polls = 0;
        return false;
    }
    // The device is a thread of the daemon, not silicon: an application
    // spinning on an empty CQ competes with it for the CPU. On a machine
    // with fewer cores than busy threads, giving the core away now and then
    // lets the engine produce the completion being waited for.
    return ++cq.empty_polls % kPollsBeforeYield == 0;
}

// After a yield point of an empty poll (outside cq.mu). Spinning stays the
// rule, as on a NIC: a completion that comes within kNapAfterNs of the last
// one is seen at once. Past that, the application is waiting for something
// slow (a bandwidth test's moderated completions, a peer that went quiet),
// and its spinning takes a core from the engine that would produce the
// completion; the thread then sleeps until the device writes any CQE of
// this context (hw-spec 3.5) or kNapNs pass, and poll_cq returns what it
// finds then. SIMNIC_POLL_NAP=0 turns this off.
void cq_relax(SimCq& cq) {
    static const bool nap = [] {
        const char* v = std::getenv("SIMNIC_POLL_NAP");
        return v == nullptr || std::strcmp(v, "0") != 0;
    }();
    if (nap) {
        SimContext& c = *cq.ctx;
        const std::uint64_t now = base::mono_ns();
        std::uint64_t last = c.last_cqe_ns.load(std::memory_order_relaxed);
        if (last == 0) {  // first empty spell of this context: start counting
            c.last_cqe_ns.compare_exchange_strong(last, now, std::memory_order_relaxed);
            last = now;
        }
        if (now - last >= kNapAfterNs &&
            c.hc->wait_cqe(kNapNs, [&cq] {
                std::lock_guard<std::mutex> lk(cq.mu);
                return cq_peek(cq) == nullptr;
            }))
            return;
    }
    sched_yield();
}

}  // namespace

int detail::op_poll_cq(ibv_cq* ibcq, int ne, ibv_wc* wc) {
    SimCq& cq = *cq_of(ibcq);
    int n = 0;
    bool yield = false;
    {
        std::lock_guard<std::mutex> lk(cq.mu);
        for (; n < ne; ++n) {
            const std::uint8_t* e = cq_peek(cq);
            if (e == nullptr) break;
            translate(e, wc[n]);
            cq_pop(cq, e);
        }
        yield = cq_batch_end(cq, static_cast<std::uint32_t>(n));
    }
    if (yield) cq_relax(cq);
    return n;
}

// A simnic context is one whose poll_cq is op_poll_cq. Defined here, beside
// it, so that the data path (build_send, set_bind) inlines the check.
bool is_context(const ibv_context* ctx) {
    return ctx != nullptr && ctx->abi_compat == __VERBS_ABI_IS_EXTENDED &&
           ctx->ops.poll_cq == &op_poll_cq;
}

namespace {

// ---- ibv_cq_ex: the iterator over the same ring and CQEs as poll_cq ----
// start_poll takes the CQ lock and keeps it until end_poll (or returns
// ENOENT without it). The current CQE is translated once, by poll_cq's
// translate(), and read_* return fields of that ibv_wc. A CQE is consumed
// when the iterator moves past it; the batch's doorbell is rung at end_poll.
SimCq& cqx_of(ibv_cq_ex* x) { return *outer<SimCq>(x); }

void cqx_load(SimCq& cq, const std::uint8_t* e) {
    cq.ex_cqe = e;
    translate(e, cq.ex_wc);
    cq.cqx.status = cq.ex_wc.status;
    cq.cqx.wr_id = cq.ex_wc.wr_id;
}

int cqx_start_poll(ibv_cq_ex* x, ibv_poll_cq_attr* /*attr: no fields, as rxe*/) {
    SimCq& cq = cqx_of(x);
    cq.mu.lock();
    const std::uint8_t* e = cq_peek(cq);
    if (e == nullptr) {
        const bool yield = cq_batch_end(cq, 0);
        cq.mu.unlock();
        if (yield) cq_relax(cq);
        errno = ENOENT;
        return ENOENT;
    }
    cq.ex_done = 0;
    cqx_load(cq, e);
    return 0;
}

int cqx_next_poll(ibv_cq_ex* x) {
    SimCq& cq = cqx_of(x);
    if (cq.ex_cqe != nullptr) {
        cq_pop(cq, cq.ex_cqe);
        ++cq.ex_done;
        cq.ex_cqe = nullptr;
    }
    const std::uint8_t* e = cq_peek(cq);
    if (e == nullptr) {
        errno = ENOENT;
        return ENOENT;  // the batch stays open: end_poll follows
    }
    cqx_load(cq, e);
    return 0;
}

void cqx_end_poll(ibv_cq_ex* x) {
    SimCq& cq = cqx_of(x);
    if (cq.ex_cqe != nullptr) {
        cq_pop(cq, cq.ex_cqe);
        ++cq.ex_done;
        cq.ex_cqe = nullptr;
    }
    cq_batch_end(cq, cq.ex_done);  // consumed at least the first: no yield
    cq.ex_done = 0;
    cq.mu.unlock();
}

ibv_wc_opcode cqx_read_opcode(ibv_cq_ex* x) { return cqx_of(x).ex_wc.opcode; }
std::uint32_t cqx_read_vendor_err(ibv_cq_ex* x) { return cqx_of(x).ex_wc.vendor_err; }
std::uint32_t cqx_read_byte_len(ibv_cq_ex* x) { return cqx_of(x).ex_wc.byte_len; }
// The immediate (network order) or, with IBV_WC_WITH_INV, the invalidated
// rkey (host order): ibv_wc's union, as ibv_wc_read_invalidated_rkey expects.
__be32 cqx_read_imm_data(ibv_cq_ex* x) { return cqx_of(x).ex_wc.imm_data; }
std::uint32_t cqx_read_qp_num(ibv_cq_ex* x) { return cqx_of(x).ex_wc.qp_num; }
std::uint32_t cqx_read_src_qp(ibv_cq_ex* x) { return cqx_of(x).ex_wc.src_qp; }
unsigned int cqx_read_wc_flags(ibv_cq_ex* x) { return cqx_of(x).ex_wc.wc_flags; }
std::uint32_t cqx_read_slid(ibv_cq_ex* x) { return cqx_of(x).ex_wc.slid; }
std::uint8_t cqx_read_sl(ibv_cq_ex* x) { return cqx_of(x).ex_wc.sl; }
std::uint8_t cqx_read_dlid_path_bits(ibv_cq_ex* x) { return cqx_of(x).ex_wc.dlid_path_bits; }

}  // namespace

// The ops of the ibv_cq_ex create_cq_ex hands out.
void detail::fill_cq_ex(SimCq& cq, std::uint64_t wc_flags) {
    ibv_cq_ex& x = cq.cqx;
    x.comp_mask = 0;
    x.start_poll = &cqx_start_poll;
    x.next_poll = &cqx_next_poll;
    x.end_poll = &cqx_end_poll;
    x.read_opcode = &cqx_read_opcode;
    x.read_vendor_err = &cqx_read_vendor_err;
    x.read_wc_flags = &cqx_read_wc_flags;
    // The field readers the application asked for, as rxe sets them.
    const std::uint64_t f = wc_flags;
    if (f & IBV_WC_EX_WITH_BYTE_LEN) x.read_byte_len = &cqx_read_byte_len;
    if (f & IBV_WC_EX_WITH_IMM) x.read_imm_data = &cqx_read_imm_data;
    if (f & IBV_WC_EX_WITH_QP_NUM) x.read_qp_num = &cqx_read_qp_num;
    if (f & IBV_WC_EX_WITH_SRC_QP) x.read_src_qp = &cqx_read_src_qp;
    if (f & IBV_WC_EX_WITH_SLID) x.read_slid = &cqx_read_slid;
    if (f & IBV_WC_EX_WITH_SL) x.read_sl = &cqx_read_sl;
    if (f & IBV_WC_EX_WITH_DLID_PATH_BITS) x.read_dlid_path_bits = &cqx_read_dlid_path_bits;
}

int detail::op_req_notify_cq(ibv_cq* ibcq, int solicited_only) {
    SimCq& cq = *cq_of(ibcq);
    std::uint32_t ci;
    {
        std::lock_guard<std::mutex> lk(cq.mu);
        ci = cq.ci;
    }
    const auto cmd = solicited_only ? hw::CqArm::Solicited : hw::CqArm::Next;
    cq.ctx->hc->ring_doorbell(hw::DbKind::Cq, cq.cqn, ci, static_cast<std::uint8_t>(cmd));
    return 0;
}

namespace {

// ---- send WQEs (6.2) ----
// CTRL_SEG.opcode holds the ibv_wr_opcode itself (hw-spec 6.3, verbs_abi.cc),
// so the vocabulary's classification applies to the application's opcode.
bool is_rdma(ibv_wr_opcode op) { return hw::is_rdma(static_cast<hw::WrOpcode>(op)); }
bool is_atomic(ibv_wr_opcode op) { return hw::is_atomic(static_cast<hw::WrOpcode>(op)); }
bool opcode_ok(ibv_qp_type t, ibv_wr_opcode op) {
    switch (op) {
        case IBV_WR_SEND:
        case IBV_WR_SEND_WITH_IMM:
            return true;
        case IBV_WR_RDMA_WRITE:
        case IBV_WR_RDMA_WRITE_WITH_IMM:
        case IBV_WR_SEND_WITH_INV:
            return t == IBV_QPT_RC || t == IBV_QPT_UC;
        case IBV_WR_RDMA_READ:
        case IBV_WR_ATOMIC_CMP_AND_SWP:
        case IBV_WR_ATOMIC_FETCH_AND_ADD:
        case IBV_WR_LOCAL_INV:  // rxe's opcode table: RC only
            return t == IBV_QPT_RC;
        case IBV_WR_BIND_MW:
            return t == IBV_QPT_RC || t == IBV_QPT_UC;
        default:
            return false;
    }
}

// BIND_MW's segment (hw-spec 6.2 BIND_SEG) after CTRL. `info.mr` may be
// null for a type 1 unbind (length 0), which rdma-core's rxe provider would
// dereference.
int set_bind(std::uint8_t* w, const ibv_mw* mw, std::uint32_t new_rkey, const ibv_mw_bind_info& info) {
    if (mw == nullptr || !is_context(mw->context)) return EINVAL;
    if (info.mr == nullptr && (info.addr != 0 || info.length != 0)) return EINVAL;
    namespace b = hw::bind_seg;
    std::uint8_t* s = w + hw::ctrl_seg::kSize;
    hw::set(s, b::kSize, b::mw_rkey, mw->rkey);
    hw::set(s, b::kSize, b::new_rkey, new_rkey);
    hw::set(s, b::kSize, b::mr_lkey, info.mr ? info.mr->lkey : 0);
    hw::set(s, b::kSize, b::access, info.mw_access_flags);
    hw::set(s, b::kSize, b::addr, info.addr);
    hw::set(s, b::kSize, b::length, info.length);
    return 0;
}

// Starts a send WQE in `w` (the slot, zeroed here): CTRL and the fixed
// segments before the data. Returns the data offset.
std::uint32_t begin_send(SimQp& qp, std::uint8_t* w, ibv_wr_opcode op, unsigned flags,
                         std::uint64_t wr_id, std::uint32_t imm_inv) {
    const std::uint32_t stride = qp.sq.stride();
    std::memset(w, 0, stride);
    namespace c = hw::ctrl_seg;
    hw::set(w, stride, c::opcode, static_cast<std::uint64_t>(op));
    hw::set(w, stride, c::fence, (flags & IBV_SEND_FENCE) ? 1 : 0);
    hw::set(w, stride, c::signaled, (flags & IBV_SEND_SIGNALED) ? 1 : 0);
    hw::set(w, stride, c::solicited, (flags & IBV_SEND_SOLICITED) ? 1 : 0);
    hw::set(w, stride, c::imm_inv, imm_inv);
    hw::set(w, stride, c::wr_id, wr_id);
    std::uint32_t off = c::kSize;
    if (is_rdma(op) || is_atomic(op)) off += hw::raddr_seg::kSize;
    if (is_atomic(op)) off += hw::atomic_seg::kSize;
    if (qp.type == IBV_QPT_UD) off += hw::ud_seg::kSize;
    return off;
}

void set_raddr(SimQp& qp, std::uint8_t* w, std::uint64_t va, std::uint32_t rkey) {
    std::uint8_t* s = w + hw::ctrl_seg::kSize;
    hw::set(s, hw::raddr_seg::kSize, hw::raddr_seg::remote_va, va);
    hw::set(s, hw::raddr_seg::kSize, hw::raddr_seg::rkey, rkey);
    (void)qp;
}

void set_atomic(std::uint8_t* w, std::uint64_t cmp_add, std::uint64_t swap) {
    std::uint8_t* s = w + hw::ctrl_seg::kSize + hw::raddr_seg::kSize;
    hw::set(s, hw::atomic_seg::kSize, hw::atomic_seg::compare_add, cmp_add);
    hw::set(s, hw::atomic_seg::kSize, hw::atomic_seg::swap, swap);
}

void set_ud(std::uint8_t* w, std::uint32_t ahn, std::uint32_t qpn, std::uint32_t qkey) {
    std::uint8_t* s = w + hw::ctrl_seg::kSize;
    hw::set(s, hw::ud_seg::kSize, hw::ud_seg::ah_num, ahn);
    hw::set(s, hw::ud_seg::kSize, hw::ud_seg::dest_qpn, qpn & hw::kQpnMask);
    hw::set(s, hw::ud_seg::kSize, hw::ud_seg::qkey, qkey);
}

int set_sges(SimQp& qp, std::uint8_t* w, std::uint32_t off, const ibv_sge* sg, std::size_t n) {
    if (n > qp.max_send_sge) return EINVAL;
    const std::uint32_t stride = qp.sq.stride();
    std::uint64_t total = 0;
    for (std::size_t i = 0; i < n; ++i, off += hw::data_seg::kSize) {
        std::uint8_t* d = w + off;
        hw::set(d, hw::data_seg::kSize, hw::data_seg::addr, sg[i].addr);
        hw::set(d, hw::data_seg::kSize, hw::data_seg::length, sg[i].length);
        hw::set(d, hw::data_seg::kSize, hw::data_seg::lkey, sg[i].lkey);
        total += sg[i].length;
    }
    hw::set(w, stride, hw::ctrl_seg::num_sge, n);
    hw::set(w, stride, hw::ctrl_seg::inline_data, 0);
    hw::set(w, stride, hw::ctrl_seg::total_len, static_cast<std::uint32_t>(total));
    return 0;
}

int set_inline(SimQp& qp, std::uint8_t* w, std::uint32_t off, const ibv_data_buf* b, std::size_t n) {
    std::size_t total = 0;
    for (std::size_t i = 0; i < n; ++i) total += b[i].length;
    if (total > qp.max_inline) return EINVAL;
    const std::uint32_t stride = qp.sq.stride();
    hw::set(w + off, hw::inline_seg::kSize, hw::inline_seg::byte_count, total);
    std::uint8_t* p = w + off + hw::inline_seg::kSize;
    for (std::size_t i = 0; i < n; ++i) {
        std::memcpy(p, b[i].addr, b[i].length);
        p += b[i].length;
    }
    hw::set(w, stride, hw::ctrl_seg::inline_data, 1);
    hw::set(w, stride, hw::ctrl_seg::num_sge, 0);
    hw::set(w, stride, hw::ctrl_seg::total_len, static_cast<std::uint32_t>(total));
    return 0;
}

std::uint32_t ah_number(ibv_ah* ah) { return outer<SimAh>(ah)->ahn; }

int build_send(SimQp& qp, const ibv_send_wr& wr, std::uint8_t* w) {
    const ibv_wr_opcode op = wr.opcode;
    if (!opcode_ok(qp.type, op)) return EINVAL;
    if (wr.num_sge < 0) return EINVAL;
    const bool inl = (wr.send_flags & IBV_SEND_INLINE) != 0;
    if (inl && (op == IBV_WR_RDMA_READ || is_atomic(op))) return EINVAL;
    if (is_atomic(op) && wr.num_sge != 1) return EINVAL;
    if (qp.type == IBV_QPT_UD && (wr.wr.ud.ah == nullptr || !is_context(wr.wr.ud.ah->context)))
        return EINVAL;
    std::uint32_t imm = 0;
    if (op == IBV_WR_SEND_WITH_IMM || op == IBV_WR_RDMA_WRITE_WITH_IMM) imm = be32toh(wr.imm_data);
    if (op == IBV_WR_SEND_WITH_INV || op == IBV_WR_LOCAL_INV) imm = wr.invalidate_rkey;
    // Local operations carry no data (rxe's validate_send_wr).
    if ((op == IBV_WR_BIND_MW || op == IBV_WR_LOCAL_INV) && (wr.num_sge != 0 || inl)) return EINVAL;
    const std::uint32_t off = begin_send(qp, w, op, wr.send_flags, wr.wr_id, imm);
    if (op == IBV_WR_BIND_MW) return set_bind(w, wr.bind_mw.mw, wr.bind_mw.rkey, wr.bind_mw.bind_info);
    if (op == IBV_WR_LOCAL_INV) return 0;
    if (is_atomic(op)) {
        set_raddr(qp, w, wr.wr.atomic.remote_addr, wr.wr.atomic.rkey);
        set_atomic(w, wr.wr.atomic.compare_add, wr.wr.atomic.swap);
    } else if (is_rdma(op)) {
        set_raddr(qp, w, wr.wr.rdma.remote_addr, wr.wr.rdma.rkey);
    }
    if (qp.type == IBV_QPT_UD)
        set_ud(w, ah_number(wr.wr.ud.ah), wr.wr.ud.remote_qpn, wr.wr.ud.remote_qkey);
    const auto n = static_cast<std::size_t>(wr.num_sge);
    if (inl) {
        if (n > hw::kMaxSge) return EINVAL;
        std::array<ibv_data_buf, hw::kMaxSge> bufs{};
        for (std::size_t i = 0; i < n; ++i)
            bufs[i] = {reinterpret_cast<void*>(static_cast<std::uintptr_t>(wr.sg_list[i].addr)),
                       wr.sg_list[i].length};
        return set_inline(qp, w, off, bufs.data(), n);
    }
    return set_sges(qp, w, off, wr.sg_list, n);
}

void ring_sq(SimQp& qp) {
    std::atomic_thread_fence(std::memory_order_release);  // 3.3 rule 1
    qp.ctx->hc->ring_doorbell(hw::DbKind::Sq, qp.qpn, qp.sq.pi);
}

}  // namespace

int detail::op_post_send(ibv_qp* ibqp, ibv_send_wr* wr, ibv_send_wr** bad) {
    SimQp& qp = *qp_of(ibqp);
    if (qp.ctx->fatal.load(std::memory_order_relaxed)) {  // the device is gone (fatal.cc)
        if (bad) *bad = wr;
        return EIO;
    }
    std::lock_guard<std::mutex> lk(qp.sq.mu);
    if (!qp.sq_open.load(std::memory_order_relaxed)) {
        if (bad) *bad = wr;
        return EINVAL;
    }
    const std::uint32_t start = qp.sq.pi;
    int err = 0;
    for (; wr != nullptr; wr = wr->next) {
        if (qp.sq.full()) err = ENOMEM;
        else err = build_send(qp, *wr, qp.sq.slot(qp.sq.pi));
        if (err != 0) {
            if (bad) *bad = wr;
            break;
        }
        ++qp.sq.pi;
    }
    if (qp.sq.pi != start) ring_sq(qp);
    return err;
}

namespace {

// ---- receive WQEs (6.4) ----
int build_recv(Wq& wq, std::uint32_t max_sge, const ibv_recv_wr& wr) {
    if (wr.num_sge < 0 || static_cast<std::uint32_t>(wr.num_sge) > max_sge) return EINVAL;
    std::uint8_t* w = wq.slot(wq.pi);
    const std::uint32_t stride = wq.stride();
    std::memset(w, 0, stride);
    hw::set(w, stride, hw::recv_wqe::wr_id, wr.wr_id);
    hw::set(w, stride, hw::recv_wqe::num_sge, static_cast<std::uint64_t>(wr.num_sge));
    std::uint32_t off = hw::recv_wqe::kSize;
    for (int i = 0; i < wr.num_sge; ++i, off += hw::data_seg::kSize) {
        std::uint8_t* d = w + off;
        hw::set(d, hw::data_seg::kSize, hw::data_seg::addr, wr.sg_list[i].addr);
        hw::set(d, hw::data_seg::kSize, hw::data_seg::length, wr.sg_list[i].length);
        hw::set(d, hw::data_seg::kSize, hw::data_seg::lkey, wr.sg_list[i].lkey);
    }
    return 0;
}

int post_recv_on(SimContext& c, Wq& wq, std::uint32_t max_sge, hw::DbKind kind,
                 std::uint32_t num, ibv_recv_wr* wr, ibv_recv_wr** bad) {
    std::lock_guard<std::mutex> lk(wq.mu);
    const std::uint32_t start = wq.pi;
    int err = 0;
    for (; wr != nullptr; wr = wr->next) {
        err = wq.full() ? ENOMEM : build_recv(wq, max_sge, *wr);
        if (err != 0) {
            if (bad) *bad = wr;
            break;
        }
        ++wq.pi;
    }
    if (wq.pi != start) {
        std::atomic_thread_fence(std::memory_order_release);
        c.hc->ring_doorbell(kind, num, wq.pi);
    }
    return err;
}

}  // namespace

int detail::op_post_recv(ibv_qp* ibqp, ibv_recv_wr* wr, ibv_recv_wr** bad) {
    SimQp& qp = *qp_of(ibqp);
    if (qp.srq != nullptr) {
        if (bad) *bad = wr;
        return EINVAL;
    }
    return post_recv_on(*qp.ctx, qp.rq, qp.max_recv_sge, hw::DbKind::Rq, qp.qpn, wr, bad);
}

int detail::op_post_srq_recv(ibv_srq* ibsrq, ibv_recv_wr* wr, ibv_recv_wr** bad) {
    SimSrq& s = *srq_of(ibsrq);
    return post_recv_on(*s.ctx, s.wq, s.max_sge, hw::DbKind::Srq, s.srqn, wr, bad);
}

namespace {

// ---- ibv_wr_* (ibv_qp_ex) ----
SimQp& exq(ibv_qp_ex* q) { return *outer<SimQp>(q); }

void ex_begin(ibv_qp_ex* q, ibv_wr_opcode op, std::uint32_t imm) {
    SimQp& qp = exq(q);
    qp.ex_wqe = nullptr;
    if (qp.ex_err != 0) return;
    if (!opcode_ok(qp.type, op)) {
        qp.ex_err = EINVAL;
        return;
    }
    if (qp.sq.full()) {
        qp.ex_err = ENOMEM;
        return;
    }
    qp.ex_wqe = qp.sq.slot(qp.sq.pi);
    qp.ex_data_off = begin_send(qp, qp.ex_wqe, op, q->wr_flags, q->wr_id, imm);
    ++qp.sq.pi;
}

void ex_start(ibv_qp_ex* q) {
    SimQp& qp = exq(q);
    qp.sq.mu.lock();
    qp.ex_start = qp.sq.pi;
    qp.ex_err = qp.ctx->fatal.load(std::memory_order_relaxed)      ? EIO  // the device is gone (fatal.cc)
                : qp.sq_open.load(std::memory_order_relaxed) ? 0
                                                             : EINVAL;
    qp.ex_wqe = nullptr;
}
int ex_complete(ibv_qp_ex* q) {
    SimQp& qp = exq(q);
    const int err = qp.ex_err;
    if (err != 0) qp.sq.pi = qp.ex_start;
    else if (qp.sq.pi != qp.ex_start) ring_sq(qp);
    qp.sq.mu.unlock();
    return err;
}
void ex_abort(ibv_qp_ex* q) {
    SimQp& qp = exq(q);
    qp.sq.pi = qp.ex_start;
    qp.sq.mu.unlock();
}
void ex_send(ibv_qp_ex* q) { ex_begin(q, IBV_WR_SEND, 0); }
void ex_send_imm(ibv_qp_ex* q, __be32 imm) { ex_begin(q, IBV_WR_SEND_WITH_IMM, be32toh(imm)); }
void ex_send_inv(ibv_qp_ex* q, std::uint32_t rkey) { ex_begin(q, IBV_WR_SEND_WITH_INV, rkey); }
void ex_rdma(ibv_qp_ex* q, ibv_wr_opcode op, std::uint32_t rkey, std::uint64_t va,
             std::uint32_t imm) {
    ex_begin(q, op, imm);
    if (exq(q).ex_wqe) set_raddr(exq(q), exq(q).ex_wqe, va, rkey);
}
void ex_rdma_write(ibv_qp_ex* q, std::uint32_t rkey, std::uint64_t va) {
    ex_rdma(q, IBV_WR_RDMA_WRITE, rkey, va, 0);
}
void ex_rdma_write_imm(ibv_qp_ex* q, std::uint32_t rkey, std::uint64_t va, __be32 imm) {
    ex_rdma(q, IBV_WR_RDMA_WRITE_WITH_IMM, rkey, va, be32toh(imm));
}
void ex_rdma_read(ibv_qp_ex* q, std::uint32_t rkey, std::uint64_t va) {
    ex_rdma(q, IBV_WR_RDMA_READ, rkey, va, 0);
}
void ex_cmp_swp(ibv_qp_ex* q, std::uint32_t rkey, std::uint64_t va, std::uint64_t cmp,
                std::uint64_t swap) {
    ex_rdma(q, IBV_WR_ATOMIC_CMP_AND_SWP, rkey, va, 0);
    if (exq(q).ex_wqe) set_atomic(exq(q).ex_wqe, cmp, swap);
}
void ex_fetch_add(ibv_qp_ex* q, std::uint32_t rkey, std::uint64_t va, std::uint64_t add) {
    ex_rdma(q, IBV_WR_ATOMIC_FETCH_AND_ADD, rkey, va, 0);
    if (exq(q).ex_wqe) set_atomic(exq(q).ex_wqe, add, 0);
}
void ex_set_ud_addr(ibv_qp_ex* q, ibv_ah* ah, std::uint32_t qpn, std::uint32_t qkey) {
    SimQp& qp = exq(q);
    if (qp.ex_wqe == nullptr) return;
    if (qp.type != IBV_QPT_UD || ah == nullptr) {
        qp.ex_err = EINVAL;
        return;
    }
    set_ud(qp.ex_wqe, ah_number(ah), qpn, qkey);
}
// The current ibv_wr_* WQE takes data (not a local operation); else the
// batch fails.
bool ex_takes_data(SimQp& qp) {
    if (qp.ex_wqe == nullptr) return false;
    const auto op = hw::get(qp.ex_wqe, hw::ctrl_seg::kSize, hw::ctrl_seg::opcode);
    if (op != IBV_WR_BIND_MW && op != IBV_WR_LOCAL_INV) return true;
    qp.ex_err = EINVAL;
    return false;
}
void ex_set_sge(ibv_qp_ex* q, std::uint32_t lkey, std::uint64_t addr, std::uint32_t len) {
    SimQp& qp = exq(q);
    if (!ex_takes_data(qp)) return;
    const ibv_sge sge{addr, len, lkey};
    if (const int e = set_sges(qp, qp.ex_wqe, qp.ex_data_off, &sge, 1)) qp.ex_err = e;
}
void ex_set_sge_list(ibv_qp_ex* q, std::size_t n, const ibv_sge* sg) {
    SimQp& qp = exq(q);
    if (!ex_takes_data(qp)) return;
    if (const int e = set_sges(qp, qp.ex_wqe, qp.ex_data_off, sg, n)) qp.ex_err = e;
}
void ex_set_inline_list(ibv_qp_ex* q, std::size_t n, const ibv_data_buf* b) {
    SimQp& qp = exq(q);
    if (!ex_takes_data(qp)) return;
    const auto op = hw::get(qp.ex_wqe, hw::ctrl_seg::kSize, hw::ctrl_seg::opcode);
    if (op == IBV_WR_RDMA_READ || is_atomic(static_cast<ibv_wr_opcode>(op))) {
        qp.ex_err = EINVAL;
        return;
    }
    if (const int e = set_inline(qp, qp.ex_wqe, qp.ex_data_off, b, n)) qp.ex_err = e;
}
void ex_set_inline(ibv_qp_ex* q, void* addr, std::size_t len) {
    const ibv_data_buf b{addr, len};
    ex_set_inline_list(q, 1, &b);
}
void ex_bind_mw(ibv_qp_ex* q, ibv_mw* mw, std::uint32_t rkey, const ibv_mw_bind_info* info) {
    ex_begin(q, IBV_WR_BIND_MW, 0);
    SimQp& qp = exq(q);
    if (qp.ex_wqe == nullptr) return;
    if (info == nullptr) {
        qp.ex_err = EINVAL;
        return;
    }
    if (const int e = set_bind(qp.ex_wqe, mw, rkey, *info)) qp.ex_err = e;
}
void ex_local_inv(ibv_qp_ex* q, std::uint32_t rkey) { ex_begin(q, IBV_WR_LOCAL_INV, rkey); }
// Operations this device lacks (hw-spec 6.3): the batch fails at wr_complete.
void ex_send_tso(ibv_qp_ex* q, void*, std::uint16_t, std::uint16_t) { exq(q).ex_err = EOPNOTSUPP; }
void ex_set_xrc_srqn(ibv_qp_ex* q, std::uint32_t) { exq(q).ex_err = EOPNOTSUPP; }
void ex_atomic_write(ibv_qp_ex* q, std::uint32_t, std::uint64_t, const void*) {
    exq(q).ex_err = EOPNOTSUPP;
}

}  // namespace

void detail::fill_qp_ex(SimQp& qp) {
    ibv_qp_ex& x = qp.qpx;
    x.wr_atomic_cmp_swp = &ex_cmp_swp;
    x.wr_atomic_fetch_add = &ex_fetch_add;
    x.wr_bind_mw = &ex_bind_mw;
    x.wr_local_inv = &ex_local_inv;
    x.wr_rdma_read = &ex_rdma_read;
    x.wr_rdma_write = &ex_rdma_write;
    x.wr_rdma_write_imm = &ex_rdma_write_imm;
    x.wr_send = &ex_send;
    x.wr_send_imm = &ex_send_imm;
    x.wr_send_inv = &ex_send_inv;
    x.wr_send_tso = &ex_send_tso;
    x.wr_set_ud_addr = &ex_set_ud_addr;
    x.wr_set_xrc_srqn = &ex_set_xrc_srqn;
    x.wr_set_inline_data = &ex_set_inline;
    x.wr_set_inline_data_list = &ex_set_inline_list;
    x.wr_set_sge = &ex_set_sge;
    x.wr_set_sge_list = &ex_set_sge_list;
    x.wr_start = &ex_start;
    x.wr_complete = &ex_complete;
    x.wr_abort = &ex_abort;
    x.wr_atomic_write = &ex_atomic_write;
}

}  // namespace simnic::verbs
