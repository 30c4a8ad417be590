// The events of a context (see provider.h): the thread that drains the
// device's event queue and re-arms it, completion channels, and async
// events. Each is a queue behind a file descriptor (FdQueue).
#include "provider_internal.h"

#include <sys/eventfd.h>

#include <cstring>
#include <new>
#include <optional>

namespace simnic::verbs {

using namespace detail;

namespace {

// ---- the event thread ----
// EQE event types 0x00-0x13 are ibv_event_type's values (hw-spec 8.2,
// verbs_abi.cc): dispatch() hands them to ibv_get_async_event unchanged.
void dispatch(SimContext& c, const hw::Eqe& e, DirectEvent* direct) {
    const auto type = static_cast<std::uint32_t>(e.event_type);
    const std::uint32_t obj = e.obj_num;
    if (e.event_type == hw::EventType::DeviceFatal) {
        device_fatal(c);  // takes obj_mu itself
        return;
    }
    std::lock_guard<std::mutex> lk(c.obj_mu);
    if (type == static_cast<std::uint32_t>(hw::EventType::Completion)) {
        auto it = c.cqs.find(obj);
        if (it == c.cqs.end() || it->second->channel == nullptr) return;
        SimChannel* ch = it->second->channel;
        // The first event for the channel that the calling ibv_get_cq_event
        // waits on, with nothing queued before it, goes straight to that
        // call: through the queue it would cost a write and a read of the
        // channel's eventfd for an event that is taken at once (another
        // thread polling the fd sees what it would see of a kernel channel
        // whose reader took the event first).
        if (direct != nullptr && direct->ch == ch && direct->got == nullptr) {
            std::lock_guard<std::mutex> q(ch->events.mu);
            if (ch->events.q.empty() && !ch->events.closed) {
                direct->got = it->second;
                return;
            }
        }
        ch->events.push(it->second);
        return;
    }
    if (type > static_cast<std::uint32_t>(hw::EventType::WqFatal)) return;  // CMD_COMPLETION
    if (e.event_type == hw::EventType::GidChange) {
        // The GID cache forgets the port's entries before the application
        // hears of the change: firmware posts the event before BAR0 shows
        // the new gid_gen (hw-spec 9.8), and a query made on the event must
        // not be answered from what the change made stale.
        std::lock_guard<std::mutex> g(c.gid_mu);
        c.gids.clear();
    }
    ibv_async_event ev;
    std::memset(&ev, 0, sizeof ev);
    ev.event_type = static_cast<ibv_event_type>(type);
    switch (ev.event_type) {
        case IBV_EVENT_CQ_ERR: {
            auto it = c.cqs.find(obj);
            if (it == c.cqs.end()) return;
            ev.element.cq = &it->second->cq;
            break;
        }
        case IBV_EVENT_QP_FATAL:
        case IBV_EVENT_QP_REQ_ERR:
        case IBV_EVENT_QP_ACCESS_ERR:
        case IBV_EVENT_COMM_EST:
        case IBV_EVENT_SQ_DRAINED:
        case IBV_EVENT_QP_LAST_WQE_REACHED: {
            auto it = c.qps.find(obj);
            if (it == c.qps.end()) return;
            ev.element.qp = &it->second->qpx.qp_base;
            break;
        }
        case IBV_EVENT_SRQ_ERR:
        case IBV_EVENT_SRQ_LIMIT_REACHED: {
            auto it = c.srqs.find(obj);
            if (it == c.srqs.end()) return;
            ev.element.srq = &it->second->srq;
            break;
        }
        case IBV_EVENT_PORT_ACTIVE:
        case IBV_EVENT_PORT_ERR:
        case IBV_EVENT_LID_CHANGE:
        case IBV_EVENT_PKEY_CHANGE:
        case IBV_EVENT_SM_CHANGE:
        case IBV_EVENT_CLIENT_REREGISTER:
        case IBV_EVENT_GID_CHANGE:
            ev.element.port_num = static_cast<int>(obj);
            break;
        case IBV_EVENT_DEVICE_FATAL:  // handled above
            return;
        default:
            return;  // PATH_MIG*, WQ_FATAL: no such objects here
    }
    c.async.push(ev);
}

// The context's interrupt thread. It also watches the daemon's connection:
// when that closes (the daemon died, or stopped after its DEVICE_FATAL), the
// device is gone, and the context learns it within one wake-up (fatal.cc).
void event_loop(SimContext* c) {
    const int hfd = c->hc->event_fd();
    if (hfd < 0) return;
    const int lost = c->hc->lost_fd();
    int away_ms = 0;  // 0: watching the interrupt
    bool ready = false;  // the last poll saw the interrupt
    for (;;) {
        // Before every sleep including the first: the thread may start long
        // after the context opened, with events already queued.
        take_events(*c, ready);
        if (c->fatal.load(std::memory_order_acquire)) return;
        // While threads wait in ibv_get_cq_event, leave the interrupt to
        // them: woken beside them on every interrupt, this thread would take
        // a core from them and from the engine. It looks again after 1 ms,
        // then after twice as long each time they still wait (up to 1 s: an
        // application blocked for long costs about nothing), and at once
        // when the last of them leaves after it looked away for longer than
        // the first 1 ms: events nobody waits for (async events, channels
        // polled with poll()) are late by 1 ms at most.
        const bool leave = c->irq_waiters.load(std::memory_order_seq_cst) > 0;
        away_ms = leave ? (away_ms == 0 ? 1 : std::min(away_ms * 2, 1000)) : 0;
        c->irq_far.store(away_ms > 1, std::memory_order_seq_cst);
        if (leave && c->irq_waiters.load(std::memory_order_seq_cst) == 0) continue;  // gone meanwhile
        pollfd p[4] = {{leave ? -1 : hfd, POLLIN, 0},
                       {c->stop_fd, POLLIN, 0},
                       {lost, POLLRDHUP, 0},
                       {c->irq_back_fd, POLLIN, 0}};
        [[maybe_unused]] const int n = ::poll(p, 4, leave ? away_ms : -1);
        if (p[1].revents != 0) return;
        ready = (p[0].revents & POLLIN) != 0;
        if (p[3].revents & POLLIN) {
            std::uint64_t v = 0;
            [[maybe_unused]] const ssize_t r = ::read(c->irq_back_fd, &v, sizeof v);
            // Called back by the last waiter to leave: the look-away starts
            // again at 1 ms. Kept at its long step, it left irq_far set, and
            // a waiter back within microseconds (an event-driven round trip)
            // called it back on every event: a wake-up of this thread, two
            // system calls and a wait on eq_mu per iteration.
            away_ms = 0;
        }
        if ((p[0].revents & (POLLERR | POLLHUP | POLLNVAL)) ||
            (lost >= 0 && (p[2].revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)))) {
            // What the device wrote before it went is still ours to read.
            take_events(*c);
            device_fatal(*c);
            return;
        }
    }
}

}  // namespace

