// The hub with real UDP members on lo: who gets what, faults on the way,
// captures and counters.
#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "simnic/roce/pcap_io.h"
#include "simnic/wire/hub.h"

using namespace simnic::wire;

namespace {

// A member: a UDP socket on 127.0.0.1 that joins the hub.
struct Member {
    int fd = -1;
    uint8_t mac_last;
    sockaddr_in hub{};
    Member(uint16_t hub_port, uint8_t last) : mac_last(last) {
        fd = socket(AF_INET, SOCK_DGRAM, 0);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        REQUIRE(bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
        hub.sin_family = AF_INET;
        hub.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        hub.sin_port = htons(hub_port);
        send_raw({});  // join
    }
    ~Member() { close(fd); }
    void send_raw(const std::vector<uint8_t>& f) {
        REQUIRE(sendto(fd, f.data(), f.size(), 0, reinterpret_cast<sockaddr*>(&hub), sizeof hub) ==
                ssize_t(f.size()));
    }
    // A frame from this member to `dst_last`, tagged with `tag` in its payload.
    void send(uint8_t dst_last, uint8_t tag) {
        std::vector<uint8_t> f(80, 0);
        const uint8_t base[5] = {0x52, 0x54, 0, 0x12, 0x34};
        std::copy(base, base + 5, f.begin());
        f[5] = dst_last;
        std::copy(base, base + 5, f.begin() + 6);
        f[11] = mac_last;
        f[12] = 0x08;
        f[14] = 0x45, f[23] = 17, f[36] = 0x12, f[37] = 0xB7;  // IPv4, UDP to 4791: what the rules take
        f[40] = tag;
        send_raw(f);
    }
    // Frames received within `ms` (tags, in arrival order).
    std::vector<int> recv_tags(int ms = 300) {
        std::vector<int> tags;
        uint8_t buf[2048];
        const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
        for (;;) {
            const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end - std::chrono::steady_clock::now());
            if (left.count() <= 0) break;
            pollfd p{fd, POLLIN, 0};
            if (poll(&p, 1, int(left.count())) <= 0) break;
            const ssize_t n = recv(fd, buf, sizeof buf, 0);
            if (n >= 41) tags.push_back(buf[40]);
        }
        return tags;
    }
};

struct RunningHub {
    Hub hub;
    std::atomic<bool> stop{false};
    std::thread t;
    explicit RunningHub(HubOptions o) {
        std::string err;
        REQUIRE(hub.open(o, err));
        t = std::thread([this] { hub.run(stop); });
    }
    ~RunningHub() { finish(); }
    void finish() {
        if (!t.joinable()) return;
        stop = true;
        t.join();
    }
};

FaultRule rule(const std::string& text) {
    FaultRule r;
    std::string err;
    REQUIRE(parse_rule(text, r, err));
    return r;
}

size_t pcap_count(const std::string& path) {
    std::string err;
    auto r = simnic::roce::PcapReader::open(path, err);
    REQUIRE(r);
    simnic::roce::PcapRecord rec;
    size_t n = 0;
    while (r->next(rec)) ++n;
    return n;
}

}  // namespace

