// The extended CQ API (ibv_create_cq_ex, ibv_start_poll / ibv_next_poll /
// ibv_end_poll, ibv_wc_read_*) and ibv_query_device_ex on a simnic device,
// from an ordinary libibverbs application: this program links the system
// libibverbs only and reaches the device through LD_PRELOAD. Run it under
// `simnic exec` with SIMNIC_TEST_DEVICE naming a device (test_cq_ex_app.sh).
//
// QPs on the one device are connected to each other through GID index 1
// (the IPv4-mapped GID), as two processes on one host would be.
#include <endian.h>
#include <infiniband/verbs.h>
#include <poll.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

#include "verbs_app.h"

namespace {

using Clock = std::chrono::steady_clock;
constexpr std::uint32_t kQkey = 0x11111111;
constexpr unsigned kAccess = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;

using Device = simnic::tb::VerbsDevice;
using simnic::tb::post_recv;
using simnic::tb::post_send;
using simnic::tb::send_wr;

// `n` bytes filled with `fill`, registered in the device's PD.
struct Mr : simnic::tb::Mr {
    Mr(Device& d, std::size_t n, std::uint8_t fill) : simnic::tb::Mr(d.pd, n, kAccess, fill) {}
};

ibv_cq_ex* make_cq_ex(Device& d, std::uint64_t wc_flags, ibv_comp_channel* ch = nullptr,
                      void* cq_context = nullptr) {
    ibv_cq_init_attr_ex a{};
    a.cqe = 64;
    a.channel = ch;
    a.cq_context = cq_context;
    a.wc_flags = wc_flags;
    ibv_cq_ex* cx = ibv_create_cq_ex(d.ctx, &a);
    INFO("ibv_create_cq_ex errno " << errno);
    REQUIRE(cx != nullptr);
    return cx;
}

// A QP whose send and receive CQ is one extended CQ.
struct Qp {
    Device& d;
    ibv_qp_type type;
    ibv_cq_ex* cx = nullptr;
    ibv_qp* qp = nullptr;

    Qp(Device& dev, ibv_qp_type t, ibv_comp_channel* ch = nullptr) : d(dev), type(t) {
        cx = make_cq_ex(d, IBV_WC_STANDARD_FLAGS, ch, this);
        ibv_qp_cap cap{16, 16, 1, 1, 0};
        qp = simnic::tb::create_qp(d.pd, t, ibv_cq_ex_to_cq(cx), cap);
    }
    ~Qp() {
        CHECK(ibv_destroy_qp(qp) == 0);
        CHECK(ibv_destroy_cq(ibv_cq_ex_to_cq(cx)) == 0);
    }
    Qp(const Qp&) = delete;
    Qp& operator=(const Qp&) = delete;
    ibv_cq* cq() { return ibv_cq_ex_to_cq(cx); }
    std::uint32_t qpn() const { return qp->qp_num; }

    void connect(std::uint32_t dest) { simnic::tb::connect_qp(d, qp, type, dest, kQkey); }
};

// Everything the iterator shows of one completion.
struct Seen {
    std::uint64_t wr_id;
    ibv_wc_status status;
    ibv_wc_opcode opcode;
    std::uint32_t vendor_err, byte_len, qp_num, src_qp, slid;
    __be32 imm;
    unsigned wc_flags;
    std::uint8_t sl, dlid_path_bits;
};

Seen read_all(ibv_cq_ex* cx) {
    Seen s{};
    s.wr_id = cx->wr_id;
    s.status = cx->status;
    s.opcode = ibv_wc_read_opcode(cx);
    s.vendor_err = ibv_wc_read_vendor_err(cx);
    s.byte_len = ibv_wc_read_byte_len(cx);
    s.imm = ibv_wc_read_imm_data(cx);
    s.qp_num = ibv_wc_read_qp_num(cx);
    s.src_qp = ibv_wc_read_src_qp(cx);
    s.wc_flags = ibv_wc_read_wc_flags(cx);
    s.slid = ibv_wc_read_slid(cx);
    s.sl = ibv_wc_read_sl(cx);
    s.dlid_path_bits = ibv_wc_read_dlid_path_bits(cx);
    return s;
}

// Waits (up to 5 s) for `n` completions, taken with start_poll / next_poll /
// end_poll in as few batches as they arrive in.
std::vector<Seen> poll_ex(ibv_cq_ex* cx, std::size_t n) {
    std::vector<Seen> out;
    const auto end = Clock::now() + std::chrono::seconds(5);
    ibv_poll_cq_attr pa{};
    while (out.size() < n) {
        int e = ibv_start_poll(cx, &pa);
        if (e == ENOENT) {
            INFO("waiting for " << n << " completions, have " << out.size());
            REQUIRE(Clock::now() < end);
            std::this_thread::yield();
            continue;
        }
        REQUIRE(e == 0);
        for (; e == 0 && out.size() < n; e = ibv_next_poll(cx)) out.push_back(read_all(cx));
        if (e != 0) CHECK(e == ENOENT);
        ibv_end_poll(cx);
    }
    return out;
}

void check_empty(ibv_cq_ex* cx) {
    ibv_poll_cq_attr pa{};
    errno = 0;
    CHECK(ibv_start_poll(cx, &pa) == ENOENT);
    CHECK(errno == ENOENT);
}

}  // namespace

