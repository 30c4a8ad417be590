// The life cycle of rdma_cm event channels and IDs as librdmacm and the
// kernel's ucma file give it, from an ordinary librdmacm program (run under
// `simnic exec` by run_verbs_integrity.sh, device on lo). The case behind
// issue 12's "rdma_get_cm_event: No such device" under CPU load: rping's
// event thread goes on calling rdma_get_cm_event while its main thread
// destroys the ID and the channel; it must wait, not fail.
#include <infiniband/sa.h>
#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>
#include <arpa/inet.h>
#include <fcntl.h>
#include <poll.h>
#include <netinet/in.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <future>
#include <thread>

#include <catch2/catch.hpp>

namespace {

sockaddr_in loopback(uint16_t port) {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    return a;
}

uint16_t some_port() { return static_cast<uint16_t>(20000 + std::rand() % 20000); }

// rdma_get_cm_event on `ch` in a thread of its own (left running: it may
// never return); the future says if and how it did.
std::future<int> get_event_in_thread(rdma_event_channel* ch) {
    auto p = std::make_shared<std::promise<int>>();
    auto f = p->get_future();
    std::thread([ch, p] {
        rdma_cm_event* ev = nullptr;
        const int rc = rdma_get_cm_event(ch, &ev);
        p->set_value(rc == 0 ? 0 : errno);
    }).detach();
    return f;
}

bool still_waiting(std::future<int>& f, int ms) {
    return f.wait_for(std::chrono::milliseconds(ms)) == std::future_status::timeout;
}

// A call that should still be waiting; if it returned, how.
void check_waiting(std::future<int>& f, int ms) {
    if (still_waiting(f, ms)) return;
    const int e = f.get();
    FAIL("rdma_get_cm_event returned: " << (e == 0 ? std::string("an event") : std::strerror(e)));
}

}  // namespace

TEST_CASE("a thread waiting on a channel that is destroyed keeps waiting", "[cm]") {
    rdma_event_channel* ch = rdma_create_event_channel();
    REQUIRE(ch != nullptr);
    rdma_cm_id* id = nullptr;
    REQUIRE(rdma_create_id(ch, &id, nullptr, RDMA_PS_TCP) == 0);
    sockaddr_in a = loopback(some_port());
    REQUIRE(rdma_bind_addr(id, reinterpret_cast<sockaddr*>(&a)) == 0);
    REQUIRE(id->verbs != nullptr);  // bound to the simnic device
    auto waiting = get_event_in_thread(ch);
    REQUIRE(still_waiting(waiting, 100));
    REQUIRE(rdma_destroy_id(id) == 0);
    rdma_destroy_event_channel(ch);
    // As with the kernel's ucma file, whose read holds the file: nothing
    // comes, and nothing fails.
    check_waiting(waiting, 300);
}

// The next event on `ch`, which must be `type`.
rdma_cm_event* expect_event(rdma_event_channel* ch, rdma_cm_event_type type) {
    rdma_cm_event* ev = nullptr;
    REQUIRE(rdma_get_cm_event(ch, &ev) == 0);
    INFO(rdma_event_str(ev->event) << " (status " << ev->status << ")");
    REQUIRE(ev->event == type);
    return ev;
}

TEST_CASE("an event for a destroyed channel's waiting thread is not an error", "[cm]") {
    // A connection without QPs between two IDs of this process.
    const uint16_t port = some_port();
    rdma_event_channel* chs = rdma_create_event_channel();
    rdma_event_channel* chc = rdma_create_event_channel();
    REQUIRE(chs != nullptr);
    REQUIRE(chc != nullptr);
    rdma_cm_id* listener = nullptr;
    rdma_cm_id* client = nullptr;
    REQUIRE(rdma_create_id(chs, &listener, nullptr, RDMA_PS_TCP) == 0);
    REQUIRE(rdma_create_id(chc, &client, nullptr, RDMA_PS_TCP) == 0);
    sockaddr_in a = loopback(port);
    REQUIRE(rdma_bind_addr(listener, reinterpret_cast<sockaddr*>(&a)) == 0);
    REQUIRE(rdma_listen(listener, 1) == 0);
    REQUIRE(rdma_resolve_addr(client, nullptr, reinterpret_cast<sockaddr*>(&a), 2000) == 0);
    rdma_ack_cm_event(expect_event(chc, RDMA_CM_EVENT_ADDR_RESOLVED));
    REQUIRE(rdma_resolve_route(client, 2000) == 0);
    rdma_ack_cm_event(expect_event(chc, RDMA_CM_EVENT_ROUTE_RESOLVED));
    rdma_conn_param p{};
    p.qp_num = 0x123;
    p.retry_count = 7;
    p.rnr_retry_count = 7;
    REQUIRE(rdma_connect(client, &p) == 0);
    rdma_cm_event* req = expect_event(chs, RDMA_CM_EVENT_CONNECT_REQUEST);
    rdma_cm_id* server = req->id;
    rdma_ack_cm_event(req);
    p.qp_num = 0x456;
    REQUIRE(rdma_accept(server, &p) == 0);
    rdma_ack_cm_event(expect_event(chc, RDMA_CM_EVENT_CONNECT_RESPONSE));
    REQUIRE(rdma_establish(client) == 0);
    rdma_ack_cm_event(expect_event(chs, RDMA_CM_EVENT_ESTABLISHED));
    // The client's event thread waits; its channel is destroyed under it
    // (the ID is not: the application is late with it, as rping is); then
    // the server disconnects, and the client's DISCONNECTED arrives on the
    // destroyed channel. It used to wake the waiting thread on a closed
    // descriptor and fail it with ENODEV. (The server's own DISCONNECTED
    // waits for a DREP the client sends only when it disconnects or goes,
    // as with the kernel's rdma_cm: it is not waited for here.)
    auto waiting = get_event_in_thread(chc);
    REQUIRE(still_waiting(waiting, 100));
    rdma_destroy_event_channel(chc);
    REQUIRE(rdma_disconnect(server) == 0);
    check_waiting(waiting, 300);
    REQUIRE(rdma_destroy_id(server) == 0);
    REQUIRE(rdma_destroy_id(listener) == 0);
    rdma_destroy_event_channel(chs);
}

