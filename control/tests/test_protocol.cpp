// The control protocol's messages on a real SOCK_SEQPACKET socket: how long
// a message the connection carries, and what a longer one gets.
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <algorithm>
#include <fstream>
#include <string>

#include "simnic/control/protocol.h"

using namespace simnic::control;

namespace {

// A message of exactly `n` bytes as send_message writes it (n >= 8).
Json message_of(size_t n) { return Json{{"a", std::string(n - 8, 'x')}}; }

struct Pair {
    int fd[2] = {-1, -1};
    Pair() { REQUIRE(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, fd) == 0); }
    ~Pair() {
        close(fd[0]);
        close(fd[1]);
    }
};

}  // namespace

TEST_CASE("protocol: a message as long as the send buffer carries goes out whole, one byte more is refused by name",
          "[protocol]") {
    Pair p;
    const int ask = 32 * 1024;  // the kernel doubles it: 64 KiB
    REQUIRE(setsockopt(p.fd[0], SOL_SOCKET, SO_SNDBUF, &ask, sizeof ask) == 0);
    const size_t cap = message_capacity(p.fd[0]);
    CHECK(cap == 2 * size_t(ask) - 32);
    REQUIRE(message_of(cap).dump().size() == cap);

    CHECK(send_message(p.fd[0], message_of(cap)).empty());
    Json got;
    REQUIRE(recv_message(p.fd[1], got, 1000).empty());
    CHECK(got == message_of(cap));

    // The kernel's EMSGSIZE, told as the protocol's own error; nothing
    // arrives, and the connection still carries the next message.
    CHECK(send_message(p.fd[0], message_of(cap + 1)) == "message too large");
    CHECK(send_message(p.fd[0], message_of(100)).empty());
    REQUIRE(recv_message(p.fd[1], got, 1000).empty());
    CHECK(got == message_of(100));
}

TEST_CASE("protocol: widen_send_buffer gets what net.core.wmem_max allows, up to kMaxMessageBytes", "[protocol]") {
    Pair p;
    size_t wmem_max = 0;
    std::ifstream("/proc/sys/net/core/wmem_max") >> wmem_max;
    REQUIRE(wmem_max > 0);
    widen_send_buffer(p.fd[0]);
    const size_t want = kMaxMessageBytes / 2 + 4096;
    const size_t expect = std::min(kMaxMessageBytes, 2 * std::min(want, wmem_max) - 32);
    CHECK(message_capacity(p.fd[0]) == expect);
    CHECK(send_message(p.fd[0], message_of(expect)).empty());
    Json got;
    REQUIRE(recv_message(p.fd[1], got, 1000).empty());
    CHECK(got.at("a").get_ref<const std::string&>().size() == expect - 8);
}
