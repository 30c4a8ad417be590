// Two simnic devices on one wire of frames, from an ordinary libibverbs
// program (issue 12, section 1): what RC, UC and UD promise when the wire
// drops, duplicates, reorders, delays or corrupts frames, and the reliability
// timers measured against the QP's attributes.
//
// The runner (test_faults.sh) starts a `simnic wire` with the faults, puts
// the devices $SIMNIC_TEST_DEVICE and $SIMNIC_TEST_PEER on it and runs the
// cases tagged [faults] on the faulty wire and [timers] on a clean one.
// test_fabric.sh (case timers) runs the [fabric] case on two hosts of a
// fabric, whose protocol timers run in its simulated time.
//   SIMNIC_FAULTS_ITERS  rounds of the RC case and messages of UC/UD (100)
//   SIMNIC_FAULTS_KIND   the wire's fault (drop, dup, reorder, delay,
//                        corrupt): what UD may see twice
//   SIMNIC               the simnic CLI, for the devices' counters
//
// The seeded verbs workload (testbench/workload, its own branch) covers more
// mixes; test_faults.sh runs it on the same wire when it is built (the
// SIMNIC_WORKLOAD hook there).
#include <cerrno>
#include <cstdio>
#include <map>
#include <random>
#include <set>

#include "verbs_app.h"

using namespace simnic::tb;