bool detail::take_events(SimContext& c, bool irq_ready, DirectEvent* direct) {
    std::lock_guard<std::mutex> lk(c.eq_mu);
    // The interrupt first: one raised after this read (by an EQE after the
    // arm below) leaves event_fd() readable for the next wait. The driver
    // reads only when an interrupt came since its last read.
    c.hc->ack_interrupt(irq_ready);
    // Drain, arm, and drain again: an EQE written before the arm took effect
    // raised no interrupt (hw-spec 8.3: arming "at once if pi != ci" is the
    // driver's check). Repeat until arming finds the queue empty, so no
    // event waits for a later one to wake anyone.
    hw::Eqe e;
    bool any = false, found = true;
    while (found) {
        while (c.hc->next_event(e)) {
            dispatch(c, e, direct);
            any = true;
        }
        c.hc->arm_events();
        found = false;
        while (c.hc->next_event(e)) {
            dispatch(c, e, direct);
            any = found = true;
        }
    }
    return any;
}

int detail::start_events(SimContext& c) {
    c.async.fd = ::eventfd(0, EFD_CLOEXEC);
    c.stop_fd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    c.irq_back_fd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (c.async.fd < 0 || c.stop_fd < 0 || c.irq_back_fd < 0) {
        const int e = errno;
        for (int fd : {c.async.fd, c.stop_fd, c.irq_back_fd})
            if (fd >= 0) ::close(fd);
        c.async.fd = c.stop_fd = c.irq_back_fd = -1;
        return e;
    }
    if (c.hc->event_fd() < 0) return 0;  // no interrupt: no thread
    try {
        c.ev_thread = std::thread(event_loop, &c);
    } catch (...) {
        ::close(c.async.fd);
        ::close(c.stop_fd);
        ::close(c.irq_back_fd);
        c.async.fd = c.stop_fd = c.irq_back_fd = -1;
        return EAGAIN;
    }
    return 0;
}

