// The wire port (port.h): the device as a NIC on an Ethernet segment of
// whole frames, one frame per UDP datagram to the segment's hub (`simnic
// wire`, the rig's wire; see simnic/wire/hub.h for the join protocol). No
// host stack is behind it, so it is what the netdev and the kernel are for a
// netdev-bound device:
//
// - its own MAC and addresses: one IPv4 address with its subnet, the IPv6
//   link-local address the kernel forms from the MAC (EUI-64), and any
//   other IPv6 addresses given;
// - a receive filter on the destination MAC (its own, broadcast, the
//   solicited-node multicast of each of its IPv6 addresses and all-nodes),
//   as a NIC on a hub needs;
// - ARP and IPv6 neighbour discovery: it answers requests and solicitations
//   for its addresses (arp_process, ndisc_recv_ns), learns from what it
//   hears, and resolves its peers itself (neighbour_table.h: the kernel's
//   NUD states, retries and bounded queue), the frames built by the packet
//   core's codec (simnic/roce/neighbour.h);
// - the IP header fields kernel rxe writes (prepare): DF and the IPv4
//   identification of __ip_select_ident (simnic/roce/ip_ident.h), the flow
//   label 0 of prepare_ipv6_hdr; TTL and TOS as the address vector says.
//
// RoCE v2 frames to its addresses go to the engine whole (PortSink::rx_frame)
// and the frames the engine sends leave with the resolved MACs in their
// Ethernet header; both are in the device's capture as they were on the
// wire. Threads: everything runs on the engine thread (under its lock)
// except neighbour(), which the firmware calls on the control thread; the
// neighbour table has its own lock for that.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <mutex>

#include "neighbour_table.h"
#include "port.h"
#include "simnic/base/clock.h"
#include "simnic/roce/bytes.h"
#include "simnic/roce/ip_ident.h"
#include "simnic/roce/neighbour.h"
#include "tx_queue.h"

namespace simnic::soft_engine {

namespace {

using Key = NeighbourTable::Key;
using Action = NeighbourTable::Action;
using roce::MacAddr;

Key key_v4(uint32_t ip) {
    return Key{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, uint8_t(ip >> 24), uint8_t(ip >> 16), uint8_t(ip >> 8),
               uint8_t(ip)};
}
bool key_is_v4(const Key& k) {
    static constexpr uint8_t kMapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    return std::memcmp(k.data(), kMapped, 12) == 0;
}
uint32_t v4_of(const Key& k) { return roce::load_be32(k.data() + 12); }

// Whether the first `prefix` bits of a and b agree.
bool same_prefix(const uint8_t* a, const uint8_t* b, unsigned prefix) {
    for (unsigned i = 0; i < prefix / 8; ++i)
        if (a[i] != b[i]) return false;
    const unsigned rest = prefix % 8;
    if (rest == 0) return true;
    const uint8_t m = uint8_t(0xff << (8 - rest));
    return (a[prefix / 8] & m) == (b[prefix / 8] & m);
}

class WirePort final : public Port {
public:
    WirePort(const WireConfig& w, PortSent sent);
    ~WirePort() override;
    bool open(std::string& err);

