// Internal to the verbs provider's translation layer (provider.h): what its
// files share. The objects behind libibverbs' public structs, the command
// runner, and the functions one file defines for another:
//   devices.cc   device list and source, sysfs emulation, contexts, the ops
//                tables, queries;
//   objects.cc   PDs, MRs, CQs, SRQs, QPs, AHs (create/modify/query/destroy);
//   events.cc    the event thread, completion channels, async events;
//   datapath.cc  CQ polling, ibv_cq_ex, send and receive WQEs, ibv_wr_*.
// Nothing outside those files includes it.
#pragma once

#include "provider.h"
#include "queue_arena.h"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "simnic/hw/cqe.h"
#include "simnic/hw/field.h"
#include "simnic/hw/layout.h"
#include "simnic/hw/wqe.h"

namespace simnic::verbs::detail {

// An application written in C may store any int in an enum field of a verbs
// struct (a qp_state of 99, an opcode of 200). In C++ loading such a value as
// the enum is undefined (its range is that of the enumerators' bits), so
// every enum the provider reads from application memory is read as the
// integer it holds, and checked as an integer.
template <typename E>
std::int64_t c_enum(const E& field) {
    static_assert(std::is_enum_v<E>);
    std::underlying_type_t<E> v;
    std::memcpy(&v, &field, sizeof v);
    return static_cast<std::int64_t>(v);
}

// ---------------------------------------------------------------------------
// Devices (their registry: devices.cc)
// ---------------------------------------------------------------------------
struct SimDevice {
    ibv_device ibdev{};
    std::string name;
    std::string netdev;
    std::string type;
    __be64 guid = 0;  // cached node GUID, 0 until known
};

// ---------------------------------------------------------------------------
// Contexts
// ---------------------------------------------------------------------------
struct SimContext;

// The object handed to the application: a public verbs_context (context last,
// as verbs.h requires) preceded by our back pointer. Standard layout.
struct ContextShell {
    SimContext* impl;
    verbs_context vctx;
};

struct SimCq;
struct SimQp;
struct SimSrq;

// A queue of events behind a file descriptor that is readable exactly while
// the queue is not empty (completion channels, the async fd). The fd is a
// plain eventfd; every read and write of it happens under `mu`, after a
// zero-timeout poll, so neither ever blocks.
//
// A closed queue (its device is gone, as the kernel closes a uverbs event
// file on disassociation) hands out what it holds and then fails with EIO;
// its fd stays readable, so a reader never blocks on it again.
template <typename T>
struct FdQueue {
    std::mutex mu;
    std::deque<T> q;
    int fd = -1;
    bool closed = false;  // under mu
    // fd holds a count that push() wrote and drain_locked() has not read
    // (under mu): the drain reads only then, without a poll first.
    bool signalled = false;

