// The wire port's neighbour logic: the table's NUD states with the time
// driven by hand (resolution, retries, giving up, the bounded queue,
// reachability going stale and being probed, what is learned from what),
// and the port itself on a hub played by this test (a UDP socket on lo):
// joining, answering ARP and neighbour solicitations for its addresses and
// for nothing else, resolving a peer before a frame leaves, the receive
// filter, the IPv4 identification it writes.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <cstring>
#include <vector>

#include "neighbour_table.h"
#include "port.h"
#include "simnic/roce/neighbour.h"
#include "simnic/roce/opcode.h"
#include "simnic/roce/packet.h"

using namespace simnic;
using namespace simnic::soft_engine;
using Kind = NeighbourTable::Action::Kind;
using State = NeighbourTable::State;
using Ev = NeighbourTable::Evidence;

namespace {

constexpr uint64_t kS = 1'000'000'000;

NeighbourTable::Key v4(uint8_t last) { return {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, last}; }
const roce::MacAddr kPeer{0x52, 0x54, 0x00, 0x5e, 0x00, 0x01};
const roce::MacAddr kOther{0x52, 0x54, 0x00, 0x5e, 0x00, 0x02};

NeighbourTable::Held frame(uint8_t tag, size_t n = 100) {
    NeighbourTable::Held h;
    h.frame.assign(n, tag);
    h.counted = n - 42;
    return h;
}

size_t count(const std::vector<NeighbourTable::Action>& a, Kind k) {
    size_t n = 0;
    for (const auto& x : a) n += x.kind == k;
    return n;
}

}  // namespace

TEST_CASE("neighbour table: resolving, three requests a second apart, then FAILED and the queue dropped",
          "[wire][neighbour]") {
    NeighbourTable t({}, 1);
    std::vector<NeighbourTable::Action> a;
    const uint64_t t0 = 100 * kS;
    CHECK_FALSE(t.resolve(v4(1), t0, a));
    REQUIRE(a.size() == 1);
    CHECK(a[0].kind == Kind::Solicit);
    CHECK_FALSE(a[0].unicast);
    CHECK(a[0].addr == v4(1));
    CHECK(t.state(v4(1)) == State::Incomplete);
    CHECK(t.next_deadline() == t0 + kS);
    a.clear();
    // Frames wait; asking again sends nothing more before the timer.
    roce::MacAddr mac{};
    CHECK_FALSE(t.output(v4(1), t0 + 1, mac, a));
    t.hold(v4(1), frame(1), a);
    t.hold(v4(1), frame(2), a);
    CHECK(a.empty());
    CHECK(t.queued(v4(1)) == 2);
    t.tick(t0 + kS / 2, a);
    CHECK(a.empty());
    t.tick(t0 + kS, a);
    CHECK(count(a, Kind::Solicit) == 1);
    t.tick(t0 + 2 * kS, a);
    CHECK(count(a, Kind::Solicit) == 2);
    a.clear();
    t.tick(t0 + 3 * kS, a);
    // Given up: the waiting frames are reported dropped, in order.
    REQUIRE(a.size() == 2);
    CHECK(a[0].kind == Kind::Drop);
    CHECK(a[0].held.frame[0] == 1);
    CHECK(a[0].held.counted == 58);
    CHECK(a[1].held.frame[0] == 2);
    CHECK(t.state(v4(1)) == State::Failed);
    CHECK(t.next_deadline() == 0);
    a.clear();
    // The next use starts over, with a request at once.
    CHECK_FALSE(t.resolve(v4(1), t0 + 10 * kS, a));
    CHECK(count(a, Kind::Solicit) == 1);
    CHECK(t.state(v4(1)) == State::Incomplete);
}

TEST_CASE("neighbour table: an answer releases the waiting frames in order", "[wire][neighbour]") {
    NeighbourTable t({}, 1);
    std::vector<NeighbourTable::Action> a;
    roce::MacAddr mac{};
    CHECK_FALSE(t.output(v4(2), kS, mac, a));
    for (uint8_t i = 1; i <= 3; ++i) t.hold(v4(2), frame(i), a);
    a.clear();
    t.learn(v4(2), kPeer, Ev::Answer, kS + 1000, a);
    REQUIRE(a.size() == 3);
    for (uint8_t i = 0; i < 3; ++i) {
        CHECK(a[i].kind == Kind::Send);
        CHECK(a[i].mac == kPeer);
        CHECK(a[i].held.frame[0] == i + 1);
    }
    CHECK(t.state(v4(2)) == State::Reachable);
    CHECK(t.known(v4(2)) == kPeer);
    a.clear();
    CHECK(t.output(v4(2), kS + 2000, mac, a));
    CHECK(mac == kPeer);
    CHECK(a.empty());
}

