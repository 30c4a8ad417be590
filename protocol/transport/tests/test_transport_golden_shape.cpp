// The packets of a simple RC exchange against the rules the golden kernel
// captures confirm (docs/rxe-wire-rules.md, testbench/golden/test_golden.cpp).
#include <catch2/catch.hpp>

#include <map>
#include <set>

#include "harness.h"

using namespace tb;
namespace op = simnic::roce::op;

TEST_CASE("golden shape: an RC SEND/WRITE/READ/atomic exchange looks like rxe's",
          "[transport]") {
    Fabric f;
    Buf src = make_buf(f.a(), 10000, kAllAccess, 1);
    Buf dst = make_buf(f.b(), 10000, kAllAccess);
    Buf wdst = make_buf(f.b(), 10000, kAllAccess);
    Buf target = make_buf(f.b(), 8, kAllAccess);
    Buf local = make_buf(f.a(), 10000, kAllAccess);
    f.b().post_recv(1, {dst.sge()});
    f.b().post_recv(2, {dst.sge()});
    f.b().post_recv(3, {dst.sge()});
    REQUIRE(f.a().qp->post_send(wqe(hw::WrOpcode::Send, 1, {src.sge(0, 3000)})) == PostStatus::Ok);
    auto w = wqe(hw::WrOpcode::RdmaWrite, 2, {src.sge(0, 8192)});
    w.remote_addr = wdst.addr;
    w.rkey = wdst.mr->rkey;
    REQUIRE(f.a().qp->post_send(w) == PostStatus::Ok);
    auto r = wqe(hw::WrOpcode::RdmaRead, 3, {local.sge(0, 8192)});
    r.remote_addr = wdst.addr;
    r.rkey = wdst.mr->rkey;
    REQUIRE(f.a().qp->post_send(r) == PostStatus::Ok);
    auto a = wqe(hw::WrOpcode::AtomicCmpAndSwp, 4, {local.sge(8192, 8)});
    a.remote_addr = target.addr;
    a.rkey = target.mr->rkey;
    REQUIRE(f.a().qp->post_send(a) == PostStatus::Ok);
    auto wi = wqe(hw::WrOpcode::RdmaWriteWithImm, 5, {src.sge(0, 64)});
    wi.remote_addr = wdst.addr;
    wi.rkey = wdst.mr->rkey;
    REQUIRE(f.a().qp->post_send(wi) == PostStatus::Ok);
    REQUIRE(f.a().qp->post_send(wqe(hw::WrOpcode::Send, 6, {src.sge(0, 1)})) == PostStatus::Ok);
    f.run();
    REQUIRE(f.a().cq.side(CqSide::Send).size() == 6);

    const auto log = f.decoded_log();
    const uint32_t mtu = 1024;
    std::set<uint32_t> ends, acked;
    uint32_t last_msn = 0;
    bool have_msn = false;
    uint32_t next_req_psn = 0x100;
    std::map<uint8_t, int> seen;
    for (size_t i = 0; i < log.size(); ++i) {
        const auto& p = log[i];
        const auto& info = p.opinfo();
        const uint8_t o = p.hdr.bth.opcode;
        INFO("packet " << i << " opcode " << int(o));
        ++seen[o];
        // Frame fields as rxe sets them.
        CHECK(p.ip_version == roce::IpVersion::V4);
        CHECK(p.ip4.ttl == 64);
        CHECK(p.ip4.tos == 0);
        CHECK(p.ip4.frag == 0x4000);
        CHECK(p.udp.checksum == 0);
        CHECK(p.hdr.bth.pkey == 0xffff);
        CHECK(p.hdr.bth.tver == 0);
        CHECK(!p.hdr.bth.mig);
        // Both directions of the pair use the QPN pair's port.
        CHECK(p.udp.sport == roce::roce_udp_sport(0x11, 0x12));
        // FIRST and MIDDLE packets carry exactly the MTU.
        if (info.has(roce::kPayload) && !(info.mask & roce::kLast)) CHECK(p.payload_len == mtu);
        if (info.has(roce::kRequest)) {
            // AckReq exactly on the last packet of each request.
            CHECK(p.hdr.bth.ack_req == ((info.mask & roce::kLast) != 0));
            // PSNs advance one per packet; a READ takes one per response.
            CHECK(p.hdr.bth.psn == next_req_psn);
            next_req_psn = roce::psn_add(
                next_req_psn, o == op::RC_RDMA_READ_REQUEST ? (p.hdr.reth.dma_len + mtu - 1) / mtu : 1);
            if ((info.mask & (roce::kSend | roce::kWrite)) && (info.mask & roce::kLast))
                ends.insert(p.hdr.bth.psn);
        } else {
            CHECK(!p.hdr.bth.ack_req);  // no response asks for an ACK
        }
        if (info.has(roce::Ext::AETH)) {
            if (have_msn) {
                const uint32_t d = (p.hdr.aeth.msn - last_msn) & 0xffffff;
                CHECK(d <= 1);
            }
            last_msn = p.hdr.aeth.msn;
            have_msn = true;
        }
        if (o == op::RC_ACKNOWLEDGE) {
            CHECK(roce::aeth_type(p.hdr.aeth.syndrome) == roce::AethType::Ack);
            CHECK(roce::aeth_value(p.hdr.aeth.syndrome) == 0x1f);
            CHECK(acked.insert(p.hdr.bth.psn).second);
        }
    }
    // One ACK per SEND/WRITE message, at its last PSN; none inside a message.
    CHECK(acked == ends);
    // READ: a FIRST/MIDDLE/LAST response and no separate ACK; atomic: one ATOMIC ACK.
    CHECK(seen[op::RC_RDMA_READ_REQUEST] == 1);
    CHECK(seen[op::RC_RDMA_READ_RESPONSE_FIRST] == 1);
    CHECK(seen[op::RC_RDMA_READ_RESPONSE_MIDDLE] == 6);
    CHECK(seen[op::RC_RDMA_READ_RESPONSE_LAST] == 1);
    CHECK(seen[op::RC_COMPARE_SWAP] == 1);
    CHECK(seen[op::RC_ATOMIC_ACKNOWLEDGE] == 1);
    CHECK(seen[op::RC_SEND_FIRST] == 1);
    CHECK(seen[op::RC_SEND_MIDDLE] == 1);
    CHECK(seen[op::RC_SEND_LAST] == 1);
    CHECK(seen[op::RC_RDMA_WRITE_FIRST] == 1);
    CHECK(seen[op::RC_RDMA_WRITE_MIDDLE] == 6);
    CHECK(seen[op::RC_RDMA_WRITE_LAST] == 1);
    CHECK(seen[op::RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE] == 1);
    CHECK(seen[op::RC_SEND_ONLY] == 1);
    // Six messages: the MSN ends at six.
    CHECK(last_msn == 6);
    CHECK(f.b().qp->snapshot().msn == 6);
    CHECK(bytes(f.a(), local.addr, 8192) == bytes(f.a(), src.addr, 8192));
}

TEST_CASE("golden shape: a long message asks for an ACK now and then", "[transport]") {
    Fabric f(hw::QpType::Rc, roce::IbMtu::Mtu256);
    Buf src = make_buf(f.a(), 256 * 200, kAllAccess, 1);
    Buf wdst = make_buf(f.b(), 256 * 200, kAllAccess);
    auto w = wqe(hw::WrOpcode::RdmaWrite, 2, {src.sge()});
    w.remote_addr = wdst.addr;
    w.rkey = wdst.mr->rkey;
    REQUIRE(f.a().qp->post_send(w) == PostStatus::Ok);
    f.run();
    REQUIRE(f.a().cq.side(CqSide::Send).size() == 1);
    CHECK(bytes(f.b(), wdst.addr, 256 * 200) == bytes(f.a(), src.addr, 256 * 200));
    size_t reqs = 0, ackreq = 0;
    for (auto& p : f.decoded_log())
        if (p.opinfo().has(roce::kRequest)) {
            ++reqs;
            ackreq += p.hdr.bth.ack_req;
        }
    CHECK(reqs == 200);
    CHECK(ackreq == 4);  // every 66th packet, and the last (rxe's RXE_MAX_PKT_PER_ACK)
}
