// simnic-inject: the peer of the differential scenarios (issue 10, section
// 4). It joins a wire of frames (`simnic wire`, the rig's wire) as a NIC of
// its own, answers ARP for its address, builds the frames a scenario asks
// for with the packet core (so that ICRCs, lengths and checksums are right,
// or wrong exactly where the scenario says), and reports every RoCE frame
// sent to it, decoded field by field.
//
//   simnic-inject --wire 127.0.0.1:PORT --mac 02:00:00:00:00:32 --ip 10.0.0.50
//
// The runner drives it with one JSON object per line on stdin and reads one
// JSON object per line on stdout. Requests ("op"):
//   send     {"pkt": {...}, "mutate": {...}}  build and send one frame
//   recv     {"ms": T, "max": N}              frames received, waiting up to T
//                                             ms for N of them (all if N is 0)
//   resolve  {"ip": "A.B.C.D", "ms": T}       ARP for a MAC (learnt also from
//                                             the target's own requests)
//   clear    {}                               forget the frames received so far
//   now      {}                               the injector's clock
// Times are nanoseconds on CLOCK_REALTIME since the injector started: a
// frame's arrival is the kernel's receive timestamp (SO_TIMESTAMPNS), a
// send's the moment before sendto() was called.
//
// A packet ("pkt") names headers as the packet core does: "dst_ip", "dst_mac",
// "src_ip", "ip_id", "ttl", "tos", "sport", "dport" and the transport headers
// "bth" {opcode, se, mig, pad, tver, pkey, fecn, becn, resv6, dqpn, ack_req,
// resv7, psn}, "deth" {qkey, src_qp}, "reth" {va, rkey, dma_len}, "atomic"
// {va, rkey, swap_add, compare}, "aeth" {syndrome, msn}, "atomic_ack"
// {orig}, "imm", "ieth"; "payload" is hex, or {"len": N, "fill": "inc" |
// "zero" | "byte:XX"}. The opcode (a name of opcode.h or a number) decides
// which headers are written. "mutate" then breaks the encoded frame on
// purpose: "opcode" (a raw BTH opcode byte, for opcodes the packet core does
// not know; the ICRC is recomputed), "pad" (a BTH pad count other than the
// one the payload needs, ICRC recomputed), "bad_icrc", "truncate" (drop N
// bytes from the end, the IP and UDP lengths left as they were),
// "shorten" (drop N bytes and make the IP and UDP lengths agree) or
// "icrc_headers_as_payload" (the ICRC of a receiver whose opcode table gives
// the opcode no payload offset: the right ICRC, continued over the bytes
// from the BTH to the ICRC once more, as if they were the payload).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <deque>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "simnic/roce/headers.h"
#include "simnic/roce/icrc.h"
#include "simnic/roce/neighbour.h"
#include "simnic/roce/opcode.h"
#include "simnic/roce/packet.h"
#include "simnic/roce/rules.h"

