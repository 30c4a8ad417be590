// The daemon's control socket against bad input, in-process (a Server with
// devices that have no engine, server_harness.h): every op's malformed
// variants get an error reply that names the field and the daemon then still
// answers ping and serves a device; what one client can hold is bounded;
// descriptors nobody asked for are closed.
#include <catch2/catch.hpp>

#include <dirent.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "malformed.h"
#include "server_harness.h"
#include "simnic/control/schema.h"

using namespace simnic;
using control::Json;
using testing::ServerHarness;

namespace {

constexpr const char* kDev = "srv0";

void add_device(ServerHarness& h, const std::string& name = kDev) {
    const int fd = h.connect();
    REQUIRE(fd >= 0);
    const Json r = h.call(fd, Json{{"op", "link_add"}, {"name", name}, {"type", "soft"}, {"netdev", "lo"}});
    close(fd);
    INFO(r.dump());
    REQUIRE(r.value("ok", false));
}

size_t open_fds() {
    size_t n = 0;
    DIR* d = opendir("/proc/self/fd");
    if (!d) return 0;
    while (readdir(d)) ++n;
    closedir(d);
    return n;
}

std::vector<int> devnulls(size_t n) {
    std::vector<int> fds;
    for (size_t i = 0; i < n; ++i) fds.push_back(open("/dev/null", O_RDONLY | O_CLOEXEC));
    return fds;
}

}  // namespace

TEST_CASE("every malformed request gets an error naming what is wrong, and the daemon serves on", "[server]") {
    ServerHarness h;
    INFO(h.error());
    REQUIRE(h.ok());
    add_device(h);
    h.pump();
    const size_t fds_before = open_fds();
    const int fd = h.connect();
    REQUIRE(fd >= 0);
    const std::vector<testing::Malformed> cases = testing::malformed_requests();
    CHECK(cases.size() > 300);
    for (const testing::Malformed& m : cases) {
        INFO(m.what);
        std::vector<int> fds = devnulls(m.fds);
        const Json r = h.call_raw(fd, m.bytes, fds);
        for (int f : fds) close(f);
        INFO(r.dump());
        REQUIRE(r.is_object());
        CHECK(r.value("ok", true) == false);
        CHECK(r.value("errno", 0) == m.err);
        CHECK(r.value("error", std::string()).find(m.mentions) != std::string::npos);
        // The same connection goes on, and so does everyone else's.
        CHECK(h.call(fd, Json{{"op", "ping"}}).value("ok", false));
        CHECK(h.serves(kDev));
    }
    close(fd);
    h.pump();
    CHECK(h.server().internal_errors() == 0);
    CHECK(h.server().connections() == 0);
    // Every descriptor those requests carried was closed.
    CHECK(open_fds() == fds_before);
}

TEST_CASE("every op in the schema has a handler", "[server]") {
    ServerHarness h;
    REQUIRE(h.ok());
    add_device(h, "other0");
    const int fd = h.connect();
    REQUIRE(fd >= 0);
    for (const control::OpSpec& op : control::op_specs()) {
        if (op.name == "shutdown") continue;
        INFO(op.name);
        // The lower-limit example passes the schema; what its handler makes
        // of it does not matter here, only that one answers.
        std::vector<int> fds;
        for (size_t i = 0; i < op.min_fds; ++i) fds.push_back(testing::sealed_memfd(4096));
        const Json r = h.call(fd, control::example_request(op), fds);
        for (int f : fds) close(f);
        INFO(r.dump());
        REQUIRE(r.is_object());
        CHECK(r.value("error", std::string()).find("no handler") == std::string::npos);
        CHECK(r.value("error", std::string()).find("unknown request") == std::string::npos);
    }
    CHECK(h.server().internal_errors() == 0);
    close(fd);
}

TEST_CASE("a connection that opened a context or a CM channel is cleaned up when it goes", "[server]") {
    ServerHarness h;
    REQUIRE(h.ok());
    add_device(h);
    h.pump();
    const size_t fds_before = open_fds();
    const int fd = h.connect();
    std::vector<int> ctx_fds;
    REQUIRE(h.call(fd, Json{{"op", "open_context"}, {"device", kDev}}, {}, &ctx_fds).value("ok", false));
    REQUIRE(ctx_fds.size() == 5);
    for (int f : ctx_fds) close(f);
    const int shm = testing::sealed_memfd(1 << 16);
    CHECK(h.call(fd, Json{{"op", "add_shm"}, {"size", 1 << 16}}, {shm}).value("ok", false));
    close(shm);
    // A second context on the same connection, a memfd of the wrong size,
    // an unsealed one, and a pipe.
    CHECK(h.call(fd, Json{{"op", "open_context"}, {"device", kDev}}).value("errno", 0) == EBUSY);
    int bad = testing::sealed_memfd(8192);
    CHECK(h.call(fd, Json{{"op", "add_shm"}, {"size", 4096}}, {bad}).value("errno", 0) == EINVAL);
    close(bad);
    bad = testing::sealed_memfd(4096, false);
    CHECK(h.call(fd, Json{{"op", "add_shm"}, {"size", 4096}}, {bad}).value("errno", 0) == EPERM);
    close(bad);
    int p[2];
    REQUIRE(pipe2(p, O_CLOEXEC) == 0);
    CHECK(h.call(fd, Json{{"op", "add_shm"}, {"size", 4096}}, {p[0]}).value("ok", true) == false);
    close(p[0]);
    close(p[1]);
    const int ch = h.connect();
    const Json c = h.call(ch, Json{{"op", "cm_channel"}});
    REQUIRE(c.value("ok", false));
    CHECK(h.call(fd, Json{{"op", "cm_create_id"}, {"channel", c["channel"]}, {"ps", 0x106}}).value("ok", false));
    close(fd);
    close(ch);
    h.pump();
    CHECK(h.server().connections() == 0);
    CHECK(open_fds() == fds_before);
    CHECK(h.serves(kDev));
}

