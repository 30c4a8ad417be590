// The host driver's daemon-backed context against a real daemon: commands
// travel through the command ring in this process's memory, BAR0 is shared
// memory, and a process that dies takes its objects with it.
//
// The test starts its own daemon in a private runtime directory with
// `simnic link add` (the path of the simnic executable is argv-configured
// through the SIMNIC_EXE environment variable set by ctest).
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "simnic/control/client.h"
#include "simnic/host/context.h"
#include "simnic/hw/layout.h"
#include "private_daemon.h"

using namespace simnic;

namespace {

using test::PrivateDaemon;

// A daemon of the test's own with one soft device, ctxtest, on lo.
struct DaemonFixture : PrivateDaemon {
    DaemonFixture() : PrivateDaemon("ctxtest", "ctx-test") {}
};

uint32_t counts_pds(const DaemonFixture& d) {
    control::Json r = d.request(control::Json{{"op", "resource_counts"}, {"device", d.device()}});
    REQUIRE(r.value("ok", false));
    return r["pds"].get<uint32_t>();
}

}  // namespace

TEST_CASE("a context executes firmware commands through the command ring", "[context]") {
    DaemonFixture d;
    std::vector<host::DeviceEntry> devs;
    REQUIRE(host::list_devices(devs) == 0);
    REQUIRE(devs.size() == 1);
    CHECK(devs[0].name == "ctxtest");
    CHECK(devs[0].netdev == "lo");

    int err = 0;
    auto ctx = host::open_context("ctxtest", err);
    REQUIRE(err == 0);
    REQUIRE(ctx);

    // BAR0: the ID and CAP blocks are where the spec puts them.
    uint8_t id[hw::id_block::kSize];
    REQUIRE(ctx->read_bar(hw::kBar0IdBlock, id, sizeof id));
    CHECK(hw::get(id, hw::reg_block_header::type) == static_cast<uint32_t>(hw::BlockType::Id));
    CHECK(hw::get(id, hw::id_block::vendor_id) == 0xffffff);

    host::CmdOutcome out;
    REQUIRE(ctx->command(hw::CmdOpcode::QueryDevice, nullptr, 0, hw::cap_block::kSize, out) == 0);
    REQUIRE(out.status == hw::CmdStatus::Ok);
    REQUIRE(out.out.size() == hw::cap_block::kSize);
    CHECK(hw::get(out.out.data(), out.out.size(), hw::reg_block_header::type) ==
          static_cast<uint32_t>(hw::BlockType::Cap));

    // Many commands in a row wrap the 16-entry ring several times.
    std::vector<uint32_t> pdns;
    for (int i = 0; i < 40; ++i) {
        REQUIRE(ctx->command(hw::CmdOpcode::AllocPd, nullptr, 0, hw::cmd_handle::kSize, out) == 0);
        REQUIRE(out.status == hw::CmdStatus::Ok);
        pdns.push_back(static_cast<uint32_t>(hw::get(out.out.data(), out.out.size(), hw::cmd_handle::handle)));
    }
    CHECK(counts_pds(d) == 40);
    for (uint32_t pdn : pdns) {
        uint8_t in[hw::cmd_handle::kSize] = {};
        hw::set(in, hw::cmd_handle::handle, pdn);
        REQUIRE(ctx->command(hw::CmdOpcode::DeallocPd, in, sizeof in, 0, out) == 0);
        CHECK(out.status == hw::CmdStatus::Ok);
    }
    CHECK(counts_pds(d) == 0);

    // A bad handle is the firmware's error, not a transport failure.
    uint8_t in[hw::cmd_handle::kSize] = {};
    hw::set(in, hw::cmd_handle::handle, 0x7777);
    REQUIRE(ctx->command(hw::CmdOpcode::DeallocPd, in, sizeof in, 0, out) == 0);
    CHECK(out.status != hw::CmdStatus::Ok);

    // A device with an open context cannot be deleted.
    CHECK(PrivateDaemon::run(d.exe() + " link delete ctxtest 2>/dev/null") != 0);
    ctx.reset();
}