namespace {

using nlohmann::json;
namespace roce = simnic::roce;

struct Error : std::runtime_error {
    using std::runtime_error::runtime_error;
};

uint64_t realtime_ns() {
    timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

std::string mac_str(const roce::MacAddr& m) {
    char b[18];
    std::snprintf(b, sizeof b, "%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4], m[5]);
    return b;
}

roce::MacAddr parse_mac(const std::string& s) {
    roce::MacAddr m{};
    unsigned v[6];
    if (std::sscanf(s.c_str(), "%x:%x:%x:%x:%x:%x", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5]) != 6)
        throw Error("bad MAC " + s);
    for (int i = 0; i < 6; ++i) m[size_t(i)] = uint8_t(v[i]);
    return m;
}

std::string ip_str(uint32_t host_order) {
    in_addr a{htonl(host_order)};
    char b[INET_ADDRSTRLEN];
    inet_ntop(AF_INET, &a, b, sizeof b);
    return b;
}

uint32_t parse_ip(const std::string& s) {
    in_addr a{};
    if (inet_pton(AF_INET, s.c_str(), &a) != 1) throw Error("bad IPv4 address " + s);
    return ntohl(a.s_addr);
}

std::string hex(const uint8_t* p, size_t n) {
    static const char d[] = "0123456789abcdef";
    std::string s(n * 2, '0');
    for (size_t i = 0; i < n; ++i) {
        s[2 * i] = d[p[i] >> 4];
        s[2 * i + 1] = d[p[i] & 15];
    }
    return s;
}

std::vector<uint8_t> unhex(const std::string& s) {
    if (s.size() % 2) throw Error("odd-length hex");
    std::vector<uint8_t> v(s.size() / 2);
    for (size_t i = 0; i < v.size(); ++i) {
        unsigned b;
        if (std::sscanf(s.c_str() + 2 * i, "%2x", &b) != 1) throw Error("bad hex");
        v[i] = uint8_t(b);
    }
    return v;
}

// A number given as a JSON number or as a string ("0x1f", "12").
uint64_t num(const json& j) {
    if (j.is_number_unsigned() || j.is_number_integer()) return j.get<uint64_t>();
    if (j.is_boolean()) return j.get<bool>();
    if (j.is_string()) {
        const std::string s = j.get<std::string>();
        char* end = nullptr;
        errno = 0;
        const uint64_t v = std::strtoull(s.c_str(), &end, 0);
        if (!errno && end != s.c_str() && *end == 0) return v;
    }
    throw Error("not a number: " + j.dump());
}

template <typename T>
void take(const json& o, const char* key, T& field) {
    auto it = o.find(key);
    if (it != o.end()) field = static_cast<T>(num(*it));
}

uint8_t opcode_of(const json& j) {
    if (j.is_string()) {
        const std::string s = j.get<std::string>();
        for (int i = 0; i < 256; ++i) {
            const roce::OpcodeInfo& info = roce::opcode_info(uint8_t(i));
            if (info.valid() && s == info.name) return uint8_t(i);
        }
    }
    return uint8_t(num(j));
}

class Injector {
    struct Frame {
        uint64_t t_ns = 0;  // arrival, ns since the injector started
        std::vector<uint8_t> bytes;
    };

public:
    Injector(uint16_t wire_port, roce::MacAddr mac, uint32_t ip) : mac_(mac), ip_(ip) {
        fd_ = socket(AF_INET, SOCK_DGRAM, 0);
        if (fd_ < 0) throw Error("socket: " + std::string(std::strerror(errno)));
        sockaddr_in me{};
        me.sin_family = AF_INET;
        me.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (bind(fd_, reinterpret_cast<sockaddr*>(&me), sizeof me) != 0)
            throw Error("bind: " + std::string(std::strerror(errno)));
        hub_.sin_family = AF_INET;
        hub_.sin_port = htons(wire_port);
        hub_.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (connect(fd_, reinterpret_cast<sockaddr*>(&hub_), sizeof hub_) != 0)
            throw Error("connect: " + std::string(std::strerror(errno)));
        int on = 1;
        setsockopt(fd_, SOL_SOCKET, SO_TIMESTAMPNS, &on, sizeof on);
        int buf = 4 << 20;
        setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &buf, sizeof buf);
        // A zero-length datagram makes us a member of the hub.
        if (::send(fd_, "", 0, 0) != 0) throw Error("join: " + std::string(std::strerror(errno)));
        t0_ = realtime_ns();
    }

    int fd() const { return fd_; }
    uint64_t now() const { return realtime_ns() - t0_; }

    // Reads every frame waiting on the socket: answers ARP, queues RoCE.
    void drain() {
        for (;;) {
            uint8_t buf[10000];
            char cbuf[256];
            iovec iov{buf, sizeof buf};
            msghdr mh{};
            mh.msg_iov = &iov;
            mh.msg_iovlen = 1;
            mh.msg_control = cbuf;
            mh.msg_controllen = sizeof cbuf;
            const ssize_t n = recvmsg(fd_, &mh, MSG_DONTWAIT);
            if (n < 0) return;
            uint64_t t = realtime_ns();
            for (cmsghdr* c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
                if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_TIMESTAMPNS) {
                    timespec ts;
                    std::memcpy(&ts, CMSG_DATA(c), sizeof ts);
                    t = uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
                }
            }
            on_frame(buf, size_t(n), t - std::min(t, t0_));
        }
    }

