#include "simnic/daemon/daemon.h"
#include "simnic/daemon/server.h"

#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <poll.h>
#include <signal.h>
#include <linux/rtnetlink.h>
#include <sys/epoll.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>
#include <arpa/inet.h>

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <map>
#include <memory>
#include <vector>

#include "cm_service.h"
#include "simnic/daemon/fabrics.h"
#include "simnic/control/persisted.h"
#include "simnic/control/protocol.h"
#include "simnic/control/resources.h"
#include "simnic/control/runtime.h"
#include "simnic/control/schema.h"

namespace simnic::daemon {

// The daemon is the server side of the control protocol.
using namespace simnic::control;

namespace {

void vlog(const char* fmt, va_list ap) {
    char ts[32];
    std::time_t t = std::time(nullptr);
    std::tm tm{};
    localtime_r(&t, &tm);
    std::strftime(ts, sizeof ts, "%F %T", &tm);
    std::fprintf(stderr, "%s simnicd[%d]: ", ts, getpid());
    std::vfprintf(stderr, fmt, ap);
    std::fputc('\n', stderr);
}

void logf(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
void logf(const char* fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vlog(fmt, ap);
    va_end(ap);
}

// A process's name (/proc/PID/comm), for the log and the state file.
std::string comm_of(pid_t pid) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/comm");
    std::string s;
    std::getline(in, s);
    return s;
}

}  // namespace

struct Server::Impl {
    Impl(const RuntimePaths& p, ServerOptions o) : paths_(p), opt_(std::move(o)) {}
    ~Impl();

    std::string start();
    int run_once(int timeout_ms);

    // One request being served: its connection, its checked fields, the
    // descriptors it carried (a handler that keeps one sets it to -1) and
    // those the reply carries (the daemon's own: not closed after sending).
    struct Call {
        int fd;
        const Request& req;
        std::vector<int>& in_fds;
        std::vector<int>& out_fds;
    };
    using Handler = Json (Impl::*)(Call&);

    void log(const char* fmt, ...) __attribute__((format(printf, 2, 3)));
    void accept_clients();
    void refuse(int fd, int err, const std::string& why);
    void serve(int fd);
    Json dispatch(int fd, RawMessage& m, std::vector<int>& out_fds);
    void drop(int fd);
    void drop_hung_up(const std::string& device);
    void stop_devices();
    void on_netdev_change();
    void save_state();

    Json ping(Call& c);
    Json shutdown(Call& c);
    Json link_add(Call& c);
    Json link_del(Call& c);
    Json link_show(Call& c);
    Json fabric_add(Call& c);
    Json fabric_del(Call& c);
    Json fabric_show(Call& c);
    Json fabric_hold(Call& c);
    template <typename F>
    Json fabric_series(Call& c, const char* key, F series);
    Json fabric_rates(Call& c);
    Json fabric_dcqcn(Call& c);
    Json fabric_depth(Call& c);
    DaemonFabric* fabric_named(const std::string& name);
    Json resource_counts(Call& c);
    Json resources(Call& c);
    Json stats(Call& c);
    Json trace(Call& c);
    Json open_context(Call& c);
    Json add_shm(Call& c);
    Json cm(Call& c);

    // A connection: the process at the other end (SO_PEERCRED at accept).
    struct Conn {
        pid_t pid = 0;
    };
    // A connection that opened a context belongs to it; its doorbell
    // eventfd is watched too.
    struct CtxBinding {
        std::string device;
        uint16_t ctx_id = 0;
        int db_fd = -1;
        pid_t pid = 0;
        std::string comm;
    };

