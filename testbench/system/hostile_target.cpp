// The target of the wire fuzzer (issue 12, section 2): an ordinary libibverbs
// program that gives a device QPs of every type in several states and MRs of
// every access mix, each MR page between two canary pages and two PROT_NONE
// guard pages, describes them for the fuzzer, waits while the fuzzer attacks,
// and then checks that nothing outside what the rules allow changed.
//
//   hostile_target DESCRIPTION_FILE DONE_FILE
// Devices: $SIMNIC_TEST_DEVICE (attacked), $SIMNIC_TEST_PEER (its QPs' peer,
// whose MAC and address the fuzzer borrows). Exit 0 when every canary page
// is intact, every MR without remote write access unchanged, the QPs can
// still be queried, and an RC round trip over a fresh QP pair works.
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include <infiniband/verbs.h>

namespace {

constexpr int kPort = 1, kGid = 1;
const std::size_t kPage = 4096;
constexpr std::uint8_t kCanary = 0xC5;  // the canary pages' byte; MRs start with other bytes

ibv_context* open_dev(const char* name) {
    int n = 0;
    ibv_device** l = ibv_get_device_list(&n);
    ibv_context* c = nullptr;
    for (int i = 0; l && i < n && !c; ++i)
        if (std::string(ibv_get_device_name(l[i])) == name) c = ibv_open_device(l[i]);
    if (l) ibv_free_device_list(l);
    return c;
}

[[noreturn]] void die(const char* what) {
    std::fprintf(stderr, "hostile_target: %s (errno %d)\n", what, errno);
    std::exit(2);
}

// guard | canary | MR page | canary | guard
struct GuardedMr {
    std::uint8_t* base = nullptr;
    std::uint8_t* page = nullptr;
    ibv_mr* mr = nullptr;
    unsigned access = 0;
    std::vector<std::uint8_t> initial;
};

GuardedMr guarded(ibv_pd* pd, unsigned access, std::uint8_t seed) {
    GuardedMr g;
    void* m = mmap(nullptr, 5 * kPage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) die("mmap");
    g.base = static_cast<std::uint8_t*>(m);
    mprotect(g.base, kPage, PROT_NONE);
    mprotect(g.base + 4 * kPage, kPage, PROT_NONE);
    std::memset(g.base + kPage, kCanary, kPage);
    std::memset(g.base + 3 * kPage, kCanary, kPage);
    g.page = g.base + 2 * kPage;
    for (std::size_t i = 0; i < kPage; ++i) g.page[i] = std::uint8_t(seed + i * 7);
    g.initial.assign(g.page, g.page + kPage);
    g.access = access;
    g.mr = ibv_reg_mr(pd, g.page, kPage, int(access));
    if (!g.mr) die("ibv_reg_mr");
    return g;
}

void to_rts(ibv_qp* qp, ibv_qp_type t, std::uint32_t dest, const ibv_gid& dgid, ibv_mtu mtu, ibv_qp_state last) {
    ibv_qp_attr a{};
    a.qp_state = IBV_QPS_INIT;
    a.port_num = kPort;
    int mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;
    if (t == IBV_QPT_UD) {
        a.qkey = 0x11111111;
        mask |= IBV_QP_QKEY;
    } else {
        a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
        mask |= IBV_QP_ACCESS_FLAGS;
    }
    if (ibv_modify_qp(qp, &a, mask)) die("modify INIT");
    if (last == IBV_QPS_INIT) return;
    a = {};
    a.qp_state = IBV_QPS_RTR;
    mask = IBV_QP_STATE;
    if (t != IBV_QPT_UD) {
        a.path_mtu = mtu;
        a.dest_qp_num = dest;
        a.rq_psn = 0x77;
        a.ah_attr.is_global = 1;
        a.ah_attr.grh.dgid = dgid;
        a.ah_attr.grh.sgid_index = kGid;
        a.ah_attr.grh.hop_limit = 64;
        a.ah_attr.port_num = kPort;
        mask |= IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
        if (t == IBV_QPT_RC) {
            a.max_dest_rd_atomic = 4;
            a.min_rnr_timer = 1;
            mask |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
        }
    }
    if (ibv_modify_qp(qp, &a, mask)) die("modify RTR");
    if (last == IBV_QPS_RTR) return;
    a = {};
    a.qp_state = IBV_QPS_RTS;
    a.sq_psn = 0x77;
    mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
    if (t == IBV_QPT_RC) {
        a.timeout = 10;
        a.retry_cnt = 2;
        a.rnr_retry = 2;
        a.max_rd_atomic = 4;
        mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;
    }
    if (ibv_modify_qp(qp, &a, mask)) die("modify RTS");
    if (last == IBV_QPS_ERR) {
        a = {};
        a.qp_state = IBV_QPS_ERR;
        if (ibv_modify_qp(qp, &a, IBV_QP_STATE)) die("modify ERR");
    }
}

ibv_qp* new_qp(ibv_pd* pd, ibv_cq* cq, ibv_qp_type t) {
    ibv_qp_init_attr ia{};
    ia.send_cq = ia.recv_cq = cq;
    ia.qp_type = t;
    ia.cap.max_send_wr = ia.cap.max_recv_wr = 64;
    ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
    ibv_qp* q = ibv_create_qp(pd, &ia);
    if (!q) die("ibv_create_qp");
    return q;
}

const char* type_name(ibv_qp_type t) { return t == IBV_QPT_RC ? "RC" : t == IBV_QPT_UC ? "UC" : "UD"; }
const char* state_name(ibv_qp_state s) {
    return s == IBV_QPS_INIT ? "INIT" : s == IBV_QPS_RTR ? "RTR" : s == IBV_QPS_RTS ? "RTS" : "ERR";
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 3) {
        std::fprintf(stderr, "usage: hostile_target DESCRIPTION_FILE DONE_FILE\n");
        return 2;
    }
    ibv_context* ca = open_dev(std::getenv("SIMNIC_TEST_DEVICE"));
    ibv_context* cb = open_dev(std::getenv("SIMNIC_TEST_PEER"));
    if (!ca || !cb) die("open devices");
    ibv_pd* pa = ibv_alloc_pd(ca);
    ibv_pd* pb = ibv_alloc_pd(cb);
    ibv_cq* qa = ibv_create_cq(ca, 4096, nullptr, nullptr, 0);
    ibv_cq* qb = ibv_create_cq(cb, 4096, nullptr, nullptr, 0);
    if (!pa || !pb || !qa || !qb) die("pd/cq");
    ibv_port_attr port{};
    ibv_query_port(ca, kPort, &port);
    ibv_gid ga{}, gb{};
    ibv_query_gid(ca, kPort, kGid, &ga);
    ibv_query_gid(cb, kPort, kGid, &gb);

