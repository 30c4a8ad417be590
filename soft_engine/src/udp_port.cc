// The UDP port (port.h): RoCE v2 over the host's UDP stack on UDP 4791 of
// the netdev's addresses (hw-spec 1.1), the port every device has today.
// One socket per source port sends, so that the kernel writes the IP and
// UDP headers the engine encoded the same way (rxe's DF, ID 0, TTL 64, and
// the address vector's TOS / traffic class, given with each datagram: the
// frame on the wire is the one the ICRC covers); the frames of one engine
// step leave together (tx_queue.h). One socket per local address receives,
// and the headers the kernel took off are rebuilt in front of each payload;
// one more socket per multicast group the port joined, IPv4 or IPv6.
// The kernel resolves neighbours and writes the link header.
#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <deque>
#include <unordered_map>

#include "port.h"
#include "simnic/base/clock.h"
#include "tx_queue.h"

#ifndef UDP_GRO
#define UDP_GRO 104  // linux/udp.h, since Linux 5.0
#endif

namespace simnic::soft_engine {

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

// A socket that receives RoCE v2 over IPv4 or IPv6 (a local address's, a
// group's), not yet bound: the ancillary data the receive path reads
// (destination address, TTL or hop limit, TOS or traffic class for ECN) and
// a deep queue. -1 if there is none.
int rx_socket_of(roce::IpVersion v) {
    const int one = 1, big = 8 << 20;
    const bool v6 = v == roce::IpVersion::V6;
    const int fd = socket(v6 ? AF_INET6 : AF_INET, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) return -1;
    if (v6) {
        setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
        setsockopt(fd, IPPROTO_IPV6, IPV6_RECVPKTINFO, &one, sizeof one);
        setsockopt(fd, IPPROTO_IPV6, IPV6_RECVHOPLIMIT, &one, sizeof one);
        setsockopt(fd, IPPROTO_IPV6, IPV6_RECVTCLASS, &one, sizeof one);
    } else {
        setsockopt(fd, IPPROTO_IP, IP_PKTINFO, &one, sizeof one);
        setsockopt(fd, IPPROTO_IP, IP_RECVTTL, &one, sizeof one);
        setsockopt(fd, IPPROTO_IP, IP_RECVTOS, &one, sizeof one);
    }
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &big, sizeof big);
    // What the kernel drops here for want of room is counted
    // (rx_overflow_drops): the datagrams that follow say how many.
    SocketDrops::enable(fd);
    // A GSO send from a device of this host then arrives whole, one
    // datagram per message, cut into its packets here (deliver); so may a
    // NIC's GRO of a remote sender's equal packets. Without it (a kernel
    // before 5.0) the kernel cuts them itself.
    setsockopt(fd, SOL_UDP, UDP_GRO, &one, sizeof one);
    return fd;
}

// Whether a packet socket (tcpdump, any capture through libpcap) is open on
// netdev `ifindex`, on lo or on every netdev, in this network namespace
// (lo: a device's frames to its own address go through it whatever its
// netdev). Their sockets are listed in /proc/net/packet, one per line, the
// netdev's index in the fifth column (0: bound to none, every netdev; lo's
// is 1 in every namespace).
bool capture_open(unsigned ifindex) {
    FILE* f = std::fopen("/proc/net/packet", "re");
    if (!f) return true;  // cannot tell: as if one were
    char line[256];
    bool open = false;
    if (std::fgets(line, sizeof line, f)) {  // the header
        while (!open && std::fgets(line, sizeof line, f)) {
            unsigned long long sk = 0;
            unsigned refs = 0, type = 0, proto = 0, iface = 0;
            if (std::sscanf(line, "%llx %u %u %x %u", &sk, &refs, &type, &proto, &iface) == 5)
                open = iface == 0 || iface == 1 || iface == ifindex;
        }
    }
    std::fclose(f);
    return open;
}

// UDP 4791 of `a` (IPv6: `scope` is the interface of a link-local address
// or of a group of link-local scope; other addresses ignore it).
socklen_t roce_v2_addr(const IpAddr& a, uint32_t scope, sockaddr_storage& out) {
    out = sockaddr_storage{};
    if (a.version == roce::IpVersion::V6) {
        auto* a6 = reinterpret_cast<sockaddr_in6*>(&out);
        a6->sin6_family = AF_INET6;
        a6->sin6_port = htons(roce::kRoceV2Port);
        std::memcpy(&a6->sin6_addr, a.v6.data(), 16);
        a6->sin6_scope_id = scope;
        return sizeof *a6;
    }
    auto* a4 = reinterpret_cast<sockaddr_in*>(&out);
    a4->sin_family = AF_INET;
    a4->sin_port = htons(roce::kRoceV2Port);
    a4->sin_addr.s_addr = htonl(a.v4);
    return sizeof *a4;
}

IpAddr ip_v4(uint32_t a) {
    IpAddr r;
    r.v4 = a;
    return r;
}

