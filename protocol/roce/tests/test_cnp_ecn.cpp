// The RoCE v2 CNP (IBA annex A17.9.3) and ECN in the IP header: the CNP's
// bytes against a frame written out by hand from the annex, and ECN marking
// against the ICRC's masking rules.
#include <catch2/catch.hpp>

#include <vector>

#include "simnic/roce/ecn.h"
#include "simnic/roce/icrc.h"
#include "simnic/roce/packet.h"

using namespace simnic::roce;

namespace {

// The packet a switch marked: RC SEND ONLY from 10.0.0.1 (QP 0xd2) to
// 10.0.0.2 (QP 0x11), flow entropy 0xc000 in the UDP source port.
Packet marked_packet(IpVersion v) {
    Packet p;
    p.eth.src = {0x02, 0, 0, 0, 0, 0x01};
    p.eth.dst = {0x02, 0, 0, 0, 0, 0x02};
    p.ip_version = v;
    p.ip4.src = 0x0a000001;
    p.ip4.dst = 0x0a000002;
    p.ip4.tos = 0x03;  // CE
    for (int i = 0; i < 16; ++i) {
        p.ip6.src[i] = uint8_t(0x20 + i);
        p.ip6.dst[i] = uint8_t(0x40 + i);
    }
    p.ip6.traffic_class = 0x03;
    p.udp.sport = 0xc000;
    p.hdr.bth.opcode = op::RC_SEND_ONLY;
    p.hdr.bth.pkey = 0xffff;
    p.hdr.bth.dqpn = 0x11;
    p.hdr.bth.psn = 0x123456;
    return p;
}

// The CNP answering marked_packet(V4), written out from annex A17.9.3 byte
// by byte (no code of the packet core involved):
//   Ethernet: back to the sender's MAC, from the receiver's, IPv4.
//   IPv4: IHL 5, TOS 0 (DSCP 0, Not-ECT), total length 20 + 40 = 60, ID 0,
//     DF, TTL 64, UDP, checksum 0x26af (the one's complement of the sum of
//     4500 003c 0000 4000 4011 0a00 0002 0a00 0001 = 0xd950), 10.0.0.2 ->
//     10.0.0.1.
//   UDP: source port 0xc000, destination 4791 (0x12b7), length 8 + 12 + 16
//     + 4 = 40, checksum 0.
//   BTH (A17.9.3): OpCode 0x81; SE 0, M 0, PadCnt 0, TVer 0; P_Key 0xffff
//     (the marked packet's); FECN 0, BECN 1 (0x40); DestQP 0x0000d2 (the QP
//     that sent the marked packet); A 0; PSN 0.
//   16 reserved bytes, 0.
//   ICRC: CRC-32 over eight 0xff bytes, then the IP header with TOS, TTL and
//     checksum set to ones, the UDP header with its checksum set to ones, the
//     BTH with byte 4 set to ones and the reserved bytes; least significant
//     byte first (annex A17's ICRC rules, docs/wire-format.md). 0x22a337ea,
//     computed with zlib's crc32 outside this project's code.
const std::vector<uint8_t> kCnpGolden = {
    0x02, 0x00, 0x00, 0x00, 0x00, 0x01, 0x02, 0x00, 0x00, 0x00, 0x00, 0x02, 0x08, 0x00,  // Ethernet
    0x45, 0x00, 0x00, 0x3c, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0x26, 0xaf,              // IPv4
    0x0a, 0x00, 0x00, 0x02, 0x0a, 0x00, 0x00, 0x01,
    0xc0, 0x00, 0x12, 0xb7, 0x00, 0x28, 0x00, 0x00,                                      // UDP
    0x81, 0x00, 0xff, 0xff, 0x40, 0x00, 0x00, 0xd2, 0x00, 0x00, 0x00, 0x00,              // BTH
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,                                      // reserved
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0xea, 0x37, 0xa3, 0x22,                                                              // ICRC
};

std::vector<uint8_t> encode(Packet p) {
    std::vector<uint8_t> out;
    REQUIRE(encode_frame(p, out));
    return out;
}

// A RoCE v2 data frame to mark: RC SEND ONLY with 37 bytes of payload.
std::vector<uint8_t> data_frame(IpVersion v, Ecn e) {
    static const std::vector<uint8_t> payload(37, 0x5a);
    Packet p = marked_packet(v);
    set_ecn(p, e);
    p.payload = payload.data();
    p.payload_len = payload.size();
    return encode(p);
}

uint32_t icrc_of(const std::vector<uint8_t>& f) {
    Packet p;
    DecodeOptions o;
    o.check_icrc = false;
    REQUIRE(decode_frame(f.data(), f.size(), p, o).ok());
    return compute_icrc(f.data(), f.size(), p.l3_off, p.l4_off, p.ip_version);
}

}  // namespace

