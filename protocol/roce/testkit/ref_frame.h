// An independent reference model of the RoCE v2 wire format, for tests.
//
// Nothing here calls the packet core (simnic_roce): the opcode list, the
// header layouts, the IPv4 checksum and the ICRC are written out again from
// the InfiniBand spec (IBA vol. 1, 9.2-9.4 and annex A17) and from what kernel
// rxe was seen to send (docs: facts.md, section 6), so that the packet core
// can be checked against it. The ICRC uses zlib's crc32().
#pragma once

#include <zlib.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

namespace simnic::tb::ref {

// ---- Which headers each opcode carries (IBA 9.2, table of headers per opcode) ----

enum RefExt : uint32_t {
    kDeth = 1u << 0,       // 8 bytes
    kFeth = 1u << 1,       // 4 bytes (IBA 1.5 memory placement extensions: FLUSH)
    kReth = 1u << 2,       // 16 bytes
    kAtomicEth = 1u << 3,  // 28 bytes
    kAeth = 1u << 4,       // 4 bytes
    kAtomicAck = 1u << 5,  // 8 bytes
    kImm = 1u << 6,        // 4 bytes
    kIeth = 1u << 7,       // 4 bytes
};

enum class Role { First, Middle, Last, Only };
enum class Kind { Send, Write, ReadReq, ReadResp, Ack, AtomicAck, Atomic, AtomicWrite, Flush };

struct RefOpcode {
    uint8_t opcode;
    const char* name;
    uint32_t exts;     // RefExt bits
    bool payload;      // the packet carries a payload field
    Role role;
    Kind kind;
    uint8_t hdr_bytes; // BTH + extension headers, written out by hand
};

// Written from the spec's table; header lengths are the literal sums.
inline const std::vector<RefOpcode>& ref_opcodes() {
    static const std::vector<RefOpcode> list = {
        {0x00, "RC_SEND_FIRST", 0, true, Role::First, Kind::Send, 12},
        {0x01, "RC_SEND_MIDDLE", 0, true, Role::Middle, Kind::Send, 12},
        {0x02, "RC_SEND_LAST", 0, true, Role::Last, Kind::Send, 12},
        {0x03, "RC_SEND_LAST_WITH_IMMEDIATE", kImm, true, Role::Last, Kind::Send, 16},
        {0x04, "RC_SEND_ONLY", 0, true, Role::Only, Kind::Send, 12},
        {0x05, "RC_SEND_ONLY_WITH_IMMEDIATE", kImm, true, Role::Only, Kind::Send, 16},
        {0x06, "RC_RDMA_WRITE_FIRST", kReth, true, Role::First, Kind::Write, 28},
        {0x07, "RC_RDMA_WRITE_MIDDLE", 0, true, Role::Middle, Kind::Write, 12},
        {0x08, "RC_RDMA_WRITE_LAST", 0, true, Role::Last, Kind::Write, 12},
        {0x09, "RC_RDMA_WRITE_LAST_WITH_IMMEDIATE", kImm, true, Role::Last, Kind::Write, 16},
        {0x0a, "RC_RDMA_WRITE_ONLY", kReth, true, Role::Only, Kind::Write, 28},
        {0x0b, "RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE", kReth | kImm, true, Role::Only, Kind::Write, 32},
        {0x0c, "RC_RDMA_READ_REQUEST", kReth, false, Role::Only, Kind::ReadReq, 28},
        {0x0d, "RC_RDMA_READ_RESPONSE_FIRST", kAeth, true, Role::First, Kind::ReadResp, 16},
        {0x0e, "RC_RDMA_READ_RESPONSE_MIDDLE", 0, true, Role::Middle, Kind::ReadResp, 12},
        {0x0f, "RC_RDMA_READ_RESPONSE_LAST", kAeth, true, Role::Last, Kind::ReadResp, 16},
        {0x10, "RC_RDMA_READ_RESPONSE_ONLY", kAeth, true, Role::Only, Kind::ReadResp, 16},
        {0x11, "RC_ACKNOWLEDGE", kAeth, false, Role::Only, Kind::Ack, 16},
        {0x12, "RC_ATOMIC_ACKNOWLEDGE", kAeth | kAtomicAck, false, Role::Only, Kind::AtomicAck, 24},
        {0x13, "RC_COMPARE_SWAP", kAtomicEth, false, Role::Only, Kind::Atomic, 40},
        {0x14, "RC_FETCH_ADD", kAtomicEth, false, Role::Only, Kind::Atomic, 40},
        {0x16, "RC_SEND_LAST_WITH_INVALIDATE", kIeth, true, Role::Last, Kind::Send, 16},
        {0x17, "RC_SEND_ONLY_WITH_INVALIDATE", kIeth, true, Role::Only, Kind::Send, 16},
        // IBA 1.5 (memory placement extensions): FLUSH is BTH, FETH, RETH;
        // ATOMIC WRITE is BTH, RETH and an 8-byte payload.
        {0x1c, "RC_FLUSH", kFeth | kReth, false, Role::Only, Kind::Flush, 32},
        {0x1d, "RC_ATOMIC_WRITE", kReth, true, Role::Only, Kind::AtomicWrite, 28},
        {0x20, "UC_SEND_FIRST", 0, true, Role::First, Kind::Send, 12},
        {0x21, "UC_SEND_MIDDLE", 0, true, Role::Middle, Kind::Send, 12},
        {0x22, "UC_SEND_LAST", 0, true, Role::Last, Kind::Send, 12},
        {0x23, "UC_SEND_LAST_WITH_IMMEDIATE", kImm, true, Role::Last, Kind::Send, 16},
        {0x24, "UC_SEND_ONLY", 0, true, Role::Only, Kind::Send, 12},
        {0x25, "UC_SEND_ONLY_WITH_IMMEDIATE", kImm, true, Role::Only, Kind::Send, 16},
        {0x26, "UC_RDMA_WRITE_FIRST", kReth, true, Role::First, Kind::Write, 28},
        {0x27, "UC_RDMA_WRITE_MIDDLE", 0, true, Role::Middle, Kind::Write, 12},
        {0x28, "UC_RDMA_WRITE_LAST", 0, true, Role::Last, Kind::Write, 12},
        {0x29, "UC_RDMA_WRITE_LAST_WITH_IMMEDIATE", kImm, true, Role::Last, Kind::Write, 16},
        {0x2a, "UC_RDMA_WRITE_ONLY", kReth, true, Role::Only, Kind::Write, 28},
        {0x2b, "UC_RDMA_WRITE_ONLY_WITH_IMMEDIATE", kReth | kImm, true, Role::Only, Kind::Write, 32},
        {0x64, "UD_SEND_ONLY", kDeth, true, Role::Only, Kind::Send, 20},
        {0x65, "UD_SEND_ONLY_WITH_IMMEDIATE", kDeth | kImm, true, Role::Only, Kind::Send, 24},
    };
    return list;
}

inline const RefOpcode* ref_opcode(uint8_t opcode) {
    for (const RefOpcode& r : ref_opcodes())
        if (r.opcode == opcode) return &r;
    return nullptr;
}

// ---- A packet, field by field ----

struct RefPacket {
    std::array<uint8_t, 6> dmac{};
    std::array<uint8_t, 6> smac{};
    bool vlan = false;
    uint16_t vlan_tci = 0;

