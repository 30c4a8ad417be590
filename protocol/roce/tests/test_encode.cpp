// encode_frame() against the independent builder of ref_frame.h: round trips
// of the hand-built vectors, seeded random packets of every opcode, and the
// lengths, pad, checksums and ICRC the encoder computes.
#include <catch2/catch.hpp>

#include <memory>
#include <random>

#include "unit_helpers.h"
#include "vectors.h"

using namespace simnic::roce;
namespace ref = simnic::tb::ref;
using simnic::tb::unit::check_fields;
using simnic::tb::unit::to_packet;

namespace {

EncodeOptions keep_all() {
    EncodeOptions o;
    o.fill_lengths = false;
    o.fill_ip_checksum = false;
    o.fill_icrc = false;
    o.udp_checksum = UdpChecksum::Keep;
    return o;
}

// Check what encode_frame() wrote back into the Packet.
void check_encoded_packet(const Packet& p, const ref::RefPacket& s, const ref::RefFrame& f) {
    CHECK(unsigned(p.hdr.bth.pad) == s.pad);
    if (!s.ipv6) {
        CHECK(p.ip4.total_len == f.ip_len);
        CHECK(p.ip4.checksum == ref::peek16(&f.bytes[f.l3 + 10]));
    } else {
        CHECK(p.ip6.payload_len == f.ip_len);
    }
    CHECK(p.udp.length == f.udp_len);
    CHECK(p.icrc == f.icrc);
    CHECK(p.l3_off == f.l3);
    CHECK(p.l4_off == f.l4);
    CHECK(p.bth_off == f.bth);
    CHECK(p.payload_off == f.payload_off);
    CHECK(p.frame_len == f.bytes.size());
}

// A random, valid packet of the given opcode.
ref::RefPacket random_packet(uint8_t opcode, std::mt19937_64& rng) {
    auto r32 = [&] { return static_cast<uint32_t>(rng()); };
    ref::RefPacket s;
    for (auto& b : s.dmac) b = static_cast<uint8_t>(rng());
    for (auto& b : s.smac) b = static_cast<uint8_t>(rng());
    s.vlan = rng() & 1;
    s.vlan_tci = static_cast<uint16_t>(rng());
    s.ipv6 = rng() & 1;
    s.tos = static_cast<uint8_t>(rng());
    s.ip_id = static_cast<uint16_t>(rng());
    s.frag = (rng() & 1) ? 0x4000 : 0x0000;
    s.ttl = static_cast<uint8_t>(rng());
    s.src4 = r32();
    s.dst4 = r32();
    if ((rng() & 7) == 0) {
        size_t words = 1 + rng() % 10;
        s.ip4_options.resize(words * 4);
        for (auto& b : s.ip4_options) b = static_cast<uint8_t>(rng());
    }
    s.tclass = static_cast<uint8_t>(rng());
    s.flow = r32() & 0xfffff;
    s.hop = static_cast<uint8_t>(rng());
    for (auto& b : s.src6) b = static_cast<uint8_t>(rng());
    for (auto& b : s.dst6) b = static_cast<uint8_t>(rng());
    s.sport = static_cast<uint16_t>(rng());
    s.opcode = opcode;
    s.se = rng() & 1;
    s.mig = rng() & 1;
    s.pkey = static_cast<uint16_t>(rng());
    s.fecn = rng() & 1;
    s.becn = rng() & 1;
    s.resv6 = static_cast<uint8_t>(rng() & 0x3f);
    s.dqpn = r32() & 0xffffff;
    s.ack_req = rng() & 1;
    s.resv7 = static_cast<uint8_t>(rng() & 0x7f);
    s.psn = r32() & 0xffffff;
    s.qkey = r32();
    s.resv8 = static_cast<uint8_t>(rng());
    s.src_qp = r32() & 0xffffff;
    s.feth = r32();  // reserved bits too: they must survive the round trip
    s.reth_va = rng();
    s.reth_rkey = r32();
    s.reth_len = r32();
    s.atomic_va = rng();
    s.atomic_rkey = r32();
    s.swap_add = rng();
    s.compare = rng();
    s.syndrome = static_cast<uint8_t>(rng());
    s.msn = r32() & 0xffffff;
    s.orig = rng();
    s.imm = r32();
    s.ieth = r32();

    const ref::RefOpcode* ro = ref::ref_opcode(opcode);
    size_t len = 0;
    if (ro->payload) {
        if (ro->role == ref::Role::First || ro->role == ref::Role::Middle)
            len = 4 * (1 + rng() % 128);  // pad must be 0
        else if (ro->role == ref::Role::Last)
            len = 1 + rng() % 520;
        else
            len = rng() % 520;
    }
    s.payload.resize(len);
    for (auto& b : s.payload) b = static_cast<uint8_t>(rng());
    s.pad = static_cast<uint8_t>((4 - len % 4) % 4);
    return s;
}

// RFC 768 checksum over the pseudo-header and the UDP datagram.
uint16_t ref_udp_checksum(const std::vector<uint8_t>& b, size_t l3, size_t l4, bool ipv6) {
    std::vector<uint8_t> ph;
    uint16_t udp_len = ref::peek16(&b[l4 + 4]);
    if (!ipv6) {
        ph.insert(ph.end(), b.begin() + static_cast<long>(l3 + 12), b.begin() + static_cast<long>(l3 + 20));
        ph.push_back(0);
        ph.push_back(17);
        ref::put16(ph, udp_len);
    } else {
        ph.insert(ph.end(), b.begin() + static_cast<long>(l3 + 8), b.begin() + static_cast<long>(l3 + 40));
        ref::put32(ph, udp_len);
        ph.insert(ph.end(), {0, 0, 0, 17});
    }
    ph.insert(ph.end(), b.begin() + static_cast<long>(l4), b.begin() + static_cast<long>(l4 + udp_len));
    ph[ph.size() - udp_len + 6] = 0;
    ph[ph.size() - udp_len + 7] = 0;
    uint16_t c = ref::ref_inet_checksum(ph.data(), ph.size());
    return c == 0 ? 0xffff : c;
}

}  // namespace

