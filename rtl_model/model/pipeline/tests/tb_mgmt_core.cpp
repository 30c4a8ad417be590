// The management core alone: each firmware command takes fw.command_cycles
// at fw.core_mhz, i.e. command_cycles / core_mhz microseconds, whatever the
// pipeline clock; commands run one at a time, in order.
#include <catch2/catch.hpp>


#include "block_harness.h"
#include "blocks/mgmt_core.h"

using namespace simnic::model;

TEST_CASE("mgmt_core: a command costs command_cycles / core_mhz", "[model][block][mgmt_core]") {
    struct Case {
        uint32_t command_cycles;
        double core_mhz, pipeline_mhz;
    };
    const Case cases[] = {{2000, 500, 250}, {2000, 500, 400}, {1000, 250, 250}, {3000, 600, 250}, {7, 1000, 250}};
    for (const Case& k : cases) {
        ModelConfig cfg;
        cfg.fw.command_cycles = k.command_cycles;
        cfg.fw.core_mhz = k.core_mhz;
        cfg.clock.freq_mhz = k.pipeline_mhz;
        INFO(k.command_cycles << " cycles at " << k.core_mhz << " MHz, pipeline at " << k.pipeline_mhz << " MHz");
        // cycles / MHz = us; in ps (exact for these cases).
        REQUIRE(uint64_t(k.command_cycles) * 1000000 % uint64_t(k.core_mhz) == 0);
        const uint64_t cmd = uint64_t(k.command_cycles) * 1000000 / uint64_t(k.core_mhz);

        tb::BlockBench<MgmtCoreBlock> b(cfg);
        // One at 0, one while it runs: it waits for the first.
        b.drive(b.nic().fw_in, {{0, uint16_t(1)}, {cmd / 2, uint16_t(2)}});
        CHECK(b.run() == 2 * cmd);
        CHECK(b.nic().fw_commands == 2);
        const sim::BlockStats& st = b.nic().blk[Nic::kMgmtCore];
        CHECK(st.items == 2);
        CHECK(st.busy_ps == 2 * cmd);
        // One that reaches the idle core starts at once.
        b.nic().fw_in.push_input(uint16_t(3));
        CHECK(b.run() == 3 * cmd);
        CHECK(b.nic().fw_commands == 3);
        CHECK(st.busy_ps == 3 * cmd);
    }
}