    json handle(const json& req) {
        const std::string op = req.value("op", "");
        if (op == "send") return do_send(req);
        if (op == "recv") return do_recv(req);
        if (op == "resolve") return do_resolve(req);
        if (op == "clear") {
            drain();
            json r = {{"ok", true}, {"dropped", frames_.size()}};
            frames_.clear();
            return r;
        }
        if (op == "now") return {{"ok", true}, {"t_ns", now()}};
        if (op == "stats") return {{"ok", true}, {"arp_answered", arp_answered_}, {"other", other_}};
        throw Error("unknown op '" + op + "'");
    }

private:
    void on_frame(const uint8_t* f, size_t len, uint64_t t) {
        if (len < roce::kEthHdrBytes) return;
        roce::MacAddr dst;
        std::memcpy(dst.data(), f, 6);
        if (dst != mac_ && dst != roce::kBroadcastMac) return;
        const uint16_t et = uint16_t(f[12] << 8 | f[13]);
        if (et == roce::kEtherTypeArp) {
            roce::ArpPacket a;
            if (roce::decode_arp(f, len, a) != roce::NeighError::Ok) return;
            neigh_[a.spa] = a.sha;  // whoever asks or answers, we learn
            if (a.op == roce::ArpOp::Request && a.tpa == ip_) {
                roce::ArpPacket r;
                r.eth_dst = a.sha;
                r.eth_src = mac_;
                r.op = roce::ArpOp::Reply;
                r.sha = mac_;
                r.spa = ip_;
                r.tha = a.sha;
                r.tpa = a.spa;
                std::vector<uint8_t> out;
                roce::encode_arp(r, out);
                ::send(fd_, out.data(), out.size(), 0);
                ++arp_answered_;
            }
            return;
        }
        if (et != roce::kEtherTypeIpv4 && et != roce::kEtherTypeIpv6) {
            ++other_;
            return;
        }
        // RoCE v2 only: UDP to 4791 (the decoder says which are not).
        Frame fr;
        fr.t_ns = t;
        fr.bytes.assign(f, f + len);
        frames_.push_back(std::move(fr));
    }

