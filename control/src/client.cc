#include "simnic/control/client.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <thread>

namespace simnic::control {
namespace {

int try_connect(const std::string& path, int& err) {
    sockaddr_un sa{};
    sa.sun_family = AF_UNIX;
    if (path.size() >= sizeof sa.sun_path) {
        err = ENAMETOOLONG;
        return -1;
    }
    std::memcpy(sa.sun_path, path.c_str(), path.size());
    int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        err = errno;
        return -1;
    }
    widen_send_buffer(fd);  // for long requests (message_capacity)
    if (::connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) {
        err = errno;
        close(fd);
        return -1;
    }
    return fd;
}

// What a dead daemon left in its state file, for the user: its devices, and
// the processes that had them open (each lost its context).
std::string describe_lost_daemon(const RuntimePaths& p) {
    std::ifstream in(p.state);
    if (!in) return {};
    Json st = Json::parse(in, nullptr, false);
    if (st.is_discarded() || !st.is_object()) return {};
    const Json pid = st.value("pid", Json());
    std::string msg = "the simnic daemon (pid " + (pid.is_number_unsigned() ? pid.dump() : std::string("?")) +
                      ") is no longer running";
    std::string names;
    if (st.contains("devices") && st["devices"].is_array())
        for (const auto& d : st["devices"])
            if (d.is_string()) names += (names.empty() ? "" : ", ") + d.get<std::string>();
    if (!names.empty()) msg += "; its devices (" + names + ") were lost";
    std::string users;
    size_t n = 0;
    if (st.contains("contexts") && st["contexts"].is_array())
        for (const auto& c : st["contexts"]) {
            if (!c.is_object() || !c.contains("pid") || !c["pid"].is_number_unsigned()) continue;
            ++n;
            users += (users.empty() ? "" : ", ") + c["pid"].dump();
            if (c.contains("comm") && c["comm"].is_string()) users += " (" + c["comm"].get<std::string>() + ")";
        }
    if (n > 0) msg += ", with the context" + std::string(n == 1 ? "" : "s") + " of " + users;
    return msg;
}

// Starts `<this executable> daemon` detached, and waits until it is ready.
std::string start_daemon() {
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) return std::string("cannot find the simnic executable: ") + std::strerror(errno);
    exe[n] = 0;
    int pfd[2];
    if (pipe2(pfd, O_CLOEXEC) != 0) return std::string("pipe: ") + std::strerror(errno);
    pid_t pid = fork();
    if (pid < 0) return std::string("fork: ") + std::strerror(errno);
    if (pid == 0) {
        // Child: detach into a new session, then exec the daemon, whose stdio
        // goes to its log file (it reopens them itself).
        setsid();
        if (fork() != 0) _exit(0);  // the daemon is not our child: no zombie
        // The daemon outlives the command that started it, so it keeps none
        // of that command's descriptors but the ready pipe: an inherited
        // lock (a test harness's flock on a shared file) or a pipe someone
        // waits on would otherwise stay held for the daemon's lifetime.
        if (pfd[1] != 3 && dup2(pfd[1], 3) != 3) _exit(127);  // dup2 clears close-on-exec
        if (pfd[1] == 3) fcntl(3, F_SETFD, 0);
        closefrom(4);
        setenv("SIMNIC_READY_FD", "3", 1);
        execl(exe, exe, "daemon", static_cast<char*>(nullptr));
        _exit(127);
    }
    close(pfd[1]);
    waitpid(pid, nullptr, 0);
    pollfd p{pfd[0], POLLIN, 0};
    int r = poll(&p, 1, 10000);
    char c = 0;
    const bool ready = r == 1 && read(pfd[0], &c, 1) == 1;
    close(pfd[0]);
    if (!ready) return "the simnic daemon did not start (see its log in the runtime directory)";
    return {};
}

}  // namespace

Client::~Client() {
    if (fd_ >= 0) close(fd_);
}

Client::Client(Client&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }

Client Client::connect(const RuntimePaths& paths, bool start_if_needed, std::string& err,
                       std::string& notice) {
    notice.clear();
    if (!paths.error.empty()) {
        err = paths.error;
        return Client(-1);
    }
    int e = 0;
    int fd = try_connect(paths.socket, e);
    if (fd >= 0) return Client(fd);
    if (e != ENOENT && e != ECONNREFUSED) {
        err = "cannot connect to " + paths.socket + ": " + std::strerror(e);
        return Client(-1);
    }
    // A daemon that holds the lock but does not accept is starting up, or
    // stuck: give it a moment.
    for (int i = 0; i < 50 && daemon_lock_held(paths); ++i) {
        fd = try_connect(paths.socket, e);
        if (fd >= 0) return Client(fd);
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    if (daemon_lock_held(paths)) {
        err = "the simnic daemon holds " + paths.lock + " but does not answer on " + paths.socket;
        return Client(-1);
    }
    // No daemon: whatever socket or state is left is a dead daemon's. Only
    // who starts a new one (or the CLI, forget_dead_daemon) clears it, so
    // that an application's look does not eat what the user is to be told.
    notice = describe_lost_daemon(paths);
    if (!start_if_needed) {
        err = "no simnic daemon is running (simnic link add starts one)";
        return Client(-1);
    }
    if (forget_dead_daemon(paths) && notice.empty())
        notice = "removed a stale socket left by a simnic daemon that is gone";
    if (std::string m = ensure_runtime_dir(paths); !m.empty()) {
        err = m;
        return Client(-1);
    }
    if (std::string m = start_daemon(); !m.empty()) {
        err = m;
        return Client(-1);
    }
    fd = try_connect(paths.socket, e);
    if (fd < 0) err = "cannot connect to the new daemon: " + std::string(std::strerror(e));
    return Client(fd);
}

bool forget_dead_daemon(const RuntimePaths& paths) {
    if (!paths.error.empty() || daemon_lock_held(paths)) return false;
    const bool had_socket = unlink(paths.socket.c_str()) == 0;
    unlink(paths.state.c_str());
    return had_socket;
}

Json Client::request(const Json& req, int timeout_ms) {
    std::vector<int> fds;
    Json r = request_with_fds(req, fds, timeout_ms);
    for (int fd : fds) close(fd);  // nobody asked for them
    return r;
}

Json Client::request_with_fds(const Json& req, std::vector<int>& fds, int timeout_ms) {
    if (fd_ < 0) return reply_error(ENOTCONN, "not connected to the simnic daemon");
    if (std::string m = send_message(fd_, req); !m.empty())
        return reply_error(EPIPE, "lost the simnic daemon: " + m);
    Json reply;
    if (std::string m = recv_message(fd_, reply, timeout_ms, &fds); !m.empty())
        return reply_error(EPIPE, "lost the simnic daemon: " + m);
    return reply;
}

Json Client::request_passing_fds(const Json& req, const std::vector<int>& fds, int timeout_ms) {
    if (fd_ < 0) return reply_error(ENOTCONN, "not connected to the simnic daemon");
    if (std::string m = send_message(fd_, req, fds); !m.empty())
        return reply_error(EPIPE, "lost the simnic daemon: " + m);
    Json reply;
    if (std::string m = recv_message(fd_, reply, timeout_ms); !m.empty())
        return reply_error(EPIPE, "lost the simnic daemon: " + m);
    return reply;
}

bool Client::alive() const {
    if (fd_ < 0) return false;
    pollfd p{fd_, POLLRDHUP, 0};
    return poll(&p, 1, 0) == 0 || !(p.revents & (POLLRDHUP | POLLHUP | POLLERR));
}

}  // namespace simnic::control
