// The real daemon's control socket against bad input (issue 12: `{"op":123}`
// used to kill it with an uncaught nlohmann::json::type_error). Every
// malformed request the schema generates (daemon/tests/malformed.h) goes to a
// `simnic daemon` over its socket; each gets an error reply, and afterwards
// the same daemon process still answers ping and serves its soft device to a
// host-driver context (a firmware command through the command ring).
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <array>
#include <cstdlib>
#include <cstring>
#include <string>

#include "malformed.h"
#include "simnic/control/client.h"
#include "simnic/control/protocol.h"
#include "simnic/host/context.h"
#include "simnic/hw/layout.h"

using namespace simnic;
using control::Json;

namespace {

struct Daemon {
    std::string dir, exe;
    Daemon() {
        char tmpl[] = "/tmp/simnic-ctl-test.XXXXXX";
        REQUIRE(mkdtemp(tmpl));
        dir = tmpl;
        setenv("SIMNIC_RUNTIME_DIR", dir.c_str(), 1);
        const char* e = std::getenv("SIMNIC_EXE");
        REQUIRE(e);
        exe = e;
        const int rc = std::system((exe + " link add ctltest type soft netdev lo").c_str());
        if (rc != 0) {
            std::system((exe + " daemon --stop").c_str());
            std::system(("rm -rf '" + dir + "'").c_str());
        }
        REQUIRE(rc == 0);
    }
    ~Daemon() {
        std::system((exe + " link delete ctltest").c_str());
        std::system((exe + " daemon --stop").c_str());
        std::system(("rm -rf '" + dir + "'").c_str());
    }
    // A raw connection to the socket (blocking).
    int connect() const {
        const int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
        sockaddr_un sa{};
        sa.sun_family = AF_UNIX;
        const std::string p = dir + "/simnicd.sock";
        std::memcpy(sa.sun_path, p.c_str(), p.size());
        REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) == 0);
        return fd;
    }
};

bool send_raw(int fd, const std::string& bytes, const std::vector<int>& fds) {
    return control::send_raw(fd, bytes, fds) == 0;
}

}  // namespace

TEST_CASE("the daemon answers every malformed request with an error and serves on", "[control]") {
    Daemon d;
    const int fd = d.connect();
    Json reply;
    REQUIRE(send_raw(fd, Json{{"op", "ping"}}.dump(), {}));
    REQUIRE(control::recv_message(fd, reply, 5000).empty());
    const auto pid = reply.value("pid", 0);
    REQUIRE(pid > 0);

    for (const testing::Malformed& m : testing::malformed_requests()) {
        INFO(m.what);
        std::vector<int> fds;
        for (size_t i = 0; i < m.fds; ++i) fds.push_back(open("/dev/null", O_RDONLY | O_CLOEXEC));
        REQUIRE(send_raw(fd, m.bytes, fds));
        for (int f : fds) close(f);
        Json r;
        REQUIRE(control::recv_message(fd, r, 5000).empty());
        INFO(r.dump());
        CHECK(r.value("ok", true) == false);
        CHECK(r.value("errno", 0) == m.err);
        CHECK(r.value("error", std::string()).find(m.mentions) != std::string::npos);
    }
    // The same daemon: it answers, still on this connection.
    REQUIRE(send_raw(fd, Json{{"op", "ping"}}.dump(), {}));
    REQUIRE(control::recv_message(fd, reply, 5000).empty());
    CHECK(reply.value("pid", 0) == pid);
    close(fd);

    // And it serves its device: a context, a firmware command through the
    // command ring, the context's count.
    int err = 0;
    auto ctx = host::open_context("ctltest", err);
    REQUIRE(err == 0);
    REQUIRE(ctx);
    host::CmdOutcome out;
    REQUIRE(ctx->command(hw::CmdOpcode::QueryDevice, nullptr, 0, hw::cap_block::kSize, out) == 0);
    CHECK(out.status == hw::CmdStatus::Ok);
    CHECK(out.out.size() == hw::cap_block::kSize);
    std::string e, notice;
    control::Client c = control::Client::connect(control::runtime_paths(), false, e, notice);
    REQUIRE(c.connected());
    const Json counts = c.request(Json{{"op", "resource_counts"}, {"device", "ctltest"}});
    CHECK(counts.value("contexts", 0) == 1);
    ctx.reset();
}
