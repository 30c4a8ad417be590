// The wire (hw-spec 1.1): RoCE v2 over UDP port 4791 on the netdev's
// addresses, as rxe_net.c carries it. One socket per source port sends the
// frames the transport core builds, so that the kernel writes the IP and UDP
// headers the engine encoded (the frame on the wire is the one the ICRC
// covers); one socket per local address receives, and the headers the
// kernel took off are rebuilt in front of each payload. Frames to the
// device's own address may skip the kernel (the loopback shortcut). Every
// received packet is captured, decoded, counted and handed to its QP here.
#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "engine_internal.h"
#include "simnic/roce/opcode.h"

namespace simnic::soft_engine {

namespace {
// The UDP header in front of a received payload of n bytes (checksum 0: the
// ICRC masks it and the kernel has checked it).
void put_udp(uint8_t* udp, uint16_t sport, size_t n) {
    const size_t ulen = roce::kUdpHdrBytes + n;
    udp[0] = uint8_t(sport >> 8);
    udp[1] = uint8_t(sport);
    udp[2] = uint8_t(roce::kRoceV2Port >> 8);
    udp[3] = uint8_t(roce::kRoceV2Port & 0xFF);
    udp[4] = uint8_t(ulen >> 8);
    udp[5] = uint8_t(ulen);
    udp[6] = udp[7] = 0;
}
}  // namespace

bool SoftEngine::Impl::open_wire(std::string& err) {
    ifaddrs* ifa = nullptr;
    if (getifaddrs(&ifa) == 0) {
        for (ifaddrs* i = ifa; i; i = i->ifa_next) {
            if (!i->ifa_addr || cfg.netdev != i->ifa_name) continue;
            if (i->ifa_addr->sa_family == AF_INET && local_ip == 0) {
                local_ip = ntohl(reinterpret_cast<const sockaddr_in*>(i->ifa_addr)->sin_addr.s_addr);
            } else if (i->ifa_addr->sa_family == AF_INET6) {
                const auto* a6 = reinterpret_cast<const sockaddr_in6*>(i->ifa_addr);
                Local6 l;
                std::memcpy(l.addr.data(), &a6->sin6_addr, 16);
                l.scope = a6->sin6_scope_id;
                local6.push_back(l);
            }
        }
        freeifaddrs(ifa);
    }
    if (local_ip == 0) {
        err = "netdev " + cfg.netdev + " has no IPv4 address (the soft engine sends RoCE v2 over IPv4)";
        return false;
    }
    if (cfg.standalone) return true;  // no wire: MAC TX feeds MAC RX
    rx_fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (rx_fd < 0) {
        err = std::string("socket: ") + std::strerror(errno);
        return false;
    }
    const int one = 1, big = 8 << 20;
    setsockopt(rx_fd, IPPROTO_IP, IP_PKTINFO, &one, sizeof one);
    setsockopt(rx_fd, IPPROTO_IP, IP_RECVTTL, &one, sizeof one);
    setsockopt(rx_fd, IPPROTO_IP, IP_RECVTOS, &one, sizeof one);
    setsockopt(rx_fd, SOL_SOCKET, SO_RCVBUF, &big, sizeof big);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(roce::kRoceV2Port);
    a.sin_addr.s_addr = htonl(local_ip);
    // The message for a port-4791 socket that cannot bind `where`.
    auto bind_failed = [&](const std::string& where) {
        err = "cannot bind UDP " + where + ":4791 on " + cfg.netdev + ": " + std::strerror(errno) +
              (errno == EADDRINUSE ? " (another simnic device or daemon, or a kernel rxe device, uses RoCE v2 "
                                     "on this address)"
                                   : "");
        return false;
    };
    if (bind(rx_fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
        char ip[INET_ADDRSTRLEN] = {};
        inet_ntop(AF_INET, &a.sin_addr, ip, sizeof ip);
        return bind_failed(ip);
    }
    // IPv6: the same port on every IPv6 address of the netdev.
    for (Local6& l : local6) {
        l.rx_fd = socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (l.rx_fd < 0) continue;
        setsockopt(l.rx_fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
        setsockopt(l.rx_fd, IPPROTO_IPV6, IPV6_RECVPKTINFO, &one, sizeof one);
        setsockopt(l.rx_fd, IPPROTO_IPV6, IPV6_RECVHOPLIMIT, &one, sizeof one);
        setsockopt(l.rx_fd, IPPROTO_IPV6, IPV6_RECVTCLASS, &one, sizeof one);
        setsockopt(l.rx_fd, SOL_SOCKET, SO_RCVBUF, &big, sizeof big);
        // An address still in duplicate address detection (a link just
        // brought up) is "tentative" and cannot be bound without this.
        setsockopt(l.rx_fd, IPPROTO_IP, IP_FREEBIND, &one, sizeof one);
        sockaddr_in6 a6{};
        a6.sin6_family = AF_INET6;
        a6.sin6_port = htons(roce::kRoceV2Port);
        std::memcpy(&a6.sin6_addr, l.addr.data(), 16);
        a6.sin6_scope_id = l.scope;
        if (bind(l.rx_fd, reinterpret_cast<sockaddr*>(&a6), sizeof a6) != 0) {
            if (errno != EADDRINUSE) {
                // This address cannot carry RoCE (it went away, say): the
                // device serves the others; a GID naming it gets no answer.
                close(l.rx_fd);
                l.rx_fd = -1;
                continue;
            }
            char ip[INET6_ADDRSTRLEN] = {};
            inet_ntop(AF_INET6, &a6.sin6_addr, ip, sizeof ip);
            return bind_failed(std::string("[") + ip + "]");
        }
    }
    return true;
}

namespace {
// What every sending socket has, IPv4 or IPv6: several sockets share a
// source port (SO_REUSEPORT), and the queue is deep. Then it binds to
// `addr` (its port being rxe's source port); if that port is taken it sends
// from an ephemeral one rather than not at all. Returns fd, or -1 (closed).
int finish_tx_socket(int fd, sockaddr* addr, socklen_t len, in_port_t* port) {
    const int one = 1, big = 8 << 20;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one);
    setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &big, sizeof big);
    if (bind(fd, addr, len) == 0) return fd;
    *port = 0;
    if (bind(fd, addr, len) == 0) return fd;
    close(fd);
    return -1;
}
}  // namespace

// The socket that sends from [local6[idx]]:sport (rxe's source-port rule
// holds for IPv6 too). The kernel writes hop limit 64, traffic class 0 and
// no automatic flow label, as our encoded frame has them.
int SoftEngine::Impl::tx_sock6(size_t idx, uint16_t sport) {
    const uint32_t key = uint32_t(idx) << 16 | sport;
    auto it = tx_socks6.find(key);
    if (it != tx_socks6.end()) return it->second;
    int fd = socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd >= 0) {
        const int one = 1, zero = 0, hops = 64, pmtu = IPV6_PMTUDISC_DO;
        setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
        setsockopt(fd, IPPROTO_IPV6, IPV6_UNICAST_HOPS, &hops, sizeof hops);
        setsockopt(fd, IPPROTO_IPV6, IPV6_TCLASS, &zero, sizeof zero);
        setsockopt(fd, IPPROTO_IPV6, IPV6_AUTOFLOWLABEL, &zero, sizeof zero);
        setsockopt(fd, IPPROTO_IPV6, IPV6_MTU_DISCOVER, &pmtu, sizeof pmtu);
        setsockopt(fd, IPPROTO_IP, IP_FREEBIND, &one, sizeof one);
        sockaddr_in6 a6{};
        a6.sin6_family = AF_INET6;
        a6.sin6_port = htons(sport);
        std::memcpy(&a6.sin6_addr, local6[idx].addr.data(), 16);
        a6.sin6_scope_id = local6[idx].scope;
        fd = finish_tx_socket(fd, reinterpret_cast<sockaddr*>(&a6), sizeof a6, &a6.sin6_port);
    }
    tx_socks6[key] = fd;
    return fd;
}

