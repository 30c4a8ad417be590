// What an ordinary libibverbs application sees when the simnic daemon that
// hosts its device goes away (issue 12): run by test_daemon_death.sh under
// `simnic exec`, which names the way the daemon goes in
// $SIMNIC_TEST_DEATH_CMD (`kill -9 PID`, or `simnic daemon --stop`).
//
// The program sets up two connected RC QPs on one device with work that
// cannot finish (SENDs to a peer with no receive posted, which retries RNR
// for ever, and receives nobody sends to), then blocks one thread in
// ibv_get_async_event, one in ibv_get_cq_event on an armed CQ, and one
// polling a CQ, and has the daemon go. Then:
//   - the async thread gets IBV_EVENT_DEVICE_FATAL within a second, and the
//     next ibv_get_async_event fails with EIO instead of blocking;
//   - ibv_get_cq_event fails with EIO within a second;
//   - polling completes every outstanding work request with
//     IBV_WC_WR_FLUSH_ERR, in order per queue, signaled or not;
//   - verbs fail with EIO instead of blocking (create, modify, query,
//     post_send; destroy unless RDMAV_ALLOW_DISASSOC_DESTROY is set), while
//     post_recv queues and flushes, as rxe's do; ibv_close_device succeeds.
// The times it measures are printed for the record.
#include <infiniband/verbs.h>
#include <sys/time.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <thread>
#include <vector>

#include "verbs_app.h"

using namespace simnic::tb;
using Clock = std::chrono::steady_clock;

