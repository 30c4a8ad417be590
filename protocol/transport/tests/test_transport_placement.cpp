// IBA 1.5's memory placement extensions as kernel rxe has them from 6.2:
// ATOMIC WRITE (0x1D: RETH and 8 bytes placed at once) and FLUSH (0x1C: FETH
// and RETH). Both are answered with an RDMA READ RESPONSE ONLY without
// payload; a duplicate is answered again from the responder's resource, not
// executed again.
#include <catch2/catch.hpp>

#include <cstring>
#include <memory>

#include "harness.h"
#include "simnic/roce/opcode.h"

using namespace tb;
namespace op = simnic::roce::op;

namespace {

constexpr uint32_t kFlushRights = hw::access::kFlushGlobal | hw::access::kFlushPersistent;

SendWqe atomic_write(uint64_t wr_id, const Buf& target, uint64_t off, uint64_t value) {
    SendWqe w = wqe(hw::WrOpcode::AtomicWrite, wr_id, {},
                    hw::send_flags::kSignaled | hw::send_flags::kInline);
    w.inline_data.resize(8);
    std::memcpy(w.inline_data.data(), &value, 8);
    w.remote_addr = target.addr + off;
    w.rkey = target.mr->rkey;
    return w;
}

SendWqe flush(uint64_t wr_id, const Buf& target, uint32_t len, uint8_t placement,
              uint8_t selectivity = roce::feth::kSelectRange) {
    SendWqe w = wqe(hw::WrOpcode::Flush, wr_id, {});
    w.remote_addr = target.addr;
    w.rkey = target.mr->rkey;
    w.flush_len = len;
    w.flush_placement = placement;
    w.flush_selectivity = selectivity;
    return w;
}

// The frames B sent back, by opcode.
size_t answers(const Fabric& f, uint8_t opcode) {
    size_t n = 0;
    for (const roce::Packet& p : f.decoded_log())
        if (p.hdr.bth.dqpn == 0x11 && p.hdr.bth.opcode == opcode) ++n;
    return n;
}

// Both QPs grant FLUSH's rights too.
void with_flush_rights(QpConfig& c, int) { c.access_flags |= kFlushRights; }

// The hw::access rights a FLUSH of `placement` needs.
uint32_t rights_for(uint8_t placement) {
    return ((placement & roce::feth::kPlacementGlobal) ? hw::access::kFlushGlobal : 0u) |
           ((placement & roce::feth::kPlacementPersistent) ? hw::access::kFlushPersistent : 0u);
}

}  // namespace

TEST_CASE("placement: ATOMIC WRITE places 8 bytes and completes as ATOMIC_WRITE", "[transport][placement]") {
    Fabric f;
    Buf target = make_buf(f.b(), 32, kAllAccess, 5);
    const auto before = bytes(f.b(), target.addr, 32);
    REQUIRE(f.a().qp->post_send(atomic_write(7, target, 8, 0x1122334455667788ull)) == PostStatus::Ok);
    f.run();
    auto s = f.a().cq.side(CqSide::Send);
    REQUIRE(s.size() == 1);
    CHECK(s[0].wc.status == hw::WcStatus::Success);
    CHECK(s[0].wc.opcode == hw::WcOpcode::AtomicWrite);
    CHECK(s[0].wc.wr_id == 7);
    uint64_t now = 0;
    std::memcpy(&now, f.b().mem.ptr(target.addr + 8), 8);
    CHECK(now == 0x1122334455667788ull);
    // Nothing around the 8 bytes moved.
    auto after = bytes(f.b(), target.addr, 32);
    CHECK(std::equal(after.begin(), after.begin() + 8, before.begin()));
    CHECK(std::equal(after.begin() + 16, after.end(), before.begin() + 16));
    // On the wire: one ATOMIC WRITE (RETH len 8, 8-byte payload) and its
    // answer, a READ RESPONSE ONLY without payload, ACK syndrome, MSN 1.
    const auto log = f.decoded_log();
    REQUIRE(log.size() == 2);
    CHECK(log[0].hdr.bth.opcode == op::RC_ATOMIC_WRITE);
    CHECK(log[0].hdr.reth.dma_len == 8);
    CHECK(log[0].hdr.reth.va == target.addr + 8);
    CHECK(log[0].payload_len == 8);
    CHECK(log[0].hdr.bth.ack_req);
    CHECK(log[1].hdr.bth.opcode == op::RC_RDMA_READ_RESPONSE_ONLY);
    CHECK(log[1].payload_len == 0);
    CHECK(log[1].hdr.aeth.syndrome == 0x1f);
    CHECK(log[1].hdr.aeth.msn == 1);
    CHECK(log[1].hdr.bth.psn == log[0].hdr.bth.psn);
    CHECK(f.b().qp->responder().expected_psn() == roce::psn_add(log[0].hdr.bth.psn, 1));
}

