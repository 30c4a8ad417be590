// decode_frame() and decode_ip_packet() against the hand-built vectors and
// against malformed frames made from them.
#include <catch2/catch.hpp>

#include <initializer_list>
#include <memory>
#include <set>
#include <stdexcept>

#include "unit_helpers.h"
#include "vectors.h"

using namespace simnic::roce;
namespace ref = simnic::tb::ref;
using simnic::tb::unit::check_fields;

namespace {

const ref::RefVector& vec(const std::string& name) {
    for (const auto& v : ref::packet_core_ref_vectors())
        if (v.name == name) return v;
    FAIL("no vector " << name);
    throw std::logic_error("unreachable");
}

// The four SEND_ONLY vectors (IPv4/IPv6, with and without VLAN).
std::vector<const ref::RefVector*> base_vectors() {
    return {&vec("RC_SEND_ONLY/ipv4/pad0"), &vec("RC_SEND_ONLY/ipv6/pad1"),
            &vec("RC_SEND_ONLY/ipv4/vlan/pad2"), &vec("RC_SEND_ONLY/ipv6/vlan/pad3")};
}

// Decode a copy of `b` held in a buffer of exactly its size, so that the
// sanitizers see any read past the end.
DecodeResult decode_exact(const std::vector<uint8_t>& b, Packet& p, const DecodeOptions& o = {}) {
    std::unique_ptr<uint8_t[]> buf(new uint8_t[b.size()]);
    std::copy(b.begin(), b.end(), buf.get());
    return decode_frame(buf.get(), b.size(), p, o);
}
DecodeError decode_err(const std::vector<uint8_t>& b, const DecodeOptions& o = {}) {
    Packet p;
    return decode_exact(b, p, o).error;
}

// After editing a frame: recompute the IPv4 header checksum (if IPv4) and
// the ICRC, so that only the intended defect remains.
void refresh(std::vector<uint8_t>& b, const ref::RefFrame& f, bool ipv6) {
    if (!ipv6) ref::ref_fix_ipv4_checksum(b, f.l3);
    ref::ref_fix_icrc(b, f.l3, f.l4, ipv6);
}

// Cut the frame so that the UDP payload is `udp_payload` bytes, and set the
// IP and UDP length fields to match.
std::vector<uint8_t> cut_udp_payload(const ref::RefVector& v, size_t udp_payload) {
    const auto& f = v.built;
    std::vector<uint8_t> b(f.bytes.begin(), f.bytes.begin() + static_cast<long>(f.l4 + 8 + udp_payload));
    uint16_t udp_len = static_cast<uint16_t>(8 + udp_payload);
    ref::poke16(&b[f.l4 + 4], udp_len);
    if (v.spec.ipv6) ref::poke16(&b[f.l3 + 4], udp_len);
    else ref::poke16(&b[f.l3 + 2], static_cast<uint16_t>(f.l4 - f.l3 + udp_len));
    if (!v.spec.ipv6) ref::ref_fix_ipv4_checksum(b, f.l3);
    if (udp_payload >= 2) b[f.bth + 1] &= 0xcf;  // no pad: nothing follows the headers
    if (udp_payload >= 12 + 4) ref::ref_fix_icrc(b, f.l3, f.l4, v.spec.ipv6);
    return b;
}

bool one_of(DecodeError e, std::initializer_list<DecodeError> set) {
    for (DecodeError x : set)
        if (e == x) return true;
    return false;
}

}  // namespace

CATCH_REGISTER_ENUM(simnic::roce::DecodeError, simnic::roce::DecodeError::Ok,
                    simnic::roce::DecodeError::TruncatedEthernet,
                    simnic::roce::DecodeError::UnsupportedEthertype,
                    simnic::roce::DecodeError::TruncatedIp, simnic::roce::DecodeError::BadIpVersion,
                    simnic::roce::DecodeError::BadIpHeader,
                    simnic::roce::DecodeError::IpLengthMismatch,
                    simnic::roce::DecodeError::IpFragment, simnic::roce::DecodeError::NotUdp,
                    simnic::roce::DecodeError::TruncatedUdp,
                    simnic::roce::DecodeError::UdpLengthMismatch,
                    simnic::roce::DecodeError::NotRoceV2, simnic::roce::DecodeError::TruncatedBth,
                    simnic::roce::DecodeError::UnknownOpcode, simnic::roce::DecodeError::BadTver,
                    simnic::roce::DecodeError::TruncatedExtHeader,
                    simnic::roce::DecodeError::BadPadCount,
                    simnic::roce::DecodeError::LengthMismatch, simnic::roce::DecodeError::BadIcrc)

