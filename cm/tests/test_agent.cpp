// The CM state machine: two agents (two hosts, one device each) joined by a
// test wire that can lose MADs, with a clock the test moves.
#include <catch2/catch.hpp>

#include <cerrno>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "simnic/cm/agent.h"
#include "simnic/roce/rules.h"

namespace cm = simnic::cm;
namespace hw = simnic::hw;

namespace {

struct Net;

struct Host final : cm::Hooks {
    Net& net;
    std::string device;
    cm::Gid gid;
    std::unique_ptr<cm::Agent> agent;
    std::vector<cm::Event> events;
    uint32_t seed;

    Host(Net& n, std::string dev, uint32_t ip, uint32_t s);
    void send_mad(const std::string& dev, const cm::Gid& sgid, const cm::Gid& dgid, uint8_t traffic_class,
                  const cm::Mad& mad) override;
    void deliver(uint64_t, const cm::Event& ev) override { events.push_back(ev); }
    std::optional<cm::Gid> route_source(const cm::Gid&) override { return gid; }
    // The device's neighbour table: every peer known unless a test says not.
    std::function<bool(const cm::Gid&)> ready = [](const cm::Gid&) { return true; };
    std::vector<cm::Gid> asked;
    bool neighbour_ready(const std::string& dev, const cm::Gid& dgid) override {
        REQUIRE(dev == device);
        asked.push_back(dgid);
        return ready(dgid);
    }
    uint64_t now_ms() override;
    uint32_t random32() override {
        seed = seed * 1103515245u + 12345u;
        return seed;
    }
    // The events of one type so far.
    std::vector<cm::Event> of(cm::EventType t) const {
        std::vector<cm::Event> v;
        for (const auto& e : events)
            if (e.type == t) v.push_back(e);
        return v;
    }
};

struct Sent {
    cm::Gid src, dst;
    cm::Mad mad;
    uint8_t traffic_class = 0;  // the IP header's TOS it went with
};

struct Net {
    uint64_t now = 1000;
    cm::Timing timing{100, 50, 3, 80};
    std::deque<Sent> wire;
    std::vector<cm::AttrId> log;  // every MAD put on the wire, lost or not
    std::vector<cm::Mad> mads;    // the same MADs
    std::vector<uint8_t> tclass;  // and the traffic class each went with
    std::function<bool(cm::AttrId)> lose = [](cm::AttrId) { return false; };
    std::vector<Host*> hosts;

    // Carries every MAD in flight (and those they cause) to its receiver.
    void run() {
        while (!wire.empty()) {
            Sent s = wire.front();
            wire.pop_front();
            for (Host* h : hosts)
                if (h->gid == s.dst)
                    h->agent->on_mad(h->device, s.src, s.dst, s.mad.data(), s.mad.size(), s.traffic_class);
        }
    }
    void advance(uint64_t ms) {
        now += ms;
        for (Host* h : hosts) h->agent->on_timer();
        run();
    }
};

Host::Host(Net& n, std::string dev, uint32_t ip, uint32_t s) : net(n), device(std::move(dev)), gid(cm::ipv4_gid(ip)), seed(s) {
    agent = std::make_unique<cm::Agent>(*this, n.timing);
    cm::Port p;
    p.device = device;
    p.node_guid = 0x5054'00ff'fe00'0000ull | ip;
    p.active_mtu = 3;
    p.gids = {{1, gid}};
    agent->set_port(p);
    n.hosts.push_back(this);
}

void Host::send_mad(const std::string& dev, const cm::Gid& sgid, const cm::Gid& dgid, uint8_t traffic_class,
                    const cm::Mad& mad) {
    REQUIRE(dev == device);
    REQUIRE(sgid == gid);
    cm::MadHdr h;
    REQUIRE(cm::decode_hdr(mad.data(), mad.size(), h) == cm::MadError::Ok);
    net.log.push_back(cm::AttrId(h.attr_id));
    net.mads.push_back(mad);
    net.tclass.push_back(traffic_class);
    if (net.lose(cm::AttrId(h.attr_id))) return;
    net.wire.push_back({sgid, dgid, mad, traffic_class});
}

uint64_t Host::now_ms() { return net.now; }

constexpr uint32_t kServerIp = 0x0a000001, kClientIp = 0x0a000002;
constexpr uint16_t kPort = 7174;

struct Pair {
    Net net;
    Host server{net, "srv", kServerIp, 7};
    Host client{net, "cli", kClientIp, 99};
    uint32_t listen_id = 0, cid = 0, sid = 0;
    // rdma_set_option's ToS on the client's ID, before and after
    // rdma_resolve_route (-1: not set).
    int tos_before_route = -1, tos_after_route = -1;

    void listen() {
        REQUIRE(server.agent->create_id(1, cm::kPsTcp, listen_id) == 0);
        REQUIRE(server.agent->bind(listen_id, cm::ipv4_addr(0, kPort)) == 0);
        REQUIRE(server.agent->listen(listen_id) == 0);
    }
    // The client up to REQ_SENT.
    void connect() {
        REQUIRE(client.agent->create_id(2, cm::kPsTcp, cid) == 0);
        REQUIRE(client.agent->resolve_addr(cid, std::nullopt, cm::ipv4_addr(kServerIp, kPort)) == 0);
        REQUIRE(client.of(cm::EventType::AddrResolved).size() == 1);
        if (tos_before_route >= 0) REQUIRE(client.agent->set_tos(cid, uint8_t(tos_before_route)) == 0);
        REQUIRE(client.agent->resolve_route(cid) == 0);
        REQUIRE(client.of(cm::EventType::RouteResolved).size() == 1);
        if (tos_after_route >= 0) REQUIRE(client.agent->set_tos(cid, uint8_t(tos_after_route)) == 0);
        cm::ConnParam p;
        p.responder_resources = 1;
        p.initiator_depth = 1;
        p.qp_num = 0x11;
        REQUIRE(client.agent->connect(cid, p) == 0);
    }
    void accept() {
        const auto req = server.of(cm::EventType::ConnectRequest);
        REQUIRE(req.size() == 1);
        sid = req[0].id;
        cm::ConnParam p;
        p.responder_resources = 1;
        p.initiator_depth = 1;
        p.qp_num = 0x22;
        REQUIRE(server.agent->accept(sid, p) == 0);
    }
    void establish() {
        listen();
        connect();
        net.run();
        accept();
        net.run();
        REQUIRE(client.of(cm::EventType::ConnectResponse).size() == 1);
        REQUIRE(client.agent->establish(cid) == 0);
        net.run();
        REQUIRE(server.of(cm::EventType::Established).size() == 1);
    }
};

}  // namespace