int SoftEngine::Impl::tx_sock(uint16_t sport) {
    auto it = tx_socks.find(sport);
    if (it != tx_socks.end()) return it->second;
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd >= 0) {
        const int pmtu = IP_PMTUDISC_DO, ttl = 64;
        // DF set and an unconnected socket: the kernel sends IP ID 0, which the
        // ICRC covers (as rxe's packets have it).
        setsockopt(fd, IPPROTO_IP, IP_MTU_DISCOVER, &pmtu, sizeof pmtu);
        setsockopt(fd, IPPROTO_IP, IP_TTL, &ttl, sizeof ttl);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_port = htons(sport);
        a.sin_addr.s_addr = htonl(local_ip);
        fd = finish_tx_socket(fd, reinterpret_cast<sockaddr*>(&a), sizeof a, &a.sin_port);
    }
    tx_socks[sport] = fd;
    return fd;
}

void SoftEngine::Impl::transmit(EngineQp& q, roce::Packet& pkt) {
    const roce::OpcodeInfo& info = pkt.opinfo();
    // The header fields the kernel will write (see tx_sock, tx_sock6), so
    // that the encoded frame is the one on the wire.
    if (pkt.ip_version == roce::IpVersion::V4) {
        pkt.ip4.id = 0;
        pkt.ip4.frag = 0x4000;
        pkt.ip4.ttl = 64;
        pkt.ip4.tos = 0;
    } else {
        pkt.ip6.hop_limit = 64;
        pkt.ip6.traffic_class = 0;
        pkt.ip6.flow_label = 0;
    }
    if (!roce::encode_frame(pkt, txbuf)) {
        stat(hw::stats_block::tx_drops);
        return;
    }
    if (rec) {
        // A model device: the frame goes down the TX pipeline and leaves
        // through wire_tx() when it leaves MAC TX.
        TxFrameRec f;
        f.bytes.assign(txbuf.begin(), txbuf.begin() + long(pkt.frame_len));
        f.qpn = q.qpn;
        f.psn = pkt.hdr.bth.psn;
        f.opcode = pkt.hdr.bth.opcode;
        f.payload = uint32_t(pkt.payload_len);
        rec->add(Op::Kind::TxFrame, q.qpn, uint32_t(pkt.frame_len), uint32_t(rec->frames.size()));
        rec->frames.push_back(std::move(f));
    } else {
        send_frame(txbuf.data(), pkt.frame_len);
    }
    if (info.has(roce::kRequest) && !q.is_ud()) {
        const uint32_t psn = pkt.hdr.bth.psn;
        if (roce::psn_before(psn, q.hi_psn)) stat(hw::stats_block::retransmits);
        else q.hi_psn = roce::psn_add(psn, 1);
    } else if (info.has(roce::kHasAeth)) {
        const uint8_t syn = pkt.hdr.aeth.syndrome;
        const roce::AethType t = roce::aeth_type(syn);
        if (t == roce::AethType::RnrNak) stat(hw::stats_block::tx_rnr_nak);
        else if (t == roce::AethType::Nak) {
            const hw::Field f[] = {hw::stats_block::tx_nak_psn_seq, hw::stats_block::tx_nak_inv_req,
                                   hw::stats_block::tx_nak_rem_access, hw::stats_block::tx_nak_rem_op};
            if ((syn & 0x1F) < 4) stat(f[syn & 0x1F]);
        }
    }
}