TEST_CASE("vectors: the set covers what it promises", "[decode][vectors]") {
    const auto& vs = simnic::tb::packet_core_vectors();
    const auto& rs = ref::packet_core_ref_vectors();
    REQUIRE(vs.size() == rs.size());
    std::set<unsigned> opcodes;
    std::set<std::pair<bool, bool>> ip_vlan;
    std::set<unsigned> pads;
    int bad = 0;
    for (size_t i = 0; i < vs.size(); ++i) {
        CHECK(vs[i].name == rs[i].name);
        CHECK(vs[i].frame == rs[i].built.bytes);
        CHECK(vs[i].icrc_valid == !rs[i].spec.corrupt_icrc);
        opcodes.insert(rs[i].spec.opcode);
        ip_vlan.insert({rs[i].spec.ipv6, rs[i].spec.vlan});
        pads.insert(rs[i].spec.pad);
        if (!vs[i].icrc_valid) ++bad;
    }
    CHECK(opcodes.size() == ref::ref_opcodes().size());
    CHECK(ip_vlan.size() == 4);
    CHECK(pads == std::set<unsigned>{0, 1, 2, 3});
    CHECK(bad >= 4);
    // The QP1 CM MAD is 322 bytes on the wire, as seen with rping.
    CHECK(vec("UD_SEND_ONLY/cm_mad_qp1").built.bytes.size() == 322);
    // Spot-check one frame byte by byte against the layout: RC ACK over
    // IPv4, no VLAN.
    const auto& ack = vec("RC_ACKNOWLEDGE/syndrome_00");
    const auto& b = ack.built.bytes;
    REQUIRE(b.size() == 14 + 20 + 8 + 12 + 4 + 4);
    CHECK(b[12] == 0x08);
    CHECK(b[13] == 0x00);
    CHECK(b[14] == 0x45);
    CHECK(ref::peek16(&b[16]) == 20 + 8 + 12 + 4 + 4);
    CHECK(b[20] == 0x40);  // DF
    CHECK(b[22] == 64);    // TTL
    CHECK(b[23] == 17);    // UDP
    CHECK(ref::peek16(&b[36]) == 4791);
    CHECK(ref::peek16(&b[38]) == 8 + 12 + 4 + 4);
    CHECK(ref::peek16(&b[40]) == 0);
    CHECK(b[42] == 0x11);  // opcode
    CHECK(b[54] == 0x00);  // syndrome
}

TEST_CASE("decode_frame: every vector decodes to the fields it was built from",
          "[decode]") {
    for (const auto& v : ref::packet_core_ref_vectors()) {
        INFO(v.name);
        const auto& b = v.built.bytes;
        std::unique_ptr<uint8_t[]> buf(new uint8_t[b.size()]);
        std::copy(b.begin(), b.end(), buf.get());
        Packet p;
        DecodeResult r = decode_frame(buf.get(), b.size(), p);
        if (v.spec.corrupt_icrc) {
            CHECK(r.error == DecodeError::BadIcrc);
            CHECK_FALSE(r.ok());
            CHECK(r.computed_icrc == v.built.icrc);
        } else {
            REQUIRE(r.error == DecodeError::Ok);
            CHECK(r.ok());
            CHECK(static_cast<bool>(r));
            CHECK(r.computed_icrc == v.built.icrc);
            check_fields(p, v.spec, v.built, buf.get());
            CHECK(&p.opinfo() == &opcode_info(v.spec.opcode));
        }
        // Without the ICRC check every vector decodes.
        Packet q;
        DecodeOptions o;
        o.check_icrc = false;
        REQUIRE(decode_frame(buf.get(), b.size(), q, o).error == DecodeError::Ok);
        check_fields(q, v.spec, v.built, buf.get());
    }
}

TEST_CASE("decode_ip_packet: every vector decodes from its IP header", "[decode]") {
    for (const auto& v : ref::packet_core_ref_vectors()) {
        INFO(v.name);
        const auto& f = v.built;
        size_t n = f.bytes.size() - f.l3;
        std::unique_ptr<uint8_t[]> buf(new uint8_t[n]);
        std::copy(f.bytes.begin() + static_cast<long>(f.l3), f.bytes.end(), buf.get());
        Packet p;
        DecodeResult r = decode_ip_packet(buf.get(), n, p);
        if (v.spec.corrupt_icrc) {
            CHECK(r.error == DecodeError::BadIcrc);
            continue;
        }
        REQUIRE(r.error == DecodeError::Ok);
        check_fields(p, v.spec, f, buf.get(), /*from_ip=*/true);
        CHECK(p.l3_off == 0u);
        CHECK_FALSE(p.eth.has_vlan);
    }
}

