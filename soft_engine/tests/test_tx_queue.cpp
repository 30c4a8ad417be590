// The MAC TX queue (tx_queue.h) on real UDP sockets on lo: frames leave in
// order and byte for byte, whether a run of equal-sized frames goes as one
// UDP GSO send or each alone; and what the kernel does with such a send at
// a receiver with and without UDP_GRO, which the UDP port relies on
// (udp_port.cc: deliver).
#include <netinet/in.h>
#include <netinet/udp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <cstring>
#include <vector>

#include "tx_queue.h"

#ifndef UDP_GRO
#define UDP_GRO 104
#endif

using namespace simnic::soft_engine;

namespace {

struct Sock {
    int fd = -1;
    sockaddr_storage addr{};
    socklen_t len = sizeof(sockaddr_in);
    explicit Sock(bool gro = false) {
        fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        REQUIRE(fd >= 0);
        const int big = 8 << 20, one = 1;
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &big, sizeof big);
        if (gro) REQUIRE(setsockopt(fd, SOL_UDP, UDP_GRO, &one, sizeof one) == 0);
        auto* a = reinterpret_cast<sockaddr_in*>(&addr);
        a->sin_family = AF_INET;
        a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        REQUIRE(bind(fd, reinterpret_cast<sockaddr*>(&addr), len) == 0);
        REQUIRE(getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0);
    }
    ~Sock() { close(fd); }
    // The next datagram (waiting up to 2 s), and its GRO segment size (0: none).
    std::vector<uint8_t> take(int* gso = nullptr) {
        pollfd p{fd, POLLIN, 0};
        if (poll(&p, 1, 2000) != 1) return {};
        std::vector<uint8_t> b(65536);
        iovec iv{b.data(), b.size()};
        char ctl[64] = {};
        msghdr mh{};
        mh.msg_iov = &iv;
        mh.msg_iovlen = 1;
        mh.msg_control = ctl;
        mh.msg_controllen = sizeof ctl;
        const ssize_t n = recvmsg(fd, &mh, MSG_DONTWAIT);
        if (n < 0) return {};
        if (gso) {
            *gso = 0;
            for (cmsghdr* c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c))
                if (c->cmsg_level == SOL_UDP && c->cmsg_type == UDP_GRO) std::memcpy(gso, CMSG_DATA(c), sizeof *gso);
        }
        b.resize(size_t(n));
        return b;
    }
};

std::vector<uint8_t> bytes(size_t n, unsigned seed) {
    std::vector<uint8_t> v(n);
    for (size_t i = 0; i < n; ++i) v[i] = uint8_t(seed * 31 + i * 7 + (i >> 9));
    return v;
}

struct Queued {
    std::vector<std::vector<uint8_t>> to_a, to_b;  // what each receiver must get, in order
};

// A WRITE's packets as the port queues them: FIRST with its RETH (longer),
// fifteen MIDDLE/LAST of 4112 bytes, a short ONLY, then a frame that may
// not go by GSO, then three frames to another receiver.
Queued fill(TxQueue& q, int fd, const Sock& a, const Sock& b) {
    Queued w;
    size_t n = 0;
    auto add = [&](const Sock& to, std::vector<uint8_t> data, bool gso) {
        TxFrame& t = q.next();
        t.fd = fd;
        t.dst = to.addr;
        t.dst_len = to.len;
        if (n++ % 2) {  // every other frame copied, the rest taken
            t.assign(data.data(), data.size());
        } else {
            // As the UDP port takes an encoded frame: the bytes sent start
            // after the frame's headers, in a buffer that changes hands.
            // Bytes past the end (an ICRC's place) are not sent either.
            std::vector<uint8_t> frame(42 + data.size() + 4, 0xEE);
            std::copy(data.begin(), data.end(), frame.begin() + 42);
            t.take(frame, 42, data.size());
        }
        t.counted = data.size();
        t.gso = gso;
        (&to == &a ? w.to_a : w.to_b).push_back(std::move(data));
    };
    add(a, bytes(4128, 1), true);
    for (unsigned i = 0; i < 15; ++i) add(a, bytes(4112, 10 + i), true);
    add(a, bytes(52, 99), true);
    add(a, bytes(4112, 100), false);
    for (unsigned i = 0; i < 3; ++i) add(b, bytes(200, 200 + i), true);
    return w;
}

}  // namespace

TEST_CASE("TX queue: frames leave in order and byte for byte, with GSO sends or without", "[tx_queue]") {
    const bool gso = GENERATE(false, true);
    INFO("GSO allowed: " << gso);
    Sock a, b, tx;
    size_t ok = 0, bad = 0;
    TxQueue q([&](const TxFrame&, bool good) { ++(good ? ok : bad); });
    q.set_gso_allowed(gso);
    const Queued w = fill(q, tx.fd, a, b);
    q.flush();
    CHECK(q.pending() == 0);
    CHECK(ok == w.to_a.size() + w.to_b.size());
    CHECK(bad == 0);
    // Without UDP_GRO the receiver gets each frame as its own datagram,
    // whether the kernel cut it from a GSO send or not.
    for (size_t i = 0; i < w.to_a.size(); ++i) {
        INFO("frame " << i << " to a");
        REQUIRE(a.take() == w.to_a[i]);
    }
    for (size_t i = 0; i < w.to_b.size(); ++i) REQUIRE(b.take() == w.to_b[i]);
    CHECK(q.gso_allowed() == gso);
}

TEST_CASE("TX queue: a GSO send reaches a receiver with UDP_GRO whole, its segment size with it", "[tx_queue]") {
    Sock a(true), b(true), tx;
    TxQueue q([](const TxFrame&, bool) {});
    q.set_gso_allowed(true);
    const Queued w = fill(q, tx.fd, a, b);
    q.flush();
    // Runs of frames, each no longer than its first and all but the last
    // as long, went as GSO sends: FIRST with the MIDDLE after it (segment
    // 4128, the second shorter), the other fourteen with the short one
    // (segment 4112); the frame that may not go by GSO went alone. Cut at
    // their segment sizes, the datagrams are the frames, in order.
    std::vector<std::vector<uint8_t>> got;
    std::vector<int> segs;
    while (got.size() < w.to_a.size()) {
        int gso = 0;
        const std::vector<uint8_t> d = a.take(&gso);
        REQUIRE(!d.empty());
        segs.push_back(gso);
        const size_t cut = gso > 0 ? size_t(gso) : d.size();
        for (size_t off = 0; off < d.size(); off += cut)
            got.emplace_back(d.begin() + long(off), d.begin() + long(std::min(d.size(), off + cut)));
    }
    CHECK(got == w.to_a);
    CHECK(segs == std::vector<int>{4128, 4112, 0});
    int gso = 0;
    std::vector<uint8_t> d;
    // Three of 200 bytes to b: one GSO send, the last as long as the others.
    d = b.take(&gso);
    CHECK(d.size() == 600);
    CHECK(gso == 200);
}