void detail::stop_events(SimContext& c) {
    if (c.ev_thread.joinable()) {
        const std::uint64_t one = 1;
        [[maybe_unused]] const ssize_t w = ::write(c.stop_fd, &one, sizeof one);
        c.ev_thread.join();
    }
    if (c.stop_fd >= 0) ::close(c.stop_fd);
    if (c.async.fd >= 0) ::close(c.async.fd);
    if (c.irq_back_fd >= 0) ::close(c.irq_back_fd);
    c.stop_fd = c.async.fd = c.irq_back_fd = -1;
}

// Drops queued async events naming `match` (the object is being destroyed).
void detail::purge_async(SimContext& c, const void* match) {
    c.async.purge([match](const ibv_async_event& ev) {
        return static_cast<const void*>(ev.element.cq) == match ||
               static_cast<const void*>(ev.element.qp) == match ||
               static_cast<const void*>(ev.element.srq) == match;
    });
}

// ---------------------------------------------------------------------------
// Completion channels
// ---------------------------------------------------------------------------
ibv_comp_channel* create_comp_channel(ibv_context* ctx) {
    SimContext* c = sim(ctx);
    if (c == nullptr) {
        errno = EINVAL;
        return nullptr;
    }
    auto* ch = new (std::nothrow) SimChannel{};
    if (ch == nullptr) {
        errno = ENOMEM;
        return nullptr;
    }
    ch->events.fd = ::eventfd(0, EFD_CLOEXEC);
    if (ch->events.fd < 0) {
        const int e = errno;
        delete ch;
        errno = e;
        return nullptr;
    }
    ch->ctx = c;
    ch->ch.context = ctx;
    ch->ch.fd = ch->events.fd;
    ch->ch.refcnt = 0;
    std::lock_guard<std::mutex> lk(c->obj_mu);
    c->channels.insert(ch);
    // A channel made after the device went is closed from the start.
    if (c->fatal.load(std::memory_order_acquire)) ch->events.close_queue();
    return &ch->ch;
}

int destroy_comp_channel(ibv_comp_channel* channel) {
    if (channel == nullptr || sim(channel->context) == nullptr) return EINVAL;
    SimChannel* ch = channel_of(channel);
    {
        std::lock_guard<std::mutex> lk(ch->ctx->obj_mu);
        if (channel->refcnt != 0) return EBUSY;
        ch->ctx->channels.erase(ch);
    }
    ::close(ch->events.fd);
    delete ch;
    return 0;
}

int get_cq_event(ibv_comp_channel* channel, ibv_cq** cq, void** cq_context) {
    if (channel == nullptr || sim(channel->context) == nullptr) {
        errno = EINVAL;
        return -1;
    }
    SimChannel* ch = channel_of(channel);
    SimContext& c = *ch->ctx;
    const int hfd = c.hc->event_fd();
    SimCq* got = nullptr;
    int e;
    // The waiting thread takes the device's interrupt itself, as a kernel
    // driver's completion handler runs where the interrupt lands, instead
    // of waiting for the context's event thread to take it and then wake
    // this one: one wake-up per completion event instead of two, which on
    // a machine with fewer cores than busy threads is most of an event-
    // driven round trip. The event thread still takes what nobody waits for
    // (async events, channels polled with poll()), and whichever thread
    // comes second finds the EQ empty (take_events); while this one waits,
    // the event thread leaves the interrupt to it (event_loop).
    struct Waiting {
        SimContext& c;
        explicit Waiting(SimContext& cc) : c(cc) { c.irq_waiters.fetch_add(1, std::memory_order_seq_cst); }
        ~Waiting() {
            if (c.irq_waiters.fetch_sub(1, std::memory_order_seq_cst) == 1 &&
                c.irq_far.exchange(false, std::memory_order_seq_cst)) {
                const std::uint64_t one = 1;
                [[maybe_unused]] const ssize_t w = ::write(c.irq_back_fd, &one, sizeof one);
            }
        }
    };
    std::optional<Waiting> waiting;
    // The channel's O_NONBLOCK is read once per call, and only when the
    // call would block: a read(2) of a kernel channel looks at it once too.
    bool may_block = false, irq_ready = false;
    for (;;) {
        if ((e = ch->events.try_pop(got)) != EAGAIN) break;
        const bool irq = hfd >= 0 && !c.fatal.load(std::memory_order_acquire);
        if (irq) {
            // Events the device posted and nobody took yet (one that
            // arrived while this thread was away may not have interrupted).
            DirectEvent direct{ch, nullptr};
            take_events(c, irq_ready, &direct);
            if (direct.got != nullptr) {
                got = direct.got;
                e = 0;
                break;
            }
            if ((e = ch->events.try_pop(got)) != EAGAIN) break;
        }
        if (!may_block) {
            const int fl = ::fcntl(ch->events.fd, F_GETFL);
            if (fl >= 0 && (fl & O_NONBLOCK)) break;
            may_block = true;
        }
        if (irq && !waiting) waiting.emplace(c);
        pollfd p[2] = {{ch->events.fd, POLLIN, 0}, {hfd, POLLIN, 0}};
        if (::poll(p, irq ? 2 : 1, -1) < 0 && errno != EINTR) {
            e = errno;
            break;
        }
        irq_ready = irq && (p[1].revents & POLLIN) != 0;
    }
    if (e != 0) {
        errno = e;
        return -1;
    }
    if (cq) *cq = &got->cq;
    if (cq_context) *cq_context = got->cq.cq_context;
    return 0;
}