IpAddr ip_v6(const roce::Ipv6Addr& a) {
    IpAddr r;
    r.version = roce::IpVersion::V6;
    r.v6 = a;
    return r;
}

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

class UdpPort final : public Port {
public:
    explicit UdpPort(PortSent sent)
        : sent_(sent), tx_([sent](const TxFrame& t, bool ok) { sent(t.counted, ok, nullptr, 0); }) {}
    ~UdpPort() override;
    bool open(const std::string& netdev, bool sockets, std::string& err);

    uint32_t ipv4() const override { return local_ip_; }
    bool is_local(const IpAddr& a) const override {
        return a.version == roce::IpVersion::V4 ? a.v4 == local_ip_ : local6_index(a.v6.data()) >= 0;
    }
    std::optional<roce::MacAddr> neighbour(const IpAddr&) override { return std::nullopt; }
    void prepare(roce::Packet& pkt) override;
    bool send(const OutFrame& f) override;
    void flush() override;
    bool receive(PortSink& sink) override;
    bool rx_pending() const override { return !backlog_.empty(); }
    bool rx_lagging() const override { return backlog_bytes_ >= kHoldBytes; }
    uint64_t rx_overflow_drops() const override { return rx_drops_; }
    std::vector<int> fds() const override;
    bool set_group(const IpAddr& group, bool join) override;

private:
    // RoCE v2 over IPv6: one socket per IPv6 address of the netdev (the GID
    // table holds them all, as rxe's does), and its scope for link-local ones.
    struct Local6 {
        roce::Ipv6Addr addr{};
        uint32_t scope = 0;
        int rx_fd = -1;
    };
    // The index in local6_ of an IPv6 address of this port, or -1.
    int local6_index(const uint8_t* a) const {
        for (size_t i = 0; i < local6_.size(); ++i)
            if (std::memcmp(local6_[i].addr.data(), a, 16) == 0) return int(i);
        return -1;
    }
    int tx_sock(uint16_t sport);
    int tx_sock6(size_t idx, uint16_t sport);
    void receive4(uint8_t* pay, size_t n, msghdr& mh, const sockaddr_in& src, uint32_t dst, PortSink& sink);
    void receive6(uint8_t* pay, size_t n, msghdr& mh, const sockaddr_in6& src, const uint8_t* dst, PortSink& sink);
    // One datagram of socket `sk` (see rx_socket).
    void deliver(size_t sk, uint8_t* pay, size_t n, msghdr& mh, const sockaddr_storage& src, PortSink& sink);
    void stash_arrivals();
    // UDP GSO (tx_queue.h): allowed while nothing captures on the netdev
    // (checked every kCaptureCheckNs), for frames to an address of this
    // host. A capture on lo would see the GSO send as one datagram, not
    // the frames; a GSO send that leaves the host would have its
    // datagrams' IPv4 IDs counted up by the kernel, which the ICRC covers.
    bool gso_to(const uint8_t* f, bool v6) const;
    void check_capture();
    uint64_t capture_checked_ns_ = 0;
    static constexpr uint64_t kCaptureCheckNs = 10'000'000;
    // The receiving sockets, by index: 0 the IPv4 address's, 1 .. n those of
    // local6_, then one per multicast group joined (groups_).
    size_t rx_socket_count() const { return 1 + local6_.size() + groups_.size(); }
    int rx_socket(size_t sk) const {
        if (sk == 0) return rx_fd_;
        if (sk <= local6_.size()) return local6_[sk - 1].rx_fd;
        return groups_[sk - 1 - local6_.size()].fd;
    }
    // The address a datagram of socket `sk` went to, unless its packet
    // information says otherwise.
    IpAddr rx_socket_addr(size_t sk) const {
        if (sk == 0) return ip_v4(local_ip_);
        if (sk <= local6_.size()) return ip_v6(local6_[sk - 1].addr);
        return groups_[sk - 1 - local6_.size()].addr;
    }