TEST_CASE("CNP: the opcode table knows 0x81 as annex A17.9.3 defines it", "[cnp]") {
    const OpcodeInfo& i = opcode_info(op::CNP);
    REQUIRE(i.valid());
    CHECK(std::string(i.name) == "CNP");
    CHECK(i.has(kCnp));
    CHECK_FALSE(i.has(kRequest));
    CHECK_FALSE(i.has(kResponse));
    CHECK_FALSE(i.has(kPayload));
    CHECK(unsigned(i.hdr_bytes) == 12 + 16);  // BTH and the reserved bytes
    CHECK(opcode_transport(op::CNP) == Transport::CNP);
    for (size_t e = 0; e < kNumExt; ++e) CHECK(unsigned(i.ext_off[e]) == 0);
}

TEST_CASE("CNP: built byte for byte as the annex says", "[cnp]") {
    const Packet cnp = make_cnp(marked_packet(IpVersion::V4), 0xd2);
    CHECK(is_cnp(cnp));
    CHECK(encode(cnp) == kCnpGolden);
}

TEST_CASE("CNP: parsed byte for byte, and re-encoded unchanged", "[cnp]") {
    Packet p;
    const DecodeResult r = decode_frame(kCnpGolden.data(), kCnpGolden.size(), p);
    REQUIRE(r.ok());  // the golden ICRC is valid
    CHECK(is_cnp(p));
    const Bth& b = p.hdr.bth;
    CHECK(unsigned(b.opcode) == 0x81);
    CHECK_FALSE(b.se);
    CHECK_FALSE(b.mig);
    CHECK(unsigned(b.pad) == 0);
    CHECK(unsigned(b.tver) == 0);
    CHECK(b.pkey == 0xffff);
    CHECK_FALSE(b.fecn);
    CHECK(b.becn);
    CHECK(b.dqpn == 0xd2);
    CHECK_FALSE(b.ack_req);
    CHECK(b.psn == 0);
    CHECK(p.payload_len == 0);
    CHECK(p.payload_off == p.bth_off + 28);
    CHECK(p.icrc == 0x22a337ea);
    for (uint8_t x : p.hdr.cnp_resv) CHECK(unsigned(x) == 0);
    // Reserved bytes a sender did not zero are kept, for a byte-exact round
    // trip (headers.h), and covered by the ICRC.
    std::vector<uint8_t> odd = kCnpGolden;
    odd[42 + 12 + 5] = 0xa5;
    Packet q;
    CHECK(decode_frame(odd.data(), odd.size(), q).error == DecodeError::BadIcrc);
    DecodeOptions no_icrc;
    no_icrc.check_icrc = false;
    REQUIRE(decode_frame(odd.data(), odd.size(), q, no_icrc).ok());
    CHECK(unsigned(q.hdr.cnp_resv[5]) == 0xa5);
    EncodeOptions keep;
    keep.fill_icrc = false;
    std::vector<uint8_t> again;
    REQUIRE(encode_frame(q, again, keep));
    CHECK(again == odd);
}