    RuntimePaths paths_;
    ServerOptions opt_;
    int lock_fd_ = -1, listen_fd_ = -1, epoll_fd_ = -1, signal_fd_ = -1;
    // rtnetlink's link and address notifications: a netdev went up or down
    // or changed its addresses, and the devices on it follow (-1: none).
    int netlink_fd_ = -1;
    // Held open so that, out of descriptors, the daemon can still accept a
    // connection to tell its client so (accept4 fails with EMFILE while the
    // listening socket stays readable: without this, epoll would spin).
    int spare_fd_ = -1;
    std::map<int, Conn> clients_;
    std::map<pid_t, size_t> conns_of_pid_;
    DeviceTable devices_;
    // The host's CM for every device (before runtimes_: their engines call it).
    std::unique_ptr<CmService> cm_;
    // Fabrics (before runtimes_: their devices' pipelines live in them).
    std::map<std::string, std::unique_ptr<DaemonFabric>> fabrics_;
    std::map<std::string, std::unique_ptr<DeviceRuntime>> runtimes_;
    std::map<int, CtxBinding> ctx_of_conn_;  // client fd -> context
    std::map<int, int> conn_of_doorbell_;    // doorbell fd -> client fd
    bool stop_ = false;
    uint64_t internal_errors_ = 0;
};

void Server::Impl::log(const char* fmt, ...) {
    if (!opt_.log) return;
    va_list ap;
    va_start(ap, fmt);
    vlog(fmt, ap);
    va_end(ap);
}

Server::Impl::~Impl() {
    stop_devices();
    // Every engine stops before any device goes (a fabric's engines
    // simulate each other's devices).
    for (auto& [name, rt] : runtimes_) rt->stop_engine();
    runtimes_.clear();  // destroys every context first
    for (const auto& [fd, conn] : clients_) close(fd);
    if (listen_fd_ >= 0) {
        close(listen_fd_);
        unlink(paths_.socket.c_str());
        unlink(paths_.state.c_str());
    }
    for (int fd : {epoll_fd_, signal_fd_, spare_fd_, netlink_fd_})
        if (fd >= 0) close(fd);
    if (lock_fd_ >= 0) close(lock_fd_);  // releases the flock
}

// The device goes away with the daemon: every context is told by its device
// (a DEVICE_FATAL event) before its connection closes, which tells it again.
void Server::Impl::stop_devices() {
    for (auto& [name, rt] : runtimes_)
        if (rt->context_count() > 0) {
            log("device %s: telling %zu context(s) that it goes away", name.c_str(), rt->context_count());
            rt->device_fatal();
        }
}

std::string Server::Impl::start() {
    if (std::string m = ensure_runtime_dir(paths_); !m.empty()) return m;
    lock_fd_ = open(paths_.lock.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (lock_fd_ < 0) return "cannot open " + paths_.lock + ": " + std::strerror(errno);
    if (flock(lock_fd_, LOCK_EX | LOCK_NB) != 0)
        return "another simnic daemon is running (it holds " + paths_.lock + ")";

    // We hold the lock, so any socket file is a dead daemon's.
    unlink(paths_.socket.c_str());
    listen_fd_ = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (listen_fd_ < 0) return std::string("socket: ") + std::strerror(errno);
    sockaddr_un sa{};
    sa.sun_family = AF_UNIX;
    if (paths_.socket.size() >= sizeof sa.sun_path) return "socket path too long: " + paths_.socket;
    std::memcpy(sa.sun_path, paths_.socket.c_str(), paths_.socket.size());
    const mode_t old = umask(0077);
    const int rc = bind(listen_fd_, reinterpret_cast<sockaddr*>(&sa), sizeof sa);
    umask(old);
    if (rc != 0) return "cannot bind " + paths_.socket + ": " + std::strerror(errno);
    if (listen(listen_fd_, 64) != 0) return std::string("listen: ") + std::strerror(errno);

    epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
    spare_fd_ = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (epoll_fd_ < 0 || spare_fd_ < 0) return std::string("epoll: ") + std::strerror(errno);
    std::vector<int> watched = {listen_fd_};
    if (opt_.signals) {
        sigset_t mask;
        sigemptyset(&mask);
        sigaddset(&mask, SIGTERM);
        sigaddset(&mask, SIGINT);
        sigaddset(&mask, SIGHUP);
        sigprocmask(SIG_BLOCK, &mask, nullptr);
        signal(SIGPIPE, SIG_IGN);
        signal_fd_ = signalfd(-1, &mask, SFD_CLOEXEC);
        if (signal_fd_ < 0) return std::string("signalfd: ") + std::strerror(errno);
        watched.push_back(signal_fd_);
    }
    cm_ = std::make_unique<CmService>(opt_.max_cm_ids_per_channel);
    if (!cm_->ok()) return std::string("CM agent: ") + std::strerror(errno);
    watched.push_back(cm_->rx_fd());
    watched.push_back(cm_->timer_fd());
    // No privileges needed to listen; without it devices keep the netdev's
    // state of their creation, as before.
    netlink_fd_ = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK, NETLINK_ROUTE);
    if (netlink_fd_ >= 0) {
        sockaddr_nl nl{};
        nl.nl_family = AF_NETLINK;
        nl.nl_groups = RTMGRP_LINK | RTMGRP_IPV4_IFADDR | RTMGRP_IPV6_IFADDR;
        if (bind(netlink_fd_, reinterpret_cast<sockaddr*>(&nl), sizeof nl) == 0) {
            watched.push_back(netlink_fd_);
        } else {
            log("rtnetlink: %s (devices will not follow their netdev's changes)", std::strerror(errno));
            close(netlink_fd_);
            netlink_fd_ = -1;
        }
    }
    for (int fd : watched) {
        epoll_event ev{};
        ev.events = EPOLLIN;
        ev.data.fd = fd;
        epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev);
    }
    save_state();
    return {};
}

// What a client needs to know if this daemon dies: its pid, its devices, and
// the processes that have them open (simnic link add names what was lost).
void Server::Impl::save_state() {
    Json st{{"pid", getpid()}, {"devices", Json::array()}, {"contexts", Json::array()}};
    for (const Device* d : devices_.all()) st["devices"].push_back(d->name);
    for (const auto& [fd, b] : ctx_of_conn_)
        st["contexts"].push_back(Json{{"device", b.device}, {"pid", b.pid}, {"comm", b.comm}});
    const std::string tmp = paths_.state + ".tmp";
    {
        std::ofstream out(tmp, std::ios::trunc);
        out << st.dump(-1, ' ', false, Json::error_handler_t::replace) << "\n";
    }
    rename(tmp.c_str(), paths_.state.c_str());
}

int Server::Impl::run_once(int timeout_ms) {
    epoll_event evs[16];
    const int n = epoll_wait(epoll_fd_, evs, 16, timeout_ms);
    if (n < 0 && errno == EINTR) return 0;
    if (n < 0) {
        log("epoll_wait: %s", std::strerror(errno));
        return -1;
    }
    for (int i = 0; i < n; ++i) {
        const int fd = evs[i].data.fd;
        if (fd == listen_fd_) {
            accept_clients();
        } else if (fd == signal_fd_) {
            signalfd_siginfo si{};
            if (read(signal_fd_, &si, sizeof si) == sizeof si) log("signal %u: shutting down", si.ssi_signo);
            stop_ = true;
        } else if (fd == cm_->rx_fd()) {
            cm_->on_rx();
        } else if (fd == cm_->timer_fd()) {
            cm_->on_timer();
        } else if (fd == netlink_fd_) {
            on_netdev_change();
        } else if (auto db = conn_of_doorbell_.find(fd); db != conn_of_doorbell_.end()) {
            const CtxBinding& b = ctx_of_conn_.at(db->second);
            if (auto rt = runtimes_.find(b.device); rt != runtimes_.end()) rt->second->command_doorbell(b.ctx_id);
        } else if (!clients_.count(fd)) {
            // Dropped earlier in this round (a doorbell of the same context
            // cannot be: drop() removes it from the epoll set first).
        } else if (evs[i].events & (EPOLLHUP | EPOLLERR) && !(evs[i].events & EPOLLIN)) {
            drop(fd);
        } else {
            serve(fd);
        }
    }
    return n;
}

// Some netdev changed: which one does not matter (a few ioctls per device),
// and an overrun socket (ENOBUFS) means the same. Drain, then let every
// netdev-bound device read its netdev again.
void Server::Impl::on_netdev_change() {
    alignas(nlmsghdr) char buf[8192];
    while (recv(netlink_fd_, buf, sizeof buf, 0) > 0 || errno == ENOBUFS) {
    }
    for (auto& [name, rt] : runtimes_) rt->refresh_netdev();
}