TEST_CASE("decode: every truncation of every vector is refused with the right error",
          "[decode][truncate]") {
    for (const auto& v : ref::packet_core_ref_vectors()) {
        INFO(v.name);
        const auto& f = v.built;
        size_t iphl = v.spec.ipv6 ? 40 : 20 + v.spec.ip4_options.size();
        for (size_t len = 0; len < f.bytes.size(); ++len) {
            INFO("len " << len);
            std::vector<uint8_t> t(f.bytes.begin(), f.bytes.begin() + static_cast<long>(len));
            DecodeError e = decode_err(t);
            if (len < f.l3) CHECK(e == DecodeError::TruncatedEthernet);
            else if (len < f.l3 + iphl) CHECK(e == DecodeError::TruncatedIp);
            else CHECK(e == DecodeError::IpLengthMismatch);
            // From the IP header.
            if (len >= f.l3) {
                size_t n = len - f.l3;
                std::unique_ptr<uint8_t[]> buf(new uint8_t[n]);
                std::copy(f.bytes.begin() + static_cast<long>(f.l3),
                          f.bytes.begin() + static_cast<long>(len), buf.get());
                Packet p;
                DecodeError e2 = decode_ip_packet(buf.get(), n, p).error;
                if (n < iphl) CHECK(e2 == DecodeError::TruncatedIp);
                else CHECK(e2 == DecodeError::IpLengthMismatch);
            }
        }
    }
}

TEST_CASE("decode: truncations with consistent length fields", "[decode][truncate]") {
    for (const ref::RefVector* v : base_vectors()) {
        INFO(v->name);
        // UDP header cut short: IP payload of 0..7 bytes.
        for (size_t n = 0; n < 8; ++n) {
            const auto& f = v->built;
            std::vector<uint8_t> b(f.bytes.begin(), f.bytes.begin() + static_cast<long>(f.l4 + n));
            if (v->spec.ipv6) ref::poke16(&b[f.l3 + 4], static_cast<uint16_t>(n));
            else ref::poke16(&b[f.l3 + 2], static_cast<uint16_t>(f.l4 - f.l3 + n));
            if (!v->spec.ipv6) ref::ref_fix_ipv4_checksum(b, f.l3);
            INFO("ip payload " << n);
            CHECK(decode_err(b) == DecodeError::TruncatedUdp);
        }
        // UDP payload shorter than a BTH.
        for (size_t n = 0; n < 12; ++n) {
            INFO("udp payload " << n);
            CHECK(decode_err(cut_udp_payload(*v, n)) == DecodeError::TruncatedBth);
        }
        // A BTH but no room for an ICRC (no extension header for SEND_ONLY).
        for (size_t n = 12; n < 16; ++n) {
            INFO("udp payload " << n);
            DecodeError e = decode_err(cut_udp_payload(*v, n));
            CHECK(one_of(e, {DecodeError::TruncatedBth, DecodeError::TruncatedExtHeader,
                             DecodeError::LengthMismatch}));
        }
        // BTH + ICRC and nothing else: an empty SEND_ONLY, valid.
        CHECK(decode_err(cut_udp_payload(*v, 16)) == DecodeError::Ok);
    }
    // Extension headers cut short, with an ICRC after them.
    struct Case { const char* name; size_t need; };
    const Case cases[] = {
        {"RC_RDMA_WRITE_ONLY/ipv4/pad0", 12 + 16},
        {"RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE/ipv6/pad1", 12 + 16 + 4},
        {"RC_RDMA_READ_REQUEST/ipv4/vlan/pad0", 12 + 16},
        {"RC_COMPARE_SWAP/ipv6/vlan/pad0", 12 + 28},
        {"RC_ATOMIC_ACKNOWLEDGE/ipv4/pad0", 12 + 4 + 8},
        {"RC_ACKNOWLEDGE/ipv6/pad0", 12 + 4},
        {"UD_SEND_ONLY/ipv4/pad0", 12 + 8},
        {"UD_SEND_ONLY_WITH_IMMEDIATE/ipv6/vlan/pad3", 12 + 8 + 4},
        {"RC_SEND_ONLY_WITH_INVALIDATE/ipv4/vlan/pad2", 12 + 4},
        {"RC_RDMA_READ_RESPONSE_FIRST/ipv6/pad0", 12 + 4},
    };
    for (const Case& c : cases) {
        const auto& v = vec(c.name);
        INFO(c.name);
        for (size_t hdr = 12; hdr < c.need; ++hdr) {
            INFO("headers " << hdr);
            CHECK(decode_err(cut_udp_payload(v, hdr + 4)) == DecodeError::TruncatedExtHeader);
        }
    }
}