namespace {

double ms_since(Clock::time_point t0) {
    return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

// A future's value if it comes within `ms`; a thread that hangs fails the
// test and, since it cannot be joined, ends the process.
template <typename T>
T within(std::future<T>& f, int ms, const char* what) {
    if (f.wait_for(std::chrono::milliseconds(ms)) != std::future_status::ready) {
        std::fprintf(stderr, "FAIL: %s did not return within %d ms\n", what, ms);
        std::fflush(stderr);
        std::_Exit(3);
    }
    return f.get();
}

struct Outcome {
    int rc = 0;
    int err = 0;
    ibv_event_type type = IBV_EVENT_COMM_EST;
    double ms = 0;  // after the daemon went
};

}  // namespace

TEST_CASE("the daemon goes: blocked calls return, work is flushed, verbs fail", "[death]") {
    const char* cmd = std::getenv("SIMNIC_TEST_DEATH_CMD");
    INFO("SIMNIC_TEST_DEATH_CMD names how the daemon goes");
    REQUIRE(cmd != nullptr);
    const bool allow_destroy = std::getenv("RDMAV_ALLOW_DISASSOC_DESTROY") != nullptr;
    auto* d = new VerbsDevice;  // its destructor's checks assume a live device: see the end
    ibv_context* ctx = d->ctx;

    ibv_comp_channel* ch = ibv_create_comp_channel(ctx);
    REQUIRE(ch != nullptr);
    ibv_cq* cq_ev = ibv_create_cq(ctx, 16, nullptr, ch, 0);  // B's CQ: armed, never completes
    ibv_cq* cq_poll = ibv_create_cq(ctx, 16, nullptr, nullptr, 0);  // A's: polled
    REQUIRE(cq_ev != nullptr);
    REQUIRE(cq_poll != nullptr);
    REQUIRE(ibv_req_notify_cq(cq_ev, 0) == 0);

    ibv_qp_init_attr ia{};
    ia.qp_type = IBV_QPT_RC;
    ia.cap.max_send_wr = 8;
    ia.cap.max_recv_wr = 8;
    ia.cap.max_send_sge = 1;
    ia.cap.max_recv_sge = 1;
    ia.send_cq = ia.recv_cq = cq_poll;
    ibv_qp* a = ibv_create_qp(d->pd, &ia);
    ia.send_cq = ia.recv_cq = cq_ev;
    ibv_qp* b = ibv_create_qp(d->pd, &ia);
    REQUIRE(a != nullptr);
    REQUIRE(b != nullptr);
    connect_qp(*d, a, IBV_QPT_RC, b->qp_num);
    connect_qp(*d, b, IBV_QPT_RC, a->qp_num);  // rnr_retry 7: RNR for ever

    static char buf[4096];
    ibv_mr* mr = ibv_reg_mr(d->pd, buf, sizeof buf, IBV_ACCESS_LOCAL_WRITE);
    REQUIRE(mr != nullptr);
    ibv_sge sge{reinterpret_cast<uintptr_t>(buf), 64, mr->lkey};
    // A's receives (nobody sends to A) and A's SENDs (B has no receive).
    for (uint64_t id : {101, 102, 103}) {
        ibv_recv_wr rw{};
        rw.wr_id = id;
        rw.sg_list = &sge;
        rw.num_sge = 1;
        ibv_recv_wr* bad = nullptr;
        REQUIRE(ibv_post_recv(a, &rw, &bad) == 0);
    }
    for (uint64_t id : {1, 2, 3, 4}) {
        ibv_send_wr sw{};
        sw.wr_id = id;
        sw.opcode = IBV_WR_SEND;
        sw.sg_list = &sge;
        sw.num_sge = 1;
        sw.send_flags = id % 2 ? IBV_SEND_SIGNALED : 0;  // unsignaled ones flush too
        ibv_send_wr* bad = nullptr;
        REQUIRE(ibv_post_send(a, &sw, &bad) == 0);
    }
    // The SENDs are in flight (RNR NAKs come back) and nothing completes.
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    ibv_wc wc[8];
    REQUIRE(ibv_poll_cq(cq_poll, 8, wc) == 0);

    // Three threads block; then the daemon goes.
    std::atomic<bool> gone{false};
    Clock::time_point t0;
    std::promise<Outcome> async_p, cqev_p;
    std::promise<std::vector<ibv_wc>> poll_p;
    auto async_f = async_p.get_future();
    auto cqev_f = cqev_p.get_future();
    auto poll_f = poll_p.get_future();
    std::thread([&] {
        Outcome o;
        ibv_async_event ev{};
        o.rc = ibv_get_async_event(ctx, &ev);
        o.err = errno;
        o.ms = ms_since(t0);
        o.type = ev.event_type;
        if (o.rc == 0) ibv_ack_async_event(&ev);
        async_p.set_value(o);
    }).detach();
    std::thread([&] {
        Outcome o;
        ibv_cq* got = nullptr;
        void* gctx = nullptr;
        o.rc = ibv_get_cq_event(ch, &got, &gctx);
        o.err = errno;
        o.ms = ms_since(t0);
        if (o.rc == 0) ibv_ack_cq_events(got, 1);
        cqev_p.set_value(o);
    }).detach();
    std::thread([&] {
        std::vector<ibv_wc> got;
        // Polls until the flush is over: 7 completions, then some time
        // without any.
        Clock::time_point last = Clock::now();
        while (!gone.load() || got.size() < 7 || ms_since(last) < 200) {
            ibv_wc w[4];
            const int n = ibv_poll_cq(cq_poll, 4, w);
            if (n < 0) break;
            for (int i = 0; i < n; ++i) got.push_back(w[i]);
            if (n > 0) last = Clock::now();
            if (gone.load() && ms_since(t0) > 5000) break;
        }
        poll_p.set_value(got);
    }).detach();
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    REQUIRE(async_f.wait_for(std::chrono::milliseconds(0)) == std::future_status::timeout);
    REQUIRE(cqev_f.wait_for(std::chrono::milliseconds(0)) == std::future_status::timeout);

    t0 = Clock::now();
    gone = true;
    REQUIRE(std::system(cmd) == 0);
    const double cmd_ms = ms_since(t0);

    const Outcome async_o = within(async_f, 5000, "ibv_get_async_event");
    CHECK(async_o.rc == 0);
    CHECK(async_o.type == IBV_EVENT_DEVICE_FATAL);
    CHECK(async_o.ms < 1000);
    const Outcome cqev_o = within(cqev_f, 5000, "ibv_get_cq_event");
    CHECK(cqev_o.rc == -1);
    CHECK(cqev_o.err == EIO);
    CHECK(cqev_o.ms < 1000);
    const std::vector<ibv_wc> flushed = within(poll_f, 8000, "the polling thread");
    std::printf("daemon gone (%s, %.1f ms): DEVICE_FATAL after %.1f ms, ibv_get_cq_event EIO after %.1f ms, "
                "%zu flush completions\n",
                cmd, cmd_ms, async_o.ms, cqev_o.ms, flushed.size());

    // Every outstanding work request, flushed, in order per queue.
    std::vector<uint64_t> sends, recvs;
    for (const ibv_wc& w : flushed) {
        INFO(wc_str(w));
        CHECK(w.status == IBV_WC_WR_FLUSH_ERR);
        CHECK(w.qp_num == a->qp_num);
        (w.opcode & IBV_WC_RECV ? recvs : sends).push_back(w.wr_id);
    }
    CHECK(sends == std::vector<uint64_t>{1, 2, 3, 4});
    CHECK(recvs == std::vector<uint64_t>{101, 102, 103});

    // The async fd is closed behind the event: no second wait.
    ibv_async_event ev2{};
    std::promise<int> again_p;
    auto again_f = again_p.get_future();
    std::thread([&] {
        const int rc = ibv_get_async_event(ctx, &ev2);
        again_p.set_value(rc == 0 ? 0 : errno);
    }).detach();
    CHECK(within(again_f, 2000, "a second ibv_get_async_event") == EIO);

    // Verbs fail instead of blocking; rxe's post_recv still queues.
    errno = 0;
    CHECK(ibv_create_cq(ctx, 4, nullptr, nullptr, 0) == nullptr);
    CHECK(errno == EIO);
    errno = 0;
    CHECK(ibv_alloc_pd(ctx) == nullptr);
    CHECK(errno == EIO);
    errno = 0;
    CHECK(ibv_reg_mr(d->pd, buf, 64, IBV_ACCESS_LOCAL_WRITE) == nullptr);
    CHECK(errno == EIO);
    ibv_qp_attr qa{};
    ibv_qp_init_attr qi{};
    CHECK(ibv_query_qp(a, &qa, IBV_QP_STATE, &qi) == EIO);
    qa.qp_state = IBV_QPS_ERR;
    CHECK(ibv_modify_qp(a, &qa, IBV_QP_STATE) == EIO);
    ibv_device_attr da{};
    CHECK(ibv_query_device(ctx, &da) == EIO);
    ibv_send_wr sw{};
    sw.wr_id = 9;
    sw.opcode = IBV_WR_SEND;
    sw.sg_list = &sge;
    sw.num_sge = 1;
    ibv_send_wr* bad_s = nullptr;
    CHECK(ibv_post_send(a, &sw, &bad_s) == EIO);
    CHECK(bad_s == &sw);
    ibv_recv_wr rw{};
    rw.wr_id = 104;
    rw.sg_list = &sge;
    rw.num_sge = 1;
    ibv_recv_wr* bad_r = nullptr;
    CHECK(ibv_post_recv(a, &rw, &bad_r) == 0);
    REQUIRE(ibv_poll_cq(cq_poll, 8, wc) == 1);
    CHECK(wc[0].wr_id == 104);
    CHECK(wc[0].status == IBV_WC_WR_FLUSH_ERR);
    CHECK(ibv_poll_cq(cq_poll, 8, wc) == 0);
    CHECK(ibv_req_notify_cq(cq_poll, 0) == 0);

    // Destroying: EIO, as libibverbs reports a disassociated device's
    // destroys; with RDMAV_ALLOW_DISASSOC_DESTROY they succeed and free.
    const int want = allow_destroy ? 0 : EIO;
    CHECK(ibv_destroy_qp(a) == want);
    CHECK(ibv_destroy_qp(b) == want);
    CHECK(ibv_dereg_mr(mr) == want);
    CHECK(ibv_destroy_cq(cq_poll) == want);
    CHECK(ibv_destroy_cq(cq_ev) == want);
    if (allow_destroy) CHECK(ibv_destroy_comp_channel(ch) == 0);
    CHECK(ibv_dealloc_pd(d->pd) == want);
    d->pd = nullptr;
    CHECK(ibv_close_device(ctx) == 0);
    d->ctx = nullptr;
    delete d;
}
