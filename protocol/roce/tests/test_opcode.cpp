// The opcode table against IBA's list of headers per opcode (ref_frame.h's
// ref_opcodes(), written out from the spec), with offsets worked out by hand.
#include <catch2/catch.hpp>

#include <set>

#include "ref_frame.h"
#include "simnic/roce/opcode.h"

using namespace simnic::roce;
namespace ref = simnic::tb::ref;

namespace {

struct ExpectedOffsets {
    uint8_t opcode;
    // Offsets from the start of the BTH, 0 if absent, in Ext order:
    // DETH, FETH, RETH, AtomicETH, AETH, AtomicAckETH, ImmDt, IETH.
    std::array<uint8_t, kNumExt> off;
};

// Worked out by hand: BTH is 12 bytes; DETH 8, FETH 4, RETH 16, AtomicETH 28, AETH 4,
// AtomicAckETH 8, ImmDt 4, IETH 4, laid out in that order.
const ExpectedOffsets kOffsets[] = {
    {0x03, {0, 0, 0, 0, 0, 0, 12, 0}},   // SEND_LAST_WITH_IMMEDIATE: ImmDt at 12
    {0x05, {0, 0, 0, 0, 0, 0, 12, 0}},
    {0x06, {0, 0, 12, 0, 0, 0, 0, 0}},   // WRITE_FIRST: RETH at 12
    {0x09, {0, 0, 0, 0, 0, 0, 12, 0}},
    {0x0a, {0, 0, 12, 0, 0, 0, 0, 0}},
    {0x0b, {0, 0, 12, 0, 0, 0, 28, 0}},  // RETH 12..27, ImmDt 28..31
    {0x0c, {0, 0, 12, 0, 0, 0, 0, 0}},
    {0x0d, {0, 0, 0, 0, 12, 0, 0, 0}},
    {0x0f, {0, 0, 0, 0, 12, 0, 0, 0}},
    {0x10, {0, 0, 0, 0, 12, 0, 0, 0}},
    {0x11, {0, 0, 0, 0, 12, 0, 0, 0}},
    {0x12, {0, 0, 0, 0, 12, 16, 0, 0}},  // AETH 12..15, AtomicAckETH 16..23
    {0x13, {0, 0, 0, 12, 0, 0, 0, 0}},   // AtomicETH 12..39
    {0x14, {0, 0, 0, 12, 0, 0, 0, 0}},
    {0x16, {0, 0, 0, 0, 0, 0, 0, 12}},
    {0x17, {0, 0, 0, 0, 0, 0, 0, 12}},
    {0x23, {0, 0, 0, 0, 0, 0, 12, 0}},
    {0x25, {0, 0, 0, 0, 0, 0, 12, 0}},
    {0x26, {0, 0, 12, 0, 0, 0, 0, 0}},
    {0x29, {0, 0, 0, 0, 0, 0, 12, 0}},
    {0x2a, {0, 0, 12, 0, 0, 0, 0, 0}},
    {0x2b, {0, 0, 12, 0, 0, 0, 28, 0}},
    {0x64, {12, 0, 0, 0, 0, 0, 0, 0}},   // DETH 12..19
    {0x65, {12, 0, 0, 0, 0, 0, 20, 0}},  // DETH 12..19, ImmDt 20..23
    {0x1c, {0, 12, 16, 0, 0, 0, 0, 0}},  // FLUSH: FETH 12..15, RETH 16..31
    {0x1d, {0, 0, 12, 0, 0, 0, 0, 0}},   // ATOMIC WRITE: RETH 12..27
};

uint32_t expected_ext_mask(uint32_t ref_exts) {
    uint32_t m = 0;
    if (ref_exts & ref::kDeth) m |= kHasDeth;
    if (ref_exts & ref::kFeth) m |= kHasFeth;
    if (ref_exts & ref::kReth) m |= kHasReth;
    if (ref_exts & ref::kAtomicEth) m |= kHasAtomicEth;
    if (ref_exts & ref::kAeth) m |= kHasAeth;
    if (ref_exts & ref::kAtomicAck) m |= kHasAtomicAckEth;
    if (ref_exts & ref::kImm) m |= kHasImmDt;
    if (ref_exts & ref::kIeth) m |= kHasIeth;
    return m;
}

constexpr uint32_t kExtMask =
    kHasDeth | kHasFeth | kHasReth | kHasAtomicEth | kHasAeth | kHasAtomicAckEth | kHasImmDt | kHasIeth;

}  // namespace