void Server::Impl::refuse(int fd, int err, const std::string& why) {
    // The client reads this as the reply to its first request.
    send_message(fd, reply_error(err, why));
    close(fd);
}

void Server::Impl::accept_clients() {
    for (;;) {
        int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (fd < 0 && (errno == EMFILE || errno == ENFILE) && spare_fd_ >= 0) {
            close(spare_fd_);
            fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
            if (fd >= 0) {
                log("out of file descriptors: refusing a connection");
                refuse(fd, EMFILE, "the simnic daemon is out of file descriptors");
            }
            spare_fd_ = open("/dev/null", O_RDONLY | O_CLOEXEC);
            continue;
        }
        if (fd < 0) return;
        ucred cred{};
        socklen_t len = sizeof cred;
        if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) {
            close(fd);
            continue;
        }
        size_t& n = conns_of_pid_[cred.pid];
        if (n >= opt_.max_connections_per_process) {
            if (n == opt_.max_connections_per_process)
                log("process %d holds %zu connections: refusing more", cred.pid, n);
            refuse(fd, EMFILE, "process " + std::to_string(cred.pid) + " already holds " + std::to_string(n) +
                                   " connections to the simnic daemon (the most one process may)");
            continue;
        }
        ++n;
        widen_send_buffer(fd);  // for the long replies (message_capacity)
        epoll_event ev{};
        ev.events = EPOLLIN | EPOLLRDHUP;
        ev.data.fd = fd;
        epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev);
        clients_[fd] = Conn{cred.pid};
    }
}

void Server::Impl::drop(int fd) {
    // A client that went away, cleanly or killed: if it had opened a
    // context, everything in the context goes with it.
    if (auto it = ctx_of_conn_.find(fd); it != ctx_of_conn_.end()) {
        const CtxBinding b = it->second;
        epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, b.db_fd, nullptr);
        conn_of_doorbell_.erase(b.db_fd);
        ctx_of_conn_.erase(it);
        if (auto rt = runtimes_.find(b.device); rt != runtimes_.end()) {
            rt->second->close_context(b.ctx_id);
            log("context %u on %s closed", b.ctx_id, b.device.c_str());
        }
        save_state();
    }
    cm_->drop(fd);  // an event channel's IDs go with it
    epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr);
    if (auto c = clients_.find(fd); c != clients_.end()) {
        auto p = conns_of_pid_.find(c->second.pid);
        if (p != conns_of_pid_.end() && --p->second == 0) conns_of_pid_.erase(p);
        clients_.erase(c);
    }
    close(fd);
}

// The contexts on `device` whose process has gone but whose hang-up this
// daemon has not read yet: it waits in the epoll set, perhaps behind the
// request being served (`kill; wait; simnic link delete` raced it and was
// told the device was in use). Dropped now, as their turn would drop them.
void Server::Impl::drop_hung_up(const std::string& device) {
    std::vector<int> gone;
    for (const auto& [fd, b] : ctx_of_conn_) {
        if (b.device != device) continue;
        pollfd p{fd, POLLRDHUP, 0};
        if (poll(&p, 1, 0) == 1 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR))) gone.push_back(fd);
    }
    for (int fd : gone) drop(fd);
}

void Server::Impl::serve(int fd) {
    RawMessage m;
    const int e = recv_raw(fd, m, 0);
    if (e == ETIMEDOUT || e == EAGAIN) {  // nothing after all
        for (int f : m.fds) close(f);
        return;
    }
    if (e != 0) {  // closed (or an empty message, which looks the same), or broken
        for (int f : m.fds) close(f);
        drop(fd);
        return;
    }
    std::vector<int> out_fds;
    Json reply;
    // The last resort: validation runs before every handler, so nothing
    // below should throw. Should it, the client gets an error, the daemon
    // logs it and serves on; a test that gets here has found a bug.
    try {
        reply = dispatch(fd, m, out_fds);
    } catch (const std::exception& ex) {
        ++internal_errors_;
        log("BUG: a request from pid %d threw: %s", clients_.count(fd) ? clients_[fd].pid : 0, ex.what());
        reply = reply_error(EIO, "internal error in the simnic daemon (logged)");
        out_fds.clear();
    } catch (...) {
        ++internal_errors_;
        log("BUG: a request from pid %d threw", clients_.count(fd) ? clients_[fd].pid : 0);
        reply = reply_error(EIO, "internal error in the simnic daemon (logged)");
        out_fds.clear();
    }
    // Descriptors no handler kept are not kept.
    for (int f : m.fds)
        if (f >= 0) close(f);
    if (!clients_.count(fd)) return;
    std::string err = send_message(fd, reply, out_fds);
    if (err == "message too large") {
        // A reply the protocol cannot carry is a bug of the daemon's bounds:
        // the client is told so, not cut off.
        ++internal_errors_;
        const size_t room = message_capacity(fd);
        log("BUG: a reply to pid %d is longer than its connection carries (%zu bytes)", clients_[fd].pid, room);
        err = send_message(fd, reply_error(EMSGSIZE, "the reply is longer than the connection carries (" +
                                                         std::to_string(room) +
                                                         " bytes): a simnic daemon bug, logged"));
    }
    // A client that does not read its replies fills its socket: drop it.
    if (!err.empty()) drop(fd);
}

