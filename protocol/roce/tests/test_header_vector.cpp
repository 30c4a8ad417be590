// parse_header_vector(), the C++ twin of the RTL parser: every field against
// the hand-built vectors (whose fields and offsets come from ref_frame.h, not
// from the packet core), one hand-made frame per drop reason, and agreement
// with decode_frame() on random frames.
#include <catch2/catch.hpp>

#include <algorithm>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "packet_gen.h"
#include "ref_frame.h"
#include "simnic/roce/header_vector.h"
#include "simnic/roce/packet.h"
#include "vectors.h"

using namespace simnic::roce;
namespace ref = simnic::tb::ref;

namespace {

// Parse a copy of `b` held in a buffer of exactly its size, so that the
// sanitizers see any read past the end.
HeaderVector parse_exact(const std::vector<uint8_t>& b) {
    std::unique_ptr<uint8_t[]> buf(new uint8_t[std::max<size_t>(1, b.size())]);
    std::copy(b.begin(), b.end(), buf.get());
    return parse_header_vector(buf.get(), b.size());
}

const ref::RefVector& vec(const std::string& name) {
    for (const auto& v : ref::packet_core_ref_vectors())
        if (v.name == name) return v;
    FAIL("no vector " << name);
    throw std::logic_error("unreachable");
}

uint64_t be(const std::array<uint8_t, 16>& a, size_t from, size_t n) {
    uint64_t v = 0;
    for (size_t i = 0; i < n; ++i) v = v << 8 | a[from + i];
    return v;
}

// Every field of an accepted vector against the reference packet it was
// built from.
void check_against_ref(const HeaderVector& h, const ref::RefVector& v) {
    const ref::RefPacket& s = v.spec;
    const ref::RefFrame& f = v.built;
    REQUIRE(h.verdict == ParseVerdict::Accept);
    CHECK(h.has_vlan == s.vlan);
    CHECK(h.vlan_tci == (s.vlan ? s.vlan_tci : 0));
    if (s.ipv6) {
        CHECK(unsigned(h.ip_version) == 6);
        CHECK(std::equal(s.src6.begin(), s.src6.end(), h.src_ip.begin()));
        CHECK(std::equal(s.dst6.begin(), s.dst6.end(), h.dst_ip.begin()));
    } else {
        CHECK(unsigned(h.ip_version) == 4);
        CHECK(be(h.src_ip, 0, 8) == 0);
        CHECK(be(h.src_ip, 8, 8) == s.src4);  // IPv4 in the low 32 bits
        CHECK(be(h.dst_ip, 0, 8) == 0);
        CHECK(be(h.dst_ip, 8, 8) == s.dst4);
        CHECK(h.src_ip4() == s.src4);
        CHECK(h.dst_ip4() == s.dst4);
    }
    CHECK(h.udp_sport == s.sport);
    CHECK(unsigned(h.opcode) == s.opcode);
    CHECK(h.se == s.se);
    CHECK(h.mig == s.mig);
    CHECK(unsigned(h.pad) == s.pad);
    CHECK(h.pkey == s.pkey);
    CHECK(h.fecn == s.fecn);
    CHECK(h.becn == s.becn);
    CHECK(h.dqpn == s.dqpn);
    CHECK(h.ack_req == s.ack_req);
    CHECK(h.psn == s.psn);

    const ref::RefOpcode* ro = ref::ref_opcode(s.opcode);
    REQUIRE(ro != nullptr);
    // The mask names exactly the headers IBA lists for the opcode, and the
    // payload rule.
    CHECK((h.op_mask & 0xff) == ro->exts);
    CHECK(((h.op_mask & kPayload) != 0) == ro->payload);
    const bool deth = ro->exts & ref::kDeth, reth = ro->exts & ref::kReth,
               atomic = ro->exts & ref::kAtomicEth, aeth = ro->exts & ref::kAeth,
               atomic_ack = ro->exts & ref::kAtomicAck, imm = ro->exts & ref::kImm,
               ieth = ro->exts & ref::kIeth;
    // Present headers carry the reference's values, absent ones are zero.
    CHECK(h.deth_qkey == (deth ? s.qkey : 0));
    CHECK(h.deth_src_qp == (deth ? s.src_qp : 0));
    CHECK(h.reth_va == (reth ? s.reth_va : 0));
    CHECK(h.reth_rkey == (reth ? s.reth_rkey : 0));
    CHECK(h.reth_dma_len == (reth ? s.reth_len : 0));
    CHECK(h.atomic_va == (atomic ? s.atomic_va : 0));
    CHECK(h.atomic_rkey == (atomic ? s.atomic_rkey : 0));
    CHECK(h.atomic_swap_add == (atomic ? s.swap_add : 0));
    CHECK(h.atomic_compare == (atomic ? s.compare : 0));
    CHECK(unsigned(h.aeth_syndrome) == (aeth ? s.syndrome : 0u));
    CHECK(h.aeth_msn == (aeth ? s.msn : 0));
    CHECK(h.atomic_ack_orig == (atomic_ack ? s.orig : 0));
    CHECK(h.imm == (imm ? s.imm : 0));
    CHECK(h.ieth_rkey == (ieth ? s.ieth : 0));

    CHECK(h.l3_off == f.l3);
    CHECK(h.l4_off == f.l4);
    CHECK(h.bth_off == f.bth);
    CHECK(h.payload_off == f.payload_off);
    CHECK(h.payload_off == f.bth + ro->hdr_bytes);
    CHECK(h.payload_len == s.payload.size());
}

void check_dropped(const std::vector<uint8_t>& b, ParseVerdict want) {
    const HeaderVector h = parse_exact(b);
    CHECK(h.verdict == want);
    // A drop carries nothing but its reason.
    HeaderVector zero;
    zero.verdict = want;
    CHECK(diff(h, zero) == "");
}

// IPv4 base frame: RC_SEND_ONLY, pad 0, no VLAN.
const ref::RefVector& v4() { return vec("RC_SEND_ONLY/ipv4/pad0"); }
const ref::RefVector& v6() { return vec("RC_SEND_ONLY/ipv6/pad1"); }

}  // namespace

