// Congestion control wired into the transport core (docs/model.md,
// "Congestion control"): a switch on the in-memory wire marks CE, the
// receiving QP's notification point answers with CNPs, the sending QP's
// reaction point lowers its rate and its requester paces its packets.
#include <catch2/catch.hpp>

#include <cmath>

#include "harness.h"
#include "simnic/roce/ecn.h"
#include "simnic/roce/opcode.h"

using namespace tb;
namespace cg = simnic::congestion;

namespace {

constexpr uint32_t kQpA = 0x11, kQpB = 0x12;

// Both QPs with congestion control on, at the paper's defaults (line rate
// 100 Gb/s, alpha 1 at first, N = 50 us).
Fabric cc_fabric(hw::QpType type = hw::QpType::Rc, cg::DcqcnConfig dc = {}) {
    return Fabric(type, roce::IbMtu::Mtu1024, [dc](QpConfig& c, int) { c.dcqcn = dc; });
}

SendWqe write_wqe(uint64_t wr_id, const Buf& src, const Buf& dst, uint32_t len) {
    SendWqe w = wqe(hw::WrOpcode::RdmaWrite, wr_id, {src.sge(0, len)});
    w.remote_addr = dst.addr;
    w.rkey = dst.mr->rkey;
    return w;
}

struct Seen {
    roce::Packet pkt;
    int from;
    uint64_t at;
    size_t len;
    roce::Ecn ecn;
};

std::vector<Seen> seen(const Fabric& f) {
    std::vector<Seen> v;
    for (const Frame& fr : f.log) {
        Seen s;
        REQUIRE(roce::decode_frame(fr.bytes.data(), fr.bytes.size(), s.pkt).ok());  // ICRC checked
        s.from = fr.from;
        s.at = fr.at;
        s.len = fr.bytes.size();
        s.ecn = *roce::read_frame_ecn(fr.bytes.data(), fr.bytes.size());
        v.push_back(s);
    }
    return v;
}

std::vector<Seen> cnps(const Fabric& f) {
    std::vector<Seen> v;
    for (auto& s : seen(f))
        if (s.pkt.hdr.bth.opcode == roce::op::CNP) v.push_back(s);
    return v;
}

bool is_request(const roce::Packet& p) { return p.opinfo().has(roce::kRequest); }

}  // namespace