TEST_CASE("placement: ATOMIC WRITEs in order with WRITEs and atomics", "[transport][placement]") {
    Fabric f;
    Buf target = make_buf(f.b(), 64, kAllAccess);
    Buf src = make_buf(f.a(), 64, kAllAccess, 9);
    Buf result = make_buf(f.a(), 8, kAllAccess);
    auto w = wqe(hw::WrOpcode::RdmaWrite, 1, {src.sge(0, 64)});
    w.remote_addr = target.addr;
    w.rkey = target.mr->rkey;
    REQUIRE(f.a().qp->post_send(w) == PostStatus::Ok);
    REQUIRE(f.a().qp->post_send(atomic_write(2, target, 0, 100)) == PostStatus::Ok);
    auto faa = wqe(hw::WrOpcode::AtomicFetchAndAdd, 3, {result.sge()});
    faa.remote_addr = target.addr;
    faa.rkey = target.mr->rkey;
    faa.compare_add = 5;
    REQUIRE(f.a().qp->post_send(faa) == PostStatus::Ok);
    REQUIRE(f.a().qp->post_send(atomic_write(4, target, 0, 7)) == PostStatus::Ok);
    f.run();
    auto s = f.a().cq.side(CqSide::Send);
    REQUIRE(s.size() == 4);
    for (size_t i = 0; i < 4; ++i) {
        CHECK(s[i].wc.status == hw::WcStatus::Success);
        CHECK(s[i].wc.wr_id == i + 1);
    }
    uint64_t r = 0, now = 0;
    std::memcpy(&r, f.a().mem.ptr(result.addr), 8);
    std::memcpy(&now, f.b().mem.ptr(target.addr), 8);
    CHECK(r == 100);  // the FETCH_ADD saw the first ATOMIC WRITE's value
    CHECK(now == 7);  // and the second one came after it
    CHECK(bytes(f.b(), target.addr + 8, 56) == bytes(f.a(), src.addr + 8, 56));
}

TEST_CASE("placement: a duplicate ATOMIC WRITE is answered, not executed again", "[transport][placement]") {
    Fabric f;
    Buf target = make_buf(f.b(), 16, kAllAccess);
    // The answer to the first one is lost: the requester resends it after its
    // timer, by which time the application has changed the value.
    auto dropped = std::make_shared<bool>(false);
    f.fault = [dropped](const roce::Packet& p, size_t) {
        if (!*dropped && p.hdr.bth.opcode == op::RC_RDMA_READ_RESPONSE_ONLY) {
            *dropped = true;
            return Fault::Drop;
        }
        return Fault::Pass;
    };
    REQUIRE(f.a().qp->post_send(atomic_write(1, target, 0, 0xaaaa)) == PostStatus::Ok);
    f.deliver();
    uint64_t v = 0xbbbb;
    std::memcpy(f.b().mem.ptr(target.addr), &v, 8);
    f.run();
    auto s = f.a().cq.side(CqSide::Send);
    REQUIRE(s.size() == 1);
    CHECK(s[0].wc.status == hw::WcStatus::Success);
    CHECK(f.timer_fires >= 1);
    CHECK(answers(f, op::RC_RDMA_READ_RESPONSE_ONLY) == 2);
    std::memcpy(&v, f.b().mem.ptr(target.addr), 8);
    CHECK(v == 0xbbbb);  // the resent request did not write again
    CHECK(f.b().qp->responder().msn() == 1);
}