void ack_cq_events(ibv_cq* cq, unsigned int nevents) {
    if (cq == nullptr) return;
    pthread_mutex_lock(&cq->mutex);
    cq->comp_events_completed += nevents;
    pthread_cond_signal(&cq->cond);
    pthread_mutex_unlock(&cq->mutex);
}

// ---------------------------------------------------------------------------
// Async events
// ---------------------------------------------------------------------------
int get_async_event(ibv_context* ctx, ibv_async_event* event) {
    SimContext* c = sim(ctx);
    if (c == nullptr || event == nullptr) {
        errno = EINVAL;
        return -1;
    }
    const int e = c->async.pop(*event);
    if (e != 0) {
        errno = e;
        return -1;
    }
    return 0;
}

void ack_async_event(ibv_async_event* event) {
    if (event == nullptr) return;
    switch (event->event_type) {
        case IBV_EVENT_CQ_ERR: {
            ibv_cq* cq = event->element.cq;
            pthread_mutex_lock(&cq->mutex);
            ++cq->async_events_completed;
            pthread_cond_signal(&cq->cond);
            pthread_mutex_unlock(&cq->mutex);
            break;
        }
        case IBV_EVENT_QP_FATAL:
        case IBV_EVENT_QP_REQ_ERR:
        case IBV_EVENT_QP_ACCESS_ERR:
        case IBV_EVENT_COMM_EST:
        case IBV_EVENT_SQ_DRAINED:
        case IBV_EVENT_QP_LAST_WQE_REACHED: {
            ibv_qp* qp = event->element.qp;
            pthread_mutex_lock(&qp->mutex);
            ++qp->events_completed;
            pthread_cond_signal(&qp->cond);
            pthread_mutex_unlock(&qp->mutex);
            break;
        }
        case IBV_EVENT_SRQ_ERR:
        case IBV_EVENT_SRQ_LIMIT_REACHED: {
            ibv_srq* srq = event->element.srq;
            pthread_mutex_lock(&srq->mutex);
            ++srq->events_completed;
            pthread_cond_signal(&srq->cond);
            pthread_mutex_unlock(&srq->mutex);
            break;
        }
        default:
            break;
    }
}

const ibv_context* async_event_context(const ibv_async_event* event) {
    if (event == nullptr) return nullptr;
    switch (event->event_type) {
        case IBV_EVENT_CQ_ERR:
            return event->element.cq ? event->element.cq->context : nullptr;
        case IBV_EVENT_QP_FATAL:
        case IBV_EVENT_QP_REQ_ERR:
        case IBV_EVENT_QP_ACCESS_ERR:
        case IBV_EVENT_COMM_EST:
        case IBV_EVENT_SQ_DRAINED:
        case IBV_EVENT_PATH_MIG:
        case IBV_EVENT_PATH_MIG_ERR:
        case IBV_EVENT_QP_LAST_WQE_REACHED:
            return event->element.qp ? event->element.qp->context : nullptr;
        case IBV_EVENT_SRQ_ERR:
        case IBV_EVENT_SRQ_LIMIT_REACHED:
            return event->element.srq ? event->element.srq->context : nullptr;
        case IBV_EVENT_WQ_FATAL:
            return event->element.wq ? event->element.wq->context : nullptr;
        default:
            return nullptr;
    }
}

}  // namespace simnic::verbs
