// The send queue's ring (qp_context.h, SendQueue): WQEs addressed by their
// free-running sequence number, the oldest at head_seq, through wrap-around
// of the ring and its growth, as the requester and completer use it.
#include <catch2/catch.hpp>

#include <cstdint>
#include <deque>
#include <random>

#include "simnic/transport/qp_context.h"

using namespace simnic::transport;

namespace {
SqEntry entry(uint64_t id) {
    SqEntry e;
    e.wr.wr_id = id;
    e.first_psn = uint32_t(id * 3);
    if (id % 5 == 0) e.wr.inline_data.assign(size_t(id % 64), uint8_t(id));
    return e;
}
}  // namespace

TEST_CASE("send queue: entries by sequence number through wrap-around and growth", "[transport][send_queue]") {
    SendQueue sq;
    CHECK(sq.empty());
    CHECK(sq.head() == nullptr);
    CHECK(sq.at(0) == nullptr);
    std::deque<uint64_t> ref;  // wr_ids, the oldest first
    std::mt19937 rng(5);
    uint64_t next = 1000;
    for (int step = 0; step < 20000; ++step) {
        // Bursts of posting and completing, so that the head wraps at every
        // ring size and the ring grows with entries on both sides of its end.
        const bool push = ref.empty() || (rng() % 100) < (step % 3000 < 1500 ? 62u : 38u);
        if (push) {
            sq.push(entry(next));
            ref.push_back(next++);
        } else {
            REQUIRE(sq.head() != nullptr);
            REQUIRE(sq.head()->wr.wr_id == ref.front());
            sq.pop();
            ref.pop_front();
        }
        REQUIRE(sq.size() == ref.size());
        REQUIRE(sq.tail_seq() - sq.head_seq() == ref.size());
        if (step % 97 == 0) {
            // Every entry is where its sequence number says, with what it was given.
            for (size_t i = 0; i < ref.size(); ++i) {
                const SqEntry* e = sq.at(sq.head_seq() + i);
                REQUIRE(e != nullptr);
                REQUIRE(e->wr.wr_id == ref[i]);
                REQUIRE(e->first_psn == uint32_t(ref[i] * 3));
                REQUIRE(e->wr.inline_data.size() == (ref[i] % 5 == 0 ? size_t(ref[i] % 64) : 0));
            }
            // Outside [head_seq, tail_seq): none.
            CHECK(sq.at(sq.tail_seq()) == nullptr);
            if (sq.head_seq() > 0) CHECK(sq.at(sq.head_seq() - 1) == nullptr);
        }
    }
    // What the requester does between pushes: change an entry in place.
    sq.push(entry(next));
    SqEntry* e = sq.at(sq.tail_seq() - 1);
    e->state = WqeState::Pending;
    CHECK(sq.at(sq.tail_seq() - 1)->state == WqeState::Pending);
}
