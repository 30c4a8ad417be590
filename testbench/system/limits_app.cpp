// Limits and exhaustion (issue 12, section 5), from an ordinary libibverbs
// program on one device ($SIMNIC_TEST_DEVICE, through verbs_app.h):
//   - every per-object limit the device advertises is reachable, one more
//     fails with rxe's errno (EINVAL), and the device stays healthy;
//   - [scale]: $SIMNIC_LIMITS_QPS QPs and $SIMNIC_LIMITS_MRS MRs at once
//     (10,000 and 100,000 by hand; fewer in CI; "max": the advertised
//     max_qp / max_mr, then one more refused), all usable, with the
//     daemon's memory per QP and per MR printed (its VmRSS, from
//     $SIMNIC_DAEMON_PID) and given back when they go;
//   - [max_pd], [max_cq], [max_srq], [max_ah], [max_mw] (hidden: run by tag):
//     exactly the advertised number of the object on the device, one more
//     refused with rxe's errno, all destroyed and the device's count (the
//     daemon's resource_counts) back where it was, with
//     the times and the memory per object of the daemon and of this process;
//   - [max_srq_wr] (hidden): one SRQ of max_srq_wr WQEs of max_srq_sge SGEs.
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>

#include "verbs_app.h"

using namespace simnic::tb;

namespace {

// VmRSS of process `pid` ("self" for this one), in KiB; -1 without it.
long rss_kib_of(const std::string& pid) {
    std::ifstream f("/proc/" + pid + "/status");
    std::string k;
    long v = -1;
    while (f >> k) {
        if (k == "VmRSS:") {
            f >> v;
            return v;
        }
        f.ignore(1 << 20, '\n');
    }
    return -1;
}

// The daemon's VmRSS ($SIMNIC_DAEMON_PID), in KiB; -1 without it.
long rss_kib() {
    const char* pid = std::getenv("SIMNIC_DAEMON_PID");
    return pid ? rss_kib_of(pid) : -1;
}

// How many objects of one kind ("pds", "cqs", "srqs", "ahs", "mws") the
// device holds: the daemon's resource_counts answer (control/protocol.h: one
// JSON object per SOCK_SEQPACKET message on $SIMNIC_RUNTIME_DIR/simnicd.sock),
// the counts `simnic resource show` prints. Not through the CLI: its summary
// asks for every object's record, a million of them here. -1 without it.
long device_count(const char* kind) {
    const char* dir = std::getenv("SIMNIC_RUNTIME_DIR");
    const char* dev = std::getenv("SIMNIC_TEST_DEVICE");
    if (dir == nullptr || dev == nullptr) return -1;
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    const std::string path = std::string(dir) + "/simnicd.sock";
    if (path.size() >= sizeof a.sun_path) return -1;
    std::memcpy(a.sun_path, path.c_str(), path.size());
    const int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    long n = -1;
    const std::string req = std::string("{\"op\":\"resource_counts\",\"device\":\"") + dev + "\"}";
    if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
        send(fd, req.data(), req.size(), 0) == ssize_t(req.size())) {
        char buf[4096];
        const ssize_t got = recv(fd, buf, sizeof buf - 1, 0);
        if (got > 0) {
            const std::string out(buf, std::size_t(got));
            const std::string key = std::string("\"") + kind + "\":";
            const std::size_t at = out.find(key);
            if (at != std::string::npos) n = std::atol(out.c_str() + at + key.size());
        }
    }
    close(fd);
    return n;
}