Json Server::Impl::dispatch(int fd, RawMessage& m, std::vector<int>& out_fds) {
    if (m.too_long)
        return reply_error(EMSGSIZE, "the request is longer than " + std::to_string(kMaxMessageBytes) + " bytes");
    if (m.too_many_fds)
        return reply_error(EINVAL, "the request carries more than " + std::to_string(kMaxFdsPerMessage) +
                                       " file descriptors");
    Json msg;
    if (std::string why = parse_message(m.bytes, msg); !why.empty()) return reply_error(EINVAL, why);
    std::string why;
    int err = 0;
    const OpSpec* op = check_request(msg, m.fds.size(), why, err);
    if (!op) return reply_error(err, why);
    const Request req(msg, *op);
    Call c{fd, req, m.fds, out_fds};
    if (req.op().rfind("cm_", 0) == 0) return cm(c);
    static const std::map<std::string_view, Handler> kHandlers = {
        {"ping", &Impl::ping},
        {"shutdown", &Impl::shutdown},
        {"link_add", &Impl::link_add},
        {"link_del", &Impl::link_del},
        {"link_show", &Impl::link_show},
        {"fabric_add", &Impl::fabric_add},
        {"fabric_del", &Impl::fabric_del},
        {"fabric_show", &Impl::fabric_show},
        {"fabric_hold", &Impl::fabric_hold},
        {"fabric_rates", &Impl::fabric_rates},
        {"fabric_dcqcn", &Impl::fabric_dcqcn},
        {"fabric_depth", &Impl::fabric_depth},
        {"resource_counts", &Impl::resource_counts},
        {"resources", &Impl::resources},
        {"stats", &Impl::stats},
        {"trace", &Impl::trace},
        {"open_context", &Impl::open_context},
        {"add_shm", &Impl::add_shm},
    };
    auto h = kHandlers.find(req.op());
    if (h == kHandlers.end()) return reply_error(EOPNOTSUPP, "no handler for '" + std::string(req.op()) + "'");
    return (this->*(h->second))(c);
}

// The daemon's heap as the allocator sees it, over all its arenas: the bytes
// of live allocations (`heap_in_use`), and what the allocator holds from the
// kernel for them (`heap_held`). The resident set cannot tell a leak from
// freed memory the allocator keeps: a burst (a go-back-N of a full window
// through a model device's pipeline holds hundreds of frames at once) raises
// it for good, while heap_in_use falls back when the burst is over. The soak
// checks that heap_in_use does not grow, and `simnic doctor` shows it.
static Json heap_figures() {
    const struct mallinfo2 m = mallinfo2();
    return Json{{"heap_in_use", uint64_t(m.uordblks + m.hblkhd)}, {"heap_held", uint64_t(m.arena + m.hblkhd)}};
}

Json Server::Impl::ping(Call&) {
    Json r{{"ok", true}, {"pid", getpid()}, {"version", kVersion}};
    r.update(heap_figures());
    return r;
}

Json Server::Impl::shutdown(Call&) {
    stop_ = true;
    return reply_ok();
}

Json Server::Impl::cm(Call& c) { return cm_->handle(c.fd, c.req); }

Json Server::Impl::resource_counts(Call& c) {
    const std::string& name = c.req.str("device");
    auto rt = runtimes_.find(name);
    if (rt == runtimes_.end()) return reply_error(ENODEV, "no device " + name);
    const DeviceRuntime::Counts n = rt->second->counts();
    Json r = reply_ok();
    r["qps"] = n.qps;
    r["cqs"] = n.cqs;
    r["mrs"] = n.mrs;
    r["pds"] = n.pds;
    r["srqs"] = n.srqs;
    r["ahs"] = n.ahs;
    r["mws"] = n.mws;
    r["contexts"] = rt->second->context_count();
    return r;
}

// The bytes a reply on `fd` may hold besides `reserved` of its own keys
// (message_capacity is already bounded by the protocol's kMaxMessageBytes).
static size_t reply_room(int fd, size_t reserved) {
    const size_t cap = message_capacity(fd);
    return cap - std::min(cap, reserved);
}

// A device with congestion control on lists every RC QP's reaction point,
// which for thousands of QPs is more than one reply carries: the list comes
// in pages, the first with the counters, each later one ("qps_after", the
// last QPN the client has) with the list's next part alone; "more_after"
// says there is more.
Json Server::Impl::stats(Call& c) {
    const std::string& name = c.req.str("device");
    auto rt = runtimes_.find(name);
    if (rt == runtimes_.end()) return reply_error(ENODEV, "no device " + name);
    const bool later_page = c.req.has("qps_after");
    const uint64_t after = c.req.uint("qps_after");
    Json r = reply_ok();
    if (!later_page) {
        Json st = Json::object();
        for (const auto& [counter, v] : rt->second->stats()) st[counter] = v;
        r["stats"] = st;
    }
    // Congestion control: on or off, and each QP's reaction point (in QPN
    // order).
    Json cc = Json::array();
    for (const soft_engine::QpCongestionStats& q : rt->second->congestion_stats())
        if (!later_page || q.qpn > after)
            cc.push_back(Json{{"qpn", q.qpn},
                          {"rate_gbps", q.rate_bps / 1e9},
                          {"target_rate_gbps", q.target_rate_bps / 1e9},
                          {"alpha", q.alpha},
                          {"rate_limited", q.rate_limited},
                          {"rate_limited_us", double(q.counters.rate_limited_ns) / 1e3},
                          {"cnps_received", q.counters.cnps_received},
                          {"fast_recovery_steps", q.counters.fast_recovery_steps},
                          {"additive_steps", q.counters.additive_steps},
                          {"hyper_steps", q.counters.hyper_steps}});
    r["congestion"] = Json{{"enabled", rt->second->congestion_on()}, {"qps", Json::array()}};
    if (!later_page) {
        // A model device adds its pipeline's figures, in simulated time.
        Json model = Json::array();
        // "reset": the model's figures start again (read and reset at once).
        for (const model::ModelStat& m : rt->second->model_stats(c.req.flag("reset")))
            model.push_back(Json{{"name", m.name}, {"value", m.value}, {"unit", m.unit}});
        if (!model.empty()) {
            r["model"] = model;
            r["trace"] = rt->second->trace_state();
        }
    }
    // What the rest of the reply leaves of the connection's room (less a
    // margin, and room for "more_after").
    const size_t n = control::entries_that_fit(cc, reply_room(c.fd, r.dump().size() + 1024));
    if (n < cc.size()) {
        r["congestion"]["more_after"] = cc[n - 1]["qpn"];
        cc.erase(cc.begin() + static_cast<std::ptrdiff_t>(n), cc.end());
    }
    r["congestion"]["qps"] = std::move(cc);
    return r;
}