    uint32_t ipv4() const override { return w_.ipv4; }
    bool is_local(const IpAddr& a) const override {
        return a.version == roce::IpVersion::V4 ? a.v4 == w_.ipv4 : local6(a.v6.data()) >= 0;
    }
    std::optional<MacAddr> neighbour(const IpAddr& a) override;
    void prepare(roce::Packet& pkt) override;
    bool send(const OutFrame& f) override;
    bool captures_sent() const override { return true; }
    void flush() override { tx_.flush(); }
    bool receive(PortSink& sink) override;
    uint64_t rx_overflow_drops() const override { return rx_drops_; }
    bool rx_pending() const override { return !looped_.empty(); }
    std::vector<int> fds() const override { return {fd_, timer_fd_}; }
    bool set_group(const IpAddr& group, bool join) override;

private:
    struct Addr6 {
        roce::Ipv6Addr addr{};
        uint8_t prefix = 64;
    };
    int local6(const uint8_t* a) const {
        for (size_t i = 0; i < addr6_.size(); ++i)
            if (std::memcmp(addr6_[i].addr.data(), a, 16) == 0) return int(i);
        return -1;
    }
    // The neighbour an address is reached through, if it is on the segment
    // (no routers here: an address outside the subnets is unreachable).
    bool on_link(const IpAddr& a, Key& k) const;
    // The source of a solicitation for `target` (ipv6_dev_get_saddr: an
    // address of the target's prefix, else the link-local one).
    const roce::Ipv6Addr& source_for(const roce::Ipv6Addr& target) const;
    bool wanted(const uint8_t* dst_mac) const;
    void receive_frame(const uint8_t* f, size_t len, PortSink& sink);
    void on_arp(const uint8_t* f, size_t len);
    void on_nd(const uint8_t* f, size_t len);
    // Carries out what the table decided (the engine thread, except for
    // solicitations, which any thread may send).
    void act(std::vector<Action>& acts);
    void solicit(const Key& a, bool unicast, const MacAddr& mac);
    void send_control(const std::vector<uint8_t>& frame);
    void queue_frame(const uint8_t* f, size_t len, const MacAddr& dst, size_t counted);
    void rearm_locked();  // mu_ held

    WireConfig w_;
    MacAddr mac_{};
    std::vector<Addr6> addr6_;  // the link-local address first
    std::vector<MacAddr> mcast_;  // solicited-node MACs of addr6_, and all-nodes
    // The multicast groups the device joined (set_group): their addresses,
    // which RoCE v2 may be addressed to, and their MACs, which the filter
    // takes (dev_mc_add, as rxe_mcast_add does).
    std::vector<IpAddr> groups_;
    std::vector<MacAddr> group_macs_;
    // What this device sent to a group it is in: the hub never gives a
    // frame back to its sender, but the host's own members get a copy, as
    // the kernel loops a multicast packet back to its sender's host
    // (ip_mc_output). Handed to the engine by the next receive().
    std::vector<std::vector<uint8_t>> looped_;
    bool in_group(const IpAddr& a) const {
        return std::find(groups_.begin(), groups_.end(), a) != groups_.end();
    }
    PortSent sent_;
    int fd_ = -1, timer_fd_ = -1;
    TxQueue tx_;
    roce::IpIdentGenerator ident_;

    std::mutex mu_;  // table_, armed_'s writes, acts_
    NeighbourTable table_;
    std::atomic<uint64_t> armed_{0};  // the deadline timer_fd_ is set to; 0: none
    std::vector<Action> acts_, ctl_acts_;