    PortSent sent_;
    uint32_t local_ip_ = 0;  // host order
    unsigned ifindex_ = 0;   // the netdev's: multicast joins and sends go through it
    int rx_fd_ = -1;
    // A multicast group the port joined (IPv4 or IPv6): a socket bound to the
    // group's UDP 4791 (SO_REUSEADDR, so that every device of the host in the
    // group gets its copy, as every rxe device does), member on the netdev.
    struct Group {
        IpAddr addr;
        int fd = -1;
    };
    int group_socket(const IpAddr& group) const;
    std::vector<Group> groups_;
    std::vector<Local6> local6_;
    std::unordered_map<uint16_t, int> tx_socks_;   // sport -> socket
    std::unordered_map<uint32_t, int> tx_socks6_;  // (address index << 16 | sport) -> socket
    TxQueue tx_;
    static constexpr int kRxBatch = 16;
    static constexpr size_t kRxCtl = 256;
    std::vector<std::vector<uint8_t>> rx_bufs_;  // recvmmsg's buffers, IP + UDP header room first
    std::vector<char> rx_ctl_;
    // receive()'s batch headers, pointed at rx_bufs_ once and again only
    // after a call that filled them: an empty read changes none of them, and
    // a spinning engine makes many.
    sockaddr_storage rx_srcs_[kRxBatch];
    iovec rx_ivs_[kRxBatch];
    mmsghdr rx_msgs_[kRxBatch];
    bool rx_armed_ = false;
    // When each receiving socket (by rx_socket index) last gave a datagram
    // and was last read. A spinning engine reads a socket that gave one
    // within kRxHotNs on every pass, and one that has been quiet longer
    // only once kRxColdPollNs have passed since it was last read, as NAPI
    // stops polling a quiet queue: on lo the IPv6 socket of a device used
    // over IPv4 cost one empty recvmmsg per pass, in the critical path of
    // every round trip. The first datagram to a quiet socket waits at most
    // that long more; a sleeping engine is woken by any socket (epoll).
    struct RxPoll {
        uint64_t data_ns = 0;
        uint64_t read_ns = 0;
    };
    std::vector<RxPoll> rx_poll_;
    static constexpr uint64_t kRxHotNs = 1'000'000;
    static constexpr uint64_t kRxColdPollNs = 10'000;
    // The device's receive ring beyond the sockets' buffers: datagrams taken
    // off the sockets while a burst is being sent (stash_arrivals), in
    // arrival order, handed to the engine before anything read later.
    struct Stashed {
        size_t sk = 0;
        std::vector<uint8_t> buf;  // header room, then the n bytes of payload
        size_t n = 0;
        sockaddr_storage src{};
        std::vector<char> ctl;
    };
    std::deque<Stashed> backlog_;
    // Delivered entries kept for their buffers, and the stash's own batch.
    // A datagram of kStashSwapBytes or more is not copied: its entry takes
    // the batch buffer it was received into, whole (header room and 64 KiB),
    // and gives the batch the buffer it had. Entries holding such a whole
    // buffer are kept apart (stash_whole_), so that the batch gets a whole
    // one back without allocating. Smaller datagrams are copied into an
    // entry of their size: an ACK must not hold 64 KiB while it waits.
    // Both pools are bounded: at most kStashSpare entries of under
    // kStashSwapBytes (4 MiB) and kStashWhole whole ones (2 MiB).
    std::vector<Stashed> stash_spare_;
    std::vector<Stashed> stash_whole_;
    static constexpr size_t kStashSpare = 256;
    static constexpr size_t kStashWhole = 32;
    static constexpr size_t kStashSwapBytes = 16384;
    std::vector<std::vector<uint8_t>> stash_bufs_;
    std::vector<char> stash_ctl_;
    void arm_batch(std::vector<std::vector<uint8_t>>& bufs, std::vector<char>& ctl, sockaddr_storage* srcs,
                   iovec* ivs, mmsghdr* msgs);
    size_t backlog_bytes_ = 0;
    size_t sent_since_rx_ = 0;  // frames sent since the sockets were last read
    // Each receiving socket's drop count, by descriptor, and their growth.
    std::unordered_map<int, SocketDrops> rx_drops_seen_;
    uint64_t rx_drops_ = 0;
    // At most this much waits in the backlog: beyond it the sockets' own
    // buffers overflow, as a NIC's receive ring does.
    static constexpr size_t kBacklogBytes = 256u << 20;
    // From this much on the port says it lags (rx_lagging) and the engine's
    // requesters stop at their next packet: what a device sends itself is
    // then taken off the sockets before the backlog is full, where the
    // kernel would drop it (UC messages lost for good: ib_send_bw -c UC -a
    // waited for ever from 2 MiB messages on, 128 of them posted at once).
    // A requester stops within a batch of frames of the mark.
    static constexpr size_t kHoldBytes = 32u << 20;
    static constexpr size_t kRoom = roce::kIpv6HdrBytes + roce::kUdpHdrBytes;
    // A receive buffer: the header room, then the largest UDP payload (a
    // GRO datagram). The receive ring's, the stash batch's, and the whole
    // buffers that stashed entries take from the batch.
    static constexpr size_t kRxBufBytes = kRoom + 65536;
};

UdpPort::~UdpPort() {
    if (rx_fd_ >= 0) close(rx_fd_);
    for (const Group& gr : groups_) close(gr.fd);
    for (const Local6& l : local6_)
        if (l.rx_fd >= 0) close(l.rx_fd);
    for (auto& s6 : tx_socks6_)
        if (s6.second >= 0) close(s6.second);
    for (auto& s : tx_socks_)
        if (s.second >= 0) close(s.second);
}