TEST_CASE("connect and disconnect: REQ, REP, RTU, DREQ, DREP and the events of each side", "[cm][agent]") {
    Pair t;
    t.establish();
    const auto req = t.server.of(cm::EventType::ConnectRequest)[0];
    CHECK(req.listen_id == t.listen_id);
    CHECK(req.device == "srv");
    CHECK(req.param.qp_num == 0x11);
    CHECK(req.param.responder_resources == 1);
    std::string dev;
    cm::SockAddr csrc, cdst;
    REQUIRE(t.client.agent->query(t.cid, dev, csrc, cdst) == 0);
    CHECK(req.dst.port == csrc.port);  // the server sees the client's port
    CHECK(req.src.port == kPort);
    CHECK(t.client.of(cm::EventType::ConnectResponse)[0].param.qp_num == 0x22);
    CHECK(t.server.agent->state_name(t.sid) == "ESTABLISHED");
    CHECK(t.client.agent->state_name(t.cid) == "ESTABLISHED");

    // The QP attributes each side applies mirror each other.
    cm::QpAttr crtr, crts, srtr, srts, cinit;
    REQUIRE(t.client.agent->init_qp_attr(t.cid, hw::QpState::Rtr, crtr) == 0);
    REQUIRE(t.client.agent->init_qp_attr(t.cid, hw::QpState::Rts, crts) == 0);
    REQUIRE(t.server.agent->init_qp_attr(t.sid, hw::QpState::Rtr, srtr) == 0);
    REQUIRE(t.server.agent->init_qp_attr(t.sid, hw::QpState::Rts, srts) == 0);
    REQUIRE(t.client.agent->init_qp_attr(t.cid, hw::QpState::Init, cinit) == 0);
    CHECK(crtr.dest_qpn == 0x22);
    CHECK(srtr.dest_qpn == 0x11);
    CHECK(crtr.rq_psn == srts.sq_psn);
    CHECK(srtr.rq_psn == crts.sq_psn);
    // The starting PSNs as ib_cm means them (golden rping: the client's
    // first SEND carries the REP's, the server's first READ the REQ's): the
    // REQ's is what the active side receives, the REP's what it sends.
    REQUIRE(t.net.mads.size() >= 2);
    const cm::Req rq = cm::decode_req(t.net.mads[0].data());
    const cm::Rep rp = cm::decode_rep(t.net.mads[1].data());
    CHECK(rq.starting_psn == crtr.rq_psn);
    CHECK(rq.starting_psn == srts.sq_psn);
    CHECK(rp.starting_psn == crts.sq_psn);
    CHECK(rp.starting_psn == srtr.rq_psn);
    CHECK(crtr.flow_label == simnic::roce::cm_flow_label(csrc.port, kPort));
    CHECK(srtr.flow_label == crtr.flow_label);
    CHECK(crtr.dgid == cm::ipv4_gid(kServerIp));
    CHECK(srtr.dgid == cm::ipv4_gid(kClientIp));
    CHECK(crtr.sgid_index == 1);
    CHECK(crtr.path_mtu == 3);
    CHECK(crts.timeout == 19);
    CHECK(crts.retry_cnt == 7);
    CHECK(srts.max_rd_atomic == 1);
    CHECK(srtr.max_dest_rd_atomic == 1);
    CHECK(cinit.access_flags == (hw::access::kRemoteWrite | hw::access::kRemoteRead | hw::access::kRemoteAtomic));

    // The client disconnects; the server hears of it, answers when its
    // application calls rdma_disconnect, and the client hears the answer.
    REQUIRE(t.client.agent->disconnect(t.cid) == 0);
    t.net.run();
    REQUIRE(t.server.of(cm::EventType::Disconnected).size() == 1);
    CHECK(t.client.of(cm::EventType::Disconnected).empty());
    REQUIRE(t.server.agent->disconnect(t.sid) == 0);
    t.net.run();
    REQUIRE(t.client.of(cm::EventType::Disconnected).size() == 1);
    CHECK(t.client.of(cm::EventType::Disconnected)[0].status == 0);
    using A = cm::AttrId;
    CHECK(t.net.log == std::vector<A>{A::ConnectRequest, A::ConnectReply, A::ReadyToUse, A::DisconnectRequest,
                                      A::DisconnectReply});
    // Nothing is pending any more.
    CHECK(t.client.agent->next_deadline() == 0);
    CHECK(t.server.agent->next_deadline() == 0);
    REQUIRE(t.client.agent->destroy_id(t.cid) == 0);
    REQUIRE(t.server.agent->destroy_id(t.sid) == 0);
    t.net.run();
    CHECK(t.net.log.size() == 5);  // destroying disconnected IDs sends nothing
}

TEST_CASE("rdma_set_option's ToS: the REQ's traffic class and both QPs' AV, read at rdma_resolve_route", "[cm][agent][tos]") {
    // The traffic class of each side's RTR address vector and of the REQ.
    auto run = [](int before, int after, uint8_t& req_tc, uint8_t& client_tc, uint8_t& server_tc) {
        Pair t;
        t.tos_before_route = before;
        t.tos_after_route = after;
        t.establish();
        REQUIRE(!t.net.mads.empty());
        req_tc = cm::decode_req(t.net.mads[0].data()).primary_traffic_class;
        cm::QpAttr crtr, srtr;
        REQUIRE(t.client.agent->init_qp_attr(t.cid, hw::QpState::Rtr, crtr) == 0);
        REQUIRE(t.server.agent->init_qp_attr(t.sid, hw::QpState::Rtr, srtr) == 0);
        CHECK((crtr.mask & hw::qp_attr_mask::kAv) != 0);
        client_tc = crtr.traffic_class;
        server_tc = srtr.traffic_class;
    };
    uint8_t req_tc = 0xFF, ctc = 0xFF, stc = 0xFF;
    SECTION("not set: 0 (rdma_cm's default_roce_tos)") {
        run(-1, -1, req_tc, ctc, stc);
        CHECK(req_tc == 0);
        CHECK(ctc == 0);
        CHECK(stc == 0);
    }
    SECTION("set before rdma_resolve_route: the route's, the REQ's, the passive side's from the REQ") {
        run(0x20, -1, req_tc, ctc, stc);
        CHECK(req_tc == 0x20);
        CHECK(ctc == 0x20);
        CHECK(stc == 0x20);
    }
    SECTION("set again after rdma_resolve_route: the route keeps the first") {
        run(0x20, 0xB8, req_tc, ctc, stc);
        CHECK(req_tc == 0x20);
        CHECK(ctc == 0x20);
        CHECK(stc == 0x20);
    }
    SECTION("set only after rdma_resolve_route: no effect on this connection") {
        run(-1, 0xB8, req_tc, ctc, stc);
        CHECK(req_tc == 0);
        CHECK(ctc == 0);
        CHECK(stc == 0);
    }
    SECTION("an unknown ID: EINVAL") {
        Pair t;
        CHECK(t.client.agent->set_tos(12345, 0x20) == EINVAL);
    }
}

TEST_CASE("a REQ for a port nobody listens on is rejected: invalid service ID", "[cm][agent]") {
    Pair t;
    t.connect();
    t.net.run();
    const auto rej = t.client.of(cm::EventType::Rejected);
    REQUIRE(rej.size() == 1);
    CHECK(rej[0].status == int(cm::RejReason::InvalidServiceId));
    CHECK(t.server.agent->id_count() == 0);
    CHECK(t.client.agent->next_deadline() == 0);  // no retransmission after a REJ
    using A = cm::AttrId;
    CHECK(t.net.log == std::vector<A>{A::ConnectRequest, A::ConnectReject});
}

TEST_CASE("a lost REQ is sent again after the CM timeout", "[cm][agent]") {
    Pair t;
    t.listen();
    int lost = 0;
    t.net.lose = [&](cm::AttrId a) { return a == cm::AttrId::ConnectRequest && lost++ == 0; };
    t.connect();
    t.net.run();
    CHECK(t.server.of(cm::EventType::ConnectRequest).empty());
    t.net.advance(t.net.timing.req_ms - 1);
    CHECK(t.net.log.size() == 1);
    t.net.advance(1);
    REQUIRE(t.server.of(cm::EventType::ConnectRequest).size() == 1);
    t.accept();
    t.net.run();
    CHECK(t.client.of(cm::EventType::ConnectResponse).size() == 1);
}

TEST_CASE("a REQ that never arrives ends in UNREACHABLE after the retries", "[cm][agent]") {
    Pair t;
    t.listen();
    t.net.lose = [](cm::AttrId) { return true; };
    t.connect();
    for (uint32_t i = 0; i <= t.net.timing.max_retries; ++i) t.net.advance(t.net.timing.req_ms);
    const auto u = t.client.of(cm::EventType::Unreachable);
    REQUIRE(u.size() == 1);
    CHECK(u[0].status == -ETIMEDOUT);
    CHECK(t.net.log.size() == 1 + t.net.timing.max_retries);
    CHECK(t.client.agent->next_deadline() == 0);
}

TEST_CASE("a lost REP: the REQ's retransmission makes the server resend it", "[cm][agent]") {
    Pair t;
    t.listen();
    int lost = 0;
    t.net.lose = [&](cm::AttrId a) { return a == cm::AttrId::ConnectReply && lost++ == 0; };
    t.connect();
    t.net.run();
    t.accept();
    t.net.run();
    CHECK(t.client.of(cm::EventType::ConnectResponse).empty());
    t.net.advance(t.net.timing.req_ms);  // both time out: the REQ and the REP go again
    REQUIRE(t.client.of(cm::EventType::ConnectResponse).size() == 1);
    CHECK(t.server.of(cm::EventType::ConnectRequest).size() == 1);  // the repeat made no new ID
    REQUIRE(t.client.agent->establish(t.cid) == 0);
    t.net.run();
    CHECK(t.server.of(cm::EventType::Established).size() == 1);
}