    json describe(const Frame& fr, const std::vector<uint32_t>& qpns) const {
        roce::Packet p;
        const roce::DecodeResult r = roce::decode_frame(fr.bytes.data(), fr.bytes.size(), p);
        json j = {{"t_ns", fr.t_ns}, {"len", fr.bytes.size()}, {"hex", hex(fr.bytes.data(), fr.bytes.size())}};
        if (r.error == roce::DecodeError::NotUdp || r.error == roce::DecodeError::NotRoceV2) {
            j["roce"] = false;
            return j;
        }
        j["roce"] = true;
        j["decode"] = r.ok() ? "ok" : roce::to_string(r.error);
        j["icrc_ok"] = r.ok();
        if (!r.ok() && r.error != roce::DecodeError::BadIcrc) return j;
        j["eth"] = {{"dst", mac_str(p.eth.dst)}, {"src", mac_str(p.eth.src)}, {"vlan", p.eth.has_vlan},
                    {"type", p.eth.ethertype}};
        if (p.ip_version == roce::IpVersion::V4)
            j["ip"] = {{"version", 4},     {"ihl", p.ip4.ihl},       {"tos", p.ip4.tos},
                       {"len", p.ip4.total_len}, {"id", p.ip4.id},   {"frag", p.ip4.frag},
                       {"ttl", p.ip4.ttl}, {"proto", p.ip4.protocol}, {"src", ip_str(p.ip4.src)},
                       {"dst", ip_str(p.ip4.dst)}};
        else
            j["ip"] = {{"version", 6}, {"tclass", p.ip6.traffic_class}, {"flow_label", p.ip6.flow_label},
                       {"len", p.ip6.payload_len}, {"hop_limit", p.ip6.hop_limit}};
        j["udp"] = {{"sport", p.udp.sport}, {"dport", p.udp.dport}, {"len", p.udp.length},
                    {"csum", p.udp.checksum}};
        // Which of rxe's source-port rules the port follows, for the QPs
        // the runner names (docs/rxe-wire-rules.md, "UDP source port").
        std::string rule = "other";
        for (uint32_t q : qpns) {
            if (p.udp.sport == roce::roce_udp_sport(q, p.hdr.bth.dqpn)) rule = "qpn_pair:" + std::to_string(q);
            else if (p.udp.sport == roce::roce_udp_sport_unconnected(q)) rule = "unconnected:" + std::to_string(q);
            if (rule != "other") break;
        }
        j["sport_rule"] = rule;
        const roce::Bth& b = p.hdr.bth;
        const roce::OpcodeInfo& info = p.opinfo();
        j["bth"] = {{"opcode", info.name ? info.name : std::to_string(b.opcode)},
                    {"se", b.se}, {"mig", b.mig}, {"pad", b.pad}, {"tver", b.tver}, {"pkey", b.pkey},
                    {"fecn", b.fecn}, {"becn", b.becn}, {"resv6", b.resv6}, {"dqpn", b.dqpn},
                    {"ack_req", b.ack_req}, {"resv7", b.resv7}, {"psn", b.psn}};
        const auto& h = p.hdr;
        if (info.has(roce::Ext::DETH))
            j["deth"] = {{"qkey", h.deth.qkey}, {"resv8", h.deth.resv8}, {"src_qp", h.deth.src_qp}};
        if (info.has(roce::Ext::RETH))
            j["reth"] = {{"va", h.reth.va}, {"rkey", h.reth.rkey}, {"dma_len", h.reth.dma_len}};
        if (info.has(roce::Ext::AtomicETH))
            j["atomic"] = {{"va", h.atomic.va}, {"rkey", h.atomic.rkey}, {"swap_add", h.atomic.swap_add},
                           {"compare", h.atomic.compare}};
        if (info.has(roce::Ext::AETH)) {
            static const char* types[] = {"ACK", "RNR_NAK", "RESERVED", "NAK"};
            j["aeth"] = {{"syndrome", h.aeth.syndrome},
                         {"type", types[size_t(roce::aeth_type(h.aeth.syndrome))]},
                         {"value", roce::aeth_value(h.aeth.syndrome)},
                         {"msn", h.aeth.msn}};
        }
        if (info.has(roce::Ext::AtomicAckETH)) j["atomic_ack"] = {{"orig", h.atomic_ack.orig}};
        if (info.has(roce::Ext::ImmDt)) j["imm"] = h.imm;
        if (info.has(roce::Ext::IETH)) j["ieth"] = h.ieth_rkey;
        j["payload"] = hex(p.payload, p.payload_len);
        j["icrc"] = p.icrc;
        return j;
    }

    json do_recv(const json& req) {
        const uint64_t ms = req.contains("ms") ? num(req["ms"]) : 0;
        const size_t want = req.contains("max") ? size_t(num(req["max"])) : 0;
        std::vector<uint32_t> qpns;
        for (const json& q : req.value("qpns", json::array())) qpns.push_back(uint32_t(num(q)));
        const uint64_t deadline = realtime_ns() + ms * 1000000ull;
        drain();
        while (want == 0 || frames_.size() < want) {
            const uint64_t t = realtime_ns();
            if (t >= deadline) break;
            pollfd p{fd_, POLLIN, 0};
            const uint64_t left_ms = (deadline - t + 999999) / 1000000;
            poll(&p, 1, int(std::min<uint64_t>(left_ms, 1000)));
            drain();
        }
        json out = json::array();
        size_t n = want == 0 ? frames_.size() : std::min(want, frames_.size());
        for (size_t i = 0; i < n; ++i) {
            out.push_back(describe(frames_.front(), qpns));
            frames_.pop_front();
        }
        return {{"ok", true}, {"frames", out}, {"t_ns", now()}};
    }

