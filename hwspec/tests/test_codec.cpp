// SPDX-License-Identifier: Apache-2.0
// The WQE, CQE and EQE codec (simnic/hw/wqe.h, simnic/hw/cqe.h): byte
// placement checked against hw-spec.md's offsets written out here by hand,
// round trips for every opcode, QP type and segment kind, every refusal of a
// malformed WQE with its CQE status, and the phase bit across ring wraps.
#include <catch2/catch.hpp>

#include <array>
#include <cstdint>
#include <cstring>
#include <string>
#include <tuple>
#include <vector>

#include "simnic/hw/cqe.h"
#include "simnic/hw/wqe.h"

namespace hw = simnic::hw;

namespace {

std::uint64_t le(const std::uint8_t* p, unsigned n) {
    std::uint64_t v = 0;
    for (unsigned i = 0; i < n; ++i) v |= std::uint64_t{p[i]} << (8 * i);
    return v;
}
void put_le(std::uint8_t* p, unsigned n, std::uint64_t v) {
    for (unsigned i = 0; i < n; ++i) p[i] = static_cast<std::uint8_t>(v >> (8 * i));
}

constexpr hw::WrOpcode kAllOpcodes[] = {
    hw::WrOpcode::RdmaWrite,       hw::WrOpcode::RdmaWriteWithImm, hw::WrOpcode::Send,
    hw::WrOpcode::SendWithImm,     hw::WrOpcode::RdmaRead,         hw::WrOpcode::AtomicCmpAndSwp,
    hw::WrOpcode::AtomicFetchAndAdd, hw::WrOpcode::LocalInv,       hw::WrOpcode::BindMw,
    hw::WrOpcode::SendWithInv,
};
constexpr hw::QpType kAllTypes[] = {hw::QpType::Rc, hw::QpType::Uc, hw::QpType::Ud};

hw::SqLimits limits(hw::QpType t, std::uint32_t stride = 1024) {
    return hw::SqLimits{t, stride, hw::kMaxSge, hw::kMaxInline};
}

// A WQE of opcode `o` with every field its segments carry set to something
// recognisable, SGE data unless `inl`.
hw::SendWqe sample(hw::WrOpcode o, hw::QpType t, bool inl, std::uint32_t ah_num,
                   const std::vector<std::uint8_t>& bytes) {
    hw::SendWqe w;
    w.opcode = o;
    w.wr_id = 0x1122334455667788ull;
    w.fence = true;
    w.signaled = true;
    w.solicited = o == hw::WrOpcode::Send;
    w.imm_inv = 0xCAFEF00D;
    if (o == hw::WrOpcode::BindMw) w.bind = {0x1201, 0x1202, 0x3300, 0x6, 0x10000, 0x2000};
    if (hw::is_local_op(o)) return w;
    if (hw::wqe_has_raddr(o)) w.raddr = {0xDEADBEEF0008ull, 0x4242};
    if (hw::is_atomic(o)) w.atomic = {5, 6};
    if (t == hw::QpType::Ud) {
        w.ud = {ah_num, 0x123456, 0x80000001};
        if (ah_num == 0) {
            for (std::size_t i = 0; i < 16; ++i) w.av.dgid[i] = static_cast<std::uint8_t>(0xA0 + i);
            w.av.sgid_index = 3;
            w.av.hop_limit = 64;
            w.av.traffic_class = 0x28;
            w.av.sl = 2;
            w.av.grh = true;
            w.av.net_type = 1;
            w.av.flow_label = 0xABCDE;
            w.av.static_rate = 7;
            w.av.dmac = {0x02, 0x11, 0x22, 0x33, 0x44, 0x55};
        }
    }
    if (inl) {
        w.inline_data = true;
        w.inline_bytes = bytes.data();
        w.inline_len = static_cast<std::uint32_t>(bytes.size());
    } else if (hw::is_atomic(o)) {
        w.num_sge = 1;
        w.sge[0] = {0x3000, 8, 0x99};
    } else {
        w.num_sge = 3;
        w.sge[0] = {0x1000, 100, 0x1234};
        w.sge[1] = {0x2000, 0, 0x5678};
        w.sge[2] = {0xFFFFFFFF0000ull, 50, 0x9ABC};
    }
    return w;
}

// Every member of each value, written out here rather than taken from the
// codec's field maps, so that a member the codec forgot shows.
auto members(const hw::BindSeg& s) {
    return std::make_tuple(s.mw_rkey, s.new_rkey, s.mr_lkey, s.access, s.addr, s.length);
}
auto members(const hw::UdSeg& s) { return std::make_tuple(s.ah_num, s.dest_qpn, s.qkey); }
auto members(const hw::AddressVector& a) {
    return std::make_tuple(a.dgid, a.sgid_index, a.hop_limit, a.traffic_class, a.sl, a.grh, a.net_type,
                           a.flow_label, a.static_rate, a.dmac);
}
auto members(const hw::DataSeg& d) { return std::make_tuple(d.addr, d.length, d.lkey); }

void check_same(const hw::SendWqe& a, const hw::SendWqe& b, hw::QpType t) {
    CHECK(std::make_tuple(b.opcode, b.wr_id, b.fence, b.signaled, b.solicited, b.imm_inv) ==
          std::make_tuple(a.opcode, a.wr_id, a.fence, a.signaled, a.solicited, a.imm_inv));
    const hw::WrOpcode o = a.opcode;
    if (o == hw::WrOpcode::BindMw) CHECK(members(b.bind) == members(a.bind));
    if (hw::is_local_op(o)) {
        CHECK_FALSE(b.inline_data);
        CHECK(b.num_sge == 0);
        return;
    }
    if (hw::wqe_has_raddr(o)) CHECK(std::tie(b.raddr.remote_va, b.raddr.rkey) == std::tie(a.raddr.remote_va, a.raddr.rkey));
    if (hw::is_atomic(o))
        CHECK(std::tie(b.atomic.compare_add, b.atomic.swap) == std::tie(a.atomic.compare_add, a.atomic.swap));
    if (t == hw::QpType::Ud) {
        CHECK(members(b.ud) == members(a.ud));
        if (a.ud.ah_num == 0) CHECK(members(b.av) == members(a.av));
    }
    REQUIRE(b.inline_data == a.inline_data);
    if (a.inline_data) {
        REQUIRE(b.inline_len == a.inline_len);
        CHECK(std::memcmp(b.inline_bytes, a.inline_bytes, a.inline_len) == 0);
    } else {
        REQUIRE(b.num_sge == a.num_sge);
        for (std::uint32_t i = 0; i < a.num_sge; ++i) CHECK(members(b.sge[i]) == members(a.sge[i]));
    }
    CHECK(b.data_len() == a.data_len());
}

}  // namespace