TEST_CASE("a DREQ nobody answers ends in DISCONNECTED with ETIMEDOUT", "[cm][agent]") {
    Pair t;
    t.establish();
    t.net.lose = [](cm::AttrId a) { return a == cm::AttrId::DisconnectRequest; };
    REQUIRE(t.client.agent->disconnect(t.cid) == 0);
    for (uint32_t i = 0; i <= t.net.timing.max_retries; ++i) t.net.advance(t.net.timing.dreq_ms);
    const auto d = t.client.of(cm::EventType::Disconnected);
    REQUIRE(d.size() == 1);
    CHECK(d[0].status == -ETIMEDOUT);
}

// Found on a lossy wire (testbench/system/test_faults.sh, rping -V): rping's
// client destroys its ID right after rdma_disconnect; ib_cm would stop
// resending the DREQ then, and one lost DREQ leaves the server connected to
// nobody, waiting for ever. The destroyed ID lives on, unseen, resending.
TEST_CASE("a destroyed ID keeps resending its DREQ until the DREP comes", "[cm][agent]") {
    for (const bool disconnect_first : {true, false}) {
        DYNAMIC_SECTION((disconnect_first ? "rdma_disconnect, then destroy" : "destroyed while established")) {
            Pair t;
            t.establish();
            int lost = 0;
            t.net.lose = [&lost](cm::AttrId a) { return a == cm::AttrId::DisconnectRequest && lost++ < 2; };
            if (disconnect_first) REQUIRE(t.client.agent->disconnect(t.cid) == 0);
            REQUIRE(t.client.agent->destroy_id(t.cid) == 0);
            CHECK(t.client.agent->id_count() == 0);  // gone for the application
            CHECK(t.client.agent->state_name(t.cid).empty());
            for (int i = 0; i < 3; ++i) t.net.advance(t.net.timing.dreq_ms);
            t.net.run();
            CHECK(lost >= 3);  // two lost, a later one arrived
            REQUIRE(t.server.of(cm::EventType::Disconnected).size() == 1);
            REQUIRE(t.server.agent->disconnect(t.sid) == 0);  // its DREP
            t.net.run();
            CHECK(t.client.of(cm::EventType::Disconnected).empty());  // no event for a destroyed ID
            const size_t sent = t.net.log.size();
            for (uint32_t i = 0; i <= t.net.timing.max_retries; ++i) t.net.advance(t.net.timing.dreq_ms);
            CHECK(t.net.log.size() == sent);  // answered: no more DREQs
            CHECK(t.client.agent->next_deadline() == 0);
        }
    }
}

// Found by fuzz_cm: the client destroys its established ID (an orphan
// resending its DREQ) while the server disconnects too; the server's DREQ
// crosses the client's. The orphan answered it and stayed in TIMEWAIT for
// ever, holding its port: a later bind of that port failed with EADDRINUSE.
TEST_CASE("a destroyed ID whose DREQ crosses the peer's goes, and frees its port", "[cm][agent]") {
    Pair t;
    t.listen();
    REQUIRE(t.client.agent->create_id(2, cm::kPsTcp, t.cid) == 0);
    const uint16_t kClientPort = 7175;
    REQUIRE(t.client.agent->bind(t.cid, cm::ipv4_addr(kClientIp, kClientPort)) == 0);
    REQUIRE(t.client.agent->resolve_addr(t.cid, std::nullopt, cm::ipv4_addr(kServerIp, kPort)) == 0);
    REQUIRE(t.client.agent->resolve_route(t.cid) == 0);
    cm::ConnParam p;
    p.qp_num = 0x11;
    REQUIRE(t.client.agent->connect(t.cid, p) == 0);
    t.net.run();
    t.accept();
    t.net.run();
    REQUIRE(t.client.agent->establish(t.cid) == 0);
    t.net.run();
    REQUIRE(t.server.agent->state_name(t.sid) == "ESTABLISHED");
    // Both DREQs are on the wire before either arrives.
    REQUIRE(t.client.agent->destroy_id(t.cid) == 0);
    REQUIRE(t.server.agent->disconnect(t.sid) == 0);
    t.net.run();
    CHECK(t.server.of(cm::EventType::Disconnected).size() == 1);
    CHECK(t.client.of(cm::EventType::Disconnected).empty());  // no event for a destroyed ID
    CHECK(t.client.agent->next_deadline() == 0);
    for (uint32_t i = 0; i <= t.net.timing.max_retries; ++i) t.net.advance(t.net.timing.dreq_ms);
    uint32_t again = 0;
    REQUIRE(t.client.agent->create_id(2, cm::kPsTcp, again) == 0);
    CHECK(t.client.agent->bind(again, cm::ipv4_addr(kClientIp, kClientPort)) == 0);
}

// Found by fuzz_cm: a destroyed ID resending its DREQ when its device goes
// away was kept in ERROR for ever, holding its port.
TEST_CASE("a destroyed ID resending its DREQ goes with its device", "[cm][agent]") {
    Pair t;
    t.establish();
    std::string dev;
    cm::SockAddr src, dst;
    REQUIRE(t.client.agent->query(t.cid, dev, src, dst) == 0);
    t.net.lose = [](cm::AttrId a) { return a == cm::AttrId::DisconnectRequest; };
    REQUIRE(t.client.agent->destroy_id(t.cid) == 0);
    CHECK(t.client.agent->next_deadline() != 0);  // resending
    t.client.agent->remove_port("cli");
    CHECK(t.client.agent->next_deadline() == 0);
    CHECK(t.client.events.size() == 3);  // ADDR_RESOLVED, ROUTE_RESOLVED, CONNECT_RESPONSE: none for the orphan
    cm::Port p;
    p.device = "cli";
    p.gids = {{1, t.client.gid}};
    t.client.agent->set_port(p);
    uint32_t again = 0;
    REQUIRE(t.client.agent->create_id(2, cm::kPsTcp, again) == 0);
    CHECK(t.client.agent->bind(again, src) == 0);
}

TEST_CASE("an application that dies: its connection's peer gets DREQ, its listener goes", "[cm][agent]") {
    Pair t;
    t.establish();
    t.server.agent->destroy_channel(1);  // the server process is gone: listener and connection
    t.net.run();
    CHECK(t.server.agent->id_count() == 0);
    REQUIRE(t.client.of(cm::EventType::Disconnected).size() == 1);
    // The client answers; the DREP ends the server's orphaned ID (kept only
    // to resend its DREQ).
    REQUIRE(t.client.agent->disconnect(t.cid) == 0);
    t.net.run();
    CHECK(t.net.log.back() == cm::AttrId::DisconnectReply);
    // A new client finds no listener now.
    uint32_t c2 = 0;
    REQUIRE(t.client.agent->create_id(2, cm::kPsTcp, c2) == 0);
    REQUIRE(t.client.agent->resolve_addr(c2, std::nullopt, cm::ipv4_addr(kServerIp, kPort)) == 0);
    REQUIRE(t.client.agent->resolve_route(c2) == 0);
    REQUIRE(t.client.agent->connect(c2, cm::ConnParam{}) == 0);
    t.net.run();
    CHECK(t.client.of(cm::EventType::Rejected).size() == 1);
}

TEST_CASE("a client that dies before the REP: the server's accepted ID is rejected", "[cm][agent]") {
    Pair t;
    t.listen();
    t.connect();
    t.net.run();
    t.client.agent->destroy_channel(2);  // REQ_SENT: REJ (timeout)
    t.net.run();
    const auto rej = t.server.of(cm::EventType::Rejected);
    REQUIRE(rej.size() == 1);
    CHECK(rej[0].status == int(cm::RejReason::Timeout));
    cm::ConnParam p;
    CHECK(t.server.agent->accept(rej[0].id, p) == EINVAL);  // too late: nothing to accept
}

TEST_CASE("a DREQ for an unknown connection is answered with a DREP", "[cm][agent]") {
    Net net;
    Host a{net, "a", kServerIp, 1};
    Host b{net, "b", kClientIp, 2};
    cm::Dreq d;
    d.local_comm_id = 0x1234;
    d.remote_comm_id = 0x5678;
    const cm::Mad m = cm::encode(cm::MadHdr{}, d);
    a.agent->on_mad("a", b.gid, a.gid, m.data(), m.size());
    REQUIRE(net.wire.size() == 1);
    const cm::Drep r = cm::decode_drep(net.wire.front().mad.data());
    CHECK(r.local_comm_id == 0x5678);
    CHECK(r.remote_comm_id == 0x1234);
    CHECK(net.wire.front().dst == b.gid);
}