double secs(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

int env_int(const char* n, int d) {
    const char* v = std::getenv(n);
    return v && *v ? std::atoi(v) : d;
}

// An RC QP whose caps are `cap`; nullptr (errno set) if refused.
// The device's max_inline (CAP_BLOCK, hw-spec 2.4), the most inline bytes a
// QP may ask for: verbs do not advertise it.
constexpr std::uint32_t kMaxInlineData = 512;

ibv_qp* try_qp(VerbsDevice& d, ibv_cq* cq, ibv_qp_cap cap) {
    ibv_qp_init_attr ia{};
    ia.send_cq = ia.recv_cq = cq;
    ia.qp_type = IBV_QPT_RC;
    ia.cap = cap;
    errno = 0;
    return ibv_create_qp(d.pd, &ia);
}

// The device still creates, connects and uses a QP pair: a SEND between two
// fresh QPs arrives.
void still_healthy(VerbsDevice& d) {
    ibv_cq* cq = ibv_create_cq(d.ctx, 16, nullptr, nullptr, 0);
    REQUIRE(cq != nullptr);
    ibv_qp_cap cap{};
    cap.max_send_wr = cap.max_recv_wr = 4;
    cap.max_send_sge = cap.max_recv_sge = 1;
    ibv_qp* a = create_qp(d.pd, IBV_QPT_RC, cq, cap);
    ibv_qp* b = create_qp(d.pd, IBV_QPT_RC, cq, cap);
    connect_qp(d, a, IBV_QPT_RC, b->qp_num);
    connect_qp(d, b, IBV_QPT_RC, a->qp_num);
    Mr src(d.pd, 64, IBV_ACCESS_LOCAL_WRITE, 7), dst(d.pd, 64, IBV_ACCESS_LOCAL_WRITE, 0);
    ibv_sge rs = dst.sge(0, 64), ss = src.sge(0, 64);
    post_recv(b, rs, 1);
    ibv_send_wr w = send_wr(2, IBV_WR_SEND, &ss);
    post_send(a, w);
    for (int i = 0; i < 2; ++i) {
        ibv_wc wc = poll_one(cq, "healthy");
        INFO(wc_str(wc));
        CHECK(wc.status == IBV_WC_SUCCESS);
    }
    CHECK(dst.buf == src.buf);
    CHECK(ibv_destroy_qp(a) == 0);
    CHECK(ibv_destroy_qp(b) == 0);
    CHECK(ibv_destroy_cq(cq) == 0);
}

// Creates objects with `make` until the device holds `advertised` of `kind`
// (counting those it held before: the VerbsDevice's own PD), each one
// succeeding; then one more must fail with `want_errno` (rxe's errno for a
// full pool), and all are destroyed with `destroy`, the device's count back
// where it was. Prints the times and the memory each object took, in the
// daemon and in this process (its rings, its copies of the objects), and
// returns this process's KiB per object.
template <class Make, class Destroy>
double reach_limit(const char* limit, const char* kind, int advertised, int want_errno, Make make,
                 Destroy destroy) {
    using T = decltype(make());
    const long held0 = device_count(kind);
    const long held = held0 >= 0 ? held0 : (std::strcmp(kind, "pds") == 0 ? 1 : 0);
    INFO(limit << " " << advertised << ", held before " << held);
    REQUIRE(held < advertised);
    const std::size_t n = std::size_t(advertised - held);
    std::vector<T> objs;
    objs.reserve(n);
    const long d0 = rss_kib(), p0 = rss_kib_of("self");
    auto t0 = std::chrono::steady_clock::now();
    int failed_errno = 0;
    for (std::size_t i = 0; i < n; ++i) {
        errno = 0;
        T o = make();
        if (o == nullptr) {
            failed_errno = errno;
            break;
        }
        objs.push_back(o);
    }
    const double t_make = secs(t0);
    INFO("created " << objs.size() << " of " << n << "; the last failed with errno " << failed_errno);
    REQUIRE(objs.size() == n);
    const long d1 = rss_kib(), p1 = rss_kib_of("self");
    const long on_device = device_count(kind);
    if (held0 >= 0) CHECK(on_device == advertised);
    errno = 0;
    T over = make();
    const int e = errno;
    std::printf("%s %d reached (%ld on the device) in %.1f s (%.1f us each); one more: %s (errno %d, %s)\n", limit,
                advertised, on_device, t_make, t_make / double(n) * 1e6, over ? "created" : "refused", e,
                std::strerror(e));
    CHECK(over == nullptr);
    CHECK(e == want_errno);
    if (over) destroy(over);
    t0 = std::chrono::steady_clock::now();
    int bad = 0;
    for (T o : objs)
        if (destroy(o) != 0) ++bad;
    const double t_free = secs(t0);
    CHECK(bad == 0);
    objs.clear();
    objs.shrink_to_fit();
    const long d2 = rss_kib(), p2 = rss_kib_of("self");
    if (held0 >= 0) CHECK(device_count(kind) == held);
    std::printf("%s: all destroyed in %.1f s; daemon VmRSS %ld -> %ld KiB (%.3f KiB per object), %ld after; "
                "this process %ld -> %ld KiB (%.3f KiB per object), %ld after\n",
                limit, t_free, d0, d1, double(d1 - d0) / double(n), d2, p0, p1, double(p1 - p0) / double(n), p2);
    return double(p1 - p0) / double(n);
}

}  // namespace