TEST_CASE("decode: bad pad counts", "[decode][pad]") {
    SECTION("pad larger than the bytes after the headers") {
        for (bool ipv6 : {false, true}) {
            for (size_t payload = 0; payload < 3; ++payload) {
                for (uint8_t pad = static_cast<uint8_t>(payload + 1); pad <= 3; ++pad) {
                    ref::RefPacket s = vec("RC_SEND_ONLY/ipv4/pad0").spec;
                    s.ipv6 = ipv6;
                    s.payload.assign(payload, 0x5a);
                    s.pad = 0;
                    auto f = ref::ref_build(s);
                    f.bytes[f.bth + 1] = static_cast<uint8_t>((f.bytes[f.bth + 1] & 0xcf) | (pad << 4));
                    ref::ref_fix_icrc(f.bytes, f.l3, f.l4, ipv6);
                    INFO("ipv6 " << ipv6 << " bytes " << payload << " pad " << unsigned(pad));
                    CHECK(decode_err(f.bytes) == DecodeError::BadPadCount);
                }
            }
        }
        // The same on an opcode with extension headers (UD, DETH + ImmDt).
        ref::RefPacket s = vec("UD_SEND_ONLY_WITH_IMMEDIATE/ipv4/pad0").spec;
        s.payload.assign(1, 0x11);
        s.pad = 0;
        auto f = ref::ref_build(s);
        f.bytes[f.bth + 1] = static_cast<uint8_t>(f.bytes[f.bth + 1] | (2 << 4));
        ref::ref_fix_icrc(f.bytes, f.l3, f.l4, false);
        CHECK(decode_err(f.bytes) == DecodeError::BadPadCount);
    }
    SECTION("pad on a FIRST or MIDDLE packet") {
        for (uint8_t opc : {0x00, 0x01, 0x06, 0x07, 0x0d, 0x0e, 0x20, 0x21, 0x26, 0x27}) {
            for (uint8_t pad = 1; pad <= 3; ++pad) {
                ref::RefPacket s = vec("RC_SEND_ONLY/ipv4/pad0").spec;
                s.opcode = opc;
                s.ack_req = false;
                s.payload.assign(64 - pad, 0x33);  // 64 bytes on the wire with the pad
                s.pad = pad;
                auto f = ref::ref_build(s);
                INFO("opcode 0x" << std::hex << unsigned(opc) << " pad " << unsigned(pad));
                CHECK(decode_err(f.bytes) == DecodeError::BadPadCount);
                // With pad 0 the same packet is accepted.
                s.payload.assign(64, 0x33);
                s.pad = 0;
                CHECK(decode_err(ref::ref_build(s).bytes) == DecodeError::Ok);
            }
        }
    }
    SECTION("pad on an opcode without a payload") {
        for (uint8_t opc : {0x0c, 0x11, 0x12, 0x13, 0x14}) {
            ref::RefPacket s = vec("RC_SEND_ONLY/ipv4/pad0").spec;
            s.opcode = opc;
            s.payload.clear();
            s.pad = 2;  // two pad bytes follow the headers
            auto f = ref::ref_build(s);
            INFO("opcode 0x" << std::hex << unsigned(opc));
            DecodeError e = decode_err(f.bytes);
            CHECK(one_of(e, {DecodeError::BadPadCount, DecodeError::LengthMismatch}));
        }
    }
}

TEST_CASE("decode: unknown opcodes", "[decode]") {
    for (const ref::RefVector* v : base_vectors()) {
        for (unsigned opc = 0; opc < 256; ++opc) {
            if (ref::ref_opcode(static_cast<uint8_t>(opc))) continue;
            // The CNP is in the table but not among the reference's QP
            // transport opcodes (test_cnp_ecn.cpp checks it): it is known,
            // whatever else a SEND's bytes make of it.
            const bool cnp = opc == op::CNP;
            std::vector<uint8_t> b = v->built.bytes;
            b[v->built.bth] = static_cast<uint8_t>(opc);
            ref::ref_fix_icrc(b, v->built.l3, v->built.l4, v->spec.ipv6);
            INFO(v->name << " opcode 0x" << std::hex << opc);
            if (cnp) CHECK(decode_err(b) != DecodeError::UnknownOpcode);
            else CHECK(decode_err(b) == DecodeError::UnknownOpcode);
        }
    }
}