TEST_CASE("send WQE: round trip for every opcode, QP type and data kind", "[hwspec][codec][wqe]") {
    std::vector<std::uint8_t> bytes(37);
    for (std::size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<std::uint8_t>(3 * i + 1);
    int trips = 0;
    for (hw::QpType t : kAllTypes)
        for (hw::WrOpcode o : kAllOpcodes)
            for (bool inl : {false, true})
                for (std::uint32_t ah : {0u, 9u}) {
                    if (inl && !hw::wqe_inline_allowed(o)) continue;
                    if (ah == 9 && t != hw::QpType::Ud) continue;
                    INFO("type " << int(t) << " opcode " << int(o) << " inline " << inl << " ah " << ah);
                    const hw::SendWqe w = sample(o, t, inl, ah, bytes);
                    std::vector<std::uint8_t> slot(512, 0xEE);
                    REQUIRE(hw::encode_send(w, t, slot.data(), 512) == hw::WqeFault::None);
                    // Every byte past the WQE is zero: the slot is cleared.
                    const std::uint64_t size = hw::send_wqe_size(w, t);
                    for (std::size_t i = size; i < slot.size(); ++i) REQUIRE(slot[i] == 0);
                    hw::SendWqe back;
                    REQUIRE(hw::decode_send(slot.data(), limits(t, 512), back) == hw::WqeFault::None);
                    check_same(w, back, t);
                    // A slot just large enough decodes the same; one segment
                    // unit less does not encode.
                    const auto tight = static_cast<std::uint32_t>(size);
                    std::vector<std::uint8_t> small(tight);
                    REQUIRE(hw::encode_send(w, t, small.data(), tight) == hw::WqeFault::None);
                    REQUIRE(hw::decode_send(small.data(), limits(t, tight), back) == hw::WqeFault::None);
                    check_same(w, back, t);
                    std::vector<std::uint8_t> less(tight - hw::kSegUnit, 0x5A);
                    CHECK(hw::encode_send(w, t, less.data(), tight - hw::kSegUnit) == hw::WqeFault::Truncated);
                    CHECK(less[0] == 0x5A);  // untouched
                    ++trips;
                }
    // RC and UC: 10 opcodes, 5 of them inline too; UD: the same with an AH and with an AV.
    CHECK(trips == 15 + 15 + 2 * 15);
}

TEST_CASE("send WQE: bytes where hw-spec 6.2 puts them", "[hwspec][codec][wqe]") {
    std::uint8_t slot[256];
    SECTION("RDMA WRITE WITH IMM: CTRL, RADDR, two DATA_SEGs") {
        hw::SendWqe w;
        w.opcode = hw::WrOpcode::RdmaWriteWithImm;
        w.signaled = true;
        w.solicited = true;
        w.imm_inv = 0xAABBCCDD;
        w.wr_id = 0x0102030405060708ull;
        w.raddr = {0xDEAD0000, 0x4242};
        w.num_sge = 2;
        w.sge[0] = {0x1000, 100, 0x1234};
        w.sge[1] = {0x2000, 50, 0x5678};
        REQUIRE(hw::encode_send(w, hw::QpType::Rc, slot, sizeof slot) == hw::WqeFault::None);
        CHECK(slot[0] == 1);                       // opcode [7:0]
        CHECK(slot[1] == ((1 << 1) | (1 << 2)));   // signaled bit 9, solicited bit 10
        CHECK(slot[2] == 2);                       // num_sge [23:16]
        CHECK(le(slot + 0x04, 4) == 0xAABBCCDD);   // imm_inv, host order
        CHECK(le(slot + 0x08, 8) == 0x0102030405060708ull);
        CHECK(le(slot + 0x10, 4) == 150);          // total_len: the SGE sum
        CHECK(le(slot + 0x20, 8) == 0xDEAD0000);   // RADDR right after the 32-byte CTRL
        CHECK(le(slot + 0x28, 4) == 0x4242);
        CHECK(le(slot + 0x30, 8) == 0x1000);       // DATA_SEG 0
        CHECK(le(slot + 0x38, 4) == 100);
        CHECK(le(slot + 0x3C, 4) == 0x1234);
        CHECK(le(slot + 0x4C, 4) == 0x5678);       // DATA_SEG 1's lkey
    }
    SECTION("SEND inline on UD with an AV: CTRL, UD, AV, INLINE_SEG padded") {
        const std::uint8_t data[5] = {9, 8, 7, 6, 5};
        hw::SendWqe w;
        w.opcode = hw::WrOpcode::Send;
        w.fence = true;
        w.ud = {0, 0x77, 0x11111111};
        w.av.dgid[15] = 0x42;
        w.av.hop_limit = 0x40;
        w.av.grh = true;
        w.av.dmac = {1, 2, 3, 4, 5, 6};
        w.inline_data = true;
        w.inline_bytes = data;
        w.inline_len = 5;
        std::memset(slot, 0xEE, sizeof slot);
        REQUIRE(hw::encode_send(w, hw::QpType::Ud, slot, 128) == hw::WqeFault::None);
        CHECK(slot[1] == ((1 << 0) | (1 << 3)));  // fence bit 8, inline_data bit 11
        CHECK(slot[2] == 0);                      // num_sge 0 with inline data
        CHECK(le(slot + 0x10, 4) == 5);
        CHECK(le(slot + 0x20, 4) == 0);            // UD: ah_num 0, an AV follows
        CHECK(le(slot + 0x24, 4) == 0x77);
        CHECK(le(slot + 0x28, 4) == 0x11111111);
        CHECK(slot[0x30 + 15] == 0x42);            // AV: dgid in wire order
        CHECK(slot[0x41] == 0x40);                 // hop_limit [15:8] of 0x40
        CHECK(le(slot + 0x40, 4) >> 28 == 1);      // grh bit 28
        CHECK(slot[0x48] == 1);                    // dmac in wire order
        CHECK(slot[0x4D] == 6);
        CHECK(le(slot + 0x50, 4) == 5);            // INLINE_SEG.byte_count
        CHECK(std::memcmp(slot + 0x54, data, 5) == 0);
        for (int i = 0x59; i < 0x60; ++i) CHECK(slot[i] == 0);  // padded to 16
        CHECK(slot[0x7F] == 0);                    // the slot's tail cleared
        CHECK(slot[0x80] == 0xEE);                 // nothing past the slot
    }
    SECTION("ATOMIC on RC: CTRL, RADDR, ATOMIC, the 8-byte result SGE") {
        hw::SendWqe w;
        w.opcode = hw::WrOpcode::AtomicFetchAndAdd;
        w.raddr = {0xBEEF0008, 7};
        w.atomic = {5, 0};
        w.num_sge = 1;
        w.sge[0] = {0x3000, 8, 0x99};
        REQUIRE(hw::encode_send(w, hw::QpType::Rc, slot, 128) == hw::WqeFault::None);
        CHECK(slot[0] == 6);
        CHECK(le(slot + 0x10, 4) == 8);
        CHECK(le(slot + 0x20, 8) == 0xBEEF0008);
        CHECK(le(slot + 0x30, 8) == 5);            // compare_add
        CHECK(le(slot + 0x38, 8) == 0);            // swap
        CHECK(le(slot + 0x40, 8) == 0x3000);
        CHECK(le(slot + 0x48, 4) == 8);
    }
    SECTION("BIND_MW: CTRL, BIND; LOCAL_INV: CTRL only") {
        hw::SendWqe w;
        w.opcode = hw::WrOpcode::BindMw;
        w.bind = {0x100, 0x1FF, 0x200, 0x22, 0x7000, 128};
        REQUIRE(hw::encode_send(w, hw::QpType::Uc, slot, 64) == hw::WqeFault::None);
        CHECK(slot[0] == 8);
        CHECK(le(slot + 0x20, 4) == 0x100);
        CHECK(le(slot + 0x24, 4) == 0x1FF);
        CHECK(le(slot + 0x28, 4) == 0x200);
        CHECK(le(slot + 0x2C, 4) == 0x22);
        CHECK(le(slot + 0x30, 8) == 0x7000);
        CHECK(le(slot + 0x38, 8) == 128);
        CHECK(hw::send_wqe_size(w, hw::QpType::Uc) == 64);
        w.opcode = hw::WrOpcode::LocalInv;
        w.imm_inv = 0x1234;
        CHECK(hw::send_wqe_size(w, hw::QpType::Rc) == 32);
    }
}

TEST_CASE("send WQE: the decoder refuses malformed WQEs and says why", "[hwspec][codec][wqe]") {
    std::uint8_t slot[128] = {};
    auto build = [&](hw::WrOpcode o, std::uint32_t nsge) {
        hw::SendWqe w;
        w.opcode = o;
        w.wr_id = 77;
        if (hw::wqe_has_raddr(o)) w.raddr = {0x1000, 1};
        w.num_sge = nsge;
        for (std::uint32_t i = 0; i < nsge; ++i) w.sge[i] = {0x100, hw::is_atomic(o) ? 8u : 10u, 2};
        std::memset(slot, 0, sizeof slot);
        REQUIRE(hw::encode_send(w, hw::QpType::Rc, slot, sizeof slot) == hw::WqeFault::None);
    };
    hw::SendWqe out;
    auto decode = [&](hw::SqLimits lim) {
        const hw::WqeFault f = hw::decode_send(slot, lim, out);
        CHECK(out.wr_id == 77);  // CTRL is read whatever follows, for the error CQE
        return f;
    };
    const hw::SqLimits rc = limits(hw::QpType::Rc, sizeof slot);

    build(hw::WrOpcode::Send, 1);
    put_le(slot, 1, 10);  // IBV_WR_TSO
    CHECK(decode(rc) == hw::WqeFault::BadOpcode);
    put_le(slot, 1, 0xFF);
    CHECK(decode(rc) == hw::WqeFault::BadOpcode);

    build(hw::WrOpcode::LocalInv, 0);
    slot[2] = 1;  // num_sge 1
    CHECK(decode(rc) == hw::WqeFault::LocalOpData);
    slot[2] = 0;
    slot[1] |= 1 << 3;  // inline_data
    CHECK(decode(rc) == hw::WqeFault::LocalOpData);

    build(hw::WrOpcode::Send, 3);
    CHECK(decode(rc) == hw::WqeFault::None);
    CHECK(decode(hw::SqLimits{hw::QpType::Rc, sizeof slot, 2, 0}) == hw::WqeFault::TooManySge);
    CHECK(decode(hw::SqLimits{hw::QpType::Rc, 64, hw::kMaxSge, 0}) == hw::WqeFault::Truncated);
    slot[2] = 33;  // more than the format's kMaxSge, whatever the QP allows
    CHECK(decode(hw::SqLimits{hw::QpType::Rc, sizeof slot, 255, 0}) == hw::WqeFault::TooManySge);

    build(hw::WrOpcode::Send, 2);
    put_le(slot + 0x10, 4, 21);  // total_len one more than the SGEs
    CHECK(decode(rc) == hw::WqeFault::LengthMismatch);
    CHECK(hw::wqe_fault_status(hw::WqeFault::LengthMismatch) == hw::WcStatus::LocLenErr);

    // Inline: RDMA READ may not, byte_count above max_inline or past the slot.
    build(hw::WrOpcode::RdmaRead, 0);
    slot[1] |= 1 << 3;
    CHECK(decode(rc) == hw::WqeFault::InlineNotAllowed);
    build(hw::WrOpcode::Send, 0);
    slot[1] |= 1 << 3;
    put_le(slot + 0x20, 4, 40);
    put_le(slot + 0x10, 4, 40);
    CHECK(decode(rc) == hw::WqeFault::None);
    CHECK(out.inline_len == 40);
    CHECK(out.inline_bytes == slot + 0x24);
    CHECK(decode(hw::SqLimits{hw::QpType::Rc, sizeof slot, 1, 39}) == hw::WqeFault::InlineTooLong);
    CHECK(decode(hw::SqLimits{hw::QpType::Rc, 64, 1, 512}) == hw::WqeFault::Truncated);
    put_le(slot + 0x20, 4, hw::kMaxInline + 1);
    CHECK(decode(hw::SqLimits{hw::QpType::Rc, sizeof slot, 1, 4096}) == hw::WqeFault::InlineTooLong);
    put_le(slot + 0x20, 4, 40);
    put_le(slot + 0x10, 4, 41);
    CHECK(decode(rc) == hw::WqeFault::LengthMismatch);

    // Atomics: the target 8-byte aligned, one 8-byte result SGE.
    build(hw::WrOpcode::AtomicCmpAndSwp, 1);
    CHECK(decode(rc) == hw::WqeFault::None);
    put_le(slot + 0x20, 8, 0x1004);
    CHECK(decode(rc) == hw::WqeFault::AtomicUnaligned);
    build(hw::WrOpcode::AtomicCmpAndSwp, 2);
    CHECK(decode(rc) == hw::WqeFault::AtomicResult);
    build(hw::WrOpcode::AtomicFetchAndAdd, 1);
    put_le(slot + 0x48, 4, 4);  // the result SGE's length
    CHECK(decode(rc) == hw::WqeFault::AtomicResult);

    // UD: the UD segment, and the AV when ah_num is 0, must fit the slot.
    build(hw::WrOpcode::Send, 0);
    CHECK(decode(hw::SqLimits{hw::QpType::Ud, 40, 1, 0}) == hw::WqeFault::Truncated);  // UD_SEG
    CHECK(decode(hw::SqLimits{hw::QpType::Ud, 64, 1, 0}) == hw::WqeFault::Truncated);  // ah_num 0: AV
    put_le(slot + 0x20, 4, 5);  // an AH instead
    CHECK(decode(hw::SqLimits{hw::QpType::Ud, 64, 1, 0}) == hw::WqeFault::None);
    CHECK(out.ud.ah_num == 5);

    CHECK(hw::decode_send(slot, hw::SqLimits{hw::QpType::Rc, 16, 1, 0}, out) == hw::WqeFault::Truncated);

    for (hw::WqeFault f : {hw::WqeFault::BadOpcode, hw::WqeFault::LocalOpData, hw::WqeFault::Truncated,
                           hw::WqeFault::TooManySge, hw::WqeFault::InlineNotAllowed, hw::WqeFault::InlineTooLong,
                           hw::WqeFault::AtomicUnaligned, hw::WqeFault::AtomicResult}) {
        CHECK(hw::wqe_fault_status(f) == hw::WcStatus::LocQpOpErr);
        CHECK(std::string(hw::to_string(f)) != "?");
    }
    CHECK(hw::wqe_fault_status(hw::WqeFault::None) == hw::WcStatus::Success);
}

TEST_CASE("send WQE: the encoder refuses what the format cannot carry", "[hwspec][codec][wqe]") {
    std::uint8_t slot[1024];
    std::memset(slot, 0x5A, sizeof slot);
    hw::SendWqe w;
    w.opcode = static_cast<hw::WrOpcode>(10);
    CHECK(hw::encode_send(w, hw::QpType::Rc, slot, sizeof slot) == hw::WqeFault::BadOpcode);
    w.opcode = hw::WrOpcode::BindMw;
    w.num_sge = 1;
    CHECK(hw::encode_send(w, hw::QpType::Rc, slot, sizeof slot) == hw::WqeFault::LocalOpData);
    w.opcode = hw::WrOpcode::RdmaRead;
    w.num_sge = 0;
    w.inline_data = true;
    CHECK(hw::encode_send(w, hw::QpType::Rc, slot, sizeof slot) == hw::WqeFault::InlineNotAllowed);
    w.opcode = hw::WrOpcode::Send;
    w.inline_len = hw::kMaxInline + 1;
    CHECK(hw::encode_send(w, hw::QpType::Rc, slot, sizeof slot) == hw::WqeFault::InlineTooLong);
    w.inline_data = false;
    w.num_sge = hw::kMaxSge + 1;
    CHECK(hw::encode_send(w, hw::QpType::Rc, slot, sizeof slot) == hw::WqeFault::TooManySge);
    for (std::uint8_t b : slot) REQUIRE(b == 0x5A);
}

TEST_CASE("opcodes and QP types: hw-spec 6.3", "[hwspec][codec][wqe]") {
    using O = hw::WrOpcode;
    using T = hw::QpType;
    // Rows of the 6.3 table: RC, UC, UD.
    const std::array<std::array<bool, 3>, 10> table{{
        {true, true, false},   // RDMA_WRITE
        {true, true, false},   // RDMA_WRITE_WITH_IMM
        {true, true, true},    // SEND
        {true, true, true},    // SEND_WITH_IMM
        {true, false, false},  // RDMA_READ
        {true, false, false},  // ATOMIC_CMP_AND_SWP
        {true, false, false},  // ATOMIC_FETCH_AND_ADD
        {true, false, false},  // LOCAL_INV
        {true, true, false},   // BIND_MW
        {true, true, false},   // SEND_WITH_INV
    }};
    for (std::size_t v = 0; v < table.size(); ++v) {
        const auto o = static_cast<O>(v);
        CHECK(hw::wqe_opcode_known(o));
        CHECK(hw::wqe_opcode_allowed(T::Rc, o) == table[v][0]);
        CHECK(hw::wqe_opcode_allowed(T::Uc, o) == table[v][1]);
        CHECK(hw::wqe_opcode_allowed(T::Ud, o) == table[v][2]);
    }
    // FLUSH (14) and ATOMIC_WRITE (15): RC only.
    for (O o : {O::Flush, O::AtomicWrite}) {
        CHECK(hw::wqe_opcode_known(o));
        CHECK(hw::wqe_opcode_allowed(T::Rc, o));
        CHECK_FALSE(hw::wqe_opcode_allowed(T::Uc, o));
        CHECK_FALSE(hw::wqe_opcode_allowed(T::Ud, o));
    }
    for (unsigned v = 10; v < 256; ++v) {
        if (v == 14 || v == 15) continue;
        CHECK_FALSE(hw::wqe_opcode_known(static_cast<O>(v)));
        CHECK_FALSE(hw::wqe_opcode_allowed(T::Rc, static_cast<O>(v)));
    }
}

TEST_CASE("WQE sizes: slots for a QP's capabilities", "[hwspec][codec][wqe]") {
    CHECK(hw::kSendWqeFixedMax == 32 + 48);  // CTRL + UD + AV beats RADDR + ATOMIC
    CHECK(hw::send_wqe_max_size(1, 0) == 96);
    CHECK(hw::send_wqe_max_size(2, 64) == 80 + 80);   // inline: 4 + 64 rounds to 80
    CHECK(hw::send_wqe_max_size(32, 0) == 80 + 512);
    CHECK(hw::send_inline_room(128) == 128 - 80 - 4);
    CHECK(hw::send_inline_room(64) == 0);
    CHECK(hw::recv_wqe_size(0) == 16);
    CHECK(hw::recv_wqe_size(2) == 48);
    // Whatever a QP with these caps posts fits a slot of send_wqe_max_size,
    // and the inline room of that slot holds at least max_inline bytes.
    std::vector<std::uint8_t> bytes(hw::kMaxInline, 1);
    for (std::uint32_t sge : {1u, 2u, 7u, 32u})
        for (std::uint32_t inl : {0u, 1u, 12u, 100u, 512u}) {
            const auto stride = static_cast<std::uint32_t>(hw::send_wqe_max_size(sge, inl));
            CHECK(hw::send_inline_room(stride) >= inl);
            for (hw::QpType t : kAllTypes)
                for (hw::WrOpcode o : kAllOpcodes) {
                    if (!hw::wqe_opcode_allowed(t, o)) continue;
                    hw::SendWqe w;
                    w.opcode = o;
                    if (!hw::is_local_op(o)) w.num_sge = hw::is_atomic(o) ? 1 : sge;
                    CHECK(hw::send_wqe_size(w, t) <= stride);
                    if (hw::wqe_inline_allowed(o)) {
                        w.num_sge = 0;
                        w.inline_data = true;
                        w.inline_bytes = bytes.data();
                        w.inline_len = inl;
                        CHECK(hw::send_wqe_size(w, t) <= stride);
                    }
                }
        }
}

TEST_CASE("receive WQE: round trip, bytes and refusals", "[hwspec][codec][wqe]") {
    hw::RecvWqe w;
    w.wr_id = 0xABCDEF;
    w.num_sge = 2;
    w.sge[0] = {0x1000, 4096, 0x11};
    w.sge[1] = {0x9000, 10, 0x22};
    std::uint8_t slot[64];
    std::memset(slot, 0xEE, sizeof slot);
    REQUIRE(hw::encode_recv(w, slot, 64) == hw::WqeFault::None);
    CHECK(le(slot, 8) == 0xABCDEF);
    CHECK(slot[8] == 2);
    CHECK(le(slot + 0x10, 8) == 0x1000);
    CHECK(le(slot + 0x18, 4) == 4096);
    CHECK(le(slot + 0x2C, 4) == 0x22);
    for (int i = 0x30; i < 64; ++i) CHECK(slot[i] == 0);
    hw::RecvWqe back;
    REQUIRE(hw::decode_recv(slot, 64, 2, back) == hw::WqeFault::None);
    CHECK(back.wr_id == w.wr_id);
    REQUIRE(back.num_sge == 2);
    CHECK(back.sge[1].addr == 0x9000);
    CHECK(back.sge[1].length == 10);
    CHECK(back.sge[1].lkey == 0x22);
    CHECK(hw::decode_recv(slot, 64, 1, back) == hw::WqeFault::TooManySge);
    CHECK(back.wr_id == w.wr_id);
    CHECK(hw::decode_recv(slot, 32, 2, back) == hw::WqeFault::Truncated);
    slot[8] = 200;
    CHECK(hw::decode_recv(slot, 64, 255, back) == hw::WqeFault::TooManySge);
    std::memset(slot, 0x5A, sizeof slot);
    CHECK(hw::encode_recv(w, slot, 32) == hw::WqeFault::Truncated);
    w.num_sge = hw::kMaxSge + 1;
    CHECK(hw::encode_recv(w, slot, 64) == hw::WqeFault::TooManySge);
    CHECK(slot[0] == 0x5A);
}

TEST_CASE("AV: the segment, and the layouts that embed it", "[hwspec][codec]") {
    // dgid, sgid_index, hop_limit, traffic_class, sl, grh, net_type,
    // flow_label, static_rate, dmac: every field at its largest.
    const hw::AddressVector a{{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 0xFF}, 0xFF, 64, 3, 15, true,
                              3, 0xFFFFF, 0xFF, {6, 5, 4, 3, 2, 1}};
    // Written through QPC's own av_* descriptors, read back as an AV at the
    // QPC's av_dgid offset.
    std::uint8_t q[hw::qpc::kSize] = {};
    hw::set_bytes(q, sizeof q, hw::qpc::av_dgid, a.dgid.data(), 16);
    hw::set(q, hw::qpc::av_sgid_index, a.sgid_index);
    hw::set(q, hw::qpc::av_hop_limit, a.hop_limit);
    hw::set(q, hw::qpc::av_traffic_class, a.traffic_class);
    hw::set(q, hw::qpc::av_sl, a.sl);
    hw::set(q, hw::qpc::av_grh, a.grh ? 1 : 0);
    hw::set(q, hw::qpc::av_net_type, a.net_type);
    hw::set(q, hw::qpc::av_flow_label, a.flow_label);
    hw::set(q, hw::qpc::av_static_rate, a.static_rate);
    hw::set_bytes(q, sizeof q, hw::qpc::av_dmac, a.dmac.data(), 6);
    const hw::AddressVector b = hw::decode_av(q + hw::qpc::av_dgid.offset);
    CHECK(members(b) == members(a));
    std::uint8_t ah[hw::ah_entry::kSize] = {};
    hw::encode_av(ah + hw::ah_entry::av_dgid.offset, a);
    CHECK(hw::get(ah, hw::ah_entry::av_flow_label) == 0xFFFFF);
    CHECK(hw::get(ah, hw::ah_entry::av_hop_limit) == 64);
    CHECK(hw::get(ah, hw::ah_entry::pdn) == 0);  // nothing outside the AV written
}

TEST_CASE("CQE: round trip, bytes, and the phase bit across ring wraps", "[hwspec][codec][cqe]") {
    hw::Cqe c;
    c.wr_id = 0x8877665544332211ull;
    c.status = hw::WcStatus::RemAccessErr;
    c.opcode = hw::WcOpcode::RecvRdmaWithImm;
    c.wc_flags = hw::wc_flags::kWithImm | hw::wc_flags::kGrh;
    c.sl = 5;
    c.vendor_err = static_cast<std::uint32_t>(hw::ErrorCause::RemAccess);
    c.byte_len = 4096;
    c.imm_inv = 0x01020304;
    c.qp_num = 0x1ABCDEF;  // wider than 24 bits: truncated
    c.src_qp = 0x99;
    c.pkey_index = 0x7;
    c.slid = 0x1234;
    c.dlid_path_bits = 3;
    c.is_send = true;
    c.wqe_index = 0xFFFFFFFE;
    std::uint8_t e[hw::kCqeSize];
    std::memset(e, 0xEE, sizeof e);
    hw::encode_cqe(c, 0, 4, e);
    CHECK(le(e, 8) == c.wr_id);
    CHECK(e[0x08] == 10);    // status
    CHECK(e[0x09] == 129);   // opcode
    CHECK(e[0x0A] == 3);     // wc_flags
    CHECK(e[0x0B] == 5);     // sl [27:24]
    CHECK(le(e + 0x18, 4) == 0xABCDEF);
    CHECK(e[0x25] == 1);     // is_send bit 8 of 0x24
    CHECK(le(e + 0x28, 4) == 0xFFFFFFFE);
    for (int i = 0x2C; i < 0x3F; ++i) CHECK(e[i] == 0);  // reserved: cleared
    CHECK(e[0x3F] == 0x80);  // owner 1: first pass
    const hw::Cqe d = hw::decode_cqe(e);
    CHECK(d.wr_id == c.wr_id);
    CHECK(d.status == c.status);
    CHECK(d.opcode == c.opcode);
    CHECK(d.wc_flags == c.wc_flags);
    CHECK(d.sl == 5);
    CHECK(d.vendor_err == c.vendor_err);
    CHECK(d.byte_len == 4096);
    CHECK(d.imm_inv == c.imm_inv);
    CHECK(d.qp_num == 0xABCDEF);
    CHECK(d.src_qp == 0x99);
    CHECK(d.pkey_index == 7);
    CHECK(d.slid == 0x1234);
    CHECK(d.dlid_path_bits == 3);
    CHECK(d.is_send);
    CHECK(d.wqe_index == 0xFFFFFFFE);

    // A ring of 4, zeroed as the driver hands it over: the device writes
    // CQEs 0..11, the driver consumes each once, never an old pass's.
    constexpr std::uint8_t kLog = 2;
    std::vector<std::uint8_t> ring(hw::kCqeSize << kLog, 0);
    std::uint32_t ci = 0;
    for (std::uint32_t p = 0; p < 12; ++p) {
        CHECK(hw::cqe_peek(ring.data(), ci, kLog) == nullptr);  // nothing new yet
        hw::Cqe n;
        n.wr_id = p;
        hw::encode_cqe(n, p, kLog, ring.data() + hw::ring_entry_offset(hw::kCqRing, p, kLog));
        CHECK(hw::get(ring.data() + hw::ring_entry_offset(hw::kCqRing, p, kLog), hw::kCqeSize, hw::cqe::owner) ==
              ((p >> kLog) & 1 ? 0u : 1u));
        const std::uint8_t* got = hw::cqe_peek(ring.data(), ci, kLog);
        REQUIRE(got != nullptr);
        CHECK(hw::decode_cqe(got).wr_id == p);
        ++ci;
    }
    // Restamping an entry for another ring size (a CQ resize) moves its phase.
    std::uint8_t one[hw::kCqeSize] = {};
    hw::stamp_owner(hw::kCqRing, one, 5, 2);  // second pass of 4: owner 0
    CHECK(hw::get(one, hw::kCqeSize, hw::cqe::owner) == 0);
    hw::stamp_owner(hw::kCqRing, one, 5, 3);  // first pass of 8: owner 1
    CHECK(hw::get(one, hw::kCqeSize, hw::cqe::owner) == 1);
}

TEST_CASE("EQE: round trip, owner left to the ring writer, phase wrap", "[hwspec][codec][eqe]") {
    hw::Eqe v;
    v.event_type = hw::EventType::CmdCompletion;
    v.obj_num = 0x1000001;  // 24 bits: truncated
    v.token = 0xFEEDBEEF;
    v.cmd_status = hw::CmdStatus::BadParam;
    v.aux = 0x42;
    std::uint8_t e[hw::kEqeSize];
    std::memset(e, 0xEE, sizeof e);
    hw::encode_eqe(v, e);
    CHECK(e[0] == 0x81);
    CHECK(le(e + 0x04, 4) == 1);
    CHECK(le(e + 0x08, 4) == 0xFEEDBEEF);
    CHECK(e[0x0C] == 0x02);
    CHECK(le(e + 0x10, 4) == 0x42);
    CHECK(le(e + 0x1C, 4) == 0);  // owner 0: not the source's to set
    const hw::Eqe d = hw::decode_eqe(e);
    CHECK(d.event_type == hw::EventType::CmdCompletion);
    CHECK(d.obj_num == 1);
    CHECK(d.token == 0xFEEDBEEF);
    CHECK(d.cmd_status == hw::CmdStatus::BadParam);
    CHECK(d.aux == 0x42);

    constexpr std::uint8_t kLog = 1;
    std::vector<std::uint8_t> ring(hw::kEqeSize << kLog, 0);
    for (std::uint32_t p = 0; p < 6; ++p) {
        CHECK(hw::eqe_peek(ring.data(), p, kLog) == nullptr);
        hw::Eqe n;
        n.event_type = hw::EventType::PortActive;
        n.obj_num = p;
        std::uint8_t* slot = ring.data() + hw::ring_entry_offset(hw::kEqRing, p, kLog);
        hw::encode_eqe(n, slot);
        hw::stamp_owner(hw::kEqRing, slot, p, kLog);
        const std::uint8_t* got = hw::eqe_peek(ring.data(), p, kLog);
        REQUIRE(got != nullptr);
        CHECK(hw::decode_eqe(got).obj_num == p);
        CHECK(hw::eqe_peek(ring.data(), p + 1, kLog) == nullptr);  // the next is an old pass's
    }
}

// IBA 1.5's memory placement extensions (hw-spec 6.2, 6.3): ATOMIC_WRITE is
// CTRL, RADDR and exactly 8 inline bytes; FLUSH is CTRL (the FETH bits in
// imm_inv) and RADDR (the range's length in flush_len), no data.
TEST_CASE("send WQE: ATOMIC_WRITE and FLUSH", "[hwspec][codec][wqe]") {
    CHECK(hw::wqe_opcode_allowed(hw::QpType::Rc, hw::WrOpcode::AtomicWrite));
    CHECK(hw::wqe_opcode_allowed(hw::QpType::Rc, hw::WrOpcode::Flush));
    for (hw::QpType t : {hw::QpType::Uc, hw::QpType::Ud}) {
        CHECK_FALSE(hw::wqe_opcode_allowed(t, hw::WrOpcode::AtomicWrite));
        CHECK_FALSE(hw::wqe_opcode_allowed(t, hw::WrOpcode::Flush));
    }
    const hw::SqLimits rc = limits(hw::QpType::Rc, 64);
    std::uint8_t slot[64];
    hw::SendWqe back;

    SECTION("ATOMIC_WRITE: bytes where 6.2 puts them, whatever max_inline") {
        const std::uint8_t value[8] = {1, 2, 3, 4, 5, 6, 7, 8};
        hw::SendWqe w;
        w.opcode = hw::WrOpcode::AtomicWrite;
        w.wr_id = 5;
        w.signaled = true;
        w.raddr = {0x7f0012345678ull, 0xabcd};
        w.inline_data = true;
        w.inline_bytes = value;
        w.inline_len = 8;
        REQUIRE(hw::send_wqe_size(w, hw::QpType::Rc) == 32 + 16 + 16);
        REQUIRE(hw::encode_send(w, hw::QpType::Rc, slot, sizeof slot) == hw::WqeFault::None);
        CHECK(slot[0] == 15);
        CHECK((slot[1] & (1 << 3)) != 0);  // inline_data
        CHECK(le(slot + 0x10, 4) == 8);  // total_len
        CHECK(le(slot + 0x20, 8) == 0x7f0012345678ull);
        CHECK(le(slot + 0x28, 4) == 0xabcd);
        CHECK(le(slot + 0x30, 4) == 8);  // INLINE_SEG.byte_count
        CHECK(std::memcmp(slot + 0x34, value, 8) == 0);
        REQUIRE(hw::decode_send(slot, hw::SqLimits{hw::QpType::Rc, 64, 1, 0}, back) == hw::WqeFault::None);
        CHECK(back.raddr.remote_va == w.raddr.remote_va);
        CHECK(back.raddr.rkey == w.raddr.rkey);
        REQUIRE(back.inline_len == 8);
        CHECK(std::memcmp(back.inline_bytes, value, 8) == 0);
        // A misaligned target is the responder's to refuse, not the codec's.
        put_le(slot + 0x20, 8, 0x1004);
        CHECK(hw::decode_send(slot, rc, back) == hw::WqeFault::None);
        // Not 8 bytes, or not inline: refused, with LOC_QP_OP_ERR.
        w.inline_len = 4;
        CHECK(hw::encode_send(w, hw::QpType::Rc, slot, sizeof slot) == hw::WqeFault::PlacementData);
        w.inline_len = 8;
        REQUIRE(hw::encode_send(w, hw::QpType::Rc, slot, sizeof slot) == hw::WqeFault::None);
        put_le(slot + 0x30, 4, 4);
        put_le(slot + 0x10, 4, 4);
        CHECK(hw::decode_send(slot, rc, back) == hw::WqeFault::PlacementData);
        hw::SendWqe sg = w;
        sg.inline_data = false;
        sg.num_sge = 1;
        sg.sge[0] = {0x100, 8, 2};
        CHECK(hw::encode_send(sg, hw::QpType::Rc, slot, sizeof slot) == hw::WqeFault::PlacementData);
        slot[1] &= static_cast<std::uint8_t>(~(1 << 3));  // a WQE that says SGE instead
        CHECK(hw::decode_send(slot, rc, back) == hw::WqeFault::PlacementData);
        CHECK(hw::wqe_fault_status(hw::WqeFault::PlacementData) == hw::WcStatus::LocQpOpErr);
    }
    SECTION("FLUSH: FETH bits in imm_inv, the length in RADDR.flush_len") {
        hw::SendWqe w;
        w.opcode = hw::WrOpcode::Flush;
        w.wr_id = 6;
        w.imm_inv = hw::wqe_flush_feth(1, 1);
        w.raddr = {0x2000, 0x77, 4096};
        REQUIRE(hw::send_wqe_size(w, hw::QpType::Rc) == 32 + 16);
        REQUIRE(hw::encode_send(w, hw::QpType::Rc, slot, sizeof slot) == hw::WqeFault::None);
        CHECK(slot[0] == 14);
        CHECK(le(slot + 0x04, 4) == 0x11);
        CHECK(le(slot + 0x10, 4) == 0);  // no data
        CHECK(le(slot + 0x2C, 4) == 4096);
        REQUIRE(hw::decode_send(slot, rc, back) == hw::WqeFault::None);
        CHECK(back.raddr.flush_len == 4096);
        CHECK(hw::wqe_flush_placement(back.imm_inv) == 1);
        CHECK(hw::wqe_flush_selectivity(back.imm_inv) == 1);
        CHECK(hw::wqe_flush_feth(2, 0) == 0x02);
        // Data on a FLUSH: refused.
        w.inline_data = true;
        CHECK(hw::encode_send(w, hw::QpType::Rc, slot, sizeof slot) == hw::WqeFault::InlineNotAllowed);
        w.inline_data = false;
        w.num_sge = 1;
        w.sge[0] = {0x100, 8, 2};
        CHECK(hw::encode_send(w, hw::QpType::Rc, slot, sizeof slot) == hw::WqeFault::PlacementData);
        w.num_sge = 0;
        REQUIRE(hw::encode_send(w, hw::QpType::Rc, slot, sizeof slot) == hw::WqeFault::None);
        slot[2] = 1;  // num_sge 1, the SGE past the RADDR
        put_le(slot + 0x10, 4, 8);
        put_le(slot + 0x38, 4, 8);
        CHECK(hw::decode_send(slot, rc, back) == hw::WqeFault::PlacementData);
    }
}
