// An in-process simnic daemon for the control protocol's tests and fuzzer:
// a daemon::Server in a private runtime directory whose devices have no
// engine (no wire, no thread, no capture: DeviceRuntime::Options::engine),
// driven by pump() on the caller's thread, and clients connected to its
// socket. Header-only; nothing in it throws or aborts, so the fuzzer can use
// it too.
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "simnic/control/protocol.h"
#include "simnic/control/runtime.h"
#include "simnic/daemon/server.h"

namespace simnic::testing {

inline daemon::DeviceFactory devices_without_engine() {
    return [](const daemon::Device& d, std::string& err, daemon::DeviceRuntime::GsiHandler gsi) {
        daemon::DeviceRuntime::Options o;
        o.engine = false;
        return daemon::DeviceRuntime::create(d, err, std::move(gsi), o);
    };
}

class ServerHarness {
public:
    explicit ServerHarness(daemon::ServerOptions opt = {}) {
        char tmpl[] = "/tmp/simnic-server-test.XXXXXX";
        if (mkdtemp(tmpl) == nullptr) return;
        paths_.dir = tmpl;
        paths_.socket = paths_.dir + "/simnicd.sock";
        paths_.lock = paths_.dir + "/simnicd.lock";
        paths_.state = paths_.dir + "/simnicd.state";
        opt.log = false;
        opt.signals = false;
        if (!opt.make_device) opt.make_device = devices_without_engine();
        server_ = std::make_unique<daemon::Server>(paths_, std::move(opt));
        error_ = server_->start();
    }
    ~ServerHarness() {
        server_.reset();
        for (const char* f : {"/simnicd.sock", "/simnicd.lock", "/simnicd.state", "/simnicd.state.tmp"})
            unlink((paths_.dir + f).c_str());
        rmdir(paths_.dir.c_str());
    }
    ServerHarness(const ServerHarness&) = delete;
    ServerHarness& operator=(const ServerHarness&) = delete;

    bool ok() const { return server_ && error_.empty(); }
    const std::string& error() const { return error_; }
    daemon::Server& server() { return *server_; }
    const control::RuntimePaths& paths() const { return paths_; }

    // Runs the server until it has nothing left to do.
    void pump() {
        for (int i = 0; i < 10000 && server_->run_once(0) > 0; ++i) {}
    }

    // A new client connection (non-blocking), or -1.
    int connect() {
        int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0) return -1;
        sockaddr_un sa{};
        sa.sun_family = AF_UNIX;
        std::memcpy(sa.sun_path, paths_.socket.c_str(), paths_.socket.size());
        if (::connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) {
            close(fd);
            return -1;
        }
        pump();
        return fd;
    }

    // Sends raw bytes with descriptors on `fd`. False if the send failed.
    static bool send_raw(int fd, const std::string& bytes, const std::vector<int>& fds = {}) {
        return control::send_raw(fd, bytes, fds, MSG_DONTWAIT) == 0;
    }

    // Every message waiting on `fd` (replies, CM events), parsed; the
    // descriptors they carried are closed unless `fds` is given. `closed`
    // is set when the server has closed the connection.
    static std::vector<control::Json> drain(int fd, bool* closed = nullptr, std::vector<int>* fds = nullptr) {
        std::vector<control::Json> out;
        if (closed) *closed = false;
        for (;;) {
            control::RawMessage m;
            const int e = control::recv_raw(fd, m, 0);
            for (int f : m.fds) {
                if (fds) fds->push_back(f);
                else close(f);
            }
            if (e == ECONNRESET && closed) *closed = true;
            if (e != 0) break;
            control::Json j;
            if (!control::parse_message(m.bytes, j).empty()) j = control::Json("unparsable");
            out.push_back(std::move(j));
        }
        return out;
    }

    // One request and its reply (the last message that came back; a null
    // Json if none did).
    control::Json call(int fd, const control::Json& req, const std::vector<int>& fds = {},
                       std::vector<int>* reply_fds = nullptr) {
        return call_raw(fd, req.dump(), fds, reply_fds);
    }
    control::Json call_raw(int fd, const std::string& bytes, const std::vector<int>& fds = {},
                           std::vector<int>* reply_fds = nullptr) {
        if (!send_raw(fd, bytes, fds)) return control::Json();
        pump();
        std::vector<control::Json> r = drain(fd, nullptr, reply_fds);
        return r.empty() ? control::Json() : r.back();
    }

    // The daemon answers ping on a new connection, and opens a context on
    // `device` (five descriptors back), which closes again with its
    // connection.
    bool serves(const std::string& device) {
        const int fd = connect();
        if (fd < 0) return false;
        const control::Json p = call(fd, control::Json{{"op", "ping"}});
        std::vector<int> fds;
        const control::Json o = call(fd, control::Json{{"op", "open_context"}, {"device", device}}, {}, &fds);
        for (int f : fds) close(f);
        close(fd);
        pump();
        return p.is_object() && p.value("ok", false) == true && o.is_object() && o.value("ok", false) == true &&
               fds.size() == 5;
    }

private:
    control::RuntimePaths paths_;
    std::unique_ptr<daemon::Server> server_;
    std::string error_;
};

// A sealed memfd of `size` bytes, as the provider shares its queue memory.
inline int sealed_memfd(std::size_t size, bool seal = true) {
    const int fd = memfd_create("simnic-test", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd < 0) return -1;
    if (ftruncate(fd, static_cast<off_t>(size)) != 0) {
        close(fd);
        return -1;
    }
    if (seal) fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW);
    return fd;
}

}  // namespace simnic::testing