TEST_CASE("a call on a channel already destroyed waits too", "[cm]") {
    rdma_event_channel* ch = rdma_create_event_channel();
    REQUIRE(ch != nullptr);
    rdma_destroy_event_channel(ch);
    // rping's event thread does this when its main thread wins the race:
    // it used to reach the real librdmacm, which has no kernel rdma_cm
    // here and said ENODEV.
    auto late = get_event_in_thread(ch);
    check_waiting(late, 300);
}

TEST_CASE("rdma_destroy_id waits until the events it handed out are acked", "[cm]") {
    rdma_event_channel* ch = rdma_create_event_channel();
    REQUIRE(ch != nullptr);
    rdma_cm_id* id = nullptr;
    REQUIRE(rdma_create_id(ch, &id, nullptr, RDMA_PS_TCP) == 0);
    sockaddr_in dst = loopback(some_port());
    REQUIRE(rdma_resolve_addr(id, nullptr, reinterpret_cast<sockaddr*>(&dst), 2000) == 0);
    rdma_cm_event* ev = nullptr;
    REQUIRE(rdma_get_cm_event(ch, &ev) == 0);
    CHECK(ev->event == RDMA_CM_EVENT_ADDR_RESOLVED);
    CHECK(ev->id == id);
    std::promise<int> done_p;
    auto done = done_p.get_future();
    std::thread destroyer([&] { done_p.set_value(rdma_destroy_id(id)); });
    CHECK(still_waiting(done, 200));  // the event is still the application's
    REQUIRE(rdma_ack_cm_event(ev) == 0);
    REQUIRE(done.wait_for(std::chrono::seconds(2)) == std::future_status::ready);
    CHECK(done.get() == 0);
    destroyer.join();
    rdma_destroy_event_channel(ch);
}

TEST_CASE("a non-blocking channel with nothing queued says EAGAIN", "[cm]") {
    rdma_event_channel* ch = rdma_create_event_channel();
    REQUIRE(ch != nullptr);
    rdma_cm_event* ev = nullptr;
    const int fl = fcntl(ch->fd, F_GETFL);
    REQUIRE(fcntl(ch->fd, F_SETFL, fl | O_NONBLOCK) == 0);
    CHECK(rdma_get_cm_event(ch, &ev) == -1);
    CHECK(errno == EAGAIN);
    rdma_destroy_event_channel(ch);
}

// ucma_set_option_id's lengths: the ToS one byte, REUSEADDR and AFONLY an
// int, else EINVAL; an option or level it does not know ENOSYS. (What the
// ToS does is rdmacm.ucmatose_tos's and simnic_cm_tests [tos]'s.)
TEST_CASE("rdma_set_option: the ToS takes one byte, REUSEADDR an int, unknown options ENOSYS", "[cm][option]") {
    rdma_event_channel* ch = rdma_create_event_channel();
    REQUIRE(ch != nullptr);
    rdma_cm_id* id = nullptr;
    REQUIRE(rdma_create_id(ch, &id, nullptr, RDMA_PS_TCP) == 0);
    uint8_t tos = 0x20;
    CHECK(rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_TOS, &tos, sizeof tos) == 0);
    int wide = 0x20;
    errno = 0;
    CHECK(rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_TOS, &wide, sizeof wide) == -1);
    CHECK(errno == EINVAL);
    int one = 1;
    CHECK(rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_REUSEADDR, &one, sizeof one) == 0);
    errno = 0;
    CHECK(rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_REUSEADDR, &tos, sizeof tos) == -1);
    CHECK(errno == EINVAL);
    errno = 0;
    CHECK(rdma_set_option(id, RDMA_OPTION_ID, 99, &one, sizeof one) == -1);
    CHECK(errno == ENOSYS);
    errno = 0;
    CHECK(rdma_set_option(id, 99, RDMA_OPTION_ID_TOS, &tos, sizeof tos) == -1);
    CHECK(errno == ENOSYS);
    CHECK(rdma_destroy_id(id) == 0);
    rdma_destroy_event_channel(ch);
}

// As librdmacm's ucma_get_device: an ID that has a device has the device's
// PD too, so that memory is registered for it before its QP exists
// (rdma_reg_msgs(id, ...), as datagram rsockets do: a null id->pd crashed
// udpong inside ibv_reg_mr), and a QP made through the CM without a PD
// gets that PD.
TEST_CASE("an ID bound to a device carries the device's PD", "[cm]") {
    rdma_cm_id* bound = nullptr;
    REQUIRE(rdma_create_id(nullptr, &bound, nullptr, RDMA_PS_UDP) == 0);
    CHECK(bound->pd == nullptr);  // no device yet
    sockaddr_in src = loopback(some_port());
    REQUIRE(rdma_bind_addr(bound, reinterpret_cast<sockaddr*>(&src)) == 0);
    REQUIRE(bound->verbs != nullptr);
    REQUIRE(bound->pd != nullptr);
    CHECK(bound->pd->context == bound->verbs);
    static char buf[4096];
    ibv_mr* mr = rdma_reg_msgs(bound, buf, sizeof buf);
    REQUIRE(mr != nullptr);
    CHECK(mr->pd == bound->pd);
    ibv_qp_init_attr attr{};
    attr.qp_type = IBV_QPT_UD;
    attr.cap.max_send_wr = attr.cap.max_recv_wr = 4;
    attr.cap.max_send_sge = attr.cap.max_recv_sge = 1;
    REQUIRE(rdma_create_qp(bound, nullptr, &attr) == 0);
    CHECK(bound->qp->pd == bound->pd);

    // An active ID has it once its address is resolved, the same PD: one
    // per device in a process.
    rdma_cm_id* active = nullptr;
    REQUIRE(rdma_create_id(nullptr, &active, nullptr, RDMA_PS_TCP) == 0);
    sockaddr_in dst = loopback(some_port());
    REQUIRE(rdma_resolve_addr(active, nullptr, reinterpret_cast<sockaddr*>(&dst), 2000) == 0);
    CHECK(active->pd == bound->pd);

    rdma_destroy_id(active);
    rdma_dereg_mr(mr);
    rdma_destroy_qp(bound);
    rdma_destroy_id(bound);
}