TEST_CASE("decode: a payload on an opcode that allows none", "[decode]") {
    for (uint8_t opc : {0x0c, 0x11, 0x12, 0x13, 0x14}) {
        for (bool ipv6 : {false, true}) {
            for (size_t n : {4u, 8u, 1024u}) {
                ref::RefPacket s = vec("RC_SEND_ONLY/ipv4/pad0").spec;
                s.ipv6 = ipv6;
                s.opcode = opc;
                s.payload.assign(n, 0xa5);
                s.pad = 0;
                INFO("opcode 0x" << std::hex << unsigned(opc) << std::dec << " bytes " << n);
                CHECK(decode_err(ref::ref_build(s).bytes) == DecodeError::LengthMismatch);
                s.payload.clear();
                CHECK(decode_err(ref::ref_build(s).bytes) == DecodeError::Ok);
            }
        }
    }
}

TEST_CASE("decode: IP version disagreeing with the ethertype", "[decode][ip]") {
    for (const ref::RefVector* v : base_vectors()) {
        INFO(v->name);
        const auto& f = v->built;
        size_t et = f.l3 - 2;
        // Swap the ethertype to the other IP version.
        std::vector<uint8_t> b = f.bytes;
        ref::poke16(&b[et], v->spec.ipv6 ? 0x0800 : 0x86dd);
        CHECK(decode_err(b) == DecodeError::BadIpVersion);
        // Keep the ethertype, change the version nibble.
        for (uint8_t ver : {0, 4, 5, 6, 7, 15}) {
            if (ver == (v->spec.ipv6 ? 6 : 4)) continue;
            std::vector<uint8_t> c = f.bytes;
            c[f.l3] = static_cast<uint8_t>((ver << 4) | (c[f.l3] & 0x0f));
            refresh(c, f, v->spec.ipv6);
            INFO("version " << unsigned(ver));
            CHECK(decode_err(c) == DecodeError::BadIpVersion);
        }
        // decode_ip_packet uses the version nibble alone: a version other
        // than 4 or 6 is refused.
        std::vector<uint8_t> ip(f.bytes.begin() + static_cast<long>(f.l3), f.bytes.end());
        ip[0] = static_cast<uint8_t>(0x50 | (ip[0] & 0x0f));
        Packet p;
        CHECK_FALSE(decode_ip_packet(ip.data(), ip.size(), p).ok());
    }
}

TEST_CASE("decode: IPv4 header checks", "[decode][ip]") {
    for (const ref::RefVector* v : base_vectors()) {
        if (v->spec.ipv6) continue;
        INFO(v->name);
        const auto& f = v->built;
        for (uint8_t ihl = 0; ihl < 5; ++ihl) {
            std::vector<uint8_t> b = f.bytes;
            b[f.l3] = static_cast<uint8_t>(0x40 | ihl);
            refresh(b, f, false);
            INFO("ihl " << unsigned(ihl));
            CHECK(decode_err(b) == DecodeError::BadIpHeader);
        }
        // Wrong header checksum: refused, unless the check is off (the ICRC
        // does not cover the checksum).
        std::vector<uint8_t> b = f.bytes;
        b[f.l3 + 11] ^= 0x01;
        CHECK(decode_err(b) == DecodeError::BadIpHeader);
        DecodeOptions o;
        o.check_ip_checksum = false;
        CHECK(decode_err(b, o) == DecodeError::Ok);
        // A different TTL with its checksum updated is fine (ICRC-masked).
        std::vector<uint8_t> t = f.bytes;
        t[f.l3 + 8] = 1;
        ref::ref_fix_ipv4_checksum(t, f.l3);
        CHECK(decode_err(t) == DecodeError::Ok);
    }
}

