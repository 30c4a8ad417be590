// base::Ring against what it replaces (std::deque): FIFO order across
// wrap-around and growth, random access from the front, and an item's
// resources let go when it leaves.
#include <catch2/catch.hpp>

#include <deque>
#include <memory>
#include <random>

#include "simnic/base/ring.h"

TEST_CASE("ring: FIFO order through wrap-around and growth, as std::deque", "[base][ring]") {
    simnic::base::Ring<std::unique_ptr<int>> r;
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
            REQUIRE(*r[r.size() / 2] == ref[ref.size() / 2]);
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

TEST_CASE("ring: what leaves is not held by the ring", "[base][ring]") {
    simnic::base::Ring<std::shared_ptr<int>> r;
    auto p = std::make_shared<int>(5);
    r.push_back(p);
    r.push_back(std::make_shared<int>(6));
    CHECK(p.use_count() == 2);
    std::shared_ptr<int> out = r.pop_front();
    out.reset();
    CHECK(p.use_count() == 1);  // the slot it left holds nothing
    auto q = r.front();
    CHECK(q.use_count() == 2);
    r.drop_front();
    CHECK(q.use_count() == 1);
    CHECK(r.empty());
}