bool UdpPort::open(const std::string& netdev, bool sockets, std::string& err) {
    ifaddrs* ifa = nullptr;
    if (getifaddrs(&ifa) == 0) {
        for (ifaddrs* i = ifa; i; i = i->ifa_next) {
            if (!i->ifa_addr || netdev != i->ifa_name) continue;
            if (i->ifa_addr->sa_family == AF_INET && local_ip_ == 0) {
                local_ip_ = ntohl(reinterpret_cast<const sockaddr_in*>(i->ifa_addr)->sin_addr.s_addr);
            } else if (i->ifa_addr->sa_family == AF_INET6) {
                const auto* a6 = reinterpret_cast<const sockaddr_in6*>(i->ifa_addr);
                Local6 l;
                std::memcpy(l.addr.data(), &a6->sin6_addr, 16);
                l.scope = a6->sin6_scope_id;
                local6_.push_back(l);
            }
        }
        freeifaddrs(ifa);
    }
    if (local_ip_ == 0) {
        err = "netdev " + netdev + " has no IPv4 address (the soft engine sends RoCE v2 over IPv4)";
        return false;
    }
    ifindex_ = if_nametoindex(netdev.c_str());
    if (!sockets) return true;
    rx_fd_ = rx_socket_of(roce::IpVersion::V4);
    if (rx_fd_ < 0) {
        err = std::string("socket: ") + std::strerror(errno);
        return false;
    }
    sockaddr_storage a{};
    const socklen_t a_len = roce_v2_addr(ip_v4(local_ip_), 0, a);
    // The message for a port-4791 socket that cannot bind `where`.
    auto bind_failed = [&](const std::string& where) {
        err = "cannot bind UDP " + where + ":4791 on " + netdev + ": " + std::strerror(errno) +
              (errno == EADDRINUSE ? " (another simnic device or daemon, or a kernel rxe device, uses RoCE v2 "
                                     "on this address)"
                                   : "");
        return false;
    };
    if (bind(rx_fd_, reinterpret_cast<sockaddr*>(&a), a_len) != 0) {
        char ip[INET_ADDRSTRLEN] = {};
        inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in&>(a).sin_addr, ip, sizeof ip);
        return bind_failed(ip);
    }
    // IPv6: the same port on every IPv6 address of the netdev.
    const int one = 1;
    for (Local6& l : local6_) {
        l.rx_fd = rx_socket_of(roce::IpVersion::V6);
        if (l.rx_fd < 0) continue;
        // An address still in duplicate address detection (a link just
        // brought up) is "tentative" and cannot be bound without this.
        setsockopt(l.rx_fd, IPPROTO_IP, IP_FREEBIND, &one, sizeof one);
        sockaddr_storage a6{};
        const socklen_t a6_len = roce_v2_addr(ip_v6(l.addr), l.scope, a6);
        if (bind(l.rx_fd, reinterpret_cast<sockaddr*>(&a6), a6_len) != 0) {
            if (errno != EADDRINUSE) {
                // This address cannot carry RoCE (it went away, say): the
                // device serves the others; a GID naming it gets no answer.
                close(l.rx_fd);
                l.rx_fd = -1;
                continue;
            }
            char ip[INET6_ADDRSTRLEN] = {};
            inet_ntop(AF_INET6, l.addr.data(), ip, sizeof ip);
            return bind_failed(std::string("[") + ip + "]");
        }
    }
    return true;
}

std::vector<int> UdpPort::fds() const {
    std::vector<int> r;
    for (size_t sk = 0; sk < rx_socket_count(); ++sk)
        if (rx_socket(sk) >= 0) r.push_back(rx_socket(sk));
    return r;
}

// The membership of the netdev in the group (IGMP for IPv4, as rdma_cm's
// join has the kernel send for rxe, cma_igmp_send; MLD for IPv6, the
// netdev then also taking the group's 33:33 MAC, as rxe_mcast_add has it
// take), and a socket that receives the group's UDP 4791: one per group,
// kept while the engine holds the group (its first attached QP to its last).
bool UdpPort::set_group(const IpAddr& group, bool join) {
    if (rx_fd_ < 0) return false;
    auto it = std::find_if(groups_.begin(), groups_.end(), [&](const Group& gr) { return gr.addr == group; });
    if (!join) {
        if (it == groups_.end()) return false;
        close(it->fd);  // leaves the group, and the engine's epoll set
        rx_drops_seen_.erase(it->fd);  // a socket made later may get its number
        // Datagrams stashed from its socket are for a group the device has
        // left: dropped, as the socket's queue is. The later groups' sockets
        // move down one index, and so do their stashed datagrams.
        const size_t gone = 1 + local6_.size() + size_t(it - groups_.begin());
        for (auto b = backlog_.begin(); b != backlog_.end();) {
            if (b->sk == gone) {
                backlog_bytes_ -= b->buf.size();
                b = backlog_.erase(b);
                continue;
            }
            if (b->sk > gone) --b->sk;
            ++b;
        }
        groups_.erase(it);
        return true;
    }
    if (it != groups_.end()) return true;
    const int fd = group_socket(group);
    if (fd < 0) return false;
    groups_.push_back({group, fd});
    return true;
}

