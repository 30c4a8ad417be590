// simnic_rtl_parser (the W=512 RTL behind RoceParserRtl::parse()) against
// parse_header_vector(): every golden frame, every vector and random frames,
// some of them cut short. Each frame must take ceil(len / 64) + kLatency
// cycles and give the twin's header vector. Every 7th random frame's header
// vector is then held with m_ready_i low for 1..20 edges (the stage after
// the parser full, RoceParserRtl::hold): it must stay on the port unchanged,
// m_valid_o high on every one of those edges, and the next frames still
// take their cycles.
#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "packet_gen.h"
#include "roce_parser_rtl.h"
#include "simnic/roce/header_vector.h"
#include "tb_golden.h"
#include "vectors.h"

#ifndef SIMNIC_GOLDEN_DIR
#error "SIMNIC_GOLDEN_DIR must name testbench/golden"
#endif

namespace {

using namespace simnic;

size_t checked = 0, accepted = 0, held = 0;

roce::HeaderVector check(rtl::RoceParserRtl& rtl, const std::string& name, const std::vector<uint8_t>& f) {
    uint64_t cycles = 0;
    const roce::HeaderVector got = rtl.parse(f.data(), f.size(), &cycles);
    const roce::HeaderVector exp = roce::parse_header_vector(f.data(), f.size());
    const uint64_t beats = std::max<size_t>(1, (f.size() + 63) / 64);
    if (got != exp || cycles != beats + rtl::RoceParserRtl::kLatency) {
        std::fprintf(stderr, "FAIL: %s (%zu bytes): %" PRIu64 " cycles (expected %" PRIu64 ")\n%s",
                     name.c_str(), f.size(), cycles, beats + rtl::RoceParserRtl::kLatency,
                     roce::diff(got, exp).c_str());
        std::exit(1);
    }
    ++checked;
    accepted += got.accepted();
    return got;
}

}  // namespace

int main() {
    rtl::RoceParserRtl rtl;
    size_t golden = 0;
    tb::for_each_golden_frame(SIMNIC_GOLDEN_DIR, [&](const std::filesystem::path& path, size_t k,
                                                     const std::vector<uint8_t>& frame) {
        check(rtl, tb::golden_name(SIMNIC_GOLDEN_DIR, path) + "#" + std::to_string(k), frame);
        ++golden;
    });
    for (const tb::FrameVector& v : tb::packet_core_vectors()) check(rtl, v.name, v.frame);
    tb::PacketGenOptions opt;
    opt.unaligned_prob = 0.1;
    tb::PacketGen gen(0x5eed0ca7, opt);
    for (int i = 0; i < 2000; ++i) {
        tb::GenFrame g = gen.next();
        if (i % 4 == 3) g.bytes.resize(gen.rng()() % g.bytes.size());
        const roce::HeaderVector hv = check(rtl, "random#" + std::to_string(i), g.bytes);
        if (i % 7 == 5) {
            const uint64_t edges = 1 + gen.rng()() % 20;
            roce::HeaderVector after;
            const uint64_t valid = rtl.hold(edges, &after);
            if (valid != edges || after != hv) {
                std::fprintf(stderr, "FAIL: random#%d held %" PRIu64 " edges with m_ready_i low: m_valid_o high on %" PRIu64
                             "\n%s", i, edges, valid, roce::diff(after, hv).c_str());
                return 1;
            }
            held += edges;
        }
    }
    check(rtl, "empty", {});
    if (golden == 0) {
        std::fprintf(stderr, "FAIL: no golden capture in %s\n", SIMNIC_GOLDEN_DIR);
        return 1;
    }
    std::printf("RoceParserRtl: %zu frames (%zu golden), %zu accepted, all equal to "
                "parse_header_vector(), %zu edges held with m_ready_i low, %" PRIu64 " cycles\nPASS\n",
                checked, golden, accepted, held, rtl.cycles());
    return 0;
}