TEST_CASE("placement: ATOMIC WRITE errors", "[transport][placement]") {
    Fabric f;
    Buf target = make_buf(f.b(), 32, kAllAccess);
    SendWqe w;
    hw::WcStatus want = hw::WcStatus::Success;
    hw::EventType ev = hw::EventType::QpReqErr;
    SECTION("misaligned address: invalid request") {
        w = atomic_write(1, target, 4, 1);
        want = hw::WcStatus::RemInvReqErr;
    }
    SECTION("bad rkey: remote access error") {
        w = atomic_write(1, target, 0, 1);
        w.rkey ^= 0x100;
        want = hw::WcStatus::RemAccessErr;
        ev = hw::EventType::QpAccessErr;
    }
    SECTION("MR without REMOTE_WRITE: remote access error") {
        Buf ro = make_buf(f.b(), 16, hw::access::kLocalWrite | hw::access::kRemoteRead |
                                         hw::access::kRemoteAtomic);
        w = atomic_write(1, ro, 0, 1);
        want = hw::WcStatus::RemAccessErr;
        ev = hw::EventType::QpAccessErr;
    }
    SECTION("outside the MR: remote access error") {
        w = atomic_write(1, target, 32, 1);
        want = hw::WcStatus::RemAccessErr;
        ev = hw::EventType::QpAccessErr;
    }
    REQUIRE(f.a().qp->post_send(w) == PostStatus::Ok);
    f.run();
    auto s = f.a().cq.side(CqSide::Send);
    REQUIRE(s.size() == 1);
    CHECK(s[0].wc.status == want);
    CHECK(f.a().qp->state() == hw::QpState::Err);
    CHECK(f.b().qp->state() == hw::QpState::Err);
    CHECK(f.b().events.got == std::vector<hw::EventType>{ev});
    CHECK(bytes(f.b(), target.addr, 32) == std::vector<uint8_t>(32, 0));
}

TEST_CASE("placement: ATOMIC WRITE to a QP without REMOTE_WRITE", "[transport][placement]") {
    Fabric f(hw::QpType::Rc, roce::IbMtu::Mtu1024, [](QpConfig& c, int i) {
        if (i == 1) c.access_flags = hw::access::kRemoteRead | hw::access::kRemoteAtomic;
    });
    Buf target = make_buf(f.b(), 16, kAllAccess);
    REQUIRE(f.a().qp->post_send(atomic_write(1, target, 0, 1)) == PostStatus::Ok);
    f.run();
    auto s = f.a().cq.side(CqSide::Send);
    REQUIRE(s.size() == 1);
    CHECK(s[0].wc.status == hw::WcStatus::RemInvReqErr);
    CHECK(bytes(f.b(), target.addr, 16) == std::vector<uint8_t>(16, 0));
}

TEST_CASE("placement: ATOMIC WRITE and FLUSH are RC only, and carry the right data", "[transport][placement]") {
    SECTION("UC and UD refuse both") {
        for (hw::QpType t : {hw::QpType::Uc, hw::QpType::Ud}) {
            Fabric f(t);
            Buf target = make_buf(f.b(), 16, kAllAccess);
            CHECK(f.a().qp->post_send(atomic_write(1, target, 0, 1)) == PostStatus::InvalidOpcode);
            CHECK(f.a().qp->post_send(flush(2, target, 16, roce::feth::kPlacementGlobal)) ==
                  PostStatus::InvalidOpcode);
        }
    }
    SECTION("ATOMIC WRITE takes exactly 8 inline bytes; FLUSH none") {
        Fabric f;
        Buf target = make_buf(f.b(), 16, kAllAccess);
        Buf src = make_buf(f.a(), 8, kAllAccess);
        auto w = atomic_write(1, target, 0, 1);
        w.inline_data.resize(4);
        CHECK(f.a().qp->post_send(w) == PostStatus::BadLength);
        auto sg = wqe(hw::WrOpcode::AtomicWrite, 2, {src.sge()});
        sg.remote_addr = target.addr;
        sg.rkey = target.mr->rkey;
        CHECK(f.a().qp->post_send(sg) == PostStatus::BadLength);
        auto fl = flush(3, target, 16, roce::feth::kPlacementGlobal);
        fl.sg.push(src.sge());
        CHECK(f.a().qp->post_send(fl) == PostStatus::BadLength);
    }
}