Json Server::Impl::link_add(Call& c) {
    const Request& q = c.req;
    Device d;
    d.name = q.str("name");
    if (!parse_type(q.str("type"), d.type))
        return reply_error(EINVAL, "unknown device type '" + q.str("type") + "' (soft or model)");
    if (q.has("netdev") == q.has("wire")) return reply_error(EINVAL, "link_add needs netdev or wire (not both)");
    if (q.has("netdev")) {
        d.netdev = q.str("netdev");
        for (const char* k : {"addr", "mac", "mtu"})
            if (q.has(k))
                return reply_error(EINVAL, std::string("'") + k + "' applies to a device on a wire (a netdev has its own)");
    } else {
        // The addresses come as one comma-separated field (the schema has no
        // lists), in the order `simnic link add` was given them.
        std::vector<std::string> addrs;
        std::string a;
        for (char ch : q.str("addr") + ",") {
            if (ch != ',') {
                a += ch;
            } else if (!a.empty()) {
                addrs.push_back(a);
                a.clear();
            }
        }
        if (std::string m = parse_wire_attach(d.name, q.str("wire"), addrs, q.str("mac"), q.str("mtu"), d.wire);
            !m.empty())
            return reply_error(EINVAL, m);
        // Nothing else answers for the device's addresses on a wire: its
        // frames to itself take rxe's shortcut, always.
        d.loopback = true;
    }
    d.pcap = q.str("pcap");
    if (q.has("loopback")) {
        const std::string& v = q.str("loopback");
        if (v != "on" && v != "off") return reply_error(EINVAL, "loopback must be on or off");
        if (d.wire.on() && v == "off")
            return reply_error(EINVAL, "a device on a wire always short-cuts frames to itself (loopback on), as rxe does");
        d.loopback = d.loopback || v == "on";
    }
    if (q.has("ack_hold_us")) {
        unsigned long us = 0;
        if (!parse_uint(q.str("ack_hold_us"), Device::kMaxAckHoldUs, us))
            return reply_error(EINVAL, "ack_hold_us must be 0 to " + std::to_string(Device::kMaxAckHoldUs) +
                                           " (microseconds an ACK may wait for its flow's reply; 0: never)");
        d.ack_hold_us = unsigned(us);
    }
    if (q.has("config")) {
        // A model device's whole configuration; a soft device's [congestion]
        // table (DeviceRuntime::create checks which).
        d.config_path = q.str("config");
        d.config_text = q.str("config_text");
    }
    int e = 0;
    if (std::string m = devices_.add(d, e); !m.empty()) return reply_error(e, m);
    std::string err;
    auto rt = opt_.make_device ? opt_.make_device(d, err, cm_->gsi_handler(d.name))
                               : DeviceRuntime::create(d, err, cm_->gsi_handler(d.name));
    if (!rt) {
        devices_.remove(d.name, e);
        return reply_error(EIO, "cannot create device " + d.name + ": " + err);
    }
    cm_->add_device(d.name, rt.get());
    runtimes_[d.name] = std::move(rt);
    log("device %s (%s) added on %s", d.name.c_str(), type_name(d.type),
        d.wire.on() ? ("wire " + d.wire.endpoint).c_str() : d.netdev.c_str());
    save_state();
    return reply_ok();
}

Json Server::Impl::link_del(Call& c) {
    const std::string& name = c.req.str("name");
    if (const Device* d = devices_.find(name); d && d->fabric.on())
        return reply_error(EBUSY, "device " + name + " is host " + d->fabric.host_name + " of fabric " +
                                      d->fabric.fabric + " (simnic fabric delete " + d->fabric.fabric + ")");
    drop_hung_up(name);
    if (auto rt = runtimes_.find(name); rt != runtimes_.end() && rt->second->context_count() > 0)
        return reply_error(EBUSY, "device " + name + " is in use by " + std::to_string(rt->second->context_count()) +
                                      " open context(s)");
    int e = 0;
    if (std::string m = devices_.remove(name, e); !m.empty()) return reply_error(e, m);
    cm_->remove_device(name);
    runtimes_.erase(name);
    log("device %s deleted", name.c_str());
    save_state();
    return reply_ok();
}

// A fabric and a model device per host (fabrics.h). Every device is
// checked before anything is built; on a failure what was built goes.
Json Server::Impl::fabric_add(Call& c) {
    const Request& q = c.req;
    const std::string& name = q.str("name");
    if (fabrics_.count(name)) return reply_error(EEXIST, "fabric " + name + " already exists");
    std::string err;
    std::unique_ptr<DaemonFabric> f =
        DaemonFabric::create(name, q.str("topology"), q.str("topology_text"), q.str("config"), q.str("config_text"),
                             q.str("pcap"), err);
    if (!f) return reply_error(EINVAL, err);
    for (const Device& d : f->devices())
        if (devices_.find(d.name)) return reply_error(EEXIST, "device " + d.name + " already exists");
    std::vector<std::string> made;
    auto undo = [&] {
        int e = 0;
        for (const std::string& n : made) runtimes_[n]->stop_engine();
        for (const std::string& n : made) {
            cm_->remove_device(n);
            runtimes_.erase(n);
            devices_.remove(n, e);
        }
    };
    DeviceRuntime::Options opt;
    opt.fabric = f->fabric();
    opt.group = f->group();
    for (const Device& d : f->devices()) {
        int e = 0;
        if (std::string m = devices_.add(d, e); !m.empty()) {
            undo();
            return reply_error(e, m);
        }
        opt.rp_observer = f->rp_observer(d.fabric.host);
        auto rt = DeviceRuntime::create(d, err, cm_->gsi_handler(d.name), opt);
        if (!rt) {
            devices_.remove(d.name, e);
            undo();
            return reply_error(EINVAL, "cannot create device " + d.name + ": " + err);
        }
        cm_->add_device(d.name, rt.get());
        runtimes_[d.name] = std::move(rt);
        made.push_back(d.name);
    }
    if (!f->start(err)) {
        undo();
        return reply_error(EIO, "cannot start fabric " + name + ": " + err);
    }
    log("fabric %s added from %s: %zu devices", name.c_str(), q.str("topology").c_str(), made.size());
    fabrics_[name] = std::move(f);
    save_state();
    Json r = reply_ok();
    Json devs = Json::array();
    for (const std::string& n : made) devs.push_back(n);
    r["devices"] = devs;
    return r;
}

