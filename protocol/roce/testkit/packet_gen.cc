#include "packet_gen.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "simnic/roce/opcode.h"
#include "simnic/roce/rules.h"

namespace simnic::tb {

using namespace simnic::roce;

PacketGen::PacketGen(uint64_t seed, const PacketGenOptions& opt)
    : seed_(seed), opt_(opt), rng_(seed) {}

const std::vector<uint8_t>& PacketGen::opcodes() {
    static const std::vector<uint8_t> list = [] {
        std::vector<uint8_t> v;
        for (size_t op = 0; op < kOpcodeTable.size(); ++op)
            if (kOpcodeTable[op].valid()) v.push_back(static_cast<uint8_t>(op));
        return v;
    }();
    return list;
}

bool PacketGen::payload_allowed(uint8_t opcode, size_t payload_len) {
    const OpcodeInfo& info = opcode_info(opcode);
    if (!info.valid()) return false;
    if (!info.has(kPayload)) return payload_len == 0;
    if (!info.has(kLast)) return payload_len != 0 && payload_len % 4 == 0;
    return true;
}

bool PacketGen::chance(double p) { return std::bernoulli_distribution(p)(rng_); }

template <typename T> T PacketGen::rand_bits(unsigned bits) {
    const uint64_t v = rng_();
    return static_cast<T>(bits >= 64 ? v : v & ((uint64_t{1} << bits) - 1));
}

size_t PacketGen::random_payload_len(uint8_t opcode) {
    const OpcodeInfo& info = opcode_info(opcode);
    if (!info.has(kPayload)) return 0;
    const size_t max = chance(opt_.small_payload_prob) ? std::min<size_t>(64, opt_.max_payload)
                                                       : opt_.max_payload;
    size_t len = std::uniform_int_distribution<size_t>(0, max)(rng_);
    if (!info.has(kLast)) {
        // FIRST and MIDDLE: a whole, non-empty number of words.
        len &= ~size_t{3};
        if (len == 0) len = 4;
    }
    return len;
}

void PacketGen::fill_headers(Packet& p, uint8_t opcode) {
    for (auto& b : p.eth.dst) b = rand_bits<uint8_t>(8);
    for (auto& b : p.eth.src) b = rand_bits<uint8_t>(8);
    p.eth.dst[0] &= 0xfe;  // unicast
    p.eth.src[0] &= 0xfe;
    p.eth.has_vlan = chance(opt_.vlan_prob);
    p.eth.vlan_tci = rand_bits<uint16_t>(16);

    const uint32_t lqpn = rand_bits<uint32_t>(24);
    const uint32_t rqpn = rand_bits<uint32_t>(24);
    if (chance(opt_.ipv6_prob)) {
        p.ip_version = IpVersion::V6;
        p.ip6.traffic_class = rand_bits<uint8_t>(8);
        p.ip6.flow_label = rand_bits<uint32_t>(20);
        p.ip6.hop_limit = rand_bits<uint8_t>(8);
        for (auto& b : p.ip6.src) b = rand_bits<uint8_t>(8);
        for (auto& b : p.ip6.dst) b = rand_bits<uint8_t>(8);
        p.udp.sport = roce_udp_sport(lqpn, rqpn, p.ip6.flow_label);
    } else {
        p.ip_version = IpVersion::V4;
        p.ip4.ihl = chance(opt_.ipv4_options_prob)
                        ? static_cast<uint8_t>(std::uniform_int_distribution<int>(6, 15)(rng_))
                        : 5;
        for (size_t i = 0; i < p.ip4.options.size(); ++i) p.ip4.options[i] = rand_bits<uint8_t>(8);
        p.ip4.tos = rand_bits<uint8_t>(8);
        p.ip4.id = rand_bits<uint16_t>(16);
        p.ip4.frag = chance(0.5) ? 0x4000 : 0;  // DF or not; never a fragment
        p.ip4.ttl = rand_bits<uint8_t>(8);
        p.ip4.src = rand_bits<uint32_t>(32);
        p.ip4.dst = rand_bits<uint32_t>(32);
        p.udp.sport = roce_udp_sport(lqpn, rqpn);
    }
    p.udp.dport = kRoceV2Port;

    Bth& b = p.hdr.bth;
    b.opcode = opcode;
    b.se = chance(0.5);
    b.mig = chance(0.5);
    b.tver = 0;
    b.pkey = rand_bits<uint16_t>(16);
    b.fecn = chance(0.5);
    b.becn = chance(0.5);
    b.resv6 = rand_bits<uint8_t>(6);
    b.dqpn = rqpn;
    b.ack_req = chance(0.5);
    b.resv7 = rand_bits<uint8_t>(7);
    b.psn = rand_bits<uint32_t>(24);

    TransportHdrs& h = p.hdr;
    h.deth = {rand_bits<uint32_t>(32), rand_bits<uint8_t>(8), lqpn};
    h.reth = {rand_bits<uint64_t>(64), rand_bits<uint32_t>(32), rand_bits<uint32_t>(32)};
    h.atomic = {rand_bits<uint64_t>(64) & ~uint64_t{7}, rand_bits<uint32_t>(32),
                rand_bits<uint64_t>(64), rand_bits<uint64_t>(64)};
    h.aeth = {rand_bits<uint8_t>(8), rand_bits<uint32_t>(24)};
    h.atomic_ack = {rand_bits<uint64_t>(64)};
    h.imm = rand_bits<uint32_t>(32);
    h.ieth_rkey = rand_bits<uint32_t>(32);
}

GenFrame PacketGen::make(uint8_t opcode, size_t payload_len, bool unaligned) {
    if (!payload_allowed(opcode, payload_len))
        throw std::invalid_argument("PacketGen: payload length " + std::to_string(payload_len) +
                                    " not allowed for opcode " + std::to_string(opcode));
    GenFrame g;
    g.payload.resize(payload_len);
    for (auto& b : g.payload) b = rand_bits<uint8_t>(8);

    Packet& p = g.pkt;
    fill_headers(p, opcode);
    p.payload = g.payload.empty() ? nullptr : g.payload.data();
    p.payload_len = payload_len;

    EncodeOptions eo;
    eo.udp_checksum = chance(opt_.udp_checksum_prob) ? UdpChecksum::Compute : UdpChecksum::Zero;
    if (unaligned) {
        // Keep the pad count we choose: fill the lengths by hand. The
        // result is a consistent frame whose payload + pad is not a whole
        // number of words (unless the draw happens to make it one).
        eo.fill_lengths = false;
        p.hdr.bth.pad = rand_bits<uint8_t>(2);
        const size_t l3 = p.ip_version == IpVersion::V4 ? size_t{p.ip4.ihl} * 4 : kIpv6HdrBytes;
        const size_t l4_len = kUdpHdrBytes + opcode_info(opcode).hdr_bytes + payload_len +
                              p.hdr.bth.pad + kIcrcBytes;
        p.ip4.total_len = static_cast<uint16_t>(l3 + l4_len);
        p.ip6.payload_len = static_cast<uint16_t>(l4_len);
        p.udp.length = static_cast<uint16_t>(l4_len);
        g.decodable = (payload_len + p.hdr.bth.pad) % 4 == 0 &&
                      (opcode_info(opcode).has(kLast) || p.hdr.bth.pad == 0);
    }
    if (!encode_frame(p, g.bytes, eo))
        throw std::logic_error("PacketGen: encode_frame refused opcode " + std::to_string(opcode));
    p.payload = g.payload.empty() ? nullptr : g.payload.data();
    return g;
}

GenFrame PacketGen::next(uint8_t opcode) {
    const bool unaligned = opcode_info(opcode).has(kPayload) && chance(opt_.unaligned_prob);
    size_t len = random_payload_len(opcode);
    if (unaligned && len == 0 && !opcode_info(opcode).has(kLast)) len = 4;
    return make(opcode, len, unaligned);
}

GenFrame PacketGen::next() {
    const auto& ops = opcodes();
    const uint8_t op = ops[std::uniform_int_distribution<size_t>(0, ops.size() - 1)(rng_)];
    return next(op);
}

}  // namespace simnic::tb