TEST_CASE("placement: FLUSH of a range and of the whole MR", "[transport][placement]") {
    Fabric f(hw::QpType::Rc, roce::IbMtu::Mtu1024, with_flush_rights);
    Buf target = make_buf(f.b(), 4096, kAllAccess | kFlushRights);
    Buf src = make_buf(f.a(), 64, kAllAccess, 1);
    auto w = wqe(hw::WrOpcode::RdmaWrite, 1, {src.sge()});
    w.remote_addr = target.addr;
    w.rkey = target.mr->rkey;
    REQUIRE(f.a().qp->post_send(w) == PostStatus::Ok);
    REQUIRE(f.a().qp->post_send(flush(2, target, 64, roce::feth::kPlacementGlobal)) == PostStatus::Ok);
    auto whole = flush(3, target, 0, roce::feth::kPlacementGlobal | roce::feth::kPlacementPersistent,
                       roce::feth::kSelectMr);
    whole.remote_addr = 0;  // means nothing for a whole-MR FLUSH
    REQUIRE(f.a().qp->post_send(whole) == PostStatus::Ok);
    f.run();
    auto s = f.a().cq.side(CqSide::Send);
    REQUIRE(s.size() == 3);
    for (auto& c : s) CHECK(c.wc.status == hw::WcStatus::Success);
    CHECK(s[1].wc.opcode == hw::WcOpcode::Flush);
    CHECK(s[2].wc.opcode == hw::WcOpcode::Flush);
    CHECK(bytes(f.b(), target.addr, 64) == bytes(f.a(), src.addr, 64));
    // The FLUSH frames: FETH then RETH; each answered by a READ RESPONSE ONLY.
    std::vector<roce::Packet> flushes;
    for (const roce::Packet& p : f.decoded_log())
        if (p.hdr.bth.opcode == op::RC_FLUSH) flushes.push_back(p);
    REQUIRE(flushes.size() == 2);
    CHECK(flushes[0].hdr.feth.placement == roce::feth::kPlacementGlobal);
    CHECK(flushes[0].hdr.feth.selectivity == roce::feth::kSelectRange);
    CHECK(flushes[0].hdr.reth.dma_len == 64);
    CHECK(flushes[0].payload_len == 0);
    CHECK(flushes[1].hdr.feth.placement == 3);
    CHECK(flushes[1].hdr.feth.selectivity == roce::feth::kSelectMr);
    CHECK(answers(f, op::RC_RDMA_READ_RESPONSE_ONLY) == 2);
    CHECK(f.b().qp->responder().msn() == 3);
}

TEST_CASE("placement: FLUSH without the rights", "[transport][placement]") {
    SECTION("QP without FLUSH_GLOBAL: invalid request (rxe's check_qp_attr_access)") {
        Fabric f;  // the QPs grant no FLUSH right
        Buf target = make_buf(f.b(), 64, kAllAccess | kFlushRights);
        REQUIRE(f.a().qp->post_send(flush(1, target, 64, roce::feth::kPlacementGlobal)) == PostStatus::Ok);
        f.run();
        auto s = f.a().cq.side(CqSide::Send);
        REQUIRE(s.size() == 1);
        CHECK(s[0].wc.status == hw::WcStatus::RemInvReqErr);
        CHECK(f.b().qp->state() == hw::QpState::Err);
    }
    SECTION("MR without FLUSH_PERSISTENT: remote access error") {
        Fabric f(hw::QpType::Rc, roce::IbMtu::Mtu1024, with_flush_rights);
        Buf target = make_buf(f.b(), 64, kAllAccess | hw::access::kFlushGlobal);
        REQUIRE(f.a().qp->post_send(flush(1, target, 64, roce::feth::kPlacementPersistent)) ==
                PostStatus::Ok);
        f.run();
        auto s = f.a().cq.side(CqSide::Send);
        REQUIRE(s.size() == 1);
        CHECK(s[0].wc.status == hw::WcStatus::RemAccessErr);
    }
    SECTION("range outside the MR: remote access error") {
        Fabric f(hw::QpType::Rc, roce::IbMtu::Mtu1024, with_flush_rights);
        Buf target = make_buf(f.b(), 64, kAllAccess | kFlushRights);
        REQUIRE(f.a().qp->post_send(flush(1, target, 65, roce::feth::kPlacementGlobal)) == PostStatus::Ok);
        f.run();
        auto s = f.a().cq.side(CqSide::Send);
        REQUIRE(s.size() == 1);
        CHECK(s[0].wc.status == hw::WcStatus::RemAccessErr);
    }
}