    bool ipv6 = false;
    // IPv4
    uint8_t tos = 0;
    uint16_t ip_id = 0;
    uint16_t frag = 0x4000;  // DF
    uint8_t ttl = 64;
    uint8_t ip_proto = 17;
    uint32_t src4 = 0, dst4 = 0;
    std::vector<uint8_t> ip4_options;  // multiple of 4 bytes, at most 40
    // IPv6
    uint8_t tclass = 0;
    uint32_t flow = 0;
    uint8_t hop = 64;
    std::array<uint8_t, 16> src6{}, dst6{};

    uint16_t sport = 0;
    uint16_t dport = 4791;
    uint16_t udp_csum = 0;

    // BTH
    uint8_t opcode = 0;
    bool se = false, mig = false;
    uint8_t pad = 0;  // written as given; the builder appends `pad` zero bytes
    uint8_t tver = 0;
    uint16_t pkey = 0xffff;
    bool fecn = false, becn = false;
    uint8_t resv6 = 0;
    uint32_t dqpn = 0;
    bool ack_req = false;
    uint8_t resv7 = 0;
    uint32_t psn = 0;

    // Extension headers (only those the opcode names are written)
    uint32_t qkey = 0;
    uint8_t resv8 = 0;
    uint32_t src_qp = 0;
    uint32_t feth = 0;  // the whole word: reserved, selectivity (5..4), placement (3..0)
    uint64_t reth_va = 0;
    uint32_t reth_rkey = 0, reth_len = 0;
    uint64_t atomic_va = 0;
    uint32_t atomic_rkey = 0;
    uint64_t swap_add = 0, compare = 0;
    uint8_t syndrome = 0;
    uint32_t msn = 0;
    uint64_t orig = 0;
    uint32_t imm = 0;
    uint32_t ieth = 0;