TEST_CASE("neighbour table: the queue is bounded, the oldest frames go first", "[wire][neighbour]") {
    NeighbourTable::Params p;
    p.queue_bytes = 1000;
    NeighbourTable t(p, 1);
    std::vector<NeighbourTable::Action> a;
    roce::MacAddr mac{};
    t.output(v4(3), kS, mac, a);
    a.clear();
    for (uint8_t i = 1; i <= 12; ++i) t.hold(v4(3), frame(i, 100), a);
    REQUIRE(count(a, Kind::Drop) == 2);
    CHECK(a[0].held.frame[0] == 1);
    CHECK(a[1].held.frame[0] == 2);
    CHECK(t.queued(v4(3)) == 10);
    a.clear();
    t.hold(v4(3), frame(99, 2000), a);  // larger than the whole queue
    REQUIRE(count(a, Kind::Drop) == 11);
    CHECK(a.back().held.frame[0] == 99);
}

TEST_CASE("neighbour table: REACHABLE goes STALE, use moves it to DELAY, then PROBE by unicast", "[wire][neighbour]") {
    NeighbourTable t({}, 5);
    std::vector<NeighbourTable::Action> a;
    roce::MacAddr mac{};
    t.resolve(v4(4), kS, a);
    const uint64_t t0 = 2 * kS;
    t.learn(v4(4), kPeer, Ev::Answer, t0, a);
    // The reachable time is drawn from [15 s, 45 s).
    const uint64_t d = t.next_deadline();
    CHECK(d >= t0 + 15 * kS);
    CHECK(d < t0 + 45 * kS);
    t.tick(d, a);
    CHECK(t.state(v4(4)) == State::Stale);
    CHECK(t.next_deadline() == 0);
    a.clear();
    // Still used as it is; the first use starts the check.
    CHECK(t.output(v4(4), d + kS, mac, a));
    CHECK(mac == kPeer);
    CHECK(t.state(v4(4)) == State::Delay);
    CHECK(t.next_deadline() == d + 6 * kS);
    t.tick(d + 6 * kS, a);
    CHECK(t.state(v4(4)) == State::Probe);
    REQUIRE(a.size() == 1);
    CHECK(a[0].kind == Kind::Solicit);
    CHECK(a[0].unicast);
    CHECK(a[0].mac == kPeer);
    // Frames still go while probing.
    CHECK(t.output(v4(4), d + 6 * kS + 1, mac, a));
    // Confirmed: REACHABLE again.
    t.learn(v4(4), kPeer, Ev::Answer, d + 6 * kS + 2, a);
    CHECK(t.state(v4(4)) == State::Reachable);

    // The other outcome: three unicast probes unanswered, then FAILED.
    NeighbourTable u({}, 5);
    a.clear();
    u.resolve(v4(5), kS, a);
    u.learn(v4(5), kPeer, Ev::Asked, kS, a);  // STALE from a request to us
    CHECK(u.state(v4(5)) == State::Stale);
    CHECK(u.output(v4(5), 2 * kS, mac, a));
    a.clear();
    u.tick(7 * kS, a);
    u.tick(8 * kS, a);
    u.tick(9 * kS, a);
    CHECK(count(a, Kind::Solicit) == 3);
    for (const auto& x : a) CHECK(x.unicast);
    u.tick(10 * kS, a);
    CHECK(u.state(v4(5)) == State::Failed);
    CHECK_FALSE(u.known(v4(5)));
}