TEST_CASE("limits: each advertised per-object limit is reachable, one more fails with EINVAL", "[limits]") {
    VerbsDevice d;
    const ibv_device_attr& at = d.attr;
    std::printf("advertised: max_qp %d max_qp_wr %d max_sge %d max_cq %d max_cqe %d max_mr %d max_mr_size %llu "
                "max_pd %d max_qp_rd_atom %d max_srq %d max_srq_wr %d max_srq_sge %d max_ah %d\n",
                at.max_qp, at.max_qp_wr, at.max_sge, at.max_cq, at.max_cqe, at.max_mr,
                (unsigned long long)at.max_mr_size, at.max_pd, at.max_qp_rd_atom, at.max_srq, at.max_srq_wr,
                at.max_srq_sge, at.max_ah);
    SECTION("CQ entries") {
        ibv_cq* cq = ibv_create_cq(d.ctx, at.max_cqe, nullptr, nullptr, 0);
        REQUIRE(cq != nullptr);
        CHECK(cq->cqe >= at.max_cqe);
        CHECK(ibv_destroy_cq(cq) == 0);
        errno = 0;
        CHECK(ibv_create_cq(d.ctx, at.max_cqe + 1, nullptr, nullptr, 0) == nullptr);
        CHECK(errno == EINVAL);
    }
    SECTION("QP work requests and scatter/gather entries") {
        ibv_cq* cq = ibv_create_cq(d.ctx, 64, nullptr, nullptr, 0);
        REQUIRE(cq != nullptr);
        ibv_qp_cap cap{};
        cap.max_send_wr = cap.max_recv_wr = std::uint32_t(at.max_qp_wr);
        cap.max_send_sge = cap.max_recv_sge = std::uint32_t(at.max_sge);
        ibv_qp* qp = try_qp(d, cq, cap);
        INFO("errno " << errno);
        REQUIRE(qp != nullptr);
        CHECK(ibv_destroy_qp(qp) == 0);
        for (int which = 0; which < 4; ++which) {
            ibv_qp_cap c{};
            c.max_send_wr = c.max_recv_wr = 4;
            c.max_send_sge = c.max_recv_sge = 1;
            if (which == 0) c.max_send_wr = std::uint32_t(at.max_qp_wr) + 1;
            if (which == 1) c.max_recv_wr = std::uint32_t(at.max_qp_wr) + 1;
            if (which == 2) c.max_send_sge = std::uint32_t(at.max_sge) + 1;
            if (which == 3) c.max_recv_sge = std::uint32_t(at.max_sge) + 1;
            INFO("cap " << which);
            ibv_qp* bad = try_qp(d, cq, c);
            CHECK(bad == nullptr);
            CHECK(errno == EINVAL);
            if (bad) ibv_destroy_qp(bad);
        }
        CHECK(ibv_destroy_cq(cq) == 0);
    }
    SECTION("SRQ work requests and scatter/gather entries") {
        // rxe_srq_chk_init: max_wr above max_srq_wr or max_sge above
        // max_srq_sge is EINVAL. max_srq_wr WQEs of one SGE each are tens of
        // MiB of this process's ring; with max_srq_sge SGEs each too, hundreds
        // ([max_srq_wr], by hand).
        ibv_srq_init_attr ia{};
        ia.attr.max_wr = std::uint32_t(at.max_srq_wr);
        ia.attr.max_sge = 1;
        const long p0 = rss_kib_of("self");
        ibv_srq* srq = ibv_create_srq(d.pd, &ia);
        INFO("errno " << errno);
        REQUIRE(srq != nullptr);
        CHECK(ia.attr.max_wr >= std::uint32_t(at.max_srq_wr));
        std::printf("SRQ of max_srq_wr %d WQEs of 1 SGE: this process's VmRSS %ld -> %ld KiB\n", at.max_srq_wr, p0,
                    rss_kib_of("self"));
        CHECK(ibv_destroy_srq(srq) == 0);
        ia = {};
        ia.attr.max_wr = 4;
        ia.attr.max_sge = std::uint32_t(at.max_srq_sge);
        srq = ibv_create_srq(d.pd, &ia);
        REQUIRE(srq != nullptr);
        CHECK(ia.attr.max_sge >= std::uint32_t(at.max_srq_sge));
        CHECK(ibv_destroy_srq(srq) == 0);
        for (int which = 0; which < 2; ++which) {
            ia = {};
            ia.attr.max_wr = which == 0 ? std::uint32_t(at.max_srq_wr) + 1 : 4;
            ia.attr.max_sge = which == 1 ? std::uint32_t(at.max_srq_sge) + 1 : 1;
            INFO((which == 0 ? "max_srq_wr + 1" : "max_srq_sge + 1"));
            errno = 0;
            ibv_srq* bad = ibv_create_srq(d.pd, &ia);
            CHECK(bad == nullptr);
            CHECK(errno == EINVAL);
            if (bad) ibv_destroy_srq(bad);
        }
    }
    SECTION("QP inline data") {
        // rxe_qp_chk_cap: max_inline_data above the device's is EINVAL.
        // ibv_device_attr has no field for it (rxe's RXE_MAX_INLINE_DATA
        // neither): the device's CAP_BLOCK max_inline (hw-spec 2.4).
        ibv_cq* cq = ibv_create_cq(d.ctx, 16, nullptr, nullptr, 0);
        REQUIRE(cq != nullptr);
        ibv_qp_cap cap{};
        cap.max_send_wr = cap.max_recv_wr = 4;
        cap.max_send_sge = cap.max_recv_sge = 1;
        cap.max_inline_data = kMaxInlineData;
        ibv_qp_init_attr ia{};
        ia.send_cq = ia.recv_cq = cq;
        ia.qp_type = IBV_QPT_RC;
        ia.cap = cap;
        ibv_qp* qp = ibv_create_qp(d.pd, &ia);
        INFO("errno " << errno);
        REQUIRE(qp != nullptr);
        CHECK(ia.cap.max_inline_data >= kMaxInlineData);
        CHECK(ibv_destroy_qp(qp) == 0);
        cap.max_inline_data = kMaxInlineData + 1;
        ibv_qp* bad = try_qp(d, cq, cap);
        CHECK(bad == nullptr);
        CHECK(errno == EINVAL);
        if (bad) ibv_destroy_qp(bad);
        CHECK(ibv_destroy_cq(cq) == 0);
    }
    SECTION("outstanding READs and atomics") {
        ibv_cq* cq = ibv_create_cq(d.ctx, 16, nullptr, nullptr, 0);
        ibv_qp_cap cap{};
        cap.max_send_wr = cap.max_recv_wr = 4;
        cap.max_send_sge = cap.max_recv_sge = 1;
        ibv_qp* a = create_qp(d.pd, IBV_QPT_RC, cq, cap);
        ibv_qp* b = create_qp(d.pd, IBV_QPT_RC, cq, cap);
        qp_to_init(a, IBV_QPT_RC);
        qp_to_rtr(d, a, IBV_QPT_RC, b->qp_num);
        ibv_qp_attr x{};
        x.qp_state = IBV_QPS_RTS;
        x.sq_psn = 1;
        x.timeout = 14;
        x.retry_cnt = 7;
        x.rnr_retry = 7;
        x.max_rd_atomic = std::uint8_t(std::min(at.max_qp_init_rd_atom, 255));
        const int mask = IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                         IBV_QP_MAX_QP_RD_ATOMIC;
        CHECK(ibv_modify_qp(a, &x, mask) == 0);
        CHECK(ibv_destroy_qp(a) == 0);
        CHECK(ibv_destroy_qp(b) == 0);
        CHECK(ibv_destroy_cq(cq) == 0);
    }
    SECTION("multicast attachments (ibv_attach_mcast; rxe: ENOMEM beyond a limit)") {
        // max_mcast_qp_attach UD QPs in one group, then one more. The group
        // limit (max_mcast_grp) is reached in simnic_fw_tests: on a device
        // bound to a netdev each group is a socket and an IGMP membership of
        // the host, which the kernel adds more and more slowly (about 50 a
        // second past 3000), so 8192 of them do not belong in CI.
        std::printf("advertised: max_mcast_grp %d max_mcast_qp_attach %d max_total_mcast_qp_attach %d\n",
                    at.max_mcast_grp, at.max_mcast_qp_attach, at.max_total_mcast_qp_attach);
        ibv_cq* cq = ibv_create_cq(d.ctx, 16, nullptr, nullptr, 0);
        REQUIRE(cq != nullptr);
        ibv_qp_cap cap{};
        cap.max_send_wr = cap.max_recv_wr = 1;
        cap.max_send_sge = cap.max_recv_sge = 1;
        auto group = [](std::uint8_t a, std::uint8_t last) {
            ibv_gid g{};
            g.raw[10] = g.raw[11] = 0xff;
            g.raw[12] = a;
            g.raw[15] = last;
            return g;
        };
        const ibv_gid g0 = group(239, 1), g1 = group(239, 2);
        std::vector<ibv_qp*> qps;
        for (int i = 0; i <= at.max_mcast_qp_attach; ++i) qps.push_back(create_qp(d.pd, IBV_QPT_UD, cq, cap));
        for (int i = 0; i < at.max_mcast_qp_attach; ++i) REQUIRE(ibv_attach_mcast(qps[size_t(i)], &g0, 0) == 0);
        CHECK(ibv_attach_mcast(qps.back(), &g0, 0) == ENOMEM);
        CHECK(ibv_attach_mcast(qps[0], &g0, 0) == 0);  // a member again: nothing changes
        CHECK(ibv_attach_mcast(qps.back(), &g1, 0) == 0);  // another group takes it
        // The checks before any limit: EINVAL for another QP type, a unicast
        // GID, a detach of what is not attached.
        ibv_qp* rc = create_qp(d.pd, IBV_QPT_RC, cq, cap);
        CHECK(ibv_attach_mcast(rc, &g0, 0) == EINVAL);
        const ibv_gid unicast = group(10, 1);
        CHECK(ibv_attach_mcast(qps[0], &unicast, 0) == EINVAL);
        CHECK(ibv_detach_mcast(qps.back(), &g0, 0) == EINVAL);
        CHECK(ibv_detach_mcast(qps[0], &g1, 0) == EINVAL);
        // A detach frees a slot; destroying the QPs frees the rest.
        CHECK(ibv_detach_mcast(qps[0], &g0, 0) == 0);
        CHECK(ibv_detach_mcast(qps[0], &g0, 0) == EINVAL);
        CHECK(ibv_attach_mcast(qps.back(), &g0, 0) == 0);
        CHECK(ibv_destroy_qp(rc) == 0);
        for (ibv_qp* q : qps) CHECK(ibv_destroy_qp(q) == 0);
        CHECK(ibv_destroy_cq(cq) == 0);
    }
    SECTION("MR size") {
        // A region larger than max_mr_size is refused before any memory is
        // looked at (rxe: EINVAL).
        if (at.max_mr_size < (1ull << 46)) {
            void* p = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            errno = 0;
            ibv_mr* mr = ibv_reg_mr(d.pd, p, at.max_mr_size + 1, IBV_ACCESS_LOCAL_WRITE);
            CHECK(mr == nullptr);
            CHECK(errno != 0);
            if (mr) ibv_dereg_mr(mr);
            munmap(p, 4096);
        }
    }
    still_healthy(d);
}

