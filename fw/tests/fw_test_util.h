// SPDX-License-Identifier: Apache-2.0
// Fakes and a fixture for the firmware tests: every command goes through real
// mailbox bytes built with layout.h's descriptors.
#pragma once

#include <catch2/catch.hpp>

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <vector>

#include "simnic/fw/firmware.h"
#include "simnic/fw/gid.h"
#include "simnic/fw/table_store.h"
#include "simnic/hw/cqe.h"
#include "simnic/hw/field.h"
#include "simnic/hw/layout.h"

namespace simnic::fw::test {

namespace hw = simnic::hw;

inline Gid gid_of(std::initializer_list<int> bytes) {
    Gid g{};
    std::size_t i = 0;
    for (int b : bytes) g[i++] = static_cast<std::uint8_t>(b);
    return g;
}

class FakeNetdev final : public NetdevInfo {
public:
    FakeNetdev() {
        snap.name = "eth0";
        snap.ifindex = 2;
        snap.mac = {0x52, 0x54, 0x00, 0x12, 0x34, 0x56};
        snap.mtu = 1500;
        snap.up = snap.running = true;
        snap.ipv4 = {{10, 1, 2, 3}};
        // The EUI-64 link-local address (same as GID 0) and a global one.
        snap.ipv6 = {gid_of({0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0x50, 0x54, 0x00, 0xff, 0xfe, 0x12, 0x34, 0x56}),
                     gid_of({0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1})};
        neighbors[ipv4_mapped_gid({10, 1, 2, 4})] = Mac{0x52, 0x54, 0x00, 0xaa, 0xbb, 0xcc};
    }
    std::optional<NetdevSnapshot> query() override {
        if (gone) return std::nullopt;
        return snap;
    }
    std::optional<Mac> resolve_neighbor(const Gid& g) override {
        ++resolves;
        auto it = neighbors.find(g);
        if (it == neighbors.end()) return std::nullopt;
        return it->second;
    }
    NetdevSnapshot snap;
    bool gone = false;
    std::map<Gid, Mac> neighbors;
    int resolves = 0;
};

struct Event {
    std::uint16_t ctx;
    std::uint8_t type;
    std::uint32_t obj, aux, token;
    std::uint8_t status;
};

class RecordingSink final : public EventSink {
public:
    void post_eqe(std::uint16_t ctx, const std::uint8_t* e, std::size_t n) override {
        REQUIRE(n == hw::kEqeSize);
        CHECK(hw::get(e, n, hw::eqe::owner) == 0);  // the ring writer's job
        const hw::Eqe v = hw::decode_eqe(e);
        events.push_back({ctx, static_cast<std::uint8_t>(v.event_type), v.obj_num, v.aux, v.token,
                          static_cast<std::uint8_t>(v.cmd_status)});
    }
    std::vector<Event> events;
};

// Records the engine calls; with drain_at_once it completes an SQD drain
// immediately, as an engine with nothing outstanding does.
class FakeEngine final : public EngineHooks {
public:
    explicit FakeEngine(TableStore*& store) : store_(store) {}
    void fence(Table, std::uint32_t) override { ++fences; ++depth; }
    void unfence(Table, std::uint32_t) override { --depth; }
    void qp_modified(std::uint32_t qpn, hw::QpState from, hw::QpState to) override {
        CHECK(depth == 0);
        modified.push_back({qpn, from, to});
        if (drain_at_once && to == hw::QpState::Sqd) {
            std::uint8_t* e = store_->entry(Table::Qpc, qpn);
            hw::set(e, hw::qpc::kSize, hw::qpc::sq_draining, 0);
        }
    }
    void qp_destroying(std::uint32_t qpn) override {
        CHECK(depth > 0);
        destroyed_qps.push_back(qpn);
    }
    // MODIFY_SRQ resizing: inside the fence; applies `srq_doorbell_pi` (a
    // doorbell the engine had not taken yet) when set.
    void srq_resizing(std::uint32_t srqn) override {
        CHECK(depth > 0);
        ++srq_resizes;
        if (srq_doorbell_pi) {
            std::uint8_t* e = store_->entry(Table::Srqc, srqn);
            hw::set(e, hw::srqc::kSize, hw::srqc::pi, *srq_doorbell_pi);
        }
    }
    bool cq_copy_entries(const std::uint8_t*, std::uint16_t, std::uint64_t, std::uint8_t) override {
        ++cq_copies;
        return copy_ok;
    }
    struct Mod {
        std::uint32_t qpn;
        hw::QpState from, to;
    };
    std::vector<Mod> modified;
    std::vector<std::uint32_t> destroyed_qps;
    int fences = 0, depth = 0, cq_copies = 0, srq_resizes = 0;
    std::optional<std::uint32_t> srq_doorbell_pi;
    bool drain_at_once = true, copy_ok = true;

private:
    TableStore*& store_;
};

// Input mailbox bytes.
struct Mbox {
    explicit Mbox(std::size_t n = 0) : b(n) {}
    Mbox& set(hw::Field f, std::uint64_t v) {
        REQUIRE(hw::set(b.data(), b.size(), f, v));
        return *this;
    }
    Mbox& bytes(hw::Field f, const std::uint8_t* p, std::size_t n) {
        REQUIRE(hw::set_bytes(b.data(), b.size(), f, p, n));
        return *this;
    }
    std::vector<std::uint8_t> b;
};

inline std::uint64_t out(const CmdResult& r, hw::Field f) {
    REQUIRE(hw::fits(f, r.out_bytes));
    return hw::get(r.out.data(), r.out_bytes, f);
}

inline DeviceLimits small_limits() {
    DeviceLimits l;
    l.max_ctx = 8;
    l.max_domain = 16;
    l.max_mtt = 64;
    return l;
}

struct Dev {
    explicit Dev(DeviceLimits lim = small_limits(),
                 std::function<void(std::array<std::uint8_t, hw::cap_block::kSize>&)> tweak = {})
        : engine(store_ptr) {
        cfg.cap = default_cap_block(lim);
        put_cap(hw::cap_block::max_qp, 4096);
        if (tweak) tweak(cfg.cap);
        store = std::make_unique<MemTableStore>(table_capacities(cfg.cap.data(), cfg.gid_tbl_len));
        store_ptr = store.get();
        fw = std::make_unique<Firmware>(cfg, *store, netdev, sink, &engine);
        REQUIRE(fw->open_context(ctx, 4242, &boot) == hw::CmdStatus::Ok);
    }
    void put_cap(hw::Field f, std::uint64_t v) { REQUIRE(hw::set(cfg.cap.data(), cfg.cap.size(), f, v)); }

