// Hand-built RoCE v2 frames. Every byte comes from ref_frame.h's independent
// builder; nothing here calls the packet core.
#include "vectors.h"

#include <cstdio>

#include "ref_frame.h"

namespace simnic::tb {
namespace {

using ref::RefPacket;
using ref::RefVector;
using ref::Role;

// A small deterministic generator (SplitMix64), so the vectors never change
// with the standard library.
struct Mix {
    uint64_t s;
    uint64_t next() {
        uint64_t z = (s += 0x9e3779b97f4a7c15ull);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        return z ^ (z >> 31);
    }
    uint32_t u32() { return static_cast<uint32_t>(next()); }
};

// Two rxe-like endpoints: QEMU MACs, 10.0.0.1/10.0.0.2 and link-local GIDs
// built from the MACs (EUI-64), as rxe's GID 0.
constexpr std::array<uint8_t, 6> kMacA = {0x52, 0x54, 0x00, 0x12, 0x34, 0x56};
constexpr std::array<uint8_t, 6> kMacB = {0x52, 0x54, 0x00, 0xab, 0xcd, 0xef};
constexpr std::array<uint8_t, 16> kGidA = {0xfe, 0x80, 0, 0, 0, 0, 0, 0,
                                           0x50, 0x54, 0x00, 0xff, 0xfe, 0x12, 0x34, 0x56};
constexpr std::array<uint8_t, 16> kGidB = {0xfe, 0x80, 0, 0, 0, 0, 0, 0,
                                           0x50, 0x54, 0x00, 0xff, 0xfe, 0xab, 0xcd, 0xef};

RefPacket base_packet(bool ipv6, bool vlan, uint8_t opcode, uint32_t lqpn, uint32_t rqpn,
                      uint32_t psn) {
    RefPacket s;
    s.dmac = kMacB;
    s.smac = kMacA;
    s.vlan = vlan;
    s.vlan_tci = vlan ? static_cast<uint16_t>((3u << 13) | 100) : 0;  // PCP 3, VID 100
    s.ipv6 = ipv6;
    s.src4 = 0x0a000001;
    s.dst4 = 0x0a000002;
    s.src6 = kGidA;
    s.dst6 = kGidB;
    s.ip_id = static_cast<uint16_t>(psn * 7);
    s.sport = ref::ref_sport(lqpn, rqpn);
    s.opcode = opcode;
    s.dqpn = rqpn;
    s.psn = psn;
    return s;
}

void fill_payload(RefPacket& s, size_t len, Mix& rng) {
    s.payload.resize(len);
    for (auto& b : s.payload) b = static_cast<uint8_t>(rng.next());
    s.pad = static_cast<uint8_t>((4 - len % 4) % 4);
}

void fill_exts(RefPacket& s, Mix& rng) {
    const ref::RefOpcode* ro = ref::ref_opcode(s.opcode);
    if (!ro) return;
    if (ro->exts & ref::kDeth) {
        s.qkey = 0x11111111;  // rxe's ib_send_bw / ud_pingpong default Q_Key
        s.src_qp = 0x000013;
    }
    if (ro->exts & ref::kFeth) s.feth = 0x11;  // whole MR, global visibility
    if (ro->exts & ref::kReth) {
        s.reth_va = 0x00007f3a'12345000ull + (rng.next() & 0xff0);
        s.reth_rkey = 0x00001a2b;
        s.reth_len = s.opcode == 0x0c ? 8192 : static_cast<uint32_t>(s.payload.size() + 3000);
    }
    if (ro->exts & ref::kAtomicEth) {
        s.atomic_va = 0x00005555'aaaa0008ull;
        s.atomic_rkey = 0x00000c0d;
        s.swap_add = 0x0123456789abcdefull;
        s.compare = s.opcode == 0x13 ? 0xfedcba9876543210ull : 0;
    }
    if (ro->exts & ref::kAeth) {
        s.syndrome = 0x1f;  // ACK, credits field 31 (invalid/unlimited credit)
        s.msn = rng.u32() & 0xffffff;
    }
    if (ro->exts & ref::kAtomicAck) s.orig = 0x1122334455667788ull;
    if (ro->exts & ref::kImm) s.imm = 0xdeadbeef;
    if (ro->exts & ref::kIeth) s.ieth = 0x00abcdef;
}

void add(std::vector<RefVector>& out, std::string name, const RefPacket& s) {
    RefVector v;
    v.name = std::move(name);
    v.spec = s;
    v.built = ref::ref_build(s);
    out.push_back(std::move(v));
}

std::vector<RefVector> make_vectors() {
    std::vector<RefVector> out;
    Mix rng{0x51ac0001};

    // 1. Every opcode over IPv4/IPv6, with and without a VLAN tag. For the
    //    last/only packets with a payload, the four combinations use payload
    //    lengths that give pad counts 0, 1, 2 and 3.
    for (const ref::RefOpcode& ro : ref::ref_opcodes()) {
        for (int combo = 0; combo < 4; ++combo) {
            bool ipv6 = combo & 1;
            bool vlan = combo & 2;
            uint32_t lqpn = 0x11 + static_cast<uint32_t>(combo);
            uint32_t rqpn = 0x12 + static_cast<uint32_t>(combo) * 0x101;
            uint32_t psn = (rng.u32() & 0xffffff);
            RefPacket s = base_packet(ipv6, vlan, ro.opcode, lqpn, rqpn, psn);
            // Requests ask for an ACK on the last packet, as rxe does.
            s.ack_req = (ro.kind != ref::Kind::Ack && ro.kind != ref::Kind::AtomicAck &&
                         ro.kind != ref::Kind::ReadResp) &&
                        (ro.role == Role::Last || ro.role == Role::Only);
            if (ro.opcode == 0x64 || ro.opcode == 0x65) {
                s.ack_req = false;
                s.dqpn = rqpn;
            }
            size_t len = 0;
            if (ro.payload) {
                if (ro.role == Role::First || ro.role == Role::Middle) {
                    static const size_t kMtu[4] = {256, 1024, 512, 256};
                    len = kMtu[combo];
                } else {
                    int pad = combo;  // 0..3
                    len = 4 * (5 + static_cast<size_t>(combo) * 9) + static_cast<size_t>((4 - pad) % 4);
                }
            }
            fill_payload(s, len, rng);
            fill_exts(s, rng);
            char name[96];
            std::snprintf(name, sizeof name, "%s/%s%s/pad%u", ro.name, ipv6 ? "ipv6" : "ipv4",
                          vlan ? "/vlan" : "", static_cast<unsigned>(s.pad));
            add(out, name, s);
        }
    }

    // 2. Payload edge cases.
    {
        RefPacket s = base_packet(false, false, 0x04, 0x11, 0x11, 0);  // SEND_ONLY, empty
        s.ack_req = true;
        add(out, "RC_SEND_ONLY/empty", s);
        s.payload = {0x42};
        s.pad = 3;
        s.psn = 1;
        add(out, "RC_SEND_ONLY/1byte/pad3", s);
        s.payload = {0x42, 0x43, 0x44};
        s.pad = 1;
        s.psn = 2;
        add(out, "RC_SEND_ONLY/3byte/pad1", s);
        RefPacket w = base_packet(true, false, 0x0a, 0x14, 0x14, 5);  // WRITE_ONLY, 0 bytes
        w.ack_req = true;
        w.reth_va = 0;
        w.reth_rkey = 0x1234;
        w.reth_len = 0;
        add(out, "RC_RDMA_WRITE_ONLY/empty", w);
        RefPacket j = base_packet(true, true, 0x04, 0x11, 0x11, 6);  // 4096-byte SEND_ONLY
        j.ack_req = true;
        fill_payload(j, 4096, rng);
        add(out, "RC_SEND_ONLY/4096", j);
        RefPacket u = base_packet(false, false, 0x64, 0x11, 0x12, 7);  // UD, pad 1
        fill_payload(u, 7, rng);
        fill_exts(u, rng);
        add(out, "UD_SEND_ONLY/7byte", u);
    }

    // 3. A CM MAD on QP1 as rping sends it: UD SEND_ONLY, 256-byte MAD,
    //    Q_Key 0x80010000, 322-byte frame.
    {
        RefPacket s = base_packet(false, false, 0x64, 1, 1, 0x123);
        s.sport = ref::ref_sport(1, 1);
        s.qkey = 0x80010000;
        s.src_qp = 1;
        fill_payload(s, 256, rng);
        add(out, "UD_SEND_ONLY/cm_mad_qp1", s);
    }

    // 4. AETH syndromes: ACK with credits, RNR NAK, each NAK code; and a NAK
    //    on IPv6 with a VLAN tag.
    {
        const uint8_t syndromes[] = {0x00, 0x05, 0x1f, 0x20, 0x2e, 0x3f,
                                     0x60, 0x61, 0x62, 0x63, 0x64};
        uint32_t i = 0;
        for (uint8_t syn : syndromes) {
            RefPacket s = base_packet(i & 1, i & 2, 0x11, 0x20, 0x21, 0x100 + i);
            s.syndrome = syn;
            s.msn = 0xfffff0 + i;
            char name[64];
            std::snprintf(name, sizeof name, "RC_ACKNOWLEDGE/syndrome_%02x", syn);
            add(out, name, s);
            ++i;
        }
    }

    // 5. BTH edge values: SE, MigReq, FECN/BECN, a non-default P_Key, PSN and
    //    QPN at their maximum, PSN 0.
    {
        RefPacket s = base_packet(false, true, 0x05, 0xffffff, 0xffffff, 0xffffff);
        s.se = true;
        s.mig = true;
        s.fecn = true;
        s.becn = true;
        s.pkey = 0x8001;
        s.ack_req = true;
        s.imm = 0x01020304;
        fill_payload(s, 33, rng);
        add(out, "RC_SEND_ONLY_WITH_IMMEDIATE/bth_edges", s);
        RefPacket z = base_packet(true, false, 0x02, 0xabcdef, 0x123456, 0);
        fill_payload(z, 18, rng);
        z.pkey = 0x7fff;
        add(out, "RC_SEND_LAST/psn0", z);
    }

    // 6. Reserved bits set (receivers must ignore them; the codec keeps them).
    {
        RefPacket s = base_packet(false, false, 0x65, 0x30, 0x31, 0x42);
        s.resv6 = 0x15;
        s.resv7 = 0x2a;
        fill_payload(s, 10, rng);
        fill_exts(s, rng);
        s.resv8 = 0x5c;
        add(out, "UD_SEND_ONLY_WITH_IMMEDIATE/reserved_bits", s);
    }

    // 7. Fields the ICRC masks, set to non-default values: TOS (DSCP 26, ECN
    //    ECT(0)) and TTL on IPv4; traffic class, flow label and hop limit on
    //    IPv6 (with the flow label giving the UDP source port).
    {
        RefPacket s = base_packet(false, false, 0x0a, 0x40, 0x41, 0x77);
        s.tos = 0x6a;
        s.ttl = 3;
        s.ip_id = 0xbeef;
        fill_payload(s, 100, rng);
        fill_exts(s, rng);
        add(out, "RC_RDMA_WRITE_ONLY/ipv4_tos_ttl", s);
        RefPacket v = base_packet(true, true, 0x0a, 0x40, 0x41, 0x78);
        v.tclass = 0xb8;
        v.flow = 0xabcde;
        v.hop = 17;
        v.sport = ref::ref_sport(0x40, 0x41, v.flow);
        fill_payload(v, 100, rng);
        fill_exts(v, rng);
        add(out, "RC_RDMA_WRITE_ONLY/ipv6_tclass_flow_hop", v);
    }

    // 8. An IPv4 header with options (IHL 6: NOP, NOP, NOP, EOL).
    {
        RefPacket s = base_packet(false, false, 0x04, 0x11, 0x11, 0x99);
        s.ip4_options = {0x01, 0x01, 0x01, 0x00};
        s.ack_req = true;
        fill_payload(s, 12, rng);
        add(out, "RC_SEND_ONLY/ipv4_options", s);
    }

    // 9. IPv4 without DF (permitted, not a fragment).
    {
        RefPacket s = base_packet(false, false, 0x11, 0x11, 0x11, 0x9a);
        s.frag = 0x0000;
        s.syndrome = 0x1f;
        add(out, "RC_ACKNOWLEDGE/ipv4_no_df", s);
    }

    // 10. Corrupted ICRCs: one per IP version and VLAN combination, on
    //     various opcodes.
    {
        const uint8_t ops[] = {0x04, 0x11, 0x10, 0x64, 0x13, 0x2a};
        int i = 0;
        for (uint8_t opc : ops) {
            RefPacket s = base_packet(i & 1, i & 2, opc, 0x11, 0x11, 0x1000 + static_cast<uint32_t>(i));
            const ref::RefOpcode* ro = ref::ref_opcode(opc);
            fill_payload(s, ro->payload ? 20 + static_cast<size_t>(i) : 0, rng);
            fill_exts(s, rng);
            s.corrupt_icrc = true;
            char name[80];
            std::snprintf(name, sizeof name, "%s/bad_icrc/%s%s", ro->name, (i & 1) ? "ipv6" : "ipv4",
                          (i & 2) ? "/vlan" : "");
            add(out, name, s);
            ++i;
        }
    }
    return out;
}

}  // namespace

const std::vector<ref::RefVector>& ref::packet_core_ref_vectors() {
    static const std::vector<RefVector> v = make_vectors();
    return v;
}

const std::vector<FrameVector>& packet_core_vectors() {
    static const std::vector<FrameVector> v = [] {
        std::vector<FrameVector> out;
        for (const RefVector& r : ref::packet_core_ref_vectors()) {
            FrameVector f;
            f.name = r.name;
            f.frame = r.built.bytes;
            f.icrc_valid = !r.spec.corrupt_icrc;
            out.push_back(std::move(f));
        }
        return out;
    }();
    return v;
}

}  // namespace simnic::tb
