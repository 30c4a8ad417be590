// What the pipeline reuses instead of allocating per item: the Txn pool
// (nic.h) must behave as make_shared<Txn> per item did: a pooled Txn given
// out only when nothing else holds it, as new. (The channels' ring:
// base/tests/test_ring.cpp.)
#include <catch2/catch.hpp>

#include <memory>

#include "nic.h"

using namespace simnic::model;

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