// A process that forks after using rdma_cm: the child makes its own event
// channel and IDs, as with the kernel's rdma_cm (librspreload's fork support
// does: its child makes the rsocket the connection moves to). The child's
// requests must be its own: made over a connection its parent opened, the
// daemon took them for the parent's (SO_PEERCRED) and refused the child's
// channel (EINVAL).
TEST_CASE("a forked child makes IDs of its own after its parent did", "[cm]") {
    rdma_event_channel* ch = rdma_create_event_channel();
    REQUIRE(ch != nullptr);
    rdma_cm_id* parents = nullptr;
    REQUIRE(rdma_create_id(ch, &parents, nullptr, RDMA_PS_TCP) == 0);
    sockaddr_in src = loopback(some_port());
    REQUIRE(rdma_bind_addr(parents, reinterpret_cast<sockaddr*>(&src)) == 0);

    const pid_t child = fork();
    REQUIRE(child >= 0);
    if (child == 0) {
        // The child's steps, each its own exit status (no Catch2 here).
        rdma_event_channel* own = rdma_create_event_channel();
        if (!own) _exit(10);
        rdma_cm_id* id = nullptr;
        if (rdma_create_id(own, &id, nullptr, RDMA_PS_TCP)) _exit(11);
        sockaddr_in a = loopback(some_port());
        if (rdma_bind_addr(id, reinterpret_cast<sockaddr*>(&a))) _exit(12);
        if (!id->verbs) _exit(13);
        if (rdma_destroy_id(id)) _exit(14);
        rdma_destroy_event_channel(own);
        _exit(0);
    }
    int status = 0;
    REQUIRE(waitpid(child, &status, 0) == child);
    REQUIRE(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);

    // The parent's own ID is still its own.
    sockaddr_in dst = loopback(some_port());
    CHECK(rdma_resolve_addr(parents, nullptr, reinterpret_cast<sockaddr*>(&dst), 2000) == 0);
    rdma_destroy_id(parents);
    rdma_destroy_event_channel(ch);
}

namespace {

// Whether `ch` has an event to read within `ms`.
bool readable(rdma_event_channel* ch, int ms) {
    pollfd p{ch->fd, POLLIN, 0};
    return poll(&p, 1, ms) == 1;
}

// The next event on `ch` within 5 s, which must be `type`, acked.
rdma_cm_id* take_event(rdma_event_channel* ch, rdma_cm_event_type type, rdma_cm_id** listen_id = nullptr) {
    REQUIRE(readable(ch, 5000));
    rdma_cm_event* ev = expect_event(ch, type);
    rdma_cm_id* id = ev->id;
    if (listen_id) *listen_id = ev->listen_id;
    rdma_ack_cm_event(ev);
    return id;
}

// An active ID on `ch` resolved to the listener on `port`, its REQ sent.
rdma_cm_id* start_connect(rdma_event_channel* ch, uint16_t port, uint32_t qpn) {
    rdma_cm_id* id = nullptr;
    REQUIRE(rdma_create_id(ch, &id, nullptr, RDMA_PS_TCP) == 0);
    sockaddr_in a = loopback(port);
    REQUIRE(rdma_resolve_addr(id, nullptr, reinterpret_cast<sockaddr*>(&a), 2000) == 0);
    take_event(ch, RDMA_CM_EVENT_ADDR_RESOLVED);
    REQUIRE(rdma_resolve_route(id, 2000) == 0);
    take_event(ch, RDMA_CM_EVENT_ROUTE_RESOLVED);
    rdma_conn_param p{};
    p.qp_num = qpn;
    p.retry_count = 7;
    p.rnr_retry_count = 7;
    REQUIRE(rdma_connect(id, &p) == 0);
    return id;
}

// The server's side of a connection whose CONNECT_REQUEST is the next event
// on `srv`, then the client's: accepted and established (no QPs).
rdma_cm_id* finish_connect(rdma_event_channel* srv, rdma_cm_id* client, uint32_t qpn) {
    rdma_cm_id* server = take_event(srv, RDMA_CM_EVENT_CONNECT_REQUEST);
    rdma_conn_param p{};
    p.qp_num = qpn;
    REQUIRE(rdma_accept(server, &p) == 0);
    take_event(client->channel, RDMA_CM_EVENT_CONNECT_RESPONSE);
    REQUIRE(rdma_establish(client) == 0);
    REQUIRE(take_event(srv, RDMA_CM_EVENT_ESTABLISHED) == server);
    return server;
}

rdma_cm_id* listen_on(rdma_event_channel* ch, uint16_t port) {
    rdma_cm_id* l = nullptr;
    REQUIRE(rdma_create_id(ch, &l, nullptr, RDMA_PS_TCP) == 0);
    sockaddr_in a = loopback(port);
    REQUIRE(rdma_bind_addr(l, reinterpret_cast<sockaddr*>(&a)) == 0);
    REQUIRE(rdma_listen(l, 4) == 0);
    return l;
}

}  // namespace

namespace {
// errno of a failed rdma_set_option, 0 if it succeeded.
template <typename T>
int set_option_errno(rdma_cm_id* id, int level, int name, T value) {
    errno = 0;
    return rdma_set_option(id, level, name, &value, sizeof value) == 0 ? 0 : errno;
}
}  // namespace