    json do_resolve(const json& req) {
        const uint32_t ip = parse_ip(req.at("ip").get<std::string>());
        const uint64_t ms = req.contains("ms") ? num(req["ms"]) : 3000;
        const uint64_t deadline = realtime_ns() + ms * 1000000ull;
        uint64_t next_ask = 0;
        for (;;) {
            drain();
            auto it = neigh_.find(ip);
            if (it != neigh_.end()) return {{"ok", true}, {"mac", mac_str(it->second)}};
            const uint64_t t = realtime_ns();
            if (t >= deadline) throw Error("no ARP answer from " + ip_str(ip));
            if (t >= next_ask) {
                roce::ArpPacket a;
                a.eth_dst = roce::kBroadcastMac;
                a.eth_src = mac_;
                a.op = roce::ArpOp::Request;
                a.sha = mac_;
                a.spa = ip_;
                a.tpa = ip;
                std::vector<uint8_t> out;
                roce::encode_arp(a, out);
                ::send(fd_, out.data(), out.size(), 0);
                next_ask = t + 500000000ull;
            }
            pollfd p{fd_, POLLIN, 0};
            poll(&p, 1, 50);
        }
    }

    // Builds a packet from its description with the packet core.
    roce::Packet build(const json& d, std::vector<uint8_t>& payload) {
        roce::Packet p;
        p.eth.src = mac_;
        p.ip4.src = ip_;
        if (d.contains("src_ip")) p.ip4.src = parse_ip(d["src_ip"].get<std::string>());
        p.ip4.dst = parse_ip(d.at("dst_ip").get<std::string>());
        if (d.contains("dst_mac")) {
            p.eth.dst = parse_mac(d["dst_mac"].get<std::string>());
        } else {
            auto it = neigh_.find(p.ip4.dst);
            if (it == neigh_.end()) throw Error("no MAC for " + ip_str(p.ip4.dst) + ": resolve it first");
            p.eth.dst = it->second;
        }
        take(d, "ip_id", p.ip4.id);
        take(d, "ttl", p.ip4.ttl);
        take(d, "tos", p.ip4.tos);
        take(d, "frag", p.ip4.frag);
        if (d.contains("sport_qpns")) {
            // The source port rxe would use for this QP pair (or, for UD,
            // for the sending QP alone).
            const uint32_t lq = uint32_t(num(d["sport_qpns"].at(0))), rq = uint32_t(num(d["sport_qpns"].at(1)));
            p.udp.sport = opcode_of(d.at("bth").at("opcode")) >= roce::op::UD_SEND_ONLY
                              ? roce::roce_udp_sport_unconnected(lq)
                              : roce::roce_udp_sport(lq, rq);
        }
        take(d, "sport", p.udp.sport);
        take(d, "dport", p.udp.dport);
        auto& h = p.hdr;
        const json& b = d.at("bth");
        h.bth.opcode = opcode_of(b.at("opcode"));
        if (!roce::opcode_info(h.bth.opcode).valid())
            throw Error("opcode " + b.at("opcode").dump() + " is not in the packet core's table "
                        "(build a known one and set mutate.opcode)");
        take(b, "se", h.bth.se);
        take(b, "mig", h.bth.mig);
        take(b, "tver", h.bth.tver);
        take(b, "pkey", h.bth.pkey);
        take(b, "fecn", h.bth.fecn);
        take(b, "becn", h.bth.becn);
        take(b, "resv6", h.bth.resv6);
        take(b, "dqpn", h.bth.dqpn);
        if (b.value("ack_req", json()) == "auto") {
            // As a requester sets it: on the last packet of an RC request.
            const roce::OpcodeInfo& info = roce::opcode_info(h.bth.opcode);
            h.bth.ack_req = roce::opcode_transport(h.bth.opcode) == roce::Transport::RC &&
                            info.has(roce::kRequest) && info.has(roce::kLast);
        } else {
            take(b, "ack_req", h.bth.ack_req);
        }
        take(b, "resv7", h.bth.resv7);
        take(b, "psn", h.bth.psn);
        if (d.contains("deth")) {
            take(d["deth"], "qkey", h.deth.qkey);
            take(d["deth"], "src_qp", h.deth.src_qp);
        }
        if (d.contains("reth")) {
            take(d["reth"], "va", h.reth.va);
            take(d["reth"], "rkey", h.reth.rkey);
            take(d["reth"], "dma_len", h.reth.dma_len);
        }
        if (d.contains("atomic")) {
            take(d["atomic"], "va", h.atomic.va);
            take(d["atomic"], "rkey", h.atomic.rkey);
            take(d["atomic"], "swap_add", h.atomic.swap_add);
            take(d["atomic"], "compare", h.atomic.compare);
        }
        if (d.contains("aeth")) {
            take(d["aeth"], "syndrome", h.aeth.syndrome);
            take(d["aeth"], "msn", h.aeth.msn);
        }
        if (d.contains("atomic_ack")) take(d["atomic_ack"], "orig", h.atomic_ack.orig);
        take(d, "imm", h.imm);
        take(d, "ieth", h.ieth_rkey);
        payload.clear();
        if (d.contains("payload")) {
            const json& pl = d["payload"];
            if (pl.is_string()) {
                payload = unhex(pl.get<std::string>());
            } else {
                payload.resize(size_t(num(pl.at("len"))));
                const std::string fill = pl.value("fill", "inc");
                for (size_t i = 0; i < payload.size(); ++i)
                    payload[i] = fill == "zero" ? 0
                                 : fill.rfind("byte:", 0) == 0 ? uint8_t(std::stoul(fill.substr(5), nullptr, 16))
                                                               : uint8_t(i);
            }
        }
        p.payload = payload.data();
        p.payload_len = payload.size();
        return p;
    }