TEST_CASE("neighbour table: what is learned from what", "[wire][neighbour]") {
    NeighbourTable t({}, 1);
    std::vector<NeighbourTable::Action> a;
    // Replies and overheard frames create nothing (arp_accept off).
    t.learn(v4(6), kPeer, Ev::Answer, kS, a);
    t.learn(v4(7), kPeer, Ev::Overheard, kS, a);
    CHECK_FALSE(t.state(v4(6)));
    CHECK_FALSE(t.state(v4(7)));
    // A request to us does: STALE.
    t.learn(v4(8), kPeer, Ev::Asked, kS, a);
    CHECK(t.state(v4(8)) == State::Stale);
    CHECK(t.known(v4(8)) == kPeer);
    // The same MAC again changes nothing; a new one replaces it (STALE).
    t.learn(v4(8), kPeer, Ev::Answer, 2 * kS, a);
    CHECK(t.state(v4(8)) == State::Reachable);
    t.learn(v4(8), kPeer, Ev::Overheard, 3 * kS, a);
    CHECK(t.state(v4(8)) == State::Reachable);
    t.learn(v4(8), kOther, Ev::Overheard, 4 * kS, a);
    CHECK(t.state(v4(8)) == State::Stale);
    CHECK(t.known(v4(8)) == kOther);
    // A request to us from a peer we were resolving completes it.
    roce::MacAddr mac{};
    a.clear();
    t.output(v4(9), kS, mac, a);
    t.hold(v4(9), frame(7), a);
    a.clear();
    t.learn(v4(9), kPeer, Ev::Asked, kS + 10, a);
    REQUIRE(count(a, Kind::Send) == 1);
    CHECK(t.state(v4(9)) == State::Delay);  // STALE, and a frame just left
}

// ---- the port on a hub played by the test ----