TEST_CASE("header_vector: every hand-built vector, field by field", "[header_vector]") {
    size_t n = 0;
    for (const ref::RefVector& v : ref::packet_core_ref_vectors()) {
        INFO(v.name);
        // The ICRC is the ICRC engine's business: vectors with a corrupted
        // one are accepted all the same.
        check_against_ref(parse_exact(v.built.bytes), v);
        ++n;
    }
    CHECK(n >= 4 * ref::ref_opcodes().size());
}

TEST_CASE("header_vector: Ethernet padding of a short frame is ignored", "[header_vector]") {
    const ref::RefVector& v = vec("RC_SEND_ONLY/empty");
    REQUIRE(v.built.bytes.size() < kEthMinFrameBytes);
    std::vector<uint8_t> b = v.built.bytes;
    b.resize(kEthMinFrameBytes, 0xee);
    check_against_ref(parse_exact(b), v);
    // One byte more and the frame is no longer short: the IP length is wrong.
    b.push_back(0);
    check_dropped(b, ParseVerdict::IpLengthMismatch);
}

TEST_CASE("header_vector: one frame per drop reason", "[header_vector]") {
    const auto& a = v4().built;
    const auto& c = v6().built;

    SECTION("too short") {
        check_dropped({}, ParseVerdict::TooShort);
        check_dropped(std::vector<uint8_t>(a.bytes.begin(), a.bytes.begin() + 13), ParseVerdict::TooShort);
        const auto& tagged = vec("RC_SEND_ONLY/ipv4/vlan/pad2").built.bytes;
        check_dropped(std::vector<uint8_t>(tagged.begin(), tagged.begin() + 17), ParseVerdict::TooShort);
        check_dropped(std::vector<uint8_t>(a.bytes.begin(), a.bytes.begin() + 14 + 19),
                      ParseVerdict::TooShort);
        check_dropped(std::vector<uint8_t>(c.bytes.begin(), c.bytes.begin() + 14 + 39),
                      ParseVerdict::TooShort);
        // IP and UDP lengths made to agree with a frame that ends inside the BTH.
        std::vector<uint8_t> b(a.bytes.begin(), a.bytes.begin() + static_cast<long>(a.bth + 11));
        ref::poke16(&b[a.l3 + 2], static_cast<uint16_t>(b.size() - a.l3));
        ref::poke16(&b[a.l4 + 4], static_cast<uint16_t>(b.size() - a.l4));
        ref::ref_fix_ipv4_checksum(b, a.l3);
        check_dropped(b, ParseVerdict::TooShort);
    }
    SECTION("not IP") {
        std::vector<uint8_t> b = a.bytes;
        ref::poke16(&b[12], 0x0806);
        check_dropped(b, ParseVerdict::NotIp);
        ref::poke16(&b[12], 0x88a8);  // QinQ is not supported
        check_dropped(b, ParseVerdict::NotIp);
    }
    SECTION("bad IP header") {
        std::vector<uint8_t> b = a.bytes;
        b[a.l3] = 0x65;  // version 6 behind the IPv4 ethertype
        check_dropped(b, ParseVerdict::BadIpHeader);
        b = a.bytes;
        b[a.l3] = 0x44;  // IHL 4
        ref::ref_fix_ipv4_checksum(b, a.l3);
        check_dropped(b, ParseVerdict::BadIpHeader);
        b = a.bytes;
        b[a.l3 + 10] ^= 1;  // checksum
        check_dropped(b, ParseVerdict::BadIpHeader);
        b = c.bytes;
        b[c.l3] = static_cast<uint8_t>((b[c.l3] & 0x0f) | 0x40);  // version 4 behind IPv6's
        check_dropped(b, ParseVerdict::BadIpHeader);
    }
    SECTION("IP length") {
        std::vector<uint8_t> b = a.bytes;
        b.push_back(0);
        check_dropped(b, ParseVerdict::IpLengthMismatch);
        b = c.bytes;
        b.pop_back();
        check_dropped(b, ParseVerdict::IpLengthMismatch);
    }
    SECTION("IP fragment") {
        for (uint16_t frag : {0x2000, 0x0001}) {  // MF; a fragment offset
            std::vector<uint8_t> b = a.bytes;
            ref::poke16(&b[a.l3 + 6], frag);
            ref::ref_fix_ipv4_checksum(b, a.l3);
            check_dropped(b, ParseVerdict::IpFragment);
        }
    }
    SECTION("not UDP") {
        std::vector<uint8_t> b = a.bytes;
        b[a.l3 + 9] = 6;
        ref::ref_fix_ipv4_checksum(b, a.l3);
        check_dropped(b, ParseVerdict::NotUdp);
        b = c.bytes;
        b[c.l3 + 6] = 0;  // an IPv6 extension header (hop-by-hop)
        check_dropped(b, ParseVerdict::NotUdp);
    }
    SECTION("UDP length") {
        std::vector<uint8_t> b = a.bytes;
        ref::poke16(&b[a.l4 + 4], static_cast<uint16_t>(a.udp_len + 1));
        check_dropped(b, ParseVerdict::UdpLengthMismatch);
    }
    SECTION("not RoCE v2") {
        std::vector<uint8_t> b = c.bytes;
        ref::poke16(&b[c.l4 + 2], 4790);
        check_dropped(b, ParseVerdict::NotRoceV2);
    }
    SECTION("bad BTH") {
        std::vector<uint8_t> b = a.bytes;
        b[a.bth] = 0x15;  // reserved
        check_dropped(b, ParseVerdict::BadBth);
        b[a.bth] = 0x40;  // RD
        check_dropped(b, ParseVerdict::BadBth);
        b = a.bytes;
        b[a.bth + 1] |= 0x01;  // TVer 1
        check_dropped(b, ParseVerdict::BadBth);
    }
    SECTION("truncated headers") {
        // SEND_ONLY with an empty payload relabelled as a CmpSwap: the frame
        // has no room for the AtomicETH.
        const auto& e = vec("RC_SEND_ONLY/empty").built;
        std::vector<uint8_t> b = e.bytes;
        b[e.bth] = 0x13;
        check_dropped(b, ParseVerdict::TruncatedHeaders);
    }
    SECTION("bad length") {
        // A FIRST packet claiming a pad; an ACK with a payload.
        const auto& first = vec("RC_SEND_FIRST/ipv4/pad0").built;
        std::vector<uint8_t> b = first.bytes;
        b[first.bth + 1] |= 0x10;
        check_dropped(b, ParseVerdict::BadLength);
        const auto& ack = vec("RC_ACKNOWLEDGE/syndrome_00").built;
        b = ack.bytes;
        b[ack.bth] = 0x04;  // SEND_ONLY reads the AETH and ICRC space as 4 bytes of payload
        CHECK(parse_exact(b).verdict == ParseVerdict::Accept);
        b[ack.bth] = 0x0c;  // READ request: RETH does not fit
        check_dropped(b, ParseVerdict::TruncatedHeaders);
        const auto& w = vec("RC_RDMA_WRITE_ONLY/ipv4/pad0").built;
        b = w.bytes;
        b[w.bth] = 0x0c;  // READ request with the WRITE's payload
        check_dropped(b, ParseVerdict::BadLength);
    }
}