    // MRs of every access mix (remote read, write, atomic, none).
    const unsigned L = IBV_ACCESS_LOCAL_WRITE, W = IBV_ACCESS_REMOTE_WRITE, R = IBV_ACCESS_REMOTE_READ,
                   A = IBV_ACCESS_REMOTE_ATOMIC;
    std::vector<GuardedMr> mrs;
    const unsigned mixes[] = {L, L | R, L | W, L | W | R, L | A, L | W | R | A, 0};
    std::uint8_t seed = 1;
    for (unsigned m : mixes) mrs.push_back(guarded(pa, m, seed += 31));

    // QPs of every type, in INIT, RTR, RTS and ERR, each with receives posted
    // into the first (local-write-only) MR.
    struct Q {
        ibv_qp *qp, *peer;
        ibv_qp_type type;
        ibv_qp_state state;
    };
    std::vector<Q> qps;
    for (ibv_qp_type t : {IBV_QPT_RC, IBV_QPT_UC, IBV_QPT_UD})
        for (ibv_qp_state s : {IBV_QPS_RTS, IBV_QPS_RTR, IBV_QPS_INIT, IBV_QPS_ERR}) {
            Q q{new_qp(pa, qa, t), new_qp(pb, qb, t), t, s};
            to_rts(q.peer, t, q.qp->qp_num, ga, port.active_mtu, IBV_QPS_RTS);
            to_rts(q.qp, t, q.peer->qp_num, gb, port.active_mtu, s);
            for (int i = 0; i < 16 && s != IBV_QPS_ERR; ++i) {
                ibv_sge sg{reinterpret_cast<std::uintptr_t>(mrs[0].page), std::uint32_t(kPage), mrs[0].mr->lkey};
                ibv_recv_wr wr{};
                wr.wr_id = std::uint64_t(i);
                wr.sg_list = &sg;
                wr.num_sge = 1;
                ibv_recv_wr* bad = nullptr;
                if (ibv_post_recv(q.qp, &wr, &bad)) die("post_recv");
            }
            qps.push_back(q);
        }
    // The receive MR is written by SENDs: its content is not checked.
    mrs[0].access |= W;

    {
        std::ofstream d(argv[1] + std::string(".tmp"));
        for (const Q& q : qps)
            d << "qp " << q.qp->qp_num << ' ' << type_name(q.type) << ' ' << state_name(q.state) << " 119\n";
        for (const GuardedMr& g : mrs)
            d << "mr " << reinterpret_cast<std::uintptr_t>(g.page) << ' ' << kPage << ' ' << g.mr->rkey << ' '
              << g.access << '\n';
    }
    std::rename((argv[1] + std::string(".tmp")).c_str(), argv[1]);
    std::fprintf(stderr, "hostile_target: %zu QPs, %zu MRs ready\n", qps.size(), mrs.size());