TEST_CASE("objects of a process killed with SIGKILL are released", "[context]") {
    DaemonFixture d;
    int pipefd[2];
    REQUIRE(pipe(pipefd) == 0);
    pid_t child = fork();
    REQUIRE(child >= 0);
    if (child == 0) {
        int err = 0;
        auto ctx = host::open_context("ctxtest", err);
        host::CmdOutcome out;
        for (int i = 0; ctx && i < 5; ++i) ctx->command(hw::CmdOpcode::AllocPd, nullptr, 0, hw::cmd_handle::kSize, out);
        char c = ctx ? 1 : 0;
        if (write(pipefd[1], &c, 1) != 1) _exit(2);
        pause();  // killed here, holding five PDs
        _exit(0);
    }
    close(pipefd[1]);
    char c = 0;
    REQUIRE(read(pipefd[0], &c, 1) == 1);
    REQUIRE(c == 1);
    CHECK(counts_pds(d) == 5);
    kill(child, SIGKILL);
    waitpid(child, nullptr, 0);
    // The daemon notices the closed connection; give it a moment.
    uint32_t left = 5;
    for (int i = 0; i < 100 && left; ++i) {
        left = counts_pds(d);
        if (left) usleep(20000);
    }
    CHECK(left == 0);
    // And the device still serves others.
    int err = 0;
    auto ctx = host::open_context("ctxtest", err);
    REQUIRE(ctx);
    host::CmdOutcome out;
    REQUIRE(ctx->command(hw::CmdOpcode::AllocPd, nullptr, 0, hw::cmd_handle::kSize, out) == 0);
    CHECK(out.status == hw::CmdStatus::Ok);
}

TEST_CASE("opening a context on a missing device or without a daemon fails cleanly", "[context]") {
    DaemonFixture d;
    int err = 0;
    CHECK(host::open_context("nosuch", err) == nullptr);
    CHECK(err == ENODEV);
}

// Queue memory shared with the daemon (hw-spec 1.3 SHM): only a sealed
// memfd of the size it claims, only on a connection that holds a context.
TEST_CASE("add_shm: the daemon maps only sealed objects of the stated size, for a context", "[context][shm]") {
    DaemonFixture d;
    std::string err, notice;
    control::Client c = control::Client::connect(control::runtime_paths(), false, err, notice);
    REQUIRE(c.connected());
    auto memfd = [](size_t size, bool seal) {
        const int fd = memfd_create("simnic-test", MFD_CLOEXEC | MFD_ALLOW_SEALING);
        REQUIRE(fd >= 0);
        REQUIRE(ftruncate(fd, off_t(size)) == 0);
        if (seal) REQUIRE(fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW) == 0);
        return fd;
    };
    // No context on this connection yet.
    int fd = memfd(1 << 20, true);
    control::Json r = c.request_passing_fds(control::Json{{"op", "add_shm"}, {"size", 1 << 20}}, {fd});
    CHECK_FALSE(r.value("ok", true));
    CHECK(r.value("errno", 0) == EINVAL);
    close(fd);

    std::vector<int> fds;
    r = c.request_with_fds(control::Json{{"op", "open_context"}, {"device", "ctxtest"}}, fds);
    REQUIRE(r.value("ok", false));
    for (int f : fds) close(f);
    // Not sealed: the process could shrink it under the device.
    fd = memfd(1 << 20, false);
    r = c.request_passing_fds(control::Json{{"op", "add_shm"}, {"size", 1 << 20}}, {fd});
    CHECK(r.value("errno", 0) == EPERM);
    close(fd);
    // Sealed, but not the size it claims.
    fd = memfd(1 << 20, true);
    r = c.request_passing_fds(control::Json{{"op", "add_shm"}, {"size", 2 << 20}}, {fd});
    CHECK(r.value("errno", 0) == EINVAL);
    // No descriptor at all.
    r = c.request(control::Json{{"op", "add_shm"}, {"size", 1 << 20}});
    CHECK(r.value("errno", 0) == EINVAL);
    // Right: a handle for ATTACH_DOMAIN.
    r = c.request_passing_fds(control::Json{{"op", "add_shm"}, {"size", 1 << 20}}, {fd});
    CHECK(r.value("ok", false));
    CHECK(r.value("handle", 0u) >= 1u);
    close(fd);
}