TEST_CASE("address errors: unknown local address, port clashes, state checks", "[cm][agent]") {
    Pair t;
    uint32_t a = 0, b = 0;
    REQUIRE(t.server.agent->create_id(1, cm::kPsTcp, a) == 0);
    CHECK(t.server.agent->bind(a, cm::ipv4_addr(0x0b000001, 1)) == EADDRNOTAVAIL);
    REQUIRE(t.server.agent->bind(a, cm::ipv4_addr(kServerIp, kPort)) == 0);
    REQUIRE(t.server.agent->listen(a) == 0);
    REQUIRE(t.server.agent->create_id(1, cm::kPsTcp, b) == 0);
    // A wildcard over a bound address: EADDRNOTAVAIL, as cma_check_port.
    CHECK(t.server.agent->bind(b, cm::ipv4_addr(0, kPort)) == EADDRNOTAVAIL);
    CHECK(t.server.agent->connect(b, cm::ConnParam{}) == EINVAL);
    uint32_t u = 0;
    CHECK(t.server.agent->create_id(1, 0x0002 /* RDMA_PS_IPOIB: no IPoIB on RoCE */, u) == EPROTONOSUPPORT);
    cm::QpAttr q;
    CHECK(t.server.agent->init_qp_attr(a, hw::QpState::Rtr, q) == EINVAL);
}

TEST_CASE("the address query waits for the neighbour: ADDR_RESOLVED when it answers, ADDR_ERROR when it never does",
          "[cm][agent]") {
    Net net;
    Host client{net, "cli", kClientIp, 99};
    bool known = false;
    client.ready = [&](const cm::Gid&) { return known; };
    uint32_t a = 0;
    REQUIRE(client.agent->create_id(2, cm::kPsTcp, a) == 0);
    REQUIRE(client.agent->resolve_addr(a, std::nullopt, cm::ipv4_addr(kServerIp, kPort), 2000) == 0);
    CHECK(client.events.empty());
    CHECK(client.agent->state_name(a) == "ADDR_QUERY");
    REQUIRE(client.asked.size() == 1);
    CHECK(client.asked[0] == cm::ipv4_gid(kServerIp));
    CHECK(client.agent->next_deadline() == net.now + cm::kAddrPollMs);
    CHECK(client.agent->resolve_route(a) == EINVAL);  // not resolved yet
    net.advance(cm::kAddrPollMs);
    CHECK(client.events.empty());
    known = true;  // the ARP reply came
    net.advance(cm::kAddrPollMs);
    REQUIRE(client.of(cm::EventType::AddrResolved).size() == 1);
    CHECK(client.agent->state_name(a) == "ADDR_RESOLVED");
    CHECK(client.agent->resolve_route(a) == 0);

    // A neighbour that never answers: ADDR_ERROR, -ETIMEDOUT, at the timeout.
    known = false;
    uint32_t b = 0;
    REQUIRE(client.agent->create_id(2, cm::kPsTcp, b) == 0);
    const uint64_t t0 = net.now;
    REQUIRE(client.agent->resolve_addr(b, std::nullopt, cm::ipv4_addr(0x0a000063, kPort), 500) == 0);
    while (client.of(cm::EventType::AddrError).empty() && net.now < t0 + 1000) net.advance(cm::kAddrPollMs);
    const auto err = client.of(cm::EventType::AddrError);
    REQUIRE(err.size() == 1);
    CHECK(err[0].id == b);
    CHECK(err[0].status == -ETIMEDOUT);
    CHECK(net.now >= t0 + 500);
    CHECK(net.now <= t0 + 500 + cm::kAddrPollMs);
    CHECK(client.agent->state_name(b) == "ADDR_BOUND");
    CHECK(client.agent->next_deadline() == 0);
    // It can be asked again (rdma_resolve_addr on the same ID), and destroyed.
    REQUIRE(client.agent->resolve_addr(b, std::nullopt, cm::ipv4_addr(0x0a000063, kPort), 500) == 0);
    CHECK(client.agent->state_name(b) == "ADDR_QUERY");
    CHECK(client.agent->destroy_id(b) == 0);
    CHECK(client.agent->next_deadline() == 0);
}

// ---- UD: service ID resolution (SIDR) for rdma_cm's UDP port space ----

namespace {

struct UdPair : Pair {
    void listen_ud() {
        REQUIRE(server.agent->create_id(1, cm::kPsUdp, listen_id) == 0);
        REQUIRE(server.agent->bind(listen_id, cm::ipv4_addr(0, kPort)) == 0);
        REQUIRE(server.agent->listen(listen_id) == 0);
    }
    void resolve_ud(std::vector<uint8_t> priv = {}) {
        REQUIRE(client.agent->create_id(2, cm::kPsUdp, cid) == 0);
        REQUIRE(client.agent->resolve_addr(cid, std::nullopt, cm::ipv4_addr(kServerIp, kPort)) == 0);
        if (tos_before_route >= 0) REQUIRE(client.agent->set_tos(cid, uint8_t(tos_before_route)) == 0);
        REQUIRE(client.agent->resolve_route(cid) == 0);
        cm::ConnParam p;
        p.private_data = std::move(priv);
        REQUIRE(client.agent->connect(cid, p) == 0);
    }
};

}  // namespace

TEST_CASE("SIDR: rdma_connect on a UDP ID learns the server's QPN, Q_Key and address vector", "[cm][agent][sidr]") {
    UdPair t;
    t.listen_ud();
    t.resolve_ud({0xa1, 0xa2, 0xa3});
    t.net.run();
    const auto req = t.server.of(cm::EventType::ConnectRequest);
    REQUIRE(req.size() == 1);
    CHECK(req[0].listen_id == t.listen_id);
    REQUIRE(req[0].param.private_data.size() >= 3);
    CHECK(req[0].param.private_data[0] == 0xa1);  // the application's, after rdma_cm's header
    CHECK(req[0].param.private_data[2] == 0xa3);
    CHECK(req[0].src.port == kPort);
    CHECK(req[0].dst.addr == cm::ipv4_gid(kClientIp));
    t.sid = req[0].id;
    CHECK(t.client.of(cm::EventType::Established).empty());  // nothing before the answer
    cm::ConnParam p;
    p.qp_num = 0x33;
    REQUIRE(t.server.agent->accept(t.sid, p) == 0);
    t.net.run();
    const auto est = t.client.of(cm::EventType::Established);
    REQUIRE(est.size() == 1);
    CHECK(est[0].status == 0);
    CHECK(est[0].param.qp_num == 0x33);
    CHECK(est[0].param.qkey == cm::kUdpQkey);
    REQUIRE(est[0].ah.has_value());
    CHECK(est[0].ah->dgid == cm::ipv4_gid(kServerIp));
    CHECK(est[0].ah->sgid_index == 1);
    CHECK(est[0].ah->hop_limit == cm::kHopLimit);
    // Nothing more on either side: no RTU, no ESTABLISHED for the server.
    using A = cm::AttrId;
    CHECK(t.net.log == std::vector<A>{A::SidrRequest, A::SidrReply});
    CHECK(t.server.of(cm::EventType::Established).empty());
    CHECK(t.client.agent->next_deadline() == 0);
    // The SIDR_REQ's service ID and the SIDR_REP's fields on the wire.
    const cm::SidrReq sq = cm::decode_sidr_req(t.net.mads[0].data());
    CHECK(sq.service_id == cm::service_id(cm::kPsUdp, kPort));
    const cm::SidrRep sp = cm::decode_sidr_rep(t.net.mads[1].data());
    CHECK(sp.request_id == sq.request_id);
    CHECK(sp.status == cm::SidrStatus::Success);
    CHECK(sp.service_id == sq.service_id);
    // Both QPs: INIT with rdma_cm's UDP Q_Key, then RTR and RTS on their own.
    cm::QpAttr init, rtr, rts;
    REQUIRE(t.client.agent->init_qp_attr(t.cid, hw::QpState::Init, init) == 0);
    CHECK(init.mask == (hw::qp_attr_mask::kState | hw::qp_attr_mask::kPkeyIndex | hw::qp_attr_mask::kPort |
                        hw::qp_attr_mask::kQkey));
    CHECK(init.qkey == cm::kUdpQkey);
    REQUIRE(t.server.agent->init_qp_attr(t.sid, hw::QpState::Rtr, rtr) == 0);
    CHECK(rtr.mask == hw::qp_attr_mask::kState);
    REQUIRE(t.server.agent->init_qp_attr(t.sid, hw::QpState::Rts, rts) == 0);
    CHECK(rts.mask == (hw::qp_attr_mask::kState | hw::qp_attr_mask::kSqPsn));
    CHECK(rts.sq_psn == 0);
    // Destroying either ID sends nothing.
    REQUIRE(t.client.agent->destroy_id(t.cid) == 0);
    REQUIRE(t.server.agent->destroy_id(t.sid) == 0);
    t.net.run();
    CHECK(t.net.log.size() == 2);
}