TEST_CASE("encode: decode then encode reproduces every vector byte for byte", "[encode]") {
    for (const auto& v : ref::packet_core_ref_vectors()) {
        INFO(v.name);
        const auto& b = v.built.bytes;
        Packet p;
        DecodeOptions d;
        d.check_icrc = false;
        REQUIRE(decode_frame(b.data(), b.size(), p, d).ok());

        // Everything as decoded, nothing recomputed.
        Packet k = p;
        std::vector<uint8_t> out;
        REQUIRE(encode_frame(k, out, keep_all()));
        CHECK(out == b);
        CHECK(encoded_frame_len(p) == b.size());

        // Default options recompute lengths, checksum and ICRC: identical for
        // a valid vector, the corrected ICRC for a corrupted one.
        Packet q = p;
        std::vector<uint8_t> out2;
        REQUIRE(encode_frame(q, out2));
        std::vector<uint8_t> want = b;
        ref::ref_store_icrc(want, v.built.icrc);
        CHECK(out2 == want);
        CHECK(q.icrc == v.built.icrc);
    }
}

TEST_CASE("encode: from fields, every vector comes out as the reference built it", "[encode]") {
    for (const auto& v : ref::packet_core_ref_vectors()) {
        INFO(v.name);
        Packet p = to_packet(v.spec);
        std::vector<uint8_t> out;
        CHECK(encoded_frame_len(p) == v.built.bytes.size());
        REQUIRE(encode_frame(p, out));
        std::vector<uint8_t> want = v.built.bytes;
        ref::ref_store_icrc(want, v.built.icrc);  // the encoder always writes a correct one
        CHECK(out == want);
        check_encoded_packet(p, v.spec, v.built);
    }
}