TEST_CASE("limits: thousands of QPs and MRs at once, the daemon's memory per object", "[scale]") {
    VerbsDevice d;
    // "max": the device's advertised max_qp / max_mr, and then one more
    // must be refused with the device healthy after (issue 12: every
    // advertised limit reachable and enforced).
    auto count = [&d](const char* n, int dflt, int advertised) {
        const char* v = std::getenv(n);
        return v && std::strcmp(v, "max") == 0 ? advertised : env_int(n, dflt);
    };
    const int nqp = count("SIMNIC_LIMITS_QPS", 1000, d.attr.max_qp), nmr = count("SIMNIC_LIMITS_MRS", 10000, d.attr.max_mr);
    // Contexts: each is a connection, a command ring and a BAR window in the
    // daemon. 50 more, each with a PD, then closed.
    {
        const long before = rss_kib();
        std::vector<ibv_context*> ctxs;
        int n = 0;
        ibv_device** list = ibv_get_device_list(&n);
        REQUIRE(list != nullptr);
        ibv_device* dev = nullptr;
        for (int i = 0; i < n; ++i)
            if (std::strcmp(ibv_get_device_name(list[i]), ibv_get_device_name(d.ctx->device)) == 0) dev = list[i];
        REQUIRE(dev != nullptr);
        std::vector<ibv_pd*> pds;
        for (int i = 0; i < 50; ++i) {
            ibv_context* c = ibv_open_device(dev);
            INFO("context " << i << " errno " << errno);
            REQUIRE(c != nullptr);
            ctxs.push_back(c);
            pds.push_back(ibv_alloc_pd(c));
            REQUIRE(pds.back() != nullptr);
        }
        const long with = rss_kib();
        for (std::size_t i = 0; i < ctxs.size(); ++i) {
            CHECK(ibv_dealloc_pd(pds[i]) == 0);
            CHECK(ibv_close_device(ctxs[i]) == 0);
        }
        ibv_free_device_list(list);
        if (before > 0) std::printf("daemon VmRSS: %.1f KiB per context (50 opened)\n", double(with - before) / 50);
    }
    const long rss0 = rss_kib(), self0 = rss_kib_of("self");
    ibv_cq* cq = ibv_create_cq(d.ctx, 1024, nullptr, nullptr, 0);
    REQUIRE(cq != nullptr);
    std::vector<ibv_qp*> qps;
    qps.reserve(std::size_t(nqp));
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < nqp; ++i) {
        ibv_qp_cap cap{};
        cap.max_send_wr = cap.max_recv_wr = 16;
        cap.max_send_sge = cap.max_recv_sge = 1;
        ibv_qp* q = try_qp(d, cq, cap);
        INFO("QP " << i << " errno " << errno);
        REQUIRE(q != nullptr);
        qps.push_back(q);
    }
    const double t_qp = secs(t0);
    if (nqp == d.attr.max_qp) {
        errno = 0;
        ibv_qp_cap cap{};
        cap.max_send_wr = cap.max_recv_wr = 1;
        cap.max_send_sge = cap.max_recv_sge = 1;
        ibv_qp* over = try_qp(d, cq, cap);
        const int e = errno;
        std::printf("max_qp %d reached; one more: %s (errno %d)\n", nqp, over ? "created" : "refused", e);
        CHECK(over == nullptr);
        CHECK(e == EINVAL);  // rxe's full QP pool (__rxe_add_to_pool), 6.1 and 6.12
        if (over) ibv_destroy_qp(over);
    }
    const long rss1 = rss_kib(), self1 = rss_kib_of("self");
    // MRs over one buffer, a page each (distinct regions, as an application
    // registering many buffers has).
    const std::size_t page = 4096;
    void* buf = mmap(nullptr, std::size_t(nmr) * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    REQUIRE(buf != MAP_FAILED);
    std::vector<ibv_mr*> mrs;
    mrs.reserve(std::size_t(nmr));
    t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < nmr; ++i) {
        ibv_mr* mr = ibv_reg_mr(d.pd, static_cast<char*>(buf) + std::size_t(i) * page, page,
                                IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
        INFO("MR " << i << " errno " << errno);
        REQUIRE(mr != nullptr);
        mrs.push_back(mr);
    }
    const double t_mr = secs(t0);
    if (nmr == d.attr.max_mr) {
        errno = 0;
        ibv_mr* over = ibv_reg_mr(d.pd, buf, page, IBV_ACCESS_LOCAL_WRITE);
        const int e = errno;
        std::printf("max_mr %d reached; one more: %s (errno %d)\n", nmr, over ? "registered" : "refused", e);
        CHECK(over == nullptr);
        CHECK(e == ENOMEM);  // 6.1's rxe_alloc (6.12: EINVAL)
        if (over) ibv_dereg_mr(over);
    }
    const long rss2 = rss_kib();
    // All usable: the first and the last QP connected to each other, a
    // WRITE through the last MR's rkey and a SEND through the first's lkey.
    ibv_qp *a = qps.front(), *b = qps.back();
    connect_qp(d, a, IBV_QPT_RC, b->qp_num);
    connect_qp(d, b, IBV_QPT_RC, a->qp_num);
    char* last = static_cast<char*>(buf) + std::size_t(nmr - 1) * page;
    char* first = static_cast<char*>(buf);
    std::memset(first, 0x5a, 256);
    ibv_sge s{reinterpret_cast<std::uintptr_t>(first), 256, mrs.front()->lkey};
    ibv_send_wr w = rdma_wr(1, IBV_WR_RDMA_WRITE, &s, reinterpret_cast<std::uintptr_t>(last), mrs.back()->rkey);
    post_send(a, w);
    ibv_wc wc = poll_one(cq, "WRITE through the last MR");
    INFO(wc_str(wc));
    CHECK(wc.status == IBV_WC_SUCCESS);
    CHECK(std::memcmp(first, last, 256) == 0);
    t0 = std::chrono::steady_clock::now();
    for (ibv_mr* mr : mrs) REQUIRE(ibv_dereg_mr(mr) == 0);
    for (ibv_qp* q : qps) REQUIRE(ibv_destroy_qp(q) == 0);
    const double t_free = secs(t0);
    CHECK(ibv_destroy_cq(cq) == 0);
    munmap(buf, std::size_t(nmr) * page);
    const long rss3 = rss_kib();
    std::printf("scale: %d QPs created in %.2f s (%.0f us each), %d MRs in %.2f s (%.0f us each), all freed in %.2f s\n",
                nqp, t_qp, t_qp / nqp * 1e6, nmr, t_mr, t_mr / nmr * 1e6, t_free);
    if (rss0 > 0)
        std::printf("daemon VmRSS: %ld KiB before, %ld with the QPs (%.2f KiB per QP), %ld with the MRs too "
                    "(%.3f KiB per MR), %ld after freeing\n",
                    rss0, rss1, double(rss1 - rss0) / nqp, rss2, double(rss2 - rss1) / nmr, rss3);
    std::printf("this process: VmRSS %ld KiB before the QPs, %ld with them (%.2f KiB per QP: its rings)\n", self0, self1,
                double(self1 - self0) / nqp);
    still_healthy(d);
}

