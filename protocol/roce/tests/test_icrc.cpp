// CRC-32 and the RoCE v2 ICRC against zlib and the masking rules of IBA
// annex A17 (facts.md 6).
#include <catch2/catch.hpp>

#include <algorithm>
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

namespace {

// The implementations under test: the public dispatcher, and each path on its
// own. The carry-less multiply one is left out on a CPU without PCLMULQDQ.
struct Impl {
    const char* name;
    uint32_t (*fn)(uint32_t, const uint8_t*, size_t);
};

std::vector<Impl> implementations() {
    std::vector<Impl> v = {{"crc32", &roce::crc32},
                           {"crc32_portable", &roce::detail::crc32_portable}};
    if (roce::detail::clmul_available()) v.push_back({"crc32_clmul", &roce::detail::crc32_clmul});
    if (roce::detail::vclmul_available()) v.push_back({"crc32_vclmul", &roce::detail::crc32_vclmul});
    return v;
}

uint32_t zlib_raw(uint32_t init, const uint8_t* p, size_t n) {
    static const uint8_t kEmpty[1] = {0};
    // zlib takes a uInt length; feed it in pieces so that any size works.
    uint32_t c = init;
    if (n == 0) return static_cast<uint32_t>(::crc32(c, kEmpty, 0));
    while (n > 0) {
        const size_t piece = n < (size_t{1} << 30) ? n : (size_t{1} << 30);
        c = static_cast<uint32_t>(::crc32(c, p, static_cast<uInt>(piece)));
        p += piece;
        n -= piece;
    }
    return c;
}

}  // namespace

TEST_CASE("crc32: the carry-less multiply path is available on this machine", "[icrc]") {
    // Not a requirement (the tables cover any CPU), but say so when the
    // faster path goes untested.
    if (!roce::detail::clmul_available())
        WARN("no PCLMULQDQ/SSE4.1: crc32_clmul is not exercised by these tests");
    if (!roce::detail::vclmul_available())
        WARN("no VPCLMULQDQ/AVX-512: crc32_vclmul is not exercised by these tests");
    CHECK(implementations().size() >= 2);
}

TEST_CASE("crc32: every implementation equals zlib, lengths 0..1100 at alignments 0..15",
          "[icrc]") {
    std::mt19937_64 rng(0x5eed1100);
    const auto impls = implementations();
    // 16 bytes of slack so that every alignment of every length fits, inside
    // a vector whose data() is at least 16-byte aligned (operator new).
    std::vector<uint8_t> buf(1100 + 16);
    size_t compared = 0, wrong = 0;
    for (size_t len = 0; len <= 1100; ++len) {
        for (auto& x : buf) x = static_cast<uint8_t>(rng());
        for (size_t align = 0; align < 16; ++align) {
            const uint8_t* p = buf.data() + align;
            // Initial values: 0 (a fresh CRC), all ones, and a random one.
            const uint32_t inits[] = {0u, 0xffffffffu, static_cast<uint32_t>(rng())};
            for (uint32_t init : inits) {
                const uint32_t want = zlib_raw(init, p, len);
                for (const auto& im : impls) {
                    ++compared;
                    const uint32_t got = im.fn(init, p, len);
                    if (got != want) {
                        ++wrong;
                        FAIL_CHECK(im.name << " len " << len << " align " << align << " init 0x"
                                           << std::hex << init << ": 0x" << got
                                           << " != zlib 0x" << want);
                    }
                }
            }
        }
    }
    CHECK(compared == 1101u * 16u * 3u * impls.size());
    CHECK(wrong == 0u);
}

TEST_CASE("crc32: every implementation equals zlib on 64 KiB and 1 MiB buffers", "[icrc]") {
    std::mt19937_64 rng(0xb16b0f);
    std::vector<uint8_t> buf((size_t{1} << 20) + 64);
    for (auto& x : buf) x = static_cast<uint8_t>(rng());
    for (size_t len : {size_t{64} << 10, (size_t{64} << 10) + 13, size_t{1} << 20,
                       (size_t{1} << 20) + 47}) {
        for (size_t align : {0u, 1u, 7u, 8u, 15u}) {
            const uint32_t init = static_cast<uint32_t>(rng());
            const uint32_t want = zlib_raw(init, buf.data() + align, len);
            for (const auto& im : implementations()) {
                INFO(im.name << " len " << len << " align " << align);
                CHECK(im.fn(init, buf.data() + align, len) == want);
            }
        }
    }
}

TEST_CASE("crc32: constant buffers (all zero, all ones) of long lengths", "[icrc]") {
    for (uint8_t fill : {uint8_t{0x00}, uint8_t{0xff}}) {
        std::vector<uint8_t> buf(70000, fill);
        for (size_t len : {16u, 64u, 65u, 128u, 1000u, 4096u, 65535u, 70000u}) {
            for (uint32_t init : {0u, 0xffffffffu}) {
                const uint32_t want = zlib_raw(init, buf.data(), len);
                for (const auto& im : implementations()) {
                    INFO(im.name << " fill " << unsigned(fill) << " len " << len);
                    CHECK(im.fn(init, buf.data(), len) == want);
                }
            }
        }
    }
}

TEST_CASE("crc32: continuing across random split points equals one pass, mixing paths",
          "[icrc]") {
    std::mt19937_64 rng(0x5b1175);
    std::vector<uint8_t> buf(20000);
    for (auto& x : buf) x = static_cast<uint8_t>(rng());
    const auto impls = implementations();
    for (int rep = 0; rep < 200; ++rep) {
        const size_t len = rng() % buf.size();
        const uint32_t init = static_cast<uint32_t>(rng());
        const uint32_t want = zlib_raw(init, buf.data(), len);
        // Cut into pieces of random sizes (some long, some short) and give
        // each to a randomly chosen implementation.
        uint32_t c = init;
        size_t off = 0;
        while (off < len) {
            const size_t cap = (rng() & 1) ? 40 : 5000;
            const size_t piece = std::min(len - off, size_t(rng() % cap));
            c = impls[rng() % impls.size()].fn(c, buf.data() + off, piece);
            off += piece;
        }
        INFO("rep " << rep << " len " << len);
        CHECK(c == want);
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
