// libFuzzer target for the daemon's control socket: a daemon::Server runs
// in-process (daemon/tests/server_harness.h: devices without an engine, so
// nothing binds a port or writes a capture) and the input is a sequence of
// actions by four clients (control_input.h): messages of any bytes with
// descriptors beside them (memfds of various sizes, sealed or not, pipes,
// /dev/null, an eventfd, a socket), connections closed and reopened between
// them, so that sequences such as open_context then garbage, or cm_channel,
// cm_create_id and a close, are reached.
//
// Properties checked on every input:
//  - nothing crashes, overflows or hits UB (ASan, UBSan);
//  - no request reaches the last-resort catch (Server::internal_errors);
//  - every message the daemon sends a client is one JSON object;
//  - once the clients are gone and the devices the input added deleted,
//    the daemon holds nothing a message carried (no memfd, pipe, socket,
//    eventfd or /dev/null more than before), no context, no connection, and
//    it still answers ping and opens a context on its device.
#include <dirent.h>
#include <fcntl.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <set>

#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "control_input.h"
#include "server_harness.h"

using namespace simnic;
using control::Json;

namespace {

constexpr const char* kDevice = "fz0";

// What the process holds open: each descriptor's (device, inode) and what
// /proc says it is. The fuzzing engine opens descriptors of its own (the
// symbolizer's pipes, the first time it names a new function), so the
// checks look for what the daemon could have kept, not at the total.
struct Held {
    dev_t dev;
    ino_t ino;
    std::string what;
};
std::vector<Held> held() {
    std::vector<Held> out;
    DIR* d = opendir("/proc/self/fd");
    if (!d) return out;
    const int self = dirfd(d);
    while (dirent* e = readdir(d)) {
        const int fd = std::atoi(e->d_name);
        if (e->d_name[0] == '.' || fd == self) continue;
        struct stat st {};
        if (fstat(fd, &st) != 0) continue;
        char buf[256];
        const ssize_t n = readlinkat(self, e->d_name, buf, sizeof buf - 1);
        out.push_back({st.st_dev, st.st_ino, std::string(buf, n > 0 ? static_cast<std::size_t>(n) : 0)});
    }
    closedir(d);
    return out;
}
std::size_t count_of(const std::vector<Held>& h, const std::string& what) {
    std::size_t n = 0;
    for (const Held& x : h) n += x.what == what;
    return n;
}

void fail(const char* what) {
    std::fprintf(stderr, "fuzz_control: %s\n", what);
    std::abort();
}

// Descriptors of `kind` to send; `keep` collects every one made (closed
// after the send: the daemon has its own copies).
int make_fd(fuzz::FdKind kind, std::vector<int>& keep) {
    using fuzz::FdKind;
    int fd = -1;
    switch (kind) {
        case FdKind::Memfd4k:
        case FdKind::Memfd64k:
        case FdKind::Memfd0:
        case FdKind::Memfd1g:
        case FdKind::MemfdOdd:
        case FdKind::Memfd4kUnsealed:
            fd = testing::sealed_memfd(fuzz::kMemfdBytes[static_cast<int>(kind)], kind != FdKind::Memfd4kUnsealed);
            break;
        case FdKind::PipeRead:
        case FdKind::PipeWrite: {
            int p[2];
            if (pipe2(p, O_CLOEXEC) != 0) return -1;
            keep.push_back(kind == FdKind::PipeRead ? p[1] : p[0]);
            fd = kind == FdKind::PipeRead ? p[0] : p[1];
            break;
        }
        case FdKind::DevNull: fd = open("/dev/null", O_RDWR | O_CLOEXEC); break;
        case FdKind::EventFd: fd = eventfd(0, EFD_CLOEXEC); break;
        case FdKind::Socket: {
            int s[2];
            if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, s) != 0) return -1;
            keep.push_back(s[1]);
            fd = s[0];
            break;
        }
        case FdKind::kCount: break;
    }
    if (fd >= 0) keep.push_back(fd);
    return fd;
}

struct World {
    testing::ServerHarness h;
    // Descriptors that share one inode with the daemon's own: counted.
    std::size_t eventfds = 0, devnulls = 0;
    // The (device, inode) of every descriptor this input sent.
    std::set<std::pair<dev_t, ino_t>> sent;

    void note_sent(int fd) {
        struct stat st {};
        if (fstat(fd, &st) == 0) sent.insert({st.st_dev, st.st_ino});
    }