    static void put_icrc(std::vector<uint8_t>& f, const roce::Packet& p, size_t len) {
        const uint32_t c = roce::compute_icrc(f.data(), len, p.l3_off, p.l4_off, p.ip_version);
        for (int i = 0; i < 4; ++i) f[len - 4 + size_t(i)] = uint8_t(c >> (8 * i));
    }

    json do_send(const json& req) {
        std::vector<uint8_t> payload, f;
        roce::Packet p = build(req.at("pkt"), payload);
        roce::EncodeOptions eo;
        eo.pad_to_eth_min = false;  // padding added below, after any mutation
        if (!roce::encode_frame(p, f, eo)) throw Error("the packet core refuses to encode this packet");
        size_t len = p.frame_len;
        const json m = req.value("mutate", json::object());
        // The IP packet's end: mutations keep the ICRC at its end.
        if (m.contains("opcode")) {
            f[p.bth_off] = uint8_t(num(m["opcode"]));
            put_icrc(f, p, len);
        }
        if (m.contains("pad")) {
            f[p.bth_off + 1] = uint8_t((f[p.bth_off + 1] & ~0x30) | ((num(m["pad"]) & 3) << 4));
            put_icrc(f, p, len);
        }
        if (m.contains("pkey")) {  // after encoding: a P_Key the ICRC covers
            const uint16_t k = uint16_t(num(m["pkey"]));
            f[p.bth_off + 2] = uint8_t(k >> 8);
            f[p.bth_off + 3] = uint8_t(k);
            put_icrc(f, p, len);
        }
        if (m.value("bad_icrc", false)) f[len - 1] ^= 0x5a;
        if (m.value("icrc_headers_as_payload", false)) {
            uint32_t c = roce::compute_icrc(f.data(), len, p.l3_off, p.l4_off, p.ip_version);
            c = roce::crc32(c, f.data() + p.bth_off, len - 4 - p.bth_off);
            for (int i = 0; i < 4; ++i) f[len - 4 + size_t(i)] = uint8_t(c >> (8 * i));
        }
        if (m.contains("truncate")) {
            len -= std::min<size_t>(len - roce::kEthHdrBytes, size_t(num(m["truncate"])));
        }
        if (m.contains("shorten")) {
            // Cut the end and make the IP and UDP lengths (and the IPv4
            // checksum) say so: a frame whose headers agree with its length
            // but that is too short for what its opcode carries.
            len -= std::min<size_t>(len - p.l4_off - roce::kUdpHdrBytes, size_t(num(m["shorten"])));
            const size_t ip_len = len - p.l3_off, udp_len = len - p.l4_off;
            f[p.l3_off + 2] = uint8_t(ip_len >> 8);
            f[p.l3_off + 3] = uint8_t(ip_len);
            f[p.l3_off + 10] = f[p.l3_off + 11] = 0;
            const uint16_t c = roce::ipv4_checksum(f.data() + p.l3_off, roce::kIpv4HdrBytes);
            f[p.l3_off + 10] = uint8_t(c >> 8);
            f[p.l3_off + 11] = uint8_t(c);
            f[p.l4_off + 4] = uint8_t(udp_len >> 8);
            f[p.l4_off + 5] = uint8_t(udp_len);
        }
        f.resize(len);
        // A sending MAC pads short frames to the Ethernet minimum.
        if (f.size() < roce::kEthMinFrameBytes) f.resize(roce::kEthMinFrameBytes, 0);
        // The send's time is taken before sendto(): an answer (stamped by
        // the kernel on arrival) can come back before sendto() returns to a
        // process that lost the CPU meanwhile.
        const uint64_t t = now();
        if (::send(fd_, f.data(), f.size(), 0) != ssize_t(f.size()))
            throw Error("send: " + std::string(std::strerror(errno)));
        return {{"ok", true}, {"t_ns", t}, {"len", f.size()}, {"hex", hex(f.data(), f.size())}};
    }