// Ones' complement has two zeros. A header whose words (checksum field
// included) add up to 0xffff is valid whichever zero its checksum field
// holds: 0x0000, as a sender computes it, or 0xffff, the same sum's other
// form, which Linux's ip_fast_csum also accepts. The decoder (and the RTL
// parser, which folds the same sum) accepts both; the encoder writes the
// computed 0x0000. Found by fuzz_decode: a frame whose re-encoding differed
// from it in these two bytes only.
TEST_CASE("decode: an IPv4 header checksum of 0xffff, the other zero, is accepted and re-encoded as 0x0000", "[decode][ip]") {
    for (const ref::RefVector* v : base_vectors()) {
        if (v->spec.ipv6) continue;
        INFO(v->name);
        const auto& f = v->built;
        // Make the header's sum without its checksum 0xffff: set the
        // identification field so that the other words' sum is completed.
        std::vector<uint8_t> b = f.bytes;
        b[f.l3 + 4] = b[f.l3 + 5] = 0;
        b[f.l3 + 10] = b[f.l3 + 11] = 0;
        const uint16_t rest = static_cast<uint16_t>(~ipv4_checksum(&b[f.l3], kIpv4HdrBytes));
        const uint16_t id = static_cast<uint16_t>(~rest);  // rest + id == 0xffff, no carry
        b[f.l3 + 4] = static_cast<uint8_t>(id >> 8);
        b[f.l3 + 5] = static_cast<uint8_t>(id);
        REQUIRE(ipv4_checksum(&b[f.l3], kIpv4HdrBytes) == 0);  // the computed checksum is 0x0000
        ref::ref_fix_icrc(b, f.l3, f.l4, false);
        REQUIRE(decode_err(b) == DecodeError::Ok);

        std::vector<uint8_t> other = b;
        other[f.l3 + 10] = other[f.l3 + 11] = 0xff;
        REQUIRE(ipv4_checksum(&other[f.l3], kIpv4HdrBytes) == 0);  // still sums to zero
        REQUIRE(decode_err(other) == DecodeError::Ok);
        Packet p;  // decoded in place: its payload points into `other`
        REQUIRE(decode_frame(other.data(), other.size(), p).ok());
        CHECK(p.ip4.checksum == 0xffff);

        // Re-encoded with the checksum kept as decoded: 0xffff, byte for
        // byte. With it computed: the canonical 0x0000, and nothing else
        // changes. (In this order: encoding stores the checksum it writes
        // in the packet.)
        EncodeOptions kept;
        kept.fill_icrc = false;
        kept.udp_checksum = UdpChecksum::Keep;
        kept.fill_ip_checksum = false;
        std::vector<uint8_t> out;
        REQUIRE(encode_frame(p, out, kept));
        CHECK(out == other);
        EncodeOptions computed = kept;
        computed.fill_ip_checksum = true;
        REQUIRE(encode_frame(p, out, computed));
        CHECK(out == b);

        // Any other value is still refused.
        std::vector<uint8_t> wrong = b;
        wrong[f.l3 + 10] = 0xff;
        wrong[f.l3 + 11] = 0xfe;
        CHECK(decode_err(wrong) == DecodeError::BadIpHeader);
    }
}

TEST_CASE("decode: IP length field disagreeing with the frame", "[decode][ip]") {
    for (const ref::RefVector* v : base_vectors()) {
        INFO(v->name);
        const auto& f = v->built;
        size_t len_off = v->spec.ipv6 ? f.l3 + 4 : f.l3 + 2;
        for (int delta : {1, 2, 4, 100, 0x8000}) {
            std::vector<uint8_t> b = f.bytes;
            ref::poke16(&b[len_off], static_cast<uint16_t>(f.ip_len + delta));
            refresh(b, f, v->spec.ipv6);
            INFO("delta +" << delta);
            CHECK(decode_err(b) == DecodeError::IpLengthMismatch);
        }
        // Shorter than the frame: the UDP length then disagrees with the IP
        // payload, whichever of the two the decoder reports.
        for (int delta : {1, 4}) {
            std::vector<uint8_t> b = f.bytes;
            ref::poke16(&b[len_off], static_cast<uint16_t>(f.ip_len - delta));
            refresh(b, f, v->spec.ipv6);
            INFO("delta -" << delta);
            DecodeError e = decode_err(b);
            CHECK(one_of(e, {DecodeError::IpLengthMismatch, DecodeError::UdpLengthMismatch}));
        }
        if (!v->spec.ipv6) {
            // Total length smaller than the IPv4 header itself.
            std::vector<uint8_t> b = f.bytes;
            ref::poke16(&b[len_off], 12);
            refresh(b, f, false);
            DecodeError e = decode_err(b);
            CHECK(one_of(e, {DecodeError::IpLengthMismatch, DecodeError::BadIpHeader}));
        }
    }
}

TEST_CASE("decode: not UDP", "[decode][ip]") {
    for (const ref::RefVector* v : base_vectors()) {
        INFO(v->name);
        const auto& f = v->built;
        size_t proto_off = v->spec.ipv6 ? f.l3 + 6 : f.l3 + 9;
        for (uint8_t proto : {0, 1, 6, 58, 132, 255}) {
            std::vector<uint8_t> b = f.bytes;
            b[proto_off] = proto;
            refresh(b, f, v->spec.ipv6);
            INFO("protocol " << unsigned(proto));
            CHECK(decode_err(b) == DecodeError::NotUdp);
        }
    }
}