TEST_CASE("ibv_query_device_ex: ibv_query_device's attributes and zeroed extensions", "[cqex][query]") {
    Device d;
    ibv_device_attr a{};
    REQUIRE(ibv_query_device(d.ctx, &a) == 0);
    ibv_device_attr_ex ex;
    std::memset(&ex, 0xA5, sizeof ex);
    REQUIRE(ibv_query_device_ex(d.ctx, nullptr, &ex) == 0);
    CHECK(std::memcmp(&ex.orig_attr, &a, sizeof a) == 0);
    CHECK(ex.comp_mask == 0);
    // The low 32 bits are ibv_device_attr's; bits 38, 39 and 40 are
    // FLUSH_GLOBAL, FLUSH_PERSISTENT and ATOMIC_WRITE (the kernel's
    // IB_UVERBS_DEVICE_*, as rxe 6.12 reports them).
    CHECK((ex.device_cap_flags_ex & 0xFFFFFFFFu) == a.device_cap_flags);
    CHECK(ex.device_cap_flags_ex >> 32 == 7u << 6);
    CHECK(ex.completion_timestamp_mask == 0);
    CHECK(ex.hca_core_clock == 0);
    // On-demand paging (hw-spec 2.4): SUPPORT and SUPPORT_IMPLICIT; no XRC.
    CHECK(ex.odp_caps.general_caps == (IBV_ODP_SUPPORT | IBV_ODP_SUPPORT_IMPLICIT));
    CHECK(ex.xrc_odp_caps == 0);
    CHECK(ex.tso_caps.max_tso == 0);
    CHECK(ex.max_dm_size == 0);
    CHECK(ex.phys_port_cnt_ex == a.phys_port_cnt);
    ibv_query_device_ex_input in{};
    in.comp_mask = 1;
    CHECK(ibv_query_device_ex(d.ctx, &in, &ex) == EINVAL);
}

TEST_CASE("ibv_create_cq_ex: rxe's wc_flags accepted, the rest EOPNOTSUPP", "[cqex]") {
    Device d;
    ibv_cq_ex* cx = make_cq_ex(d, IBV_WC_STANDARD_FLAGS);
    CHECK(ibv_cq_ex_to_cq(cx)->cqe >= 64);
    check_empty(cx);
    CHECK(ibv_destroy_cq(ibv_cq_ex_to_cq(cx)) == 0);
    for (std::uint64_t f : {std::uint64_t{IBV_WC_EX_WITH_COMPLETION_TIMESTAMP},
                            std::uint64_t{IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK},
                            std::uint64_t{IBV_WC_EX_WITH_CVLAN}, std::uint64_t{IBV_WC_EX_WITH_FLOW_TAG},
                            std::uint64_t{IBV_WC_EX_WITH_TM_INFO}}) {
        INFO("wc_flags " << f);
        ibv_cq_init_attr_ex a{};
        a.cqe = 16;
        a.wc_flags = IBV_WC_STANDARD_FLAGS | f;
        errno = 0;
        CHECK(ibv_create_cq_ex(d.ctx, &a) == nullptr);
        CHECK(errno == EOPNOTSUPP);
    }
    ibv_cq_init_attr_ex a{};
    a.cqe = 16;
    a.comp_mask = IBV_CQ_INIT_ATTR_MASK_FLAGS;
    a.flags = IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN;
    errno = 0;
    CHECK(ibv_create_cq_ex(d.ctx, &a) == nullptr);
    CHECK(errno == EOPNOTSUPP);
}

