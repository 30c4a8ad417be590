// SPDX-License-Identifier: Apache-2.0
// Command round trips through real mailbox bytes: queries, the command-entry
// protocol, opcode and mailbox errors.
#include <cstring>

#include "fw_test_util.h"

using namespace simnic::fw;
using namespace simnic::fw::test;
using hw::CmdOpcode;
using hw::CmdStatus;

TEST_CASE("NOP and unknown opcodes", "[fw][cmd]") {
    Dev d;
    CHECK(d.cmd(CmdOpcode::Nop).status == CmdStatus::Ok);
    const CmdResult r = d.fw->execute(d.ctx, 0x7777, nullptr, 0, 0);
    CHECK(r.status == CmdStatus::BadOpcode);
    CHECK(r.err() == 95);  // EOPNOTSUPP
    CHECK(d.fw->execute(99, 0, nullptr, 0, 0).status == CmdStatus::NoObject);  // no such context
}

TEST_CASE("QUERY_DEVICE returns the CAP_BLOCK image", "[fw][cmd]") {
    Dev d;
    const CmdResult r = d.cmd(CmdOpcode::QueryDevice);
    REQUIRE(r.ok());
    REQUIRE(r.out_bytes == hw::cap_block::kSize);
    CHECK(std::memcmp(r.out.data(), d.cfg.cap.data(), hw::cap_block::kSize) == 0);
    CHECK(out(r, hw::reg_block_header::type) == static_cast<std::uint32_t>(hw::BlockType::Cap));
    CHECK(out(r, hw::cap_block::max_cqe) == 32767);
    CHECK(out(r, hw::cap_block::max_sge) == 32);
    CHECK(out(r, hw::cap_block::max_qp_rd_atom) == 128);
    CHECK(out(r, hw::cap_block::first_qpn) == 0x11);
    // An output mailbox shorter than the layout: BAD_MBOX, nothing written.
    const CmdResult s = d.cmd(CmdOpcode::QueryDevice, Mbox{}, 255);
    CHECK(s.status == CmdStatus::BadMbox);
    CHECK(s.out_bytes == 0);
    CHECK(s.err() == 14);  // EFAULT
}

TEST_CASE("default CAP_BLOCK carries rxe's values", "[fw][cmd]") {
    const auto c = default_cap_block();
    auto g = [&c](hw::Field f) { return hw::get(c.data(), c.size(), f); };
    CHECK(g(hw::cap_block::max_qp) == 1048560);
    CHECK(g(hw::cap_block::max_qp_wr) == 1048576);
    CHECK(g(hw::cap_block::max_mr) == 524287);
    CHECK(g(hw::cap_block::max_pkeys) == 64);
    CHECK(g(hw::cap_block::local_ca_ack_delay) == 15);
    CHECK(g(hw::cap_block::atomic_cap) == 1);
    CHECK(g(hw::cap_block::max_mr_size) == 0xFFFFFFFFFFFFFFFFull);
}