TEST_CASE("decode: UDP destination port other than 4791", "[decode][udp]") {
    for (const ref::RefVector* v : base_vectors()) {
        INFO(v->name);
        const auto& f = v->built;
        for (uint16_t port : {0, 53, 4789, 4790, 4792, 0xffff}) {
            std::vector<uint8_t> b = f.bytes;
            ref::poke16(&b[f.l4 + 2], port);
            refresh(b, f, v->spec.ipv6);
            INFO("dport " << port);
            CHECK(decode_err(b) == DecodeError::NotRoceV2);
        }
        // 4791 as the source port does not make a RoCE packet.
        std::vector<uint8_t> b = f.bytes;
        ref::poke16(&b[f.l4], 4791);
        ref::poke16(&b[f.l4 + 2], 4790);
        refresh(b, f, v->spec.ipv6);
        CHECK(decode_err(b) == DecodeError::NotRoceV2);
    }
}

TEST_CASE("decode: UDP length disagreeing with the IP length", "[decode][udp]") {
    for (const ref::RefVector* v : base_vectors()) {
        INFO(v->name);
        const auto& f = v->built;
        for (int delta : {-1, 1, -4, 4, 100}) {
            std::vector<uint8_t> b = f.bytes;
            ref::poke16(&b[f.l4 + 4], static_cast<uint16_t>(f.udp_len + delta));
            refresh(b, f, v->spec.ipv6);
            INFO("delta " << delta);
            CHECK(decode_err(b) == DecodeError::UdpLengthMismatch);
        }
        for (uint16_t len : {0, 7}) {
            std::vector<uint8_t> b = f.bytes;
            ref::poke16(&b[f.l4 + 4], len);
            refresh(b, f, v->spec.ipv6);
            INFO("udp length " << len);
            DecodeError e = decode_err(b);
            CHECK(one_of(e, {DecodeError::UdpLengthMismatch, DecodeError::TruncatedUdp}));
        }
    }
}

TEST_CASE("decode: BTH transport version other than 0", "[decode][bth]") {
    for (const ref::RefVector* v : base_vectors()) {
        for (uint8_t tver = 1; tver < 16; ++tver) {
            std::vector<uint8_t> b = v->built.bytes;
            size_t o = v->built.bth + 1;
            b[o] = static_cast<uint8_t>((b[o] & 0xf0) | tver);
            refresh(b, v->built, v->spec.ipv6);
            INFO(v->name << " tver " << unsigned(tver));
            CHECK(decode_err(b) == DecodeError::BadTver);
        }
    }
}

TEST_CASE("decode: IPv4 fragments are refused", "[decode][ip]") {
    for (const ref::RefVector* v : base_vectors()) {
        if (v->spec.ipv6) continue;
        INFO(v->name);
        for (uint16_t frag : {0x2000, 0x0001, 0x1fff, 0x2010, 0x4001, 0x00b9}) {
            std::vector<uint8_t> b = v->built.bytes;
            ref::poke16(&b[v->built.l3 + 6], frag);
            refresh(b, v->built, false);
            INFO("flags/offset 0x" << std::hex << frag);
            CHECK(decode_err(b) == DecodeError::IpFragment);
        }
        // DF alone or no flags at all: not a fragment.
        for (uint16_t frag : {0x4000, 0x0000}) {
            std::vector<uint8_t> b = v->built.bytes;
            ref::poke16(&b[v->built.l3 + 6], frag);
            refresh(b, v->built, false);
            CHECK(decode_err(b) == DecodeError::Ok);
        }
    }
}

TEST_CASE("decode: unsupported ethertypes", "[decode][eth]") {
    for (const ref::RefVector* v : base_vectors()) {
        INFO(v->name);
        const auto& f = v->built;
        for (uint16_t et : {0x0806, 0x88a8, 0x8915, 0x0000, 0x05dc, 0xffff}) {
            std::vector<uint8_t> b = f.bytes;
            ref::poke16(&b[f.l3 - 2], et);
            INFO("ethertype 0x" << std::hex << et);
            CHECK(decode_err(b) == DecodeError::UnsupportedEthertype);
        }
    }
    // An untagged frame whose ethertype says 802.1Q but too short for the tag.
    std::vector<uint8_t> b(16, 0);
    b[12] = 0x81;
    CHECK(decode_err(b) == DecodeError::TruncatedEthernet);
}