TEST_CASE("RC: SEND/RECV and WRITE with immediate through start_poll / next_poll / end_poll",
          "[cqex][rc]") {
    Device d;
    Qp a(d, IBV_QPT_RC), b(d, IBV_QPT_RC);
    a.connect(b.qpn());
    b.connect(a.qpn());
    check_empty(a.cx);
    check_empty(b.cx);
    Mr src(d, 4096, 0), dst(d, 4096, 0xEE);
    for (std::size_t i = 0; i < src.buf.size(); ++i) src.buf[i] = static_cast<std::uint8_t>(i * 7 + 1);

    // SEND of 1000 bytes into a 2048-byte receive; then a WRITE with
    // immediate of 3000 bytes at offset 1024, which consumes a receive WQE.
    ibv_sge r1 = dst.sge(0, 2048), r2 = dst.sge(0, 16);
    post_recv(b.qp, r1, 0x1001);
    post_recv(b.qp, r2, 0x1002);
    ibv_sge s1 = src.sge(0, 1000), s2 = src.sge(0, 3000);
    ibv_send_wr w1 = send_wr(0x2001, IBV_WR_SEND, &s1);
    ibv_send_wr w2 = simnic::tb::rdma_wr(0x2002, IBV_WR_RDMA_WRITE_WITH_IMM, &s2, dst.va(1024), dst.mr->rkey);
    w2.imm_data = htobe32(0x12345678);
    w1.next = &w2;
    post_send(a.qp, w1);

    const std::vector<Seen> sent = poll_ex(a.cx, 2);
    for (std::size_t i = 0; i < 2; ++i) {
        const Seen& s = sent[i];
        INFO("send completion " << i);
        CHECK(s.wr_id == (i == 0 ? 0x2001u : 0x2002u));
        CHECK(s.status == IBV_WC_SUCCESS);
        CHECK(s.opcode == (i == 0 ? IBV_WC_SEND : IBV_WC_RDMA_WRITE));
        CHECK(s.vendor_err == 0);
        CHECK(s.byte_len == (i == 0 ? 1000u : 3000u));  // rxe: the message length
        CHECK(s.qp_num == a.qpn());
        CHECK(s.src_qp == 0);
        CHECK((s.wc_flags & (IBV_WC_GRH | IBV_WC_WITH_INV)) == 0);
        CHECK(s.slid == 0);
        CHECK(s.sl == 0);
        CHECK(s.dlid_path_bits == 0);
    }
    const std::vector<Seen> got = poll_ex(b.cx, 2);
    const Seen& rs = got[0];
    CHECK(rs.wr_id == 0x1001);
    CHECK(rs.status == IBV_WC_SUCCESS);
    CHECK(rs.opcode == IBV_WC_RECV);
    CHECK(rs.vendor_err == 0);
    CHECK(rs.byte_len == 1000);
    CHECK(rs.qp_num == b.qpn());
    CHECK(rs.src_qp == 0);
    CHECK(rs.wc_flags == IBV_WC_GRH);  // rxe marks user-space receives with GRH
    CHECK(rs.slid == 0);
    CHECK(rs.sl == 0);
    CHECK(rs.dlid_path_bits == 0);
    const Seen& rw = got[1];
    CHECK(rw.wr_id == 0x1002);
    CHECK(rw.status == IBV_WC_SUCCESS);
    CHECK(rw.opcode == IBV_WC_RECV_RDMA_WITH_IMM);
    CHECK(rw.vendor_err == 0);
    CHECK(rw.byte_len == 3000);
    CHECK(rw.imm == htobe32(0x12345678));
    CHECK(rw.qp_num == b.qpn());
    CHECK(rw.src_qp == 0);
    CHECK(rw.wc_flags == (IBV_WC_GRH | IBV_WC_WITH_IMM));
    CHECK(rw.slid == 0);
    CHECK(rw.sl == 0);
    CHECK(rw.dlid_path_bits == 0);
    CHECK(std::memcmp(dst.buf.data(), src.buf.data(), 1000) == 0);
    CHECK(dst.buf[1000] == 0xEE);
    CHECK(std::memcmp(dst.buf.data() + 1024, src.buf.data(), 3000) == 0);
    CHECK(dst.buf[4095] == 0xEE);
    check_empty(a.cx);
    check_empty(b.cx);

    // The same CQs through ibv_poll_cq: a SEND, then its completions.
    post_recv(b.qp, r1, 0x1003);
    w1.next = nullptr;
    w1.wr_id = 0x2003;
    post_send(a.qp, w1);
    for (auto [cq, id] : {std::pair{a.cq(), 0x2003u}, std::pair{b.cq(), 0x1003u}}) {
        const ibv_wc wc = simnic::tb::poll_one(cq, "ibv_poll_cq on an extended CQ");
        CHECK(wc.wr_id == id);
        CHECK(wc.status == IBV_WC_SUCCESS);
        CHECK(wc.byte_len == 1000);
    }
    check_empty(a.cx);
    check_empty(b.cx);
}