TEST_CASE("QUERY_PORT, QUERY_PKEY", "[fw][cmd]") {
    Dev d;
    namespace pb = hw::port_block;
    const CmdResult r = d.cmd(CmdOpcode::QueryPort, Mbox(4).set(hw::cmd_query_port_in::port_num, 1));
    REQUIRE(r.ok());
    REQUIRE(r.out_bytes == pb::kSize);
    CHECK(out(r, pb::port_num) == 1);
    CHECK(out(r, pb::state) == static_cast<std::uint8_t>(hw::PortState::Active));
    CHECK(out(r, pb::phys_state) == static_cast<std::uint8_t>(hw::PhysState::LinkUp));
    CHECK(out(r, pb::link_layer) == 2);
    CHECK(out(r, pb::max_mtu) == 5);
    CHECK(out(r, pb::active_mtu) == 3);  // 1500 -> 1024
    CHECK(out(r, pb::netdev_mtu) == 1500);
    CHECK(out(r, pb::gid_tbl_len) == 1024);
    CHECK(out(r, pb::pkey_tbl_len) == 1);
    CHECK(out(r, pb::port_cap_flags) == 0x00010000);
    CHECK(out(r, pb::ifindex) == 2);
    Mac mac{};
    REQUIRE(hw::get_bytes(r.out.data(), r.out_bytes, pb::mac, mac.data(), mac.size()));
    CHECK(mac == d.netdev.snap.mac);

    CHECK(d.cmd(CmdOpcode::QueryPort, Mbox(4).set(hw::cmd_query_port_in::port_num, 2)).status ==
          CmdStatus::NoObject);
    CHECK(d.cmd(CmdOpcode::QueryPort, Mbox(3)).status == CmdStatus::BadMbox);  // input too short

    namespace pk = hw::cmd_query_pkey_in;
    const CmdResult p = d.cmd(CmdOpcode::QueryPkey, Mbox(pk::kSize).set(pk::port_num, 1).set(pk::index, 0));
    REQUIRE(p.ok());
    CHECK(out(p, hw::cmd_query_pkey_out::pkey) == 0xFFFF);
    CHECK(d.cmd(CmdOpcode::QueryPkey, Mbox(pk::kSize).set(pk::port_num, 1).set(pk::index, 1)).status ==
          CmdStatus::BadParam);
    CHECK(d.cmd(CmdOpcode::QueryPkey, Mbox(pk::kSize).set(pk::port_num, 2)).status == CmdStatus::BadParam);
}

TEST_CASE("QUERY_GID", "[fw][cmd][gid]") {
    Dev d;
    namespace q = hw::cmd_query_gid_in;
    namespace ge = hw::gid_entry;
    auto query = [&](std::uint32_t idx) {
        return d.cmd(CmdOpcode::QueryGid, Mbox(q::kSize).set(q::port_num, 1).set(q::index, idx));
    };
    const CmdResult g1 = query(1);
    REQUIRE(g1.ok());
    REQUIRE(g1.out_bytes == ge::kSize);
    Gid g{};
    REQUIRE(hw::get_bytes(g1.out.data(), g1.out_bytes, ge::gid, g.data(), g.size()));
    CHECK(g == ipv4_mapped_gid({10, 1, 2, 3}));
    CHECK(out(g1, ge::valid) == 1);
    CHECK(out(g1, ge::gid_type) == 2);
    CHECK(out(g1, ge::net_type) == 0);
    CHECK(out(g1, ge::ndev_ifindex) == 2);
    const CmdResult unused = query(500);
    REQUIRE(unused.ok());
    CHECK(out(unused, ge::valid) == 0);
    CHECK(query(1024).status == CmdStatus::BadParam);
}

namespace {
// The bootstrap domain's mailbox window, as host memory.
class WindowIo final : public MailboxIo {
public:
    WindowIo(std::uint64_t base, std::size_t len) : base_(base), mem(len) {}
    bool read(std::uint64_t a, std::uint8_t* dst, std::size_t n) override {
        if (a < base_ || a - base_ + n > mem.size()) return false;
        std::memcpy(dst, mem.data() + (a - base_), n);
        return true;
    }
    bool write(std::uint64_t a, const std::uint8_t* src, std::size_t n) override {
        if (fail_writes || a < base_ || a - base_ + n > mem.size()) return false;
        std::memcpy(mem.data() + (a - base_), src, n);
        return true;
    }
    std::uint8_t* at(std::uint64_t a) { return mem.data() + (a - base_); }
    std::uint64_t base_;
    std::vector<std::uint8_t> mem;
    bool fail_writes = false;
};
}  // namespace