TEST_CASE("rdma_set_option REUSEADDR and AFONLY: rdma_cm's port rules and state checks", "[cm][option]") {
    const uint16_t port = some_port();
    rdma_event_channel* ch = rdma_create_event_channel();
    REQUIRE(ch != nullptr);
    rdma_cm_id *a = nullptr, *b = nullptr, *c = nullptr;
    for (rdma_cm_id** id : {&a, &b, &c}) REQUIRE(rdma_create_id(ch, id, nullptr, RDMA_PS_TCP) == 0);
    CHECK(set_option_errno(a, RDMA_OPTION_ID, RDMA_OPTION_ID_REUSEADDR, 1) == 0);
    CHECK(set_option_errno(b, RDMA_OPTION_ID, RDMA_OPTION_ID_REUSEADDR, 7) == 0);  // any non-zero int
    sockaddr_in addr = loopback(port);
    REQUIRE(rdma_bind_addr(a, reinterpret_cast<sockaddr*>(&addr)) == 0);
    CHECK(rdma_bind_addr(b, reinterpret_cast<sockaddr*>(&addr)) == 0);  // both allow it
    errno = 0;
    CHECK(rdma_bind_addr(c, reinterpret_cast<sockaddr*>(&addr)) == -1);  // c does not
    CHECK(errno == EADDRINUSE);
    CHECK(set_option_errno(a, RDMA_OPTION_ID, RDMA_OPTION_ID_REUSEADDR, 0) == EINVAL);  // bound: not off
    errno = 0;
    CHECK(rdma_listen(a, 4) == -1);  // a listener is alone on its address
    CHECK(errno == EADDRINUSE);
    REQUIRE(rdma_destroy_id(b) == 0);
    REQUIRE(rdma_listen(a, 4) == 0);
    CHECK(set_option_errno(a, RDMA_OPTION_ID, RDMA_OPTION_ID_REUSEADDR, 1) == EINVAL);  // LISTEN
    CHECK(set_option_errno(a, RDMA_OPTION_ID, RDMA_OPTION_ID_AFONLY, 1) == EINVAL);     // LISTEN
    // IPv6 on the same port: the wildcard takes IPv4 too unless AF-only.
    rdma_cm_id *v6 = nullptr;
    REQUIRE(rdma_create_id(ch, &v6, nullptr, RDMA_PS_TCP) == 0);
    sockaddr_in6 any6{};
    any6.sin6_family = AF_INET6;
    any6.sin6_port = htons(port);
    errno = 0;
    CHECK(rdma_bind_addr(v6, reinterpret_cast<sockaddr*>(&any6)) == -1);
    CHECK(errno == EADDRNOTAVAIL);
    CHECK(set_option_errno(v6, RDMA_OPTION_ID, RDMA_OPTION_ID_AFONLY, 1) == 0);
    CHECK(rdma_bind_addr(v6, reinterpret_cast<sockaddr*>(&any6)) == 0);
    CHECK(set_option_errno(v6, RDMA_OPTION_ID, RDMA_OPTION_ID_AFONLY, uint8_t{1}) == EINVAL);  // an int
    for (rdma_cm_id* id : {a, c, v6}) REQUIRE(rdma_destroy_id(id) == 0);
    rdma_destroy_event_channel(ch);
}

TEST_CASE("rdma_set_option ACK_TIMEOUT and IB_PATH: the QP's timeout, and a route from a path record",
          "[cm][option]") {
    const uint16_t port = some_port();
    rdma_event_channel* chs = rdma_create_event_channel();
    rdma_event_channel* chc = rdma_create_event_channel();
    REQUIRE((chs && chc));
    rdma_cm_id* ud = nullptr;
    REQUIRE(rdma_create_id(chc, &ud, nullptr, RDMA_PS_UDP) == 0);
    CHECK(set_option_errno(ud, RDMA_OPTION_ID, RDMA_OPTION_ID_ACK_TIMEOUT, uint8_t{14}) == EINVAL);  // UD
    rdma_cm_id* listener = listen_on(chs, port);

    SECTION("ACK_TIMEOUT") {
        rdma_cm_id* client = nullptr;
        REQUIRE(rdma_create_id(chc, &client, nullptr, RDMA_PS_TCP) == 0);
        CHECK(set_option_errno(client, RDMA_OPTION_ID, RDMA_OPTION_ID_ACK_TIMEOUT, 14) == EINVAL);  // one byte
        CHECK(set_option_errno(client, RDMA_OPTION_ID, RDMA_OPTION_ID_ACK_TIMEOUT, uint8_t{14}) == 0);
        sockaddr_in a = loopback(port);
        REQUIRE(rdma_resolve_addr(client, nullptr, reinterpret_cast<sockaddr*>(&a), 2000) == 0);
        take_event(chc, RDMA_CM_EVENT_ADDR_RESOLVED);
        REQUIRE(rdma_resolve_route(client, 2000) == 0);
        take_event(chc, RDMA_CM_EVENT_ROUTE_RESOLVED);
        rdma_conn_param p{};
        p.qp_num = 0x123;
        REQUIRE(rdma_connect(client, &p) == 0);
        rdma_cm_id* server = finish_connect(chs, client, 0x456);
        ibv_qp_attr attr{};
        int mask = 0;
        attr.qp_state = IBV_QPS_RTS;
        REQUIRE(rdma_init_qp_attr(client, &attr, &mask) == 0);
        CHECK((mask & IBV_QP_TIMEOUT) != 0);
        CHECK(int(attr.timeout) == 14);
        attr = ibv_qp_attr{};
        attr.qp_state = IBV_QPS_RTS;
        REQUIRE(rdma_init_qp_attr(server, &attr, &mask) == 0);
        CHECK(int(attr.timeout) == 19);  // the path's: RoCE's packet life time 18, + 1
        for (rdma_cm_id* id : {client, server}) REQUIRE(rdma_destroy_id(id) == 0);
    }
    SECTION("IB_PATH") {
        rdma_cm_id* client = nullptr;
        REQUIRE(rdma_create_id(chc, &client, nullptr, RDMA_PS_TCP) == 0);
        ibv_path_data path{};
        path.flags = IBV_PATH_FLAG_GMP | IBV_PATH_FLAG_PRIMARY | IBV_PATH_FLAG_BIDIRECTIONAL;
        CHECK(set_option_errno(client, RDMA_OPTION_IB, RDMA_OPTION_IB_PATH, path) == EINVAL);  // no device
        sockaddr_in a = loopback(port);
        REQUIRE(rdma_resolve_addr(client, nullptr, reinterpret_cast<sockaddr*>(&a), 2000) == 0);
        take_event(chc, RDMA_CM_EVENT_ADDR_RESOLVED);
        path.path.sgid = client->route.addr.addr.ibaddr.sgid;
        path.path.dgid = client->route.addr.addr.ibaddr.dgid;
        path.path.flowlabel_hoplimit = htonl(uint32_t{0x1234} << 8 | 9);
        path.path.tclass = 0x28;
        path.path.mtu = 0x80 | IBV_MTU_1024;  // selector "exactly"
        path.path.packetlifetime = 0x80 | 10;
        // A record that is not the primary bidirectional one, or a length
        // that is not a whole number of records: EINVAL.
        ibv_path_data alt = path;
        alt.flags = IBV_PATH_FLAG_GMP | IBV_PATH_FLAG_ALTERNATE | IBV_PATH_FLAG_BIDIRECTIONAL;
        CHECK(set_option_errno(client, RDMA_OPTION_IB, RDMA_OPTION_IB_PATH, alt) == EINVAL);
        errno = 0;
        CHECK(rdma_set_option(client, RDMA_OPTION_IB, RDMA_OPTION_IB_PATH, &path, sizeof path - 1) == -1);
        CHECK(errno == EINVAL);
        ibv_path_data two[2] = {alt, path};  // the primary one is found among others
        REQUIRE(rdma_set_option(client, RDMA_OPTION_IB, RDMA_OPTION_IB_PATH, two, sizeof two) == 0);
        take_event(chc, RDMA_CM_EVENT_ROUTE_RESOLVED);
        rdma_conn_param p{};
        p.qp_num = 0x123;
        REQUIRE(rdma_connect(client, &p) == 0);
        rdma_cm_id* server = finish_connect(chs, client, 0x456);
        ibv_qp_attr attr{};
        int mask = 0;
        attr.qp_state = IBV_QPS_RTR;
        REQUIRE(rdma_init_qp_attr(client, &attr, &mask) == 0);
        CHECK(int(attr.ah_attr.grh.hop_limit) == 9);
        CHECK(int(attr.ah_attr.grh.traffic_class) == 0x28);
        CHECK(attr.ah_attr.grh.flow_label == 0x1234);
        CHECK(attr.path_mtu == IBV_MTU_1024);
        attr = ibv_qp_attr{};
        attr.qp_state = IBV_QPS_RTS;
        REQUIRE(rdma_init_qp_attr(client, &attr, &mask) == 0);
        CHECK(int(attr.timeout) == 11);  // the record's packet life time + 1
        // The passive side's path is the REQ's.
        attr = ibv_qp_attr{};
        attr.qp_state = IBV_QPS_RTR;
        REQUIRE(rdma_init_qp_attr(server, &attr, &mask) == 0);
        CHECK(int(attr.ah_attr.grh.traffic_class) == 0x28);
        CHECK(int(attr.ah_attr.grh.hop_limit) == 9);
        CHECK(attr.path_mtu == IBV_MTU_1024);
        attr = ibv_qp_attr{};
        attr.qp_state = IBV_QPS_RTS;
        REQUIRE(rdma_init_qp_attr(server, &attr, &mask) == 0);
        CHECK(int(attr.timeout) == 11);
        for (rdma_cm_id* id : {client, server}) REQUIRE(rdma_destroy_id(id) == 0);
    }
    for (rdma_cm_id* id : {listener, ud}) REQUIRE(rdma_destroy_id(id) == 0);
    rdma_destroy_event_channel(chs);
    rdma_destroy_event_channel(chc);
}

