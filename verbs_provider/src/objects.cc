// The verbs objects (see provider.h): PDs, MRs, CQs, SRQs, QPs and AHs,
// created, modified, queried and destroyed with hw-spec commands (5.6). The
// objects themselves are in provider_internal.h; their rings are used by
// datapath.cc, their events by events.cc.
#include "provider_internal.h"
#include "simnic/host/user_pages.h"

#include <endian.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>

namespace simnic::verbs {

using namespace detail;

// ---------------------------------------------------------------------------
// Protection domains
// ---------------------------------------------------------------------------
ibv_pd* alloc_pd(ibv_context* ctx) {
    SimContext* c = sim(ctx);
    if (c == nullptr) {
        errno = EINVAL;
        return nullptr;
    }
    host::CmdOutcome r;
    const int e = pool_full_errno(run(*c, hw::CmdOpcode::AllocPd, nullptr, 0, hw::cmd_handle::kSize, r), r);
    if (e != 0) {
        errno = e;
        return nullptr;
    }
    if (r.out.size() < hw::cmd_handle::kSize) {
        errno = EIO;
        return nullptr;
    }
    const auto pdn =
        static_cast<std::uint32_t>(hw::get(r.out.data(), r.out.size(), hw::cmd_handle::handle));
    auto* p = static_cast<SimPd*>(std::calloc(1, sizeof(SimPd)));
    if (p == nullptr) {
        // Give the PD back; the allocation failure is what the caller sees.
        std::array<std::uint8_t, hw::cmd_handle::kSize> in{};
        hw::set(in.data(), in.size(), hw::cmd_handle::handle, pdn);
        host::CmdOutcome ignored;
        run(*c, hw::CmdOpcode::DeallocPd, in.data(), in.size(), 0, ignored);
        errno = ENOMEM;
        return nullptr;
    }
    p->pd.context = ctx;
    p->pd.handle = pdn;
    p->pdn = pdn;
    {
        std::lock_guard<std::mutex> lk(c->obj_mu);
        c->pds.insert(p);
    }
    return &p->pd;
}

int dealloc_pd(ibv_pd* pd) {
    if (pd == nullptr) return EINVAL;
    SimContext* c = sim(pd->context);
    if (c == nullptr) return EINVAL;
    auto* p = reinterpret_cast<SimPd*>(pd);
    std::array<std::uint8_t, hw::cmd_handle::kSize> in{};
    hw::set(in.data(), in.size(), hw::cmd_handle::handle, p->pdn);
    host::CmdOutcome r;
    const int e = run(*c, hw::CmdOpcode::DeallocPd, in.data(), in.size(), 0, r);
    if (e != 0) return e;
    {
        std::lock_guard<std::mutex> lk(c->obj_mu);
        c->pds.erase(p);
    }
    std::free(p);
    return 0;
}

std::uint32_t pd_number(const ibv_pd* pd) { return reinterpret_cast<const SimPd*>(pd)->pdn; }

namespace {

// ---- sizes and commands (the object verbs') ----
std::uint8_t log2_ceil(std::uint64_t v) {
    std::uint8_t n = 0;
    while ((std::uint64_t{1} << n) < v) ++n;
    return n;
}

template <std::size_t N>
int run_in(SimContext& c, hw::CmdOpcode op, const std::array<std::uint8_t, N>& in,
           std::size_t out_cap, host::CmdOutcome& r) {
    return run(c, op, in.data(), in.size(), out_cap, r);
}

// A command that applies an address vector (MODIFY_QP with an AV,
// CREATE_AH). The firmware fails with AGAIN while the DGID's neighbour is
// unresolved, having started the lookup; like the kernel, which waits up to a
// second for the address to resolve before failing the verb, the caller
// waits and asks again.
template <std::size_t N>
int run_av(SimContext& c, hw::CmdOpcode op, const std::array<std::uint8_t, N>& in, std::size_t out_cap,
           host::CmdOutcome& r) {
    constexpr int kTries = 100;  // 10 ms apart: 1 s
    int e = run_in(c, op, in, out_cap, r);
    for (int i = 1; i < kTries && e == EAGAIN; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
        e = run_in(c, op, in, out_cap, r);
    }
    return e;
}

// A command whose input is a CMD_HANDLE (the destroy commands).
int run_handle(SimContext& c, hw::CmdOpcode op, std::uint32_t handle) {
    std::array<std::uint8_t, hw::cmd_handle::kSize> in{};
    hw::set(in.data(), in.size(), hw::cmd_handle::handle, handle);
    host::CmdOutcome r;
    return run_in(c, op, in, 0, r);
}

// The CMD_HANDLE an object-creating command returned; 0 or an errno.
int out_handle(const host::CmdOutcome& r, std::uint32_t& h) {
    if (r.out.size() < hw::cmd_handle::kSize) return EIO;
    h = static_cast<std::uint32_t>(hw::get(r.out.data(), r.out.size(), hw::cmd_handle::handle));
    return 0;
}

}  // namespace

// ---------------------------------------------------------------------------
// Memory regions (hw-spec 5.6.5): direct mode in the bootstrap domain, where
// device addresses are this process's virtual addresses.
// ---------------------------------------------------------------------------
ibv_mr* reg_mr(ibv_pd* pd, void* addr, std::size_t length, std::uint64_t iova,
               unsigned int access) {
    SimContext* c = pd ? sim(pd->context) : nullptr;
    if (c == nullptr || length == 0) {
        errno = EINVAL;
        return nullptr;
    }
    // ib_uverbs_reg_mr, before any driver: the IOVA must sit at the address's
    // offset within a host page. The device does not need it (REG_MR maps any
    // IOVA), but an application that passed here would fail on rxe.
    static const auto page = static_cast<std::uintptr_t>(sysconf(_SC_PAGESIZE));
    if ((reinterpret_cast<std::uintptr_t>(addr) ^ iova) & (page - 1)) {
        errno = EINVAL;
        return nullptr;
    }
    access &= ~static_cast<unsigned>(IBV_ACCESS_OPTIONAL_RANGE);  // hints, may be ignored
    // On-demand paging (hw-spec 5.6.5): ib_check_mr_access refuses it for a
    // device without IBV_ODP_SUPPORT (EOPNOTSUPP from 6.2). The implicit MR
    // (addr NULL, length SIZE_MAX) and the rest are REG_MR's to check.
    const bool on_demand = (access & IBV_ACCESS_ON_DEMAND) != 0;
    if (on_demand && (c->cap_get(hw::cap_block::odp_general_caps) & hw::caps_default::kOdpSupport) == 0) {
        errno = EOPNOTSUPP;
        return nullptr;
    }
    // FLUSH_GLOBAL / FLUSH_PERSISTENT (0x100 / 0x200; later rdma-core names
    // them, and libibverbs 44 passes them through): REG_MR takes them and
    // refuses one the device does not offer with NOT_SUPPORTED, as
    // ib_check_mr_access does with EOPNOTSUPP.
    const bool zero_based = (access & IBV_ACCESS_ZERO_BASED) != 0;
    if (zero_based) iova = 0;
    namespace m = hw::cmd_reg_mr_in;
    std::array<std::uint8_t, m::kSize> in{};
    hw::set(in.data(), in.size(), m::pdn, pd_number(pd));
    // MW_BIND and FLUSH's rights included; ON_DEMAND is bit 6 of the same field.
    hw::set(in.data(), in.size(), m::access, access & (hw::access::kMrAccess | hw::access::kOnDemand));
    hw::set(in.data(), in.size(), m::mtt_mode, 0);
    hw::set(in.data(), in.size(), m::zero_based, zero_based ? 1 : 0);
    hw::set(in.data(), in.size(), m::domain_id, c->hc->boot_domain());
    hw::set(in.data(), in.size(), m::iova, iova);
    hw::set(in.data(), in.size(), m::length, length);
    hw::set(in.data(), in.size(), m::host_addr, reinterpret_cast<std::uintptr_t>(addr));
    host::CmdOutcome r;
    int e = run_in(*c, hw::CmdOpcode::RegMr, in, hw::cmd_reg_mr_out::kSize, r);
    if (e == 0 && r.out.size() < hw::cmd_reg_mr_out::kSize) e = EIO;
    if (e != 0) {
        errno = e;
        return nullptr;
    }
    const auto lkey = static_cast<std::uint32_t>(
        hw::get(r.out.data(), r.out.size(), hw::cmd_reg_mr_out::lkey));
    // A pinned MR's pages must exist now: ib_umem_get pins them after the
    // access checks the device has just made, and a hole or a page without
    // the rights is EFAULT. (ib_access_writable: any of these lets the
    // device write.)
    constexpr unsigned kWritable =
        IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_MW_BIND;
    if (!on_demand) {
        e = host::check_user_pages(addr, length, (access & kWritable) != 0);
        if (e != 0) {
            run_handle(*c, hw::CmdOpcode::DeregMr, lkey);
            errno = e;
            return nullptr;
        }
    }
    auto* mr = static_cast<ibv_mr*>(std::calloc(1, sizeof(ibv_mr)));
    if (mr == nullptr) {
        run_handle(*c, hw::CmdOpcode::DeregMr, lkey);
        errno = ENOMEM;
        return nullptr;
    }
    mr->context = pd->context;
    mr->pd = pd;
    mr->addr = addr;
    mr->length = length;
    mr->handle = lkey;
    mr->lkey = lkey;
    mr->rkey = static_cast<std::uint32_t>(
        hw::get(r.out.data(), r.out.size(), hw::cmd_reg_mr_out::rkey));
    return mr;
}

namespace {
// Makes the pages of [addr, addr + len) of this process present, for reading
// or for writing, as ODP hardware's prefetch has the kernel fault them in
// (hmm_range_fault). 0 or EFAULT.
int populate(std::uintptr_t addr, std::uint64_t len, bool write) {
    if (len == 0) return 0;
    static const auto page = static_cast<std::uintptr_t>(sysconf(_SC_PAGESIZE));
    const std::uintptr_t lo = addr & ~(page - 1);
    const std::uintptr_t hi = (addr + len + page - 1) & ~(page - 1);
    if (::madvise(reinterpret_cast<void*>(lo), hi - lo, write ? MADV_POPULATE_WRITE : MADV_POPULATE_READ) == 0)
        return 0;
    if (errno != EINVAL) return EFAULT;  // ENOMEM: a hole; EFAULT: a page that cannot be had
    // A kernel before 5.14 has no MADV_POPULATE_*: read one byte of every
    // page through process_vm_readv, which faults pages in as the device's
    // own access would and reports a hole instead of raising SIGSEGV.
    char byte = 0;
    for (std::uintptr_t p = lo; p < hi; p += page) {
        iovec l{&byte, 1}, r{reinterpret_cast<void*>(p), 1};
        if (process_vm_readv(getpid(), &l, 1, &r, 1, 0) != 1) return EFAULT;
    }
    return 0;
}
}  // namespace

int advise_mr(ibv_pd* pd, ibv_advise_mr_advice advice, std::uint32_t flags, ibv_sge* sg_list,
              std::uint32_t num_sge) {
    SimContext* c = pd ? sim(pd->context) : nullptr;
    // ib_uverbs' method: the flags it knows (FLUSH), and at least one SGE.
    if (c == nullptr || (flags & ~std::uint32_t{IBV_ADVISE_MR_FLAG_FLUSH}) != 0 || sg_list == nullptr ||
        num_sge == 0)
        return EINVAL;
    const std::int64_t adv = c_enum(advice);
    // rxe_ib_advise_mr: an advice it does not know is EOPNOTSUPP.
    if (adv < 0 || adv > static_cast<std::int64_t>(hw::MrAdvice::PrefetchNoFault)) return EOPNOTSUPP;
    // Without FLUSH the prefetch is best effort, as rxe's queued work is: only
    // an lkey that names no MR of the PD is reported (rxe checks it before
    // queueing); a range the device refuses or pages that cannot be had are not.
    const bool sync = (flags & IBV_ADVISE_MR_FLAG_FLUSH) != 0;
    for (std::uint32_t i = 0; i < num_sge; ++i) {
        namespace a = hw::cmd_advise_mr_in;
        std::array<std::uint8_t, a::kSize> in{};
        hw::set(in.data(), in.size(), a::lkey, sg_list[i].lkey);
        hw::set(in.data(), in.size(), a::pdn, pd_number(pd));
        hw::set(in.data(), in.size(), a::advice, static_cast<std::uint64_t>(adv));
        hw::set(in.data(), in.size(), a::addr, sg_list[i].addr);
        hw::set(in.data(), in.size(), a::length, sg_list[i].length);
        host::CmdOutcome r;
        const int e = run_in(*c, hw::CmdOpcode::AdviseMr, in, hw::cmd_advise_mr_out::kSize, r);
        if (e != 0) {
            if (sync || e == EINVAL || e == EOPNOTSUPP) return e;
            continue;
        }
        if (r.out.size() < hw::cmd_advise_mr_out::kSize) return EIO;
        namespace o = hw::cmd_advise_mr_out;
        // NO_FAULT maps only the pages already present: the device looks
        // pages up at each access, so there is nothing to do. The pages are
        // this process's only when the MR is in its own bootstrap domain.
        if (adv == static_cast<std::int64_t>(hw::MrAdvice::PrefetchNoFault) ||
            hw::get(r.out.data(), r.out.size(), o::domain_id) != c->hc->boot_domain())
            continue;
        const int pe = populate(static_cast<std::uintptr_t>(hw::get(r.out.data(), r.out.size(), o::host_addr)),
                                sg_list[i].length, adv == static_cast<std::int64_t>(hw::MrAdvice::PrefetchWrite));
        if (pe != 0 && sync) return pe;
    }
    return 0;
}

int dereg_mr(ibv_mr* mr) {
    SimContext* c = mr ? sim(mr->context) : nullptr;
    if (c == nullptr) return EINVAL;
    const int e = run_handle(*c, hw::CmdOpcode::DeregMr, mr->lkey);
    if (e != 0) return e;
    std::free(mr);
    return 0;
}

// ---------------------------------------------------------------------------
// CQs (hw-spec 5.6.6, 7)
// ---------------------------------------------------------------------------
namespace {
// The CQ log size for `cqe` entries: 2^n >= cqe + 1 (the verbs cqe is 2^n - 1).
int cq_log_size(SimContext& c, int cqe, std::uint8_t& log) {
    if (cqe < 1) return EINVAL;
    const auto max_cqe = c.cap_get(hw::cap_block::max_cqe);
    if (static_cast<std::uint64_t>(cqe) > max_cqe) return EINVAL;
    log = std::max<std::uint8_t>(1, log2_ceil(static_cast<std::uint64_t>(cqe) + 1));
    return 0;
}
}  // namespace

ibv_cq* create_cq(ibv_context* ctx, int cqe, void* cq_context, ibv_comp_channel* channel,
                  int comp_vector) {
    SimContext* c = sim(ctx);
    if (c == nullptr || comp_vector < 0 || comp_vector >= ctx->num_comp_vectors ||
        (channel != nullptr && channel->context != ctx)) {
        errno = EINVAL;
        return nullptr;
    }
    std::uint8_t log = 0;
    int e = cq_log_size(*c, cqe, log);
    if (e != 0) {
        errno = e;
        return nullptr;
    }
    auto* cq = new (std::nothrow) SimCq{};
    std::uint16_t dom = 0;
    std::uint8_t* ring = c->queues.alloc(*c->hc, std::size_t{hw::cqe::kSize} << log, dom);
    if (cq == nullptr || ring == nullptr) {
        delete cq;
        c->queues.free(ring);
        errno = ENOMEM;
        return nullptr;
    }
    namespace ci = hw::cmd_create_cq_in;
    std::array<std::uint8_t, ci::kSize> in{};
    hw::set(in.data(), in.size(), ci::log_size, log);
    hw::set(in.data(), in.size(), ci::domain_id, dom);
    hw::set(in.data(), in.size(), ci::base, reinterpret_cast<std::uintptr_t>(ring));
    host::CmdOutcome r;
    e = pool_full_errno(run_in(*c, hw::CmdOpcode::CreateCq, in, hw::cmd_handle::kSize, r), r);
    std::uint32_t cqn = 0;
    if (e == 0) e = out_handle(r, cqn);
    if (e != 0) {
        delete cq;
        c->queues.free(ring);
        errno = e;
        return nullptr;
    }
    cq->ctx = c;
    cq->channel = channel ? channel_of(channel) : nullptr;
    cq->cqn = cqn;
    cq->log_size = log;
    cq->ring = ring;
    cq->cq.context = ctx;
    cq->cq.channel = channel;
    cq->cq.cq_context = cq_context;
    cq->cq.handle = cqn;
    cq->cq.cqe = static_cast<int>((1u << log) - 1);
    pthread_mutex_init(&cq->cq.mutex, nullptr);
    pthread_cond_init(&cq->cq.cond, nullptr);
    std::lock_guard<std::mutex> lk(c->obj_mu);
    c->cqs[cqn] = cq;
    if (channel) ++channel->refcnt;
    return &cq->cq;
}

ibv_cq_ex* create_cq_ex(ibv_context* ctx, ibv_cq_init_attr_ex* attr) {
    if (sim(ctx) == nullptr || attr == nullptr) {
        errno = EINVAL;
        return nullptr;
    }
    // What rxe rejects, rejected the same way: wc_flags beyond the standard
    // set (the CQE has no timestamp, VLAN, flow tag or tag-matching field),
    // comp_mask bits libibverbs does not know, and the create flags kernel
    // rxe refuses (IGNORE_OVERRUN; SINGLE_THREADED is a hint, accepted).
    if ((attr->wc_flags & ~kCqExSupportedWcFlags) != 0 ||
        (attr->comp_mask & ~std::uint32_t{IBV_CQ_INIT_ATTR_MASK_FLAGS | IBV_CQ_INIT_ATTR_MASK_PD}) != 0 ||
        ((attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS) &&
         (attr->flags & ~std::uint32_t{IBV_CREATE_CQ_ATTR_SINGLE_THREADED}) != 0)) {
        errno = EOPNOTSUPP;
        return nullptr;
    }
    // A parent domain (IBV_CQ_INIT_ATTR_MASK_PD) is ignored, as by rxe: the
    // CQ allocates its ring itself and alloc_parent_domain is unsupported.
    if (attr->cqe > static_cast<std::uint32_t>(std::numeric_limits<int>::max()) ||
        attr->comp_vector > static_cast<std::uint32_t>(std::numeric_limits<int>::max())) {
        errno = EINVAL;
        return nullptr;
    }
    ibv_cq* base = create_cq(ctx, static_cast<int>(attr->cqe), attr->cq_context, attr->channel,
                             static_cast<int>(attr->comp_vector));
    if (base == nullptr) return nullptr;
    SimCq* cq = cq_of(base);
    fill_cq_ex(*cq, attr->wc_flags);
    return &cq->cqx;
}

int resize_cq(ibv_cq* ibcq, int cqe) {
    SimContext* c = ibcq ? sim(ibcq->context) : nullptr;
    if (c == nullptr) return EINVAL;
    SimCq& cq = *cq_of(ibcq);
    std::uint8_t log = 0;
    int e = cq_log_size(*c, cqe, log);
    if (e != 0) return e;
    std::uint16_t dom = 0;
    std::uint8_t* ring = c->queues.alloc(*c->hc, std::size_t{hw::cqe::kSize} << log, dom);
    if (ring == nullptr) return ENOMEM;
    std::lock_guard<std::mutex> lk(cq.mu);  // no polling while the ring changes
    // rxe_cq_chk_attr: fewer entries than the CQEs now waiting is EINVAL. The
    // bound is the cqe asked for, as rxe's; RESIZE_CQ checks only the ring.
    std::uint32_t waiting = 0;
    while (waiting < (1u << cq.log_size) && hw::cqe_peek(cq.ring, cq.ci + waiting, cq.log_size))
        ++waiting;
    if (static_cast<std::uint32_t>(cqe) < waiting) {
        c->queues.free(ring);
        return EINVAL;
    }
    namespace rs = hw::cmd_resize_cq_in;
    std::array<std::uint8_t, rs::kSize> in{};
    hw::set(in.data(), in.size(), rs::cqn, cq.cqn);
    hw::set(in.data(), in.size(), rs::log_size, log);
    hw::set(in.data(), in.size(), rs::domain_id, dom);
    hw::set(in.data(), in.size(), rs::base, reinterpret_cast<std::uintptr_t>(ring));
    host::CmdOutcome r;
    e = run_in(*c, hw::CmdOpcode::ResizeCq, in, 0, r);
    if (e != 0) {
        c->queues.free(ring);
        return e;
    }
    c->queues.free(cq.ring);
    cq.ring = ring;  // same indices, owner bits rewritten for the new size (5.6.6)
    cq.log_size = log;
    ibcq->cqe = static_cast<int>((1u << log) - 1);
    return 0;
}

int modify_cq(ibv_cq* ibcq, ibv_modify_cq_attr* attr) {
    SimContext* c = ibcq ? sim(ibcq->context) : nullptr;
    if (c == nullptr || attr == nullptr) return EINVAL;
    // libibverbs' ibv_cmd_modify_cq refuses an unknown attribute before the
    // kernel sees it (EINVAL); MODIFY_CQ checks the rest (an empty mask, the
    // period), as the kernel and mlx5_ib do.
    if (attr->attr_mask >= IBV_CQ_ATTR_RESERVED) return EINVAL;
    static_assert(IBV_CQ_ATTR_MODERATE == hw::cq_attr_mask::kModerate, "ibv_cq_attr_mask");
    namespace m = hw::cmd_modify_cq_in;
    std::array<std::uint8_t, m::kSize> in{};
    hw::set(in.data(), in.size(), m::cqn, cq_of(ibcq)->cqn);
    hw::set(in.data(), in.size(), m::attr_mask, attr->attr_mask);
    hw::set(in.data(), in.size(), m::cq_count, attr->moderate.cq_count);
    hw::set(in.data(), in.size(), m::cq_period, attr->moderate.cq_period);
    host::CmdOutcome r;
    return run_in(*c, hw::CmdOpcode::ModifyCq, in, 0, r);
}

int destroy_cq(ibv_cq* ibcq) {
    SimContext* c = ibcq ? sim(ibcq->context) : nullptr;
    if (c == nullptr) return EINVAL;
    SimCq* cq = cq_of(ibcq);
    const int e = run_handle(*c, hw::CmdOpcode::DestroyCq, cq->cqn);
    if (e != 0) return e;
    {
        std::lock_guard<std::mutex> lk(c->obj_mu);
        c->cqs.erase(cq->cqn);
        if (cq->channel) {
            cq->channel->events.purge([cq](SimCq* x) { return x == cq; });
            --cq->channel->ch.refcnt;
        }
    }
    purge_async(*c, ibcq);
    pthread_cond_destroy(&ibcq->cond);
    pthread_mutex_destroy(&ibcq->mutex);
    c->queues.free(cq->ring);
    delete cq;
    return 0;
}

// ---------------------------------------------------------------------------
// SRQs (hw-spec 5.6.8)
// ---------------------------------------------------------------------------
ibv_srq* create_srq(ibv_pd* pd, ibv_srq_init_attr* attr) {
    SimContext* c = pd ? sim(pd->context) : nullptr;
    if (c == nullptr || attr == nullptr || attr->attr.max_wr == 0 ||
        attr->attr.max_sge > c->cap_get(hw::cap_block::max_srq_sge) ||
        attr->attr.max_wr > c->cap_get(hw::cap_block::max_srq_wr)) {
        errno = EINVAL;
        return nullptr;
    }
    auto* s = new (std::nothrow) SimSrq{};
    if (s == nullptr) {
        errno = ENOMEM;
        return nullptr;
    }
    const std::uint32_t sge = std::max<std::uint32_t>(1, attr->attr.max_sge);
    s->wq.log_size = log2_ceil(attr->attr.max_wr);
    s->wq.log_stride = std::max<std::uint8_t>(
        hw::kMinLogRqStride, log2_ceil(hw::recv_wqe_size(sge)));
    s->max_sge = sge;
    std::uint16_t dom = 0;
    s->wq.base = c->queues.alloc(*c->hc, s->wq.bytes(), dom);
    if (s->wq.base == nullptr) {
        delete s;
        errno = ENOMEM;
        return nullptr;
    }
    namespace si = hw::cmd_create_srq_in;
    std::array<std::uint8_t, si::kSize> in{};
    hw::set(in.data(), in.size(), si::pdn, pd_number(pd));
    hw::set(in.data(), in.size(), si::domain_id, dom);
    hw::set(in.data(), in.size(), si::base, reinterpret_cast<std::uintptr_t>(s->wq.base));
    hw::set(in.data(), in.size(), si::log_size, s->wq.log_size);
    hw::set(in.data(), in.size(), si::log_stride, s->wq.log_stride);
    hw::set(in.data(), in.size(), si::max_sge, sge);
    hw::set(in.data(), in.size(), si::srq_limit, attr->attr.srq_limit);
    host::CmdOutcome r;
    int e = pool_full_errno(run_in(*c, hw::CmdOpcode::CreateSrq, in, hw::cmd_handle::kSize, r), r);
    if (e == 0) e = out_handle(r, s->srqn);
    if (e != 0) {
        c->queues.free(s->wq.base);
        delete s;
        errno = e;
        return nullptr;
    }
    s->ctx = c;
    s->srq.context = pd->context;
    s->srq.srq_context = attr->srq_context;
    s->srq.pd = pd;
    s->srq.handle = s->srqn;
    pthread_mutex_init(&s->srq.mutex, nullptr);
    pthread_cond_init(&s->srq.cond, nullptr);
    attr->attr.max_wr = s->wq.entries();
    attr->attr.max_sge = sge;
    std::lock_guard<std::mutex> lk(c->obj_mu);
    c->srqs[s->srqn] = s;
    return &s->srq;
}

// ibv_create_srq_ex comes here for what verbs.h does not hand to
// ibv_create_srq: a comp_mask beyond PD and TYPE (IBV_SRQ_INIT_ATTR_CQ,
// say), no PD bit, or a type other than basic. rdma-core 44's rxe provider
// passes it to ibv_cmd_create_srq_ex, whose checks are these; the kernel's
// rxe creates basic SRQs only (EOPNOTSUPP). A CQ named for a basic SRQ is
// not sent to the kernel (libibverbs only records it): the SRQ is the one
// ibv_create_srq makes.
ibv_srq* create_srq_ex(ibv_context* ctx, ibv_srq_init_attr_ex* attr) {
    if (sim(ctx) == nullptr || attr == nullptr) {
        errno = EINVAL;
        return nullptr;
    }
    const std::uint32_t mask = attr->comp_mask;
    if (mask >= IBV_SRQ_INIT_ATTR_RESERVED) {
        errno = EOPNOTSUPP;
        return nullptr;
    }
    if ((mask & IBV_SRQ_INIT_ATTR_PD) == 0) {
        errno = EINVAL;
        return nullptr;
    }
    const std::int64_t type = (mask & IBV_SRQ_INIT_ATTR_TYPE) ? c_enum(attr->srq_type) : std::int64_t{IBV_SRQT_BASIC};
    // libibverbs' own checks of the other types, before the kernel sees them.
    if ((type == IBV_SRQT_XRC && ((mask & IBV_SRQ_INIT_ATTR_XRCD) == 0 || (mask & IBV_SRQ_INIT_ATTR_CQ) == 0)) ||
        (type == IBV_SRQT_TM && ((mask & IBV_SRQ_INIT_ATTR_CQ) == 0 || (mask & IBV_SRQ_INIT_ATTR_TM) == 0 ||
                                 attr->tm_cap.max_num_tags == 0))) {
        errno = EINVAL;
        return nullptr;
    }
    if (type != IBV_SRQT_BASIC) {
        errno = EOPNOTSUPP;  // rxe_create_srq: basic SRQs only
        return nullptr;
    }
    ibv_srq_init_attr basic{};
    basic.srq_context = attr->srq_context;
    basic.attr = attr->attr;
    ibv_srq* srq = create_srq(attr->pd, &basic);
    if (srq != nullptr) attr->attr = basic.attr;  // max_wr, max_sge as created
    return srq;
}

int modify_srq(ibv_srq* srq, ibv_srq_attr* attr, int mask) {
    SimContext* c = srq ? sim(srq->context) : nullptr;
    if (c == nullptr || attr == nullptr) return EINVAL;
    SimSrq& s = *srq_of(srq);
    namespace sm = hw::cmd_modify_srq_in;
    std::array<std::uint8_t, sm::kSize> in{};
    hw::set(in.data(), in.size(), sm::srqn, s.srqn);
    hw::set(in.data(), in.size(), sm::attr_mask, static_cast<std::uint32_t>(mask));
    hw::set(in.data(), in.size(), sm::srq_limit, attr->srq_limit);
    host::CmdOutcome r;
    if ((mask & IBV_SRQ_MAX_WR) == 0) return run_in(*c, hw::CmdOpcode::ModifySrq, in, 0, r);

    // Resize (hw-spec 5.6.8), as rxe's provider remaps its queue: a new ring
    // holds the WQEs posted and not yet taken at the indices they have in
    // the old one, MODIFY_SRQ swaps the rings, and the old ring goes once
    // the command has answered (the engine no longer reads it then).
    // rxe_srq_chk_attr: max_wr 0 or above max_srq_wr is EINVAL.
    if (attr->max_wr == 0 || attr->max_wr > c->cap_get(hw::cap_block::max_srq_wr)) return EINVAL;
    Wq& wq = s.wq;
    Wq next;  // the new ring's geometry; only base, log_size and slot() used
    next.log_size = log2_ceil(attr->max_wr);
    next.log_stride = wq.log_stride;
    std::uint16_t dom = 0;
    next.base = c->queues.alloc(*c->hc, next.bytes(), dom);
    if (next.base == nullptr) return ENOMEM;
    std::lock_guard<std::mutex> lk(wq.mu);  // no posting while the ring changes
    // The WQEs from the consumer index this side knows (it lags the
    // device's: it moves as completions are polled) to the producer index.
    // When more than the new ring holds, the newest that fit: if the device
    // has taken fewer than that, MODIFY_SRQ finds them not fitting (EINVAL).
    const std::uint32_t ci = wq.ci.load(std::memory_order_acquire);
    const std::uint32_t from =
        hw::ring_used(wq.pi, ci) > next.entries() ? wq.pi - next.entries() : ci;
    for (std::uint32_t i = from; i != wq.pi; ++i) std::memcpy(next.slot(i), wq.slot(i), wq.stride());
    std::atomic_thread_fence(std::memory_order_release);
    hw::set(in.data(), in.size(), sm::max_wr, attr->max_wr);
    hw::set(in.data(), in.size(), sm::log_size, next.log_size);
    hw::set(in.data(), in.size(), sm::domain_id, dom);
    hw::set(in.data(), in.size(), sm::base, reinterpret_cast<std::uintptr_t>(next.base));
    const int e = run_in(*c, hw::CmdOpcode::ModifySrq, in, 0, r);
    if (e != 0) {
        c->queues.free(next.base);
        return e;
    }
    c->queues.free(wq.base);
    wq.base = next.base;
    wq.log_size = next.log_size;
    return 0;
}

int query_srq(ibv_srq* srq, ibv_srq_attr* attr) {
    SimContext* c = srq ? sim(srq->context) : nullptr;
    if (c == nullptr || attr == nullptr) return EINVAL;
    std::array<std::uint8_t, hw::cmd_handle::kSize> in{};
    hw::set(in.data(), in.size(), hw::cmd_handle::handle, srq_of(srq)->srqn);
    host::CmdOutcome r;
    int e = run_in(*c, hw::CmdOpcode::QuerySrq, in, hw::cmd_query_srq_out::kSize, r);
    if (e == 0 && r.out.size() < hw::cmd_query_srq_out::kSize) e = EIO;
    if (e != 0) return e;
    namespace so = hw::cmd_query_srq_out;
    attr->max_wr = static_cast<std::uint32_t>(hw::get(r.out.data(), r.out.size(), so::max_wr));
    attr->max_sge = static_cast<std::uint32_t>(hw::get(r.out.data(), r.out.size(), so::max_sge));
    attr->srq_limit =
        static_cast<std::uint32_t>(hw::get(r.out.data(), r.out.size(), so::srq_limit));
    return 0;
}

int destroy_srq(ibv_srq* srq) {
    SimContext* c = srq ? sim(srq->context) : nullptr;
    if (c == nullptr) return EINVAL;
    SimSrq* s = srq_of(srq);
    const int e = run_handle(*c, hw::CmdOpcode::DestroySrq, s->srqn);
    if (e != 0) return e;
    {
        std::lock_guard<std::mutex> lk(c->obj_mu);
        c->srqs.erase(s->srqn);
    }
    purge_async(*c, srq);
    pthread_cond_destroy(&srq->cond);
    pthread_mutex_destroy(&srq->mutex);
    c->queues.free(s->wq.base);
    delete s;
    return 0;
}

// ---------------------------------------------------------------------------
// QPs (hw-spec 5.6.7, 5.7, 6)
// ---------------------------------------------------------------------------
namespace {
// Puts an ibv_ah_attr into the AV fields of a mailbox (QP_ATTR or
// CMD_CREATE_AH_IN; both use the av_* names).
template <typename NS>
void put_av(std::uint8_t* b, std::size_t n, const ibv_ah_attr& ah) {
    hw::set_bytes(b, n, NS::av_dgid, ah.grh.dgid.raw, sizeof ah.grh.dgid.raw);
    hw::set(b, n, NS::av_sgid_index, ah.grh.sgid_index);
    hw::set(b, n, NS::av_hop_limit, ah.grh.hop_limit);
    hw::set(b, n, NS::av_traffic_class, ah.grh.traffic_class);
    hw::set(b, n, NS::av_sl, ah.sl & 0xF);
    hw::set(b, n, NS::av_grh, ah.is_global ? 1 : 0);
    hw::set(b, n, NS::av_flow_label, ah.grh.flow_label & 0xFFFFF);
    hw::set(b, n, NS::av_static_rate, ah.static_rate);
}
struct QpAttrNs {  // the AV fields of QP_ATTR under the names put_av uses
    static constexpr hw::Field av_dgid = hw::qp_attr::av_dgid;
    static constexpr hw::Field av_sgid_index = hw::qp_attr::av_sgid_index;
    static constexpr hw::Field av_hop_limit = hw::qp_attr::av_hop_limit;
    static constexpr hw::Field av_traffic_class = hw::qp_attr::av_traffic_class;
    static constexpr hw::Field av_sl = hw::qp_attr::av_sl;
    static constexpr hw::Field av_grh = hw::qp_attr::av_grh;
    static constexpr hw::Field av_flow_label = hw::qp_attr::av_flow_label;
    static constexpr hw::Field av_static_rate = hw::qp_attr::av_static_rate;
};
struct AhInNs {
    static constexpr hw::Field av_dgid = hw::cmd_create_ah_in::av_dgid;
    static constexpr hw::Field av_sgid_index = hw::cmd_create_ah_in::av_sgid_index;
    static constexpr hw::Field av_hop_limit = hw::cmd_create_ah_in::av_hop_limit;
    static constexpr hw::Field av_traffic_class = hw::cmd_create_ah_in::av_traffic_class;
    static constexpr hw::Field av_sl = hw::cmd_create_ah_in::av_sl;
    static constexpr hw::Field av_grh = hw::cmd_create_ah_in::av_grh;
    static constexpr hw::Field av_flow_label = hw::cmd_create_ah_in::av_flow_label;
    static constexpr hw::Field av_static_rate = hw::cmd_create_ah_in::av_static_rate;
};

}  // namespace

ibv_qp* create_qp_ex(ibv_context* ctx, ibv_qp_init_attr_ex* a) {
    SimContext* c = sim(ctx);
    const std::uint32_t known =
        IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_CREATE_FLAGS | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
    if (c == nullptr || a == nullptr || !(a->comp_mask & IBV_QP_INIT_ATTR_PD) ||
        a->pd == nullptr || a->pd->context != ctx || a->send_cq == nullptr ||
        (a->recv_cq == nullptr && a->srq == nullptr)) {
        errno = EINVAL;
        return nullptr;
    }
    // No create flag is supported (as on rxe); a CREATE_FLAGS mask with none
    // set is accepted, as rdma-core's check_qp_init_attr does.
    if ((a->comp_mask & ~known) != 0 ||
        ((a->comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) && a->create_flags != 0)) {
        errno = EOPNOTSUPP;
        return nullptr;
    }
    const std::int64_t qpt = c_enum(a->qp_type);
    if (qpt != IBV_QPT_RC && qpt != IBV_QPT_UC && qpt != IBV_QPT_UD) {
        errno = EOPNOTSUPP;
        return nullptr;
    }
    // The ibv_wr_* operations each QP type has (rdma-core's rxe provider
    // offers the same sets): asking for another is EOPNOTSUPP at creation,
    // not an error at the first ibv_wr_complete.
    constexpr std::uint64_t kUdOps = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM;
    constexpr std::uint64_t kUcOps = kUdOps | IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |
                                     IBV_QP_EX_WITH_BIND_MW | IBV_QP_EX_WITH_SEND_WITH_INV;
    constexpr std::uint64_t kRcOps = kUcOps | IBV_QP_EX_WITH_RDMA_READ | IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
                                     IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD | IBV_QP_EX_WITH_LOCAL_INV |
                                     IBV_QP_EX_WITH_ATOMIC_WRITE;
    const std::uint64_t ops = a->qp_type == IBV_QPT_RC ? kRcOps : a->qp_type == IBV_QPT_UC ? kUcOps : kUdOps;
    if ((a->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) && (a->send_ops_flags & ~ops) != 0) {
        errno = EOPNOTSUPP;
        return nullptr;
    }
    ibv_qp_cap& cap = a->cap;
    const auto max_wr = c->cap_get(hw::cap_block::max_qp_wr);
    const auto max_sge = std::min<std::uint64_t>(c->cap_get(hw::cap_block::max_sge), hw::kMaxSge);
    const auto max_inl = std::min<std::uint64_t>(c->cap_get(hw::cap_block::max_inline), hw::kMaxInline);
    if (cap.max_send_wr > max_wr || cap.max_recv_wr > max_wr || cap.max_send_sge > max_sge ||
        cap.max_recv_sge > max_sge || cap.max_inline_data > max_inl) {
        errno = EINVAL;
        return nullptr;
    }
    auto* qp = new (std::nothrow) SimQp{};
    if (qp == nullptr) {
        errno = ENOMEM;
        return nullptr;
    }
    qp->ctx = c;
    qp->type = a->qp_type;
    qp->sq_sig_all = a->sq_sig_all != 0;
    qp->scq = cq_of(a->send_cq);
    qp->rcq = a->recv_cq ? cq_of(a->recv_cq) : qp->scq;
    qp->srq = a->srq ? srq_of(a->srq) : nullptr;
    // SQ: stride from the caps (hw-spec 5.6.7); the inline room the stride
    // leaves is offered.
    qp->max_send_sge = std::max<std::uint32_t>(1, cap.max_send_sge);
    qp->sq.log_size = log2_ceil(std::max<std::uint32_t>(1, cap.max_send_wr));
    qp->sq.log_stride = std::max<std::uint8_t>(
        hw::kMinLogSqStride, log2_ceil(hw::send_wqe_max_size(qp->max_send_sge, cap.max_inline_data)));
    qp->max_inline = static_cast<std::uint32_t>(
        std::min<std::uint64_t>(max_inl, hw::send_inline_room(qp->sq.stride())));
    qp->max_inline = std::max(qp->max_inline, cap.max_inline_data);
    // RQ (none with an SRQ: one slot, never used).
    qp->max_recv_sge = qp->srq ? 0 : std::max<std::uint32_t>(1, cap.max_recv_sge);
    qp->rq.log_size = qp->srq ? 0 : log2_ceil(std::max<std::uint32_t>(1, cap.max_recv_wr));
    qp->rq.log_stride = std::max<std::uint8_t>(
        hw::kMinLogRqStride, log2_ceil(hw::recv_wqe_size(qp->max_recv_sge)));
    if (qp->sq.log_stride > hw::kMaxLogStride || qp->rq.log_stride > hw::kMaxLogStride) {
        delete qp;
        errno = EINVAL;
        return nullptr;
    }
    // One domain for both rings (the QPC names one): if only one fitted in
    // the shared arena, both go to ordinary memory.
    std::uint16_t dom = 0, rdom = 0;
    qp->sq.base = c->queues.alloc(*c->hc, qp->sq.bytes(), dom);
    qp->rq.base = qp->srq ? nullptr : c->queues.alloc(*c->hc, qp->rq.bytes(), rdom);
    if (!qp->srq && qp->sq.base && qp->rq.base && rdom != dom) {
        c->queues.free(qp->sq.base);
        c->queues.free(qp->rq.base);
        qp->sq.base = c->queues.alloc(*c->hc, qp->sq.bytes(), dom, false);
        qp->rq.base = c->queues.alloc(*c->hc, qp->rq.bytes(), rdom, false);
    }
    if (qp->sq.base == nullptr || (!qp->srq && qp->rq.base == nullptr)) {
        c->queues.free(qp->sq.base);
        c->queues.free(qp->rq.base);
        delete qp;
        errno = ENOMEM;
        return nullptr;
    }
    namespace q = hw::cmd_create_qp_in;
    std::array<std::uint8_t, q::kSize> in{};
    auto set = [&in](hw::Field f, std::uint64_t v) { hw::set(in.data(), in.size(), f, v); };
    set(q::qp_type, a->qp_type);
    set(q::sq_sig_all, qp->sq_sig_all ? 1 : 0);
    set(q::srq_en, qp->srq ? 1 : 0);
    set(q::pdn, pd_number(a->pd));
    set(q::send_cqn, qp->scq->cqn);
    set(q::recv_cqn, qp->rcq->cqn);
    set(q::srqn, qp->srq ? qp->srq->srqn : 0);
    set(q::domain_id, dom);
    set(q::sq_base, reinterpret_cast<std::uintptr_t>(qp->sq.base));
    set(q::rq_base, reinterpret_cast<std::uintptr_t>(qp->rq.base));
    set(q::log_sq_size, qp->sq.log_size);
    set(q::log_sq_stride, qp->sq.log_stride);
    set(q::log_rq_size, qp->rq.log_size);
    set(q::log_rq_stride, qp->rq.log_stride);
    set(q::max_send_sge, qp->max_send_sge);
    set(q::max_recv_sge, qp->max_recv_sge);
    set(q::max_inline, qp->max_inline);
    host::CmdOutcome r;
    int e = pool_full_errno(run_in(*c, hw::CmdOpcode::CreateQp, in, hw::cmd_handle::kSize, r), r);
    if (e == 0) e = out_handle(r, qp->qpn);
    if (e != 0) {
        c->queues.free(qp->sq.base);
        c->queues.free(qp->rq.base);
        delete qp;
        errno = e;
        return nullptr;
    }
    ibv_qp& b = qp->qpx.qp_base;
    b.context = ctx;
    b.qp_context = a->qp_context;
    b.pd = a->pd;
    b.send_cq = a->send_cq;
    b.recv_cq = a->recv_cq ? a->recv_cq : a->send_cq;
    b.srq = a->srq;
    b.handle = qp->qpn;
    b.qp_num = qp->qpn;
    b.state = IBV_QPS_RESET;
    b.qp_type = a->qp_type;
    pthread_mutex_init(&b.mutex, nullptr);
    pthread_cond_init(&b.cond, nullptr);
    fill_qp_ex(*qp);
    cap.max_send_wr = qp->sq.entries();
    cap.max_recv_wr = qp->srq ? 0 : qp->rq.entries();
    cap.max_send_sge = qp->max_send_sge;
    cap.max_recv_sge = qp->max_recv_sge;
    cap.max_inline_data = qp->max_inline;
    for (SimCq* cq : {qp->scq, qp->rcq}) {
        std::lock_guard<std::mutex> lk(cq->mu);
        cq->qps.emplace(qp->qpn, qp);
    }
    std::lock_guard<std::mutex> lk(c->obj_mu);
    c->qps[qp->qpn] = qp;
    return &b;
}

ibv_qp* create_qp(ibv_pd* pd, ibv_qp_init_attr* attr) {
    if (pd == nullptr || attr == nullptr) {
        errno = EINVAL;
        return nullptr;
    }
    ibv_qp_init_attr_ex ex;
    std::memset(&ex, 0, sizeof ex);
    std::memcpy(&ex, attr, sizeof *attr);  // ibv_qp_init_attr is the prefix
    ex.comp_mask = IBV_QP_INIT_ATTR_PD;
    ex.pd = pd;
    ibv_qp* qp = create_qp_ex(pd->context, &ex);
    if (qp) attr->cap = ex.cap;
    return qp;
}

namespace {
int modify_qp_cmd(ibv_qp* ibqp, ibv_qp_attr* attr, int mask);
}

// ibv_modify_qp returns the errno; a kernel provider's failing write() has
// set errno to it as well, and applications print strerror(errno) (the
// workload said "QP to RTR failed: Success" when a wire lost an ARP reply).
int modify_qp(ibv_qp* ibqp, ibv_qp_attr* attr, int mask) {
    const int e = modify_qp_cmd(ibqp, attr, mask);
    if (e != 0) errno = e;
    return e;
}

namespace {
int modify_qp_cmd(ibv_qp* ibqp, ibv_qp_attr* attr, int mask) {
    SimContext* c = ibqp ? sim(ibqp->context) : nullptr;
    if (c == nullptr || attr == nullptr) return EINVAL;
    SimQp& qp = *qp_of(ibqp);
    namespace a = hw::qp_attr;
    std::array<std::uint8_t, a::kSize> in{};
    // hw::set refuses a value wider than its field and leaves the field 0; a
    // dropped value would reach the device as 0 (a timeout of 0 is "no
    // retransmit timer", a state of 0 is RESET). So every value that can be
    // wider than its field is first refused or narrowed below as rxe does,
    // and whatever still does not fit makes the verb fail instead of being
    // sent as 0.
    bool fits = true;
    auto set = [&in, &fits](hw::Field f, std::uint64_t v) {
        if (!hw::set(in.data(), in.size(), f, v)) fits = false;
    };
    const auto m = static_cast<std::uint32_t>(mask);
    namespace k = hw::qp_attr_mask;
    // rxe_qp_chk_attr: a timeout above 31 (4.096 us * 2^31) is EINVAL.
    if ((m & k::kTimeout) && attr->timeout > 31) return EINVAL;
    constexpr std::uint32_t kPsnMask = 0xFFFFFF;  // rxe_qp_from_attr: & BTH_PSN_MASK
    // retry_cnt and rnr_retry are 3 bits in IBA and in QP_ATTR; rxe stores the
    // u8 and counts it down. The nearest meaning the field holds is 7: for
    // rnr_retry exactly rxe's (its completer stops counting at 7, so a count
    // above 7 ends as "retry for ever"); for retry_cnt the most retries the
    // device can make (rxe would make up to 255 before RETRY_EXC_ERR).
    auto count3 = [](std::uint8_t v) { return std::min<std::uint8_t>(v, 7); };
    set(a::qpn, qp.qpn);
    set(a::attr_mask, m);
    // A negative value becomes too wide for its field, and so EINVAL below.
    auto wide = [](std::int64_t v) { return static_cast<std::uint64_t>(v); };
    if (m & k::kState) set(a::qp_state, wide(c_enum(attr->qp_state)));
    if (m & k::kCurState) set(a::cur_state, wide(c_enum(attr->cur_qp_state)));
    if (m & k::kPathMtu) set(a::path_mtu, wide(c_enum(attr->path_mtu)));
    if (m & k::kEnSqdAsyncNotify) set(a::en_sqd_async_notify, attr->en_sqd_async_notify ? 1 : 0);
    if (m & k::kQkey) set(a::qkey, attr->qkey);
    if (m & k::kRqPsn) set(a::rq_psn, attr->rq_psn & kPsnMask);
    if (m & k::kSqPsn) set(a::sq_psn, attr->sq_psn & kPsnMask);
    // rxe stores the u32 and its BTH builder keeps the low 24 bits.
    if (m & k::kDestQpn) set(a::dest_qp_num, attr->dest_qp_num & 0xFFFFFF);
    if (m & k::kAccessFlags) set(a::qp_access_flags, attr->qp_access_flags);
    if (m & k::kPort) set(a::port_num, attr->port_num);
    if (m & k::kPkeyIndex) set(a::pkey_index, attr->pkey_index);
    if (m & k::kTimeout) set(a::timeout, attr->timeout);
    if (m & k::kRetryCnt) set(a::retry_cnt, count3(attr->retry_cnt));
    if (m & k::kRnrRetry) set(a::rnr_retry, count3(attr->rnr_retry));
    // rxe's responder puts min_rnr_timer & ~AETH_TYPE_MASK into the RNR NAK's
    // syndrome: on the wire only the low 5 bits count.
    if (m & k::kMinRnrTimer) set(a::min_rnr_timer, attr->min_rnr_timer & 0x1F);
    if (m & k::kMaxQpRdAtomic) set(a::max_rd_atomic, attr->max_rd_atomic);
    if (m & k::kMaxDestRdAtomic) set(a::max_dest_rd_atomic, attr->max_dest_rd_atomic);
    if (m & k::kAv) put_av<QpAttrNs>(in.data(), in.size(), attr->ah_attr);
    // What is left to not fit is a state, current state or path MTU outside
    // its enum, or access bits beyond the 16 QP_ATTR has: input rxe refuses too
    // (ib_modify_qp_is_ok, the MTU check) or the firmware would (bits 4..7,
    // 10..15).
    if (!fits) return EINVAL;
    host::CmdOutcome r;
    const int e = (m & k::kAv) ? run_av(*c, hw::CmdOpcode::ModifyQp, in, 0, r)
                               : run_in(*c, hw::CmdOpcode::ModifyQp, in, 0, r);
    if (e != 0) return e;
    if (m & k::kState) {
        ibqp->state = attr->qp_state;
        const ibv_qp_state st = attr->qp_state;
        qp.sq_open.store(st == IBV_QPS_RTS || st == IBV_QPS_SQD || st == IBV_QPS_SQE || st == IBV_QPS_ERR,
                         std::memory_order_relaxed);
        if (attr->qp_state == IBV_QPS_RESET) {  // 5.7: the driver resets its indices
            std::scoped_lock lk(qp.sq.mu, qp.rq.mu);
            qp.sq.reset();
            qp.rq.reset();
        }
    }
    return 0;
}
}  // namespace

int query_qp(ibv_qp* ibqp, ibv_qp_attr* attr, int /*mask*/, ibv_qp_init_attr* init) {
    SimContext* c = ibqp ? sim(ibqp->context) : nullptr;
    if (c == nullptr || attr == nullptr) return EINVAL;
    SimQp& qp = *qp_of(ibqp);
    std::array<std::uint8_t, hw::cmd_handle::kSize> in{};
    hw::set(in.data(), in.size(), hw::cmd_handle::handle, qp.qpn);
    host::CmdOutcome r;
    int e = run_in(*c, hw::CmdOpcode::QueryQp, in, hw::qp_attr::kSize, r);
    if (e == 0 && r.out.size() < hw::qp_attr::kSize) e = EIO;
    if (e != 0) return e;
    const std::uint8_t* o = r.out.data();
    auto g = [o](hw::Field f) { return hw::get(o, hw::qp_attr::kSize, f); };
    namespace a = hw::qp_attr;
    std::memset(attr, 0, sizeof *attr);
    attr->qp_state = static_cast<ibv_qp_state>(g(a::qp_state));
    attr->cur_qp_state = attr->qp_state;
    attr->path_mtu = static_cast<ibv_mtu>(g(a::path_mtu));
    attr->path_mig_state = IBV_MIG_MIGRATED;
    attr->qkey = static_cast<std::uint32_t>(g(a::qkey));
    attr->rq_psn = static_cast<std::uint32_t>(g(a::rq_psn));
    attr->sq_psn = static_cast<std::uint32_t>(g(a::sq_psn));
    attr->dest_qp_num = static_cast<std::uint32_t>(g(a::dest_qp_num));
    attr->qp_access_flags = static_cast<unsigned>(g(a::qp_access_flags));
    attr->cap.max_send_wr = static_cast<std::uint32_t>(g(a::max_send_wr));
    attr->cap.max_recv_wr = static_cast<std::uint32_t>(g(a::max_recv_wr));
    attr->cap.max_send_sge = static_cast<std::uint32_t>(g(a::max_send_sge));
    attr->cap.max_recv_sge = static_cast<std::uint32_t>(g(a::max_recv_sge));
    attr->cap.max_inline_data = static_cast<std::uint32_t>(g(a::max_inline));
    ibv_ah_attr& ah = attr->ah_attr;
    hw::get_bytes(o, a::kSize, a::av_dgid, ah.grh.dgid.raw, sizeof ah.grh.dgid.raw);
    ah.grh.sgid_index = static_cast<std::uint8_t>(g(a::av_sgid_index));
    ah.grh.hop_limit = static_cast<std::uint8_t>(g(a::av_hop_limit));
    ah.grh.traffic_class = static_cast<std::uint8_t>(g(a::av_traffic_class));
    ah.grh.flow_label = static_cast<std::uint32_t>(g(a::av_flow_label));
    ah.sl = static_cast<std::uint8_t>(g(a::av_sl));
    ah.is_global = static_cast<std::uint8_t>(g(a::av_grh));
    ah.static_rate = static_cast<std::uint8_t>(g(a::av_static_rate));
    ah.port_num = static_cast<std::uint8_t>(g(a::port_num));
    attr->pkey_index = static_cast<std::uint16_t>(g(a::pkey_index));
    attr->en_sqd_async_notify = static_cast<std::uint8_t>(g(a::en_sqd_async_notify));
    attr->sq_draining = static_cast<std::uint8_t>(g(a::sq_draining));
    attr->max_rd_atomic = static_cast<std::uint8_t>(g(a::max_rd_atomic));
    attr->max_dest_rd_atomic = static_cast<std::uint8_t>(g(a::max_dest_rd_atomic));
    attr->min_rnr_timer = static_cast<std::uint8_t>(g(a::min_rnr_timer));
    attr->port_num = static_cast<std::uint8_t>(g(a::port_num));
    attr->timeout = static_cast<std::uint8_t>(g(a::timeout));
    attr->retry_cnt = static_cast<std::uint8_t>(g(a::retry_cnt));
    attr->rnr_retry = static_cast<std::uint8_t>(g(a::rnr_retry));
    ibqp->state = attr->qp_state;
    if (init != nullptr) {
        std::memset(init, 0, sizeof *init);
        init->qp_context = ibqp->qp_context;
        init->send_cq = ibqp->send_cq;
        init->recv_cq = ibqp->recv_cq;
        init->srq = ibqp->srq;
        init->cap = attr->cap;
        init->qp_type = ibqp->qp_type;
        init->sq_sig_all = qp.sq_sig_all ? 1 : 0;
    }
    return 0;
}

int destroy_qp(ibv_qp* ibqp) {
    SimContext* c = ibqp ? sim(ibqp->context) : nullptr;
    if (c == nullptr) return EINVAL;
    SimQp* qp = qp_of(ibqp);
    const int e = run_handle(*c, hw::CmdOpcode::DestroyQp, qp->qpn);
    if (e != 0) return e;
    {
        std::lock_guard<std::mutex> lk(c->obj_mu);
        c->qps.erase(qp->qpn);
    }
    for (SimCq* cq : {qp->scq, qp->rcq}) {
        std::lock_guard<std::mutex> lk(cq->mu);
        cq->qps.erase(qp->qpn);
    }
    purge_async(*c, ibqp);
    pthread_cond_destroy(&ibqp->cond);
    pthread_mutex_destroy(&ibqp->mutex);
    c->queues.free(qp->sq.base);
    c->queues.free(qp->rq.base);
    delete qp;
    return 0;
}

ibv_qp_ex* qp_to_qp_ex(ibv_qp* qp) {
    if (qp == nullptr || sim(qp->context) == nullptr) {
        errno = EINVAL;
        return nullptr;
    }
    return &qp_of(qp)->qpx;
}

// ---------------------------------------------------------------------------
// Address handles (hw-spec 5.6.9)
// ---------------------------------------------------------------------------
ibv_ah* create_ah(ibv_pd* pd, ibv_ah_attr* attr) {
    SimContext* c = pd ? sim(pd->context) : nullptr;
    if (c == nullptr || attr == nullptr) {
        errno = EINVAL;
        return nullptr;
    }
    namespace h = hw::cmd_create_ah_in;
    std::array<std::uint8_t, h::kSize> in{};
    hw::set(in.data(), in.size(), h::pdn, pd_number(pd));
    hw::set(in.data(), in.size(), h::port_num, attr->port_num);
    put_av<AhInNs>(in.data(), in.size(), *attr);
    host::CmdOutcome r;
    int e = pool_full_errno(run_av(*c, hw::CmdOpcode::CreateAh, in, hw::cmd_handle::kSize, r), r);
    std::uint32_t ahn = 0;
    if (e == 0) e = out_handle(r, ahn);
    if (e != 0) {
        errno = e;
        return nullptr;
    }
    auto* ah = static_cast<SimAh*>(std::calloc(1, sizeof(SimAh)));
    if (ah == nullptr) {
        run_handle(*c, hw::CmdOpcode::DestroyAh, ahn);
        errno = ENOMEM;
        return nullptr;
    }
    ah->ah.context = pd->context;
    ah->ah.pd = pd;
    ah->ah.handle = ahn;
    ah->ahn = ahn;
    return &ah->ah;
}

int destroy_ah(ibv_ah* ah) {
    SimContext* c = ah ? sim(ah->context) : nullptr;
    if (c == nullptr) return EINVAL;
    const int e = run_handle(*c, hw::CmdOpcode::DestroyAh, outer<SimAh>(ah)->ahn);
    if (e != 0) return e;
    std::free(ah);
    return 0;
}

// ---------------------------------------------------------------------------
// Multicast (hw-spec 5.6.12)
// ---------------------------------------------------------------------------
namespace {

int mcast(ibv_qp* qp, const ibv_gid* gid, hw::CmdOpcode op) {
    SimContext* c = qp ? sim(qp->context) : nullptr;
    if (c == nullptr || gid == nullptr) return EINVAL;
    namespace m = hw::cmd_mcast_in;
    std::array<std::uint8_t, m::kSize> in{};
    hw::set(in.data(), in.size(), m::qpn, qp->qp_num);
    hw::set_bytes(in.data(), in.size(), m::mgid, gid->raw, sizeof gid->raw);
    host::CmdOutcome r;
    return run_in(*c, op, in, 0, r);
}

}  // namespace

int attach_mcast(ibv_qp* qp, const ibv_gid* gid, std::uint16_t) { return mcast(qp, gid, hw::CmdOpcode::AttachMcast); }
int detach_mcast(ibv_qp* qp, const ibv_gid* gid, std::uint16_t) { return mcast(qp, gid, hw::CmdOpcode::DetachMcast); }

int init_ah_from_wc(ibv_context* ctx, std::uint8_t port_num, ibv_wc* wc, ibv_grh* grh,
                    ibv_ah_attr* ah) {
    if (sim(ctx) == nullptr || wc == nullptr || ah == nullptr) {
        errno = EINVAL;
        return -1;
    }
    std::memset(ah, 0, sizeof *ah);
    ah->dlid = wc->slid;
    ah->sl = wc->sl;
    ah->src_path_bits = wc->dlid_path_bits;
    ah->port_num = port_num;
    if (!(wc->wc_flags & IBV_WC_GRH)) return 0;
    if (grh == nullptr) {
        errno = EINVAL;
        return -1;
    }
    // The 40 bytes of 6.4: an IPv6 header, or 20 zero bytes and an IPv4 header.
    const auto* raw = reinterpret_cast<const std::uint8_t*>(grh);
    ibv_gid local{};
    if ((raw[0] >> 4) == 6) {
        const std::uint32_t vtf = be32toh(grh->version_tclass_flow);
        ah->grh.dgid = grh->sgid;
        local = grh->dgid;
        ah->grh.flow_label = vtf & 0xFFFFF;
        ah->grh.traffic_class = static_cast<std::uint8_t>((vtf >> 20) & 0xFF);
    } else if ((raw[20] >> 4) == 4) {
        const std::uint8_t* ip = raw + 20;
        auto mapped = [](const std::uint8_t* a, ibv_gid& g) {
            std::memset(g.raw, 0, sizeof g.raw);
            g.raw[10] = g.raw[11] = 0xFF;
            std::memcpy(g.raw + 12, a, 4);
        };
        mapped(ip + 12, ah->grh.dgid);  // source address
        mapped(ip + 16, local);         // destination address
        ah->grh.traffic_class = ip[1];
    } else {
        errno = EINVAL;
        return -1;
    }
    ah->is_global = 1;
    ah->grh.hop_limit = 0xFF;
    // The local GID the packet was sent to names the sgid_index.
    ibv_port_attr pa;
    if (query_port(ctx, port_num, &pa, sizeof pa) != 0) {
        errno = EINVAL;
        return -1;
    }
    for (int i = 0; i < pa.gid_tbl_len; ++i) {
        ibv_gid_entry ge;
        if (query_gid_ex(ctx, port_num, static_cast<std::uint32_t>(i), &ge, 0, sizeof ge) != 0)
            continue;
        if (std::memcmp(ge.gid.raw, local.raw, sizeof local.raw) == 0) {
            ah->grh.sgid_index = static_cast<std::uint8_t>(i);
            return 0;
        }
    }
    errno = ENOENT;
    return -1;
}

ibv_ah* create_ah_from_wc(ibv_pd* pd, ibv_wc* wc, ibv_grh* grh, std::uint8_t port_num) {
    if (pd == nullptr) {
        errno = EINVAL;
        return nullptr;
    }
    ibv_ah_attr attr;
    if (init_ah_from_wc(pd->context, port_num, wc, grh, &attr) != 0) return nullptr;
    return create_ah(pd, &attr);
}

// ---------------------------------------------------------------------------
// Introspection (tests)
// ---------------------------------------------------------------------------
QueueView sq_view(ibv_qp* qp) {
    const Wq& w = qp_of(qp)->sq;
    return {w.base, w.entries(), w.stride()};
}
QueueView rq_view(ibv_qp* qp) {
    const Wq& w = qp_of(qp)->rq;
    return {w.base, w.entries(), w.stride()};
}
QueueView srq_view(ibv_srq* srq) {
    const Wq& w = srq_of(srq)->wq;
    return {w.base, w.entries(), w.stride()};
}
QueueView cq_view(ibv_cq* cq) {
    const SimCq& c = *cq_of(cq);
    return {c.ring, 1u << c.log_size, hw::cqe::kSize};
}
std::uint32_t cq_number(ibv_cq* cq) { return cq_of(cq)->cqn; }

}  // namespace simnic::verbs
