// Memory windows and ibv_rereg_mr for simnic devices (hw-spec 5.6.10,
// 5.6.11, 6.5). Built on the public provider functions only: commands go
// through the host context, and a type 1 bind is an ordinary post_send of a
// BIND_MW work request, as in rdma-core's rxe provider.
#include <cerrno>
#include <cstdlib>

#include "provider.h"
#include "simnic/hw/layout.h"

namespace simnic::verbs {

namespace {

// One command; 0 or an errno (hw-spec 5.5).
int run(ibv_context* ctx, hw::CmdOpcode op, const std::uint8_t* in, std::size_t len,
        std::size_t out_cap, host::CmdOutcome& r) {
    host::Context* hc = host_context(ctx);
    if (hc == nullptr) return EINVAL;
    const int e = hc->command(op, in, len, out_cap, r);
    return e != 0 ? e : hw::status_errno(r.status);
}

}  // namespace

ibv_mw* alloc_mw(ibv_pd* pd, ibv_mw_type type) {
    if (pd == nullptr || !is_context(pd->context) ||
        (type != IBV_MW_TYPE_1 && type != IBV_MW_TYPE_2)) {
        errno = EINVAL;
        return nullptr;
    }
    namespace a = hw::cmd_alloc_mw_in;
    std::uint8_t in[a::kSize] = {};
    hw::set(in, a::pdn, pd_number(pd));
    hw::set(in, a::type, static_cast<std::uint64_t>(type));
    host::CmdOutcome r;
    int e = pool_full_errno(run(pd->context, hw::CmdOpcode::AllocMw, in, sizeof in, hw::cmd_handle::kSize, r), r);
    if (e == 0 && r.out.size() < hw::cmd_handle::kSize) e = EIO;
    if (e != 0) {
        errno = e;
        return nullptr;
    }
    const auto rkey = static_cast<std::uint32_t>(hw::get(r.out.data(), r.out.size(), hw::cmd_handle::handle));
    auto* mw = static_cast<ibv_mw*>(std::calloc(1, sizeof(ibv_mw)));
    if (mw == nullptr) {
        std::uint8_t h[hw::cmd_handle::kSize] = {};
        hw::set(h, hw::cmd_handle::handle, hw::key_index(rkey));
        run(pd->context, hw::CmdOpcode::DeallocMw, h, sizeof h, 0, r);
        errno = ENOMEM;
        return nullptr;
    }
    mw->context = pd->context;
    mw->pd = pd;
    mw->rkey = rkey;
    mw->handle = hw::key_index(rkey);  // binds change the key byte, never the index
    mw->type = type;
    return mw;
}

int dealloc_mw(ibv_mw* mw) {
    if (mw == nullptr || !is_context(mw->context)) return EINVAL;
    std::uint8_t in[hw::cmd_handle::kSize] = {};
    hw::set(in, hw::cmd_handle::handle, mw->handle);
    host::CmdOutcome r;
    const int e = run(mw->context, hw::CmdOpcode::DeallocMw, in, sizeof in, 0, r);
    if (e != 0) return e;
    std::free(mw);
    return 0;
}

int bind_mw(ibv_qp* qp, ibv_mw* mw, ibv_mw_bind* bind) {
    if (qp == nullptr || mw == nullptr || bind == nullptr || !is_context(qp->context) ||
        mw->context != qp->context)
        return EINVAL;
    // rdma-core's rxe: a type 1 window is never zero-based (o10-36.2.2).
    if (bind->bind_info.mw_access_flags & IBV_ACCESS_ZERO_BASED) return EINVAL;
    ibv_send_wr wr{};
    wr.wr_id = bind->wr_id;
    wr.opcode = IBV_WR_BIND_MW;
    wr.send_flags = bind->send_flags;
    wr.bind_mw.mw = mw;
    wr.bind_mw.rkey = ibv_inc_rkey(mw->rkey);
    wr.bind_mw.bind_info = bind->bind_info;
    ibv_send_wr* bad = nullptr;
    const int e = qp->context->ops.post_send(qp, &wr, &bad);
    if (e != 0) return e;
    // The WQE is posted: the window has this rkey once it completes. If it
    // completes with an error the application undoes this (rxe's rule).
    mw->rkey = wr.bind_mw.rkey;
    return 0;
}

int rereg_mr(ibv_mr* mr, int flags, ibv_pd* pd, void* addr, std::size_t length, int access) {
    // libibverbs' own input checks (ibv_rereg_mr in verbs.c).
    if (mr == nullptr || !is_context(mr->context) || (flags & ~IBV_REREG_MR_FLAGS_SUPPORTED) != 0 ||
        ((flags & IBV_REREG_MR_CHANGE_TRANSLATION) && (length == 0 || addr == nullptr)) ||
        (access != 0 && !(flags & IBV_REREG_MR_CHANGE_ACCESS))) {
        errno = EINVAL;
        return IBV_REREG_MR_ERR_INPUT;
    }
    // What the kernel would refuse, as the command failing.
    int e = 0;
    std::uint32_t pdn = 0;
    if (flags == 0) e = EINVAL;
    if ((flags & IBV_REREG_MR_CHANGE_PD) && (pd == nullptr || pd->context != mr->context)) e = EINVAL;
    if (e == 0 && (flags & IBV_REREG_MR_CHANGE_PD)) pdn = pd_number(pd);
    const auto acc = static_cast<unsigned>(access) & ~static_cast<unsigned>(IBV_ACCESS_OPTIONAL_RANGE);
    // rxe: access bits it does not support are EOPNOTSUPP. ON_DEMAND goes to
    // the device, which takes it only where it repeats the MR's mode.
    constexpr unsigned kKnown = unsigned{hw::access::kMrAccess} | hw::access::kOnDemand;
    if (e == 0 && (flags & IBV_REREG_MR_CHANGE_ACCESS) && (acc & ~kKnown) != 0) e = EOPNOTSUPP;
    if (e == 0) {
        namespace q = hw::cmd_rereg_mr_in;
        std::uint8_t in[q::kSize] = {};
        hw::set(in, q::lkey, mr->lkey);
        hw::set(in, q::flags, static_cast<std::uint32_t>(flags));
        hw::set(in, q::pdn, pdn);
        hw::set(in, q::access, acc & kKnown);
        host::CmdOutcome r;
        e = run(mr->context, hw::CmdOpcode::ReregMr, in, sizeof in, hw::cmd_reg_mr_out::kSize, r);
    }
    if (e != 0) {
        errno = e;
        return IBV_REREG_MR_ERR_CMD;
    }
    if (flags & IBV_REREG_MR_CHANGE_PD) mr->pd = pd;
    return 0;
}

}  // namespace simnic::verbs
