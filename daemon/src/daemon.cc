#include "simnic/daemon/daemon.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/file.h>
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
#include <set>
#include <vector>

#include "cm_service.h"
#include "simnic/daemon/device_runtime.h"
#include "simnic/daemon/devices.h"
#include "simnic/control/protocol.h"
#include "simnic/control/runtime.h"

namespace simnic::daemon {

// The daemon is the server side of the control protocol.
using namespace simnic::control;
namespace {

void logf(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
void logf(const char* fmt, ...) {
    char ts[32];
    std::time_t t = std::time(nullptr);
    std::strftime(ts, sizeof ts, "%F %T", std::localtime(&t));
    std::fprintf(stderr, "%s simnicd[%d]: ", ts, getpid());
    va_list ap;
    va_start(ap, fmt);
    std::vfprintf(stderr, fmt, ap);
    va_end(ap);
    std::fputc('\n', stderr);
}

class Daemon {
public:
    explicit Daemon(const RuntimePaths& p) : paths_(p) {}
    ~Daemon();

    std::string start();   // lock, socket, epoll; error message on failure
    int loop();

private:
    void accept_client();
    void serve(int fd);
    void drop(int fd);
    Json handle(const Json& req);
    Json link_add(const Json& req);
    Json link_del(const Json& req);
    Json link_show(const Json& req);
    Json trace(const Json& req);
    Json add_shm(int fd, const Json& req, std::vector<int>& in_fds);
    Json open_context(int fd, const Json& req, std::vector<int>& fds);
    Json resources(const Json& req);
    void save_state();

    // A connection that opened a context belongs to it; its doorbell eventfd
    // is watched too.
    struct CtxBinding {
        std::string device;
        uint16_t ctx_id = 0;
        int db_fd = -1;
    };

    RuntimePaths paths_;
    int lock_fd_ = -1, listen_fd_ = -1, epoll_fd_ = -1, signal_fd_ = -1;
    std::set<int> clients_;
    DeviceTable devices_;
    // The host's CM for every device (before runtimes_: their engines call it).
    std::unique_ptr<CmService> cm_;
    std::map<std::string, std::unique_ptr<DeviceRuntime>> runtimes_;
    std::map<int, CtxBinding> ctx_of_conn_;           // client fd -> context
    std::map<int, int> conn_of_doorbell_;             // doorbell fd -> client fd
    bool stop_ = false;
};

Daemon::~Daemon() {
    runtimes_.clear();  // destroys every context first
    for (int fd : clients_) close(fd);
    if (listen_fd_ >= 0) {
        close(listen_fd_);
        unlink(paths_.socket.c_str());
        unlink(paths_.state.c_str());
    }
    if (epoll_fd_ >= 0) close(epoll_fd_);
    if (signal_fd_ >= 0) close(signal_fd_);
    if (lock_fd_ >= 0) close(lock_fd_);  // releases the flock
}

std::string Daemon::start() {
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

    sigset_t mask;
    sigemptyset(&mask);
    sigaddset(&mask, SIGTERM);
    sigaddset(&mask, SIGINT);
    sigaddset(&mask, SIGHUP);
    sigprocmask(SIG_BLOCK, &mask, nullptr);
    signal(SIGPIPE, SIG_IGN);
    signal_fd_ = signalfd(-1, &mask, SFD_CLOEXEC);
    epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
    if (signal_fd_ < 0 || epoll_fd_ < 0) return std::string("epoll/signalfd: ") + std::strerror(errno);
    cm_ = std::make_unique<CmService>();
    if (!cm_->ok()) return std::string("CM agent: ") + std::strerror(errno);
    for (int fd : {listen_fd_, signal_fd_, cm_->rx_fd(), cm_->timer_fd()}) {
        epoll_event ev{};
        ev.events = EPOLLIN;
        ev.data.fd = fd;
        epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev);
    }
    save_state();
    return {};
}

void Daemon::save_state() {
    Json st{{"pid", getpid()}, {"devices", Json::array()}};
    for (const Device* d : devices_.all()) st["devices"].push_back(d->name);
    const std::string tmp = paths_.state + ".tmp";
    {
        std::ofstream out(tmp, std::ios::trunc);
        out << st.dump() << "\n";
    }
    rename(tmp.c_str(), paths_.state.c_str());
}

int Daemon::loop() {
    epoll_event evs[16];
    while (!stop_) {
        int n = epoll_wait(epoll_fd_, evs, 16, -1);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            logf("epoll_wait: %s", std::strerror(errno));
            return 1;
        }
        for (int i = 0; i < n; ++i) {
            const int fd = evs[i].data.fd;
            if (fd == listen_fd_) accept_client();
            else if (fd == signal_fd_) {
                signalfd_siginfo si{};
                if (read(signal_fd_, &si, sizeof si) == sizeof si) logf("signal %u: shutting down", si.ssi_signo);
                stop_ = true;
            } else if (fd == cm_->rx_fd()) {
                cm_->on_rx();
            } else if (fd == cm_->timer_fd()) {
                cm_->on_timer();
            } else if (auto db = conn_of_doorbell_.find(fd); db != conn_of_doorbell_.end()) {
                const CtxBinding& b = ctx_of_conn_.at(db->second);
                if (auto rt = runtimes_.find(b.device); rt != runtimes_.end()) rt->second->command_doorbell(b.ctx_id);
            } else if (evs[i].events & (EPOLLHUP | EPOLLERR) && !(evs[i].events & EPOLLIN)) {
                drop(fd);
            } else {
                serve(fd);
            }
        }
    }
    return 0;
}

void Daemon::accept_client() {
    for (;;) {
        int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (fd < 0) return;
        epoll_event ev{};
        ev.events = EPOLLIN | EPOLLRDHUP;
        ev.data.fd = fd;
        epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev);
        clients_.insert(fd);
    }
}