// Sends an encoded IPv4 frame (Ethernet header first) over the UDP socket of
// its source port; the kernel adds the IP and UDP headers we encoded the
// same way (rxe's DF, ID 0, TTL 64), so the wire carries these bytes.
void SoftEngine::Impl::send_frame(const uint8_t* f, size_t len) {
    constexpr size_t l3 = roce::kEthHdrBytes;
    if (len < l3 + roce::kIpv4HdrBytes + roce::kUdpHdrBytes) {
        stat(hw::stats_block::tx_drops);
        return;
    }
    const bool v6 = (f[l3] >> 4) == 6;
    if (!v6 && ((f[l3] >> 4) != 4 || (f[l3] & 0xF) != 5)) {
        stat(hw::stats_block::tx_drops);
        return;
    }
    const size_t l4 = l3 + (v6 ? roce::kIpv6HdrBytes : roce::kIpv4HdrBytes), bth = l4 + roce::kUdpHdrBytes;
    if (len < bth) {
        stat(hw::stats_block::tx_drops);
        return;
    }
    const uint16_t sport = uint16_t(f[l4] << 8 | f[l4 + 1]);
    // Without Ethernet padding: the IP length says where the packet ends.
    const size_t ip_end = v6 ? l3 + roce::kIpv6HdrBytes + size_t(f[l3 + 4] << 8 | f[l3 + 5])
                             : l3 + size_t(f[l3 + 2] << 8 | f[l3 + 3]);
    const size_t end = std::min(len, ip_end);
    if (cfg.standalone) return;
    const uint32_t dst = v6 ? 0 : uint32_t(f[l3 + 16]) << 24 | uint32_t(f[l3 + 17]) << 16 | uint32_t(f[l3 + 18]) << 8 |
                                      f[l3 + 19];
    const bool to_self = v6 ? local6_index(f + l3 + 24) >= 0 : dst == local_ip;
    if (cfg.loopback && to_self) {
        // rxe's shortcut: the frame never reaches the kernel. It is counted
        // and captured as sent, then received from the queue by rx_batch()
        // (not here: the sender's state machine is still running).
        stat(hw::stats_block::tx_packets);
        stat(hw::stats_block::tx_bytes, end - bth);
        if (pcap) pcap->write(f, len, wall_us());
        if (pipe) {
            pipe->rx_frame(f, len);
            return;
        }
        std::vector<uint8_t> b;
        if (!loop_spare.empty()) {
            b = std::move(loop_spare.back());
            loop_spare.pop_back();
        }
        b.assign(f + l3, f + end);
        loop_q.push_back(std::move(b));
        return;
    }
    int fd = -1;
    sockaddr_storage to{};
    socklen_t to_len = 0;
    if (v6) {
        const int idx = local6_index(f + l3 + 8);  // the source must be one of ours
        if (idx >= 0) fd = tx_sock6(size_t(idx), sport);
        auto* d6 = reinterpret_cast<sockaddr_in6*>(&to);
        d6->sin6_family = AF_INET6;
        d6->sin6_port = htons(roce::kRoceV2Port);
        std::memcpy(&d6->sin6_addr, f + l3 + 24, 16);
        if (idx >= 0 && IN6_IS_ADDR_LINKLOCAL(&d6->sin6_addr)) d6->sin6_scope_id = local6[size_t(idx)].scope;
        to_len = sizeof *d6;
    } else {
        fd = tx_sock(sport);
        auto* d4 = reinterpret_cast<sockaddr_in*>(&to);
        d4->sin_family = AF_INET;
        d4->sin_port = htons(roce::kRoceV2Port);
        d4->sin_addr.s_addr = htonl(dst);
        to_len = sizeof *d4;
    }
    if (fd < 0) {
        stat(hw::stats_block::tx_drops);
        return;
    }
    // Queued, and sent with one sendmmsg per socket after the step that
    // built it (or when the batch is full): a system call per step, not per
    // packet.
    TxFrame& it = tx->next();
    it.fd = fd;
    it.dst = to;
    it.dst_len = to_len;
    it.data.assign(f + bth, f + end);
    if (pcap) pcap->write(f, len, wall_us());
    if (tx->pending() >= TxQueue::kBatch) tx->flush();
}

