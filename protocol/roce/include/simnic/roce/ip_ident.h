// The IPv4 identification kernel rxe puts in its frames (docs/rxe-wire-rules.md,
// "IP identification"), for a port that writes its own IP headers.
//
// rxe builds its IPv4 header itself (rxe_net.c, prepare_ipv4_hdr) and asks
// the kernel's shared generator for the ID, __ip_select_ident(), whatever
// the DF bit. In Linux 6.1 (net/ipv4/route.c) that is one counter per bucket
// of a hash of (destination, source, protocol) under a per-boot random key:
// ip_idents_reserve() returns the bucket's counter and adds one per segment,
// and when the bucket was last used in an earlier jiffy it first adds a
// random amount below the number of jiffies since then (a perturbation
// against observers who count packets between two samples). So a flow's IDs
// go up by one per packet while it is busy and jump a little after a pause.
//
// What can be reproduced is the rule, not the values: the counters start
// from the kernel's random state. Here each (source, destination) pair is
// its own bucket, starts at a random value and is perturbed the same way, on
// a jiffy of 4 ms (HZ 250, Debian's kernel configuration); the random stream
// comes from a seed, so that a device's IDs replay.
#pragma once

#include <cstdint>
#include <unordered_map>

namespace simnic::roce {

class IpIdentGenerator {
public:
    static constexpr uint64_t kJiffyNs = 4'000'000;  // CONFIG_HZ=250

    explicit IpIdentGenerator(uint64_t seed) : rng_(seed ? seed : 0x9e3779b97f4a7c15ull) {}

    // The ID of the next packet from `src` to `dst` (IPv4, host order) sent
    // at `now_ns` on a monotonic clock.
    uint16_t next(uint32_t src, uint32_t dst, uint64_t now_ns) {
        const uint64_t key = uint64_t(dst) << 32 | src;
        const uint32_t now = uint32_t(now_ns / kJiffyNs);
        auto it = buckets_.find(key);
        if (it == buckets_.end()) it = buckets_.emplace(key, Bucket{uint32_t(draw()), now}).first;
        Bucket& b = it->second;
        uint32_t delta = 0;
        if (b.stamp != now) {
            // prandom_u32_max(now - old): uniform in [0, now - old).
            delta = uint32_t((uint64_t(uint32_t(draw())) * (now - b.stamp)) >> 32);
            b.stamp = now;
        }
        b.counter += delta;
        const uint32_t id = b.counter;
        b.counter += 1;  // one segment: rxe never hands the kernel a GSO packet
        return uint16_t(id);
    }

private:
    struct Bucket {
        uint32_t counter;
        uint32_t stamp;  // jiffy of the last use
    };
    uint64_t draw() {
        // xorshift64*: reproducible from the seed; nothing here is secret.
        rng_ ^= rng_ >> 12;
        rng_ ^= rng_ << 25;
        rng_ ^= rng_ >> 27;
        return rng_ * 0x2545F4914F6CDD1Dull;
    }
    std::unordered_map<uint64_t, Bucket> buckets_;
    uint64_t rng_;
};

}  // namespace simnic::roce