TEST_CASE("SIDR: the ToS set before rdma_resolve_route is ESTABLISHED's address vector's traffic class",
          "[cm][agent][sidr][tos]") {
    UdPair t;
    t.tos_before_route = 0x48;
    t.listen_ud();
    t.resolve_ud();
    t.net.run();
    const auto req = t.server.of(cm::EventType::ConnectRequest);
    REQUIRE(req.size() == 1);
    cm::ConnParam p;
    p.qp_num = 0x33;
    REQUIRE(t.server.agent->accept(req[0].id, p) == 0);
    t.net.run();
    const auto est = t.client.of(cm::EventType::Established);
    REQUIRE(est.size() == 1);
    REQUIRE(est[0].ah.has_value());
    CHECK(est[0].ah->traffic_class == 0x48);
}

TEST_CASE("SIDR: rejected, unknown service, lost and repeated requests", "[cm][agent][sidr]") {
    using A = cm::AttrId;
    SECTION("rdma_reject answers with status Rejected: UNREACHABLE") {
        UdPair t;
        t.listen_ud();
        t.resolve_ud();
        t.net.run();
        REQUIRE(t.server.of(cm::EventType::ConnectRequest).size() == 1);
        REQUIRE(t.server.agent->reject(t.server.of(cm::EventType::ConnectRequest)[0].id, {}) == 0);
        t.net.run();
        const auto u = t.client.of(cm::EventType::Unreachable);
        REQUIRE(u.size() == 1);
        CHECK(u[0].status == int(cm::SidrStatus::Rejected));
        CHECK(t.client.of(cm::EventType::Established).empty());
    }
    SECTION("nobody listens on the service ID (or only an RC listener): status Unsupported") {
        UdPair t;
        t.listen();  // an RC listener on the same port number
        t.resolve_ud();
        t.net.run();
        CHECK(t.server.of(cm::EventType::ConnectRequest).empty());
        const auto u = t.client.of(cm::EventType::Unreachable);
        REQUIRE(u.size() == 1);
        CHECK(u[0].status == int(cm::SidrStatus::Unsupported));
        CHECK(t.net.log == std::vector<A>{A::SidrRequest, A::SidrReply});
    }
    SECTION("a lost SIDR_REQ is sent again after the SIDR timeout, and a lost SIDR_REP answered again") {
        UdPair t;
        t.listen_ud();
        int lost_req = 0, lost_rep = 0;
        t.net.lose = [&](cm::AttrId a) {
            return (a == A::SidrRequest && lost_req++ == 0) || (a == A::SidrReply && lost_rep++ == 0);
        };
        t.resolve_ud();
        t.net.run();
        CHECK(t.server.of(cm::EventType::ConnectRequest).empty());
        t.net.advance(t.net.timing.sidr_ms - 1);
        CHECK(t.net.log.size() == 1);
        t.net.advance(1);
        REQUIRE(t.server.of(cm::EventType::ConnectRequest).size() == 1);
        cm::ConnParam p;
        p.qp_num = 0x44;
        REQUIRE(t.server.agent->accept(t.server.of(cm::EventType::ConnectRequest)[0].id, p) == 0);
        t.net.run();  // the SIDR_REP is lost
        CHECK(t.client.of(cm::EventType::Established).empty());
        t.net.advance(t.net.timing.sidr_ms);  // the repeat gets the same answer, no new ID
        REQUIRE(t.client.of(cm::EventType::Established).size() == 1);
        CHECK(t.client.of(cm::EventType::Established)[0].param.qp_num == 0x44);
        CHECK(t.server.of(cm::EventType::ConnectRequest).size() == 1);
    }
    SECTION("a SIDR_REQ nobody answers ends in UNREACHABLE with ETIMEDOUT") {
        UdPair t;
        t.listen_ud();
        t.net.lose = [](cm::AttrId) { return true; };
        t.resolve_ud();
        for (uint32_t i = 0; i <= t.net.timing.max_retries; ++i) t.net.advance(t.net.timing.sidr_ms);
        const auto u = t.client.of(cm::EventType::Unreachable);
        REQUIRE(u.size() == 1);
        CHECK(u[0].status == -ETIMEDOUT);
        CHECK(t.net.log.size() == 1 + t.net.timing.max_retries);
    }
    SECTION("a server that destroys the request's ID without answering refuses it") {
        UdPair t;
        t.listen_ud();
        t.resolve_ud();
        t.net.run();
        REQUIRE(t.server.agent->destroy_id(t.server.of(cm::EventType::ConnectRequest)[0].id) == 0);
        t.net.run();
        REQUIRE(t.client.of(cm::EventType::Unreachable).size() == 1);
        CHECK(t.client.of(cm::EventType::Unreachable)[0].status == int(cm::SidrStatus::Rejected));
    }
}

// rdma_join_multicast on RoCE (cma_iboe_join_multicast): no MAD on the wire,
// MULTICAST_JOIN at once with the group's address vector, QPN 0xFFFFFF and
// RDMA_UDP_QKEY; an ID without an address, or a unicast group, is refused.
TEST_CASE("join_multicast: MULTICAST_JOIN with the MGID as DGID, QPN 0xFFFFFF, RDMA_UDP_QKEY", "[cm][agent][mcast]") {
    Net net;
    Host h{net, "dev", kClientIp, 5};
    uint32_t id = 0;
    REQUIRE(h.agent->create_id(2, cm::kPsUdp, id) == 0);
    const cm::SockAddr group = cm::ipv4_addr(0xEF010203, 0);  // 239.1.2.3
    CHECK(h.agent->join_multicast(id, group) == EINVAL);       // no address yet
    // mckey: rdma_resolve_addr to the group itself, bound to the device's address.
    h.ready = [](const cm::Gid&) { return false; };  // a group has no neighbour to wait for
    REQUIRE(h.agent->resolve_addr(id, cm::ipv4_addr(kClientIp, 0), group) == 0);
    REQUIRE(h.of(cm::EventType::AddrResolved).size() == 1);
    CHECK(h.asked.empty());
    CHECK(h.agent->join_multicast(id, cm::ipv4_addr(0x0a000009, 0)) == EINVAL);  // 10.0.0.9
    CHECK(h.agent->join_multicast(id, cm::ipv4_addr(0xF0000001, 0)) == EINVAL);  // 240.0.0.1
    REQUIRE(h.agent->join_multicast(id, group) == 0);
    const auto joins = h.of(cm::EventType::MulticastJoin);
    REQUIRE(joins.size() == 1);
    const cm::Event& e = joins[0];
    CHECK(e.id == id);
    CHECK(e.status == 0);
    CHECK(e.device == "dev");
    CHECK(e.param.qp_num == 0xFFFFFFu);
    CHECK(e.param.qkey == 0x01234567u);
    REQUIRE(e.ah);
    const cm::Gid mgid{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 239, 1, 2, 3};
    CHECK(e.ah->dgid == mgid);
    CHECK(e.ah->sgid_index == 1);  // the bound address's GID
    CHECK(e.ah->hop_limit == 64);
    CHECK(net.log.empty());  // nothing on the wire: RoCE has no SA
    // An IPv6 group is its own MGID.
    cm::SockAddr g6;
    g6.v6 = true;
    g6.addr = cm::Gid{0xff, 0x0e, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3};
    REQUIRE(h.agent->join_multicast(id, g6) == 0);
    REQUIRE(h.of(cm::EventType::MulticastJoin).size() == 2);
    CHECK(h.of(cm::EventType::MulticastJoin)[1].ah->dgid == g6.addr);
    CHECK(std::string(cm::to_string(cm::EventType::MulticastJoin)) == "MULTICAST_JOIN");
}