TEST_CASE("decode: a wrong ICRC byte anywhere is caught", "[decode][icrc]") {
    const auto& v = vec("RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE/ipv6/vlan/pad3");
    const auto& f = v.built;
    for (size_t i = f.bytes.size() - 4; i < f.bytes.size(); ++i) {
        std::vector<uint8_t> b = f.bytes;
        b[i] ^= 0x10;
        CHECK(decode_err(b) == DecodeError::BadIcrc);
    }
    // A payload bit flipped: BadIcrc.
    std::vector<uint8_t> b = f.bytes;
    b[f.payload_off + 3] ^= 0x01;
    CHECK(decode_err(b) == DecodeError::BadIcrc);
    // The ICRC-masked BTH byte 4: still Ok.
    std::vector<uint8_t> c = f.bytes;
    c[f.bth + 4] ^= 0xc0;  // FECN and BECN
    Packet p;
    REQUIRE(decode_exact(c, p).error == DecodeError::Ok);
    CHECK(p.hdr.bth.fecn != v.spec.fecn);
    CHECK(p.hdr.bth.becn != v.spec.becn);
}

TEST_CASE("to_string names every DecodeError", "[decode]") {
    std::set<std::string> names;
    for (unsigned e = 0; e <= static_cast<unsigned>(DecodeError::BadIcrc); ++e) {
        const char* s = to_string(static_cast<DecodeError>(e));
        REQUIRE(s != nullptr);
        CHECK(std::string(s).size() > 0);
        names.insert(s);
    }
    CHECK(names.size() == static_cast<unsigned>(DecodeError::BadIcrc) + 1);
}

TEST_CASE("decode: a short frame padded to the Ethernet minimum is accepted", "[decode][eth]") {
    // An empty RC SEND_ONLY over untagged IPv4 is 14 + 20 + 8 + 12 + 4 = 58
    // bytes; Ethernet requires 60 (64 with the FCS), so a sender's MAC pads
    // it with two bytes that the IP total length excludes (IEEE 802.3 4.2.3.3,
    // RFC 894). The ICRC sits at the end of the UDP payload, not of the frame.
    const auto& v = vec("RC_SEND_ONLY/empty");
    REQUIRE(v.built.bytes.size() == 58);
    for (uint8_t fill : {uint8_t{0x00}, uint8_t{0xaa}}) {
        std::vector<uint8_t> b = v.built.bytes;
        b.push_back(fill);
        b.push_back(fill);
        Packet p;
        INFO("pad byte " << unsigned(fill));
        REQUIRE(decode_exact(b, p).error == DecodeError::Ok);
        CHECK(p.payload_len == 0u);
        CHECK(p.icrc == v.built.icrc);
        CHECK(p.ip4.total_len == v.built.ip_len);
        CHECK(p.udp.length == v.built.udp_len);
    }
}

TEST_CASE("check_icrc: the verdict decode_frame gives, on a packet decoded without the check",
          "[decode][icrc]") {
    // What the model's ICRC check does with the packet its parser decoded
    // (check_icrc off): every vector, intact, with each ICRC byte or a
    // payload or header byte flipped, and a short frame with the Ethernet
    // minimum's padding (which the ICRC does not cover).
    DecodeOptions no_icrc;
    no_icrc.check_icrc = false;
    auto same_verdict = [&](const std::vector<uint8_t>& b) {
        Packet with, without;
        const DecodeResult full = decode_exact(b, with);
        REQUIRE(decode_exact(b, without, no_icrc).ok() ==
                (full.ok() || full.error == DecodeError::BadIcrc));
        if (!full.ok() && full.error != DecodeError::BadIcrc) return;  // no packet to check
        const DecodeResult r = check_icrc(b.data(), without);
        CHECK(r.error == full.error);
        CHECK(r.computed_icrc == full.computed_icrc);
        CHECK(r.offset == full.offset);
    };
    size_t bad = 0;
    for (const auto& v : ref::packet_core_ref_vectors()) {
        INFO(v.name);
        const auto& f = v.built;
        same_verdict(f.bytes);
        for (size_t i : {f.bytes.size() - 1, f.bytes.size() - 4, f.bth + 8, f.l4 + 1}) {
            std::vector<uint8_t> b = f.bytes;
            b[i] ^= 0x04;
            same_verdict(b);
            Packet p;
            bad += decode_exact(b, p, no_icrc).ok() && check_icrc(b.data(), p).error == DecodeError::BadIcrc;
        }
    }
    CHECK(bad >= ref::packet_core_ref_vectors().size() * 2);  // at least the ICRC bytes' flips
    std::vector<uint8_t> b = vec("RC_SEND_ONLY/empty").built.bytes;
    b.push_back(0xaa);
    b.push_back(0xaa);
    same_verdict(b);
    Packet p;
    REQUIRE(decode_exact(b, p, no_icrc).ok());
    CHECK(check_icrc(b.data(), p).ok());
}