    std::vector<uint8_t> payload;
    bool corrupt_icrc = false;
};

struct RefFrame {
    std::vector<uint8_t> bytes;
    size_t l3 = 0, l4 = 0, bth = 0, payload_off = 0;
    uint16_t ip_len = 0;   // IPv4 total length or IPv6 payload length
    uint16_t udp_len = 0;
    uint32_t icrc = 0;      // the correct ICRC (even if the frame carries a corrupted one)
    uint32_t wire_icrc = 0; // the ICRC as written in the frame
};

inline void put16(std::vector<uint8_t>& b, uint16_t v) {
    b.push_back(static_cast<uint8_t>(v >> 8));
    b.push_back(static_cast<uint8_t>(v));
}
inline void put24(std::vector<uint8_t>& b, uint32_t v) {
    b.push_back(static_cast<uint8_t>(v >> 16));
    b.push_back(static_cast<uint8_t>(v >> 8));
    b.push_back(static_cast<uint8_t>(v));
}
inline void put32(std::vector<uint8_t>& b, uint32_t v) {
    put16(b, static_cast<uint16_t>(v >> 16));
    put16(b, static_cast<uint16_t>(v));
}
inline void put64(std::vector<uint8_t>& b, uint64_t v) {
    put32(b, static_cast<uint32_t>(v >> 32));
    put32(b, static_cast<uint32_t>(v));
}
inline void poke16(uint8_t* p, uint16_t v) {
    p[0] = static_cast<uint8_t>(v >> 8);
    p[1] = static_cast<uint8_t>(v);
}
inline uint16_t peek16(const uint8_t* p) { return static_cast<uint16_t>(p[0] << 8 | p[1]); }

// RFC 1071 one's-complement sum over an even number of bytes, complemented.
inline uint16_t ref_inet_checksum(const uint8_t* p, size_t len) {
    uint32_t sum = 0;
    for (size_t i = 0; i + 1 < len; i += 2) sum += static_cast<uint32_t>(p[i] << 8 | p[i + 1]);
    if (len & 1) sum += static_cast<uint32_t>(p[len - 1] << 8);
    while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
    return static_cast<uint16_t>(~sum);
}

// Recompute the IPv4 header checksum in place (header length from the IHL,
// at least 20 bytes).
inline void ref_fix_ipv4_checksum(std::vector<uint8_t>& f, size_t l3) {
    size_t hl = static_cast<size_t>(f[l3] & 0x0f) * 4;
    if (hl < 20) hl = 20;
    poke16(&f[l3 + 10], 0);
    poke16(&f[l3 + 10], ref_inet_checksum(&f[l3], hl));
}

// The ICRC, from the masked bytes [l3, len - 4), with zlib.
inline uint32_t ref_icrc(const uint8_t* frame, size_t len, size_t l3, size_t l4, bool ipv6) {
    std::vector<uint8_t> m(8, 0xff);
    m.insert(m.end(), frame + l3, frame + len - 4);
    uint8_t* ip = &m[8];
    if (!ipv6) {
        ip[1] = 0xff;                // TOS
        ip[8] = 0xff;                // TTL
        ip[10] = ip[11] = 0xff;      // header checksum
    } else {
        ip[0] |= 0x0f;               // traffic class, high nibble
        ip[1] = ip[2] = ip[3] = 0xff;  // traffic class low nibble, flow label
        ip[7] = 0xff;                // hop limit
    }
    uint8_t* udp = &m[8 + (l4 - l3)];
    udp[6] = udp[7] = 0xff;          // UDP checksum
    udp[8 + 4] = 0xff;               // BTH byte 4 (FECN, BECN, reserved)
    uLong c = ::crc32(0L, Z_NULL, 0);
    c = ::crc32(c, m.data(), static_cast<uInt>(m.size()));
    return static_cast<uint32_t>(c);
}

inline void ref_store_icrc(std::vector<uint8_t>& f, uint32_t icrc) {
    size_t n = f.size();
    f[n - 4] = static_cast<uint8_t>(icrc);
    f[n - 3] = static_cast<uint8_t>(icrc >> 8);
    f[n - 2] = static_cast<uint8_t>(icrc >> 16);
    f[n - 1] = static_cast<uint8_t>(icrc >> 24);
}

inline void ref_fix_icrc(std::vector<uint8_t>& f, size_t l3, size_t l4, bool ipv6) {
    ref_store_icrc(f, ref_icrc(f.data(), f.size(), l3, l4, ipv6));
}

// Build the bytes of the extension headers the opcode names, in IBA order.
inline void ref_put_exts(std::vector<uint8_t>& b, const RefPacket& s, uint32_t exts) {
    if (exts & kDeth) {
        put32(b, s.qkey);
        b.push_back(s.resv8);
        put24(b, s.src_qp);
    }
    if (exts & kFeth) put32(b, s.feth);
    if (exts & kReth) {
        put64(b, s.reth_va);
        put32(b, s.reth_rkey);
        put32(b, s.reth_len);
    }
    if (exts & kAtomicEth) {
        put64(b, s.atomic_va);
        put32(b, s.atomic_rkey);
        put64(b, s.swap_add);
        put64(b, s.compare);
    }
    if (exts & kAeth) {
        b.push_back(s.syndrome);
        put24(b, s.msn);
    }
    if (exts & kAtomicAck) put64(b, s.orig);
    if (exts & kImm) put32(b, s.imm);
    if (exts & kIeth) put32(b, s.ieth);
}

// Assemble a whole Ethernet frame. Lengths and checksums are computed from the
// bytes written; the BTH pad field is written as s.pad and s.pad zero bytes
// follow the payload. An opcode missing from ref_opcodes() gets no extension
// headers.
inline RefFrame ref_build(const RefPacket& s) {
    RefFrame r;
    std::vector<uint8_t>& b = r.bytes;
    b.insert(b.end(), s.dmac.begin(), s.dmac.end());
    b.insert(b.end(), s.smac.begin(), s.smac.end());
    if (s.vlan) {
        put16(b, 0x8100);
        put16(b, s.vlan_tci);
    }
    put16(b, s.ipv6 ? 0x86dd : 0x0800);
    r.l3 = b.size();

    // Transport part first, to know the lengths.
    std::vector<uint8_t> t;
    t.push_back(s.opcode);
    t.push_back(static_cast<uint8_t>((s.se ? 0x80 : 0) | (s.mig ? 0x40 : 0) | ((s.pad & 3) << 4) |
                                     (s.tver & 0x0f)));
    put16(t, s.pkey);
    t.push_back(static_cast<uint8_t>((s.fecn ? 0x80 : 0) | (s.becn ? 0x40 : 0) | (s.resv6 & 0x3f)));
    put24(t, s.dqpn);
    t.push_back(static_cast<uint8_t>((s.ack_req ? 0x80 : 0) | (s.resv7 & 0x7f)));
    put24(t, s.psn);
    const RefOpcode* ro = ref_opcode(s.opcode);
    ref_put_exts(t, s, ro ? ro->exts : 0);
    size_t payload_in_t = t.size();
    t.insert(t.end(), s.payload.begin(), s.payload.end());
    t.insert(t.end(), s.pad, 0);
    t.insert(t.end(), 4, 0);  // ICRC, filled below

    r.udp_len = static_cast<uint16_t>(8 + t.size());
    size_t iphl = 0;
    if (!s.ipv6) {
        iphl = 20 + s.ip4_options.size();
        r.ip_len = static_cast<uint16_t>(iphl + r.udp_len);
        b.push_back(static_cast<uint8_t>(0x40 | (iphl / 4)));
        b.push_back(s.tos);
        put16(b, r.ip_len);
        put16(b, s.ip_id);
        put16(b, s.frag);
        b.push_back(s.ttl);
        b.push_back(s.ip_proto);
        put16(b, 0);
        put32(b, s.src4);
        put32(b, s.dst4);
        b.insert(b.end(), s.ip4_options.begin(), s.ip4_options.end());
        poke16(&b[r.l3 + 10], ref_inet_checksum(&b[r.l3], iphl));
    } else {
        iphl = 40;
        r.ip_len = r.udp_len;
        put32(b, (6u << 28) | (uint32_t{s.tclass} << 20) | (s.flow & 0xfffff));
        put16(b, r.ip_len);
        b.push_back(s.ip_proto);
        b.push_back(s.hop);
        b.insert(b.end(), s.src6.begin(), s.src6.end());
        b.insert(b.end(), s.dst6.begin(), s.dst6.end());
    }
    r.l4 = b.size();
    put16(b, s.sport);
    put16(b, s.dport);
    put16(b, r.udp_len);
    put16(b, s.udp_csum);
    r.bth = b.size();
    r.payload_off = r.bth + payload_in_t;
    b.insert(b.end(), t.begin(), t.end());

    r.icrc = ref_icrc(b.data(), b.size(), r.l3, r.l4, s.ipv6);
    r.wire_icrc = s.corrupt_icrc ? (r.icrc ^ 0x00a50000u) : r.icrc;
    ref_store_icrc(b, r.wire_icrc);
    return r;
}

// The rxe UDP source port rule (facts.md 6), written out again.
inline uint16_t ref_sport(uint32_t lqpn, uint32_t rqpn, uint32_t flow_label = 0) {
    uint32_t fl = flow_label & 0xfffff;
    if (fl == 0) {
        uint64_t v = uint64_t{lqpn} * uint64_t{rqpn};
        v ^= v >> 20;
        v ^= v >> 40;
        fl = static_cast<uint32_t>(v & 0xfffff);
    }
    return static_cast<uint16_t>(0xc000 | ((fl & 0x3fff) ^ ((fl >> 14) & 0x3f)));
}

struct RefVector {
    std::string name;
    RefPacket spec;
    RefFrame built;
};

// The hand-built vectors with the fields they were built from, in the same
// order as simnic::tb::packet_core_vectors(). Defined in vectors.cc.
const std::vector<RefVector>& packet_core_ref_vectors();

}  // namespace simnic::tb::ref