TEST_CASE("UD: SEND with immediate, src_qp and GRH through the iterator", "[cqex][ud]") {
    Device d;
    Qp a(d, IBV_QPT_UD), b(d, IBV_QPT_UD);
    a.connect(0);
    b.connect(0);
    ibv_ah_attr aa = simnic::tb::gid_av(d);
    ibv_ah* ah = ibv_create_ah(d.pd, &aa);
    REQUIRE(ah != nullptr);
    Mr src(d, 256, 0x5A), dst(d, 512, 0);
    ibv_sge rs = dst.sge(0, 512), ss = src.sge(0, 200);
    post_recv(b.qp, rs, 7);
    ibv_send_wr w = send_wr(8, IBV_WR_SEND_WITH_IMM, &ss);
    w.imm_data = htobe32(0xA1B2C3D4);
    w.wr.ud.ah = ah;
    w.wr.ud.remote_qpn = b.qpn();
    w.wr.ud.remote_qkey = kQkey;
    post_send(a.qp, w);
    const Seen s = poll_ex(a.cx, 1)[0];
    CHECK(s.wr_id == 8);
    CHECK(s.status == IBV_WC_SUCCESS);
    CHECK(s.opcode == IBV_WC_SEND);
    CHECK(s.qp_num == a.qpn());
    const Seen r = poll_ex(b.cx, 1)[0];
    CHECK(r.wr_id == 7);
    CHECK(r.status == IBV_WC_SUCCESS);
    CHECK(r.opcode == IBV_WC_RECV);
    CHECK(r.vendor_err == 0);
    CHECK(r.byte_len == 40 + 200);
    CHECK(r.imm == htobe32(0xA1B2C3D4));
    CHECK(r.qp_num == b.qpn());
    CHECK(r.src_qp == a.qpn());
    CHECK(r.wc_flags == (IBV_WC_GRH | IBV_WC_WITH_IMM));
    CHECK(r.slid == 0);
    CHECK(r.sl == 0);
    CHECK(r.dlid_path_bits == 0);
    CHECK(dst.buf[40] == 0x5A);
    CHECK(dst.buf[40 + 199] == 0x5A);
    CHECK(dst.buf[40 + 200] == 0);
    CHECK(ibv_destroy_ah(ah) == 0);
}

TEST_CASE("completion channel: an event for the extended CQ, then the iterator", "[cqex][events]") {
    Device d;
    ibv_comp_channel* ch = ibv_create_comp_channel(d.ctx);
    REQUIRE(ch != nullptr);
    {
        Qp a(d, IBV_QPT_RC, ch), b(d, IBV_QPT_RC);
        a.connect(b.qpn());
        b.connect(a.qpn());
        REQUIRE(ibv_req_notify_cq(a.cq(), 0) == 0);
        pollfd pfd{ch->fd, POLLIN, 0};
        CHECK(poll(&pfd, 1, 0) == 0);
        Mr src(d, 64, 1), dst(d, 64, 0);
        ibv_sge rs = dst.sge(0, 64), ss = src.sge(0, 64);
        post_recv(b.qp, rs, 1);
        ibv_send_wr w = send_wr(2, IBV_WR_SEND, &ss);
        post_send(a.qp, w);
        void* ev_ctx = nullptr;
        CHECK(simnic::tb::wait_cq_event(ch, &ev_ctx) == a.cq());
        CHECK(ev_ctx == &a);
        const Seen s = poll_ex(a.cx, 1)[0];
        CHECK(s.wr_id == 2);
        CHECK(s.opcode == IBV_WC_SEND);
        CHECK(poll_ex(b.cx, 1)[0].wr_id == 1);
        // Re-armed, the next completion raises the next event.
        REQUIRE(ibv_req_notify_cq(a.cq(), 0) == 0);
        post_recv(b.qp, rs, 3);
        w.wr_id = 4;
        post_send(a.qp, w);
        CHECK(simnic::tb::wait_cq_event(ch) == a.cq());
        CHECK(poll_ex(a.cx, 1)[0].wr_id == 4);
        CHECK(poll_ex(b.cx, 1)[0].wr_id == 3);
    }
    CHECK(ibv_destroy_comp_channel(ch) == 0);
}
