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
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "simnic/control/client.h"
#include "simnic/host/context.h"
#include "simnic/hw/cqe.h"
#include "simnic/hw/layout.h"
#include "simnic/hw/mmio.h"
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

// A driver finds the global register blocks by following their headers'
// `next` from ID_BLOCK (hw-spec 2.2): every block the spec's BAR0 map lists
// must be on that chain, at its offset, with its type and length, and the
// chain must end.
TEST_CASE("BAR0's global blocks form one chain from ID_BLOCK to RX_STATS_BLOCK", "[context]") {
    DaemonFixture d;
    int err = 0;
    auto ctx = host::open_context("ctxtest", err);
    REQUIRE(ctx);
    struct Want {
        uint32_t at;
        hw::BlockType type;
        uint32_t length;
    };
    const Want want[] = {
        {hw::kBar0IdBlock, hw::BlockType::Id, hw::id_block::kSize},
        {hw::kBar0CapBlock, hw::BlockType::Cap, hw::cap_block::kSize},
        {hw::kBar0PortBlock, hw::BlockType::Port, hw::port_block::kSize},
        {hw::kBar0StatsBlock, hw::BlockType::Stats, hw::stats_block::kSize},
        {hw::kBar0CtxWinBlock, hw::BlockType::CtxWin, hw::ctxwin_block::kSize},
        {hw::kBar0CcStatsBlock, hw::BlockType::CcStats, hw::cc_stats_block::kSize},
        {hw::kBar0TxStatsBlock, hw::BlockType::TxStats, hw::tx_stats_block::kSize},
        {hw::kBar0DmaStatsBlock, hw::BlockType::DmaStats, hw::dma_stats_block::kSize},
        {hw::kBar0RxStatsBlock, hw::BlockType::RxStats, hw::rx_stats_block::kSize},
    };
    uint32_t at = hw::kBar0IdBlock;
    for (const Want& w : want) {
        INFO("block at 0x" << std::hex << w.at);
        REQUIRE(at == w.at);
        uint8_t h[hw::reg_block_header::kSize];
        REQUIRE(ctx->read_bar(at, h, sizeof h));
        CHECK(hw::get(h, hw::reg_block_header::type) == static_cast<uint32_t>(w.type));
        CHECK(hw::get(h, hw::reg_block_header::length) == w.length);
        at = uint32_t(hw::get(h, hw::reg_block_header::next));
    }
    CHECK(at == 0);  // RX_STATS_BLOCK is the last
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

// The EQ ring in a shared object (hw-spec 2.7.2): the daemon writes EQEs
// there with plain stores. The test runs the command ring itself on a raw
// context, attaches a memfd as an SHM domain at address A, points EQ_REGS at
// A and then unmaps A: an EQE written with process_vm_writev to A would
// fail, one written through the object shows in a second mapping of it.
TEST_CASE("EQEs reach an EQ ring inside an SHM domain without a system call into the process", "[context][eq]") {
    DaemonFixture d;
    std::string err, notice;
    control::Client c = control::Client::connect(control::runtime_paths(), false, err, notice);
    REQUIRE(c.connected());
    std::vector<int> fds;
    control::Json r = c.request_with_fds(control::Json{{"op", "open_context"}, {"device", "ctxtest"}}, fds);
    REQUIRE(r.value("ok", false));
    REQUIRE(fds.size() == 5);
    auto* page = static_cast<uint8_t*>(mmap(nullptr, 0x1000, PROT_READ | PROT_WRITE, MAP_SHARED, fds[0], 0));
    REQUIRE(page != MAP_FAILED);
    const int db_fd = fds[3];  // the command doorbell
    for (int f : {fds[0], fds[1], fds[2], fds[4]}) close(f);
    prctl(PR_SET_PTRACER, static_cast<unsigned long>(r.value("daemon_pid", 0)), 0, 0, 0);

    // The command ring and a mailbox in this process's memory (hw-spec 5.1).
    alignas(64) static uint8_t ring[16 * hw::cmdq_entry::kSize];
    alignas(64) static uint8_t mbox[4096];
    constexpr uint32_t cq = hw::kCtxCmdqBlock, eq = hw::kCtxEqBlock;
    hw::reg_set(page, cq, hw::cmdq_regs::ring_base, reinterpret_cast<uint64_t>(ring));
    hw::reg_set(page, cq, hw::cmdq_regs::log_size, 4);
    hw::reg_set(page, cq, hw::cmdq_regs::mbox_base, reinterpret_cast<uint64_t>(mbox));
    hw::reg_set(page, cq, hw::cmdq_regs::mbox_len, sizeof mbox);
    hw::reg_set(page, cq, hw::cmdq_regs::enable, 1);
    REQUIRE(hw::reg_get(page, cq, hw::cmdq_regs::ready) == 1);
    uint32_t pi = 0;
    // Posts one command with `in` and waits for it; its status.
    auto command = [&](hw::CmdOpcode op, const uint8_t* in, size_t in_len, bool eqe_req, uint32_t& out_handle) {
        namespace ce = hw::cmdq_entry;
        std::memcpy(mbox, in, in_len);
        uint8_t* e = ring + (pi % 16) * ce::kSize;
        std::memset(e, 0, ce::kSize);
        hw::set(e, ce::kSize, ce::opcode, static_cast<uint16_t>(op));
        hw::set(e, ce::kSize, ce::eqe_req, eqe_req ? 1 : 0);
        hw::set(e, ce::kSize, ce::token, 0x5000 + pi);
        hw::set(e, ce::kSize, ce::in_addr, reinterpret_cast<uint64_t>(mbox));
        hw::set(e, ce::kSize, ce::out_addr, reinterpret_cast<uint64_t>(mbox + 2048));
        hw::set(e, ce::kSize, ce::in_len, in_len);
        hw::set(e, ce::kSize, ce::out_len, hw::cmd_handle::kSize);
        hw::mmio_store32(e, ce::status.offset, 1u << ce::owner.lo);
        hw::mmio_store32(page, cq + hw::cmdq_regs::pi.offset, ++pi);
        const uint64_t one = 1;
        REQUIRE(write(db_fd, &one, sizeof one) == sizeof one);
        for (int i = 0; i < 5000 && (hw::mmio_load32(e, ce::status.offset) >> ce::owner.lo) & 1; ++i) usleep(1000);
        REQUIRE(((hw::mmio_load32(e, ce::status.offset) >> ce::owner.lo) & 1) == 0);
        out_handle = static_cast<uint32_t>(hw::get(mbox + 2048, hw::cmd_handle::kSize, hw::cmd_handle::handle));
        return static_cast<hw::CmdStatus>(hw::get(e, ce::kSize, ce::status));
    };

    // The EQ's object, shared and attached as an SHM domain at A.
    constexpr uint32_t kLog = 4;
    constexpr size_t kBytes = 0x1000;
    const int mfd = memfd_create("simnic-test-eq", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    REQUIRE(mfd >= 0);
    REQUIRE(ftruncate(mfd, kBytes) == 0);
    REQUIRE(fcntl(mfd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW) == 0);
    r = c.request_passing_fds(control::Json{{"op", "add_shm"}, {"size", kBytes}}, {mfd});
    REQUIRE(r.value("ok", false));
    const uint32_t handle = r.value("handle", 0u);
    void* a = mmap(nullptr, kBytes, PROT_READ | PROT_WRITE, MAP_SHARED, mfd, 0);
    auto* view = static_cast<uint8_t*>(mmap(nullptr, kBytes, PROT_READ | PROT_WRITE, MAP_SHARED, mfd, 0));
    REQUIRE(a != MAP_FAILED);
    REQUIRE(view != MAP_FAILED);
    close(mfd);
    namespace ad = hw::cmd_attach_domain_in;
    uint8_t in[ad::kSize] = {};
    hw::set(in, ad::kind, static_cast<uint8_t>(hw::DomainKind::Shm));
    hw::set(in, ad::shm_handle, handle);
    hw::set(in, ad::map_base, reinterpret_cast<uint64_t>(a));
    hw::set(in, ad::map_len, kBytes);
    uint32_t dom = 0;
    REQUIRE(command(hw::CmdOpcode::AttachDomain, in, sizeof in, false, dom) == hw::CmdStatus::Ok);
    CHECK(dom != 0);

    hw::reg_set(page, eq, hw::eq_regs::base, reinterpret_cast<uint64_t>(a));
    hw::reg_set(page, eq, hw::eq_regs::log_size, kLog);
    hw::reg_set(page, eq, hw::eq_regs::enable, 1);
    // Nothing of this process is at A any more.
    REQUIRE(munmap(a, kBytes) == 0);

    uint32_t unused = 0;
    for (uint32_t i = 0; i < 3; ++i) {
        REQUIRE(command(hw::CmdOpcode::Nop, nullptr, 0, true, unused) == hw::CmdStatus::Ok);
        // The EQE follows the command's completion; wait for pi to move.
        for (int t = 0; t < 5000 && hw::reg_get(page, eq, hw::eq_regs::pi) == i; ++t) usleep(1000);
        REQUIRE(hw::reg_get(page, eq, hw::eq_regs::pi) == i + 1);
        const uint8_t* slot = hw::eqe_peek(view, i, kLog);
        REQUIRE(slot != nullptr);
        const hw::Eqe e = hw::decode_eqe(slot);
        CHECK(e.event_type == hw::EventType::CmdCompletion);
        CHECK(e.token == 0x5000 + pi - 1);
        CHECK(e.cmd_status == hw::CmdStatus::Ok);
        hw::mmio_store32(page, eq + hw::eq_regs::ci.offset, i + 1);
    }
    hw::reg_set(page, eq, hw::eq_regs::enable, 0);
    hw::reg_set(page, cq, hw::cmdq_regs::enable, 0);
    munmap(view, kBytes);
    munmap(page, 0x1000);
    close(db_fd);
}