// ucmatose -m: events queued for an ID on its old channel, not yet read,
// move with it (the kernel's ucma_migrate_id), and the other IDs' stay. They
// used to stay behind, and were lost with the old channel (ucmatose's client
// then waited for ever for a DISCONNECTED, under CPU load).
TEST_CASE("rdma_migrate_id takes the ID's unread events along", "[cm][migrate]") {
    const uint16_t port = some_port();
    rdma_event_channel* chs = rdma_create_event_channel();
    rdma_event_channel* chc = rdma_create_event_channel();
    rdma_event_channel* chx = rdma_create_event_channel();
    REQUIRE((chs && chc && chx));
    rdma_cm_id* listener = listen_on(chs, port);
    rdma_cm_id* c1 = start_connect(chc, port, 0x101);
    rdma_cm_id* s1 = finish_connect(chs, c1, 0x201);
    rdma_cm_id* c2 = start_connect(chc, port, 0x102);
    rdma_cm_id* s2 = finish_connect(chs, c2, 0x202);
    rdma_cm_id* c3 = start_connect(chx, port, 0x103);
    rdma_cm_id* s3 = finish_connect(chs, c3, 0x203);
    // The server ends all three; the DREQs cross the device in order, so
    // once c3 (on a channel of its own) has its DISCONNECTED, c1's and c2's
    // wait unread on chc.
    REQUIRE(rdma_disconnect(s1) == 0);
    REQUIRE(rdma_disconnect(s2) == 0);
    REQUIRE(rdma_disconnect(s3) == 0);
    REQUIRE(take_event(chx, RDMA_CM_EVENT_DISCONNECTED) == c3);

    rdma_event_channel* chm = rdma_create_event_channel();
    REQUIRE(chm != nullptr);
    REQUIRE(rdma_migrate_id(c1, chm) == 0);
    CHECK(c1->channel == chm);
    // c1's event is on the new channel, which polls readable for it; c2's
    // stays on the old one; then neither has more.
    REQUIRE(take_event(chm, RDMA_CM_EVENT_DISCONNECTED) == c1);
    REQUIRE(take_event(chc, RDMA_CM_EVENT_DISCONNECTED) == c2);
    CHECK_FALSE(readable(chm, 100));
    CHECK_FALSE(readable(chc, 0));

    for (rdma_cm_id* id : {c1, c2, c3}) REQUIRE(rdma_disconnect(id) == 0);
    for (rdma_cm_id* id : {s1, s2, s3}) REQUIRE(take_event(chs, RDMA_CM_EVENT_DISCONNECTED) == id);
    for (rdma_cm_id* id : {c1, c2, c3, s1, s2, s3, listener}) REQUIRE(rdma_destroy_id(id) == 0);
    for (rdma_event_channel* ch : {chs, chc, chx, chm}) rdma_destroy_event_channel(ch);
}

// A listener's queued CONNECT_REQUEST moves with it, and so does the ID it
// brings: its later events (ESTABLISHED) come on the new channel.
TEST_CASE("rdma_migrate_id of a listener takes its unread connection requests along", "[cm][migrate]") {
    const uint16_t port = some_port();
    rdma_event_channel* chs = rdma_create_event_channel();
    rdma_event_channel* chc = rdma_create_event_channel();
    rdma_event_channel* chn = rdma_create_event_channel();
    REQUIRE((chs && chc && chn));
    rdma_cm_id* listener = listen_on(chs, port);
    rdma_cm_id* client = start_connect(chc, port, 0x111);
    REQUIRE(readable(chs, 5000));  // the CONNECT_REQUEST, unread
    REQUIRE(rdma_migrate_id(listener, chn) == 0);
    rdma_destroy_event_channel(chs);
    rdma_cm_id* from = nullptr;
    REQUIRE(readable(chn, 5000));
    rdma_cm_event* ev = expect_event(chn, RDMA_CM_EVENT_CONNECT_REQUEST);
    rdma_cm_id* server = ev->id;
    from = ev->listen_id;
    rdma_ack_cm_event(ev);
    CHECK(from == listener);
    CHECK(server->channel == chn);
    rdma_conn_param p{};
    p.qp_num = 0x211;
    REQUIRE(rdma_accept(server, &p) == 0);
    take_event(chc, RDMA_CM_EVENT_CONNECT_RESPONSE);
    REQUIRE(rdma_establish(client) == 0);
    REQUIRE(take_event(chn, RDMA_CM_EVENT_ESTABLISHED) == server);
    REQUIRE(rdma_disconnect(client) == 0);
    REQUIRE(take_event(chn, RDMA_CM_EVENT_DISCONNECTED) == server);
    for (rdma_cm_id* id : {client, server, listener}) REQUIRE(rdma_destroy_id(id) == 0);
    rdma_destroy_event_channel(chc);
    rdma_destroy_event_channel(chn);
}