    CmdResult cmd(hw::CmdOpcode op, const Mbox& in = Mbox{}, std::size_t out_len = 256,
                  std::uint16_t as_ctx = 0xFFFF) {
        return fw->execute(as_ctx == 0xFFFF ? ctx : as_ctx, static_cast<std::uint16_t>(op),
                           in.b.data(), in.b.size(), out_len);
    }
    CmdResult handle_cmd(hw::CmdOpcode op, std::uint32_t h) {
        return cmd(op, Mbox(hw::cmd_handle::kSize).set(hw::cmd_handle::handle, h));
    }
    std::uint32_t ok_handle(const CmdResult& r) {
        REQUIRE(r.status == hw::CmdStatus::Ok);
        return static_cast<std::uint32_t>(out(r, hw::cmd_handle::handle));
    }
    std::uint32_t alloc_pd() { return ok_handle(cmd(hw::CmdOpcode::AllocPd)); }
    Mbox cq_in(std::uint32_t log = 4, std::uint64_t base = 0x100000) {
        return Mbox(hw::cmd_create_cq_in::kSize)
            .set(hw::cmd_create_cq_in::log_size, log)
            .set(hw::cmd_create_cq_in::domain_id, boot)
            .set(hw::cmd_create_cq_in::base, base);
    }
    std::uint32_t create_cq(std::uint32_t log = 4) { return ok_handle(cmd(hw::CmdOpcode::CreateCq, cq_in(log))); }
    Mbox qp_in(hw::QpType type, std::uint32_t pd, std::uint32_t scq, std::uint32_t rcq) {
        namespace q = hw::cmd_create_qp_in;
        return Mbox(q::kSize)
            .set(q::qp_type, static_cast<std::uint8_t>(type))
            .set(q::pdn, pd)
            .set(q::send_cqn, scq)
            .set(q::recv_cqn, rcq)
            .set(q::domain_id, boot)
            .set(q::sq_base, 0x200000)
            .set(q::rq_base, 0x300000)
            .set(q::log_sq_size, 6)
            .set(q::log_sq_stride, 8)
            .set(q::log_rq_size, 6)
            .set(q::log_rq_stride, 6)
            .set(q::max_send_sge, 4)
            .set(q::max_recv_sge, 2)
            .set(q::max_inline, 64);
    }
    std::uint32_t create_qp(hw::QpType type, std::uint32_t pd, std::uint32_t cq) {
        return ok_handle(cmd(hw::CmdOpcode::CreateQp, qp_in(type, pd, cq, cq)));
    }
    Mbox mr_in(std::uint32_t pd, std::uint32_t access, std::uint64_t len = 4096) {
        namespace m = hw::cmd_reg_mr_in;
        return Mbox(m::kSize)
            .set(m::pdn, pd)
            .set(m::access, access)
            .set(m::domain_id, boot)
            .set(m::iova, 0x7000)
            .set(m::length, len)
            .set(m::host_addr, 0x7000);
    }
    // REG_MR of mr_in(pd, access, len), which must succeed: the lkey.
    std::uint32_t reg_mr(std::uint32_t pd, std::uint32_t access, std::uint64_t len = 4096) {
        const CmdResult r = cmd(hw::CmdOpcode::RegMr, mr_in(pd, access, len));
        REQUIRE(r.ok());
        return static_cast<std::uint32_t>(out(r, hw::cmd_reg_mr_out::lkey));
    }
    std::uint8_t* qpc(std::uint32_t qpn) { return store->entry(Table::Qpc, qpn); }
    std::uint64_t qpc_get(std::uint32_t qpn, hw::Field f) { return hw::get(qpc(qpn), hw::qpc::kSize, f); }

    FakeNetdev netdev;
    RecordingSink sink;
    TableStore* store_ptr = nullptr;
    FakeEngine engine;
    FwConfig cfg;
    std::unique_ptr<MemTableStore> store;
    std::unique_ptr<Firmware> fw;
    std::uint16_t ctx = 1;
    std::uint16_t boot = 0;
};

}  // namespace simnic::fw::test