    void push(const T& v);
    // Pops one event; blocks (poll on fd) unless the fd is O_NONBLOCK.
    // 0, or an errno (EAGAIN when empty and non-blocking, EIO when empty
    // and closed).
    int pop(T& out);
    // pop() that never waits: EAGAIN when empty.
    int try_pop(T& out);
    template <typename P>
    void purge(P pred);
    // Wakes every blocked pop(); see above.
    void close_queue();

private:
    void drain_locked();
};

struct SimContext {
    SimDevice* dev = nullptr;
    std::unique_ptr<host::Context> hc;
    QueueArena queues;  // ring memory, shared with the device
    ContextShell* shell = nullptr;
    std::array<std::uint8_t, hw::cap_block::kSize> cap{};
    // Objects by device number, for event dispatch (obj_mu).
    std::mutex obj_mu;
    std::map<std::uint32_t, SimCq*> cqs;
    std::map<std::uint32_t, SimQp*> qps;
    std::map<std::uint32_t, SimSrq*> srqs;
    // PDs the application has not deallocated: freed with the context, as
    // the device frees the PDs themselves (obj_mu).
    std::set<struct SimPd*> pds;
    // Events: the thread waiting on hc->event_fd(), the async queue.
    // eq_mu: the EQ's one consumer at a time (take_events), which is the
    // event thread or a thread waiting in ibv_get_cq_event.
    std::mutex eq_mu;
    // Threads blocked in ibv_get_cq_event, which take the interrupt
    // themselves; while there are any, the event thread leaves it to them
    // (event_loop). irq_far: the event thread is looking away for longer
    // than its first glance, and the last waiter to leave tells it so
    // through irq_back_fd.
    std::atomic<int> irq_waiters{0};
    std::atomic<bool> irq_far{false};
    int irq_back_fd = -1;
    FdQueue<ibv_async_event> async;
    std::thread ev_thread;
    int stop_fd = -1;
    // When the current empty spell of this context's CQs began (monotonic
    // ns; 0: a poll found a CQE since). Polling that has found nothing
    // anywhere for a while naps (cq_relax).
    std::atomic<std::uint64_t> last_cqe_ns{0};
    // The device is gone (the daemon died or stopped: fatal.cc). From then
    // on commands fail with EIO, polling a CQ completes what was posted
    // with flush errors, and the event queues are closed.
    std::atomic<bool> fatal{false};
    // The completion channels made on this context (obj_mu): closed with it.
    std::set<struct SimChannel*> channels;
    // GID entries of port 1 read by QUERY_GID, each with the PORT_BLOCK
    // gid_gen read before it was fetched: good while BAR0 still shows that
    // generation (hw-spec 2.5, 9.8; devices.cc, query_gid_entry). gid_mu.
    struct GidSlot {
        bool known = false;
        std::uint32_t gen = 0;
        std::array<std::uint8_t, hw::gid_entry::kSize> entry{};
    };
    std::mutex gid_mu;
    std::vector<GidSlot> gids;
    std::uint64_t cap_get(hw::Field f) const { return hw::get(cap.data(), cap.size(), f); }
};

struct SimPd {
    ibv_pd pd;  // first: the application's pointer is &pd
    std::uint32_t pdn;
};

int op_poll_cq(ibv_cq*, int, ibv_wc*);  // identifies simnic contexts

// How long a context's CQs stay empty before poll_cq naps (datapath.cc,
// cq_relax), given what the polling thread's CPUs look like; kNoNap: it
// keeps spinning.
inline constexpr std::uint64_t kNoNap = ~std::uint64_t{0};
std::uint64_t poll_nap_after_ns(unsigned cpus, bool contended);

inline ContextShell* shell_of(ibv_context* ctx) {
    auto* v = reinterpret_cast<verbs_context*>(reinterpret_cast<std::uint8_t*>(ctx) -
                                               offsetof(verbs_context, context));
    return reinterpret_cast<ContextShell*>(reinterpret_cast<std::uint8_t*>(v) -
                                           offsetof(ContextShell, vctx));
}

inline SimContext* sim(ibv_context* ctx) {
    return is_context(ctx) ? shell_of(ctx)->impl : nullptr;
}

// fatal.cc: a command on a context whose device is gone: EIO (errno set
// too, as a kernel command's failed write sets it), or 0 for a destroy
// command where RDMAV_ALLOW_DISASSOC_DESTROY lets the provider free the
// object, as libibverbs does after a device is disassociated.
int fatal_command(hw::CmdOpcode op);

// One command; 0 or the errno of hw-spec 5.5 (or of the transport).
inline int run(SimContext& c, hw::CmdOpcode op, const std::uint8_t* in, std::size_t in_len,
               std::size_t out_cap, host::CmdOutcome& r) {
    if (c.fatal.load(std::memory_order_acquire)) return fatal_command(op);
    const int e = c.hc->command(op, in, in_len, out_cap, r);
    if (e != 0) return e;
    return hw::status_errno(r.status);
}

// The data path (datapath.cc), for the ops tables (devices.cc).
int op_post_send(ibv_qp*, ibv_send_wr* wr, ibv_send_wr** bad);
int op_post_recv(ibv_qp*, ibv_recv_wr* wr, ibv_recv_wr** bad);
int op_post_srq_recv(ibv_srq*, ibv_recv_wr* wr, ibv_recv_wr** bad);
int op_req_notify_cq(ibv_cq* cq, int solicited_only);

// ===========================================================================
// The data path: MRs, CQs, completion channels, async events, QPs, SRQs, AHs.
// Objects embed the libibverbs struct as their first member; the
// application's pointer is that member, and the object is reached from it
// with a first-member (container_of) cast. Rings live in this process's
// memory, in the context's bootstrap domain (hw-spec 1.3, 4).
// ===========================================================================
template <typename T, typename M>
T* outer(M* member) {  // container_of for a first member
    return reinterpret_cast<T*>(member);
}

// ---- event queues behind fds ----
template <typename T>
void FdQueue<T>::push(const T& v) {
    std::lock_guard<std::mutex> lk(mu);
    q.push_back(v);
    if (!signalled) {
        const std::uint64_t one = 1;
        signalled = ::write(fd, &one, sizeof one) == sizeof one;
    }
}

template <typename T>
void FdQueue<T>::drain_locked() {
    if (closed || !signalled) return;  // closed: stays readable
    // Only this queue writes and reads fd, so the count is there and the
    // read does not block, whatever O_NONBLOCK the application set. (An
    // application reading the fd itself would take the event, as reading a
    // kernel channel's fd does.)
    std::uint64_t v = 0;
    if (::read(fd, &v, sizeof v) == sizeof v) signalled = false;
}

template <typename T>
int FdQueue<T>::try_pop(T& out) {
    std::lock_guard<std::mutex> lk(mu);
    if (!q.empty()) {
        out = q.front();
        q.pop_front();
        if (q.empty()) drain_locked();
        return 0;
    }
    return closed ? EIO : EAGAIN;
}

template <typename T>
int FdQueue<T>::pop(T& out) {
    for (;;) {
        if (const int e = try_pop(out); e != EAGAIN) return e;
        const int fl = ::fcntl(fd, F_GETFL);
        if (fl >= 0 && (fl & O_NONBLOCK)) return EAGAIN;
        pollfd p{fd, POLLIN, 0};
        if (::poll(&p, 1, -1) < 0 && errno != EINTR) return errno;
    }
}

template <typename T>
void FdQueue<T>::close_queue() {
    std::lock_guard<std::mutex> lk(mu);
    if (closed) return;
    closed = true;
    if (q.empty()) {  // readable from now on
        const std::uint64_t one = 1;
        [[maybe_unused]] const ssize_t w = ::write(fd, &one, sizeof one);
    }
}

template <typename T>
template <typename P>
void FdQueue<T>::purge(P pred) {
    std::lock_guard<std::mutex> lk(mu);
    const bool had = !q.empty();
    q.erase(std::remove_if(q.begin(), q.end(), pred), q.end());
    if (had && q.empty()) drain_locked();
}

// ---- objects ----
struct SimChannel {
    ibv_comp_channel ch;  // first
    SimContext* ctx;
    FdQueue<SimCq*> events;
};

// A work queue ring (SQ, RQ, SRQ): the driver owns pi; ci follows the CQEs.
struct Wq {
    std::uint8_t* base = nullptr;
    std::uint8_t log_size = 0;
    std::uint8_t log_stride = 0;
    std::uint32_t pi = 0;                // under mu
    std::atomic<std::uint32_t> ci{0};    // from poll_cq (wqe_index + 1)
    std::mutex mu;
    std::uint32_t entries() const { return std::uint32_t{1} << log_size; }
    std::uint32_t stride() const { return std::uint32_t{1} << log_stride; }
    std::size_t bytes() const { return std::size_t{entries()} << log_stride; }
    std::uint8_t* slot(std::uint32_t i) const {
        return base + (std::size_t{hw::ring_slot(i, log_size)} << log_stride);
    }
    bool full() const {
        return hw::ring_used(pi, ci.load(std::memory_order_acquire)) >= entries();
    }
    void reset() {
        pi = 0;
        ci.store(0, std::memory_order_release);
    }
};

struct SimSrq {
    ibv_srq srq;  // first
    SimContext* ctx;
    std::uint32_t srqn;
    std::uint32_t max_sge;
    Wq wq;
};

struct SimCq {
    // First. The application's ibv_cq (ibv_create_cq) or ibv_cq_ex
    // (ibv_create_cq_ex): ibv_cq is the leading part of ibv_cq_ex, and
    // ibv_cq_ex_to_cq is a cast, so both name the same object.
    union {
        ibv_cq_ex cqx;
        ibv_cq cq;
    };
    SimContext* ctx;
    SimChannel* channel;
    std::uint32_t cqn;
    std::uint8_t log_size;
    std::uint8_t* ring;
    std::mutex mu;           // poll_cq; held from start_poll to end_poll
    std::uint32_t ci = 0;    // under mu
    std::uint32_t empty_polls = 0;  // consecutive empty polls (under mu)
    // QPs completing here, by QPN (under mu): each CQE finds its QP in
    // O(log n), and a QP comes and goes in O(log n) (a vector made a million
    // QPs on one CQ quadratic to create and to destroy).
    std::map<std::uint32_t, SimQp*> qps;
    // ibv_cq_ex polling, between start_poll and end_poll (under mu): the
    // CQE the iterator is on (ex_on false after next_poll found none), its
    // translation, and how many CQEs the batch consumed.
    hw::Cqe ex_cqe{};
    bool ex_on = false;
    ibv_wc ex_wc{};
    std::uint32_t ex_done = 0;
};

struct SimQp {
    ibv_qp_ex qpx;  // first; qpx.qp_base is the application's ibv_qp
    SimContext* ctx;
    std::uint32_t qpn;
    ibv_qp_type type;
    bool sq_sig_all;
    std::uint32_t max_send_sge, max_recv_sge, max_inline;
    SimCq* scq;
    SimCq* rcq;
    SimSrq* srq;
    Wq sq, rq;
    // The last state set by modify_qp takes send WRs (RTS, SQD, SQE, ERR).
    // Below RTS they are an immediate error (IB spec 10.3.1; rxe: EINVAL):
    // the engine ignores SQ doorbells in RESET and INIT (hw-spec 3.2), so a
    // WQE accepted there would run, stale, after the next doorbell.
    std::atomic<bool> sq_open{false};
    // ibv_wr_* state, between wr_start and wr_complete / wr_abort (sq.mu
    // held): the current WQE is built in ex_wr (its inline bytes gathered
    // in ex_inline) and encoded into its slot, ex_wqe, when the next one
    // starts or the batch completes.
    std::uint32_t ex_start = 0;
    int ex_err = 0;
    std::uint8_t* ex_wqe = nullptr;
    hw::SendWqe ex_wr{};
    std::array<std::uint8_t, hw::kMaxInline> ex_inline{};
};

struct SimAh {
    ibv_ah ah;  // first
    std::uint32_t ahn;
};

inline SimCq* cq_of(ibv_cq* cq) { return outer<SimCq>(cq); }
inline SimQp* qp_of(ibv_qp* qp) { return outer<SimQp>(outer<ibv_qp_ex>(qp)); }
inline SimSrq* srq_of(ibv_srq* srq) { return outer<SimSrq>(srq); }
inline SimChannel* channel_of(ibv_comp_channel* ch) { return outer<SimChannel>(ch); }

// ---- defined in one file, used by another ----
// events.cc: the event thread of a context (open_device_on, close_device),
// and purge_async (the destroy verbs).
int start_events(SimContext& c);
void stop_events(SimContext& c);
void purge_async(SimContext& c, const void* match);
// fatal.cc: the device is gone (the event thread saw the daemon's
// connection close, or a DEVICE_FATAL event): marks the context, queues
// IBV_EVENT_DEVICE_FATAL and closes its event queues. Once only.
void device_fatal(SimContext& c);
// events.cc: takes the device's interrupt (hc->ack_interrupt(); `irq_ready`:
// a poll saw hc->event_fd() readable), then dispatches every EQE and re-arms the EQ, under
// eq_mu; false if another thread is doing it (it will dispatch what is there).
// `direct`: the channel a thread in ibv_get_cq_event waits on; the first
// completion event for it, with none queued before, is handed over in
// direct->got instead of being queued.
struct DirectEvent {
    SimChannel* ch;
    SimCq* got;
};
bool take_events(SimContext& c, bool irq_ready = false, DirectEvent* direct = nullptr);
// fatal.cc: with the device gone, the next CQE of `cq` (under cq.mu, its
// ring empty at ci): a flush error for the oldest work request still
// outstanding on a QP completing there, written into the ring as the device
// would have written it, or null if there is none.
const std::uint8_t* flush_cqe(SimCq& cq);
// datapath.cc: the ops of an ibv_cq_ex (create_cq_ex) and of an ibv_qp_ex
// (create_qp_ex).
void fill_cq_ex(SimCq& cq, std::uint64_t wc_flags);
void fill_qp_ex(SimQp& qp);

}  // namespace simnic::verbs::detail