Json Server::Impl::fabric_del(Call& c) {
    const std::string& name = c.req.str("name");
    auto f = fabrics_.find(name);
    if (f == fabrics_.end()) return reply_error(ENODEV, "no fabric " + name);
    for (const Device& d : f->second->devices()) drop_hung_up(d.name);
    for (const Device& d : f->second->devices())
        if (auto rt = runtimes_.find(d.name); rt != runtimes_.end() && rt->second->context_count() > 0)
            return reply_error(EBUSY, "device " + d.name + " of fabric " + name + " is in use by " +
                                          std::to_string(rt->second->context_count()) + " open context(s)");
    // The devices first (their pipelines live in the fabric's context),
    // every engine stopped before any goes.
    for (const Device& d : f->second->devices()) runtimes_[d.name]->stop_engine();
    for (const Device& d : f->second->devices()) {
        int e = 0;
        cm_->remove_device(d.name);
        runtimes_.erase(d.name);
        devices_.remove(d.name, e);
    }
    fabrics_.erase(f);
    log("fabric %s deleted", name.c_str());
    save_state();
    return reply_ok();
}

Json Server::Impl::fabric_show(Call& c) {
    const std::string& name = c.req.str("name");
    Json list = Json::array();
    if (!name.empty()) {
        const DaemonFabric* f = fabric_named(name);
        if (!f) return reply_error(ENODEV, "no fabric " + name);
        list.push_back(f->show());
    } else {
        for (const auto& [n, f] : fabrics_) list.push_back(f->show());
    }
    Json r = reply_ok();
    r["fabrics"] = list;
    return r;
}

DaemonFabric* Server::Impl::fabric_named(const std::string& name) {
    auto f = fabrics_.find(name);
    return f == fabrics_.end() ? nullptr : f->second.get();
}

// `simnic fabric hold|release NAME`: its simulated time stands still, or
// goes on (fabrics.h). Not kept: a fabric created again starts running.
Json Server::Impl::fabric_hold(Call& c) {
    const std::string& name = c.req.str("name");
    DaemonFabric* f = fabric_named(name);
    if (!f) return reply_error(ENODEV, "no fabric " + name);
    const bool on = c.req.flag("hold");
    bool was = false;
    const double us = f->hold(on, was);
    log("fabric %s %s at %.3f us simulated", name.c_str(), on ? "held" : "released", us);
    Json r = reply_ok();
    r["simulated_us"] = us;
    r["was_held"] = was;
    return r;
}

// `simnic fabric rates|depth|dcqcn NAME [bin-us N]` (fabrics.h): the
// fabric's series in the reply's `key`, from `series(fabric, bin_us)`.
template <typename F>
Json Server::Impl::fabric_series(Call& c, const char* key, F series) {
    const std::string& name = c.req.str("name");
    DaemonFabric* f = fabric_named(name);
    if (!f) return reply_error(ENODEV, "no fabric " + name);
    // Room for the reply's own keys around the series.
    Json r = reply_ok();
    r[key] = DaemonFabric::fit(reply_room(c.fd, 256), c.req.uint("bin_us", DaemonFabric::kRateBinUs),
                               [&](uint64_t bin_us) { return series(*f, bin_us); });
    return r;
}

Json Server::Impl::fabric_rates(Call& c) {
    return fabric_series(c, "rates", [](const DaemonFabric& f, uint64_t bin_us) { return f.rates(bin_us); });
}

Json Server::Impl::fabric_depth(Call& c) {
    return fabric_series(c, "depth", [](const DaemonFabric& f, uint64_t bin_us) { return f.depth(bin_us); });
}

// Reading each device's reaction points brings their timers to the
// fabric's time first.
Json Server::Impl::fabric_dcqcn(Call& c) {
    return fabric_series(c, "dcqcn", [&](const DaemonFabric& f, uint64_t bin_us) {
        return f.dcqcn(bin_us, [&] {
            for (const Device& d : f.devices())
                if (auto rt = runtimes_.find(d.name); rt != runtimes_.end()) rt->second->congestion_stats();
        });
    });
}

Json Server::Impl::link_show(Call& c) {
    Json links = Json::array();
    const std::string& name = c.req.str("name");
    if (!name.empty()) {
        const Device* d = devices_.find(name);
        if (!d) return reply_error(ENODEV, "no device " + name);
        links.push_back(DeviceTable::link_json(*d));
    } else {
        for (const Device* d : devices_.all()) links.push_back(DeviceTable::link_json(*d));
    }
    Json r = reply_ok();
    r["links"] = links;
    return r;
}

// A context's process shares a sealed memfd (its queue memory, hw-spec 1.3
// SHM domains). The descriptor is taken from in_fds (set to -1) when used.
Json Server::Impl::add_shm(Call& c) {
    auto b = ctx_of_conn_.find(c.fd);
    if (b == ctx_of_conn_.end()) return reply_error(EINVAL, "add_shm: this connection holds no context");
    auto rt = runtimes_.find(b->second.device);
    if (rt == runtimes_.end()) return reply_error(ENODEV, "no device " + b->second.device);
    if (rt->second->shm_count(b->second.ctx_id) >= opt_.max_shm_per_context)
        return reply_error(ENOSPC, "add_shm: the context already holds " + std::to_string(opt_.max_shm_per_context) +
                                       " memory objects (the most one may)");
    uint32_t handle = 0;
    int e = 0;
    std::string err;
    const int mfd = c.in_fds[0];
    c.in_fds[0] = -1;
    if (!rt->second->add_shm(b->second.ctx_id, mfd, c.req.uint("size"), handle, err, e))
        return reply_error(e, "add_shm: " + err);
    Json r = reply_ok();
    r["handle"] = handle;
    return r;
}