// rdma_notify as the kernel's rdma_cm and ib_cm answer it (ucma_notify,
// ib_cm_notify, cm_establish): IBV_EVENT_COMM_EST (a QP's first packet came
// before the RTU) makes a connection whose REP waits for its RTU
// ESTABLISHED, with the event; EISCONN once established; EINVAL for an ID
// without a device, without a connection, or before its REP, and for events
// other than COMM_EST and PATH_MIG.
TEST_CASE("rdma_notify: COMM_EST establishes the passive side before the RTU, EISCONN after, EINVAL before",
          "[cm][notify]") {
    const uint16_t port = some_port();
    rdma_event_channel* chs = rdma_create_event_channel();
    rdma_event_channel* chc = rdma_create_event_channel();
    REQUIRE((chs && chc));
    rdma_cm_id* idle = nullptr;
    REQUIRE(rdma_create_id(chc, &idle, nullptr, RDMA_PS_TCP) == 0);
    errno = 0;
    CHECK(rdma_notify(idle, IBV_EVENT_COMM_EST) == -1);  // no device
    CHECK(errno == EINVAL);
    sockaddr_in a = loopback(some_port());
    REQUIRE(rdma_bind_addr(idle, reinterpret_cast<sockaddr*>(&a)) == 0);
    errno = 0;
    CHECK(rdma_notify(idle, IBV_EVENT_COMM_EST) == -1);  // a device, no connection
    CHECK(errno == EINVAL);

    rdma_cm_id* listener = listen_on(chs, port);
    errno = 0;
    CHECK(rdma_notify(listener, IBV_EVENT_COMM_EST) == -1);
    CHECK(errno == EINVAL);
    rdma_cm_id* client = start_connect(chc, port, 0x123);
    rdma_cm_id* server = take_event(chs, RDMA_CM_EVENT_CONNECT_REQUEST);
    errno = 0;
    CHECK(rdma_notify(server, IBV_EVENT_COMM_EST) == -1);  // REQ received, no REP yet
    CHECK(errno == EINVAL);
    rdma_conn_param p{};
    p.qp_num = 0x456;
    REQUIRE(rdma_accept(server, &p) == 0);
    errno = 0;
    CHECK(rdma_notify(server, IBV_EVENT_QP_FATAL) == -1);
    CHECK(errno == EINVAL);
    errno = 0;
    CHECK(rdma_notify(server, IBV_EVENT_PATH_MIG) == -1);  // not established
    CHECK(errno == EINVAL);
    // The client has not sent its RTU (it has not even read the REP).
    REQUIRE(rdma_notify(server, IBV_EVENT_COMM_EST) == 0);
    REQUIRE(take_event(chs, RDMA_CM_EVENT_ESTABLISHED) == server);
    errno = 0;
    CHECK(rdma_notify(server, IBV_EVENT_COMM_EST) == -1);
    CHECK(errno == EISCONN);
    CHECK(rdma_notify(server, IBV_EVENT_PATH_MIG) == 0);

    take_event(chc, RDMA_CM_EVENT_CONNECT_RESPONSE);
    errno = 0;
    CHECK(rdma_notify(client, IBV_EVENT_COMM_EST) == -1);  // REP received, no RTU sent
    CHECK(errno == EINVAL);
    REQUIRE(rdma_establish(client) == 0);
    errno = 0;
    CHECK(rdma_notify(client, IBV_EVENT_COMM_EST) == -1);
    CHECK(errno == EISCONN);
    // The late RTU makes no second ESTABLISHED.
    CHECK_FALSE(readable(chs, 300));

    REQUIRE(rdma_disconnect(client) == 0);
    REQUIRE(take_event(chs, RDMA_CM_EVENT_DISCONNECTED) == server);
    errno = 0;
    CHECK(rdma_notify(server, IBV_EVENT_COMM_EST) == -1);  // disconnecting
    CHECK(errno == EINVAL);
    for (rdma_cm_id* id : {client, server, listener, idle}) REQUIRE(rdma_destroy_id(id) == 0);
    rdma_destroy_event_channel(chs);
    rdma_destroy_event_channel(chc);
}