bool SoftEngine::Impl::rx_batch() {
    constexpr size_t kHdr = roce::kIpv4HdrBytes + roce::kUdpHdrBytes;
    bool any = false;
    // Loopback frames first: they are this device's own traffic. Bounded, so
    // that doorbells and the socket are not starved by a long exchange.
    for (int k = 0; k < 256 && !loop_q.empty(); ++k) {
        std::vector<uint8_t> b = std::move(loop_q.front());
        loop_q.pop_front();
        rx_deliver(b.data(), b.size(), true);
        loop_spare.push_back(std::move(b));
        any = true;
    }
    // With the shortcut, a device on lo mostly talks to itself: while the
    // socket stays quiet, look at it every fourth pass only (a recvmsg that
    // finds nothing is a tenth of a spinning pass). Sleep still waits on it.
    if (cfg.loopback && sock_quiet > 16 && (++sock_skip & 3) != 0) return any;
    // One recvmmsg takes up to kRxBatch datagrams: a system call per batch,
    // not per packet. Each buffer keeps room for the IP and UDP headers the
    // kernel took off (IPv6's are the larger), which are rebuilt in front of
    // the payload.
    constexpr size_t kRoom = roce::kIpv6HdrBytes + roce::kUdpHdrBytes;
    bool got = false;
    if (rx_bufs.empty()) {
        rx_bufs.assign(kRxBatch, std::vector<uint8_t>(kRoom + 65536));
        rx_ctl.resize(kRxBatch * kRxCtl);
    }
    sockaddr_storage srcs[kRxBatch];
    iovec ivs[kRxBatch];
    mmsghdr msgs[kRxBatch];
    auto handle4 = [&](uint8_t* pay, size_t n, msghdr& mh, const sockaddr_in& src) {
        uint32_t dst = local_ip;
        uint8_t ttl = 64, tos = 0;
        for (cmsghdr* c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
            if (c->cmsg_level != IPPROTO_IP) continue;
            if (c->cmsg_type == IP_PKTINFO) {
                in_pktinfo pi;
                std::memcpy(&pi, CMSG_DATA(c), sizeof pi);
                dst = ntohl(pi.ipi_addr.s_addr);
            } else if (c->cmsg_type == IP_TTL) {
                int v;
                std::memcpy(&v, CMSG_DATA(c), sizeof v);
                ttl = uint8_t(v);
            } else if (c->cmsg_type == IP_TOS) {
                tos = *reinterpret_cast<const uint8_t*>(CMSG_DATA(c));
            }
        }
        // The IPv4 and UDP headers the sender's kernel put in front (rxe:
        // DF, ID 0; the ICRC masks TTL, TOS and the checksums).
        const size_t total = kHdr + n;
        const uint32_t sip = ntohl(src.sin_addr.s_addr);
        const uint16_t sport = ntohs(src.sin_port);
        uint8_t* ip = pay - kHdr;
        ip[0] = 0x45;
        ip[1] = tos;
        ip[2] = uint8_t(total >> 8);
        ip[3] = uint8_t(total);
        ip[4] = ip[5] = 0;
        ip[6] = 0x40;
        ip[7] = 0;
        ip[8] = ttl;
        ip[9] = roce::kIpProtoUdp;
        ip[10] = ip[11] = 0;
        for (int i = 0; i < 4; ++i) {
            ip[12 + i] = uint8_t(sip >> (24 - 8 * i));
            ip[16 + i] = uint8_t(dst >> (24 - 8 * i));
        }
        const uint16_t cs = roce::ipv4_checksum(ip, roce::kIpv4HdrBytes);
        ip[10] = uint8_t(cs >> 8);
        ip[11] = uint8_t(cs);
        put_udp(ip + roce::kIpv4HdrBytes, sport, n);
        deliver_ip(ip, total);
    };
    auto handle6 = [&](uint8_t* pay, size_t n, msghdr& mh, const sockaddr_in6& src, size_t idx) {
        const uint8_t* dst = local6[idx].addr.data();
        in6_pktinfo pi{};
        int hops = 64, tclass = 0;
        for (cmsghdr* c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
            if (c->cmsg_level != IPPROTO_IPV6) continue;
            if (c->cmsg_type == IPV6_PKTINFO) {
                std::memcpy(&pi, CMSG_DATA(c), sizeof pi);
                dst = reinterpret_cast<const uint8_t*>(&pi.ipi6_addr);
            } else if (c->cmsg_type == IPV6_HOPLIMIT) {
                std::memcpy(&hops, CMSG_DATA(c), sizeof hops);
            } else if (c->cmsg_type == IPV6_TCLASS) {
                std::memcpy(&tclass, CMSG_DATA(c), sizeof tclass);
            }
        }
        // The IPv6 and UDP headers (the ICRC masks traffic class, flow
        // label, hop limit and the UDP checksum; the socket API does not
        // give the flow label, which stays 0 here).
        const size_t hdr = roce::kIpv6HdrBytes + roce::kUdpHdrBytes;
        uint8_t* ip = pay - hdr;
        const size_t plen = roce::kUdpHdrBytes + n;
        ip[0] = uint8_t(0x60 | ((tclass >> 4) & 0xF));
        ip[1] = uint8_t((tclass & 0xF) << 4);
        ip[2] = ip[3] = 0;
        ip[4] = uint8_t(plen >> 8);
        ip[5] = uint8_t(plen);
        ip[6] = roce::kIpProtoUdp;
        ip[7] = uint8_t(hops);
        std::memcpy(ip + 8, &src.sin6_addr, 16);
        std::memcpy(ip + 24, dst, 16);
        put_udp(ip + roce::kIpv6HdrBytes, ntohs(src.sin6_port), n);
        deliver_ip(ip, hdr + n);
    };
    // Every socket of the device: IPv4, then each IPv6 address.
    for (size_t sk = 0; sk <= local6.size(); ++sk) {
        const int fd = sk == 0 ? rx_fd : local6[sk - 1].rx_fd;
        if (fd < 0) continue;
        for (int round = 0; round < 4; ++round) {
            for (int i = 0; i < kRxBatch; ++i) {
                srcs[i] = sockaddr_storage{};
                ivs[i] = iovec{rx_bufs[size_t(i)].data() + kRoom, rx_bufs[size_t(i)].size() - kRoom};
                msgs[i] = mmsghdr{};
                msgs[i].msg_hdr.msg_name = &srcs[i];
                msgs[i].msg_hdr.msg_namelen = sizeof srcs[i];
                msgs[i].msg_hdr.msg_iov = &ivs[i];
                msgs[i].msg_hdr.msg_iovlen = 1;
                msgs[i].msg_hdr.msg_control = rx_ctl.data() + size_t(i) * kRxCtl;
                msgs[i].msg_hdr.msg_controllen = kRxCtl;
            }
            const int m = recvmmsg(fd, msgs, kRxBatch, MSG_DONTWAIT, nullptr);
            if (m <= 0) break;
            any = got = true;
            for (int i = 0; i < m; ++i) {
                uint8_t* pay = rx_bufs[size_t(i)].data() + kRoom;
                if (sk == 0)
                    handle4(pay, msgs[i].msg_len, msgs[i].msg_hdr, *reinterpret_cast<const sockaddr_in*>(&srcs[i]));
                else
                    handle6(pay, msgs[i].msg_len, msgs[i].msg_hdr, *reinterpret_cast<const sockaddr_in6*>(&srcs[i]),
                            sk - 1);
            }
            if (m < kRxBatch) break;
        }
    }
    sock_quiet = got ? 0 : sock_quiet + 1;
    return any;
}

