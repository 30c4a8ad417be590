// The wire port's neighbour table (wire_port.cc): which MAC each on-link
// address has, as the kernel's neighbour layer keeps it for ARP and IPv6
// neighbour discovery (net/core/neighbour.c), with Linux's default
// parameters, so that a simnic device on a segment resolves and re-checks
// its peers the way a netdev under kernel rxe does.
//
// States (NUD_*):
//   INCOMPLETE  resolving: a broadcast ARP request or multicast solicitation
//               every retrans time (1 s), three in all; frames wait in a
//               bounded queue (the oldest drop first); then FAILED, and the
//               queue is dropped.
//   REACHABLE   confirmed by an answer to our request; becomes STALE after a
//               reachable time drawn from [15 s, 45 s) (base 30 s).
//   STALE       still used; the first frame sent moves it to DELAY.
//   DELAY       frames go; 5 s later, unless confirmed meanwhile, PROBE.
//   PROBE       frames go; three unicast requests 1 s apart, then FAILED.
//   FAILED      the next frame or lookup starts resolving again.
// What the port hears updates the table: an answer to our request confirms
// (REACHABLE); a request addressed to us creates or updates its sender's
// entry (STALE, as neigh_event_ns does); anything else only corrects an
// existing entry whose MAC changed.
//
// The table does no I/O and reads no clock: the port passes the time and
// carries out the actions it returns (send a frame, solicit, count a drop),
// which is what lets the unit tests drive it. It is not thread-safe; the
// port guards it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <vector>

#include "simnic/roce/headers.h"

namespace simnic::soft_engine {

class NeighbourTable {
public:
    // An address: IPv6, or IPv4 as ::ffff:a.b.c.d (the GID form).
    using Key = roce::Ipv6Addr;

    // Linux's defaults (/proc/sys/net/ipv4/neigh/default/*).
    struct Params {
        uint64_t retrans_ns = 1'000'000'000;            // retrans_time_ms
        uint32_t mcast_probes = 3;                      // mcast_solicit
        uint32_t ucast_probes = 3;                      // ucast_solicit
        uint64_t base_reachable_ns = 30'000'000'000;    // base_reachable_time_ms
        uint64_t delay_probe_ns = 5'000'000'000;        // delay_first_probe_time
        size_t queue_bytes = 212992;                    // unres_qlen_bytes
    };

    enum class State : uint8_t { Incomplete, Reachable, Stale, Delay, Probe, Failed };

    // A frame waiting for resolution, and the bytes the statistics count of it.
    struct Held {
        std::vector<uint8_t> frame;
        size_t counted = 0;
    };

    // What the port does, in order.
    struct Action {
        enum class Kind : uint8_t {
            Send,     // put `held` on the wire to `mac` (it was waiting)
            Solicit,  // ask for `addr`: to `mac` if `unicast`, else broadcast/multicast
            Drop,     // `held` will never leave: count it
        };
        Kind kind = Kind::Send;
        Key addr{};
        roce::MacAddr mac{};
        bool unicast = false;
        Held held;
    };

    // What a received ARP or ND frame says about its sender.
    enum class Evidence : uint8_t {
        Answer,     // an ARP reply or solicited advertisement to us: confirmed
        Asked,      // an ARP request or solicitation for one of our addresses
        Overheard,  // anything else carrying the sender's MAC
    };

    NeighbourTable(const Params& p, uint64_t seed) : p_(p), rng_(seed ? seed : 1) {}

    // A frame to `a` is about to leave at `now`: true and its MAC if the
    // entry is usable (a STALE entry moves to DELAY); false if the frame must
    // wait: then hold() it.
    bool output(const Key& a, uint64_t now, roce::MacAddr& mac, std::vector<Action>& out);
    // Queues a frame output() refused, dropping the oldest beyond the bound.
    void hold(const Key& a, Held h, std::vector<Action>& out);
    // Someone needs `a`'s MAC without a frame to send (the firmware, for an
    // address vector): the MAC if usable, else nullopt, having started
    // resolution as output() would.
    std::optional<roce::MacAddr> resolve(const Key& a, uint64_t now, std::vector<Action>& out);
    // What the port heard from `a` at `mac`.
    void learn(const Key& a, const roce::MacAddr& mac, Evidence e, uint64_t now, std::vector<Action>& out);
    // Timers due at `now`: retransmissions, REACHABLE -> STALE, DELAY ->
    // PROBE, giving up.
    void tick(uint64_t now, std::vector<Action>& out);
    // The earliest time tick() has work; 0 if none.
    uint64_t next_deadline() const;

    // The MAC of a usable entry, touching nothing.
    std::optional<roce::MacAddr> known(const Key& a) const;

    // For tests and `simnic` diagnostics.
    std::optional<State> state(const Key& a) const;
    size_t queued(const Key& a) const;
    static const char* to_string(State s);

private:
    struct Entry {
        State state = State::Incomplete;
        roce::MacAddr mac{};
        uint32_t probes = 0;      // solicitations sent in this INCOMPLETE or PROBE
        uint64_t deadline = 0;    // the state's timer; 0: none (STALE, FAILED)
        uint64_t confirmed = 0;   // last confirmation
        std::deque<Held> queue;
        size_t queue_bytes = 0;
    };
    bool usable(const Entry& e) const {
        return e.state == State::Reachable || e.state == State::Stale || e.state == State::Delay ||
               e.state == State::Probe;
    }
    void start_resolving(const Key& a, Entry& e, uint64_t now, std::vector<Action>& out);
    void solicit(const Key& a, Entry& e, bool unicast, uint64_t now, std::vector<Action>& out);
    void set_mac(const Key& a, Entry& e, const roce::MacAddr& mac, State s, uint64_t now, std::vector<Action>& out);
    void fail(const Key& a, Entry& e, std::vector<Action>& out);
    uint64_t reachable_time();

    Params p_;
    std::map<Key, Entry> entries_;
    uint64_t rng_;
};

}  // namespace simnic::soft_engine
