// What every standalone RTL testbench (tb_roce_parser, tb_icrc_engine) does
// at its start and end: take its seed and stimulus size from the command
// line or the environment and print them with the width, so that a failure
// can be rerun; and report the simulation's speed.
#pragma once

#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace simnic::tb {

struct TbArgs {
    uint64_t seed;
    uint64_t packets;  // random frames to generate
};

// The value after `flag` on the command line, else $env, else `dflt`.
inline uint64_t arg_u64(int argc, char** argv, const char* flag, const char* env, uint64_t dflt) {
    for (int i = 1; i + 1 < argc; ++i)
        if (std::strcmp(argv[i], flag) == 0) return std::strtoull(argv[i + 1], nullptr, 0);
    if (const char* e = std::getenv(env)) return std::strtoull(e, nullptr, 0);
    return dflt;
}

// --seed N or SIMNIC_SEED (default `seed`), --packets N or SIMNIC_PACKETS
// (default 10000); printed as "NAME: DataWidth=W seed=... packets=...".
inline TbArgs tb_args(int argc, char** argv, const char* name, int data_width, uint64_t seed) {
    const TbArgs a{arg_u64(argc, argv, "--seed", "SIMNIC_SEED", seed),
                   arg_u64(argc, argv, "--packets", "SIMNIC_PACKETS", 10000)};
    std::printf("%s: DataWidth=%d seed=0x%" PRIx64 " packets=%" PRIu64 " (rerun: --seed 0x%" PRIx64 ")\n", name,
                data_width, a.seed, a.packets, a.seed);
    return a;
}

// The closing line: every cycle simulated in `secs`, and the frames of the
// back-to-back run in `b2b_secs`.
inline void print_sim_speed(uint64_t cycles, double secs, uint64_t b2b_frames, double b2b_secs) {
    std::printf("simulation: %" PRIu64 " cycles in %.2f s: %.0f cycles/s, %.0f frames/s (back to back)\n",
                cycles, secs, static_cast<double>(cycles) / secs, static_cast<double>(b2b_frames) / b2b_secs);
}

}  // namespace simnic::tb