// A socket bound to the group's UDP 4791 and member of it on the netdev,
// or -1. Only the membership request differs between IPv4 and IPv6.
int UdpPort::group_socket(const IpAddr& group) const {
    const int fd = rx_socket_of(group.version);
    if (fd < 0) return -1;
    const int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_storage a{};
    const socklen_t a_len = roce_v2_addr(group, ifindex_, a);
    bool member = false;
    if (bind(fd, reinterpret_cast<sockaddr*>(&a), a_len) == 0) {
        if (group.version == roce::IpVersion::V6) {
            ipv6_mreq mr{};
            std::memcpy(&mr.ipv6mr_multiaddr, group.v6.data(), 16);
            mr.ipv6mr_interface = ifindex_;
            member = setsockopt(fd, IPPROTO_IPV6, IPV6_JOIN_GROUP, &mr, sizeof mr) == 0;
        } else {
            ip_mreqn mr{};
            mr.imr_multiaddr.s_addr = htonl(group.v4);
            mr.imr_address.s_addr = htonl(local_ip_);
            mr.imr_ifindex = int(ifindex_);
            member = setsockopt(fd, IPPROTO_IP, IP_ADD_MEMBERSHIP, &mr, sizeof mr) == 0;
        }
    }
    if (member) return fd;
    close(fd);
    return -1;
}

// ---- leaving ----

// The socket that sends from [local6_[idx]]:sport (rxe's source-port rule
// holds for IPv6 too). The kernel writes hop limit 64, traffic class 0 (or
// the frame's, given with each datagram that has another) and no automatic
// flow label, as prepare() has them.
int UdpPort::tx_sock6(size_t idx, uint16_t sport) {
    const uint32_t key = uint32_t(idx) << 16 | sport;
    auto it = tx_socks6_.find(key);
    if (it != tx_socks6_.end()) return it->second;
    int fd = socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd >= 0) {
        const int one = 1, zero = 0, hops = 64, pmtu = IPV6_PMTUDISC_DO;
        setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
        setsockopt(fd, IPPROTO_IPV6, IPV6_UNICAST_HOPS, &hops, sizeof hops);
        setsockopt(fd, IPPROTO_IPV6, IPV6_TCLASS, &zero, sizeof zero);
        setsockopt(fd, IPPROTO_IPV6, IPV6_AUTOFLOWLABEL, &zero, sizeof zero);
        setsockopt(fd, IPPROTO_IPV6, IPV6_MTU_DISCOVER, &pmtu, sizeof pmtu);
        setsockopt(fd, IPPROTO_IP, IP_FREEBIND, &one, sizeof one);
        // A UD SEND to a multicast group: as tx_sock's for IPv4.
        const int ifindex = int(ifindex_);
        setsockopt(fd, IPPROTO_IPV6, IPV6_MULTICAST_IF, &ifindex, sizeof ifindex);
        setsockopt(fd, IPPROTO_IPV6, IPV6_MULTICAST_HOPS, &hops, sizeof hops);
        setsockopt(fd, IPPROTO_IPV6, IPV6_MULTICAST_LOOP, &one, sizeof one);
        sockaddr_in6 a6{};
        a6.sin6_family = AF_INET6;
        a6.sin6_port = htons(sport);
        std::memcpy(&a6.sin6_addr, local6_[idx].addr.data(), 16);
        a6.sin6_scope_id = local6_[idx].scope;
        fd = finish_tx_socket(fd, reinterpret_cast<sockaddr*>(&a6), sizeof a6, &a6.sin6_port);
    }
    tx_socks6_[key] = fd;
    return fd;
}

int UdpPort::tx_sock(uint16_t sport) {
    auto it = tx_socks_.find(sport);
    if (it != tx_socks_.end()) return it->second;
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd >= 0) {
        const int pmtu = IP_PMTUDISC_DO, ttl = 64;
        // DF set and an unconnected socket: the kernel sends IP ID 0, which the
        // ICRC covers (as rxe's packets have it).
        setsockopt(fd, IPPROTO_IP, IP_MTU_DISCOVER, &pmtu, sizeof pmtu);
        setsockopt(fd, IPPROTO_IP, IP_TTL, &ttl, sizeof ttl);
        // A UD SEND to a multicast group leaves through the netdev with the
        // same TTL (prepare), and reaches this host's members too.
        ip_mreqn mif{};
        mif.imr_address.s_addr = htonl(local_ip_);
        mif.imr_ifindex = int(ifindex_);
        const int loop = 1;
        setsockopt(fd, IPPROTO_IP, IP_MULTICAST_IF, &mif, sizeof mif);
        setsockopt(fd, IPPROTO_IP, IP_MULTICAST_TTL, &ttl, sizeof ttl);
        setsockopt(fd, IPPROTO_IP, IP_MULTICAST_LOOP, &loop, sizeof loop);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_port = htons(sport);
        a.sin_addr.s_addr = htonl(local_ip_);
        fd = finish_tx_socket(fd, reinterpret_cast<sockaddr*>(&a), sizeof a, &a.sin_port);
    }
    tx_socks_[sport] = fd;
    return fd;
}