void Daemon::drop(int fd) {
    // A client that went away, cleanly or killed: if it had opened a
    // context, everything in the context goes with it.
    if (auto it = ctx_of_conn_.find(fd); it != ctx_of_conn_.end()) {
        const CtxBinding b = it->second;
        epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, b.db_fd, nullptr);
        conn_of_doorbell_.erase(b.db_fd);
        ctx_of_conn_.erase(it);
        if (auto rt = runtimes_.find(b.device); rt != runtimes_.end()) {
            rt->second->close_context(b.ctx_id);
            logf("context %u on %s closed", b.ctx_id, b.device.c_str());
        }
    }
    cm_->drop(fd);  // an event channel's IDs go with it
    epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr);
    clients_.erase(fd);
    close(fd);
}

void Daemon::serve(int fd) {
    Json req;
    std::vector<int> in_fds;
    const std::string err = recv_message(fd, req, 0, &in_fds);
    if (err == "connection closed" || err.rfind("recv:", 0) == 0) {
        for (int f : in_fds) close(f);
        drop(fd);
        return;
    }
    std::vector<int> fds;
    Json reply;
    if (!err.empty()) reply = reply_error(EPROTO, "bad request: " + err);
    else if (req.value("op", "") == "open_context") reply = open_context(fd, req, fds);
    else if (req.value("op", "") == "add_shm") reply = add_shm(fd, req, in_fds);
    else if (req.value("op", "").rfind("cm_", 0) == 0) reply = cm_->handle(fd, req);
    else reply = handle(req);
    // Descriptors no request asked for are not kept.
    for (int f : in_fds)
        if (f >= 0) close(f);
    if (std::string m = send_message(fd, reply, fds); !m.empty()) drop(fd);
}