TEST_CASE("run_entry: the command-entry protocol through mailbox memory", "[fw][cmd]") {
    Dev d;
    namespace ce = hw::cmdq_entry;
    const std::uint64_t base = 0x40000000;
    WindowIo io(base, 4096);
    std::array<std::uint8_t, ce::kSize> entry{};
    auto post = [&](CmdOpcode op, std::uint64_t in_addr, std::uint32_t in_len, std::uint64_t out_addr,
                    std::uint32_t out_len, bool eqe, std::uint32_t token) {
        entry.fill(0);
        auto s = [&](hw::Field f, std::uint64_t v) { REQUIRE(hw::set(entry.data(), entry.size(), f, v)); };
        s(ce::opcode, static_cast<std::uint16_t>(op));
        s(ce::eqe_req, eqe);
        s(ce::token, token);
        s(ce::in_addr, in_addr);
        s(ce::out_addr, out_addr);
        s(ce::in_len, in_len);
        s(ce::out_len, out_len);
        s(ce::owner, 1);
        s(ce::syndrome, 0xdead);  // firmware overwrites it
        return d.fw->run_entry(d.ctx, entry.data(), entry.size(), base, io.mem.size(), io);
    };
    auto eg = [&](hw::Field f) { return hw::get(entry.data(), entry.size(), f); };

    // ALLOC_PD: output mailbox at base + 0x100.
    REQUIRE(post(CmdOpcode::AllocPd, 0, 0, base + 0x100, 64, true, 0xabcd) == CmdStatus::Ok);
    CHECK(eg(ce::owner) == 0);
    CHECK(eg(ce::status) == 0);
    CHECK(eg(ce::syndrome) == 0);
    CHECK(eg(ce::out_bytes) == 4);
    const auto pdn = hw::get(io.at(base + 0x100), 4, hw::cmd_handle::handle);
    CHECK(pdn == 1);
    REQUIRE(d.sink.events.size() == 1);
    CHECK(d.sink.events[0].type == static_cast<std::uint8_t>(hw::EventType::CmdCompletion));
    CHECK(d.sink.events[0].token == 0xabcd);
    CHECK(d.sink.events[0].status == 0);

    // DEALLOC_PD with the handle in the input mailbox.
    REQUIRE(hw::set(io.at(base + 0x200), 4, hw::cmd_handle::handle, pdn));
    CHECK(post(CmdOpcode::DeallocPd, base + 0x200, 4, 0, 0, false, 0) == CmdStatus::Ok);
    CHECK(d.sink.events.size() == 1);
    CHECK(d.fw->counts(d.ctx).pds == 0);

    // A mailbox that leaves the window: BAD_MBOX, no effect, EQE carries it.
    CHECK(post(CmdOpcode::AllocPd, 0, 0, base + 4094, 64, true, 7) == CmdStatus::BadMbox);
    CHECK(eg(ce::status) == static_cast<std::uint8_t>(CmdStatus::BadMbox));
    CHECK(eg(ce::out_bytes) == 0);
    CHECK(eg(ce::syndrome) == static_cast<std::uint32_t>(Syndrome::MboxWindow));
    CHECK(d.fw->counts(d.ctx).pds == 0);
    REQUIRE(d.sink.events.size() == 2);
    CHECK(d.sink.events[1].status == static_cast<std::uint8_t>(CmdStatus::BadMbox));
    CHECK(post(CmdOpcode::AllocPd, 0, 0, base - 8, 64, false, 0) == CmdStatus::BadMbox);

    // Output too short for the layout.
    CHECK(post(CmdOpcode::QueryDevice, 0, 0, base, 128, false, 0) == CmdStatus::BadMbox);
    CHECK(eg(ce::syndrome) == static_cast<std::uint32_t>(Syndrome::MboxOutShort));

    // QUERY_DEVICE: 256 bytes land in the mailbox; bytes past out_bytes untouched.
    std::memset(io.at(base + 0x400), 0xEE, 512);
    REQUIRE(post(CmdOpcode::QueryDevice, 0, 0, base + 0x400, 512, false, 0) == CmdStatus::Ok);
    CHECK(eg(ce::out_bytes) == 256);
    CHECK(std::memcmp(io.at(base + 0x400), d.cfg.cap.data(), 256) == 0);
    CHECK(*io.at(base + 0x400 + 256) == 0xEE);
}