// The CNP (0x81, RoCE v2 annex A17.9.3) is in the table too; test_cnp_ecn.cpp
// checks its entry.
TEST_CASE("opcode table: valid opcodes are exactly IBA's RC, UC and UD opcodes and the CNP", "[opcode]") {
    std::set<unsigned> valid;
    for (const auto& r : ref::ref_opcodes()) valid.insert(r.opcode);
    REQUIRE(valid.size() == 39);
    for (unsigned v = 0; v < 256; ++v) {
        INFO("opcode 0x" << std::hex << v);
        bool expect = (v <= 0x14) || v == 0x16 || v == 0x17 || v == 0x1c || v == 0x1d ||
                      (v >= 0x20 && v <= 0x2b) ||
                      v == 0x64 || v == 0x65;
        CHECK(valid.count(v) == (expect ? 1u : 0u));
        expect = expect || v == 0x81;
        CHECK(kOpcodeTable[v].valid() == expect);
        CHECK(opcode_info(static_cast<uint8_t>(v)).valid() == expect);
        if (!expect) CHECK(kOpcodeTable[v].name == nullptr);
    }
}

TEST_CASE("opcode table: explicit invalid ranges", "[opcode]") {
    CHECK_FALSE(kOpcodeTable[0x15].valid());
    for (unsigned v = 0x18; v <= 0x1b; ++v) CHECK_FALSE(kOpcodeTable[v].valid());
    for (unsigned v = 0x1e; v <= 0x1f; ++v) CHECK_FALSE(kOpcodeTable[v].valid());
    for (unsigned v = 0x2c; v <= 0x63; ++v) CHECK_FALSE(kOpcodeTable[v].valid());
    for (unsigned v = 0x66; v <= 0x80; ++v) CHECK_FALSE(kOpcodeTable[v].valid());
    for (unsigned v = 0x82; v <= 0xff; ++v) CHECK_FALSE(kOpcodeTable[v].valid());
}

TEST_CASE("opcode table: headers, payload and role per opcode", "[opcode]") {
    for (const auto& r : ref::ref_opcodes()) {
        const OpcodeInfo& info = kOpcodeTable[r.opcode];
        INFO(r.name);
        REQUIRE(info.valid());
        CHECK(std::string(info.name) == r.name);
        CHECK((info.mask & kExtMask) == expected_ext_mask(r.exts));
        CHECK(unsigned(info.hdr_bytes) == r.hdr_bytes);
        CHECK(info.has(kPayload) == r.payload);

        bool first = info.has(kFirst), last = info.has(kLast), middle = info.has(kMiddle);
        switch (r.role) {
        case ref::Role::First: CHECK((first && !last && !middle)); break;
        case ref::Role::Middle: CHECK((!first && !last && middle)); break;
        case ref::Role::Last: CHECK((!first && last && !middle)); break;
        case ref::Role::Only: CHECK((first && last && !middle)); CHECK(info.has(kOnly)); break;
        }

        bool request = r.kind == ref::Kind::Send || r.kind == ref::Kind::Write ||
                       r.kind == ref::Kind::ReadReq || r.kind == ref::Kind::Atomic ||
                       r.kind == ref::Kind::AtomicWrite || r.kind == ref::Kind::Flush;
        CHECK(info.has(kRequest) == request);
        CHECK(info.has(kResponse) == !request);
        CHECK(info.has(kSend) == (r.kind == ref::Kind::Send));
        CHECK(info.has(kWrite) == (r.kind == ref::Kind::Write));
        CHECK(info.has(kRead) == (r.kind == ref::Kind::ReadReq || r.kind == ref::Kind::ReadResp));
        CHECK(info.has(kAtomic) == (r.kind == ref::Kind::Atomic || r.kind == ref::Kind::AtomicAck));
        CHECK(info.has(kAtomicWrite) == (r.kind == ref::Kind::AtomicWrite));
        CHECK(info.has(kFlush) == (r.kind == ref::Kind::Flush));

        // A receive WQE is consumed by every SEND packet and by RDMA WRITE
        // with immediate (IBA 9.7.5, 9.4.3); by nothing else.
        bool write_imm = r.kind == ref::Kind::Write && (r.exts & ref::kImm);
        CHECK(info.has(kUsesRecvWqe) == (r.kind == ref::Kind::Send || write_imm));
        // A completion arises at the receiver of the packet that ends a
        // message: SEND last/only, WRITE with immediate, READ response
        // last/only, atomic ACK.
        bool ends = r.role == ref::Role::Last || r.role == ref::Role::Only;
        bool completes = (r.kind == ref::Kind::Send && ends) || (write_imm && ends) ||
                         (r.kind == ref::Kind::ReadResp && ends) || r.kind == ref::Kind::AtomicAck;
        CHECK(info.has(kCompletes) == completes);

        // Transport from the top three bits.
        Transport t = opcode_transport(r.opcode);
        if (r.opcode < 0x20) CHECK(t == Transport::RC);
        else if (r.opcode < 0x40) CHECK(t == Transport::UC);
        else CHECK(t == Transport::UD);

        // has(Ext) agrees with the mask.
        CHECK(info.has(Ext::DETH) == bool(r.exts & ref::kDeth));
        CHECK(info.has(Ext::FETH) == bool(r.exts & ref::kFeth));
        CHECK(info.has(Ext::RETH) == bool(r.exts & ref::kReth));
        CHECK(info.has(Ext::AtomicETH) == bool(r.exts & ref::kAtomicEth));
        CHECK(info.has(Ext::AETH) == bool(r.exts & ref::kAeth));
        CHECK(info.has(Ext::AtomicAckETH) == bool(r.exts & ref::kAtomicAck));
        CHECK(info.has(Ext::ImmDt) == bool(r.exts & ref::kImm));
        CHECK(info.has(Ext::IETH) == bool(r.exts & ref::kIeth));
    }
}

