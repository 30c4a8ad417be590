// The EQE writer alone: an EQE costs one cycle and a posted DMA write of
// eq.eqe_bytes on the outbound link; posted writes do not hold the block, so
// back-to-back EQEs are one cycle apart while the link time accumulates.
#include <catch2/catch.hpp>

#include <vector>

#include "block_harness.h"
#include "blocks/eqe_writer.h"

using namespace simnic::model;

TEST_CASE("eqe_writer: one cycle and one posted write per EQE", "[model][block][eqe_writer]") {
    ModelConfig big;
    big.eq.eqe_bytes = 64;
    big.clock.freq_mhz = 400;
    for (const ModelConfig& cfg : {ModelConfig{}, big}) {
        INFO("eqe " << cfg.eq.eqe_bytes << " B at " << cfg.clock.freq_mhz << " MHz");
        const uint64_t P = uint64_t(1e6 / cfg.clock.freq_mhz + 0.5);
        const uint64_t t0 = 40 * P;
        const uint32_t n = 5;
        tb::BlockBench<EqeWriterBlock> b(cfg);
        std::vector<std::pair<uint64_t, uint32_t>> in;
        for (uint32_t i = 0; i < n; ++i) in.emplace_back(t0, i);
        b.drive(b.nic().eq_in, std::move(in));
        const uint64_t end = b.run();

        CHECK(end == t0 + n * P);
        CHECK(b.nic().eqes == n);
        const sim::BlockStats& st = b.nic().blk[Nic::kEqeWriter];
        CHECK(st.items == n);
        CHECK(st.busy_ps == n * P);
        CHECK(st.stall_ps == 0);
        DmaEngine dma(cfg.dma);
        CHECK(b.nic().dma.stats().writes == n);
        CHECK(b.nic().dma.stats().write_bytes[size_t(DmaPurpose::Eqe)] == n * cfg.eq.eqe_bytes);
        CHECK(b.nic().dma.stats().out_busy_ps == n * dma.link_ps(cfg.eq.eqe_bytes));
    }
}