TEST_CASE("header_vector: decode errors map to drop reasons", "[header_vector]") {
    std::set<ParseVerdict> seen;
    for (unsigned e = 0; e <= static_cast<unsigned>(DecodeError::BadIcrc); ++e) {
        const ParseVerdict v = verdict_of(static_cast<DecodeError>(e));
        CHECK(static_cast<size_t>(v) < kNumParseVerdicts);
        seen.insert(v);
    }
    CHECK(verdict_of(DecodeError::Ok) == ParseVerdict::Accept);
    CHECK(verdict_of(DecodeError::BadIcrc) == ParseVerdict::Accept);
    CHECK(verdict_of(DecodeError::TruncatedBth) == ParseVerdict::TooShort);
    CHECK(verdict_of(DecodeError::TruncatedExtHeader) == ParseVerdict::TruncatedHeaders);
    // Every verdict is some decode error's.
    CHECK(seen.size() == kNumParseVerdicts);
    for (size_t v = 0; v < kNumParseVerdicts; ++v) {
        CHECK(std::string(to_string(static_cast<ParseVerdict>(v))) != "unknown verdict");
        CHECK(std::string(kParseVerdictIds[v]).find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZ_0123456789") ==
              std::string::npos);
    }
}

TEST_CASE("header_vector: equality and diff name the differing field", "[header_vector]") {
    const HeaderVector a = parse_exact(v4().built.bytes);
    HeaderVector b = a;
    CHECK(a == b);
    CHECK(diff(a, b).empty());
    b.psn ^= 1;
    b.src_ip[0] ^= 0x80;
    CHECK(a != b);
    const std::string d = diff(a, b);
    CHECK(d.find("psn") != std::string::npos);
    CHECK(d.find("src_ip.hi") != std::string::npos);
    CHECK(d.find("dqpn") == std::string::npos);
    CHECK(describe(a).find("payload_len=") != std::string::npos);
}