    // Attacked until the done file appears; completions are drained (SENDs
    // the fuzzer got through, flushes).
    long completions = 0;
    for (int i = 0; i < 36000 && access(argv[2], F_OK) != 0; ++i) {
        ibv_wc wc[32];
        int n;
        while ((n = ibv_poll_cq(qa, 32, wc)) > 0) completions += n;
        while ((n = ibv_poll_cq(qb, 32, wc)) > 0) completions += n;
        usleep(10000);
    }

    int bad = 0;
    for (std::size_t i = 0; i < mrs.size(); ++i) {
        const GuardedMr& g = mrs[i];
        for (std::size_t off : {kPage, 3 * kPage})
            for (std::size_t j = 0; j < kPage; ++j)
                if (g.base[off + j] != kCanary) {
                    std::fprintf(stderr, "FAIL: MR %zu: canary byte %zd changed\n", i,
                                 std::ptrdiff_t(off + j) - std::ptrdiff_t(2 * kPage));
                    ++bad;
                    break;
                }
        const bool writable = g.access & (W | A);
        if (!writable && std::memcmp(g.page, g.initial.data(), kPage) != 0) {
            std::fprintf(stderr, "FAIL: MR %zu (access 0x%x) was written\n", i, g.access);
            ++bad;
        }
    }
    for (const Q& q : qps) {
        ibv_qp_attr a{};
        ibv_qp_init_attr ia{};
        if (ibv_query_qp(q.qp, &a, IBV_QP_STATE, &ia)) {
            std::fprintf(stderr, "FAIL: ibv_query_qp %u\n", q.qp->qp_num);
            ++bad;
        }
    }
    // The device still carries an RC round trip on a fresh pair.
    ibv_qp* x = new_qp(pa, qa, IBV_QPT_RC);
    ibv_qp* y = new_qp(pb, qb, IBV_QPT_RC);
    to_rts(x, IBV_QPT_RC, y->qp_num, gb, port.active_mtu, IBV_QPS_RTS);
    to_rts(y, IBV_QPT_RC, x->qp_num, ga, port.active_mtu, IBV_QPS_RTS);
    std::vector<std::uint8_t> src(3000, 0x42), dst(3000, 0);
    ibv_mr* ms = ibv_reg_mr(pb, src.data(), src.size(), int(L));
    ibv_mr* md = ibv_reg_mr(pa, dst.data(), dst.size(), int(L | W));
    ibv_sge sg{reinterpret_cast<std::uintptr_t>(src.data()), 3000, ms->lkey};
    ibv_send_wr wr{};
    wr.opcode = IBV_WR_RDMA_WRITE;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.sg_list = &sg;
    wr.num_sge = 1;
    wr.wr_id = 77;
    wr.wr.rdma.remote_addr = reinterpret_cast<std::uintptr_t>(dst.data());
    wr.wr.rdma.rkey = md->rkey;
    ibv_send_wr* badwr = nullptr;
    // The wait is long: a model device that has just taken the attack's
    // frames, on a loaded machine, may take seconds; the check is that the
    // WRITE completes, and completes well, not how soon.
    const int post = ibv_post_send(y, &wr, &badwr);
    const char* why = post != 0 ? "post_send failed" : "no completion in 30 s";
    if (post == 0) {
        ibv_wc wc{};
        for (int i = 0; i < 30000; ++i) {
            int n = ibv_poll_cq(qb, 1, &wc);
            if (n == 1 && wc.wr_id == 77) {
                why = wc.status != IBV_WC_SUCCESS ? ibv_wc_status_str(wc.status)
                      : dst != src               ? "completed, but the bytes differ"
                                                 : nullptr;
                break;
            }
            usleep(1000);
        }
    }
    if (why != nullptr) {
        std::fprintf(stderr, "FAIL: no RC WRITE after the attack: %s\n", why);
        ++bad;
    }
    ibv_dereg_mr(ms);
    ibv_dereg_mr(md);
    ibv_destroy_qp(x);
    ibv_destroy_qp(y);
    for (const Q& q : qps) {
        ibv_destroy_qp(q.qp);
        ibv_destroy_qp(q.peer);
    }
    for (GuardedMr& g : mrs) ibv_dereg_mr(g.mr);
    ibv_destroy_cq(qa);
    ibv_destroy_cq(qb);
    ibv_dealloc_pd(pa);
    ibv_dealloc_pd(pb);
    ibv_close_device(ca);
    ibv_close_device(cb);
    std::printf("hostile_target: %ld completions drained, %d failures\n", completions, bad);
    return bad ? 1 : 0;
}