    int fd_ = -1;
    sockaddr_in hub_{};
    roce::MacAddr mac_;
    uint32_t ip_;
    uint64_t t0_ = 0;
    std::deque<Frame> frames_;
    std::map<uint32_t, roce::MacAddr> neigh_;
    uint64_t arp_answered_ = 0, other_ = 0;
};

int usage() {
    std::fprintf(stderr, "usage: simnic-inject --wire 127.0.0.1:PORT --mac MAC --ip A.B.C.D\n");
    return 2;
}

}  // namespace

int main(int argc, char** argv) {
    std::string wire, mac = "02:00:00:00:00:32", ip = "10.0.0.50";
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string k = argv[i], v = argv[i + 1];
        if (k == "--wire") wire = v;
        else if (k == "--mac") mac = v;
        else if (k == "--ip") ip = v;
        else return usage();
    }
    if (argc % 2 == 0 || wire.empty()) return usage();
    const size_t colon = wire.rfind(':');
    if (colon == std::string::npos || wire.substr(0, colon) != "127.0.0.1") return usage();
    try {
        Injector inj(uint16_t(std::stoul(wire.substr(colon + 1))), parse_mac(mac), parse_ip(ip));
        std::cout << json{{"ok", true}, {"ready", true}, {"mac", mac}, {"ip", ip}}.dump() << std::endl;
        std::string line;
        // Frames are read whenever they come (ARP is answered at once), and
        // requests whenever a line is complete.
        std::string pending;
        for (;;) {
            pollfd p[2] = {{0, POLLIN, 0}, {inj.fd(), POLLIN, 0}};
            poll(p, 2, -1);
            if (p[1].revents & POLLIN) inj.drain();
            if (!(p[0].revents & (POLLIN | POLLHUP))) continue;
            char buf[65536];
            const ssize_t n = read(0, buf, sizeof buf);
            if (n <= 0) return 0;
            pending.append(buf, size_t(n));
            size_t nl;
            while ((nl = pending.find('\n')) != std::string::npos) {
                line = pending.substr(0, nl);
                pending.erase(0, nl + 1);
                if (line.empty()) continue;
                json reply;
                try {
                    reply = inj.handle(json::parse(line));
                } catch (const std::exception& e) {
                    reply = {{"ok", false}, {"error", e.what()}};
                }
                std::cout << reply.dump() << std::endl;
            }
        }
    } catch (const std::exception& e) {
        std::fprintf(stderr, "simnic-inject: %s\n", e.what());
        return 1;
    }
}
