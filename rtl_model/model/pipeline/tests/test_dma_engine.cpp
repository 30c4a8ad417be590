// The DMA engine's PCIe model against hand-computed timings.
#include <catch2/catch.hpp>

#include "simnic/model/dma_engine.h"

using namespace simnic::model;

namespace {
DmaConfig base() {
    DmaConfig c;
    c.read_latency_ns = 500;
    c.write_latency_ns = 100;
    c.bandwidth_gbps = 64;  // 8 B/ns: 125 ps per byte
    c.max_payload_bytes = 256;
    c.max_read_request_bytes = 512;
    c.outstanding_reads = 4;
    c.tlp_overhead_bytes = 24;
    return c;
}
}  // namespace

TEST_CASE("dma: link time counts one TLP overhead per max payload", "[model][dma]") {
    DmaEngine d(base());
    CHECK(d.link_ps(64) == (64 + 24) * 125);
    CHECK(d.link_ps(256) == (256 + 24) * 125);
    CHECK(d.link_ps(257) == (257 + 48) * 125);
    CHECK(d.link_ps(512) == (512 + 48) * 125);
}

TEST_CASE("dma: one small read costs the round trip and its completion", "[model][dma]") {
    DmaEngine d(base());
    CHECK(d.read(1000, 64, DmaPurpose::WqeFetch) == 1000 + 500'000 + (64 + 24) * 125);
    CHECK(d.stats().read_bytes[size_t(DmaPurpose::WqeFetch)] == 64);
    CHECK(d.stats().read_requests == 1);
}

TEST_CASE("dma: a large read is cut at max_read_request and completions share the link", "[model][dma]") {
    DmaEngine d(base());
    // 2048 B = 4 requests of 512, all tags free: issued together, the
    // completions queue on the inbound link one after the other.
    const uint64_t done = d.read(0, 2048, DmaPurpose::Payload);
    CHECK(done == 500'000 + 4 * d.link_ps(512));
    CHECK(d.stats().read_requests == 4);
    CHECK(d.stats().tag_wait_ps == 0);
}

TEST_CASE("dma: requests wait for a free tag", "[model][dma]") {
    DmaConfig c = base();
    c.outstanding_reads = 1;
    DmaEngine d(c);
    // One tag: each 512 B request waits for the previous one's completion.
    const uint64_t one = 500'000 + d.link_ps(512);
    CHECK(d.read(0, 1024, DmaPurpose::Payload) == 2 * one);
    CHECK(d.stats().tag_wait_ps == one);
}

TEST_CASE("dma: streaming reads reach the link's bandwidth, not latency-bound", "[model][dma]") {
    DmaConfig c = base();
    c.outstanding_reads = 64;  // more than bandwidth x latency
    DmaEngine d(c);
    uint64_t done = 0;
    for (int i = 0; i < 1000; ++i) done = d.read(0, 512, DmaPurpose::Payload);
    // 1000 completions back to back after one round trip.
    CHECK(done == 500'000 + 1000 * d.link_ps(512));
}

TEST_CASE("dma: posted writes serialise on the outbound link and are visible after write latency",
          "[model][dma]") {
    DmaEngine d(base());
    CHECK(d.write(0, 256, DmaPurpose::Payload) == d.link_ps(256) + 100'000);
    CHECK(d.write(0, 32, DmaPurpose::Cqe) == d.link_ps(256) + d.link_ps(32) + 100'000);
    // Reads use the other direction: unaffected by the writes.
    CHECK(d.read(0, 64, DmaPurpose::Payload) == 500'000 + d.link_ps(64));
    CHECK(d.stats().writes == 2);
    CHECK(d.stats().write_bytes[size_t(DmaPurpose::Cqe)] == 32);
}