namespace {

int env_int(const char* name, int dflt) {
    const char* v = std::getenv(name);
    return v && *v ? std::atoi(v) : dflt;
}
std::string env_str(const char* name) {
    const char* v = std::getenv(name);
    return v ? v : "";
}

// A device opened by name (no PD of the test's making is shared between the
// two: each side has its own, as two hosts would).
struct Dev {
    ibv_context* ctx = nullptr;
    ibv_pd* pd = nullptr;
    ibv_port_attr port{};
    ibv_gid gid{};
    std::string name;
    explicit Dev(const std::string& n) : name(n) {
        int cnt = 0;
        ibv_device** list = ibv_get_device_list(&cnt);
        REQUIRE(list != nullptr);
        for (int i = 0; i < cnt && !ctx; ++i)
            if (name == ibv_get_device_name(list[i])) ctx = ibv_open_device(list[i]);
        ibv_free_device_list(list);
        INFO("device " << name);
        REQUIRE(ctx != nullptr);
        REQUIRE(ibv_query_port(ctx, kVerbsPort, &port) == 0);
        REQUIRE(ibv_query_gid(ctx, kVerbsPort, kVerbsGidIndex, &gid) == 0);
        pd = ibv_alloc_pd(ctx);
        REQUIRE(pd != nullptr);
    }
    ~Dev() {
        CHECK(ibv_dealloc_pd(pd) == 0);
        CHECK(ibv_close_device(ctx) == 0);
    }
    std::uint32_t mtu() const { return 128u << port.active_mtu; }
};

// The reliability attributes a case sets on its requester.
struct Rel {
    std::uint8_t timeout = 10;  // 4.2 ms: faults recover quickly
    std::uint8_t retry_cnt = 7;
    std::uint8_t rnr_retry = 7;
    std::uint8_t min_rnr_timer = 1;  // what this QP's RNR NAKs ask for
    std::uint8_t rd_atomic = 8;
};

// A verb that applies an address vector fails with EAGAIN when the peer's
// MAC is still unresolved after a second, as the kernel's does (ib_resolve_eth_dmac
// waits 1 s). With 10% of every frame dropped in each direction (a wire rule
// with frames=all; the default rules leave ARP alone) an ARP exchange fails
// about one time in five, and the neighbour table asks again only after its
// 1 s retrans time, so a test of the data path asks again too, as an
// application that resolves its route first (rdma_resolve_route) would.
template <typename F>
int retry_unresolved(F&& verb) {
    int e = verb();
    for (int i = 1; i < 8 && e == EAGAIN; ++i) e = verb();
    return e;
}

// A QP on `d` connected to `dest_qpn` on `peer`'s GID (RC, UC), or a UD QP.
void bring_up(const Dev& d, const Dev& peer, ibv_qp* qp, ibv_qp_type type, std::uint32_t dest_qpn,
              const Rel& r = {}) {
    ibv_qp_attr a{};
    a.qp_state = IBV_QPS_INIT;
    a.port_num = kVerbsPort;
    int mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;
    if (type == IBV_QPT_UD) {
        a.qkey = 0x11111111;
        mask |= IBV_QP_QKEY;
    } else {
        a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
        mask |= IBV_QP_ACCESS_FLAGS;
    }
    REQUIRE(ibv_modify_qp(qp, &a, mask) == 0);
    a = {};
    a.qp_state = IBV_QPS_RTR;
    mask = IBV_QP_STATE;
    if (type != IBV_QPT_UD) {
        a.path_mtu = d.port.active_mtu;
        a.dest_qp_num = dest_qpn;
        a.rq_psn = 0x77;
        a.ah_attr = gid_av(peer.gid);
        mask |= IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
        if (type == IBV_QPT_RC) {
            a.max_dest_rd_atomic = r.rd_atomic;
            a.min_rnr_timer = r.min_rnr_timer;
            mask |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
        }
    }
    REQUIRE(retry_unresolved([&] { return ibv_modify_qp(qp, &a, mask); }) == 0);
    a = {};
    a.qp_state = IBV_QPS_RTS;
    a.sq_psn = 0x77;
    mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
    if (type == IBV_QPT_RC) {
        a.timeout = r.timeout;
        a.retry_cnt = r.retry_cnt;
        a.rnr_retry = r.rnr_retry;
        a.max_rd_atomic = r.rd_atomic;
        mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;
    }
    REQUIRE(ibv_modify_qp(qp, &a, mask) == 0);
}

ibv_qp* make_qp(const Dev& d, ibv_cq* cq, ibv_qp_type type, std::uint32_t depth = 256) {
    ibv_qp_cap cap{};
    cap.max_send_wr = depth;
    cap.max_recv_wr = depth;
    cap.max_send_sge = 1;
    cap.max_recv_sge = 1;
    return create_qp(d.pd, type, cq, cap);
}

// Completions on `cq` until `n` arrived or `deadline` passed.
std::vector<ibv_wc> poll_n(ibv_cq* cq, std::size_t n, std::chrono::milliseconds deadline) {
    std::vector<ibv_wc> out;
    const auto end = std::chrono::steady_clock::now() + deadline;
    ibv_wc wc[16];
    while (out.size() < n && std::chrono::steady_clock::now() < end) {
        const int got = ibv_poll_cq(cq, static_cast<int>(std::min<std::size_t>(16, n - out.size())), wc);
        REQUIRE(got >= 0);
        out.insert(out.end(), wc, wc + got);
        if (got == 0) std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
    return out;
}

// The message `tag` of a seeded run: its length in [1, max] and its bytes,
// the tag in its first 4 (when it has room).
std::uint32_t msg_len(std::uint32_t tag, std::uint32_t max) {
    return 4 + static_cast<std::uint32_t>((tag * 2654435761u) % (max - 3));
}
void fill_msg(std::uint8_t* p, std::uint32_t tag, std::uint32_t len) {
    std::memcpy(p, &tag, 4);
    std::mt19937 g(tag);
    for (std::uint32_t i = 4; i < len; ++i) p[i] = static_cast<std::uint8_t>(g());
}
bool check_msg(const std::uint8_t* p, std::uint32_t len, std::uint32_t max, std::uint32_t& tag) {
    if (len < 4) return false;
    std::memcpy(&tag, p, 4);
    if (len != msg_len(tag, max)) return false;
    std::vector<std::uint8_t> want(len);
    fill_msg(want.data(), tag, len);
    return std::memcmp(p, want.data(), len) == 0;
}

// A device's counter from `simnic stats` ($SIMNIC); -1 without the CLI.
long long stat_of(const std::string& dev, const std::string& key) {
    const std::string simnic = env_str("SIMNIC");
    if (simnic.empty()) return -1;
    FILE* f = popen((simnic + " stats " + dev).c_str(), "r");
    if (!f) return -1;
    char line[256];
    long long v = -1;
    while (std::fgets(line, sizeof line, f)) {
        char k[128];
        long long x;
        if (std::sscanf(line, " %127s %lld", k, &x) == 2 && key == k) v = x;
    }
    pclose(f);
    return v;
}

// wa (soft) and wb (the device type under test).
struct Pair {
    Dev a{env_str("SIMNIC_TEST_DEVICE")}, b{env_str("SIMNIC_TEST_PEER")};
};
// A requester a and a responder b.
struct Sides {
    Dev &a, &b;
};

}  // namespace

// RC over the faulty wire: every round posts a SEND, a WRITE, a READ, a
// FETCH_ADD and a CMP_SWAP at once. Each message arrives once, in order, byte
// for byte; the atomics' returned values prove each executed exactly once (a
// duplicate request that the responder re-executed instead of replaying its
// saved result would skip a value, and the counters would end too high).
static void reliable(const Sides& p) {
    const int rounds = env_int("SIMNIC_FAULTS_ITERS", 100);
    const std::uint32_t max = 3 * p.a.mtu() + 17;  // several packets, a short last one
    ibv_cq* ca = ibv_create_cq(p.a.ctx, 1024, nullptr, nullptr, 0);
    ibv_cq* cb = ibv_create_cq(p.b.ctx, 1024, nullptr, nullptr, 0);
    REQUIRE((ca && cb));
    ibv_qp* qa = make_qp(p.a, ca, IBV_QPT_RC);
    ibv_qp* qb = make_qp(p.b, cb, IBV_QPT_RC);
    bring_up(p.a, p.b, qa, IBV_QPT_RC, qb->qp_num);
    bring_up(p.b, p.a, qb, IBV_QPT_RC, qa->qp_num);
    const unsigned all = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
                         IBV_ACCESS_REMOTE_ATOMIC;
    // a: what it sends and writes, where READs land, the atomics' results.
    Mr src(p.a.pd, max * 2, all, 0), rd(p.a.pd, max, all, 0), res(p.a.pd, 16, all, 0);
    // b: receive buffer, WRITE target, READ source, the two atomic words.
    Mr rbuf(p.b.pd, max, all, 0), wbuf(p.b.pd, max, all, 0), rsrc(p.b.pd, max, all, 0), words(p.b.pd, 16, all, 0);
    std::uint64_t fadd_expect = 0, cswap_expect = 0;
    for (int r = 0; r < rounds; ++r) {
        const std::uint32_t t_send = 3u * r + 1, t_write = 3u * r + 2, t_read = 3u * r + 3;
        const std::uint32_t ls = msg_len(t_send, max), lw = msg_len(t_write, max), lr = msg_len(t_read, max);
        fill_msg(src.buf.data(), t_send, ls);
        fill_msg(src.buf.data() + max, t_write, lw);
        fill_msg(rsrc.buf.data(), t_read, lr);
        std::memset(rbuf.buf.data(), 0, max);
        std::memset(rd.buf.data(), 0, max);
        ibv_sge rs = rbuf.sge(0, max);
        post_recv(qb, rs, 1000 + r);
        ibv_sge s0 = src.sge(0, ls), s1 = src.sge(max, lw), s2 = rd.sge(0, lr), s3 = res.sge(0, 8), s4 = res.sge(8, 8);
        ibv_send_wr w[5] = {send_wr(1, IBV_WR_SEND, &s0), rdma_wr(2, IBV_WR_RDMA_WRITE, &s1, wbuf.va(0), wbuf.mr->rkey),
                            rdma_wr(3, IBV_WR_RDMA_READ, &s2, rsrc.va(0), rsrc.mr->rkey),
                            send_wr(4, IBV_WR_ATOMIC_FETCH_AND_ADD, &s3), send_wr(5, IBV_WR_ATOMIC_CMP_AND_SWP, &s4)};
        w[3].wr.atomic = {words.va(0), 1, 0, words.mr->rkey};
        w[4].wr.atomic = {words.va(8), cswap_expect, cswap_expect + 1, words.mr->rkey};
        for (int i = 0; i < 4; ++i) w[i].next = &w[i + 1];
        post_send(qa, w[0]);
        const auto sc = poll_n(ca, 5, std::chrono::seconds(60));
        const auto rc = poll_n(cb, 1, std::chrono::seconds(10));
        INFO("round " << r);
        REQUIRE(sc.size() == 5);
        for (std::size_t i = 0; i < 5; ++i) {
            INFO(wc_str(sc[i]));
            REQUIRE(sc[i].status == IBV_WC_SUCCESS);
            CHECK(sc[i].wr_id == i + 1);  // RC completes in order
        }
        REQUIRE(rc.size() == 1);
        INFO(wc_str(rc[0]));
        REQUIRE(rc[0].status == IBV_WC_SUCCESS);
        CHECK(rc[0].byte_len == ls);
        CHECK(std::memcmp(rbuf.buf.data(), src.buf.data(), ls) == 0);
        CHECK(std::memcmp(wbuf.buf.data(), src.buf.data() + max, lw) == 0);
        CHECK(std::memcmp(rd.buf.data(), rsrc.buf.data(), lr) == 0);
        std::uint64_t got_fadd, got_cswap, word0, word1;
        std::memcpy(&got_fadd, res.buf.data(), 8);
        std::memcpy(&got_cswap, res.buf.data() + 8, 8);
        std::memcpy(&word0, words.buf.data(), 8);
        std::memcpy(&word1, words.buf.data() + 8, 8);
        // The remote words after the round: each atomic ran once.
        CHECK(word0 == fadd_expect + 1);
        CHECK(word1 == cswap_expect + 1);
        // Results the round cannot have written stay visible as such.
        std::memset(res.buf.data(), 0xEE, 16);
        CHECK(got_fadd == fadd_expect);
        CHECK(got_cswap == cswap_expect);
        ++fadd_expect;
        ++cswap_expect;
        // No second receive completion: a SEND delivered once.
        CHECK(poll_n(cb, 1, std::chrono::milliseconds(0)).empty());
    }
    std::uint64_t w0, w1;
    std::memcpy(&w0, words.buf.data(), 8);
    std::memcpy(&w1, words.buf.data() + 8, 8);
    CHECK(w0 == std::uint64_t(rounds));
    CHECK(w1 == std::uint64_t(rounds));
    std::printf("RC %s -> %s: %d rounds of SEND, WRITE, READ, FETCH_ADD, CMP_SWAP (up to %u bytes) exactly once\n",
                p.a.name.c_str(), p.b.name.c_str(), rounds, max);
    CHECK(ibv_destroy_qp(qa) == 0);
    CHECK(ibv_destroy_qp(qb) == 0);
    CHECK(ibv_destroy_cq(ca) == 0);
    CHECK(ibv_destroy_cq(cb) == 0);
}

TEST_CASE("faults: RC SEND, WRITE, READ and both atomics exactly once, byte for byte", "[faults]") {
    Pair pair;
    SECTION("requester wa, responder wb") { reliable({pair.a, pair.b}); }
    SECTION("requester wb, responder wa") { reliable({pair.b, pair.a}); }
}

// UC and UD: no retransmission, so a frame lost (or corrupted, or a UC
// message's packets out of order) loses its message; what arrives is whole
// and nothing arrives that was not sent. A message whose only frame the wire
// duplicated may arrive twice, and messages the wire reordered arrive out of
// order: UD cannot tell, and a UC responder, as rxe's (rxe_resp.c,
// check_psn), starts a new message at a FIRST or ONLY packet of any PSN. So
// UC keeps order, and both deliver once, on a wire that only loses frames.
static void unreliable(const Sides& p, ibv_qp_type type) {
    const int n = env_int("SIMNIC_FAULTS_ITERS", 100) * 2;
    const bool ud = type == IBV_QPT_UD;
    const std::uint32_t max = ud ? p.a.mtu() : 2 * p.a.mtu() + 100, grh = ud ? 40 : 0;
    ibv_cq* ca = ibv_create_cq(p.a.ctx, 1024, nullptr, nullptr, 0);
    ibv_cq* cb = ibv_create_cq(p.b.ctx, 1024, nullptr, nullptr, 0);
    REQUIRE((ca && cb));
    ibv_qp* qa = make_qp(p.a, ca, type, 512);
    ibv_qp* qb = make_qp(p.b, cb, type, 512);
    bring_up(p.a, p.b, qa, type, qb->qp_num);
    bring_up(p.b, p.a, qb, type, qa->qp_num);
    ibv_ah* ah = nullptr;
    if (ud) {
        ibv_ah_attr aa = gid_av(p.b.gid);
        REQUIRE(retry_unresolved([&] {
                    ah = ibv_create_ah(p.a.pd, &aa);
                    return ah ? 0 : errno;
                }) == 0);
    }
    const std::size_t slot = max + grh;
    Mr src(p.a.pd, std::size_t(n) * max, IBV_ACCESS_LOCAL_WRITE, 0);
    Mr dst(p.b.pd, std::size_t(n) * slot, IBV_ACCESS_LOCAL_WRITE, 0);
    for (int i = 0; i < n; ++i) {
        ibv_sge s = dst.sge(std::size_t(i) * slot, slot);
        post_recv(qb, s, std::uint64_t(i));
    }
    // Sent in bursts of 16, each burst's completions taken before the next
    // (local completions: UC and UD need no answer).
    for (int i = 0; i < n; i += 16) {
        std::vector<ibv_sge> sg(16);
        std::vector<ibv_send_wr> wr(16);
        const int k = std::min(16, n - i);
        for (int j = 0; j < k; ++j) {
            const std::uint32_t tag = std::uint32_t(i + j + 1), len = msg_len(tag, max);
            fill_msg(src.buf.data() + std::size_t(i + j) * max, tag, len);
            sg[j] = src.sge(std::size_t(i + j) * max, len);
            wr[j] = send_wr(tag, IBV_WR_SEND, &sg[j]);
            if (ud) wr[j].wr.ud = {ah, qb->qp_num, 0x11111111};
            if (j) wr[j - 1].next = &wr[j];
        }
        post_send(qa, wr[0]);
        const auto sc = poll_n(ca, std::size_t(k), std::chrono::seconds(10));
        REQUIRE(sc.size() == std::size_t(k));
        for (const ibv_wc& wc : sc) {
            INFO(wc_str(wc));
            REQUIRE(wc.status == IBV_WC_SUCCESS);
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    // Whatever arrives does within a second of the last send (delays are ms).
    std::this_thread::sleep_for(std::chrono::milliseconds(ud ? 500 : 200));
    const auto rc = poll_n(cb, std::size_t(n), std::chrono::milliseconds(800));
    const std::string kind = env_str("SIMNIC_FAULTS_KIND");
    const bool loses_only = kind != "dup" && kind != "reorder" && kind != "delay";
    std::map<std::uint32_t, int> seen;
    std::uint32_t last = 0;
    for (const ibv_wc& wc : rc) {
        INFO(wc_str(wc));
        REQUIRE(wc.status == IBV_WC_SUCCESS);
        std::uint32_t tag = 0;
        const std::uint8_t* at = dst.buf.data() + wc.wr_id * slot + grh;
        REQUIRE(wc.byte_len >= grh);
        CHECK(check_msg(at, wc.byte_len - grh, max, tag));
        ++seen[tag];
        if (!ud && loses_only) CHECK(tag > last);
        last = tag;
    }
    int twice = 0;
    for (const auto& [tag, count] : seen) {
        INFO("message " << tag);
        CHECK(tag >= 1);
        CHECK(tag <= std::uint32_t(n));
        if (kind == "dup") CHECK(count <= 2);
        else CHECK(count == 1);
        twice += count == 2;
    }
    std::printf("%s %s -> %s: %d messages sent, %zu arrived whole (%d twice), %zu lost\n", ud ? "UD" : "UC",
                p.a.name.c_str(), p.b.name.c_str(), n, seen.size(), twice, std::size_t(n) - seen.size());
    if (ah) CHECK(ibv_destroy_ah(ah) == 0);
    CHECK(ibv_destroy_qp(qa) == 0);
    CHECK(ibv_destroy_qp(qb) == 0);
    CHECK(ibv_destroy_cq(ca) == 0);
    CHECK(ibv_destroy_cq(cb) == 0);
}

TEST_CASE("faults: UC loses a message for a lost packet, and nothing else", "[faults]") {
    Pair pair;
    SECTION("wa to wb") { unreliable({pair.a, pair.b}, IBV_QPT_UC); }
    SECTION("wb to wa") { unreliable({pair.b, pair.a}, IBV_QPT_UC); }
}
TEST_CASE("faults: UD loses a datagram for a lost frame, and nothing else", "[faults]") {
    Pair pair;
    SECTION("wa to wb") { unreliable({pair.a, pair.b}, IBV_QPT_UD); }
    SECTION("wb to wa") { unreliable({pair.b, pair.a}, IBV_QPT_UD); }
}

namespace {
// How late a timer may fire (scheduling), in seconds: $SIMNIC_TIMER_SLACK_MS,
// default 50; never early.
double slack_s() { return env_int("SIMNIC_TIMER_SLACK_MS", 50) / 1000.0; }
// The retransmit timer, in seconds, that the QP's `timeout` asks for.
double retransmit_s(int timeout) { return 4.096e-6 * double(1u << timeout); }
// IBA table 45 (the RNR NAK's timer field), in seconds.
double rnr_s(int code) {
    static const double ms[32] = {655.36, 0.01,  0.02,  0.03,  0.04,  0.06,   0.08,   0.12,
                                  0.16,   0.24,  0.32,  0.48,  0.64,  0.96,   1.28,   1.92,
                                  2.56,   3.84,  5.12,  7.68,  10.24, 15.36,  20.48,  30.72,
                                  40.96,  61.44, 81.92, 122.88, 163.84, 245.76, 327.68, 491.52};
    return ms[code] / 1000;
}
// A requester's SEND (m) waits out RNR NAKs for ever: the receive `rs` (in
// r) posted on the responder qb lets it through, byte for byte, and each
// side completes once (send CQ ca, receive CQ cb).
void receive_lets_send_through(ibv_qp* qb, ibv_sge& rs, ibv_cq* ca, ibv_cq* cb, const Mr& m, const Mr& r) {
    post_recv(qb, rs, 9);
    const auto sc = poll_n(ca, 1, std::chrono::seconds(10));
    REQUIRE(sc.size() == 1);
    INFO(wc_str(sc[0]));
    CHECK(sc[0].status == IBV_WC_SUCCESS);
    CHECK(r.buf == m.buf);
    CHECK(poll_n(cb, 1, std::chrono::seconds(1)).size() == 1);
}
}  // namespace

// A peer that never answers (its QP left in INIT, which drops requests): the
// requester sends, waits `timeout`, resends retry_cnt times, then completes
// the WQE with RETRY_EXC_ERR, moves to ERROR and flushes the rest. The time
// from post to error is (retry_cnt + 1) timer periods; the counters give the
// number of timeouts and resends.
TEST_CASE("timers: retransmit timer and retry_cnt, then RETRY_EXC_ERR, ERROR and flushed WQEs", "[timers]") {
    Pair pair;
    Sides p{pair.b, pair.a};  // the requester is the device under test
    struct Case {
        int timeout, retry_cnt;
    };
    for (const Case c : {Case{12, 3}, Case{14, 2}, Case{13, 0}}) for (int attempt = 1;; ++attempt) {
        INFO("timeout " << c.timeout << " retry_cnt " << c.retry_cnt);
        ibv_cq* ca = ibv_create_cq(p.a.ctx, 64, nullptr, nullptr, 0);
        ibv_cq* cb = ibv_create_cq(p.b.ctx, 64, nullptr, nullptr, 0);
        ibv_qp* qa = make_qp(p.a, ca, IBV_QPT_RC, 16);
        ibv_qp* qb = make_qp(p.b, cb, IBV_QPT_RC, 16);
        Rel r;
        r.timeout = std::uint8_t(c.timeout);
        r.retry_cnt = std::uint8_t(c.retry_cnt);
        bring_up(p.a, p.b, qa, IBV_QPT_RC, qb->qp_num, r);
        ibv_qp_attr ia{};
        ia.qp_state = IBV_QPS_INIT;
        ia.port_num = kVerbsPort;
        ia.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
        REQUIRE(ibv_modify_qp(qb, &ia, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS) == 0);
        Mr m(p.a.pd, 4096, IBV_ACCESS_LOCAL_WRITE, 0x5a);
        const long long to0 = stat_of(p.a.name, "timeouts"), re0 = stat_of(p.a.name, "retransmits");
        ibv_sge s[3] = {m.sge(0, 64), m.sge(64, 64), m.sge(128, 64)};
        ibv_send_wr w[3] = {send_wr(1, IBV_WR_SEND, &s[0]), send_wr(2, IBV_WR_SEND, &s[1]),
                            send_wr(3, IBV_WR_SEND, &s[2])};
        w[0].next = &w[1];
        w[1].next = &w[2];
        const auto t0 = std::chrono::steady_clock::now();
        post_send(qa, w[0]);
        const auto first = poll_n(ca, 1, std::chrono::seconds(30));
        const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        REQUIRE(first.size() == 1);
        INFO(wc_str(first[0]));
        CHECK(first[0].wr_id == 1);
        CHECK(first[0].status == IBV_WC_RETRY_EXC_ERR);
        const auto rest = poll_n(ca, 2, std::chrono::seconds(2));
        REQUIRE(rest.size() == 2);
        for (const ibv_wc& wc : rest) {
            INFO(wc_str(wc));
            CHECK(wc.status == IBV_WC_WR_FLUSH_ERR);
        }
        CHECK(rest[0].wr_id == 2);
        CHECK(rest[1].wr_id == 3);
        ibv_qp_attr qa_attr{};
        ibv_qp_init_attr qa_init{};
        REQUIRE(ibv_query_qp(qa, &qa_attr, IBV_QP_STATE, &qa_init) == 0);
        CHECK(qa_attr.qp_state == IBV_QPS_ERR);
        const double want = (c.retry_cnt + 1) * retransmit_s(c.timeout);
        std::printf("retransmit: timeout %d (%.1f ms), retry_cnt %d: RETRY_EXC_ERR after %.1f ms (want %.1f ms)",
                    c.timeout, retransmit_s(c.timeout) * 1e3, c.retry_cnt, took * 1e3, want * 1e3);
        // Never early; late by a scheduling delay at most, which a loaded
        // machine can stretch once: a late measurement is taken again (up to
        // 3 times), so only a timer late every time fails.
        CHECK(took >= want * 0.95);
        const bool late = took > want * 1.3 + slack_s();
        if (to0 >= 0) {
            const long long to = stat_of(p.a.name, "timeouts") - to0, re = stat_of(p.a.name, "retransmits") - re0;
            std::printf(", %lld timeouts, %lld resends", to, re);
            CHECK(to == c.retry_cnt + 1);
            // The three SENDs went out once each; every timeout but the last
            // resends them all (go back N).
            CHECK(re == 3LL * c.retry_cnt);
        }
        std::printf("\n");
        CHECK(ibv_destroy_qp(qa) == 0);
        CHECK(ibv_destroy_qp(qb) == 0);
        CHECK(ibv_destroy_cq(ca) == 0);
        CHECK(ibv_destroy_cq(cb) == 0);
        if (late && attempt < 3) {
            std::printf("  (late: measured again)\n");
            continue;
        }
        CHECK_FALSE(late);
        break;
    }
}

// A responder with no receive WQE answers each SEND with an RNR NAK carrying
// its min_rnr_timer; the requester waits that long before each of its
// rnr_retry resends, then completes with RNR_RETRY_EXC_ERR. A receive posted
// during the waits lets the SEND through.
TEST_CASE("timers: RNR waits follow min_rnr_timer, rnr_retry bounds them", "[timers]") {
    Pair pair;
    Sides p{pair.b, pair.a};  // the requester is the device under test
    struct Case {
        int code, rnr_retry;
    };
    for (const Case c : {Case{20, 3}, Case{22, 2}, Case{18, 5}}) for (int attempt = 1;; ++attempt) {
        INFO("min_rnr_timer " << c.code << " rnr_retry " << c.rnr_retry);
        ibv_cq* ca = ibv_create_cq(p.a.ctx, 64, nullptr, nullptr, 0);
        ibv_cq* cb = ibv_create_cq(p.b.ctx, 64, nullptr, nullptr, 0);
        ibv_qp* qa = make_qp(p.a, ca, IBV_QPT_RC, 16);
        ibv_qp* qb = make_qp(p.b, cb, IBV_QPT_RC, 16);
        Rel ra, rb;
        ra.rnr_retry = std::uint8_t(c.rnr_retry);
        // A retransmit timer (268 ms) that cannot run out first: on a loaded
        // machine a 4 ms one fired before the first RNR NAK was processed,
        // the resent SEND drew a second NAK, and that NAK took an RNR retry
        // of its own (as in rxe), so the QP failed one wait early.
        ra.timeout = 16;
        rb.min_rnr_timer = std::uint8_t(c.code);
        bring_up(p.a, p.b, qa, IBV_QPT_RC, qb->qp_num, ra);
        bring_up(p.b, p.a, qb, IBV_QPT_RC, qa->qp_num, rb);
        Mr m(p.a.pd, 4096, IBV_ACCESS_LOCAL_WRITE, 0x5a);
        const long long nak0 = stat_of(p.a.name, "rx_rnr_nak");
        ibv_sge s = m.sge(0, 64);
        ibv_send_wr w = send_wr(1, IBV_WR_SEND, &s);
        const auto t0 = std::chrono::steady_clock::now();
        post_send(qa, w);
        const auto first = poll_n(ca, 1, std::chrono::seconds(30));
        const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        REQUIRE(first.size() == 1);
        INFO(wc_str(first[0]));
        CHECK(first[0].status == IBV_WC_RNR_RETRY_EXC_ERR);
        const double want = c.rnr_retry * rnr_s(c.code);
        std::printf("RNR: min_rnr_timer %d (%.2f ms), rnr_retry %d: RNR_RETRY_EXC_ERR after %.1f ms (want %.1f ms)",
                    c.code, rnr_s(c.code) * 1e3, c.rnr_retry, took * 1e3, want * 1e3);
        CHECK(took >= want * 0.95);
        const bool late = took > want * 1.3 + slack_s();
        if (nak0 >= 0) {
            const long long naks = stat_of(p.a.name, "rx_rnr_nak") - nak0;
            std::printf(", %lld RNR NAKs", naks);
            CHECK(naks == c.rnr_retry + 1);
        }
        std::printf("\n");
        ibv_qp_attr at{};
        ibv_qp_init_attr ini{};
        REQUIRE(ibv_query_qp(qa, &at, IBV_QP_STATE, &ini) == 0);
        CHECK(at.qp_state == IBV_QPS_ERR);
        CHECK(ibv_destroy_qp(qa) == 0);
        CHECK(ibv_destroy_qp(qb) == 0);
        CHECK(ibv_destroy_cq(ca) == 0);
        CHECK(ibv_destroy_cq(cb) == 0);
        if (late && attempt < 3) {
            std::printf("  (late: measured again)\n");
            continue;
        }
        CHECK_FALSE(late);
        break;
    }
    // rnr_retry 7 waits for ever: a receive posted after three NAKs lets the
    // SEND complete.
    ibv_cq* ca = ibv_create_cq(p.a.ctx, 64, nullptr, nullptr, 0);
    ibv_cq* cb = ibv_create_cq(p.b.ctx, 64, nullptr, nullptr, 0);
    ibv_qp* qa = make_qp(p.a, ca, IBV_QPT_RC, 16);
    ibv_qp* qb = make_qp(p.b, cb, IBV_QPT_RC, 16);
    Rel rb;
    rb.min_rnr_timer = 18;  // 5.12 ms
    bring_up(p.a, p.b, qa, IBV_QPT_RC, qb->qp_num);
    bring_up(p.b, p.a, qb, IBV_QPT_RC, qa->qp_num, rb);
    Mr m(p.a.pd, 64, IBV_ACCESS_LOCAL_WRITE, 0x33), r(p.b.pd, 64, IBV_ACCESS_LOCAL_WRITE, 0);
    ibv_sge s = m.sge(0, 64), rs = r.sge(0, 64);
    ibv_send_wr w = send_wr(1, IBV_WR_SEND, &s);
    post_send(qa, w);
    std::this_thread::sleep_for(std::chrono::milliseconds(18));
    receive_lets_send_through(qb, rs, ca, cb, m, r);
    CHECK(ibv_destroy_qp(qa) == 0);
    CHECK(ibv_destroy_qp(qb) == 0);
    CHECK(ibv_destroy_cq(ca) == 0);
    CHECK(ibv_destroy_cq(cb) == 0);
}

// A fabric's devices (test_fabric.sh, case timers): their protocol timers
// run in the fabric's simulated time. A requester waiting out RNR NAKs for
// ever (rnr_retry 7, no receive posted) keeps a timer re-arming without end,
// so the fabric is never idle. An AH destroyed on its device meanwhile must
// still return (the device simulates until the doorbells rung before the
// destroy are taken, not to idle), UD SENDs posted just before it naming it
// must all arrive (their WQEs read it first, as rxe's copy of the address
// vector at post would), and the waiting SEND must go through once a
// receive is posted.
TEST_CASE("fabric: an AH destroyed while a QP waits out RNR NAKs for ever", "[fabric]") {
    Pair pair;
    Sides p{pair.a, pair.b};
    ibv_cq* ca = ibv_create_cq(p.a.ctx, 64, nullptr, nullptr, 0);
    ibv_cq* cb = ibv_create_cq(p.b.ctx, 64, nullptr, nullptr, 0);
    REQUIRE((ca && cb));
    ibv_qp* qa = make_qp(p.a, ca, IBV_QPT_RC, 16);
    ibv_qp* qb = make_qp(p.b, cb, IBV_QPT_RC, 16);
    Rel rb;
    rb.min_rnr_timer = 1;  // 0.01 ms: many waits in a millisecond of simulated time
    bring_up(p.a, p.b, qa, IBV_QPT_RC, qb->qp_num);
    bring_up(p.b, p.a, qb, IBV_QPT_RC, qa->qp_num, rb);
    Mr m(p.a.pd, 64, IBV_ACCESS_LOCAL_WRITE, 0x44), r(p.b.pd, 64, IBV_ACCESS_LOCAL_WRITE, 0);
    const long long nak0 = stat_of(p.a.name, "rx_rnr_nak");
    ibv_sge s = m.sge(0, 64), rs = r.sge(0, 64);
    ibv_send_wr w = send_wr(1, IBV_WR_SEND, &s);
    post_send(qa, w);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    CHECK(poll_n(ca, 1, std::chrono::milliseconds(1)).empty());  // still waiting
    if (nak0 >= 0) CHECK(stat_of(p.a.name, "rx_rnr_nak") - nak0 >= 2);
    // UD from a to b, through an AH that goes as soon as the SENDs are posted.
    constexpr int kUd = 8;
    ibv_cq* ua = ibv_create_cq(p.a.ctx, 64, nullptr, nullptr, 0);
    ibv_cq* ub = ibv_create_cq(p.b.ctx, 64, nullptr, nullptr, 0);
    REQUIRE((ua && ub));
    ibv_qp* da = make_qp(p.a, ua, IBV_QPT_UD, 16);
    ibv_qp* db = make_qp(p.b, ub, IBV_QPT_UD, 16);
    bring_up(p.a, p.b, da, IBV_QPT_UD, 0);
    bring_up(p.b, p.a, db, IBV_QPT_UD, 0);
    Mr us(p.a.pd, 64 * kUd, IBV_ACCESS_LOCAL_WRITE, 0), ur(p.b.pd, (64 + 40) * kUd, IBV_ACCESS_LOCAL_WRITE, 0);
    for (int i = 0; i < kUd; ++i) {
        fill_msg(us.buf.data() + 64 * i, std::uint32_t(i + 100), 64);
        ibv_sge g = ur.sge(std::size_t(104) * i, 104);  // 40 bytes of GRH first
        post_recv(db, g, std::uint64_t(i));
    }
    ibv_ah_attr aa = gid_av(p.b.gid);
    for (int round = 0; round < 3; ++round) {
        ibv_ah* ah = ibv_create_ah(p.a.pd, &aa);
        REQUIRE(ah != nullptr);
        if (round == 0) {
            ibv_sge g[kUd];
            ibv_send_wr uw[kUd];
            for (int i = 0; i < kUd; ++i) {
                g[i] = us.sge(std::size_t(64) * i, 64);
                uw[i] = send_wr(std::uint64_t(i), IBV_WR_SEND, &g[i]);
                uw[i].wr.ud.ah = ah;
                uw[i].wr.ud.remote_qpn = db->qp_num;
                uw[i].wr.ud.remote_qkey = 0x11111111;
                uw[i].next = i + 1 < kUd ? &uw[i + 1] : nullptr;
            }
            post_send(da, uw[0]);
        }
        const auto t0 = std::chrono::steady_clock::now();
        CHECK(ibv_destroy_ah(ah) == 0);
        const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        std::printf("ibv_destroy_ah during RNR waits%s: %.1f ms\n", round == 0 ? ", UD SENDs posted" : "",
                    took * 1e3);
    }
    const auto usent = poll_n(ua, kUd, std::chrono::seconds(10));
    const auto urecv = poll_n(ub, kUd, std::chrono::seconds(10));
    REQUIRE(usent.size() == std::size_t(kUd));
    for (const ibv_wc& wc : usent) {
        INFO(wc_str(wc));
        CHECK(wc.status == IBV_WC_SUCCESS);
    }
    REQUIRE(urecv.size() == std::size_t(kUd));
    for (int i = 0; i < kUd; ++i) {
        INFO(wc_str(urecv[i]));
        CHECK(urecv[i].status == IBV_WC_SUCCESS);
        CHECK(urecv[i].byte_len == 104u);
        std::vector<std::uint8_t> want(64);
        fill_msg(want.data(), std::uint32_t(urecv[i].wr_id + 100), 64);
        const std::uint8_t* got = ur.buf.data() + 104 * urecv[i].wr_id + 40;
        CHECK(std::vector<std::uint8_t>(got, got + 64) == want);
    }
    // The RC SEND waited all along: a receive lets it through.
    receive_lets_send_through(qb, rs, ca, cb, m, r);
    for (ibv_qp* q : {qa, qb, da, db}) CHECK(ibv_destroy_qp(q) == 0);
    for (ibv_cq* c : {ca, cb, ua, ub}) CHECK(ibv_destroy_cq(c) == 0);
}
