// A connection from a tool (the CLI, later the verbs provider) to the daemon.
#pragma once

#include <string>
#include <vector>

#include "simnic/control/protocol.h"
#include "simnic/control/runtime.h"

namespace simnic::control {

class Client {
public:
    ~Client();
    Client(Client&& o) noexcept;
    Client& operator=(Client&&) = delete;
    Client(const Client&) = delete;

    // Connects to the running daemon. With start_if_needed, starts one (the
    // same executable, `simnic daemon`) when none runs, and clears a stale
    // socket left by a daemon that died. `notice` receives what the user
    // should be told about a daemon that died (its devices and the
    // processes that had them open; empty if nothing happened). Without
    // start_if_needed nothing in the runtime directory changes.
    static Client connect(const RuntimePaths& paths, bool start_if_needed, std::string& err,
                          std::string& notice);

    bool connected() const { return fd_ >= 0; }
    // The socket, for a connection the daemon writes to unasked (an rdma_cm
    // event channel, see cm_service.h): poll it, read it with recv_message.
    int fd() const { return fd_; }
    // Sends a request and waits for its reply. On transport failure returns
    // a reply_error() describing it.
    Json request(const Json& req, int timeout_ms = 10000);
    // The same, for a reply that carries file descriptors (now the caller's).
    Json request_with_fds(const Json& req, std::vector<int>& fds, int timeout_ms = 10000);
    // Sends a request carrying descriptors (SCM_RIGHTS) and waits for its reply.
    Json request_passing_fds(const Json& req, const std::vector<int>& fds, int timeout_ms = 10000);
    // False once the daemon has closed the connection (it exited or died).
    bool alive() const;

private:
    explicit Client(int fd) : fd_(fd) {}
    int fd_ = -1;
};

// Removes what a dead daemon left (its socket and state file) so that the
// user is told about it once; nothing if a daemon runs. True if there was a
// socket.
bool forget_dead_daemon(const RuntimePaths& paths);

}  // namespace simnic::control