// The header fields the kernel will write (see tx_sock, tx_sock6), so that
// the encoded frame is the one on the wire. The TOS / traffic class stays
// the address vector's: send() hands it to the kernel with the datagram.
void UdpPort::prepare(roce::Packet& pkt) {
    if (pkt.ip_version == roce::IpVersion::V4) {
        pkt.ip4.id = 0;
        pkt.ip4.frag = 0x4000;
        pkt.ip4.ttl = 64;
    } else {
        pkt.ip6.hop_limit = 64;
        pkt.ip6.flow_label = 0;
    }
}

// The frame's UDP payload goes to the socket of its source port; the kernel
// adds the IP and UDP headers prepare() encoded the same way.
bool UdpPort::send(const OutFrame& of) {
    const uint8_t* f = of.data;
    constexpr size_t l3 = roce::kEthHdrBytes;
    const size_t l4 = of.udp(), bth = of.bth();
    const uint16_t sport = uint16_t(f[l4] << 8 | f[l4 + 1]);
    const size_t end = std::min(of.len, of.ip_end);
    int fd = -1;
    sockaddr_storage to{};
    socklen_t to_len = 0;
    if (of.v6) {
        const int idx = local6_index(f + l3 + 8);  // the source must be one of ours
        if (idx >= 0) fd = tx_sock6(size_t(idx), sport);
        auto* d6 = reinterpret_cast<sockaddr_in6*>(&to);
        d6->sin6_family = AF_INET6;
        d6->sin6_port = htons(roce::kRoceV2Port);
        std::memcpy(&d6->sin6_addr, f + l3 + 24, 16);
        if (idx >= 0 && IN6_IS_ADDR_LINKLOCAL(&d6->sin6_addr)) d6->sin6_scope_id = local6_[size_t(idx)].scope;
        to_len = sizeof *d6;
    } else {
        fd = tx_sock(sport);
        auto* d4 = reinterpret_cast<sockaddr_in*>(&to);
        d4->sin_family = AF_INET;
        d4->sin_port = htons(roce::kRoceV2Port);
        std::memcpy(&d4->sin_addr, f + l3 + 16, 4);  // network order, as the frame has it
        to_len = sizeof *d4;
    }
    if (fd < 0) {
        sent_(end - bth, false, nullptr, 0);
        return false;
    }
    // Queued, and sent with one sendmmsg per socket after the step that
    // built it (or when the batch is full): a system call per step, not per
    // packet.
    TxFrame& it = tx_.next();
    it.fd = fd;
    it.dst = to;
    it.dst_len = to_len;
    if (of.owner && of.owner->data() == f) {
        // The engine's encoded frame changes hands (a copy of every byte
        // sent was 1.5% of the daemon's time under ib_write_bw -s 65536);
        // the queue's old buffer goes back to be encoded into.
        it.take(*of.owner, bth, end - bth);
    } else {
        it.assign(f + bth, end - bth);
    }
    it.counted = it.len;
    it.v6 = of.v6;
    it.tos = of.v6 ? uint8_t((f[l3] & 0x0F) << 4 | f[l3 + 1] >> 4) : f[l3 + 1];
    it.gso = gso_to(f + l3, of.v6);
    ++sent_since_rx_;
    if (tx_.pending() >= TxQueue::kBatch) flush();
    return true;
}