    // Once every client has gone: nothing a message carried is still open
    // (no memfd, pipe or socket sent, no more eventfds or /dev/null than
    // before), and no context's page either.
    void check_descriptors() {
        const std::vector<Held> now = held();
        for (const Held& x : now) {
            const bool shared = x.what.rfind("anon_inode:", 0) == 0 || x.what == "/dev/null";
            if (!shared && sent.count({x.dev, x.ino})) {
                std::fprintf(stderr, "fuzz_control: still open: %s\n", x.what.c_str());
                fail("a descriptor a request carried is still open after every client closed");
            }
            if (x.what.rfind("/memfd:simnic-ctx-", 0) == 0) fail("a context's page is still open");
        }
        if (count_of(now, "anon_inode:[eventfd]") != eventfds) fail("an eventfd is left behind");
        if (count_of(now, "/dev/null") != devnulls) fail("a /dev/null is left behind");
        sent.clear();
    }

    static daemon::ServerOptions options() {
        daemon::ServerOptions o;
        // Small enough that inputs reach every limit.
        o.max_connections_per_process = 6;
        o.max_shm_per_context = 3;
        o.max_cm_ids_per_channel = 8;
        return o;
    }
    World() : h(options()) {
        if (!h.ok()) fail(h.error().c_str());
        const int fd = h.connect();
        const bool added = add_device(fd);
        close(fd);
        h.pump();
        if (!added) fail("cannot add the device");
        const std::vector<Held> now = held();
        eventfds = count_of(now, "anon_inode:[eventfd]");
        devnulls = count_of(now, "/dev/null");
    }

    // Every message waiting for the client on `fd` must be a JSON object.
    void read_all(int fd) {
        for (const Json& m : testing::ServerHarness::drain(fd))
            if (!m.is_object()) fail("the daemon sent something that is not a JSON object");
    }

    bool add_device(int fd) {
        const Json r = h.call(fd, Json{{"op", "link_add"}, {"name", kDevice}, {"type", "soft"}, {"netdev", "lo"}});
        return r.is_object() && r.value("ok", false) == true;
    }

    // Back to the state before the input: the devices the input added go,
    // and the daemon's own device is there again if the input deleted it.
    void reset() {
        const int fd = h.connect();
        const Json r = h.call(fd, Json{{"op", "link_show"}});
        if (!r.is_object() || !r.contains("links") || !r["links"].is_array()) fail("link_show failed");
        bool have = false;
        for (const Json& l : r["links"]) {
            const std::string name = l.value("ifname", "");
            if (name == kDevice) {
                have = true;
                continue;
            }
            const Json d = h.call(fd, Json{{"op", "link_del"}, {"name", name}});
            if (d.value("ok", false) != true) fail("a device the input added cannot be deleted");
        }
        if (!have && !add_device(fd)) fail("cannot add the device again");
        close(fd);
        h.pump();
    }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    static World* w = new World;  // one daemon for the whole run, as in life
    std::array<int, fuzz::kConns> conn;
    conn.fill(-1);
    auto get = [&](std::uint8_t k) {
        if (conn[k] < 0) conn[k] = w->h.connect();
        return conn[k];
    };
    for (const fuzz::Action& a : fuzz::decode(data, size)) {

        switch (a.kind) {
            case fuzz::Action::Send: {
                const int fd = get(a.conn);
                if (fd < 0) break;
                std::vector<int> keep, fds;
                for (fuzz::FdKind k : a.fds)
                    if (int f = make_fd(k, keep); f >= 0) fds.push_back(f);
                for (int f : fds) w->note_sent(f);
                testing::ServerHarness::send_raw(fd, a.bytes, fds);
                for (int f : keep) close(f);
                w->h.pump();
                break;
            }
            case fuzz::Action::Close:
                if (conn[a.conn] >= 0) close(conn[a.conn]);
                conn[a.conn] = -1;
                w->h.pump();
                break;
            case fuzz::Action::Pump: w->h.pump(); break;
            case fuzz::Action::Reopen:
                if (conn[a.conn] >= 0) close(conn[a.conn]);
                conn[a.conn] = w->h.connect();
                break;
        }
        for (int fd : conn)
            if (fd >= 0) w->read_all(fd);
        if (w->h.server().internal_errors() != 0) fail("a request reached the last-resort catch");
    }
    for (int& fd : conn)
        if (fd >= 0) close(fd);
    w->h.pump();
    w->reset();
    if (w->h.server().connections() != 0) fail("connections left after every client closed");
    w->check_descriptors();
    if (!w->h.serves(kDevice)) fail("the daemon no longer serves its device");
    return 0;
}