// The advertised object counts, each reached and one more refused with the
// errno rxe gives when the object's pool is full: __rxe_add_to_pool answers
// EINVAL for PDs, CQs, SRQs, AHs and MWs (rxe_pool.c, 6.1 and 6.12). Hidden:
// max_ah runs in CI by tag (limits.max_ah), the others from
// scripts/limits-bench.sh (half a million to a million objects each).
TEST_CASE("limits: the advertised max_pd PDs, one more EINVAL", "[.][max_pd]") {
    VerbsDevice d;
    reach_limit("max_pd", "pds", d.attr.max_pd, EINVAL, [&] { return ibv_alloc_pd(d.ctx); }, ibv_dealloc_pd);
    still_healthy(d);
}

TEST_CASE("limits: the advertised max_cq CQs, one more EINVAL", "[.][max_cq]") {
    VerbsDevice d;
    // The smallest CQ (cqe 1): its ring is 2 CQEs, 128 bytes. A page each
    // (4 KiB) made a million of them 4 GiB of this process's memory.
    const double kib = reach_limit("max_cq", "cqs", d.attr.max_cq, EINVAL,
                                   [&] { return ibv_create_cq(d.ctx, 1, nullptr, nullptr, 0); }, ibv_destroy_cq);
    CHECK(kib < 2.0);  // a page each: more than 4
    still_healthy(d);
}