// Every placement type a FLUSH may ask against every mix of FLUSH rights in
// the responder's QP and MR, as rxe 6.12 checks them: a right missing in the
// QP is an invalid request (check_qp_attr_access, before the rkey is looked
// at), then one missing in the MR a remote access error (check_rkey).
TEST_CASE("placement: FLUSH rights of the QP and the MR, each placement type", "[transport][placement]") {
    const uint8_t placements[] = {roce::feth::kPlacementGlobal, roce::feth::kPlacementPersistent,
                                  roce::feth::kPlacementGlobal | roce::feth::kPlacementPersistent};
    const uint32_t mixes[] = {0, hw::access::kFlushGlobal, hw::access::kFlushPersistent, kFlushRights};
    for (uint8_t plt : placements)
        for (uint32_t qp_rights : mixes)
            for (uint32_t mr_rights : mixes)
                for (uint8_t sel : {roce::feth::kSelectRange, roce::feth::kSelectMr}) {
                    INFO("placement " << int(plt) << ", QP rights 0x" << std::hex << qp_rights << ", MR rights 0x"
                                      << mr_rights << ", selectivity " << int(sel));
                    // Only B's QP matters: it is the responder.
                    Fabric f(hw::QpType::Rc, roce::IbMtu::Mtu1024,
                             [qp_rights](QpConfig& c, int i) { if (i == 1) c.access_flags |= qp_rights; });
                    Buf target = make_buf(f.b(), 256, kAllAccess | mr_rights);
                    REQUIRE(f.a().qp->post_send(flush(1, target, 64, plt, sel)) == PostStatus::Ok);
                    f.run();
                    auto s = f.a().cq.side(CqSide::Send);
                    REQUIRE(s.size() == 1);
                    CHECK(s[0].wc.opcode == hw::WcOpcode::Flush);
                    const uint32_t need = rights_for(plt);
                    if ((qp_rights & need) != need) {
                        CHECK(s[0].wc.status == hw::WcStatus::RemInvReqErr);
                        CHECK(answers(f, op::RC_ACKNOWLEDGE) == 1);  // the NAK
                        CHECK(f.b().qp->state() == hw::QpState::Err);
                    } else if ((mr_rights & need) != need) {
                        CHECK(s[0].wc.status == hw::WcStatus::RemAccessErr);
                        CHECK(f.b().qp->state() == hw::QpState::Err);
                    } else {
                        CHECK(s[0].wc.status == hw::WcStatus::Success);
                        CHECK(answers(f, op::RC_RDMA_READ_RESPONSE_ONLY) == 1);
                        CHECK(f.b().qp->state() == hw::QpState::Rts);
                    }
                }
}