TEST_CASE("list: the IDs as rdma_cm reports them to `rdma resource show cm_id`", "[cm][agent]") {
    Pair t;
    uint32_t idle = 0;
    REQUIRE(t.server.agent->create_id(1, cm::kPsUdp, idle) == 0);
    CHECK(t.server.agent->list().empty());  // no device yet: not tracked
    t.listen();
    // A wildcard listener is on every device: here the one.
    auto l = t.server.agent->list();
    REQUIRE(l.size() == 1);
    CHECK(l[0].id == t.listen_id);
    CHECK(l[0].channel == 1);
    CHECK(l[0].device == "srv");
    CHECK(std::string(l[0].state) == "LISTEN");
    CHECK(l[0].ps == cm::kPsTcp);
    CHECK(l[0].src.port == kPort);
    CHECK(l[0].src.any());
    CHECK(l[0].qpn == 0);
    CHECK(t.server.agent->list("other").empty());

    t.connect();
    t.net.run();
    // Every step of connecting is CONNECT, the REQ's QP known on both sides
    // once given (the server's at accept).
    auto c = t.client.agent->list("cli");
    REQUIRE(c.size() == 1);
    CHECK(std::string(c[0].state) == "CONNECT");
    CHECK(c[0].qpn == 0x11);
    CHECK(c[0].dst.addr == cm::ipv4_gid(kServerIp));
    CHECK(c[0].dst.port == kPort);
    t.accept();
    t.net.run();
    REQUIRE(t.client.agent->establish(t.cid) == 0);
    t.net.run();
    l = t.server.agent->list();
    REQUIRE(l.size() == 2);
    CHECK(l[1].id == t.sid);
    CHECK(std::string(l[1].state) == "CONNECT");
    CHECK(l[1].qpn == 0x22);
    CHECK(l[1].src.port == kPort);  // the listener's port
    CHECK(l[1].dst.addr == cm::ipv4_gid(kClientIp));

    // Disconnecting, then destroyed while its DREQ waits: gone from the list
    // though the agent keeps it to resend the DREQ.
    REQUIRE(t.server.agent->disconnect(t.sid) == 0);
    CHECK(std::string(t.server.agent->list()[1].state) == "DISCONNECT");
    t.net.lose = [](cm::AttrId a) { return a == cm::AttrId::DisconnectReply; };
    t.net.run();
    REQUIRE(t.server.agent->destroy_id(t.sid) == 0);
    l = t.server.agent->list();
    REQUIRE(l.size() == 1);
    CHECK(l[0].id == t.listen_id);
}

TEST_CASE("a listener whose channel holds the most IDs it may drops further REQs, their resends find room later",
          "[cm][agent][limits]") {
    Pair t;
    t.server.agent->set_max_ids_per_channel(2);  // the listener and one connection
    t.listen();
    t.connect();
    t.net.run();
    t.accept();
    t.net.run();
    REQUIRE(t.server.of(cm::EventType::ConnectRequest).size() == 1);
    // A second client: its REQ is dropped unanswered (no REJ: ib_cm's
    // answer to a REQ its rdma_cm had no memory for), and the agent keeps
    // nothing of it.
    uint32_t c2 = 0;
    REQUIRE(t.client.agent->create_id(2, cm::kPsTcp, c2) == 0);
    REQUIRE(t.client.agent->resolve_addr(c2, std::nullopt, cm::ipv4_addr(kServerIp, kPort)) == 0);
    REQUIRE(t.client.agent->resolve_route(c2) == 0);
    cm::ConnParam p;
    p.qp_num = 0x33;
    REQUIRE(t.client.agent->connect(c2, p) == 0);
    const size_t sent = t.net.log.size();
    t.net.run();
    CHECK(t.server.of(cm::EventType::ConnectRequest).size() == 1);
    CHECK(t.server.agent->id_count(1) == 2);
    CHECK(t.net.log.size() == sent);  // nothing answered
    CHECK(t.client.of(cm::EventType::Rejected).empty());
    // The server's connection goes; the REQ's resend is taken.
    REQUIRE(t.server.agent->destroy_id(t.sid) == 0);
    t.net.run();
    t.net.advance(t.net.timing.req_ms);
    const auto reqs = t.server.of(cm::EventType::ConnectRequest);
    REQUIRE(reqs.size() == 2);
    CHECK(reqs[1].param.qp_num == 0x33);
    CHECK(t.server.agent->id_count(1) == 2);
}

TEST_CASE("a SIDR_REQ for a listener whose channel is full is answered REJECT", "[cm][agent][sidr][limits]") {
    Net net;
    Host server{net, "srv", kServerIp, 7};
    Host client{net, "cli", kClientIp, 99};
    server.agent->set_max_ids_per_channel(1);  // the listener alone
    uint32_t l = 0, c = 0;
    REQUIRE(server.agent->create_id(1, cm::kPsUdp, l) == 0);
    REQUIRE(server.agent->bind(l, cm::ipv4_addr(0, kPort)) == 0);
    REQUIRE(server.agent->listen(l) == 0);
    REQUIRE(client.agent->create_id(2, cm::kPsUdp, c) == 0);
    REQUIRE(client.agent->resolve_addr(c, std::nullopt, cm::ipv4_addr(kServerIp, kPort)) == 0);
    REQUIRE(client.agent->resolve_route(c) == 0);
    REQUIRE(client.agent->connect(c, cm::ConnParam{}) == 0);
    net.run();
    CHECK(server.of(cm::EventType::ConnectRequest).empty());
    const auto un = client.of(cm::EventType::Unreachable);
    REQUIRE(un.size() == 1);
    CHECK(un[0].status == int(cm::SidrStatus::Rejected));
}

TEST_CASE("ECE: connect and accept send it in the REQ and REP, CONNECT_REQUEST and CONNECT_RESPONSE report the peer's",
          "[cm][agent][ece]") {
    Pair t;
    t.listen();
    REQUIRE(t.client.agent->create_id(2, cm::kPsTcp, t.cid) == 0);
    REQUIRE(t.client.agent->resolve_addr(t.cid, std::nullopt, cm::ipv4_addr(kServerIp, kPort)) == 0);
    REQUIRE(t.client.agent->resolve_route(t.cid) == 0);
    cm::ConnParam p;
    p.qp_num = 0x11;
    p.ece_vendor_id = 0x02c9;  // librdmacm's local_ece
    p.ece_options = 0x5;
    REQUIRE(t.client.agent->connect(t.cid, p) == 0);
    t.net.run();
    REQUIRE(t.net.mads.size() == 1);
    cm::MadHdr h;
    REQUIRE(cm::decode_hdr(t.net.mads[0].data(), cm::kMadBytes, h) == cm::MadError::Ok);
    CHECK(h.attr_mod == 0x5);
    CHECK(cm::decode_req(t.net.mads[0].data()).vendor_id == 0x02c9);
    const auto req = t.server.of(cm::EventType::ConnectRequest);
    REQUIRE(req.size() == 1);
    CHECK(req[0].param.ece_vendor_id == 0x02c9);
    CHECK(req[0].param.ece_options == 0x5);

    // librdmacm answers with the REQ's vendor ID and its own options.
    t.sid = req[0].id;
    cm::ConnParam a;
    a.qp_num = 0x22;
    a.ece_vendor_id = 0x02c9;
    a.ece_options = 0x1;
    REQUIRE(t.server.agent->accept(t.sid, a) == 0);
    t.net.run();
    REQUIRE(t.net.mads.size() == 2);
    REQUIRE(cm::decode_hdr(t.net.mads[1].data(), cm::kMadBytes, h) == cm::MadError::Ok);
    CHECK(h.attr_mod == 0x1);
    CHECK(cm::decode_rep(t.net.mads[1].data()).vendor_id == 0x02c9);
    const auto rsp = t.client.of(cm::EventType::ConnectResponse);
    REQUIRE(rsp.size() == 1);
    CHECK(rsp[0].param.ece_vendor_id == 0x02c9);
    CHECK(rsp[0].param.ece_options == 0x1);
    // A retransmitted REP is the same MAD, ECE and all.
    t.net.lose = [](cm::AttrId) { return true; };
    t.net.advance(t.net.timing.req_ms);
    REQUIRE(t.net.mads.size() == 3);
    CHECK(t.net.mads[2] == t.net.mads[1]);
}

