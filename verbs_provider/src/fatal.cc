// When the device is gone (see provider.h): the daemon that hosted it died
// or stopped. What the provider does then follows what libibverbs and the
// kernel give an application whose device was hot-unplugged (uverbs
// disassociation), and rxe's provider on top of that:
//   - IBV_EVENT_DEVICE_FATAL on the async fd, then the async fd and every
//     completion channel of the context are closed: ibv_get_async_event and
//     ibv_get_cq_event hand out what was queued, then fail with EIO instead
//     of blocking (the kernel's is_closed event queues);
//   - every command fails with EIO (create, modify, query; destroy too,
//     unless RDMAV_ALLOW_DISASSOC_DESTROY is set, when destroys succeed and
//     free the object, as libibverbs' verbs_is_destroy_err lets them);
//   - ibv_post_send fails with EIO (rxe's post_send is a kernel command);
//     ibv_post_recv still queues (rxe's is not);
//   - polling a CQ returns what the device wrote before it went, then a
//     flush error (IBV_WC_WR_FLUSH_ERR) for every work request still
//     outstanding on the QPs that complete there, oldest first, send queue
//     before receive queue, as a QP moved to the error state flushes. The
//     provider writes those CQEs into the ring itself, as the device would
//     have (hw-spec 7), so poll_cq and the ibv_cq_ex iterator read them alike.
//     Receive WQEs of an SRQ are not flushed (IBA 10.3.1: an SRQ's WQEs
//     belong to no QP).
#include "provider_internal.h"

#include <cstdlib>
#include <cstring>

namespace simnic::verbs {

using namespace detail;

int detail::fatal_command(hw::CmdOpcode op) {
    static const bool allow_destroy = std::getenv("RDMAV_ALLOW_DISASSOC_DESTROY") != nullptr;
    switch (op) {
        case hw::CmdOpcode::DeallocPd:
        case hw::CmdOpcode::DeregMr:
        case hw::CmdOpcode::DestroyCq:
        case hw::CmdOpcode::DestroySrq:
        case hw::CmdOpcode::DestroyQp:
        case hw::CmdOpcode::DestroyAh:
        case hw::CmdOpcode::DeallocMw:
            if (allow_destroy) return 0;
            break;
        default:
            break;
    }
    errno = EIO;
    return EIO;
}

void detail::device_fatal(SimContext& c) {
    if (c.fatal.exchange(true, std::memory_order_acq_rel)) return;
    ibv_async_event ev;
    std::memset(&ev, 0, sizeof ev);
    ev.event_type = IBV_EVENT_DEVICE_FATAL;
    ev.element.port_num = 0;  // as the kernel reports it: no element
    c.async.push(ev);
    c.async.close_queue();
    std::lock_guard<std::mutex> lk(c.obj_mu);
    for (SimChannel* ch : c.channels) ch->events.close_queue();
}

namespace {

// The flush CQE for the WQE at `wq`'s consumer index, if one is outstanding.
const std::uint8_t* flush_one(SimCq& cq, const SimQp& qp, Wq& wq, bool send) {
    // A thread that holds the queue's lock is posting (or between wr_start
    // and wr_complete, maybe this very thread): its WQEs flush next time.
    std::unique_lock<std::mutex> lk(wq.mu, std::try_to_lock);
    if (!lk.owns_lock() || wq.base == nullptr) return nullptr;
    const std::uint32_t idx = wq.ci.load(std::memory_order_acquire);
    if (idx == wq.pi) return nullptr;
    const std::uint8_t* w = wq.slot(idx);
    const std::uint64_t wr_id = send ? hw::get(w, wq.stride(), hw::ctrl_seg::wr_id)
                                     : hw::get(w, wq.stride(), hw::recv_wqe::wr_id);
    namespace q = hw::cqe;
    std::array<std::uint8_t, q::kSize> img{};
    hw::set(img.data(), img.size(), q::wr_id, wr_id);
    hw::set(img.data(), img.size(), q::status, static_cast<std::uint8_t>(hw::WcStatus::WrFlushErr));
    // Only wr_id, status, qp_num and vendor_err mean anything in an error
    // completion (ibv_poll_cq(3)); the opcode says which queue it came from.
    hw::set(img.data(), img.size(), q::opcode,
            static_cast<std::uint8_t>(send ? hw::WcOpcode::Send : hw::WcOpcode::Recv));
    hw::set(img.data(), img.size(), q::qp_num, qp.qpn);
    hw::set(img.data(), img.size(), q::is_send, send ? 1 : 0);
    hw::set(img.data(), img.size(), q::wqe_index, idx);  // retire() frees up to it
    hw::set(img.data(), img.size(), q::owner, hw::phase_of(cq.ci, cq.log_size));
    std::uint8_t* e = cq.ring + std::size_t{hw::ring_slot(cq.ci, cq.log_size)} * q::kSize;
    // The body, then the owner dword with release (hw-spec 7.2), as the
    // device writes a CQE.
    std::memcpy(e, img.data(), q::owner.offset);
    std::uint32_t ow;
    std::memcpy(&ow, img.data() + q::owner.offset, sizeof ow);
    __atomic_store_n(reinterpret_cast<std::uint32_t*>(e + q::owner.offset), ow, __ATOMIC_RELEASE);
    return e;
}

}  // namespace

const std::uint8_t* detail::flush_cqe(SimCq& cq) {
    for (const auto& [qpn, qp] : cq.qps) {
        if (qp->scq == &cq)
            if (const std::uint8_t* e = flush_one(cq, *qp, qp->sq, true)) return e;
        if (qp->rcq == &cq && qp->srq == nullptr)
            if (const std::uint8_t* e = flush_one(cq, *qp, qp->rq, false)) return e;
    }
    return nullptr;
}

}  // namespace simnic::verbs
