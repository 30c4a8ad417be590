// What the pipeline reuses instead of allocating per item: a channel's ring
// (sim::Ring) and the Txn pool (nic.h). Both must behave as what they
// replaced (std::deque; make_shared<Txn> per item): FIFO order across wrap
// and growth, an item's resources let go when it leaves, and a pooled Txn
// given out only when nothing else holds it, as new.
#include <catch2/catch.hpp>

#include <deque>
#include <memory>
#include <random>

#include "nic.h"
#include "sim.h"

using namespace simnic::model;

TEST_CASE("ring: FIFO order through wrap-around and growth, as std::deque", "[model][recycling]") {
    sim::Ring<std::unique_ptr<int>> r;
    std::deque<int> ref;
    std::mt19937 rng(11);
    int next = 0;
    for (int step = 0; step < 20000; ++step) {
        // Fill and drain in bursts, so that the head wraps at every size.
        const bool push = ref.empty() || (rng() % 100) < (step % 2000 < 1000 ? 60u : 40u);
        if (push) {
            r.push_back(std::make_unique<int>(next));
            ref.push_back(next++);
            REQUIRE(*r.back() == ref.back());
        } else {
            REQUIRE(*r.front() == ref.front());
            const std::unique_ptr<int> v = r.pop_front();
            REQUIRE(*v == ref.front());
            ref.pop_front();
        }
        REQUIRE(r.size() == ref.size());
        REQUIRE(r.empty() == ref.empty());
    }
}

TEST_CASE("ring: what leaves is not held by the ring", "[model][recycling]") {
    sim::Ring<std::shared_ptr<int>> r;
    auto p = std::make_shared<int>(5);
    r.push_back(p);
    r.push_back(std::make_shared<int>(6));
    CHECK(p.use_count() == 2);
    std::shared_ptr<int> out = r.pop_front();
    out.reset();
    CHECK(p.use_count() == 1);  // the slot it left holds nothing
}

TEST_CASE("txn pool: a Txn is given out again only when nothing holds it, as new but for its buffers' capacity",
          "[model][recycling]") {
    TxnPool pool;
    TxnPtr a = pool.take();
    a->kind = Txn::Kind::Rx;
    a->qpn = 7;
    a->psn = 99;
    a->icrc_good = true;
    a->frame.assign(1500, 0xab);
    a->rec.add(simnic::soft_engine::Op::Kind::DmaWrite, 1, 64);
    a->cq_tickets.push_back({3, 4, true});
    Txn* const first = a.get();
    const size_t cap = a->frame.capacity();

    // Still held: a second take is another Txn.
    TxnPtr b = pool.take();
    CHECK(b.get() != first);
    // Let go: the next takes find it (the pool looks at a few in turn).
    a.reset();
    TxnPtr c = pool.take();
    if (c.get() != first) c = pool.take();
    REQUIRE(c.get() == first);
    CHECK(c->kind == Txn::Kind::Doorbell);
    CHECK(c->qpn == 0);
    CHECK(c->psn == 0);
    CHECK_FALSE(c->icrc_good);
    CHECK(c->frame.empty());
    CHECK(c->frame.capacity() == cap);
    CHECK(c->rec.ops.empty());
    CHECK(c->cq_tickets.empty());
    CHECK(c.use_count() == 2);  // the pool's and ours
    // b is still held: never handed out twice.
    for (int i = 0; i < 20; ++i) CHECK(pool.take().get() != b.get());
}