TEST_CASE("header_vector: agrees with decode_frame() on random frames", "[header_vector]") {
    simnic::tb::PacketGenOptions opt;
    opt.unaligned_prob = 0.2;
    opt.ipv4_options_prob = 0.3;
    opt.max_payload = 300;
    simnic::tb::PacketGen gen(0x4eade7, opt);
    for (int i = 0; i < 2000; ++i) {
        simnic::tb::GenFrame g = gen.next();
        const HeaderVector h = parse_exact(g.bytes);
        Packet p;
        DecodeOptions o;
        o.check_icrc = false;
        const DecodeResult r = decode_frame(g.bytes.data(), g.bytes.size(), p, o);
        INFO(i << " " << opcode_info(g.pkt.hdr.bth.opcode).name);
        REQUIRE(h.verdict == verdict_of(r.error));
        REQUIRE(h.accepted() == g.decodable);
        if (!h.accepted()) continue;
        CHECK(h.opcode == p.hdr.bth.opcode);
        CHECK(h.psn == p.hdr.bth.psn);
        CHECK(h.dqpn == p.hdr.bth.dqpn);
        CHECK(h.op_mask == p.opinfo().mask);
        CHECK(h.l3_off == p.l3_off);
        CHECK(h.l4_off == p.l4_off);
        CHECK(h.bth_off == p.bth_off);
        CHECK(h.payload_off == p.payload_off);
        CHECK(h.payload_len == g.payload.size());
        // The ICRC sits right after payload and pad.
        CHECK(size_t{h.payload_off} + h.payload_len + h.pad + kIcrcBytes == g.bytes.size());
    }
}