TEST_CASE("wire hub: every frame reaches every other member, never its sender") {
    RunningHub h(HubOptions{});
    Member a(h.hub.port(), 1), b(h.hub.port(), 2), c(h.hub.port(), 3);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // the joins arrive
    for (int i = 0; i < 10; ++i) a.send(2, uint8_t(i));
    const std::vector<int> want{0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
    CHECK(b.recv_tags() == want);
    CHECK(c.recv_tags() == want);  // a hub: C sees frames for B and filters itself
    CHECK(a.recv_tags(100).empty());
    h.finish();
    CHECK(h.hub.stats().frames_in == 10);
    CHECK(h.hub.stats().frames_out == 20);
    CHECK(h.hub.stats().joins == 3);
}

TEST_CASE("wire hub: faults apply per direction, duplicates, drops and reordering arrive as decided") {
    const std::string dir = "/tmp/simnic-wire-test-" + std::to_string(getpid());
    REQUIRE(system(("mkdir -p " + dir).c_str()) == 0);
    HubOptions o;
    o.faults = {rule("from=52:54:00:12:34:01,dup=100%"), rule("from=52:54:00:12:34:02,drop=100%"),
                rule("from=52:54:00:12:34:03,reorder=100%,hold=1s")};
    o.pcap = dir + "/in.pcap";
    o.pcap_delivered = dir + "/out.pcap";
    o.stats_file = dir + "/stats.json";
    RunningHub h(o);
    Member a(h.hub.port(), 1), b(h.hub.port(), 2), c(h.hub.port(), 3);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    a.send(2, 1);  // duplicated
    std::vector<int> got = b.recv_tags();
    CHECK(got == std::vector<int>{1, 1});
    c.recv_tags(50);
    b.send(1, 2);  // dropped
    CHECK(a.recv_tags(150).empty());
    c.recv_tags(50);
    // Reorder 100%: each frame is held until the next one has gone, so
    // pairs arrive swapped.
    c.send(1, 10);
    c.send(1, 11);
    c.send(1, 12);
    c.send(1, 13);
    CHECK(a.recv_tags() == std::vector<int>{11, 10, 13, 12});
    h.finish();
    CHECK(pcap_count(o.pcap) == 6);           // what was sent: 1 + 1 + 4
    CHECK(pcap_count(o.pcap_delivered) == 6);  // what went out: 2 + 0 + 4 (each once, to all)
    const auto& f = h.hub.stats().faults;
    REQUIRE(f.size() == 3);
    CHECK(f[0].duplicated == 1);
    CHECK(f[1].dropped == 1);
    CHECK(f[2].reordered == 2);
    FILE* s = std::fopen(o.stats_file.c_str(), "r");
    REQUIRE(s);
    char line[2048] = {};
    CHECK(std::fgets(line, sizeof line, s) != nullptr);
    std::fclose(s);
    CHECK(std::string(line).find("\"dropped\":1") != std::string::npos);
    REQUIRE(system(("rm -rf " + dir).c_str()) == 0);
}

TEST_CASE("wire hub: the captures and the counters can be read while the wire runs") {
    const std::string dir = "/tmp/simnic-wire-live-" + std::to_string(getpid());
    REQUIRE(system(("mkdir -p " + dir).c_str()) == 0);
    HubOptions o;
    o.faults = {rule("drop=100%")};
    o.pcap = dir + "/in.pcap";
    o.stats_file = dir + "/stats.json";
    RunningHub h(o);
    Member a(h.hub.port(), 1), b(h.hub.port(), 2);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    for (int i = 0; i < 5; ++i) a.send(2, uint8_t(i));
    CHECK(b.recv_tags(100).empty());
    // Within the 200 ms the hub allows itself, both show the five frames.
    std::string stats;
    for (int tries = 0; tries < 20 && stats.find("\"dropped\":5") == std::string::npos; ++tries) {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        if (FILE* s = std::fopen(o.stats_file.c_str(), "r")) {
            char line[2048] = {};
            stats = std::fgets(line, sizeof line, s) ? line : "";
            std::fclose(s);
        }
    }
    CHECK(stats.find("\"running\":true") != std::string::npos);
    CHECK(stats.find("\"frames_in\":5") != std::string::npos);
    CHECK(stats.find("\"dropped\":5") != std::string::npos);
    CHECK(pcap_count(o.pcap) == 5);
    h.finish();
    FILE* s = std::fopen(o.stats_file.c_str(), "r");
    REQUIRE(s);
    char line[2048] = {};
    CHECK(std::fgets(line, sizeof line, s) != nullptr);
    std::fclose(s);
    CHECK(std::string(line).find("\"running\":false") != std::string::npos);
    REQUIRE(system(("rm -rf " + dir).c_str()) == 0);
}

TEST_CASE("wire hub: a delayed frame arrives no sooner than its delay") {
    HubOptions o;
    o.faults = {rule("delay=80ms")};
    RunningHub h(o);
    Member a(h.hub.port(), 1), b(h.hub.port(), 2);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    const auto t0 = std::chrono::steady_clock::now();
    a.send(2, 5);
    pollfd p{b.fd, POLLIN, 0};
    REQUIRE(poll(&p, 1, 2000) == 1);
    const auto dt = std::chrono::steady_clock::now() - t0;
    CHECK(dt >= std::chrono::milliseconds(80));
    CHECK(b.recv_tags(100) == std::vector<int>{5});
}

TEST_CASE("wire hub: a port in use is a clear error") {
    HubOptions o;
    RunningHub h(o);
    Hub second;
    HubOptions o2;
    o2.port = h.hub.port();
    std::string err;
    CHECK_FALSE(second.open(o2, err));
    CHECK(err.find("cannot bind UDP 127.0.0.1:" + std::to_string(h.hub.port())) != std::string::npos);
}