TEST_CASE("CNP: truncated or carrying a payload, it is refused", "[cnp]") {
    Packet p;
    std::vector<uint8_t> shortf(kCnpGolden.begin(), kCnpGolden.end() - 8);
    CHECK_FALSE(decode_frame(shortf.data(), shortf.size(), p).ok());
    Packet c = make_cnp(marked_packet(IpVersion::V4), 0xd2);
    const uint8_t four[4] = {1, 2, 3, 4};
    c.payload = four;
    c.payload_len = 4;
    std::vector<uint8_t> out;
    CHECK_FALSE(encode_frame(c, out));
}

TEST_CASE("CNP: over IPv6, addressed back to the sender", "[cnp]") {
    const Packet m = marked_packet(IpVersion::V6);
    const std::vector<uint8_t> f = encode(make_cnp(m, 0xabcdef));
    Packet p;
    REQUIRE(decode_frame(f.data(), f.size(), p).ok());
    CHECK(is_cnp(p));
    CHECK(p.ip6.src == m.ip6.dst);
    CHECK(p.ip6.dst == m.ip6.src);
    CHECK(p.eth.dst == m.eth.src);
    CHECK(p.hdr.bth.dqpn == 0xabcdef);
    CHECK(ecn_of(p) == Ecn::NotEct);
    CHECK(f.size() == 14 + 40 + 8 + 12 + 16 + 4);
}

TEST_CASE("ECN: ECT(0) set on IPv4 keeps the header checksum right", "[ecn]") {
    std::vector<uint8_t> f = data_frame(IpVersion::V4, Ecn::NotEct);
    const std::vector<uint8_t> before = f;
    CHECK(read_frame_ecn(f.data(), f.size()) == Ecn::NotEct);
    REQUIRE(set_ect0(f.data() + 14, f.size() - 14));
    CHECK(read_frame_ecn(f.data(), f.size()) == Ecn::Ect0);
    CHECK(unsigned(f[15]) == 0x02);  // TOS: DSCP 0, ECN 10
    CHECK(ipv4_checksum(f.data() + 14, 20) == 0);
    CHECK((f[24] != before[24] || f[25] != before[25]));  // the checksum did change
    // The incremental update agrees with a full recomputation.
    std::vector<uint8_t> g = f;
    g[24] = g[25] = 0;
    const uint16_t full = ipv4_checksum(g.data() + 14, 20);
    CHECK(((f[24] << 8) | f[25]) == full);
    // The DSCP is kept.
    f[15] = static_cast<uint8_t>(0xb8 | (f[15] & 3));  // DSCP 46 (EF)
    f[24] = f[25] = 0;
    const uint16_t c = ipv4_checksum(f.data() + 14, 20);
    f[24] = uint8_t(c >> 8);
    f[25] = uint8_t(c);
    REQUIRE(write_frame_ecn(f.data(), f.size(), Ecn::Ce));
    CHECK(unsigned(f[15]) == 0xbb);
    CHECK(ipv4_checksum(f.data() + 14, 20) == 0);
}

TEST_CASE("ECN: ECT(0) on IPv6 sits in the traffic class", "[ecn]") {
    Packet p = marked_packet(IpVersion::V6);
    p.ip6.traffic_class = 0xb8;  // DSCP 46, Not-ECT
    p.ip6.flow_label = 0xfffff;
    std::vector<uint8_t> f = encode(p);
    REQUIRE(set_ect0(f.data() + 14, f.size() - 14));
    Packet q;
    REQUIRE(decode_frame(f.data(), f.size(), q).ok());
    CHECK(unsigned(q.ip6.traffic_class) == 0xba);
    CHECK(q.ip6.flow_label == 0xfffff);
    CHECK(ecn_of(q) == Ecn::Ect0);
}

