// `simnic synth FILE`: write a capture of a short, protocol-correct RC, UC
// and UD conversation built by the packet core's encoder. It exists so that
// the packet core can be shown and checked (by simnic pcap, tshark and the
// RTL ICRC engine) before any device runs.
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "commands.h"
#include "simnic/roce/pcap_io.h"
#include "simnic/roce/rules.h"

namespace simnic::cli {
namespace {

using namespace simnic::roce;

struct SynthArgs {
    std::string file;
    int mtu = 1024;
    bool ipv6 = false;
    int vlan = -1;
    unsigned corrupt_every = 0;
};

struct Endpoint {
    MacAddr mac;
    uint32_t ip4;
    Ipv6Addr ip6;
    uint32_t qpn;
    uint32_t psn;  // next PSN this side sends as requester
};

class Conversation {
public:
    Conversation(const SynthArgs& a, PcapWriter& w) : args_(a), w_(w) {
        a_ = {{0x02, 0x00, 0x00, 0x00, 0x00, 0x01}, 0xc0000201, {}, 0x11, 100, };
        b_ = {{0x02, 0x00, 0x00, 0x00, 0x00, 0x02}, 0xc0000202, {}, 0x12, 5000, };
        // IPv4-mapped addresses keep the two address families comparable.
        for (Endpoint* e : {&a_, &b_}) {
            e->ip6 = {0xfd, 0x00, 0x51, 0x4d, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
            e->ip6[15] = static_cast<uint8_t>(e->ip4 & 0xff);
        }
    }

    // A message of `len` bytes from `src` to `dst`, segmented at the path MTU,
    // using the FIRST/MIDDLE/LAST/ONLY opcodes of family `first` (the FIRST
    // opcode of SEND or RDMA WRITE, RC or UC). Returns the last PSN used.
    uint32_t message(Endpoint& src, const Endpoint& dst, uint8_t first, uint32_t len, bool imm,
                     uint64_t va = 0, uint32_t rkey = 0) {
        const uint32_t mtu = static_cast<uint32_t>(args_.mtu);
        const uint32_t npkts = len == 0 ? 1 : (len + mtu - 1) / mtu;
        uint32_t psn = 0;
        for (uint32_t i = 0; i < npkts; ++i) {
            const bool last = i + 1 == npkts;
            uint8_t opc;
            if (npkts == 1) opc = static_cast<uint8_t>(first + 4 + (imm ? 1 : 0));  // ONLY
            else if (i == 0) opc = first;
            else if (!last) opc = static_cast<uint8_t>(first + 1);
            else opc = static_cast<uint8_t>(first + 2 + (imm ? 1 : 0));
            Packet p = base(src, dst);
            p.hdr.bth.opcode = opc;
            p.hdr.bth.ack_req = last && opcode_transport(opc) == Transport::RC;
            p.hdr.bth.psn = psn = src.psn;
            src.psn = psn_add(src.psn, 1);
            p.hdr.reth = {va, rkey, len};
            p.hdr.imm = 0xc0ffee00 + i;
            const uint32_t chunk = last ? len - i * mtu : mtu;
            emit(p, chunk);
        }
        return psn;
    }

    void ack(const Endpoint& src, const Endpoint& dst, uint32_t psn, uint8_t syndrome) {
        Packet p = base(src, dst);
        p.hdr.bth.opcode = op::RC_ACKNOWLEDGE;
        p.hdr.bth.psn = psn;
        p.hdr.aeth = {syndrome, ++msn_};
        emit(p, 0);
    }

    void read(Endpoint& req, Endpoint& resp, uint32_t len) {
        Packet p = base(req, resp);
        p.hdr.bth.opcode = op::RC_RDMA_READ_REQUEST;
        p.hdr.bth.ack_req = true;
        p.hdr.bth.psn = req.psn;
        p.hdr.reth = {0x7f0000001000ull, 0x1234, len};
        emit(p, 0);
        const uint32_t mtu = static_cast<uint32_t>(args_.mtu);
        const uint32_t npkts = (len + mtu - 1) / mtu;
        ++msn_;
        for (uint32_t i = 0; i < npkts; ++i) {
            Packet r = base(resp, req);
            const bool last = i + 1 == npkts;
            r.hdr.bth.opcode = npkts == 1 ? op::RC_RDMA_READ_RESPONSE_ONLY
                               : i == 0   ? op::RC_RDMA_READ_RESPONSE_FIRST
                               : last     ? op::RC_RDMA_READ_RESPONSE_LAST
                                          : op::RC_RDMA_READ_RESPONSE_MIDDLE;
            r.hdr.bth.psn = psn_add(req.psn, i);  // responses reuse the request's PSN range
            r.hdr.aeth = {make_syndrome(AethType::Ack, 31), msn_};
            emit(r, last ? len - i * mtu : mtu);
        }
        req.psn = psn_add(req.psn, npkts);
    }

    void atomic(Endpoint& req, Endpoint& resp, uint8_t opc, uint64_t swap_add, uint64_t cmp, uint64_t orig) {
        Packet p = base(req, resp);
        p.hdr.bth.opcode = opc;
        p.hdr.bth.ack_req = true;
        p.hdr.bth.psn = req.psn;
        p.hdr.atomic = {0x7f0000002000ull, 0x5678, swap_add, cmp};
        emit(p, 0);
        Packet r = base(resp, req);
        r.hdr.bth.opcode = op::RC_ATOMIC_ACKNOWLEDGE;
        r.hdr.bth.psn = req.psn;
        r.hdr.aeth = {make_syndrome(AethType::Ack, 31), ++msn_};
        r.hdr.atomic_ack.orig = orig;
        emit(r, 0);
        req.psn = psn_add(req.psn, 1);
    }

    void ud_send(const Endpoint& src, const Endpoint& dst, uint32_t len, bool imm) {
        Packet p = base(src, dst);
        p.hdr.bth.opcode = imm ? op::UD_SEND_ONLY_WITH_IMMEDIATE : op::UD_SEND_ONLY;
        p.hdr.bth.psn = 77;
        p.hdr.deth = {0x11111111, 0, src.qpn};
        p.hdr.imm = 0x5eed;
        emit(p, len);
    }

    Endpoint& a() { return a_; }
    Endpoint& b() { return b_; }
    unsigned written() const { return written_; }

private:
    Packet base(const Endpoint& src, const Endpoint& dst) {
        Packet p;
        p.eth.src = src.mac;
        p.eth.dst = dst.mac;
        if (args_.vlan >= 0) {
            p.eth.has_vlan = true;
            p.eth.vlan_tci = static_cast<uint16_t>(args_.vlan);
        }
        if (args_.ipv6) {
            p.ip_version = IpVersion::V6;
            p.ip6.src = src.ip6;
            p.ip6.dst = dst.ip6;
        } else {
            p.ip4.src = src.ip4;
            p.ip4.dst = dst.ip4;
        }
        p.udp.sport = roce_udp_sport(src.qpn, dst.qpn);
        p.hdr.bth.dqpn = dst.qpn;
        return p;
    }

    void emit(Packet& p, uint32_t payload_len) {
        payload_.resize(payload_len);
        for (uint32_t i = 0; i < payload_len; ++i) payload_[i] = static_cast<uint8_t>(i * 7 + written_);
        p.payload = payload_.data();
        p.payload_len = payload_len;
        std::vector<uint8_t> frame;
        if (!encode_frame(p, frame)) {
            std::fprintf(stderr, "simnic synth: internal error: cannot encode opcode 0x%02x\n", p.hdr.bth.opcode);
            return;
        }
        ++written_;
        if (args_.corrupt_every && written_ % args_.corrupt_every == 0) frame[frame.size() - kIcrcBytes - 1] ^= 0x01;  // last covered byte
        w_.write(frame, ts_us_);
        ts_us_ += 10;
    }

    const SynthArgs& args_;
    PcapWriter& w_;
    Endpoint a_{}, b_{};
    uint32_t msn_ = 0;
    uint64_t ts_us_ = 1700000000ull * 1000000ull;
    unsigned written_ = 0;
    std::vector<uint8_t> payload_;
};

int run_synth(const SynthArgs& a) {
    std::string err;
    auto w = PcapWriter::open(a.file, err);
    if (!w) {
        std::fprintf(stderr, "simnic synth: %s: %s\n", a.file.c_str(), err.c_str());
        return 2;
    }
    Conversation c(a, *w);
    const uint8_t syn_ack = make_syndrome(AethType::Ack, 31);
    // RC SEND of 3000 bytes, like ibv_rc_pingpong -s 3000, and its ACK.
    uint32_t last = c.message(c.a(), c.b(), op::RC_SEND_FIRST, 3000, false);
    c.ack(c.b(), c.a(), last, syn_ack);
    // A 2-byte SEND with immediate.
    last = c.message(c.a(), c.b(), op::RC_SEND_FIRST, 2, true);
    c.ack(c.b(), c.a(), last, syn_ack);
    // RDMA WRITE with immediate over several packets.
    last = c.message(c.a(), c.b(), op::RC_RDMA_WRITE_FIRST, 8192, true, 0x7f0000001000ull, 0x1234);
    c.ack(c.b(), c.a(), last, syn_ack);
    // A WRITE that the responder NAKs for a bad rkey.
    last = c.message(c.a(), c.b(), op::RC_RDMA_WRITE_FIRST, 64, false, 0x7f0000009000ull, 0xdead);
    c.ack(c.b(), c.a(), last, make_syndrome(AethType::Nak, static_cast<uint8_t>(NakCode::RemoteAccessError)));
    // RDMA READ of 8 KiB, then both atomics.
    c.read(c.a(), c.b(), 8192);
    c.atomic(c.a(), c.b(), op::RC_COMPARE_SWAP, 2, 1, 1);
    c.atomic(c.a(), c.b(), op::RC_FETCH_ADD, 1, 0, 41);
    // A SEND that meets no posted receive: RNR NAK, then the retry.
    const uint32_t rnr_psn = c.a().psn;
    last = c.message(c.a(), c.b(), op::RC_SEND_FIRST, 4, false);
    c.ack(c.b(), c.a(), last, make_syndrome(AethType::RnrNak, 12));
    c.a().psn = rnr_psn;
    last = c.message(c.a(), c.b(), op::RC_SEND_FIRST, 4, false);
    c.ack(c.b(), c.a(), last, syn_ack);
    // UC and UD.
    c.message(c.b(), c.a(), op::UC_SEND_FIRST, 2500, false);
    c.message(c.b(), c.a(), op::UC_RDMA_WRITE_FIRST, 100, true, 0x7f0000003000ull, 0x4321);
    c.ud_send(c.a(), c.b(), 1024, false);
    c.ud_send(c.b(), c.a(), 5, true);
    w->flush();
    std::printf("wrote %u packets to %s\n", c.written(), a.file.c_str());
    return 0;
}

}  // namespace

Runner add_synth_command(CLI::App& app) {
    auto args = std::make_shared<SynthArgs>();
    CLI::App* sub = app.add_subcommand(
        "synth", "Write a capture of a synthetic RC/UC/UD conversation built by the packet core");
    sub->add_option("file", args->file, "output pcap file")->required();
    sub->add_option("--mtu", args->mtu, "path MTU in bytes")->check(CLI::IsMember({256, 512, 1024, 2048, 4096}));
    sub->add_flag("--ipv6", args->ipv6, "use IPv6 instead of IPv4");
    sub->add_option("--vlan", args->vlan, "add an 802.1Q tag with this VLAN id")->check(CLI::Range(0, 4095));
    sub->add_option("--corrupt-every", args->corrupt_every, "flip one bit in every Nth packet (0: never)");
    return [args] { return run_synth(*args); };
}

}  // namespace simnic::cli