TEST_CASE("a context whose process has gone does not keep its device in use", "[server]") {
    // `kill; wait; simnic link delete`: the request can be read before the
    // context's hang-up in the same round of the daemon's loop. Here the
    // request is sent first, then the context's connection closes, and only
    // then does the daemon run.
    ServerHarness h;
    REQUIRE(h.ok());
    add_device(h);
    const int ctx = h.connect();
    std::vector<int> ctx_fds;
    REQUIRE(h.call(ctx, Json{{"op", "open_context"}, {"device", kDev}}, {}, &ctx_fds).value("ok", false));
    for (int f : ctx_fds) close(f);
    const int cli = h.connect();
    // A live context: the device is in use, and stays.
    Json r = h.call(cli, Json{{"op", "link_del"}, {"name", kDev}});
    CHECK(r.value("errno", 0) == EBUSY);
    CHECK(r.value("error", std::string()).find("in use by 1 open context") != std::string::npos);
    REQUIRE(h.serves(kDev));
    REQUIRE(ServerHarness::send_raw(cli, Json{{"op", "link_del"}, {"name", kDev}}.dump()));
    close(ctx);
    h.pump();
    const std::vector<Json> replies = ServerHarness::drain(cli);
    REQUIRE(replies.size() == 1);
    INFO(replies[0].dump());
    CHECK(replies[0].value("ok", false));
    CHECK_FALSE(h.serves(kDev));
    CHECK(h.server().internal_errors() == 0);
    close(cli);
}

TEST_CASE("one client cannot exhaust the daemon", "[server]") {
    daemon::ServerOptions opt;
    opt.max_connections_per_process = 4;
    opt.max_shm_per_context = 2;
    opt.max_cm_ids_per_channel = 3;
    ServerHarness h(opt);
    REQUIRE(h.ok());
    add_device(h);

    SECTION("connections per process") {
        std::vector<int> conns;
        for (int i = 0; i < 4; ++i) {
            conns.push_back(h.connect());
            CHECK(h.call(conns.back(), Json{{"op", "ping"}}).value("ok", false));
        }
        // The fifth is accepted, told why, and closed.
        const int extra = h.connect();
        bool closed = false;
        const std::vector<Json> told = ServerHarness::drain(extra, &closed);
        REQUIRE(told.size() == 1);
        INFO(told[0].dump());
        CHECK(told[0].value("errno", 0) == EMFILE);
        CHECK(told[0].value("error", std::string()).find("connections") != std::string::npos);
        CHECK(closed);
        close(extra);
        CHECK(h.server().connections() == 4);
        // One goes, another may come.
        close(conns.back());
        conns.pop_back();
        h.pump();
        CHECK(h.serves(kDev));
        for (int c : conns) close(c);
    }
    SECTION("memory objects per context") {
        const int fd = h.connect();
        std::vector<int> ctx_fds;
        REQUIRE(h.call(fd, Json{{"op", "open_context"}, {"device", kDev}}, {}, &ctx_fds).value("ok", false));
        for (int f : ctx_fds) close(f);
        for (int i = 0; i < 3; ++i) {
            const int m = testing::sealed_memfd(4096);
            const Json r = h.call(fd, Json{{"op", "add_shm"}, {"size", 4096}}, {m});
            close(m);
            INFO(i << ": " << r.dump());
            if (i < 2) CHECK(r.value("ok", false));
            else CHECK(r.value("errno", 0) == ENOSPC);
        }
        close(fd);
    }
    SECTION("CM IDs per event channel") {
        const int ch = h.connect();
        const Json c = h.call(ch, Json{{"op", "cm_channel"}});
        REQUIRE(c.value("ok", false));
        const int fd = h.connect();
        for (int i = 0; i < 4; ++i) {
            const Json r = h.call(fd, Json{{"op", "cm_create_id"}, {"channel", c["channel"]}, {"ps", 0x106}});
            INFO(i << ": " << r.dump());
            if (i < 3) CHECK(r.value("ok", false));
            else CHECK(r.value("errno", 0) == ENOMEM);
        }
        close(fd);
        close(ch);
    }
    SECTION("a client that does not read its replies is dropped, and only it") {
        const int greedy = h.connect();
        bool closed = false;
        const std::string ping = Json{{"op", "ping"}}.dump();
        for (int i = 0; i < 100000 && !closed; ++i) {
            ServerHarness::send_raw(greedy, ping);
            h.pump();
            pollfd p{greedy, POLLRDHUP, 0};
            closed = poll(&p, 1, 0) == 1 && (p.revents & (POLLRDHUP | POLLHUP));
        }
        CHECK(closed);
        close(greedy);
        h.pump();
        CHECK(h.serves(kDev));
    }
    h.pump();
    CHECK(h.server().internal_errors() == 0);
}