TEST_CASE("limits: the advertised max_srq SRQs, one more EINVAL", "[.][max_srq]") {
    VerbsDevice d;
    // One WQE of one SGE: a ring far smaller than a page (see max_cq).
    const double kib = reach_limit("max_srq", "srqs", d.attr.max_srq, EINVAL,
                                   [&] {
                                       ibv_srq_init_attr ia{};
                                       ia.attr.max_wr = 1;
                                       ia.attr.max_sge = 1;
                                       return ibv_create_srq(d.pd, &ia);
                                   },
                                   ibv_destroy_srq);
    CHECK(kib < 2.0);  // a page each: more than 4
    still_healthy(d);
}

// An SRQ of max_srq_wr WQEs of max_srq_sge SGEs each (hundreds of MiB of
// this process's ring: scripts/limits-bench.sh BUILD max srq_wr), and one
// WQE or SGE more refused with rxe's EINVAL (rxe_srq_chk_init).
TEST_CASE("limits: an SRQ of max_srq_wr WQEs of max_srq_sge SGEs, one more EINVAL", "[.][max_srq_wr]") {
    VerbsDevice d;
    ibv_srq_init_attr ia{};
    ia.attr.max_wr = std::uint32_t(d.attr.max_srq_wr);
    ia.attr.max_sge = std::uint32_t(d.attr.max_srq_sge);
    const long p0 = rss_kib_of("self");
    const auto t0 = std::chrono::steady_clock::now();
    ibv_srq* srq = ibv_create_srq(d.pd, &ia);
    INFO("errno " << errno);
    REQUIRE(srq != nullptr);
    CHECK(ia.attr.max_wr >= std::uint32_t(d.attr.max_srq_wr));
    CHECK(ia.attr.max_sge >= std::uint32_t(d.attr.max_srq_sge));
    std::printf("max_srq_wr: an SRQ of %d WQEs of %d SGEs in %.2f s; this process's VmRSS %ld -> %ld KiB\n",
                d.attr.max_srq_wr, d.attr.max_srq_sge, secs(t0), p0, rss_kib_of("self"));
    CHECK(ibv_destroy_srq(srq) == 0);
    for (int which = 0; which < 2; ++which) {
        ia = {};
        ia.attr.max_wr = std::uint32_t(d.attr.max_srq_wr) + (which == 0 ? 1 : 0);
        ia.attr.max_sge = std::uint32_t(d.attr.max_srq_sge) + (which == 1 ? 1 : 0);
        errno = 0;
        ibv_srq* bad = ibv_create_srq(d.pd, &ia);
        CHECK(bad == nullptr);
        CHECK(errno == EINVAL);
        if (bad) ibv_destroy_srq(bad);
    }
    still_healthy(d);
}

TEST_CASE("limits: the advertised max_ah AHs, one more EINVAL", "[.][max_ah]") {
    VerbsDevice d;
    ibv_ah_attr av = gid_av(d);
    reach_limit("max_ah", "ahs", d.attr.max_ah, EINVAL, [&] { return ibv_create_ah(d.pd, &av); }, ibv_destroy_ah);
    still_healthy(d);
}

TEST_CASE("limits: the advertised max_mw windows, one more EINVAL", "[.][max_mw]") {
    VerbsDevice d;
    reach_limit("max_mw", "mws", d.attr.max_mw, EINVAL, [&] { return ibv_alloc_mw(d.pd, IBV_MW_TYPE_2); },
                ibv_dealloc_mw);
    still_healthy(d);
}