// rxe's check_rkey: a FLUSH of the whole MR checks the key and the rights
// and no range, so its address and length mean nothing.
TEST_CASE("placement: a whole-MR FLUSH skips the range check, not the key's", "[transport][placement]") {
    // One FLUSH from a QP with the FLUSH rights to a 64-byte MR of
    // `mr_access`, aimed 64 KiB past the MR's start with a 1 MiB length
    // (`outside`) or at the MR with its rkey spoiled; the status it
    // completes with.
    enum class Aim { Outside, BadRkey };
    auto status_of = [](uint32_t mr_access, uint8_t placement, uint8_t selectivity, Aim aim) {
        Fabric f(hw::QpType::Rc, roce::IbMtu::Mtu1024, with_flush_rights);
        Buf target = make_buf(f.b(), 64, mr_access);
        auto w = flush(1, target, aim == Aim::Outside ? 0x100000 : 0, placement, selectivity);
        if (aim == Aim::Outside) w.remote_addr = target.addr + 0x10000;
        else w.rkey ^= 0x5a00;
        REQUIRE(f.a().qp->post_send(w) == PostStatus::Ok);
        f.run();
        auto s = f.a().cq.side(CqSide::Send);
        REQUIRE(s.size() == 1);
        return s[0].wc.status;
    };
    const uint32_t global_only = kAllAccess | hw::access::kFlushGlobal;
    SECTION("address and length outside the MR: acknowledged") {
        CHECK(status_of(global_only, roce::feth::kPlacementGlobal, roce::feth::kSelectMr, Aim::Outside) ==
              hw::WcStatus::Success);
    }
    SECTION("outside the MR and without the MR's right: remote access error") {
        CHECK(status_of(global_only, roce::feth::kPlacementPersistent, roce::feth::kSelectMr, Aim::Outside) ==
              hw::WcStatus::RemAccessErr);
    }
    SECTION("the same as a range FLUSH: remote access error") {
        CHECK(status_of(global_only, roce::feth::kPlacementGlobal, roce::feth::kSelectRange, Aim::Outside) ==
              hw::WcStatus::RemAccessErr);
    }
    SECTION("a bad rkey: remote access error") {
        CHECK(status_of(kAllAccess | kFlushRights, roce::feth::kPlacementGlobal, roce::feth::kSelectMr,
                        Aim::BadRkey) == hw::WcStatus::RemAccessErr);
    }
}

TEST_CASE("placement: a duplicate FLUSH is answered again", "[transport][placement]") {
    Fabric f(hw::QpType::Rc, roce::IbMtu::Mtu1024, with_flush_rights);
    Buf target = make_buf(f.b(), 64, kAllAccess | kFlushRights);
    f.fault = [](const roce::Packet& p, size_t) {
        return p.hdr.bth.opcode == op::RC_FLUSH ? Fault::Duplicate : Fault::Pass;
    };
    REQUIRE(f.a().qp->post_send(flush(1, target, 64, roce::feth::kPlacementGlobal)) == PostStatus::Ok);
    f.run();
    auto s = f.a().cq.side(CqSide::Send);
    REQUIRE(s.size() == 1);
    CHECK(s[0].wc.status == hw::WcStatus::Success);
    CHECK(answers(f, op::RC_RDMA_READ_RESPONSE_ONLY) == 2);
    CHECK(f.b().qp->responder().msn() == 1);
}

TEST_CASE("placement: an ATOMIC WRITE or FLUSH reaching a UC QP is not for it", "[transport][placement]") {
    // 0x1C and 0x1D are RC opcodes: a UC QP drops them unanswered (rxe's
    // check_type_state), and stays as it was.
    Fabric f(hw::QpType::Uc);
    Buf target = make_buf(f.b(), 16, kAllAccess);
    const uint8_t value[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    for (uint8_t opcode : {op::RC_ATOMIC_WRITE, op::RC_FLUSH}) {
        roce::Packet p;
        p.hdr.bth.opcode = opcode;
        p.hdr.bth.dqpn = 0x12;
        p.hdr.bth.psn = 0x200;
        p.hdr.bth.ack_req = true;
        p.hdr.reth = {target.addr, target.mr->rkey, 8};
        p.hdr.feth.placement = roce::feth::kPlacementGlobal;
        if (opcode == op::RC_ATOMIC_WRITE) {
            p.payload = value;
            p.payload_len = 8;
        }
        f.b().qp->on_packet(p);
    }
    f.run();
    CHECK(f.log.empty());
    CHECK(bytes(f.b(), target.addr, 16) == std::vector<uint8_t>(16, 0));
    CHECK(f.b().qp->state() == hw::QpState::Rts);
    CHECK(f.b().qp->responder().msn() == 0);
}