TEST_CASE("congestion: CE on data packets makes one CNP per QP per interval N", "[transport][congestion]") {
    Fabric f = cc_fabric();
    Buf src = make_buf(f.a(), 8192, kAllAccess, 1);
    Buf dst = make_buf(f.b(), 8192, kAllAccess);
    // The switch marks every request packet A sends.
    f.ce_mark = [](const roce::Packet& p, size_t) { return is_request(p) && p.hdr.bth.dqpn == kQpB; };

    REQUIRE(f.a().qp->post_send(write_wqe(1, src, dst, 8192)) == PostStatus::Ok);  // 8 packets
    f.run();
    CHECK(f.ce_marked == 8);
    auto c = cnps(f);
    REQUIRE(c.size() == 1);  // eight CE marks inside N: one CNP
    const roce::Packet& cnp = c[0].pkt;
    CHECK(c[0].from == 1);
    CHECK(cnp.hdr.bth.opcode == 0x81);
    CHECK(cnp.hdr.bth.dqpn == kQpA);  // the QP that sent the marked packets
    CHECK(cnp.hdr.bth.becn);
    CHECK_FALSE(cnp.hdr.bth.fecn);
    CHECK(cnp.hdr.bth.psn == 0);
    CHECK_FALSE(cnp.hdr.bth.ack_req);
    CHECK(cnp.hdr.bth.pkey == 0xffff);
    CHECK(cnp.ip4.src == 0x0a000002);
    CHECK(cnp.ip4.dst == 0x0a000001);
    CHECK(c[0].ecn == roce::Ecn::NotEct);  // a CNP is never ECN-capable
    CHECK(cnp.ip4.tos >> 2 == 48);         // the NP's DSCP (NpConfig::cnp_dscp, mlx5's default)
    CHECK(f.b().counters.n[Counter::CePacket] == 8);
    CHECK(f.b().counters.n[Counter::CnpSent] == 1);
    CHECK(f.a().counters.n[Counter::CnpReceived] == 1);
    CHECK(f.b().np.counters().cnps_suppressed == 7);
    CHECK(bytes(f.b(), dst.addr, 8192) == bytes(f.a(), src.addr, 8192));

    // Still inside N (50 us) of the first: marked, but no CNP.
    f.clock.now += 40'000;
    REQUIRE(f.a().qp->post_send(write_wqe(2, src, dst, 1024)) == PostStatus::Ok);
    f.run();
    CHECK(cnps(f).size() == 1);
    // Past N: the next mark asks again.
    f.clock.now = c[0].at + 50'000;
    REQUIRE(f.a().qp->post_send(write_wqe(3, src, dst, 1024)) == PostStatus::Ok);
    f.run();
    c = cnps(f);
    REQUIRE(c.size() == 2);
    CHECK(c[1].at - c[0].at >= 50'000);
    CHECK(f.a().counters.n[Counter::CnpReceived] == 2);
    CHECK(f.a().cq.side(CqSide::Send).size() == 3);
    for (auto& e : f.a().cq.side(CqSide::Send)) CHECK(e.wc.status == hw::WcStatus::Success);
}

TEST_CASE("congestion: the CNP carries the notification point's DSCP, Not-ECT", "[transport][congestion]") {
    for (const uint8_t dscp : {uint8_t{0}, uint8_t{26}, uint8_t{63}}) {
        INFO("dscp " << int(dscp));
        Fabric f = cc_fabric();
        f.b().np = cg::NotificationPoint(cg::NpConfig{50'000, dscp});
        Buf src = make_buf(f.a(), 1024, kAllAccess, 1);
        Buf dst = make_buf(f.b(), 1024, kAllAccess);
        f.ce_mark = [](const roce::Packet& p, size_t) { return is_request(p); };
        REQUIRE(f.a().qp->post_send(write_wqe(1, src, dst, 1024)) == PostStatus::Ok);
        f.run();
        auto c = cnps(f);
        REQUIRE(c.size() == 1);
        CHECK(c[0].pkt.ip4.tos >> 2 == dscp);
        CHECK(c[0].ecn == roce::Ecn::NotEct);
    }
}

TEST_CASE("congestion: the first CNP halves the sender's rate (alpha 1)", "[transport][congestion]") {
    Fabric f = cc_fabric();
    Buf src = make_buf(f.a(), 1024, kAllAccess, 1);
    Buf dst = make_buf(f.b(), 1024, kAllAccess);
    f.ce_mark = [](const roce::Packet& p, size_t) { return is_request(p); };
    QpCongestionState before = f.a().qp->congestion(f.clock.now);
    CHECK(before.on);
    CHECK(before.rate_bps == 100e9);
    CHECK_FALSE(before.rate_limited);
    REQUIRE(f.a().qp->post_send(write_wqe(1, src, dst, 1024)) == PostStatus::Ok);
    f.run(1000);  // the CNP, but not the rate timer T
    QpCongestionState s = f.a().qp->congestion(f.clock.now);
    CHECK(s.rate_bps == 50e9);          // Rc (1 - alpha / 2), alpha 1
    CHECK(s.target_rate_bps == 100e9);  // Rt = the old Rc
    CHECK(s.alpha == Approx(1.0));      // (1 - g) 1 + g
    CHECK(s.rate_limited);
    CHECK(s.counters.cnps_received == 1);
    // The responder's side has no CNP: its rate stays.
    CHECK(f.b().qp->congestion(f.clock.now).rate_bps == 100e9);
}

TEST_CASE("congestion: the rate limiter spaces request packets at Rc", "[transport][congestion]") {
    Fabric f = cc_fabric();
    Buf src = make_buf(f.a(), 64 * 1024, kAllAccess, 4);
    Buf dst = make_buf(f.b(), 64 * 1024, kAllAccess);
    // One marked packet, one CNP: Rc = 50 Gb/s.
    f.ce_mark = [](const roce::Packet& p, size_t i) { return is_request(p) && i == 0; };
    REQUIRE(f.a().qp->post_send(write_wqe(1, src, dst, 1024)) == PostStatus::Ok);
    f.run(1000);
    REQUIRE(f.a().qp->congestion(f.clock.now).rate_bps == 50e9);
    const size_t first = f.log.size();

    // 32 KiB: 32 packets, which would all leave at one instant unpaced.
    REQUIRE(f.a().qp->post_send(write_wqe(2, src, dst, 32 * 1024)) == PostStatus::Ok);
    f.run(1'000'000);
    std::vector<Seen> reqs;
    auto all = seen(f);
    for (size_t i = first; i < all.size(); ++i)
        if (all[i].from == 0 && is_request(all[i].pkt)) reqs.push_back(all[i]);
    REQUIRE(reqs.size() == 32);
    // 32 x ~1.1 KB at 50 Gb/s is ~6 us, inside T (55 us): Rc stays 50 Gb/s
    // and each packet follows the previous one by its own frame at Rc.
    for (size_t i = 1; i < reqs.size(); ++i) {
        const uint64_t gap = uint64_t(std::ceil(double(reqs[i].len) * 8 / 50e9 * 1e9));
        INFO("packet " << i << " of " << reqs[i].len << " bytes");
        CHECK(reqs[i].at - reqs[i - 1].at == gap);
    }
    CHECK(f.a().counters.n[Counter::RateLimited] >= 31);
    CHECK(bytes(f.b(), dst.addr, 32 * 1024) == bytes(f.a(), src.addr, 32 * 1024));
    auto s = f.a().cq.side(CqSide::Send);
    REQUIRE(s.size() == 2);
    CHECK(s[1].wc.status == hw::WcStatus::Success);
    CHECK(f.a().qp->congestion(f.clock.now).counters.rate_limited_ns > 0);
}

TEST_CASE("congestion: with pace_line_rate the requester keeps the line rate before any CNP, without it the MAC does",
          "[transport][congestion]") {
    for (const bool pace : {true, false}) {
        cg::DcqcnConfig dc;  // line rate 100 Gb/s
        dc.pace_line_rate = pace;
        Fabric f = cc_fabric(hw::QpType::Rc, dc);
        Buf src = make_buf(f.a(), 32 * 1024, kAllAccess, 4);
        Buf dst = make_buf(f.b(), 32 * 1024, kAllAccess);
        REQUIRE(f.a().qp->post_send(write_wqe(1, src, dst, 32 * 1024)) == PostStatus::Ok);
        f.run(1'000'000);
        std::vector<Seen> reqs;
        for (const Seen& x : seen(f))
            if (x.from == 0 && is_request(x.pkt)) reqs.push_back(x);
        REQUIRE(reqs.size() == 32);
        INFO("pace_line_rate " << pace);
        // No CNP: Rc is the line rate and the QP is not rate-limited.
        const QpCongestionState st = f.a().qp->congestion(f.clock.now);
        CHECK(st.rate_bps == 100e9);
        CHECK_FALSE(st.rate_limited);
        CHECK(st.counters.cnps_received == 0);
        for (size_t i = 1; i < reqs.size(); ++i) {
            // Paced: each packet follows the previous one by its own frame
            // at 100 Gb/s (about 85 ns for 1 KiB); unpaced: all at once.
            const uint64_t gap = pace ? uint64_t(std::ceil(double(reqs[i].len) * 8 / 100e9 * 1e9)) : 0;
            INFO("packet " << i << " of " << reqs[i].len << " bytes");
            CHECK(reqs[i].at - reqs[i - 1].at == gap);
        }
        if (pace)
            CHECK(f.a().counters.n[Counter::RateLimited] >= 31);
        else
            CHECK(f.a().counters.n[Counter::RateLimited] == 0);
        CHECK(bytes(f.b(), dst.addr, 32 * 1024) == bytes(f.a(), src.addr, 32 * 1024));
    }
}

TEST_CASE("congestion: without CNPs the rate recovers to the line rate", "[transport][congestion]") {
    cg::DcqcnConfig dc;  // T = 55 us, F = 5
    Fabric f = cc_fabric(hw::QpType::Rc, dc);
    Buf src = make_buf(f.a(), 1024, kAllAccess, 1);
    Buf dst = make_buf(f.b(), 1024, kAllAccess);
    f.ce_mark = [](const roce::Packet& p, size_t) { return is_request(p); };
    REQUIRE(f.a().qp->post_send(write_wqe(1, src, dst, 1024)) == PostStatus::Ok);
    f.run(1000);
    const uint64_t t0 = f.clock.now;
    f.ce_mark = nullptr;
    // Fast recovery: each T halves the gap to Rt (100 Gb/s).
    CHECK(f.a().qp->congestion(t0 + dc.rate_timer_ns).rate_bps == 75e9);
    CHECK(f.a().qp->congestion(t0 + 2 * dc.rate_timer_ns).rate_bps == 87.5e9);
    const QpCongestionState later = f.a().qp->congestion(t0 + 20'000'000);
    CHECK_FALSE(later.rate_limited);
    CHECK(later.rate_bps == 100e9);
    CHECK(later.counters.fast_recovery_steps == dc.fast_recovery_steps);
    CHECK(later.counters.alpha_decays > 0);
    CHECK(later.alpha < 1.0);
    // Back at line rate, a burst leaves unpaced.
    f.clock.now = t0 + 20'000'000;
    const size_t first = f.log.size();
    Buf big = make_buf(f.a(), 8192, kAllAccess, 2);
    Buf bdst = make_buf(f.b(), 8192, kAllAccess);
    REQUIRE(f.a().qp->post_send(write_wqe(2, big, bdst, 8192)) == PostStatus::Ok);
    f.deliver();
    size_t n = 0;
    for (size_t i = first; i < f.log.size(); ++i)
        if (f.log[i].from == 0) {
            CHECK(f.log[i].at == t0 + 20'000'000);
            ++n;
        }
    CHECK(n == 8);
}

TEST_CASE("congestion: ECT(0) on request packets only, and only when on", "[transport][congestion]") {
    for (bool on : {false, true}) {
        DYNAMIC_SECTION("congestion control " << (on ? "on" : "off")) {
            Fabric f = on ? cc_fabric() : Fabric();
            Buf src = make_buf(f.a(), 4096, kAllAccess, 1);
            Buf dst = make_buf(f.b(), 4096, kAllAccess);
            // The switch marks every packet it may mark.
            f.ce_mark = [](const roce::Packet&, size_t) { return true; };
            f.b().post_recv(9, {dst.sge()});
            REQUIRE(f.a().qp->post_send(wqe(hw::WrOpcode::Send, 1, {src.sge(0, 3000)})) == PostStatus::Ok);
            SendWqe rd = wqe(hw::WrOpcode::RdmaRead, 2, {src.sge(0, 2048)});
            rd.remote_addr = dst.addr;
            rd.rkey = dst.mr->rkey;
            REQUIRE(f.a().qp->post_send(rd) == PostStatus::Ok);
            f.run(1000);
            size_t requests = 0, others = 0;
            for (auto& s : seen(f)) {
                if (s.pkt.hdr.bth.opcode == roce::op::CNP) continue;
                if (is_request(s.pkt)) {
                    ++requests;
                    // Marked CE by the switch when ECN-capable.
                    CHECK(s.ecn == (on ? roce::Ecn::Ce : roce::Ecn::NotEct));
                } else {
                    ++others;  // ACKs and READ responses
                    CHECK(s.ecn == roce::Ecn::NotEct);
                }
            }
            CHECK(requests == 4);  // SEND: 3 packets; READ: 1 request
            CHECK(others >= 3);
            CHECK(cnps(f).size() == (on ? 1u : 0u));
            CHECK(f.b().counters.n[Counter::CnpSent] == (on ? 1 : 0));
            CHECK(f.b().counters.n[Counter::CePacket] == (on ? 4 : 0));
            CHECK(f.a().qp->congestion(f.clock.now).on == on);
            CHECK(f.a().cq.side(CqSide::Send).size() == 2);
            CHECK(bytes(f.b(), dst.addr, 3000) == bytes(f.a(), src.addr, 3000));
        }
    }
}

TEST_CASE("congestion: a CNP reaching a QP without congestion control changes nothing",
          "[transport][congestion]") {
    // B marks and answers; A has no reaction point.
    Fabric f(hw::QpType::Rc, roce::IbMtu::Mtu1024, [](QpConfig& c, int i) {
        if (i == 1) c.dcqcn = cg::DcqcnConfig{};
    });
    Buf src = make_buf(f.a(), 4096, kAllAccess, 1);
    Buf dst = make_buf(f.b(), 4096, kAllAccess);
    // A is not ECN-capable: a marking switch leaves its packets alone.
    f.ce_mark = [](const roce::Packet&, size_t) { return true; };
    REQUIRE(f.a().qp->post_send(write_wqe(1, src, dst, 4096)) == PostStatus::Ok);
    f.run();
    CHECK(f.ce_marked == 0);
    CHECK(cnps(f).empty());
    // Hand A a CNP directly.
    roce::Packet marked;
    REQUIRE(roce::decode_frame(f.log[0].bytes.data(), f.log[0].bytes.size(), marked).ok());
    roce::Packet cnp = roce::make_cnp(marked, kQpA);
    f.a().qp->on_packet(cnp);
    CHECK(f.a().counters.n[Counter::CnpReceived] == 1);
    CHECK_FALSE(f.a().qp->congestion(f.clock.now).on);
    REQUIRE(f.a().qp->post_send(write_wqe(2, src, dst, 4096)) == PostStatus::Ok);
    f.run();
    CHECK(f.a().cq.side(CqSide::Send).size() == 2);
    CHECK(f.a().counters.n[Counter::RateLimited] == 0);
}

TEST_CASE("congestion: a UD receiver's CNP goes to the DETH's source QP", "[transport][congestion]") {
    Fabric f = cc_fabric(hw::QpType::Ud);
    Buf src = make_buf(f.a(), 512, kAllAccess, 1);
    Buf dst = make_buf(f.b(), 512 + 40, kAllAccess);
    f.ce_mark = [](const roce::Packet& p, size_t) { return is_request(p); };
    f.b().post_recv(1, {dst.sge()});
    SendWqe w = wqe(hw::WrOpcode::Send, 1, {src.sge(0, 512)});
    w.ud.av = make_av(0);
    w.ud.remote_qpn = kQpB;
    w.ud.remote_qkey = 0x11111111;
    REQUIRE(f.a().qp->post_send(w) == PostStatus::Ok);
    f.run(1000);
    auto c = cnps(f);
    REQUIRE(c.size() == 1);
    CHECK(c[0].pkt.hdr.bth.dqpn == kQpA);
    CHECK(f.a().qp->congestion(f.clock.now).rate_bps == 50e9);
}
