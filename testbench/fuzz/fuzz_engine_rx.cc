// libFuzzer target for a soft engine's receive path: RoCE v2 frames into a
// live device (engine_world.h: the firmware, the engine driven one pass at
// a time on a port this target plays) through the calls the real ports make
// (PortSink::rx_frame, as the wire port hands whole Ethernet frames, and
// rx_ip, as the UDP port hands IP packets). The device holds QPs of every
// type in several states (RC in RTS with requests outstanding, RTR, on the
// SRQ, in INIT, ERR and RESET; UC in RTS and RTR; UD in RTS, one on the SRQ),
// receive WQEs posted, and MRs of several access mixes.
//
// The input is a sequence of steps: frames built from the input (any
// opcode, aimed at one of the QPs or any QPN, the PSN near what the QP
// expects, keys and addresses of the MRs or anything, every extension
// header's fields, IPv4 or IPv6, VLAN), then patched byte by byte and, if
// the input says so, given a valid ICRC again, so that malformed frames get
// past the ICRC check; raw frames; the QPs' timers fired; receive WQEs
// posted; QPs moved to ERR or destroyed while frames for them arrive.
//
// Properties checked on every input:
//  - nothing crashes, overflows or hits UB (ASan, UBSan);
//  - the device reads and writes host memory only inside what was
//    registered to it, with the rights registered (dma_guard.cc: every
//    process_vm_* checked; MR B is never written, C and E never read, R and
//    the deregistered D never touched, the rings only read, the CQ rings
//    read and written) and the canary between the regions is intact;
//  - the work is bounded: the engine goes idle within a bounded number of
//    passes after each step, and sends a bounded number of frames;
//  - the counters are consistent: every frame that reached the datapath is
//    counted once, as received, as a bad ICRC or as a bad header;
//  - every QPC holds a state of the QP state machine, and every QP the
//    engine runs has a live QPC of its number.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "engine_input.h"
#include "engine_world.h"
#include "packet_gen.h"
#include "simnic/roce/icrc.h"
#include "simnic/roce/packet.h"
#ifdef SIMNIC_FUZZ_MODEL
#include "simnic/model/pipeline.h"
#endif

using namespace simnic;
using namespace simnic::fuzz;
using namespace simnic::fuzz::engine_input;