// ECE through rdma_cm (librdmacm 44 and the kernel's ucma, rdma_cm and
// ib_cm): the active side's rdma_set_local_ece goes in the REQ and
// rdma_get_remote_ece reads it on the CONNECT_REQUEST's ID; the passive side
// answers with the REQ's vendor ID and its own options, which the active
// side reads after CONNECT_RESPONSE. Only IDs without a QP: librdmacm's
// rdma_create_qp puts the QP's ECE in place of what was set, none on rxe
// (ibv_query_ece: EOPNOTSUPP) and on simnic, and with a QP both calls are
// EINVAL.
TEST_CASE("ECE: set on each side, read on the other, with rdma_create_qp's QP none goes", "[cm][ece]") {
    const uint16_t port = some_port();
    rdma_event_channel* chs = rdma_create_event_channel();
    rdma_event_channel* chc = rdma_create_event_channel();
    REQUIRE((chs && chc));
    rdma_cm_id* listener = listen_on(chs, port);
    rdma_cm_id* client = nullptr;
    REQUIRE(rdma_create_id(chc, &client, nullptr, RDMA_PS_TCP) == 0);
    ibv_ece bad{};
    errno = 0;
    CHECK(rdma_set_local_ece(client, nullptr) == -1);
    CHECK(errno == EINVAL);
    errno = 0;
    CHECK(rdma_set_local_ece(client, &bad) == -1);  // no vendor ID
    CHECK(errno == EINVAL);
    bad.vendor_id = 0x15b3;
    bad.comp_mask = 1;
    errno = 0;
    CHECK(rdma_set_local_ece(client, &bad) == -1);
    CHECK(errno == EINVAL);
    ibv_ece mine{};
    mine.vendor_id = 0x15b3;
    mine.options = 0x3;
    REQUIRE(rdma_set_local_ece(client, &mine) == 0);
    ibv_ece got{};
    got.comp_mask = 7;
    REQUIRE(rdma_get_remote_ece(client, &got) == 0);  // nothing from the peer yet
    CHECK(got.vendor_id == 0);
    CHECK(got.options == 0);
    CHECK(got.comp_mask == 0);

    sockaddr_in a = loopback(port);
    REQUIRE(rdma_resolve_addr(client, nullptr, reinterpret_cast<sockaddr*>(&a), 2000) == 0);
    take_event(chc, RDMA_CM_EVENT_ADDR_RESOLVED);
    REQUIRE(rdma_resolve_route(client, 2000) == 0);
    take_event(chc, RDMA_CM_EVENT_ROUTE_RESOLVED);
    rdma_conn_param p{};
    p.qp_num = 0x321;
    REQUIRE(rdma_connect(client, &p) == 0);
    rdma_cm_id* server = take_event(chs, RDMA_CM_EVENT_CONNECT_REQUEST);
    got = ibv_ece{};
    REQUIRE(rdma_get_remote_ece(server, &got) == 0);
    CHECK(got.vendor_id == 0x15b3);
    CHECK(got.options == 0x3);
    // The REP carries the REQ's vendor ID back, whatever the passive side
    // set, and the passive side's options.
    ibv_ece theirs{};
    theirs.vendor_id = 0x02c9;
    theirs.options = 0x1;
    REQUIRE(rdma_set_local_ece(server, &theirs) == 0);
    p.qp_num = 0x654;
    REQUIRE(rdma_accept(server, &p) == 0);
    take_event(chc, RDMA_CM_EVENT_CONNECT_RESPONSE);
    got = ibv_ece{};
    REQUIRE(rdma_get_remote_ece(client, &got) == 0);
    CHECK(got.vendor_id == 0x15b3);
    CHECK(got.options == 0x1);
    REQUIRE(rdma_establish(client) == 0);
    REQUIRE(take_event(chs, RDMA_CM_EVENT_ESTABLISHED) == server);
    got = ibv_ece{};
    REQUIRE(rdma_get_remote_ece(server, &got) == 0);  // still the REQ's
    CHECK(got.vendor_id == 0x15b3);
    CHECK(got.options == 0x3);
    REQUIRE(rdma_disconnect(client) == 0);
    REQUIRE(take_event(chs, RDMA_CM_EVENT_DISCONNECTED) == server);
    REQUIRE(rdma_destroy_id(server) == 0);
    REQUIRE(rdma_destroy_id(client) == 0);

    // With a QP made by rdma_create_qp: the QP has no ECE, so the REQ
    // carries none, and the ID's ECE calls are refused.
    client = nullptr;
    REQUIRE(rdma_create_id(chc, &client, nullptr, RDMA_PS_TCP) == 0);
    REQUIRE(rdma_set_local_ece(client, &mine) == 0);
    REQUIRE(rdma_resolve_addr(client, nullptr, reinterpret_cast<sockaddr*>(&a), 2000) == 0);
    take_event(chc, RDMA_CM_EVENT_ADDR_RESOLVED);
    REQUIRE(rdma_resolve_route(client, 2000) == 0);
    take_event(chc, RDMA_CM_EVENT_ROUTE_RESOLVED);
    ibv_qp_init_attr qa{};
    qa.qp_type = IBV_QPT_RC;
    qa.cap.max_send_wr = qa.cap.max_recv_wr = 4;
    qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
    REQUIRE(rdma_create_qp(client, nullptr, &qa) == 0);
    ibv_ece q{};
    CHECK(ibv_query_ece(client->qp, &q) == EOPNOTSUPP);
    errno = 0;
    CHECK(rdma_set_local_ece(client, &mine) == -1);
    CHECK(errno == EINVAL);
    errno = 0;
    CHECK(rdma_get_remote_ece(client, &got) == -1);
    CHECK(errno == EINVAL);
    REQUIRE(rdma_connect(client, nullptr) == 0);
    server = take_event(chs, RDMA_CM_EVENT_CONNECT_REQUEST);
    got.vendor_id = got.options = 0xff;
    REQUIRE(rdma_get_remote_ece(server, &got) == 0);
    CHECK(got.vendor_id == 0);
    CHECK(got.options == 0);
    REQUIRE(rdma_reject(server, nullptr, 0) == 0);
    take_event(chc, RDMA_CM_EVENT_REJECTED);
    REQUIRE(rdma_destroy_id(server) == 0);
    rdma_destroy_qp(client);
    for (rdma_cm_id* id : {client, listener}) REQUIRE(rdma_destroy_id(id) == 0);
    rdma_destroy_event_channel(chs);
    rdma_destroy_event_channel(chc);
}

// rdma_reject_ece: a REJ whose reason is IBA's "vendor option not supported";
// the active side's REJECTED carries it as its status (cma_ib_handler), with
// the private data.
TEST_CASE("rdma_reject_ece: the active side is REJECTED with status 35", "[cm][ece]") {
    const uint16_t port = some_port();
    rdma_event_channel* chs = rdma_create_event_channel();
    rdma_event_channel* chc = rdma_create_event_channel();
    REQUIRE((chs && chc));
    rdma_cm_id* listener = listen_on(chs, port);
    rdma_cm_id* client = start_connect(chc, port, 0x777);
    rdma_cm_id* server = take_event(chs, RDMA_CM_EVENT_CONNECT_REQUEST);
    const char why[] = "ece";
    REQUIRE(rdma_reject_ece(server, why, sizeof why) == 0);
    REQUIRE(readable(chc, 5000));
    rdma_cm_event* ev = expect_event(chc, RDMA_CM_EVENT_REJECTED);
    CHECK(ev->id == client);
    CHECK(ev->status == 35);  // IB_CM_REJ_VENDOR_OPTION_NOT_SUPPORTED
    REQUIRE(ev->param.conn.private_data != nullptr);
    REQUIRE(ev->param.conn.private_data_len >= sizeof why);
    CHECK(std::memcmp(ev->param.conn.private_data, why, sizeof why) == 0);
    rdma_ack_cm_event(ev);

    // rdma_reject: the consumer's reason, 28.
    rdma_cm_id* client2 = start_connect(chc, port, 0x778);
    rdma_cm_id* server2 = take_event(chs, RDMA_CM_EVENT_CONNECT_REQUEST);
    REQUIRE(rdma_reject(server2, nullptr, 0) == 0);
    REQUIRE(readable(chc, 5000));
    ev = expect_event(chc, RDMA_CM_EVENT_REJECTED);
    CHECK(ev->id == client2);
    CHECK(ev->status == 28);  // IB_CM_REJ_CONSUMER_DEFINED
    rdma_ack_cm_event(ev);
    for (rdma_cm_id* id : {client, server, client2, server2, listener}) REQUIRE(rdma_destroy_id(id) == 0);
    rdma_destroy_event_channel(chs);
    rdma_destroy_event_channel(chc);
}