// A received IP packet (headers rebuilt): into the model's MAC RX, or to the
// soft datapath.
void SoftEngine::Impl::deliver_ip(const uint8_t* ip, size_t total) {
    if (pipe) {
        // A model device: the frame enters at MAC RX, as an Ethernet frame
        // addressed to the port.
        std::vector<uint8_t> fr(roce::kEthHdrBytes + total, 0);
        std::memcpy(fr.data(), port_mac, 6);
        const uint16_t et = (ip[0] >> 4) == 6 ? roce::kEtherTypeIpv6 : roce::kEtherTypeIpv4;
        fr[12] = uint8_t(et >> 8);
        fr[13] = uint8_t(et);
        std::memcpy(fr.data() + roce::kEthHdrBytes, ip, total);
        pipe->rx_frame(fr.data(), fr.size());
        return;
    }
    rx_deliver(ip, total);
}

// One received RoCE packet (IPv4 or IPv6): capture, decode, count, and hand it to its QP.
void SoftEngine::Impl::rx_deliver(const uint8_t* buf, size_t total, bool trusted) {
    constexpr size_t kEth = 14;
    const bool v6 = total > 0 && (buf[0] >> 4) == 6;
    const size_t n =
        total - std::min(total, (v6 ? roce::kIpv6HdrBytes : roce::kIpv4HdrBytes) + roce::kUdpHdrBytes);
    {
        if (pcap) {
            std::vector<uint8_t> fr(kEth + total, 0);
            const uint16_t et = v6 ? roce::kEtherTypeIpv6 : roce::kEtherTypeIpv4;
            fr[12] = uint8_t(et >> 8);
            fr[13] = uint8_t(et);
            std::memcpy(fr.data() + kEth, buf, total);
            pcap->write(fr, wall_us());
        }
        roce::Packet pkt;
        // A loopback frame was encoded by this engine a moment ago: its ICRC
        // is right by construction (and the capture shows it); checking it
        // again would be a third of the CRC work.
        roce::DecodeOptions dopt;
        dopt.check_icrc = !trusted;
        const roce::DecodeResult r = roce::decode_ip_packet(buf, total, pkt, dopt);
        if (!r.ok()) {
            stat(r.error == roce::DecodeError::BadIcrc ? hw::stats_block::icrc_errors
                                                        : hw::stats_block::rx_drops_bad_hdr);
            return;
        }
        stat(hw::stats_block::rx_packets);
        stat(hw::stats_block::rx_bytes, uint64_t(n));
        const roce::OpcodeInfo& info = pkt.opinfo();
        if (info.has(roce::kHasAeth)) {
            const uint8_t syn = pkt.hdr.aeth.syndrome;
            const roce::AethType t = roce::aeth_type(syn);
            if (t == roce::AethType::RnrNak) stat(hw::stats_block::rx_rnr_nak);
            else if (t == roce::AethType::Nak) {
                const hw::Field f[] = {hw::stats_block::rx_nak_psn_seq, hw::stats_block::rx_nak_inv_req,
                                       hw::stats_block::rx_nak_rem_access, hw::stats_block::rx_nak_rem_op};
                if ((syn & 0x1F) < 4) stat(f[syn & 0x1F]);
            }
        }
        if (pkt.hdr.bth.dqpn == kGsiQpn) {
            gsi_receive(pkt);
            return;
        }
        auto it = qps.find(pkt.hdr.bth.dqpn);
        const hw::QpState st = it == qps.end() ? hw::QpState::Reset : it->second->state();
        if (st == hw::QpState::Reset || st == hw::QpState::Init) {
            stat(hw::stats_block::rx_drops_no_qp);
            return;
        }
        EngineQp& q = *it->second;
        run(q, [&] { q.core->on_packet(pkt); });
    }
}


void EngineQp::transmit(roce::Packet& pkt) { eng.transmit(*this, pkt); }

}  // namespace simnic::soft_engine