// `simnic trace NAME vcd|fst FILE [--from C --cycles N]`, and `stop`.
Json Server::Impl::trace(Call& c) {
    const Request& q = c.req;
    auto rt = runtimes_.find(q.str("device"));
    if (rt == runtimes_.end()) return reply_error(ENODEV, "no device " + q.str("device"));
    if (q.flag("stop")) {
        rt->second->trace_stop();
        Json r = reply_ok();
        r["trace"] = rt->second->trace_state();
        return r;
    }
    std::string err;
    std::optional<uint64_t> from;  // absent: now
    if (q.has("from")) from = q.uint("from");
    if (!rt->second->trace(q.str("file"), q.str("format"), from, q.uint("cycles"), err))
        return reply_error(EINVAL, err);
    Json r = reply_ok();
    r["trace"] = rt->second->trace_state();
    return r;
}

// One batch as JSON (control::ResourceDevice): the runtime's listing of a
// range is already the `limit` smallest numbers after the cursor
// (DeviceRuntime::Range, down to the firmware's ordered sets), so a page deep
// into a list of 100,000 MRs costs the page's entries, not the list's.
template <class Info, class ToJson>
static Json resource_batch(const std::vector<Info>& infos, ToJson to_json) {
    Json out = Json::array();
    for (const Info& i : infos) out.push_back(to_json(i));
    return out;
}

// One batch of a device's list (control::ResourceDevice's `list`). Field
// names as iproute2's `rdma resource show` prints them. GIDs (a table of a
// few entries) and CM IDs come whole, which the pager takes.
static Json resource_list(DeviceRuntime& rt, CmService& cm, const std::string& name, std::string_view list,
                          std::optional<uint64_t> after, size_t limit) {
    using R = DeviceRuntime;
    // Object numbers are 32 bits wide: nothing comes after a larger cursor.
    if (after && *after > UINT32_MAX) return Json::array();
    const R::Range range{after ? std::optional<uint32_t>(static_cast<uint32_t>(*after)) : std::nullopt, limit};
    if (list == "qp_list")
        return resource_batch(
            rt.qps(range),
            [](const R::QpInfo& q) {
                return Json{{"qpn", q.qpn},       {"type", q.type},         {"state", q.state}, {"sq_psn", q.sq_psn},
                            {"rq_psn", q.rq_psn}, {"dest_qpn", q.dest_qpn}, {"pid", q.pid}};
            });
    if (list == "cq_list")
        return resource_batch(
            rt.cqs(range),
            [](const R::CqInfo& q) {
                return Json{{"cqn", q.cqn}, {"cqe", q.cqe}, {"users", q.users}, {"ctxn", q.ctx_id}, {"pid", q.pid}};
            });
    if (list == "mr_list")
        return resource_batch(
            rt.mrs(range),
            [](const R::MrInfo& m) {
                return Json{{"mrn", m.mrn},      {"rkey", m.key}, {"lkey", m.key},    {"iova", m.iova},
                            {"mrlen", m.length}, {"pdn", m.pdn},  {"ctxn", m.ctx_id}, {"pid", m.pid}};
            });
    if (list == "mw_list")
        return resource_batch(
            rt.mws(range),
            [](const R::MwInfo& w) {
                return Json{{"mwn", w.mwn}, {"rkey", w.rkey},     {"type", w.type}, {"state", w.state},
                            {"pdn", w.pdn}, {"mr_key", w.mr_key}, {"addr", w.addr}, {"length", w.length},
                            {"qpn", w.qpn}, {"ctxn", w.ctx_id},   {"pid", w.pid}};
            });
    if (list == "pd_list")
        return resource_batch(
            rt.pds(range),
            [](const R::PdInfo& p) {
                return Json{{"pdn", p.pdn}, {"users", p.users}, {"ctxn", p.ctx_id}, {"pid", p.pid}};
            });
    if (list == "srq_list")
        return resource_batch(
            rt.srqs(range),
            [](const R::SrqInfo& q) {
                return Json{{"srqn", q.srqn},       {"lqpn", q.qpns},   {"pdn", q.pdn},     {"max_wr", q.max_wr},
                            {"max_sge", q.max_sge}, {"limit", q.limit}, {"ctxn", q.ctx_id}, {"pid", q.pid}};
            });
    Json out = Json::array();
    if (list == "gids") {
        for (const auto& [idx, g] : rt.gids()) {
            char buf[INET6_ADDRSTRLEN] = {};
            inet_ntop(AF_INET6, g.data(), buf, sizeof buf);
            out.push_back(Json{{"index", idx}, {"gid", buf}});
        }
    } else if (list == "cm_id_list") {
        out = cm.cm_id_list(name);
    }
    return out;
}

// A device may hold more objects than one reply carries: the answer comes
// in pages as long as the connection carries (control/resources.h).
Json Server::Impl::resources(Call& call) {
    const std::string& only = call.req.str("device");
    if (!only.empty() && !runtimes_.count(only)) return reply_error(ENODEV, "no device " + only);
    std::string err;
    std::optional<std::string_view> want;
    if (call.req.has("lists")) want = call.req.str("lists");
    const auto lists = control::resource_lists_of(want, err);
    if (!lists) return reply_error(EINVAL, err);
    Json after;
    if (call.req.has("after")) {
        const Request a = call.req.object("after");
        after = Json{{"device", a.str("device")}, {"list", a.str("list")}, {"key", a.uint("key")}};
    }
    std::vector<control::ResourceDevice> devs;
    for (const auto& [name, rt] : runtimes_) {
        if (!only.empty() && name != only) continue;
        const DeviceRuntime::Counts c = rt->counts();
        DeviceRuntime* r = rt.get();
        devs.push_back({name,
                        Json{{"qps", c.qps}, {"cqs", c.cqs}, {"mrs", c.mrs}, {"pds", c.pds}, {"srqs", c.srqs},
                             {"ahs", c.ahs}, {"mws", c.mws}, {"contexts", rt->context_count()}},
                        [this, r, n = name](std::string_view list, std::optional<uint64_t> key, size_t limit) {
                            return resource_list(*r, *cm_, n, list, key, limit);
                        }});
    }
    // The room a reply has, less a margin for what the pager does not
    // count exactly (the frame's "ok").
    Json r = control::resource_page(std::move(devs), *lists, after, reply_room(call.fd, 1024));
    r["ok"] = true;
    return r;
}