namespace {

// One completion of `cq` within 5 s.
ibv_wc poll_wc(ibv_cq* cq) {
    ibv_wc wc{};
    for (int i = 0; i < 5000; ++i) {
        const int n = ibv_poll_cq(cq, 1, &wc);
        REQUIRE(n >= 0);
        if (n == 1) return wc;
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    FAIL("no completion within 5 s");
    return wc;
}

}  // namespace

// SRQs through the CM (librdmacm's rdma_create_srq_ex): on the ID's PD,
// used by the QP rdma_create_qp makes next, and a SEND from the peer lands
// in one of its receives. An XRC SRQ is refused (no XRC on rxe or simnic:
// EOPNOTSUPP), as is one without a type (EINVAL).
TEST_CASE("rdma_create_srq: the ID's SRQ takes the QP's receives, XRC refused", "[cm][srq]") {
    const uint16_t port = some_port();
    rdma_event_channel* chs = rdma_create_event_channel();
    rdma_event_channel* chc = rdma_create_event_channel();
    REQUIRE((chs && chc));
    rdma_cm_id* listener = listen_on(chs, port);
    rdma_cm_id* client = nullptr;
    REQUIRE(rdma_create_id(chc, &client, nullptr, RDMA_PS_TCP) == 0);
    sockaddr_in a = loopback(port);
    REQUIRE(rdma_resolve_addr(client, nullptr, reinterpret_cast<sockaddr*>(&a), 2000) == 0);
    take_event(chc, RDMA_CM_EVENT_ADDR_RESOLVED);
    REQUIRE(rdma_resolve_route(client, 2000) == 0);
    take_event(chc, RDMA_CM_EVENT_ROUTE_RESOLVED);
    ibv_qp_init_attr qa{};
    qa.qp_type = IBV_QPT_RC;
    qa.cap.max_send_wr = qa.cap.max_recv_wr = 4;
    qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
    qa.sq_sig_all = 1;
    REQUIRE(rdma_create_qp(client, nullptr, &qa) == 0);
    REQUIRE(rdma_connect(client, nullptr) == 0);
    rdma_cm_id* server = take_event(chs, RDMA_CM_EVENT_CONNECT_REQUEST);

    ibv_srq_init_attr_ex xa{};
    xa.attr.max_wr = 4;
    xa.attr.max_sge = 1;
    xa.comp_mask = IBV_SRQ_INIT_ATTR_PD;
    errno = 0;
    CHECK(rdma_create_srq_ex(server, &xa) == -1);  // no type
    CHECK(errno == EINVAL);
    xa.comp_mask = IBV_SRQ_INIT_ATTR_TYPE;
    xa.srq_type = IBV_SRQT_XRC;
    errno = 0;
    CHECK(rdma_create_srq_ex(server, &xa) == -1);
    CHECK(errno == EOPNOTSUPP);
    CHECK(server->srq == nullptr);

    ibv_srq_init_attr sa{};
    sa.attr.max_wr = 4;
    sa.attr.max_sge = 1;
    REQUIRE(rdma_create_srq(server, nullptr, &sa) == 0);
    REQUIRE(server->srq != nullptr);
    CHECK(server->srq->pd == server->pd);
    ibv_qp_init_attr sqa{};
    sqa.qp_type = IBV_QPT_RC;
    sqa.cap.max_send_wr = 4;
    sqa.cap.max_send_sge = 1;
    sqa.cap.max_recv_wr = 4;  // the size of the receive CQ rdma_create_qp makes (the SRQ's WQEs complete there)
    REQUIRE(rdma_create_qp(server, nullptr, &sqa) == 0);
    CHECK(server->qp->srq == server->srq);
    CHECK(sqa.srq == server->srq);

    static char rbuf[64], sbuf[64];
    ibv_mr* rmr = rdma_reg_msgs(server, rbuf, sizeof rbuf);
    ibv_mr* smr = rdma_reg_msgs(client, sbuf, sizeof sbuf);
    REQUIRE((rmr && smr));
    ibv_sge sge{reinterpret_cast<uintptr_t>(rbuf), sizeof rbuf, rmr->lkey};
    ibv_recv_wr wr{};
    wr.wr_id = 0x5151;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    ibv_recv_wr* bad = nullptr;
    REQUIRE(ibv_post_srq_recv(server->srq, &wr, &bad) == 0);

    REQUIRE(rdma_accept(server, nullptr) == 0);
    take_event(chc, RDMA_CM_EVENT_ESTABLISHED);
    REQUIRE(take_event(chs, RDMA_CM_EVENT_ESTABLISHED) == server);

    std::strcpy(sbuf, "through the SRQ");
    REQUIRE(rdma_post_send(client, nullptr, sbuf, 16, smr, 0) == 0);
    const ibv_wc swc = poll_wc(client->send_cq);
    CHECK(swc.status == IBV_WC_SUCCESS);
    const ibv_wc rwc = poll_wc(server->recv_cq);
    CHECK(rwc.status == IBV_WC_SUCCESS);
    CHECK(rwc.wr_id == 0x5151);
    CHECK(rwc.opcode == IBV_WC_RECV);
    CHECK(rwc.byte_len == 16);
    CHECK(std::strcmp(rbuf, "through the SRQ") == 0);

    REQUIRE(rdma_disconnect(client) == 0);
    REQUIRE(take_event(chs, RDMA_CM_EVENT_DISCONNECTED) == server);
    rdma_dereg_mr(rmr);
    rdma_dereg_mr(smr);
    rdma_destroy_qp(server);
    rdma_destroy_srq(server);
    CHECK(server->srq == nullptr);
    rdma_destroy_qp(client);
    for (rdma_cm_id* id : {client, server, listener}) REQUIRE(rdma_destroy_id(id) == 0);
    rdma_destroy_event_channel(chs);
    rdma_destroy_event_channel(chc);
}
