// Faults on a wire of Ethernet frames: drop, duplicate, reorder, delay and
// corrupt, and a congested switch's ECN marking (CE), seeded and chosen per direction (by source and destination MAC).
//
// The wire (hub.h) asks decide() about every frame it forwards. The same
// seed and the same sequence of frames give the same decisions, so a failing
// run can be replayed; each rule draws from its own random stream, so adding
// traffic in one direction does not change the fate of frames in another.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace simnic::wire {

using Mac = std::array<uint8_t, 6>;

// One rule: which frames it applies to, and what may happen to them.
// Probabilities are per frame, in [0, 1].
struct FaultRule {
    std::optional<Mac> from;  // source MAC; unset: any
    std::optional<Mac> to;    // destination MAC; unset: any (broadcasts included)
    // RoCE v2 frames only (UDP to 4791), the default, or every frame. The
    // faults are there to exercise the transport; ARP and neighbour
    // discovery have no checksum and no retransmission of their own worth
    // the name. A dropped ARP reply fails the verb that waits for it (1 s,
    // the kernel's rdma_addr timeout), and a bit flipped in one teaches the
    // peer a wrong MAC that it keeps until its entry goes stale, 15 to 45 s,
    // as Linux's neighbour table does: an RC QP then times out and
    // retransmits into nowhere for that long (seen as a QP stuck for 24 s
    // in the user guide's fault example, about one run in a hundred).
    bool all_frames = false;
    double drop = 0;
    double dup = 0;      // the frame is delivered twice
    double reorder = 0;  // the frame is held back and delivered after the next one
                         // of its rule (or after reorder_hold_ns, whichever is first)
    double corrupt = 0;  // one bit after the Ethernet header is flipped
    uint64_t delay_ns = 0;   // every frame of the rule waits this long ...
    uint64_t jitter_ns = 0;  // ... plus a uniform extra in [0, jitter_ns]
    double delayed = 1;      // the share of the rule's frames that wait (1: all): a late
                             // frame among timely ones, as a congested switch port makes
    uint64_t reorder_hold_ns = 1'000'000;
    // A congested switch port's ECN marking: this share of the rule's
    // frames that are ECN-capable IP (ECT(0) or ECT(1)) become CE (RFC 3168,
    // roce::mark_ce); Not-ECT frames pass unchanged. Independent of the
    // faults above (a marked frame may also be delayed or duplicated).
    double ce = 0;

    bool matches(const uint8_t* frame, size_t len) const;
    std::string describe() const;
};

// Parses "[from=MAC,][to=MAC,][frames=roce|all,]drop=1%,dup=0.5%,reorder=1%,corrupt=0.1%,
// delay=50us,jitter=20us,delayed=5%,hold=2ms,ce=10%". Rates take a trailing % (else a fraction
// of 1); times take ns, us, ms or s. False and `err` on anything else.
bool parse_rule(const std::string& text, FaultRule& rule, std::string& err);

// What happens to one frame.
struct Decision {
    int rule = -1;          // index of the matching rule; -1: none, deliver as is
    bool drop = false;
    int copies = 1;         // 2 when duplicated
    bool reorder = false;   // hold until the rule's next frame (unless one is held already)
    bool corrupt = false;
    size_t flip_bit = 0;    // bit index (from the first byte after the Ethernet header)
    uint64_t delay_ns = 0;
    bool ce = false;        // mark CE if ECN-capable (FaultInjector::mark_ce)
};

struct FaultCounters {
    uint64_t frames = 0, dropped = 0, duplicated = 0, reordered = 0, corrupted = 0, delayed = 0;
    uint64_t ce_marked = 0;  // ECN-capable frames marked CE
};

class FaultInjector {
public:
    FaultInjector(std::vector<FaultRule> rules, uint64_t seed);
    // The fate of a frame; the first rule that matches decides. Counts it.
    Decision decide(const uint8_t* frame, size_t len);
    // A frame of `rule` was held back (a reorder decision is carried out only
    // when no frame of the rule is held already).
    void note_reordered(int rule);
    // Applies a Decision's corruption to the frame.
    static void corrupt(std::vector<uint8_t>& frame, const Decision& d);
    // Applies a Decision's CE mark (to an ECN-capable IP frame only; the
    // IPv4 checksum follows, the ICRC does not cover the ECN bits) and
    // counts it.
    void mark_ce(std::vector<uint8_t>& frame, const Decision& d);

    const std::vector<FaultRule>& rules() const { return rules_; }
    const std::vector<FaultCounters>& counters() const { return counters_; }
    uint64_t seed() const { return seed_; }

private:
    std::vector<FaultRule> rules_;
    std::vector<std::mt19937_64> rng_;
    std::vector<FaultCounters> counters_;
    uint64_t seed_;
};

bool parse_mac(const std::string& s, Mac& mac);
std::string mac_string(const Mac& mac);

}  // namespace simnic::wire