Json Daemon::handle(const Json& req) {
    const std::string op = req.value("op", "");
    if (op == "ping") return Json{{"ok", true}, {"pid", getpid()}, {"version", kVersion}};
    if (op == "link_add") return link_add(req);
    if (op == "link_del") return link_del(req);
    if (op == "link_show") return link_show(req);
    if (op == "resource_counts") {
        auto rt = runtimes_.find(req.value("device", ""));
        if (rt == runtimes_.end()) return reply_error(ENODEV, "no device " + req.value("device", ""));
        const DeviceRuntime::Counts c = rt->second->counts();
        Json r = reply_ok();
        r["qps"] = c.qps;
        r["cqs"] = c.cqs;
        r["mrs"] = c.mrs;
        r["pds"] = c.pds;
        r["srqs"] = c.srqs;
        r["ahs"] = c.ahs;
        r["mws"] = c.mws;
        r["contexts"] = rt->second->context_count();
        return r;
    }
    if (op == "stats") {
        auto rt = runtimes_.find(req.value("device", ""));
        if (rt == runtimes_.end()) return reply_error(ENODEV, "no device " + req.value("device", ""));
        Json r = reply_ok();
        Json st = Json::object();
        for (const auto& [name, v] : rt->second->stats()) st[name] = v;
        r["stats"] = st;
        // A model device adds its pipeline's figures, in simulated time.
        Json model = Json::array();
        // "reset": the model's figures start again (read and reset at once).
        for (const model::ModelStat& m : rt->second->model_stats(req.value("reset", false)))
            model.push_back(Json{{"name", m.name}, {"value", m.value}, {"unit", m.unit}});
        if (!model.empty()) {
            r["model"] = model;
            r["trace"] = rt->second->trace_state();
        }
        return r;
    }
    if (op == "resources") return resources(req);
    if (op == "trace") return trace(req);
    if (op == "shutdown") {
        stop_ = true;
        return reply_ok();
    }
    return reply_error(EOPNOTSUPP, "unknown request '" + op + "'");
}

Json Daemon::link_add(const Json& req) {
    if (!req.contains("name") || !req["name"].is_string() || !req.contains("netdev") ||
        !req["netdev"].is_string() || !req.contains("type") || !req["type"].is_string())
        return reply_error(EINVAL, "link_add needs name, type and netdev");
    Device d;
    d.name = req["name"].get<std::string>();
    d.netdev = req["netdev"].get<std::string>();
    if (!parse_type(req["type"].get<std::string>(), d.type))
        return reply_error(EINVAL, "unknown device type '" + req["type"].get<std::string>() + "' (soft or model)");
    if (req.contains("pcap") && req["pcap"].is_string()) d.pcap = req["pcap"].get<std::string>();
    if (req.contains("loopback")) {
        const std::string v = req["loopback"].is_string() ? req["loopback"].get<std::string>() : "";
        if (v != "on" && v != "off") return reply_error(EINVAL, "loopback must be on or off");
        d.loopback = v == "on";
    }
    if (req.contains("config") && req["config"].is_string()) {
        if (d.type != DeviceType::Model) return reply_error(EINVAL, "'config' applies to model devices only");
        d.config_path = req["config"].get<std::string>();
        d.config_text = req.value("config_text", "");
    }
    int e = 0;
    if (std::string m = devices_.add(d, e); !m.empty()) return reply_error(e, m);
    std::string err;
    auto rt = DeviceRuntime::create(d, err, cm_->gsi_handler(d.name));
    if (!rt) {
        devices_.remove(d.name, e);
        return reply_error(EIO, "cannot create device " + d.name + ": " + err);
    }
    cm_->add_device(d.name, rt.get());
    runtimes_[d.name] = std::move(rt);
    logf("device %s (%s) added on %s", d.name.c_str(), type_name(d.type), d.netdev.c_str());
    save_state();
    return reply_ok();
}