TEST_CASE("opcode table: extension header offsets", "[opcode]") {
    std::set<unsigned> covered;
    for (const ExpectedOffsets& e : kOffsets) {
        INFO("opcode 0x" << std::hex << unsigned(e.opcode));
        const OpcodeInfo& info = kOpcodeTable[e.opcode];
        for (size_t i = 0; i < kNumExt; ++i) {
            INFO("ext " << i);
            CHECK(unsigned(info.ext_off[i]) == e.off[i]);
            CHECK(info.offset(static_cast<Ext>(i)) == e.off[i]);
        }
        covered.insert(e.opcode);
    }
    // Every other valid opcode has no extension header: all offsets 0, header 12.
    for (const auto& r : ref::ref_opcodes()) {
        if (covered.count(r.opcode)) continue;
        INFO(r.name);
        CHECK(r.exts == 0u);
        for (size_t i = 0; i < kNumExt; ++i) CHECK(unsigned(kOpcodeTable[r.opcode].ext_off[i]) == 0);
        CHECK(unsigned(kOpcodeTable[r.opcode].hdr_bytes) == 12);
    }
}

TEST_CASE("opcode table: extension header sizes", "[opcode]") {
    CHECK(kBthBytes == 12);
    CHECK(unsigned(kExtBytes[size_t(Ext::DETH)]) == 8);
    CHECK(unsigned(kExtBytes[size_t(Ext::FETH)]) == 4);
    CHECK(unsigned(kExtBytes[size_t(Ext::RETH)]) == 16);
    CHECK(unsigned(kExtBytes[size_t(Ext::AtomicETH)]) == 28);
    CHECK(unsigned(kExtBytes[size_t(Ext::AETH)]) == 4);
    CHECK(unsigned(kExtBytes[size_t(Ext::AtomicAckETH)]) == 8);
    CHECK(unsigned(kExtBytes[size_t(Ext::ImmDt)]) == 4);
    CHECK(unsigned(kExtBytes[size_t(Ext::IETH)]) == 4);
}

TEST_CASE("opcode table: RC and UC send/write entries match apart from the transport",
          "[opcode]") {
    for (unsigned low = 0; low <= 0x0b; ++low) {
        INFO("low 0x" << std::hex << low);
        CHECK(kOpcodeTable[low].mask == kOpcodeTable[0x20 | low].mask);
        CHECK(kOpcodeTable[low].hdr_bytes == kOpcodeTable[0x20 | low].hdr_bytes);
    }
}