namespace {

struct Hub {
    int fd = -1;
    uint16_t port = 0;
    sockaddr_in member{};
    Hub() {
        fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        REQUIRE(bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
        socklen_t l = sizeof a;
        getsockname(fd, reinterpret_cast<sockaddr*>(&a), &l);
        port = ntohs(a.sin_port);
    }
    ~Hub() { close(fd); }
    // The next datagram within `ms`; empty optional if none.
    std::optional<std::vector<uint8_t>> next(int ms = 500) {
        pollfd p{fd, POLLIN, 0};
        if (poll(&p, 1, ms) <= 0) return std::nullopt;
        std::vector<uint8_t> b(65536);
        socklen_t l = sizeof member;
        const ssize_t n = recvfrom(fd, b.data(), b.size(), 0, reinterpret_cast<sockaddr*>(&member), &l);
        REQUIRE(n >= 0);
        b.resize(size_t(n));
        return b;
    }
    void send(const std::vector<uint8_t>& f) {
        REQUIRE(sendto(fd, f.data(), f.size(), 0, reinterpret_cast<const sockaddr*>(&member), sizeof member) ==
                ssize_t(f.size()));
    }
};

struct Sink final : PortSink {
    std::vector<std::vector<uint8_t>> frames;
    void rx_ip(const uint8_t*, size_t) override { FAIL("a wire port hands whole frames"); }
    void rx_frame(const uint8_t* f, size_t n) override { frames.emplace_back(f, f + n); }
};

// Lets the port take what the hub sent (40 ms of receive passes).
void pump(Port& p, Sink& s) {
    for (int i = 0; i < 20; ++i) {
        p.receive(s);
        usleep(2000);
    }
}

const roce::MacAddr kMine{0x02, 0x00, 0x00, 0x00, 0x00, 0x0a};
constexpr uint32_t kMyIp = 0x0a00000a, kPeerIp = 0x0a000001;

WireConfig config(uint16_t hub_port) {
    WireConfig w;
    w.hub_ip = INADDR_LOOPBACK;
    w.hub_port = hub_port;
    w.mac = kMine;
    w.ipv4 = kMyIp;
    w.prefix = 24;
    w.ipv6.push_back({{0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x0a}, 64});
    return w;
}

// A RoCE frame (an RC SEND ONLY) from src to dst as the engine encodes it.
std::vector<uint8_t> roce_frame(uint32_t src, uint32_t dst, const roce::MacAddr& smac, const roce::MacAddr& dmac) {
    roce::Packet p;
    p.eth.src = smac;
    p.eth.dst = dmac;
    p.ip4.src = src;
    p.ip4.dst = dst;
    p.udp.sport = 0xc121;
    p.hdr.bth.opcode = roce::op::RC_SEND_ONLY;
    p.hdr.bth.dqpn = 0x11;
    static const uint8_t payload[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    p.payload = payload;
    p.payload_len = sizeof payload;
    std::vector<uint8_t> f;
    REQUIRE(roce::encode_frame(p, f));
    return f;
}

}  // namespace

TEST_CASE("wire port: joins, answers ARP and ND for its addresses only, resolves before sending",
          "[wire][port]") {
    Hub hub;
    struct Sent {
        size_t bytes;
        bool ok;
        std::vector<uint8_t> frame;
    };
    std::vector<Sent> sent;
    std::string err;
    auto port = open_wire_port(
        config(hub.port),
        [&](size_t b, bool ok, const uint8_t* f, size_t n) {
            sent.push_back({b, ok, f ? std::vector<uint8_t>(f, f + n) : std::vector<uint8_t>{}});
        },
        err);
    REQUIRE(port);
    CHECK(port->captures_sent());
    // Joined: a zero-length datagram.
    auto j = hub.next();
    REQUIRE(j);
    CHECK(j->empty());
    Sink sink;

    // ARP for its address: answered; for another: not.
    roce::ArpPacket q;
    q.eth_dst = roce::kBroadcastMac;
    q.eth_src = kPeer;
    q.sha = kPeer;
    q.spa = kPeerIp;
    q.tpa = 0x0a000063;
    std::vector<uint8_t> f;
    roce::encode_arp(q, f);
    hub.send(f);
    q.tpa = kMyIp;
    roce::encode_arp(q, f);
    hub.send(f);
    pump(*port, sink);
    auto r = hub.next();
    REQUIRE(r);
    roce::ArpPacket a;
    REQUIRE(roce::decode_arp(r->data(), r->size(), a) == roce::NeighError::Ok);
    CHECK(a.op == roce::ArpOp::Reply);
    CHECK(a.eth_dst == kPeer);
    CHECK(a.eth_src == kMine);
    CHECK(a.sha == kMine);
    CHECK(a.spa == kMyIp);
    CHECK(a.tha == kPeer);
    CHECK(a.tpa == kPeerIp);
    CHECK_FALSE(hub.next(100));  // nothing for 10.0.0.99

    // Neighbour solicitation for its link-local address and its fd00::a:
    // answered; for another address: not.
    const roce::Ipv6Addr peer_ll = roce::ipv6_link_local(kPeer);
    for (const roce::Ipv6Addr& target :
         {roce::ipv6_link_local(kMine), roce::Ipv6Addr{0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x0b},
          roce::Ipv6Addr{0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x0a}}) {
        roce::NdPacket ns;
        ns.type = roce::NdType::Solicitation;
        ns.src = peer_ll;
        ns.dst = roce::solicited_node(target);
        ns.eth_dst = roce::ipv6_multicast_mac(ns.dst);
        ns.eth_src = kPeer;
        ns.target = target;
        ns.has_lladdr = true;
        ns.lladdr = kPeer;
        roce::encode_nd(ns, f);
        hub.send(f);
        pump(*port, sink);
        auto na = hub.next(100);
        if (target[15] == 0x0b) {
            CHECK_FALSE(na);
            continue;
        }
        REQUIRE(na);
        roce::NdPacket n;
        REQUIRE(roce::decode_nd(na->data(), na->size(), n) == roce::NeighError::Ok);
        CHECK(n.type == roce::NdType::Advertisement);
        CHECK(n.target == target);
        CHECK(n.src == target);
        CHECK(n.dst == peer_ll);
        CHECK(n.eth_dst == kPeer);
        CHECK(n.solicited);
        CHECK(n.override_flag);
        CHECK(n.has_lladdr);
        CHECK(n.lladdr == kMine);
    }

    // The firmware asks for a peer: ARP request broadcast, nothing known yet.
    IpAddr peer2;
    peer2.v4 = 0x0a000002;
    CHECK_FALSE(port->neighbour(peer2));
    r = hub.next();
    REQUIRE(r);
    REQUIRE(roce::decode_arp(r->data(), r->size(), a) == roce::NeighError::Ok);
    CHECK(a.op == roce::ArpOp::Request);
    CHECK(a.eth_dst == roce::kBroadcastMac);
    CHECK(a.spa == kMyIp);
    CHECK(a.tpa == 0x0a000002u);
    CHECK(a.tha == roce::MacAddr{});
    // Off the segment: no answer and no request (no router here).
    IpAddr far;
    far.v4 = 0x0b000001;
    CHECK_FALSE(port->neighbour(far));
    CHECK_FALSE(hub.next(100));

    // A frame to 10.0.0.2 waits for the reply, then leaves with its MAC.
    std::vector<uint8_t> rf = roce_frame(kMyIp, 0x0a000002, roce::MacAddr{}, roce::MacAddr{});
    OutFrame o;
    o.data = rf.data();
    o.len = rf.size();
    o.ip_end = rf.size();
    CHECK(port->send(o));
    port->flush();
    CHECK_FALSE(hub.next(100));
    roce::ArpPacket rep;
    rep.eth_dst = kMine;
    rep.eth_src = kOther;
    rep.op = roce::ArpOp::Reply;
    rep.sha = kOther;
    rep.spa = 0x0a000002;
    rep.tha = kMine;
    rep.tpa = kMyIp;
    roce::encode_arp(rep, f);
    hub.send(f);
    pump(*port, sink);
    port->flush();
    r = hub.next();
    REQUIRE(r);
    REQUIRE(r->size() == rf.size());
    CHECK(std::equal(kOther.begin(), kOther.end(), r->begin()));
    CHECK(std::equal(kMine.begin(), kMine.end(), r->begin() + 6));
    CHECK(std::equal(rf.begin() + 12, rf.end(), r->begin() + 12));
    CHECK(port->neighbour(peer2) == kOther);
    REQUIRE(sent.size() == 1);
    CHECK(sent[0].ok);
    CHECK(sent[0].bytes == rf.size() - 42);
    CHECK(sent[0].frame == *r);  // the capture gets the frame as it left

    // Off the segment: dropped, counted.
    rf = roce_frame(kMyIp, 0x0b000001, roce::MacAddr{}, roce::MacAddr{});
    o.data = rf.data();
    CHECK_FALSE(port->send(o));
    REQUIRE(sent.size() == 2);
    CHECK_FALSE(sent[1].ok);

    // The receive filter: RoCE to our IPv4 and MAC comes whole, Ethernet
    // padding aside; to another MAC, another address or another UDP port not.
    sink.frames.clear();
    rf = roce_frame(0x0a000002, kMyIp, kOther, kMine);
    hub.send(rf);
    std::vector<uint8_t> padded = rf;
    padded.resize(rf.size() + 6, 0);
    hub.send(padded);
    hub.send(roce_frame(0x0a000002, kMyIp, kOther, kPeer));
    hub.send(roce_frame(0x0a000002, 0x0a000063, kOther, kMine));
    std::vector<uint8_t> not_roce = rf;
    not_roce[14 + 20 + 3] = 0x99;  // UDP destination port
    hub.send(not_roce);
    pump(*port, sink);
    REQUIRE(sink.frames.size() == 2);
    CHECK(sink.frames[0] == rf);
    CHECK(sink.frames[1] == rf);

    // prepare(): DF and an identification counting up per destination.
    roce::Packet p;
    p.ip4.src = kMyIp;
    p.ip4.dst = 0x0a000002;
    p.ip4.frag = 0;
    port->prepare(p);
    CHECK(p.ip4.frag == 0x4000);
    const uint16_t id0 = p.ip4.id;
    port->prepare(p);
    CHECK(p.ip4.id == uint16_t(id0 + 1));
    CHECK(port->is_local(IpAddr{roce::IpVersion::V4, kMyIp, {}}));
    CHECK_FALSE(port->is_local(IpAddr{roce::IpVersion::V4, 0x0a000002, {}}));
}

TEST_CASE("wire port: a wire nobody listens on is an error at once", "[wire][port]") {
    uint16_t dead = 0;
    {
        Hub h;  // a free port, closed again
        dead = h.port;
    }
    std::string err;
    auto port = open_wire_port(config(dead), [](size_t, bool, const uint8_t*, size_t) {}, err);
    CHECK_FALSE(port);
    CHECK(err.find("nothing listens on the wire 127.0.0.1:" + std::to_string(dead)) != std::string::npos);
}
