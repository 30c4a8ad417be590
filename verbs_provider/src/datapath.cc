// The data path (see provider.h): poll_cq and the ibv_cq_ex iterator over a
// CQ's ring (hw-spec 7), req_notify_cq, send WQEs (6.2) from post_send and
// the ibv_wr_* ops, receive WQEs (6.4) from post_recv and post_srq_recv, and
// their doorbells (3.3). Only per-queue mutexes, and no system call of its
// own (the doorbell's eventfd write happens only when the engine sleeps, 3.4)
// but those of an empty poll's yield or nap (cq_relax).
#include "provider_internal.h"

#include <endian.h>
#include <sched.h>

#include <atomic>
#include <cstdlib>
#include <cstring>

#include "simnic/base/clock.h"
#include "simnic/base/cpu_contention.h"

namespace simnic::verbs {

using namespace detail;

namespace {

// Empty polls of one CQ before poll_cq yields the CPU once (see op_poll_cq).
constexpr std::uint32_t kPollsBeforeYield = 16;

// A context whose CQs have been empty this long naps in poll_cq when the
// CPUs are all taken (at once on one CPU), this long at most (see
// poll_nap_after_ns).
constexpr std::uint64_t kNapAfterNs = 100'000;
constexpr std::uint64_t kNapNs = 500'000;
// How long the answer to "are the CPUs all taken?" is kept (cq_relax).
constexpr std::uint64_t kContentionCheckNs = 10'000'000;

// ---- CQ polling ----
void retire(SimCq& cq, const hw::Cqe& e) {
    auto it = cq.qps.find(e.qp_num);
    if (it == cq.qps.end()) return;
    SimQp* qp = it->second;
    // Everything up to and including the completed WQE is free (6.1).
    Wq& wq = e.is_send ? qp->sq : (qp->srq ? qp->srq->wq : qp->rq);
    wq.ci.store(e.wqe_index + 1, std::memory_order_release);
}

void translate(const hw::Cqe& c, ibv_wc& wc) {
    std::memset(&wc, 0, sizeof wc);
    wc.wr_id = c.wr_id;
    wc.status = static_cast<ibv_wc_status>(c.status);
    wc.opcode = static_cast<ibv_wc_opcode>(c.opcode);
    wc.vendor_err = c.vendor_err;
    wc.byte_len = c.byte_len;
    if (c.wc_flags & hw::wc_flags::kWithImm) wc.imm_data = htobe32(c.imm_inv);  // 7.1
    else if (c.wc_flags & hw::wc_flags::kWithInv) wc.invalidated_rkey = c.imm_inv;
    wc.qp_num = c.qp_num;
    wc.src_qp = c.src_qp;
    unsigned wf = 0;
    if (c.wc_flags & hw::wc_flags::kGrh) wf |= IBV_WC_GRH;
    if (c.wc_flags & hw::wc_flags::kWithImm) wf |= IBV_WC_WITH_IMM;
    if (c.wc_flags & hw::wc_flags::kWithInv) wf |= IBV_WC_WITH_INV;
    wc.wc_flags = wf;
    wc.pkey_index = c.pkey_index;
    wc.slid = c.slid;
    wc.sl = c.sl;
    wc.dlid_path_bits = c.dlid_path_bits;
}

// The CQE at the consumer index if the driver owns it (7.2), else null.
// Under cq.mu. With the device gone, an empty ring yields the next flush
// error instead (fatal.cc).
const std::uint8_t* cq_peek(SimCq& cq) {
    if (const std::uint8_t* e = hw::cqe_peek(cq.ring, cq.ci, cq.log_size)) return e;
    return cq.ctx->fatal.load(std::memory_order_acquire) ? flush_cqe(cq) : nullptr;
}

// Consumes the CQE cq_peek returned, once it has been read: its WQEs are
// free and the consumer index moves on. The device learns it at cq_batch_end.
void cq_pop(SimCq& cq, const hw::Cqe& e) {
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

// What the CPUs this thread may run on look like, asked at most every
// kContentionCheckNs by each polling thread (base::cpu_share reads its
// affinity, which is the thread's own, and /proc/loadavg).
base::CpuShare cpus_now(std::uint64_t now) {
    thread_local std::uint64_t checked_ns = 0;
    thread_local base::CpuShare share;
    if (checked_ns == 0 || now - checked_ns >= kContentionCheckNs) {
        checked_ns = now;
        share = base::cpu_share();
    }
    return share;
}

// After a yield point of an empty poll (outside cq.mu): nap once the
// context's CQs have been empty for poll_nap_after_ns (the thread then
// sleeps until the device writes any CQE of this context, hw-spec 3.5, or
// kNapNs pass, and poll_cq returns what it finds then), else give the CPU
// away once. SIMNIC_POLL_NAP=0 turns the nap off, =1 takes it after
// kNapAfterNs whatever the CPUs.
void cq_relax(SimCq& cq) {
    enum class Nap { Never, Contended, Always };
    static const Nap nap = [] {
        const char* v = std::getenv("SIMNIC_POLL_NAP");
        if (v && std::strcmp(v, "0") == 0) return Nap::Never;
        if (v && std::strcmp(v, "1") == 0) return Nap::Always;
        return Nap::Contended;
    }();
    if (nap != Nap::Never) {
        SimContext& c = *cq.ctx;
        const std::uint64_t now = base::mono_ns();
        std::uint64_t last = c.last_cqe_ns.load(std::memory_order_relaxed);
        if (last == 0) {  // first empty spell of this context: start counting
            c.last_cqe_ns.compare_exchange_strong(last, now, std::memory_order_relaxed);
            last = now;
        }
        std::uint64_t after = kNapAfterNs;
        if (nap == Nap::Contended) {
            const base::CpuShare s = cpus_now(now);
            after = poll_nap_after_ns(s.cpus, s.contended);
        }
        if (now - last >= after && c.hc->wait_cqe(kNapNs, [&cq] {
                std::lock_guard<std::mutex> lk(cq.mu);
                return cq_peek(cq) == nullptr;
            }))
            return;
    }
    sched_yield();
}

}  // namespace

// Spinning stays the rule, as on a NIC: a completion that comes within
// kNapAfterNs of the last one is seen at once. Past that, the application is
// waiting for something slow (a bandwidth test's moderated completions, a
// peer that went quiet). If every CPU it may run on is taken, its spinning
// takes a core from the engine that would produce the completion, so it
// naps. With a core to spare it keeps spinning: its nap saves no one's time
// there, and its wake-up costs the engine a system call per CQE (futex, an
// inter-processor interrupt to the sleeper's idle core; ib_write_bw -s 65536
// on a model device on 2 cores moved 4.7 Gb/s napping and 5.1 spinning).
//
// On one CPU that is taken it naps at once: every thread that could produce
// its completion (the engine, the peer application) needs that CPU, and a
// yield gives it to whichever runnable thread the scheduler picks, often
// another spinner. A trace of ib_send_lat on one CPU showed the two
// applications yielding to each other several times in every half round
// trip before the engine ran; napping at once leaves the engine alone until
// it writes the CQE and wakes the sleeper (taskset -c 0, median typical of
// alternating runs: ib_send_lat -s 2 39.7 us yielding, 30.6 napping;
// ib_read_lat 54.3 and 38.6). On two CPUs shared by three spinners the same
// made it worse (ib_send_lat 22-28 us against 18-19): each CQE then costs the
// engine a futex wake and the sleeper a wake-up on the other CPU, where a
// spinner there would have seen it at once.
std::uint64_t detail::poll_nap_after_ns(unsigned cpus, bool contended) {
    if (!contended) return kNoNap;
    return cpus <= 1 ? 0 : kNapAfterNs;
}

int detail::op_poll_cq(ibv_cq* ibcq, int ne, ibv_wc* wc) {
    SimCq& cq = *cq_of(ibcq);
    int n = 0;
    bool yield = false;
    {
        std::lock_guard<std::mutex> lk(cq.mu);
        for (; n < ne; ++n) {
            const std::uint8_t* e = cq_peek(cq);
            if (e == nullptr) break;
            const hw::Cqe c = hw::decode_cqe(e);
            translate(c, wc[n]);
            cq_pop(cq, c);
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
    cq.ex_cqe = hw::decode_cqe(e);
    cq.ex_on = true;
    translate(cq.ex_cqe, cq.ex_wc);
    cq.cqx.status = cq.ex_wc.status;
    cq.cqx.wr_id = cq.ex_wc.wr_id;
}

// Consumes the CQE the iterator is on, if any.
void cqx_pop(SimCq& cq) {
    if (!cq.ex_on) return;
    cq_pop(cq, cq.ex_cqe);
    ++cq.ex_done;
    cq.ex_on = false;
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
    cqx_pop(cq);
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
    cqx_pop(cq);
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
    std::uint32_t ci, seen;
    {
        std::lock_guard<std::mutex> lk(cq.mu);
        ci = cq.ci;
        // The CQEs already ours: the application polls them after arming;
        // only later ones are "the next" (hw-spec 7.3, rxe's rule).
        const std::uint32_t n = 1u << cq.log_size;
        for (seen = ci; seen - ci < n && hw::cqe_peek(cq.ring, seen, cq.log_size); ++seen) {}
    }
    const auto cmd = solicited_only ? hw::CqArm::Solicited : hw::CqArm::Next;
    cq.ctx->hc->ring_doorbell(hw::DbKind::Cq, cq.cqn, ci, static_cast<std::uint8_t>(cmd), seen);
    return 0;
}

namespace {

// ---- send WQEs (6.2), built as hw::SendWqe values and encoded by the codec ----

hw::QpType hw_type(const SimQp& qp) { return static_cast<hw::QpType>(qp.type); }

// The opcode is one of hw-spec 6.3's, allowed on the QP's type.
bool opcode_ok(const SimQp& qp, std::int64_t op) {
    return op >= 0 && op <= 0xFF && hw::wqe_opcode_allowed(hw_type(qp), static_cast<hw::WrOpcode>(op));
}

// CTRL_SEG's part of a WQE.
hw::SendWqe begin_send(int op, unsigned flags, std::uint64_t wr_id, std::uint32_t imm_inv) {
    hw::SendWqe w;
    w.opcode = static_cast<hw::WrOpcode>(op);
    w.fence = (flags & IBV_SEND_FENCE) != 0;
    w.signaled = (flags & IBV_SEND_SIGNALED) != 0;
    w.solicited = (flags & IBV_SEND_SOLICITED) != 0;
    w.imm_inv = imm_inv;
    w.wr_id = wr_id;
    return w;
}

// BIND_MW's segment. `info.mr` may be null for a type 1 unbind (length 0),
// which rdma-core's rxe provider would dereference.
int set_bind(hw::SendWqe& w, const ibv_mw* mw, std::uint32_t new_rkey, const ibv_mw_bind_info& info) {
    if (mw == nullptr || !is_context(mw->context)) return EINVAL;
    if (info.mr == nullptr && (info.addr != 0 || info.length != 0)) return EINVAL;
    w.bind = {mw->rkey, new_rkey, info.mr ? info.mr->lkey : 0, info.mw_access_flags, info.addr, info.length};
    return 0;
}

int set_sges(const SimQp& qp, hw::SendWqe& w, const ibv_sge* sg, std::size_t n) {
    if (n > qp.max_send_sge || n > hw::kMaxSge) return EINVAL;
    w.inline_data = false;
    w.num_sge = static_cast<std::uint32_t>(n);
    for (std::size_t i = 0; i < n; ++i) w.sge[i] = {sg[i].addr, sg[i].length, sg[i].lkey};
    return 0;
}

// Gathers the inline data into `buf` (the WQE points at it until encoded).
int set_inline(const SimQp& qp, hw::SendWqe& w, std::uint8_t* buf, const ibv_data_buf* b, std::size_t n) {
    std::size_t total = 0;
    for (std::size_t i = 0; i < n; ++i) total += b[i].length;
    if (total > qp.max_inline || total > hw::kMaxInline) return EINVAL;
    std::uint8_t* p = buf;
    for (std::size_t i = 0; i < n; ++i) {
        std::memcpy(p, b[i].addr, b[i].length);
        p += b[i].length;
    }
    w.inline_data = true;
    w.num_sge = 0;
    w.inline_bytes = buf;
    w.inline_len = static_cast<std::uint32_t>(total);
    return 0;
}

// ATOMIC_WRITE's value: 8 bytes copied into `buf` (the WQE points at it
// until encoded), inline whatever the QP's max_inline (hw-spec 6.2).
void set_atomic_write_value(hw::SendWqe& w, std::uint8_t* buf, const void* value) {
    std::memcpy(buf, value, 8);
    w.inline_data = true;
    w.num_sge = 0;
    w.inline_bytes = buf;
    w.inline_len = 8;
}

std::uint32_t ah_number(ibv_ah* ah) { return outer<SimAh>(ah)->ahn; }

// Writes `w` into SQ slot `slot`; the checks above leave the codec nothing
// to refuse but a WQE the stride cannot hold.
int encode(const SimQp& qp, const hw::SendWqe& w, std::uint8_t* slot) {
    return hw::encode_send(w, hw_type(qp), slot, qp.sq.stride()) == hw::WqeFault::None ? 0 : EINVAL;
}

int build_send(SimQp& qp, const ibv_send_wr& wr, std::uint8_t* slot) {
    const std::int64_t op = c_enum(wr.opcode);
    if (!opcode_ok(qp, op)) return EINVAL;
    if (wr.num_sge < 0) return EINVAL;
    const auto o = static_cast<hw::WrOpcode>(op);
    const bool inl = (wr.send_flags & IBV_SEND_INLINE) != 0;
    // Local operations carry no data (rxe's validate_send_wr), READ and
    // atomics no inline data.
    if (inl && !hw::wqe_inline_allowed(o)) return EINVAL;
    if (hw::is_local_op(o) && wr.num_sge != 0) return EINVAL;
    // A bind has no immediate either: rdma-core 44's validate_send_wr refuses
    // a non-zero imm_data (the union's bits, whatever the application meant).
    if (op == IBV_WR_BIND_MW && wr.imm_data != 0) return EINVAL;
    if (hw::is_atomic(o) && wr.num_sge != 1) return EINVAL;
    // rdma-core 44's validate_send_wr: an atomic whose remote address is not
    // 8-byte aligned, or with fewer than 8 bytes for its result, is EINVAL
    // at posting. (Posted, the engine's WQE check would fail it and the QP.)
    if (hw::is_atomic(o) && (wr.wr.atomic.remote_addr % 8 != 0 || wr.sg_list[0].length < 8)) return EINVAL;
    // ATOMIC_WRITE: the 8 bytes come from its one SGE and travel inline in
    // the WQE (rxe's provider copies them the same way); FLUSH has no
    // IBV_WR_ value in rdma-core 44 and is not reachable from here.
    if (o == hw::WrOpcode::AtomicWrite && (wr.num_sge != 1 || wr.sg_list[0].length != 8)) return EINVAL;
    if (qp.type == IBV_QPT_UD && (wr.wr.ud.ah == nullptr || !is_context(wr.wr.ud.ah->context)))
        return EINVAL;
    std::uint32_t imm = 0;
    if (op == IBV_WR_SEND_WITH_IMM || op == IBV_WR_RDMA_WRITE_WITH_IMM) imm = be32toh(wr.imm_data);
    if (op == IBV_WR_SEND_WITH_INV || op == IBV_WR_LOCAL_INV) imm = wr.invalidate_rkey;
    hw::SendWqe w = begin_send(static_cast<int>(op), wr.send_flags, wr.wr_id, imm);
    if (op == IBV_WR_BIND_MW) {
        if (const int e = set_bind(w, wr.bind_mw.mw, wr.bind_mw.rkey, wr.bind_mw.bind_info)) return e;
        return encode(qp, w, slot);
    }
    if (op == IBV_WR_LOCAL_INV) return encode(qp, w, slot);
    if (hw::is_atomic(o)) {
        w.raddr = {wr.wr.atomic.remote_addr, wr.wr.atomic.rkey};
        w.atomic = {wr.wr.atomic.compare_add, wr.wr.atomic.swap};
    } else if (hw::is_rdma(o) || o == hw::WrOpcode::AtomicWrite) {
        w.raddr = {wr.wr.rdma.remote_addr, wr.wr.rdma.rkey};
    }
    if (o == hw::WrOpcode::AtomicWrite) {
        std::array<std::uint8_t, 8> value;
        set_atomic_write_value(w, value.data(),
                               reinterpret_cast<const void*>(static_cast<std::uintptr_t>(wr.sg_list[0].addr)));
        return encode(qp, w, slot);
    }
    if (qp.type == IBV_QPT_UD) w.ud = {ah_number(wr.wr.ud.ah), wr.wr.ud.remote_qpn, wr.wr.ud.remote_qkey};
    const auto n = static_cast<std::size_t>(wr.num_sge);
    if (inl) {
        if (n > hw::kMaxSge) return EINVAL;
        std::array<ibv_data_buf, hw::kMaxSge> bufs{};
        for (std::size_t i = 0; i < n; ++i)
            bufs[i] = {reinterpret_cast<void*>(static_cast<std::uintptr_t>(wr.sg_list[i].addr)),
                       wr.sg_list[i].length};
        std::array<std::uint8_t, hw::kMaxInline> bytes;
        if (const int e = set_inline(qp, w, bytes.data(), bufs.data(), n)) return e;
        return encode(qp, w, slot);
    }
    if (const int e = set_sges(qp, w, wr.sg_list, n)) return e;
    return encode(qp, w, slot);
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
    if (wr.num_sge < 0 || static_cast<std::uint32_t>(wr.num_sge) > max_sge ||
        static_cast<std::uint32_t>(wr.num_sge) > hw::kMaxSge)
        return EINVAL;
    hw::RecvWqe w;
    w.wr_id = wr.wr_id;
    w.num_sge = static_cast<std::uint32_t>(wr.num_sge);
    for (std::uint32_t i = 0; i < w.num_sge; ++i)
        w.sge[i] = {wr.sg_list[i].addr, wr.sg_list[i].length, wr.sg_list[i].lkey};
    return hw::encode_recv(w, wq.slot(wq.pi), wq.stride()) == hw::WqeFault::None ? 0 : EINVAL;
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
    // A QP on an SRQ has no receive queue; a QP in RESET takes no receive WR
    // (IBA C10-97.2.1; rdma-core's rxe_post_recv reads the same cached
    // ibv_qp state). Both are immediate errors: nothing queued, no doorbell.
    if (qp.srq != nullptr || ibqp->state == IBV_QPS_RESET) {
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

// Encodes the current WQE, complete now, into its slot.
void ex_flush(SimQp& qp) {
    if (qp.ex_wqe == nullptr) return;
    if (qp.ex_err == 0) qp.ex_err = encode(qp, qp.ex_wr, qp.ex_wqe);
    qp.ex_wqe = nullptr;
}

void ex_begin(ibv_qp_ex* q, ibv_wr_opcode op, std::uint32_t imm) {
    SimQp& qp = exq(q);
    ex_flush(qp);
    if (qp.ex_err != 0) return;
    if (!opcode_ok(qp, op)) {
        qp.ex_err = EINVAL;
        return;
    }
    if (qp.sq.full()) {
        qp.ex_err = ENOSPC;  // rxe's check_qp_queue_full (ibv_post_send says ENOMEM)
        return;
    }
    qp.ex_wqe = qp.sq.slot(qp.sq.pi);
    qp.ex_wr = begin_send(op, q->wr_flags, q->wr_id, imm);
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
    ex_flush(qp);
    const int err = qp.ex_err;
    if (err != 0) qp.sq.pi = qp.ex_start;
    else if (qp.sq.pi != qp.ex_start) ring_sq(qp);
    qp.sq.mu.unlock();
    return err;
}
void ex_abort(ibv_qp_ex* q) {
    SimQp& qp = exq(q);
    qp.ex_wqe = nullptr;
    qp.sq.pi = qp.ex_start;
    qp.sq.mu.unlock();
}
void ex_send(ibv_qp_ex* q) { ex_begin(q, IBV_WR_SEND, 0); }
void ex_send_imm(ibv_qp_ex* q, __be32 imm) { ex_begin(q, IBV_WR_SEND_WITH_IMM, be32toh(imm)); }
void ex_send_inv(ibv_qp_ex* q, std::uint32_t rkey) { ex_begin(q, IBV_WR_SEND_WITH_INV, rkey); }
void ex_rdma(ibv_qp_ex* q, ibv_wr_opcode op, std::uint32_t rkey, std::uint64_t va,
             std::uint32_t imm) {
    ex_begin(q, op, imm);
    if (exq(q).ex_wqe) exq(q).ex_wr.raddr = {va, rkey};
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
    if (exq(q).ex_wqe) exq(q).ex_wr.atomic = {cmp, swap};
}
void ex_fetch_add(ibv_qp_ex* q, std::uint32_t rkey, std::uint64_t va, std::uint64_t add) {
    ex_rdma(q, IBV_WR_ATOMIC_FETCH_AND_ADD, rkey, va, 0);
    if (exq(q).ex_wqe) exq(q).ex_wr.atomic = {add, 0};
}
void ex_set_ud_addr(ibv_qp_ex* q, ibv_ah* ah, std::uint32_t qpn, std::uint32_t qkey) {
    SimQp& qp = exq(q);
    if (qp.ex_wqe == nullptr) return;
    // As build_send: an AH that is not a simnic one has no AH number to read
    // (EINVAL); another simnic context's is the engine's to refuse (its AH
    // check completes the WQE with LOC_QP_OP_ERR, as rxe_get_av's PD check).
    if (qp.type != IBV_QPT_UD || ah == nullptr || !is_context(ah->context)) {
        qp.ex_err = EINVAL;
        return;
    }
    qp.ex_wr.ud = {ah_number(ah), qpn, qkey};
}
// The current ibv_wr_* WQE takes data (not a local operation); else the
// batch fails.
bool ex_takes_data(SimQp& qp) {
    if (qp.ex_wqe == nullptr) return false;
    if (!hw::is_local_op(qp.ex_wr.opcode)) return true;
    qp.ex_err = EINVAL;
    return false;
}
void ex_set_sge(ibv_qp_ex* q, std::uint32_t lkey, std::uint64_t addr, std::uint32_t len) {
    SimQp& qp = exq(q);
    if (!ex_takes_data(qp)) return;
    const ibv_sge sge{addr, len, lkey};
    if (set_sges(qp, qp.ex_wr, &sge, 1) != 0) qp.ex_err = ENOSPC;
}
// More SGEs than max_send_sge, or inline data beyond max_inline_data: the
// ibv_wr_* setters of rdma-core's rxe provider answer ENOSPC where
// ibv_post_send's checks answer EINVAL; set_sges and set_inline serve both.
void ex_set_sge_list(ibv_qp_ex* q, std::size_t n, const ibv_sge* sg) {
    SimQp& qp = exq(q);
    if (!ex_takes_data(qp)) return;
    if (set_sges(qp, qp.ex_wr, sg, n) != 0) qp.ex_err = ENOSPC;
}
void ex_set_inline_list(ibv_qp_ex* q, std::size_t n, const ibv_data_buf* b) {
    SimQp& qp = exq(q);
    if (!ex_takes_data(qp)) return;
    if (!hw::wqe_inline_allowed(qp.ex_wr.opcode)) {
        qp.ex_err = EINVAL;
        return;
    }
    if (set_inline(qp, qp.ex_wr, qp.ex_inline.data(), b, n) != 0) qp.ex_err = ENOSPC;
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
    if (const int e = set_bind(qp.ex_wr, mw, rkey, *info)) qp.ex_err = e;
}
void ex_local_inv(ibv_qp_ex* q, std::uint32_t rkey) { ex_begin(q, IBV_WR_LOCAL_INV, rkey); }
// Operations this device lacks (hw-spec 6.3): the batch fails at wr_complete.
void ex_send_tso(ibv_qp_ex* q, void*, std::uint16_t, std::uint16_t) { exq(q).ex_err = EOPNOTSUPP; }
void ex_set_xrc_srqn(ibv_qp_ex* q, std::uint32_t) { exq(q).ex_err = EOPNOTSUPP; }
// ATOMIC_WRITE: the 8 bytes at `value` are copied now, as rxe's provider
// does; they travel inline in the WQE.
void ex_atomic_write(ibv_qp_ex* q, std::uint32_t rkey, std::uint64_t va, const void* value) {
    ex_rdma(q, IBV_WR_ATOMIC_WRITE, rkey, va, 0);
    SimQp& qp = exq(q);
    if (qp.ex_wqe == nullptr) return;
    if (value == nullptr) {
        qp.ex_err = EINVAL;
        return;
    }
    set_atomic_write_value(qp.ex_wr, qp.ex_inline.data(), value);
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