Json Daemon::link_del(const Json& req) {
    const std::string name = req.value("name", "");
    if (auto rt = runtimes_.find(name); rt != runtimes_.end() && rt->second->context_count() > 0)
        return reply_error(EBUSY, "device " + name + " is in use by " + std::to_string(rt->second->context_count()) +
                                      " open context(s)");
    int e = 0;
    if (std::string m = devices_.remove(name, e); !m.empty()) return reply_error(e, m);
    cm_->remove_device(name);
    runtimes_.erase(name);
    logf("device %s deleted", name.c_str());
    save_state();
    return reply_ok();
}

Json Daemon::link_show(const Json& req) {
    Json links = Json::array();
    const std::string name = req.value("name", "");
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
Json Daemon::add_shm(int fd, const Json& req, std::vector<int>& in_fds) {
    auto b = ctx_of_conn_.find(fd);
    if (b == ctx_of_conn_.end()) return reply_error(EINVAL, "add_shm: this connection holds no context");
    if (in_fds.size() != 1) return reply_error(EINVAL, "add_shm: expected one descriptor");
    auto rt = runtimes_.find(b->second.device);
    if (rt == runtimes_.end()) return reply_error(ENODEV, "no device " + b->second.device);
    uint32_t handle = 0;
    int e = 0;
    std::string err;
    const int mfd = in_fds[0];
    in_fds[0] = -1;
    if (!rt->second->add_shm(b->second.ctx_id, mfd, req.value("size", uint64_t{0}), handle, err, e))
        return reply_error(e, "add_shm: " + err);
    Json r = reply_ok();
    r["handle"] = handle;
    return r;
}

// `simnic trace NAME vcd|fst FILE [--from C --cycles N]`, and `stop`.
Json Daemon::trace(const Json& req) {
    auto rt = runtimes_.find(req.value("device", ""));
    if (rt == runtimes_.end()) return reply_error(ENODEV, "no device " + req.value("device", ""));
    if (req.value("stop", false)) {
        rt->second->trace_stop();
        Json r = reply_ok();
        r["trace"] = rt->second->trace_state();
        return r;
    }
    std::string err;
    std::optional<uint64_t> from;  // absent: now
    if (req.contains("from")) from = req.value("from", uint64_t{0});
    if (!rt->second->trace(req.value("file", ""), req.value("format", ""), from, req.value("cycles", uint64_t{0}),
                           err))
        return reply_error(EINVAL, err);
    Json r = reply_ok();
    r["trace"] = rt->second->trace_state();
    return r;
}

// Everything `simnic resource show` prints, for one device or all.
Json Daemon::resources(const Json& req) {
    const std::string only = req.value("device", "");
    if (!only.empty() && !runtimes_.count(only)) return reply_error(ENODEV, "no device " + only);
    Json devs = Json::array();
    for (const auto& [name, rt] : runtimes_) {
        if (!only.empty() && name != only) continue;
        const DeviceRuntime::Counts c = rt->counts();
        Json d{{"name", name}, {"qps", c.qps}, {"cqs", c.cqs}, {"mrs", c.mrs}, {"pds", c.pds},
               {"srqs", c.srqs}, {"ahs", c.ahs}, {"mws", c.mws}, {"contexts", rt->context_count()}};
        Json qps = Json::array();
        for (const DeviceRuntime::QpInfo& q : rt->qps())
            qps.push_back(Json{{"qpn", q.qpn}, {"type", q.type}, {"state", q.state}, {"sq_psn", q.sq_psn},
                               {"rq_psn", q.rq_psn}, {"dest_qpn", q.dest_qpn}, {"pid", q.pid}});
        d["qp_list"] = qps;
        // Field names as iproute2's `rdma resource show` prints them.
        Json cqs = Json::array();
        for (const DeviceRuntime::CqInfo& q : rt->cqs())
            cqs.push_back(Json{{"cqn", q.cqn}, {"cqe", q.cqe}, {"users", q.users}, {"ctxn", q.ctx_id},
                               {"pid", q.pid}});
        d["cq_list"] = cqs;
        Json mrs = Json::array();
        for (const DeviceRuntime::MrInfo& m : rt->mrs())
            mrs.push_back(Json{{"mrn", m.mrn}, {"rkey", m.key}, {"lkey", m.key}, {"iova", m.iova},
                               {"mrlen", m.length}, {"pdn", m.pdn}, {"ctxn", m.ctx_id},
                               {"pid", m.pid}});
        d["mr_list"] = mrs;
        Json mws = Json::array();
        for (const DeviceRuntime::MwInfo& w : rt->mws())
            mws.push_back(Json{{"mwn", w.mwn}, {"rkey", w.rkey}, {"type", w.type}, {"state", w.state},
                               {"pdn", w.pdn}, {"mr_key", w.mr_key}, {"addr", w.addr},
                               {"length", w.length}, {"qpn", w.qpn}, {"ctxn", w.ctx_id},
                               {"pid", w.pid}});
        d["mw_list"] = mws;
        Json pds = Json::array();
        for (const DeviceRuntime::PdInfo& p : rt->pds())
            pds.push_back(Json{{"pdn", p.pdn}, {"users", p.users}, {"ctxn", p.ctx_id}, {"pid", p.pid}});
        d["pd_list"] = pds;
        Json srqs = Json::array();
        for (const DeviceRuntime::SrqInfo& s : rt->srqs())
            srqs.push_back(Json{{"srqn", s.srqn}, {"lqpn", s.qpns}, {"pdn", s.pdn}, {"max_wr", s.max_wr},
                                {"max_sge", s.max_sge}, {"limit", s.limit}, {"ctxn", s.ctx_id},
                                {"pid", s.pid}});
        d["srq_list"] = srqs;
        Json gids = Json::array();
        for (const auto& [idx, g] : rt->gids()) {
            char buf[INET6_ADDRSTRLEN] = {};
            inet_ntop(AF_INET6, g.data(), buf, sizeof buf);
            gids.push_back(Json{{"index", idx}, {"gid", buf}});
        }
        d["gids"] = gids;
        devs.push_back(d);
    }
    Json r = reply_ok();
    r["devices"] = devs;
    return r;
}

Json Daemon::open_context(int fd, const Json& req, std::vector<int>& fds) {
    if (ctx_of_conn_.count(fd)) return reply_error(EBUSY, "this connection already holds a context");
    const std::string name = req.value("device", "");
    auto rt = runtimes_.find(name);
    if (rt == runtimes_.end()) return reply_error(ENODEV, "no device " + name);
    // The process is who the kernel says is on the other end, not who the
    // message claims to be.
    ucred cred{};
    socklen_t len = sizeof cred;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0)
        return reply_error(errno, std::string("SO_PEERCRED: ") + std::strerror(errno));
    DeviceRuntime::OpenedContext oc;
    std::string err;
    int e = 0;
    if (!rt->second->open_context(static_cast<uint32_t>(cred.pid), oc, err, e)) return reply_error(e, err);
    ctx_of_conn_[fd] = CtxBinding{name, oc.ctx_id, oc.db_fd};
    conn_of_doorbell_[oc.db_fd] = fd;
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = oc.db_fd;
    epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, oc.db_fd, &ev);
    fds = {oc.page_fd, oc.bar_fd, oc.irq_fd, oc.db_fd, oc.engine_fd};
    logf("context %u on %s opened by pid %d", oc.ctx_id, name.c_str(), cred.pid);
    Json r = reply_ok();
    r["ctx_id"] = oc.ctx_id;
    r["boot_domain"] = oc.boot_domain;
    r["daemon_pid"] = getpid();
    return r;
}

}  // namespace

int run_daemon(const DaemonOptions& opt, int ready_fd) {
    const RuntimePaths paths = runtime_paths();
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
    Daemon d(paths);
    if (std::string m = d.start(); !m.empty()) {
        logf("%s", m.c_str());
        if (opt.foreground) std::fprintf(stderr, "simnic daemon: %s\n", m.c_str());
        return 1;
    }
    logf("listening on %s", paths.socket.c_str());
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