bool UdpPort::gso_to(const uint8_t* ip, bool v6) const {
    if (!tx_.gso_allowed()) return false;
    if (v6) {
        static const uint8_t kLoopback6[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
        return std::memcmp(ip + 24, kLoopback6, 16) == 0 || local6_index(ip + 24) >= 0;
    }
    const uint32_t dst = uint32_t(ip[16]) << 24 | uint32_t(ip[17]) << 16 | uint32_t(ip[18]) << 8 | ip[19];
    return dst >> 24 == 127 || dst == local_ip_;
}

void UdpPort::check_capture() {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    const uint64_t now = uint64_t(ts.tv_sec) * 1'000'000'000u + uint64_t(ts.tv_nsec);
    if (capture_checked_ns_ && now - capture_checked_ns_ < kCaptureCheckNs) return;
    capture_checked_ns_ = now;
    tx_.set_gso_allowed(!capture_open(ifindex_));
}

void UdpPort::flush() {
    tx_.flush();
    check_capture();  // for the next step's frames
    // The engine may send much more than a batch before it reads again (a
    // READ response of many packets, a deep queue of UC or UD SENDs, each
    // QP's step flushed on its own), and it may be sending to this very
    // device: on lo the kernel puts each datagram straight into the
    // receiving socket, whose buffer (rmem_max) holds a few MB, and beyond
    // that drops them (UDP RcvbufErrors). UC messages were then lost for
    // ever (ib_send_bw -c UC waited for them) and a large READ waited for
    // the retransmit timer at every burst (ib_read_lat -a from 4 MB on).
    // Taking what arrived off the sockets once a batch has gone since the
    // last read makes the device's receive ring as deep as its own bursts,
    // as rxe's in-kernel loopback is; a latency test's lone packets cost
    // no extra system call.
    if (sent_since_rx_ >= TxQueue::kBatch) {
        sent_since_rx_ = 0;
        stash_arrivals();
    }
}

void UdpPort::stash_arrivals() {
    // One recvmmsg per kRxBatch datagrams, into the stash's own buffers (the
    // receive ring's may be delivering the frame whose answer is being sent
    // now). Each datagram then goes into a backlog entry reused from the
    // entries already delivered: a large one by trading buffers with the
    // batch, a small one by a copy. No system call, no allocation and no
    // copy of a GRO datagram's payload per datagram on a long burst.
    if (stash_bufs_.empty()) {
        stash_bufs_.assign(kRxBatch, std::vector<uint8_t>(kRxBufBytes));
        stash_ctl_.resize(kRxBatch * kRxCtl);
    }
    const auto take = [](std::vector<Stashed>& pool) {
        Stashed st;
        if (!pool.empty()) {
            st = std::move(pool.back());
            pool.pop_back();
        }
        return st;
    };
    sockaddr_storage srcs[kRxBatch];
    iovec ivs[kRxBatch];
    mmsghdr msgs[kRxBatch];
    for (size_t sk = 0; sk < rx_socket_count(); ++sk) {
        const int fd = rx_socket(sk);
        if (fd < 0) continue;
        while (backlog_bytes_ < kBacklogBytes) {
            arm_batch(stash_bufs_, stash_ctl_, srcs, ivs, msgs);
            const int m = recvmmsg(fd, msgs, kRxBatch, MSG_DONTWAIT, nullptr);
            if (m <= 0) break;
            for (int i = 0; i < m; ++i) {
                const size_t n = msgs[i].msg_len;
                std::vector<uint8_t>& batch_buf = stash_bufs_[size_t(i)];
                Stashed st;
                if (n >= kStashSwapBytes) {
                    st = take(stash_whole_.empty() ? stash_spare_ : stash_whole_);
                    st.buf.swap(batch_buf);
                    // Only when no whole entry was spare: the batch's
                    // buffer grows back to whole size (an allocation).
                    if (batch_buf.size() != kRxBufBytes) batch_buf.resize(kRxBufBytes);
                } else {
                    st = take(stash_spare_);
                    st.buf.assign(batch_buf.data(), batch_buf.data() + kRoom + n);
                }
                const msghdr& mh = msgs[i].msg_hdr;
                st.sk = sk;
                st.n = n;
                st.src = srcs[i];
                const char* c = static_cast<const char*>(mh.msg_control);
                st.ctl.assign(c, c + mh.msg_controllen);
                backlog_bytes_ += st.buf.size();
                backlog_.push_back(std::move(st));
            }
            if (m < kRxBatch) break;
        }
    }
}

// Points the batch's headers at `bufs` (header room first) and `ctl`.
void UdpPort::arm_batch(std::vector<std::vector<uint8_t>>& bufs, std::vector<char>& ctl, sockaddr_storage* srcs,
                        iovec* ivs, mmsghdr* msgs) {
    for (int i = 0; i < kRxBatch; ++i) {
        srcs[i] = sockaddr_storage{};
        ivs[i] = iovec{bufs[size_t(i)].data() + kRoom, bufs[size_t(i)].size() - kRoom};
        msgs[i] = mmsghdr{};
        msgs[i].msg_hdr.msg_name = &srcs[i];
        msgs[i].msg_hdr.msg_namelen = sizeof srcs[i];
        msgs[i].msg_hdr.msg_iov = &ivs[i];
        msgs[i].msg_hdr.msg_iovlen = 1;
        msgs[i].msg_hdr.msg_control = ctl.data() + size_t(i) * kRxCtl;
        msgs[i].msg_hdr.msg_controllen = kRxCtl;
    }
}

// ---- arriving ----

// One IPv4 datagram, to `dst` (host order) unless its packet information
// names another address: the IPv4 and UDP headers the sender's kernel put in
// front, rebuilt from what recvmsg tells (rxe: DF, ID 0; the ICRC masks TTL,
// TOS and the checksums).
void UdpPort::receive4(uint8_t* pay, size_t n, msghdr& mh, const sockaddr_in& src, uint32_t dst, PortSink& sink) {
    constexpr size_t kHdr = roce::kIpv4HdrBytes + roce::kUdpHdrBytes;
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
    sink.rx_ip(ip, total);
}

// One IPv6 datagram, to `dst` unless its packet information names another
// address: its IPv6 and UDP headers (the ICRC masks traffic class, flow
// label, hop limit and the UDP checksum; the socket API does not give the
// flow label, which stays 0 here).
void UdpPort::receive6(uint8_t* pay, size_t n, msghdr& mh, const sockaddr_in6& src, const uint8_t* dst,
                       PortSink& sink) {
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
    sink.rx_ip(ip, hdr + n);
}

void UdpPort::deliver(size_t sk, uint8_t* pay, size_t n, msghdr& mh, const sockaddr_storage& src, PortSink& sink) {
    const IpAddr to = rx_socket_addr(sk);
    // A GRO datagram (UDP_GRO on the socket) holds several packets of
    // `seg` bytes, the last one maybe shorter: each is a datagram of its
    // own to the engine, with the same addresses, TTL and TOS (GRO merges
    // only packets whose headers agree, so a CE mark stays on its packet).
    size_t seg = n;
    for (cmsghdr* c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
        if (c->cmsg_level == SOL_UDP && c->cmsg_type == UDP_GRO) {
            int v = 0;
            std::memcpy(&v, CMSG_DATA(c), sizeof v);
            if (v > 0) seg = std::min(n, size_t(v));
        } else if (SocketDrops::is_count(*c)) {
            rx_drops_seen_[rx_socket(sk)].note(*c, rx_drops_);
        }
    }
    for (size_t off = 0; off < n; off += seg) {
        // Each packet's headers are rebuilt in front of it, over the end of
        // the packet before, which the engine is done with: it keeps
        // nothing of a packet past rx_ip (the receive buffers are reused
        // from one recvmmsg to the next on the same terms).
        const size_t len = std::min(seg, n - off);
        uint8_t* p = pay + off;
        if (to.version == roce::IpVersion::V4)
            receive4(p, len, mh, reinterpret_cast<const sockaddr_in&>(src), to.v4, sink);
        else
            receive6(p, len, mh, reinterpret_cast<const sockaddr_in6&>(src), to.v6.data(), sink);
    }
}

bool UdpPort::receive(PortSink& sink) {
    bool got = false;
    sent_since_rx_ = 0;
    // What was stashed while sending comes first: it arrived first. Bounded
    // as a socket's share below is; delivering may send, and stash more.
    for (int k = 0; k < 4 * kRxBatch && !backlog_.empty(); ++k) {
        Stashed st = std::move(backlog_.front());
        backlog_.pop_front();
        backlog_bytes_ -= st.buf.size();
        msghdr mh{};
        mh.msg_control = st.ctl.empty() ? nullptr : st.ctl.data();
        mh.msg_controllen = st.ctl.size();
        deliver(st.sk, st.buf.data() + kRoom, st.n, mh, st.src, sink);
        const bool whole = st.buf.size() == kRxBufBytes;
        std::vector<Stashed>& pool = whole ? stash_whole_ : stash_spare_;
        if (pool.size() < (whole ? kStashWhole : kStashSpare)) pool.push_back(std::move(st));
        got = true;
    }
    if (!backlog_.empty()) return got;  // the sockets' turn comes after the backlog's
    // One recvmmsg takes up to kRxBatch datagrams: a system call per batch,
    // not per packet. Each buffer keeps room for the IP and UDP headers the
    // kernel took off (IPv6's are the larger), which are rebuilt in front of
    // the payload.
    if (rx_bufs_.empty()) {
        rx_bufs_.assign(kRxBatch, std::vector<uint8_t>(kRxBufBytes));
        rx_ctl_.resize(kRxBatch * kRxCtl);
    }
    // Every socket of the port: IPv4, then each IPv6 address, then each
    // group (which come and go: a socket's poll record may pass to another
    // as they do, which costs at most one read early or late).
    const size_t count = rx_socket_count();
    if (rx_poll_.size() != count) rx_poll_.resize(count);
    const uint64_t now = base::mono_ns();
    for (size_t sk = 0; sk < count; ++sk) {
        const int fd = rx_socket(sk);
        if (fd < 0) continue;
        RxPoll& rp = rx_poll_[sk];
        if (now - rp.data_ns >= kRxHotNs && now - rp.read_ns < kRxColdPollNs) continue;
        rp.read_ns = now;
        for (int round = 0; round < 4; ++round) {
            // What the engine sent while delivering the last batch may have
            // stashed later arrivals (flush): they go before anything read
            // now. (Reading on put them behind newer datagrams: the
            // responder saw a PSN gap and NAKed, go-back-N resent, on
            // every burst of ib_write_bw -q 2 once a GRO datagram of a
            // whole message made one batch answer enough to stash.)
            if (!backlog_.empty()) return got;
            if (!rx_armed_) {
                arm_batch(rx_bufs_, rx_ctl_, rx_srcs_, rx_ivs_, rx_msgs_);
                rx_armed_ = true;
            }
            const int m = recvmmsg(fd, rx_msgs_, kRxBatch, MSG_DONTWAIT, nullptr);
            if (m <= 0) break;
            rx_armed_ = false;
            rp.data_ns = now;
            got = true;
            for (int i = 0; i < m; ++i)
                deliver(sk, rx_bufs_[size_t(i)].data() + kRoom, rx_msgs_[i].msg_len, rx_msgs_[i].msg_hdr,
                        rx_srcs_[i], sink);
            if (m < kRxBatch) break;
        }
    }
    return got;
}

}  // namespace

std::unique_ptr<Port> open_udp_port(const std::string& netdev, bool sockets, PortSent sent, std::string& err) {
    auto p = std::make_unique<UdpPort>(std::move(sent));
    if (!p->open(netdev, sockets, err)) return nullptr;
    return p;
}

}  // namespace simnic::soft_engine
