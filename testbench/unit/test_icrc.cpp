// CRC-32 and the RoCE v2 ICRC against zlib and the masking rules of IBA
// annex A17 (facts.md 6).
#include <catch2/catch.hpp>

#include <random>
#include <set>

#include "ref_frame.h"
#include "simnic/roce/icrc.h"

namespace roce = simnic::roce;
namespace ref = simnic::tb::ref;

namespace {
// zlib returns 0 for a null buffer whatever the initial value (its way of
// asking for the initial CRC), so always give it a real address.
uint32_t zlib_crc(uint32_t init, const std::vector<uint8_t>& b) {
    static const uint8_t kEmpty[1] = {0};
    const uint8_t* p = b.empty() ? kEmpty : b.data();
    return static_cast<uint32_t>(::crc32(init, p, static_cast<uInt>(b.size())));
}
}  // namespace

TEST_CASE("crc32: known check values", "[icrc]") {
    const uint8_t check[] = {'1', '2', '3', '4', '5', '6', '7', '8', '9'};
    CHECK(roce::crc32(0, check, 9) == 0xcbf43926u);  // the CRC-32 check value
    CHECK(roce::crc32(0, nullptr, 0) == 0u);
    CHECK(roce::crc32(0x12345678u, check, 0) == 0x12345678u);
    // Continuing a CRC equals computing it in one go.
    CHECK(roce::crc32(roce::crc32(0, check, 4), check + 4, 5) == 0xcbf43926u);
}

TEST_CASE("crc32: equals zlib on random buffers of every length 0..300", "[icrc]") {
    std::mt19937_64 rng(0xc0ffee);
    for (size_t len = 0; len <= 300; ++len) {
        for (int rep = 0; rep < 4; ++rep) {
            std::vector<uint8_t> b(len);
            for (auto& x : b) x = static_cast<uint8_t>(rng());
            uint32_t init = rep == 0 ? 0u : static_cast<uint32_t>(rng());
            INFO("len " << len << " init " << init);
            CHECK(roce::crc32(init, b.data(), b.size()) == zlib_crc(init, b));
        }
    }
}

TEST_CASE("crc32: equals zlib on long buffers, MTU-sized and beyond", "[icrc]") {
    std::mt19937_64 rng(0x1c2c);
    std::vector<uint8_t> b(9100);
    for (auto& x : b) x = static_cast<uint8_t>(rng());
    for (size_t len : {301u, 320u, 1024u, 1500u, 2047u, 4096u, 4100u, 4113u, 8192u, 9000u}) {
        for (size_t start : {0u, 1u, 3u, 8u, 13u}) {
            const uint32_t init = static_cast<uint32_t>(rng());
            INFO("len " << len << " start " << start);
            std::vector<uint8_t> s(b.begin() + long(start), b.begin() + long(start + len));
            CHECK(roce::crc32(init, b.data() + start, len) == zlib_crc(init, s));
        }
    }
}

TEST_CASE("crc32: unaligned starts", "[icrc]") {
    std::mt19937_64 rng(7);
    std::vector<uint8_t> b(600);
    for (auto& x : b) x = static_cast<uint8_t>(rng());
    for (size_t start = 0; start < 16; ++start) {
        for (size_t len : {0u, 1u, 7u, 8u, 9u, 63u, 64u, 65u, 257u, 511u}) {
            uint32_t z = static_cast<uint32_t>(::crc32(0, b.data() + start, static_cast<uInt>(len)));
            CHECK(roce::crc32(0, b.data() + start, len) == z);
        }
    }
}

TEST_CASE("compute_icrc: equals the zlib computation over masked bytes for every vector",
          "[icrc]") {
    for (const auto& v : ref::packet_core_ref_vectors()) {
        INFO(v.name);
        const auto& f = v.built;
        uint32_t got = roce::compute_icrc(f.bytes.data(), f.bytes.size(), f.l3, f.l4,
                                          v.spec.ipv6 ? roce::IpVersion::V6 : roce::IpVersion::V4);
        CHECK(got == f.icrc);
    }
}