TEST_CASE("rdma_reject_ece: REJ with reason 35 and REJECTED with status 35, only 0, 28 and 35 are taken",
          "[cm][agent][ece]") {
    Pair t;
    t.listen();
    t.connect();
    t.net.run();
    const auto req = t.server.of(cm::EventType::ConnectRequest);
    REQUIRE(req.size() == 1);
    t.sid = req[0].id;
    CHECK(t.server.agent->reject(t.sid, {}, 8) == EINVAL);  // ucma_reject takes no other reason
    CHECK(t.server.agent->reject(t.sid, {}, 36) == EINVAL);
    CHECK(t.server.agent->state_name(t.sid) == "REQ_RCVD");
    REQUIRE(t.server.agent->reject(t.sid, {0xab}, uint8_t(cm::RejReason::VendorOptionNotSupported)) == 0);
    t.net.run();
    REQUIRE(t.net.log.back() == cm::AttrId::ConnectReject);
    const cm::Rej j = cm::decode_rej(t.net.mads.back().data());
    CHECK(j.reason == 35);
    CHECK(j.msg_rejected == cm::RejMsg::Req);
    CHECK(j.private_data[0] == 0xab);
    const auto rej = t.client.of(cm::EventType::Rejected);
    REQUIRE(rej.size() == 1);
    CHECK(rej[0].status == 35);

    // rdma_reject: no reason given is the consumer's (28).
    Pair u;
    u.listen();
    u.connect();
    u.net.run();
    u.sid = u.server.of(cm::EventType::ConnectRequest).at(0).id;
    REQUIRE(u.server.agent->reject(u.sid, {}) == 0);
    u.net.run();
    CHECK(cm::decode_rej(u.net.mads.back().data()).reason == 28);
    REQUIRE(u.client.of(cm::EventType::Rejected).size() == 1);
    CHECK(u.client.of(cm::EventType::Rejected)[0].status == 28);
}

TEST_CASE("rdma_notify: COMM_EST establishes a connection whose RTU is late, EISCONN once established, EINVAL before",
          "[cm][agent][notify]") {
    constexpr uint32_t kCommEst = 4, kPathMig = 6, kQpFatal = 1;
    Pair t;
    t.listen();
    // Not connecting: the listener (no device of its own) and an ID with
    // only an address.
    CHECK(t.server.agent->notify(t.listen_id, kCommEst) == EINVAL);
    t.connect();
    CHECK(t.client.agent->notify(t.cid, kCommEst) == EINVAL);  // REQ_SENT
    t.net.run();
    t.accept();
    CHECK(t.server.agent->notify(t.sid, kQpFatal) == EINVAL);
    CHECK(t.server.agent->notify(t.sid, kPathMig) == EINVAL);  // not established yet
    // The RTU is lost: the server's QP saw the client's first packet and the
    // application says so.
    t.net.lose = [](cm::AttrId a) { return a == cm::AttrId::ReadyToUse; };
    t.net.run();
    REQUIRE(t.client.agent->establish(t.cid) == 0);
    t.net.run();
    REQUIRE(t.server.of(cm::EventType::Established).empty());
    CHECK(t.server.agent->state_name(t.sid) == "REP_SENT");
    REQUIRE(t.server.agent->notify(t.sid, kCommEst) == 0);
    CHECK(t.server.agent->state_name(t.sid) == "ESTABLISHED");
    const auto est = t.server.of(cm::EventType::Established);
    REQUIRE(est.size() == 1);
    CHECK(est[0].id == t.sid);
    CHECK(est[0].status == 0);
    // The REP is no longer resent.
    const size_t sent = t.net.mads.size();
    t.net.advance(t.net.timing.req_ms * 2);
    CHECK(t.net.mads.size() == sent);
    CHECK(t.server.agent->notify(t.sid, kCommEst) == EISCONN);
    CHECK(t.client.agent->notify(t.cid, kCommEst) == EISCONN);
    CHECK(t.server.agent->notify(t.sid, kPathMig) == 0);
    CHECK(t.server.of(cm::EventType::Established).size() == 1);
    // Disconnecting: no longer.
    REQUIRE(t.client.agent->disconnect(t.cid) == 0);
    CHECK(t.client.agent->notify(t.cid, kCommEst) == EINVAL);
}

namespace {
// The traffic class each MAD of `what` the net carried went with, in order.
std::vector<uint8_t> tclass_of(const Net& n, cm::AttrId what) {
    std::vector<uint8_t> v;
    for (size_t i = 0; i < n.log.size(); ++i)
        if (n.log[i] == what) v.push_back(n.tclass[i]);
    return v;
}
cm::SockAddr ipv6_any(uint16_t port) {
    cm::SockAddr a;
    a.v6 = true;
    a.port = port;
    return a;
}
}  // namespace

TEST_CASE("rdma_set_option REUSEADDR: both IDs must allow it, a listener stays alone, rdma_cm's state rules",
          "[cm][agent]") {
    Pair t;
    auto& ag = *t.server.agent;
    uint32_t a = 0, b = 0, c = 0;
    REQUIRE(ag.create_id(1, cm::kPsTcp, a) == 0);
    REQUIRE(ag.create_id(1, cm::kPsTcp, b) == 0);
    REQUIRE(ag.create_id(1, cm::kPsTcp, c) == 0);
    REQUIRE(ag.set_reuseaddr(a, true) == 0);
    REQUIRE(ag.set_reuseaddr(b, true) == 0);
    REQUIRE(ag.bind(a, cm::ipv4_addr(kServerIp, kPort)) == 0);
    CHECK(ag.bind(b, cm::ipv4_addr(kServerIp, kPort)) == 0);   // both allow it
    CHECK(ag.bind(c, cm::ipv4_addr(kServerIp, kPort)) == EADDRINUSE);  // c does not
    // Once bound, reuse may be turned on but not off.
    CHECK(ag.set_reuseaddr(a, false) == EINVAL);
    CHECK(ag.set_reuseaddr(a, true) == 0);
    // A listener may not share its address: EADDRINUSE while b holds it.
    CHECK(ag.listen(a) == EADDRINUSE);
    REQUIRE(ag.destroy_id(b) == 0);
    REQUIRE(ag.listen(a) == 0);
    CHECK(ag.set_reuseaddr(a, true) == EINVAL);  // LISTEN
    // The listener is no longer reusable: a reusing ID cannot join it.
    uint32_t d = 0;
    REQUIRE(ag.create_id(1, cm::kPsTcp, d) == 0);
    REQUIRE(ag.set_reuseaddr(d, true) == 0);
    CHECK(ag.bind(d, cm::ipv4_addr(kServerIp, kPort)) == EADDRINUSE);
    CHECK(ag.set_reuseaddr(99, true) == EINVAL);
}