namespace {

void fail(const char* what) {
    std::fprintf(stderr, "fuzz_engine_rx: %s\n", what);
    std::abort();
}

// The QPs every input starts with (engine_input.h names them by slot).
void populate(EngineWorld& w) {
    using T = hw::QpType;
    using S = hw::QpState;
    QpInfo& rc = w.add_qp(T::Rc, S::Rts);
    // Requests that stay outstanding: what ACKs, NAKs, READ responses and
    // atomic ACKs from the wire meet.
    w.post_send(rc, hw::WrOpcode::Send, 64);
    w.post_send(rc, hw::WrOpcode::RdmaRead, 512);
    w.post_send(rc, hw::WrOpcode::AtomicCmpAndSwp, 8);
    w.post_send(rc, hw::WrOpcode::Send, 2000);  // two packets at MTU 1024
    w.post_send(rc, hw::WrOpcode::AtomicFetchAndAdd, 8);
    w.add_qp(T::Rc, S::Rts);
    w.add_qp(T::Rc, S::Rtr);
    w.add_qp(T::Rc, S::Rts, true);
    QpInfo& uc = w.add_qp(T::Uc, S::Rts);
    w.post_send(uc, hw::WrOpcode::RdmaWrite, 100);
    w.add_qp(T::Uc, S::Rtr);
    QpInfo& ud = w.add_qp(T::Ud, S::Rts);
    w.post_send(ud, hw::WrOpcode::Send, 32);
    w.add_qp(T::Ud, S::Rts, true);
    w.add_qp(T::Rc, S::Init);
    w.add_qp(T::Rc, S::Err);
    w.add_qp(T::Uc, S::Reset);
    w.add_qp(T::Rc, S::Sqd);
}

const Mr& mr_of(EngineWorld& w, std::uint8_t sel) {
    const Mr* m[] = {&w.a, &w.b, &w.c, &w.e, &w.r, &w.d};
    return *m[sel % 6];
}

std::uint32_t key_of(EngineWorld& w, std::uint8_t sel, std::uint32_t raw) {
    if (sel % 8 == 6) return raw;
    if (sel % 8 == 7) return 0;
    return mr_of(w, sel % 8).key;
}

// A frame from a Frame step (engine_input.h).
std::vector<std::uint8_t> build(EngineWorld& w, Reader& in, bool& as_ip) {
    const std::uint8_t slot = in.u8();
    const std::uint8_t opsel = in.u8();
    const std::uint8_t psn_mode = in.u8();
    const auto psn_delta = static_cast<std::int8_t>(in.u8());
    const std::uint8_t f1 = in.u8(), f2 = in.u8();
    const std::uint16_t len = in.u16();
    const std::uint8_t keysel = in.u8();
    const std::uint16_t va_off = in.u16();
    const std::uint32_t dma_len = in.u32();
    const std::uint8_t syndrome = in.u8();
    const std::uint32_t x = in.u32();  // MSN, immediate, Q_Key, raw key, raw PSN or QPN
    const std::uint64_t swap = in.u64(), compare = in.u64();

    // Whom it is for.
    const QpInfo* q = nullptr;
    std::uint32_t dqpn = 0;
    if (slot == kSlotRawQpn) dqpn = x & 0xFFFFFF;
    else if (slot == kSlotGsi) dqpn = 1;
    else {
        q = &w.qps[slot % w.qps.size()];
        dqpn = q->qpn;
    }
    // The opcode: the byte if the table knows it, else one that it knows;
    // moved to the QP's transport if asked.
    const auto& ops = tb::PacketGen::opcodes();
    std::uint8_t opcode = roce::opcode_info(opsel).valid() ? opsel : ops[opsel % ops.size()];
    if ((f2 & kF2SameTransport) && q) {
        const std::uint8_t t = q->type == hw::QpType::Rc ? 0x00 : q->type == hw::QpType::Uc ? 0x20 : 0x60;
        const std::uint8_t o = static_cast<std::uint8_t>(t | (opcode & 0x1f));
        if (roce::opcode_info(o).valid()) opcode = o;
    }
    const roce::OpcodeInfo& info = roce::opcode_info(opcode);
    // The PSN: near what the QP's responder expects, or its requester's.
    std::uint32_t psn = x & 0xFFFFFF;
    if (q && psn_mode % 4 != 3) {
        const std::uint32_t base = psn_mode % 4 == 0   ? static_cast<std::uint32_t>(w.qpc_get(q->qpn, hw::qpc::rq_psn))
                                   : psn_mode % 4 == 1 ? static_cast<std::uint32_t>(w.qpc_get(q->qpn, hw::qpc::last_acked_psn)) + 1
                                                       : q->sq_psn;
        psn = (base + static_cast<std::uint32_t>(static_cast<std::int32_t>(psn_delta))) & 0xFFFFFF;
    }

    roce::Packet p;
    std::memcpy(p.eth.dst.data(), kLocalMac.data(), 6);
    std::memcpy(p.eth.src.data(), kPeerMac.data(), 6);
    p.eth.has_vlan = f1 & kF1Vlan;
    p.eth.vlan_tci = static_cast<std::uint16_t>(x);
    if (f1 & kF1Ipv6) {
        p.ip_version = roce::IpVersion::V6;
        p.eth.ethertype = roce::kEtherTypeIpv6;
        const fw::Gid s = v6_gid((f1 & kF1Foreign) ? 9 : 2), d = v6_gid(1);
        std::memcpy(p.ip6.src.data(), s.data(), 16);
        std::memcpy(p.ip6.dst.data(), d.data(), 16);
        p.ip6.flow_label = x & 0xFFFFF;
    } else {
        p.ip4.src = (f1 & kF1Foreign) ? 0xc0a80909u : 0x0a000002u;
        p.ip4.dst = 0x0a000001u;
        p.ip4.id = static_cast<std::uint16_t>(x >> 8);
    }
    p.udp.sport = static_cast<std::uint16_t>(0xC000 | (dqpn & 0x3FFF));
    roce::Bth& b = p.hdr.bth;
    b.opcode = opcode;
    b.se = f1 & kF1Se;
    b.ack_req = f1 & kF1AckReq;
    b.mig = f2 & kF2Mig;
    b.pkey = (f2 & kF2OtherPkey) ? static_cast<std::uint16_t>(x >> 16) : 0xFFFF;
    b.tver = (f2 & kF2Tver) ? 1 : 0;
    b.fecn = f2 & kF2Fecn;
    b.dqpn = dqpn;
    b.psn = psn;
    const Mr& m = mr_of(w, keysel >> 3);
    const std::uint64_t va = reinterpret_cast<std::uint64_t>(m.p) + va_off - 64;
    p.hdr.reth.va = (f2 & kF2RawVa) ? swap : va;
    p.hdr.reth.rkey = key_of(w, keysel, x);
    p.hdr.reth.dma_len = (f2 & kF2RawLen) ? dma_len : dma_len % 8192;
    p.hdr.atomic.va = (f2 & kF2RawVa) ? swap : va & ~static_cast<std::uint64_t>((f2 & kF2Unaligned) ? 0 : 7);
    p.hdr.atomic.rkey = p.hdr.reth.rkey;
    p.hdr.atomic.swap_add = swap;
    p.hdr.atomic.compare = compare;
    p.hdr.aeth.syndrome = syndrome;
    p.hdr.aeth.msn = x & 0xFFFFFF;
    p.hdr.atomic_ack.orig = compare;
    p.hdr.deth.qkey = (f2 & kF2RawQkey) ? x : 0x11111111;
    p.hdr.deth.src_qp = 0x100 + (slot & 0xf);
    p.hdr.imm = x;
    p.hdr.ieth_rkey = key_of(w, keysel, x);
    // The payload, if the opcode may carry one of that length.
    std::size_t n = len % 4200;
    if (!tb::PacketGen::payload_allowed(opcode, n)) n = tb::PacketGen::payload_allowed(opcode, n & ~3u) ? n & ~3u : 0;
    if (!tb::PacketGen::payload_allowed(opcode, n)) n = 256;
    std::vector<std::uint8_t> payload(n, static_cast<std::uint8_t>(opcode));
    p.payload = payload.data();
    p.payload_len = tb::PacketGen::payload_allowed(opcode, n) ? n : 0;
    (void)info;
    std::vector<std::uint8_t> out;
    if (!roce::encode_frame(p, out)) out.assign(64, 0);  // refused: a frame of zeros
    // Byte patches, then perhaps a valid ICRC (and IPv4 checksum) again.
    const std::uint8_t patches = in.u8() % 8;
    for (std::uint8_t i = 0; i < patches; ++i) {
        const std::uint16_t off = in.u16();
        const std::uint8_t v = in.u8();
        if (!out.empty()) out[off % out.size()] = v;
    }
    if ((f1 & kF1FixIcrc) && out.size() > p.l4_off + roce::kUdpHdrBytes + roce::kIcrcBytes) {
        if (p.ip_version == roce::IpVersion::V4) {
            std::uint8_t* ip = out.data() + p.l3_off;
            ip[10] = ip[11] = 0;
            const std::uint16_t c = roce::ipv4_checksum(ip, roce::kIpv4HdrBytes);
            ip[10] = static_cast<std::uint8_t>(c >> 8);
            ip[11] = static_cast<std::uint8_t>(c);
        }
        const std::uint32_t icrc = roce::compute_icrc(out.data(), out.size(), p.l3_off, p.l4_off, p.ip_version);
        for (int k = 0; k < 4; ++k) out[out.size() - 4 + k] = static_cast<std::uint8_t>(icrc >> (8 * k));
    }
    // Shortened or lengthened after the fact.
    if (f2 & kF2Truncate) out.resize(out.size() - std::min<std::size_t>(out.size(), syndrome % 64));
    as_ip = f1 & kF1AsIp;
    return out;
}

void check_qps(EngineWorld& w) {
    for (const QpInfo& q : w.qps) {
        if (!q.qpn) continue;
        const auto st = w.qpc_get(q.qpn, hw::qpc::state);
        if (st > static_cast<std::uint64_t>(hw::QpState::Err)) fail("a QPC in no state");
    }
    w.engine->exclusive([&] {
        for (const auto& [qpn, eq] : w.engine->impl().qps) {
            const std::uint8_t* e = w.store->entry(hw::Table::Qpc, qpn);
            if (!e || hw::get(e, hw::qpc::kSize, hw::qpc::qpn) != qpn) fail("the engine runs a QP whose QPC is free");
        }
    });
}

// Every CQE the device wrote names one of the QPs, a status of the verbs,
// a WQE that was posted (its wr_id) and, for a SEND received, no more bytes
// than the receive WQE had room for.
void check_cqes(EngineWorld& w) {
    auto check = [&](const std::uint8_t* ring, std::uint32_t entries) {
        for (std::uint32_t i = 0; i < entries; ++i) {
            const hw::Cqe c = hw::decode_cqe(ring + std::size_t{i} * hw::kCqeSize);
            if (c.qp_num == 0) continue;  // never written
            bool ours = false;
            for (const QpInfo& q : w.qps) ours |= q.qpn == c.qp_num;
            if (!ours) fail("a CQE for a QP the device does not have");
            if (static_cast<std::uint32_t>(c.status) > static_cast<std::uint32_t>(hw::WcStatus::GeneralErr))
                fail("a CQE of no status");
            const std::uint64_t tag = c.wr_id >> 32;
            if (c.is_send ? tag != 0x55 : tag != 0x52 && tag != 0x53) fail("a CQE for a WQE never posted");
            // (A WRITE with immediate reports the WRITE's length: it placed
            // nothing in the receive WQE's buffers.)
            if (!c.is_send && c.status == hw::WcStatus::Success && c.opcode == hw::WcOpcode::Recv &&
                c.byte_len > (tag == 0x52 ? 256u + 1024u : 128u))
                fail("a receive CQE of more bytes than its WQE held");
        }
    };
    check(w.cq_ring, 1u << EngineWorld::kLogCq);
    check(w.tiny_ring, 2);
}

void run(EngineWorld& w, Reader& in) {
    FakePort& port = *w.port;
    // SIMNIC_FUZZ_TRACE set: what each step did, for reading an input.
    const bool trace = std::getenv("SIMNIC_FUZZ_TRACE") != nullptr;
    const DmaGuard& g = DmaGuard::get();
    (void)g;
    int steps = 0;
    while (!in.done() && steps++ < kMaxSteps) {
        const std::size_t sent0 = port.sent_total;
        const auto op = Op(in.u8() % kOpCount);
        switch (op) {
            case Frame: {
                bool as_ip = false;
                std::vector<std::uint8_t> f = build(w, in, as_ip);
                port.arrive(std::move(f), as_ip);
                break;
            }
            case Raw: {
                const std::uint8_t flags = in.u8();
                std::vector<std::uint8_t> f(in.u16() % 2048);
                for (std::uint8_t& x : f) x = in.u8();
                if (flags & 1) {
                    // Given a valid ICRC if it decodes that far.
                    roce::Packet p;
                    roce::DecodeOptions o;
                    o.check_icrc = false;
                    if (roce::decode_frame(f.data(), f.size(), p, o).ok()) {
                        const std::uint32_t icrc =
                            roce::compute_icrc(f.data(), f.size(), p.l3_off, p.l4_off, p.ip_version);
                        for (int k = 0; k < 4; ++k) f[f.size() - 4 + k] = static_cast<std::uint8_t>(icrc >> (8 * k));
                    }
                }
                port.arrive(std::move(f), (flags & 2) != 0);
                break;
            }
            case Timers:
                // Every timer due: retransmissions, RNR waits, retries running out.
                w.poll(base::mono_ns() + 100'000'000'000ull);
                break;
            case PostRecv: {
                const std::uint8_t s = in.u8();
                if (s == 0xFF) w.post_srq_recv();
                else w.post_recv(w.qps[s % w.qps.size()]);
                break;
            }
            case ToErr: {
                QpInfo& q = w.qps[in.u8() % w.qps.size()];
                if (!q.destroyed) w.modify(q.qpn, hw::qp_attr_mask::kState, hw::QpState::Err);
                break;
            }
            case Destroy: w.destroy_qp(w.qps[in.u8() % w.qps.size()]); break;
            case Send: {
                QpInfo& q = w.qps[in.u8() % w.qps.size()];
                const std::uint8_t what = in.u8();
                const hw::WrOpcode ops[] = {hw::WrOpcode::Send, hw::WrOpcode::RdmaWrite, hw::WrOpcode::RdmaRead,
                                            hw::WrOpcode::AtomicCmpAndSwp};
                if (!q.destroyed && q.sq_pi - static_cast<std::uint32_t>(w.qpc_get(q.qpn, hw::qpc::sq_ci)) < 8)
                    w.post_send(q, ops[what % 4], 8 + what);
                break;
            }
            case kOpCount: break;
        }
        if (!w.settle()) fail("the engine never goes idle");
        if (port.sent_total - sent0 > kMaxSentPerStep) fail("one step made the engine send too many frames");
        check_qps(w);
        if (trace) {
            std::fprintf(stderr, "step %d: rx %llu icrc %llu bad_hdr %llu no_qp %llu; sent",
                         int(op), static_cast<unsigned long long>(w.stat(hw::stats_block::rx_packets)),
                         static_cast<unsigned long long>(w.stat(hw::stats_block::icrc_errors)),
                         static_cast<unsigned long long>(w.stat(hw::stats_block::rx_drops_bad_hdr)),
                         static_cast<unsigned long long>(w.stat(hw::stats_block::rx_drops_no_qp)));
            for (std::size_t i = sent0; i < port.sent_total && i < port.sent.size(); ++i) {
                roce::Packet p;
                if (roce::decode_frame(port.sent[i].data(), port.sent[i].size(), p).ok())
                    std::fprintf(stderr, " %s(qp %#x psn %#x syn %#x)", p.opinfo().name, p.hdr.bth.dqpn, p.hdr.bth.psn,
                                 p.opinfo().has(roce::kHasAeth) ? p.hdr.aeth.syndrome : 0);
            }
            std::fprintf(stderr, "; cqes %llu\n", static_cast<unsigned long long>(w.qpc_get(w.qps[1].qpn, hw::qpc::rq_ci)));
        }
    }
    if (!w.settle()) fail("the engine never goes idle");
    // Every frame that reached the datapath is counted once.
    const std::uint64_t counted = w.stat(hw::stats_block::rx_packets) + w.stat(hw::stats_block::icrc_errors) +
                                  w.stat(hw::stats_block::rx_drops_bad_hdr);
    if (counted != port.delivered) {
        std::fprintf(stderr, "fuzz_engine_rx: %llu counted, %zu delivered\n", static_cast<unsigned long long>(counted),
                     port.delivered);
        fail("the receive counters disagree with what arrived");
    }
    check_cqes(w);
    if (auto at = Arena::get().canary_broken()) {
        std::fprintf(stderr, "fuzz_engine_rx: the gap at arena offset %zu\n", *at);
        fail("host memory between the registered regions was written");
    }
    for (const Mr* m : {&w.r, &w.d})
        if (!Arena::all(m->p, m->len, 0)) fail("an MR no request may write (R, or the deregistered D) was written");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    EngineWorld w;
#ifdef SIMNIC_FUZZ_MODEL
    // A model device: the same datapath inside the cycle model's pipeline,
    // frames entering at its MAC RX (a SystemC context of its own per input).
    const bool opened = w.open(0, model::Pipeline::factory("fz", model::ModelConfig{}));
    if (opened && !w.engine->impl().pipe) fail("a model device without its pipeline");
#else
    const bool opened = w.open();
#endif
    if (!opened) {
        std::fprintf(stderr, "fuzz_engine_rx: %s\n", w.error.c_str());
        fail("cannot set up the device");
    }
    populate(w);
    if (!w.error.empty()) {
        std::fprintf(stderr, "fuzz_engine_rx: %s\n", w.error.c_str());
        fail("cannot set up the QPs");
    }
    if (!w.settle()) fail("the engine never goes idle after setup");
    Reader in(data, size);
    run(w, in);
    return 0;
}