namespace {

// Which bytes of [l3, len - 4) the ICRC must ignore.
std::set<size_t> masked_offsets(const ref::RefFrame& f, bool ipv6) {
    std::set<size_t> m;
    if (!ipv6) {
        m = {f.l3 + 1, f.l3 + 8, f.l3 + 10, f.l3 + 11};  // TOS, TTL, checksum
    } else {
        // Byte 0's low nibble (traffic class) is handled separately.
        m = {f.l3 + 1, f.l3 + 2, f.l3 + 3, f.l3 + 7};  // TC/flow label, hop limit
    }
    m.insert(f.l4 + 6);
    m.insert(f.l4 + 7);        // UDP checksum
    m.insert(f.l4 + 8 + 4);    // BTH byte 4
    return m;
}

void check_sensitivity(const ref::RefVector& v) {
    const auto& f = v.built;
    bool ipv6 = v.spec.ipv6;
    auto ver = ipv6 ? roce::IpVersion::V6 : roce::IpVersion::V4;
    auto masked = masked_offsets(f, ipv6);
    std::vector<uint8_t> b = f.bytes;
    const uint32_t base = roce::compute_icrc(b.data(), b.size(), f.l3, f.l4, ver);
    REQUIRE(base == f.icrc);
    for (size_t i = 0; i < b.size(); ++i) {
        for (uint8_t flip : {uint8_t{0x01}, uint8_t{0x80}, uint8_t{0xff}}) {
            b[i] ^= flip;
            uint32_t got = roce::compute_icrc(b.data(), b.size(), f.l3, f.l4, ver);
            b[i] ^= flip;
            bool ignored = i < f.l3 || i >= b.size() - 4 || masked.count(i) != 0;
            if (ipv6 && i == f.l3) ignored = (flip & 0xf0) == 0;  // low nibble: traffic class
            INFO("byte " << i << " flip " << unsigned(flip));
            if (ignored) CHECK(got == base);
            else CHECK(got != base);
        }
    }
}

}  // namespace

TEST_CASE("compute_icrc: masked fields do not change it, every other byte does", "[icrc]") {
    // A few vectors of each kind: IPv4, IPv6, with and without VLAN, with
    // non-default masked fields, and with IPv4 options.
    std::set<std::string> wanted = {
        "RC_SEND_ONLY/ipv4_options",
        "RC_RDMA_WRITE_ONLY/ipv4_tos_ttl",
        "RC_RDMA_WRITE_ONLY/ipv6_tclass_flow_hop",
        "RC_SEND_ONLY_WITH_IMMEDIATE/bth_edges",
        "UD_SEND_ONLY_WITH_IMMEDIATE/reserved_bits",
        "UD_SEND_ONLY/cm_mad_qp1",
    };
    int done = 0;
    for (const auto& v : ref::packet_core_ref_vectors()) {
        bool pick = wanted.count(v.name) != 0 ||
                    (v.spec.opcode == 0x12 && !v.spec.corrupt_icrc) ||  // atomic ACK, 4 variants
                    (v.spec.opcode == 0x0b && !v.spec.corrupt_icrc);
        if (!pick) continue;
        INFO(v.name);
        check_sensitivity(v);
        ++done;
    }
    CHECK(done >= 14);
}

TEST_CASE("compute_icrc: changing masked fields to any value keeps it", "[icrc]") {
    std::mt19937 rng(99);
    for (const auto& v : ref::packet_core_ref_vectors()) {
        if (v.spec.corrupt_icrc) continue;
        const auto& f = v.built;
        bool ipv6 = v.spec.ipv6;
        auto ver = ipv6 ? roce::IpVersion::V6 : roce::IpVersion::V4;
        std::vector<uint8_t> b = f.bytes;
        for (size_t off : masked_offsets(f, ipv6)) b[off] = static_cast<uint8_t>(rng());
        if (ipv6) b[f.l3] = static_cast<uint8_t>(0x60 | (rng() & 0x0f));
        INFO(v.name);
        CHECK(roce::compute_icrc(b.data(), b.size(), f.l3, f.l4, ver) == f.icrc);
    }
}