TEST_CASE("rdma_set_option AFONLY: IPv4 and IPv6 share a port only if both are AF-only, a listener that is not "
          "takes both", "[cm][agent]") {
    SECTION("bind") {
        Pair t;
        auto& ag = *t.server.agent;
        uint32_t v4 = 0, v6 = 0;
        REQUIRE(ag.create_id(1, cm::kPsTcp, v4) == 0);
        REQUIRE(ag.create_id(1, cm::kPsTcp, v6) == 0);
        REQUIRE(ag.bind(v4, cm::ipv4_addr(0, kPort)) == 0);  // IPv4: AF-only
        // IPv6 without AFONLY (bindv6only 0) also takes IPv4: the port is taken.
        CHECK(ag.bind(v6, ipv6_any(kPort)) == EADDRNOTAVAIL);
        REQUIRE(ag.set_afonly(v6, true) == 0);
        CHECK(ag.bind(v6, ipv6_any(kPort)) == 0);
        REQUIRE(ag.listen(v6) == 0);
        CHECK(ag.set_afonly(v6, false) == EINVAL);  // LISTEN
        // net.ipv6.bindv6only = 1 makes IPv6 IDs AF-only by default.
        Pair u;
        uint32_t w4 = 0, w6 = 0;
        u.server.agent->set_bindv6only(true);
        REQUIRE(u.server.agent->create_id(1, cm::kPsTcp, w4) == 0);
        REQUIRE(u.server.agent->create_id(1, cm::kPsTcp, w6) == 0);
        REQUIRE(u.server.agent->bind(w4, cm::ipv4_addr(0, kPort)) == 0);
        CHECK(u.server.agent->bind(w6, ipv6_any(kPort)) == 0);
    }
    SECTION("an IPv6 wildcard listener that is not AF-only takes an IPv4 request") {
        Pair t;
        REQUIRE(t.server.agent->create_id(1, cm::kPsTcp, t.listen_id) == 0);
        REQUIRE(t.server.agent->bind(t.listen_id, ipv6_any(kPort)) == 0);
        REQUIRE(t.server.agent->listen(t.listen_id) == 0);
        t.connect();
        t.net.run();
        const auto req = t.server.of(cm::EventType::ConnectRequest);
        REQUIRE(req.size() == 1);
        CHECK(req[0].listen_id == t.listen_id);
        CHECK_FALSE(req[0].src.v6);  // the connection is IPv4
    }
    SECTION("an AF-only IPv6 listener does not: the IPv4 REQ is rejected") {
        Pair t;
        REQUIRE(t.server.agent->create_id(1, cm::kPsTcp, t.listen_id) == 0);
        REQUIRE(t.server.agent->set_afonly(t.listen_id, true) == 0);
        REQUIRE(t.server.agent->bind(t.listen_id, ipv6_any(kPort)) == 0);
        REQUIRE(t.server.agent->listen(t.listen_id) == 0);
        t.connect();
        t.net.run();
        CHECK(t.server.of(cm::EventType::ConnectRequest).empty());
        REQUIRE(t.client.of(cm::EventType::Rejected).size() == 1);
        CHECK(t.client.of(cm::EventType::Rejected)[0].status == int(cm::RejReason::InvalidServiceId));
    }
}

TEST_CASE("rdma_set_option ACK_TIMEOUT: the RC QP's local ACK timeout at RTS, EINVAL for UD", "[cm][agent]") {
    Pair t;
    t.establish();
    cm::QpAttr rts;
    REQUIRE(t.client.agent->init_qp_attr(t.cid, hw::QpState::Rts, rts) == 0);
    CHECK(rts.timeout == cm::kLocalAckTimeout);  // the path's, by default
    REQUIRE(t.client.agent->set_ack_timeout(t.cid, 14) == 0);  // any state
    REQUIRE(t.client.agent->init_qp_attr(t.cid, hw::QpState::Rts, rts) == 0);
    CHECK((rts.mask & hw::qp_attr_mask::kTimeout) != 0);
    CHECK(rts.timeout == 14);
    REQUIRE(t.server.agent->init_qp_attr(t.sid, hw::QpState::Rts, rts) == 0);
    CHECK(rts.timeout == cm::kLocalAckTimeout);  // the other side keeps its own
    uint32_t ud = 0;
    REQUIRE(t.client.agent->create_id(2, cm::kPsUdp, ud) == 0);
    CHECK(t.client.agent->set_ack_timeout(ud, 14) == EINVAL);
}

TEST_CASE("the ToS set before the route goes with every MAD of the connection, an answer without one goes with "
          "none over IPv4", "[cm][agent]") {
    Pair t;
    t.tos_before_route = 0x20;
    t.establish();
    REQUIRE(t.client.agent->disconnect(t.cid) == 0);
    t.net.run();
    REQUIRE(t.server.agent->disconnect(t.sid) == 0);  // the DREP, as rdma_disconnect sends it
    t.net.run();
    CHECK(tclass_of(t.net, cm::AttrId::ConnectRequest) == std::vector<uint8_t>{0x20});
    CHECK(tclass_of(t.net, cm::AttrId::ConnectReply) == std::vector<uint8_t>{0x20});  // the REQ's path
    CHECK(tclass_of(t.net, cm::AttrId::ReadyToUse) == std::vector<uint8_t>{0x20});
    CHECK(tclass_of(t.net, cm::AttrId::DisconnectRequest) == std::vector<uint8_t>{0x20});
    CHECK(tclass_of(t.net, cm::AttrId::DisconnectReply) == std::vector<uint8_t>{0x20});
    // A REQ no one listens for: ib_cm's REJ is made from the received
    // packet, whose IPv4 TOS it does not carry over.
    Pair u;
    u.tos_before_route = 0x20;
    u.connect();
    u.net.run();
    CHECK(tclass_of(u.net, cm::AttrId::ConnectRequest) == std::vector<uint8_t>{0x20});
    CHECK(tclass_of(u.net, cm::AttrId::ConnectReject) == std::vector<uint8_t>{0});
}

TEST_CASE("rdma_set_option IB_PATH: the record is the route, ROUTE_RESOLVED at once, and the REQ and QP carry it",
          "[cm][agent]") {
    Pair t;
    t.listen();
    auto& ag = *t.client.agent;
    REQUIRE(ag.create_id(2, cm::kPsTcp, t.cid) == 0);
    cm::PathRecord path;
    path.sgid = t.client.gid;
    path.dgid = t.server.gid;
    path.flow_label = 0x12345;
    path.hop_limit = 17;
    path.traffic_class = 0x48;
    path.mtu = 2;  // 512
    path.packet_life_time = 12;
    CHECK(ag.set_ib_path(t.cid, path) == EINVAL);  // not ADDR_RESOLVED yet
    REQUIRE(ag.resolve_addr(t.cid, std::nullopt, cm::ipv4_addr(kServerIp, kPort)) == 0);
    cm::PathRecord bad = path;
    bad.sgid = t.server.gid;  // not this device's
    CHECK(ag.set_ib_path(t.cid, bad) == EINVAL);
    bad = path;
    bad.mtu = 0;
    CHECK(ag.set_ib_path(t.cid, bad) == EINVAL);
    CHECK(t.client.of(cm::EventType::RouteResolved).empty());
    REQUIRE(ag.set_ib_path(t.cid, path) == 0);
    CHECK(t.client.of(cm::EventType::RouteResolved).size() == 1);
    CHECK(ag.state_name(t.cid) == "ROUTE_RESOLVED");
    CHECK(ag.set_ib_path(t.cid, path) == EINVAL);  // once
    cm::ConnParam p;
    p.qp_num = 0x11;
    REQUIRE(ag.connect(t.cid, p) == 0);
    REQUIRE(t.net.mads.size() == 1);
    const cm::Req r = cm::decode_req(t.net.mads[0].data());
    CHECK(r.primary_hop_limit == 17);
    CHECK(r.primary_traffic_class == 0x48);
    CHECK(r.primary_flow_label == 0x12345);
    CHECK(r.path_mtu == 2);
    CHECK(r.primary_local_ack_timeout == 13);
    CHECK(t.net.tclass[0] == 0x48);
    t.net.run();
    t.accept();
    t.net.run();
    cm::QpAttr rtr, rts;
    REQUIRE(ag.init_qp_attr(t.cid, hw::QpState::Rtr, rtr) == 0);
    REQUIRE(ag.init_qp_attr(t.cid, hw::QpState::Rts, rts) == 0);
    CHECK(rtr.hop_limit == 17);
    CHECK(rtr.traffic_class == 0x48);
    CHECK(rtr.flow_label == 0x12345);
    CHECK(rtr.path_mtu == 2);
    CHECK(rts.timeout == 13);  // packet life time + 1
    // The passive side's path is the REQ's.
    REQUIRE(t.server.agent->init_qp_attr(t.sid, hw::QpState::Rtr, rtr) == 0);
    REQUIRE(t.server.agent->init_qp_attr(t.sid, hw::QpState::Rts, rts) == 0);
    CHECK(rtr.hop_limit == 17);
    CHECK(rtr.traffic_class == 0x48);
    CHECK(rts.timeout == 13);
}