    static constexpr int kRxBatch = 16;
    std::vector<std::vector<uint8_t>> rx_bufs_;
    std::vector<uint8_t> ctl_buf_;
    // The socket's drop count, and its growth.
    SocketDrops rx_drops_seen_;
    uint64_t rx_drops_ = 0;
};

WirePort::WirePort(const WireConfig& w, PortSent sent)
    : w_(w),
      sent_(sent),
      tx_([sent](const TxFrame& t, bool ok) { sent(t.counted, ok, t.bytes(), t.len); }),
      // Seeded from the MAC: a device's IDs and reachable times replay.
      ident_(roce::load_be32(w.mac.data()) ^ (uint64_t(roce::load_be16(w.mac.data() + 4)) << 32)),
      table_(NeighbourTable::Params{}, roce::load_be32(w.mac.data() + 2) + 1) {
    std::copy(w.mac.begin(), w.mac.end(), mac_.begin());
    addr6_.push_back(Addr6{roce::ipv6_link_local(mac_), 64});
    for (const auto& [a, p] : w.ipv6)
        if (local6(a.data()) < 0) addr6_.push_back(Addr6{a, p});
    for (const Addr6& a : addr6_) mcast_.push_back(roce::ipv6_multicast_mac(roce::solicited_node(a.addr)));
    mcast_.push_back(roce::ipv6_multicast_mac(roce::kIpv6AllNodes));
}

WirePort::~WirePort() {
    if (fd_ >= 0) close(fd_);
    if (timer_fd_ >= 0) close(timer_fd_);
}

bool WirePort::open(std::string& err) {
    char hub[INET_ADDRSTRLEN] = {};
    const uint32_t hub_n = htonl(w_.hub_ip);
    inet_ntop(AF_INET, &hub_n, hub, sizeof hub);
    const std::string where = std::string(hub) + ":" + std::to_string(w_.hub_port);
    fd_ = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    timer_fd_ = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
    if (fd_ < 0 || timer_fd_ < 0) {
        err = std::string("socket: ") + std::strerror(errno);
        return false;
    }
    // A burst of a message's packets from the other members must not
    // overflow the socket before the engine's next pass.
    const int big = 8 << 20;
    setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &big, sizeof big);
    setsockopt(fd_, SOL_SOCKET, SO_SNDBUF, &big, sizeof big);
    // What overflows it all the same is counted (rx_overflow_drops).
    SocketDrops::enable(fd_);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(w_.hub_port);
    a.sin_addr.s_addr = hub_n;
    if (connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
        err = "cannot reach the wire " + where + ": " + std::strerror(errno);
        return false;
    }
    // Join: a zero-length datagram makes this socket a member. A hub that is
    // not there answers with an ICMP port unreachable at once (on this
    // host), which the connected socket reports.
    if (::send(fd_, "", 0, 0) != 0) {
        err = "cannot join the wire " + where + ": " + std::strerror(errno);
        return false;
    }
    pollfd p{fd_, POLLIN, 0};
    if (poll(&p, 1, 100) > 0 && (p.revents & POLLERR)) {
        int e = 0;
        socklen_t el = sizeof e;
        getsockopt(fd_, SOL_SOCKET, SO_ERROR, &e, &el);
        err = "nothing listens on the wire " + where + " (" + std::strerror(e) +
              "; start one with `simnic wire --port " + std::to_string(w_.hub_port) + "`)";
        return false;
    }
    return true;
}

bool WirePort::on_link(const IpAddr& a, Key& k) const {
    if (a.version == roce::IpVersion::V4) {
        const uint32_t mask = w_.prefix == 0 ? 0 : ~uint32_t(0) << (32 - w_.prefix);
        if ((a.v4 & mask) != (w_.ipv4 & mask) || a.v4 == w_.ipv4) return false;
        k = key_v4(a.v4);
        return true;
    }
    if (roce::is_ipv6_multicast(a.v6) || roce::is_ipv6_unspecified(a.v6)) return false;
    bool ok = roce::is_ipv6_link_local(a.v6);
    for (const Addr6& l : addr6_) ok = ok || same_prefix(l.addr.data(), a.v6.data(), l.prefix);
    if (!ok || local6(a.v6.data()) >= 0) return false;
    k = a.v6;
    return true;
}

const roce::Ipv6Addr& WirePort::source_for(const roce::Ipv6Addr& target) const {
    if (!roce::is_ipv6_link_local(target))
        for (size_t i = 1; i < addr6_.size(); ++i)
            if (same_prefix(addr6_[i].addr.data(), target.data(), addr6_[i].prefix)) return addr6_[i].addr;
    return addr6_[0].addr;
}

void WirePort::rearm_locked() {
    const uint64_t d = table_.next_deadline();
    if (d == armed_.load(std::memory_order_relaxed)) return;
    itimerspec its{};
    if (d) {
        its.it_value.tv_sec = time_t(d / 1000000000ull);
        its.it_value.tv_nsec = long(d % 1000000000ull);
    }
    timerfd_settime(timer_fd_, TFD_TIMER_ABSTIME, &its, nullptr);
    armed_.store(d, std::memory_order_relaxed);
}

// ---- neighbours ----

std::optional<MacAddr> WirePort::neighbour(const IpAddr& a) {
    Key k{};
    if (!on_link(a, k)) return std::nullopt;
    std::lock_guard<std::mutex> lk(mu_);
    // Only solicitations come of a lookup (no frame waits on it), and those
    // may leave from this thread.
    ctl_acts_.clear();
    const std::optional<MacAddr> m = table_.resolve(k, base::mono_ns(), ctl_acts_);
    for (const Action& x : ctl_acts_)
        if (x.kind == Action::Kind::Solicit) solicit(x.addr, x.unicast, x.mac);
    rearm_locked();
    return m;
}

// An ARP request, or a neighbour solicitation to the target's
// solicited-node group (a unicast one to `mac` when probing), as Linux
// sends them.
void WirePort::solicit(const Key& a, bool unicast, const MacAddr& mac) {
    if (key_is_v4(a)) {
        roce::ArpPacket p;
        p.eth_dst = unicast ? mac : roce::kBroadcastMac;
        p.eth_src = mac_;
        p.op = roce::ArpOp::Request;
        p.sha = mac_;
        p.spa = w_.ipv4;
        p.tpa = v4_of(a);
        std::vector<uint8_t> f;
        roce::encode_arp(p, f);
        send_control(f);
        return;
    }
    roce::NdPacket p;
    p.type = roce::NdType::Solicitation;
    p.target = a;
    p.src = source_for(a);
    p.dst = unicast ? a : roce::solicited_node(a);
    p.eth_dst = unicast ? mac : roce::ipv6_multicast_mac(p.dst);
    p.eth_src = mac_;
    p.has_lladdr = true;
    p.lladdr = mac_;
    std::vector<uint8_t> f;
    roce::encode_nd(p, f);
    send_control(f);
}

// ARP and ND frames leave at once (any thread: one datagram on a UDP socket
// is atomic); they are neither RoCE traffic nor in the device's capture.
void WirePort::send_control(const std::vector<uint8_t>& frame) {
    if (::send(fd_, frame.data(), frame.size(), MSG_DONTWAIT) < 0) { /* the wire is gone: a retry will tell */ }
}

void WirePort::act(std::vector<Action>& acts) {
    for (Action& x : acts) {
        switch (x.kind) {
            case Action::Kind::Solicit: solicit(x.addr, x.unicast, x.mac); break;
            case Action::Kind::Send:
                queue_frame(x.held.frame.data(), x.held.frame.size(), x.mac, x.held.counted);
                break;
            case Action::Kind::Drop: sent_(x.held.counted, false, nullptr, 0); break;
        }
    }
    acts.clear();
}

// ---- leaving ----

// The fields kernel rxe writes into the IP header it builds
// (prepare_ipv4_hdr, prepare_ipv6_hdr): DF and the kernel's IPv4
// identification; IPv6 without a flow label. TTL, TOS, hop limit and traffic
// class stay as the address vector set them.
void WirePort::prepare(roce::Packet& pkt) {
    if (pkt.ip_version == roce::IpVersion::V4) {
        pkt.ip4.frag = 0x4000;
        pkt.ip4.id = ident_.next(pkt.ip4.src, pkt.ip4.dst, base::mono_ns());
    } else {
        pkt.ip6.flow_label = 0;
    }
}

void WirePort::queue_frame(const uint8_t* f, size_t len, const MacAddr& dst, size_t counted) {
    TxFrame& t = tx_.next();
    t.fd = fd_;
    t.dst_len = 0;  // the hub: the socket is connected
    t.assign(f, len);
    std::copy(dst.begin(), dst.end(), t.data.begin());
    std::copy(mac_.begin(), mac_.end(), t.data.begin() + 6);
    t.counted = counted;
    if (tx_.pending() >= TxQueue::kBatch) tx_.flush();
}

bool WirePort::send(const OutFrame& o) {
    const size_t end = std::min(o.len, o.ip_end);
    const size_t counted = end - o.bth();
    IpAddr d;
    const uint8_t* ip = o.ip();
    if (o.v6) {
        d.version = roce::IpVersion::V6;
        std::memcpy(d.v6.data(), ip + 24, 16);
    } else {
        d.v4 = roce::load_be32(ip + 16);
    }
    // To a group: its MAC, no neighbour to resolve (ip_eth_mc_map).
    if (o.v6 ? roce::is_ipv6_multicast(d.v6) : (d.v4 >> 28) == 0xE) {
        const MacAddr gmac = o.v6 ? roce::ipv6_multicast_mac(d.v6) : roce::ipv4_multicast_mac(d.v4);
        std::lock_guard<std::mutex> lk(mu_);
        queue_frame(o.data, end, gmac, counted);
        if (in_group(d)) {
            std::vector<uint8_t> f(o.data, o.data + end);
            std::copy(gmac.begin(), gmac.end(), f.begin());
            std::copy(mac_.begin(), mac_.end(), f.begin() + 6);
            looped_.push_back(std::move(f));
        }
        return true;
    }
    Key k{};
    if (!on_link(d, k)) {
        sent_(counted, false, nullptr, 0);
        return false;
    }
    MacAddr mac{};
    std::lock_guard<std::mutex> lk(mu_);
    if (table_.output(k, base::mono_ns(), mac, acts_)) {
        queue_frame(o.data, end, mac, counted);
    } else {
        // It waits for the neighbour, with our MAC already in place.
        NeighbourTable::Held h;
        h.frame.assign(o.data, o.data + end);
        std::copy(mac_.begin(), mac_.end(), h.frame.begin() + 6);
        h.counted = counted;
        table_.hold(k, std::move(h), acts_);
    }
    act(acts_);
    rearm_locked();
    return true;
}

// ---- arriving ----

bool WirePort::set_group(const IpAddr& group, bool join) {
    const MacAddr mac = group.version == roce::IpVersion::V4 ? roce::ipv4_multicast_mac(group.v4)
                                                              : roce::ipv6_multicast_mac(group.v6);
    if (join == in_group(group)) return join;
    if (join) {
        groups_.push_back(group);
        group_macs_.push_back(mac);  // one per group: two groups may share a MAC
        return true;
    }
    const auto i = std::find(groups_.begin(), groups_.end(), group) - groups_.begin();
    groups_.erase(groups_.begin() + i);
    group_macs_.erase(group_macs_.begin() + i);
    return true;
}

bool WirePort::wanted(const uint8_t* dst) const {
    if (std::equal(mac_.begin(), mac_.end(), dst) || std::equal(roce::kBroadcastMac.begin(), roce::kBroadcastMac.end(), dst))
        return true;
    for (const MacAddr& m : mcast_)
        if (std::equal(m.begin(), m.end(), dst)) return true;
    for (const MacAddr& m : group_macs_)
        if (std::equal(m.begin(), m.end(), dst)) return true;
    return false;
}

// ARP as arp_process() does it: a request for our address is answered
// (also a duplicate-address probe from 0.0.0.0) and teaches us its sender;
// a reply to us confirms; anything else only corrects a known entry.
void WirePort::on_arp(const uint8_t* f, size_t len) {
    roce::ArpPacket a;
    if (roce::decode_arp(f, len, a) != roce::NeighError::Ok || a.sha == mac_) return;
    const bool for_us = a.tpa == w_.ipv4;
    if (a.op == roce::ArpOp::Request && for_us) {
        roce::ArpPacket r;
        r.eth_dst = a.sha;
        r.eth_src = mac_;
        r.op = roce::ArpOp::Reply;
        r.sha = mac_;
        r.spa = w_.ipv4;
        r.tha = a.sha;
        r.tpa = a.spa;
        roce::encode_arp(r, ctl_buf_);
        send_control(ctl_buf_);
    }
    if (a.spa == 0) return;  // a probe teaches nothing
    const NeighbourTable::Evidence ev =
        a.op == roce::ArpOp::Reply && a.eth_dst == mac_ ? NeighbourTable::Evidence::Answer
        : a.op == roce::ArpOp::Request && for_us        ? NeighbourTable::Evidence::Asked
                                                        : NeighbourTable::Evidence::Overheard;
    std::lock_guard<std::mutex> lk(mu_);
    table_.learn(key_v4(a.spa), a.sha, ev, base::mono_ns(), acts_);
    act(acts_);
    rearm_locked();
}

// Neighbour discovery as ndisc_recv_ns() / ndisc_recv_na() do it.
void WirePort::on_nd(const uint8_t* f, size_t len) {
    roce::NdPacket n;
    if (roce::decode_nd(f, len, n) != roce::NeighError::Ok || n.eth_src == mac_) return;
    const uint64_t now = base::mono_ns();
    if (n.type == roce::NdType::Solicitation) {
        if (local6(n.target.data()) < 0) return;
        const bool dad = roce::is_ipv6_unspecified(n.src);
        // A multicast solicitation gets our MAC and the override flag, a
        // unicast one (a probe) neither; one from :: (duplicate address
        // detection) is answered to all nodes, unsolicited.
        const bool multicast = roce::is_ipv6_multicast(n.dst);
        roce::NdPacket r;
        r.type = roce::NdType::Advertisement;
        r.src = n.target;
        r.dst = dad ? roce::kIpv6AllNodes : n.src;
        r.eth_dst = dad ? roce::ipv6_multicast_mac(roce::kIpv6AllNodes) : n.has_lladdr ? n.lladdr : n.eth_src;
        r.eth_src = mac_;
        r.solicited = !dad;
        r.override_flag = multicast;
        r.target = n.target;
        r.has_lladdr = multicast;
        r.lladdr = mac_;
        roce::encode_nd(r, ctl_buf_);
        send_control(ctl_buf_);
        if (dad || !n.has_lladdr) return;
        std::lock_guard<std::mutex> lk(mu_);
        table_.learn(n.src, n.lladdr, NeighbourTable::Evidence::Asked, now, acts_);
        act(acts_);
        rearm_locked();
        return;
    }
    // An advertisement: a solicited one to us confirms; an unsolicited one
    // with the override flag corrects a known entry. Without a target
    // link-layer option it can only confirm the MAC we have.
    std::lock_guard<std::mutex> lk(mu_);
    MacAddr mac = n.lladdr;
    if (!n.has_lladdr) {
        const std::optional<MacAddr> have = table_.known(n.target);
        if (!have) return;
        mac = *have;
    }
    if (n.solicited && !roce::is_ipv6_multicast(n.dst))
        table_.learn(n.target, mac, NeighbourTable::Evidence::Answer, now, acts_);
    else if (n.override_flag)
        table_.learn(n.target, mac, NeighbourTable::Evidence::Overheard, now, acts_);
    act(acts_);
    rearm_locked();
}

// One frame from the wire: ours (by destination MAC), then ARP, ND, or
// RoCE v2 to one of our addresses, handed to the engine without any
// Ethernet padding; everything else is another member's business.
void WirePort::receive_frame(const uint8_t* f, size_t len, PortSink& sink) {
    if (len < roce::kEthHdrBytes || !wanted(f)) return;
    const uint16_t et = roce::load_be16(f + 12);
    const uint8_t* ip = f + roce::kEthHdrBytes;
    const size_t room = len - roce::kEthHdrBytes;
    if (et == roce::kEtherTypeArp) return on_arp(f, len);
    if (et == roce::kEtherTypeIpv4) {
        if (room < roce::kIpv4HdrBytes || (ip[0] >> 4) != 4) return;
        const size_t ihl = size_t(ip[0] & 0xf) * 4, total = roce::load_be16(ip + 2);
        IpAddr to;
        to.v4 = roce::load_be32(ip + 16);
        if (ip[9] != roce::kIpProtoUdp || ihl < roce::kIpv4HdrBytes || total > room ||
            total < ihl + roce::kUdpHdrBytes || (to.v4 != w_.ipv4 && !in_group(to)) ||
            roce::load_be16(ip + ihl + 2) != roce::kRoceV2Port)
            return;
        sink.rx_frame(f, roce::kEthHdrBytes + total);
        return;
    }
    if (et == roce::kEtherTypeIpv6) {
        if (room < roce::kIpv6HdrBytes + roce::kUdpHdrBytes || (ip[0] >> 4) != 6) return;
        if (ip[6] == roce::kIpProtoIcmpv6) return on_nd(f, len);
        const size_t total = roce::kIpv6HdrBytes + roce::load_be16(ip + 4);
        IpAddr to;
        to.version = roce::IpVersion::V6;
        std::memcpy(to.v6.data(), ip + 24, 16);
        if (ip[6] != roce::kIpProtoUdp || total > room || (local6(ip + 24) < 0 && !in_group(to)) ||
            roce::load_be16(ip + roce::kIpv6HdrBytes + 2) != roce::kRoceV2Port)
            return;
        sink.rx_frame(f, roce::kEthHdrBytes + total);
    }
}

bool WirePort::receive(PortSink& sink) {
    // Timers first: retransmitted requests, entries going stale, giving up.
    if (const uint64_t d = armed_.load(std::memory_order_relaxed); d && base::mono_ns() >= d) {
        uint64_t v;
        if (::read(timer_fd_, &v, sizeof v) < 0) { /* not expired yet: level-triggered epoll will say */ }
        std::lock_guard<std::mutex> lk(mu_);
        table_.tick(base::mono_ns(), acts_);
        act(acts_);
        armed_.store(0, std::memory_order_relaxed);  // timerfd fired: disarmed
        rearm_locked();
    }
    bool got = !looped_.empty();
    if (got) {
        // Delivering may send, and loop more: those wait for the next call.
        std::vector<std::vector<uint8_t>> mine;
        mine.swap(looped_);
        for (const auto& f : mine) sink.rx_frame(f.data(), f.size());
    }
    if (rx_bufs_.empty()) rx_bufs_.assign(kRxBatch, std::vector<uint8_t>(65536));
    iovec ivs[kRxBatch];
    mmsghdr msgs[kRxBatch];
    alignas(cmsghdr) char ctl[kRxBatch][CMSG_SPACE(sizeof(uint32_t))];
    for (int round = 0; round < 4; ++round) {
        for (int i = 0; i < kRxBatch; ++i) {
            ivs[i] = iovec{rx_bufs_[size_t(i)].data(), rx_bufs_[size_t(i)].size()};
            msgs[i] = mmsghdr{};
            msgs[i].msg_hdr.msg_iov = &ivs[i];
            msgs[i].msg_hdr.msg_iovlen = 1;
            msgs[i].msg_hdr.msg_control = ctl[i];
            msgs[i].msg_hdr.msg_controllen = sizeof ctl[i];
        }
        const int m = recvmmsg(fd_, msgs, kRxBatch, MSG_DONTWAIT, nullptr);
        if (m <= 0) break;
        got = true;
        for (int i = 0; i < m; ++i) {
            for (cmsghdr* c = CMSG_FIRSTHDR(&msgs[i].msg_hdr); c; c = CMSG_NXTHDR(&msgs[i].msg_hdr, c))
                if (SocketDrops::is_count(*c)) rx_drops_seen_.note(*c, rx_drops_);
            receive_frame(rx_bufs_[size_t(i)].data(), msgs[i].msg_len, sink);
        }
        if (m < kRxBatch) break;
    }
    return got;
}

}  // namespace

std::unique_ptr<Port> open_wire_port(const WireConfig& w, PortSent sent, std::string& err) {
    auto p = std::make_unique<WirePort>(w, std::move(sent));
    if (!p->open(err)) return nullptr;
    return p;
}

}  // namespace simnic::soft_engine