TEST_CASE("encode: random packets of every opcode, against the reference and back",
          "[encode][random]") {
    std::mt19937_64 rng(0x5eed'2024);
    for (const auto& ro : ref::ref_opcodes()) {
        INFO(ro.name);
        for (int i = 0; i < 2000; ++i) {
            ref::RefPacket s = random_packet(ro.opcode, rng);
            ref::RefFrame f = ref::ref_build(s);
            Packet p = to_packet(s);
            std::vector<uint8_t> out;
            REQUIRE(encode_frame(p, out));
            INFO("iteration " << i);
            if (out != f.bytes) {
                CHECK(out.size() == f.bytes.size());
                for (size_t j = 0; j < std::min(out.size(), f.bytes.size()); ++j)
                    if (out[j] != f.bytes[j]) {
                        FAIL_CHECK("first differing byte at " << j);
                        break;
                    }
                continue;
            }
            check_encoded_packet(p, s, f);
            // Decode what was encoded: same fields.
            Packet q;
            DecodeResult r = decode_frame(out.data(), out.size(), q);
            REQUIRE(r.error == DecodeError::Ok);
            check_fields(q, s, f, out.data());
        }
    }
}

TEST_CASE("encode: the IPv4 header checksum", "[encode][ip]") {
    // The worked example from RFC 1071 style references: 4500 0073 0000 4000
    // 4011 xxxx c0a8 0001 c0a8 00c7 has checksum 0xb861.
    const uint8_t hdr[20] = {0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11,
                             0x00, 0x00, 0xc0, 0xa8, 0x00, 0x01, 0xc0, 0xa8, 0x00, 0xc7};
    CHECK(ipv4_checksum(hdr, 20) == 0xb861);
    CHECK(ref::ref_inet_checksum(hdr, 20) == 0xb861);

    // Every encoded IPv4 header sums to 0xffff (its complement is 0).
    std::mt19937_64 rng(11);
    for (int i = 0; i < 500; ++i) {
        ref::RefPacket s = random_packet(0x04, rng);
        s.ipv6 = false;
        Packet p = to_packet(s);
        p.ip4.checksum = 0x1234;  // must be overwritten
        std::vector<uint8_t> out;
        REQUIRE(encode_frame(p, out));
        size_t l3 = p.l3_off;
        size_t hl = (out[l3] & 0x0f) * 4u;
        CHECK(ref::ref_inet_checksum(&out[l3], hl) == 0);
        CHECK(p.ip4.checksum == ref::peek16(&out[l3 + 10]));
        // And it agrees with ipv4_checksum() over the header with a zero field.
        std::vector<uint8_t> h(out.begin() + static_cast<long>(l3), out.begin() + static_cast<long>(l3 + hl));
        h[10] = h[11] = 0;
        CHECK(ipv4_checksum(h.data(), h.size()) == p.ip4.checksum);
    }
}

TEST_CASE("encode: pad count from the payload length", "[encode]") {
    for (size_t len = 0; len < 40; ++len) {
        ref::RefPacket s = ref::packet_core_ref_vectors().front().spec;
        s.opcode = 0x04;  // SEND_ONLY
        s.payload.assign(len, 0x77);
        s.pad = static_cast<uint8_t>((4 - len % 4) % 4);
        Packet p = to_packet(s);
        p.hdr.bth.pad = 3;  // must be overwritten
        std::vector<uint8_t> out;
        REQUIRE(encode_frame(p, out));
        INFO("len " << len);
        CHECK(unsigned(p.hdr.bth.pad) == s.pad);
        CHECK(unsigned((out[p.bth_off + 1] >> 4) & 3) == s.pad);
        // The pad bytes are zero and precede the ICRC.
        for (size_t i = 0; i < s.pad; ++i) CHECK(out[p.payload_off + len + i] == 0);
        CHECK(out.size() == p.payload_off + len + s.pad + 4);
        CHECK(out == ref::ref_build(s).bytes);
    }
}

TEST_CASE("encode: options that keep the caller's values", "[encode]") {
    const auto& v = ref::packet_core_ref_vectors().front();
    SECTION("fill_icrc off writes p.icrc") {
        Packet p = to_packet(v.spec);
        p.icrc = 0xa1b2c3d4;
        EncodeOptions o;
        o.fill_icrc = false;
        std::vector<uint8_t> out;
        REQUIRE(encode_frame(p, out, o));
        std::vector<uint8_t> want = v.built.bytes;
        ref::ref_store_icrc(want, 0xa1b2c3d4);
        CHECK(out == want);
    }
    SECTION("UDP checksum Keep and Compute") {
        for (bool ipv6 : {false, true}) {
            ref::RefPacket s = v.spec;
            s.ipv6 = ipv6;
            s.udp_csum = 0xbeef;
            Packet p = to_packet(s);
            EncodeOptions o;
            o.udp_checksum = UdpChecksum::Keep;
            std::vector<uint8_t> out;
            REQUIRE(encode_frame(p, out, o));
            CHECK(out == ref::ref_build(s).bytes);  // the ICRC masks the UDP checksum

            Packet c = to_packet(s);
            o.udp_checksum = UdpChecksum::Compute;
            REQUIRE(encode_frame(c, out, o));
            INFO("ipv6 " << ipv6);
            uint16_t want = ref_udp_checksum(out, c.l3_off, c.l4_off, ipv6);
            CHECK(ref::peek16(&out[c.l4_off + 6]) == want);
            CHECK(c.udp.checksum == want);
            // The ICRC does not depend on it.
            CHECK(c.icrc == ref::ref_build(s).icrc);

            Packet z = to_packet(s);
            o.udp_checksum = UdpChecksum::Zero;
            REQUIRE(encode_frame(z, out, o));
            CHECK(ref::peek16(&out[z.l4_off + 6]) == 0);
        }
    }
}

TEST_CASE("encode: refuses unknown opcodes and payloads an opcode does not allow",
          "[encode]") {
    const auto& v = ref::packet_core_ref_vectors().front();
    const std::vector<uint8_t> sentinel = {1, 2, 3};
    for (unsigned opc = 0; opc < 256; ++opc) {
        if (ref::ref_opcode(static_cast<uint8_t>(opc))) continue;
        Packet p = to_packet(v.spec);
        p.hdr.bth.opcode = static_cast<uint8_t>(opc);
        std::vector<uint8_t> out = sentinel;
        INFO("opcode 0x" << std::hex << opc);
        CHECK_FALSE(encode_frame(p, out));
        CHECK(out == sentinel);
    }
    const uint8_t data[8] = {};
    for (uint8_t opc : {0x0c, 0x11, 0x12, 0x13, 0x14}) {
        Packet p = to_packet(v.spec);
        p.hdr.bth.opcode = opc;
        p.payload = data;
        p.payload_len = 8;
        std::vector<uint8_t> out = sentinel;
        INFO("opcode 0x" << std::hex << unsigned(opc));
        CHECK_FALSE(encode_frame(p, out));
        CHECK(out == sentinel);
        p.payload = nullptr;
        p.payload_len = 0;
        CHECK(encode_frame(p, out));
    }
}

TEST_CASE("encode: refuses an IPv4 header length it cannot write", "[encode]") {
    // IHL is a 4-bit field: 5..15 words. Anything else cannot be encoded
    // (and options beyond 40 bytes do not exist).
    const auto& v = ref::packet_core_ref_vectors().front();
    for (uint8_t ihl : {uint8_t{0}, uint8_t{4}, uint8_t{16}, uint8_t{31}, uint8_t{255}}) {
        Packet p = to_packet(v.spec);
        p.ip_version = IpVersion::V4;
        p.ip4.ihl = ihl;
        std::vector<uint8_t> out = {9};
        INFO("ihl " << unsigned(ihl));
        CHECK_FALSE(encode_frame(p, out));
        CHECK(out == std::vector<uint8_t>{9});
    }
    // 15 words (40 bytes of options) is the largest header and works.
    ref::RefPacket s = v.spec;
    s.ipv6 = false;
    s.ip4_options.assign(40, 0x01);  // NOPs
    Packet p = to_packet(s);
    std::vector<uint8_t> out;
    REQUIRE(encode_frame(p, out));
    CHECK(out == ref::ref_build(s).bytes);
}

TEST_CASE("encode: refuses FIRST and MIDDLE packets the decoder would refuse", "[encode]") {
    // Only the last packet of a message may carry a pad (IBA 9.3.1: pad count
    // is nonzero only on the last or only packet), and FIRST/MIDDLE packets
    // carry a whole path MTU of data, so never an empty or unaligned payload.
    // encode_frame() is decode's inverse: it must not write such a frame.
    const uint8_t data[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    for (uint8_t opc : {0x00, 0x01, 0x06, 0x07, 0x0d, 0x0e, 0x20, 0x21, 0x26, 0x27}) {
        for (size_t len : {size_t{0}, size_t{1}, size_t{2}, size_t{3}, size_t{5}}) {
            ref::RefPacket s = ref::packet_core_ref_vectors().front().spec;
            s.opcode = opc;
            Packet p = to_packet(s);
            p.payload = len ? data : nullptr;
            p.payload_len = len;
            std::vector<uint8_t> out = {9};
            INFO("opcode 0x" << std::hex << unsigned(opc) << std::dec << " len " << len);
            bool ok = encode_frame(p, out);
            if (ok) {
                // If it does write one, the decoder must at least accept it.
                Packet q;
                CHECK(decode_frame(out.data(), out.size(), q).error == DecodeError::Ok);
            } else {
                CHECK(out == std::vector<uint8_t>{9});
            }
        }
    }
}