Json Server::Impl::open_context(Call& c) {
    if (ctx_of_conn_.count(c.fd)) return reply_error(EBUSY, "this connection already holds a context");
    const std::string& name = c.req.str("device");
    auto rt = runtimes_.find(name);
    if (rt == runtimes_.end()) return reply_error(ENODEV, "no device " + name);
    // The process is who the kernel says is on the other end, not who the
    // message claims to be.
    ucred cred{};
    socklen_t len = sizeof cred;
    if (getsockopt(c.fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0)
        return reply_error(errno, std::string("SO_PEERCRED: ") + std::strerror(errno));
    DeviceRuntime::OpenedContext oc;
    std::string err;
    int e = 0;
    if (!rt->second->open_context(static_cast<uint32_t>(cred.pid), oc, err, e)) return reply_error(e, err);
    ctx_of_conn_[c.fd] = CtxBinding{name, oc.ctx_id, oc.db_fd, cred.pid, comm_of(cred.pid)};
    conn_of_doorbell_[oc.db_fd] = c.fd;
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = oc.db_fd;
    epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, oc.db_fd, &ev);
    c.out_fds = {oc.page_fd, oc.bar_fd, oc.irq_fd, oc.db_fd, oc.engine_fd};
    log("context %u on %s opened by pid %d", oc.ctx_id, name.c_str(), cred.pid);
    save_state();
    Json r = reply_ok();
    r["ctx_id"] = oc.ctx_id;
    r["boot_domain"] = oc.boot_domain;
    r["daemon_pid"] = getpid();
    return r;
}

// ---------------------------------------------------------------------------
// Server
// ---------------------------------------------------------------------------
Server::Server(const RuntimePaths& paths, ServerOptions opt) : impl_(std::make_unique<Impl>(paths, std::move(opt))) {}
Server::~Server() = default;
std::string Server::start() { return impl_->start(); }

control::Json Server::add_kept(const control::Json& kept) {
    std::string why;
    int err = 0;
    const std::string o = kept.value("op", "");
    if (o != "link_add" && o != "fabric_add") return reply_error(EINVAL, "not a link_add or fabric_add request");
    const OpSpec* op = check_request(kept, 0, why, err);
    if (!op) return reply_error(err, why);
    const Request req(kept, *op);
    std::vector<int> none_in, none_out;
    Impl::Call c{-1, req, none_in, none_out};
    return o == "link_add" ? impl_->link_add(c) : impl_->fabric_add(c);
}
int Server::run_once(int timeout_ms) { return impl_->run_once(timeout_ms); }
bool Server::stop_requested() const { return impl_->stop_; }
std::uint64_t Server::internal_errors() const { return impl_->internal_errors_; }
std::size_t Server::connections() const { return impl_->clients_.size(); }

int Server::loop() {
    while (!impl_->stop_)
        if (impl_->run_once(-1) < 0) return 1;
    return 0;
}

namespace {

// Every connection and context costs the daemon descriptors: take what the
// hard limit allows, so that the per-process connection cap, not the
// default soft limit of 1024, is what a busy client meets.
void raise_fd_limit() {
    rlimit rl{};
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
}

}  // namespace

int run_daemon(const DaemonOptions& opt, int ready_fd) {
    const RuntimePaths paths = runtime_paths();
    if (!paths.error.empty()) {
        std::fprintf(stderr, "simnic daemon: %s\n", paths.error.c_str());
        return 1;
    }
    if (!opt.foreground) {
        // Detached: stdio goes to the log file in the runtime directory.
        if (ensure_runtime_dir(paths).empty()) {
            const std::string log = paths.dir + "/simnicd.log";
            int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
            int nul = open("/dev/null", O_RDWR | O_CLOEXEC);
            if (fd >= 0 && nul >= 0) {
                dup2(nul, 0);
                dup2(fd, 1);
                dup2(fd, 2);
            }
            if (fd > 2) close(fd);
            if (nul > 2) close(nul);
        }
    }
    raise_fd_limit();
    ServerOptions so;
    so.signals = true;
    Server d(paths, so);
    if (std::string m = d.start(); !m.empty()) {
        logf("%s", m.c_str());
        if (opt.foreground) std::fprintf(stderr, "simnic daemon: %s\n", m.c_str());
        return 1;
    }
    logf("listening on %s", paths.socket.c_str());
    // The kept devices and fabrics (`simnic link add ... persist`, `simnic
    // fabric add ... persist`), in the order kept, before the daemon says it
    // is ready, so that the command that started it finds them. One that
    // cannot be created again is logged and the others still come.
    std::string bad;
    for (const control::Json& req : control::load_persisted(bad)) {
        const control::Json r = d.add_kept(req);
        const std::string name = req.value("name", "");
        const char* what = req.value("op", "") == "fabric_add" ? "fabric" : "device";
        if (!r.value("ok", false)) {
            logf("kept %s %s not created: %s", what, name.c_str(), r.value("error", std::string("?")).c_str());
            continue;
        }
        std::string devs;  // a fabric's devices, named as before (from the kept topology's hosts)
        for (const control::Json& n : r.value("devices", control::Json::array())) devs += " " + n.get<std::string>();
        logf("kept %s %s created again%s%s", what, name.c_str(), devs.empty() ? "" : ":", devs.c_str());
    }
    if (!bad.empty()) logf("%s", bad.c_str());
    if (ready_fd >= 0) {
        const char c = 1;
        if (write(ready_fd, &c, 1) != 1) logf("cannot signal readiness");
        close(ready_fd);
    }
    const int rc = d.loop();
    logf("stopped");
    return rc;
}

}  // namespace simnic::daemon