TEST_CASE("ECN: a switch's CE mark leaves the ICRC valid, IPv4 and IPv6", "[ecn][icrc]") {
    for (IpVersion v : {IpVersion::V4, IpVersion::V6}) {
        INFO((v == IpVersion::V4 ? "IPv4" : "IPv6"));
        std::vector<uint8_t> f = data_frame(v, Ecn::Ect0);
        const uint32_t icrc = icrc_of(f);
        Packet p;
        REQUIRE(decode_frame(f.data(), f.size(), p).ok());
        CHECK(ecn_of(p) == Ecn::Ect0);

        REQUIRE(mark_ce(f.data() + 14, f.size() - 14));
        CHECK(read_frame_ecn(f.data(), f.size()) == Ecn::Ce);
        // The ICRC masks the TOS / traffic class: unchanged, and the frame
        // still decodes with its ICRC and IPv4 checksum checked.
        CHECK(icrc_of(f) == icrc);
        REQUIRE(decode_frame(f.data(), f.size(), p).ok());
        CHECK(ecn_of(p) == Ecn::Ce);
        // Marking again is harmless.
        CHECK(mark_ce(f.data() + 14, f.size() - 14));
        CHECK(decode_frame(f.data(), f.size(), p).ok());

        // The control: a byte the ICRC does cover breaks it.
        f[f.size() - 8] ^= 1;
        CHECK(decode_frame(f.data(), f.size(), p).error == DecodeError::BadIcrc);
    }
}

TEST_CASE("ECN: a Not-ECT packet is never marked CE", "[ecn]") {
    std::vector<uint8_t> f = data_frame(IpVersion::V4, Ecn::NotEct);
    const std::vector<uint8_t> before = f;
    CHECK_FALSE(mark_ce(f.data() + 14, f.size() - 14));
    CHECK(f == before);
    // ECT(1) is ECN-capable too.
    std::vector<uint8_t> g = data_frame(IpVersion::V4, Ecn::Ect1);
    CHECK(mark_ce(g.data() + 14, g.size() - 14));
    CHECK(read_frame_ecn(g.data(), g.size()) == Ecn::Ce);
}

TEST_CASE("ECN: helpers refuse what is not an IP header", "[ecn]") {
    uint8_t junk[40] = {0x55};
    CHECK_FALSE(read_ecn(junk, sizeof junk).has_value());
    CHECK_FALSE(write_ecn(junk, sizeof junk, Ecn::Ce));
    uint8_t v4[10] = {0x45};
    CHECK_FALSE(read_ecn(v4, sizeof v4).has_value());  // shorter than the header
    std::vector<uint8_t> arp(60, 0);
    arp[12] = 0x08;
    arp[13] = 0x06;
    CHECK(ip_header_offset(arp.data(), arp.size()) == 0);
    CHECK_FALSE(read_frame_ecn(arp.data(), arp.size()).has_value());
}

TEST_CASE("CNP: the DSCP asked for is in the IP header, with ECN Not-ECT", "[cnp]") {
    for (const IpVersion v : {IpVersion::V4, IpVersion::V6}) {
        for (const unsigned dscp : {0u, 26u, 48u, 63u}) {
            INFO("IPv" << (v == IpVersion::V4 ? 4 : 6) << ", DSCP " << dscp);
            const std::vector<uint8_t> f = encode(make_cnp(marked_packet(v), 0xd2, uint8_t(dscp)));
            Packet p;
            REQUIRE(decode_frame(f.data(), f.size(), p).ok());  // IPv4 checksum and ICRC valid
            // On the wire: the TOS byte (IPv4, byte 1) or the traffic class
            // (IPv6, bits 4..11 of the first word), DSCP in its top six bits.
            const size_t ip = ip_header_offset(f.data(), f.size());
            REQUIRE(ip == 14);
            const unsigned tc = v == IpVersion::V4 ? f[ip + 1] : unsigned((f[ip] & 0x0f) << 4 | f[ip + 1] >> 4);
            CHECK(tc >> 2 == dscp);
            CHECK((tc & 3) == 0);
            CHECK(read_frame_ecn(f.data(), f.size()) == Ecn::NotEct);
        }
    }
}
