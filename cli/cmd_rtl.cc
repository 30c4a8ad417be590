// `simnic rtl icrc FILE`: run every RoCE frame of a capture through the
// Verilated RTL ICRC engine (512-bit datapath) and compare its verdict with
// the C++ packet core's, printing the engine's latency and throughput.
#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "commands.h"
#include "icrc_engine_rtl.h"
#include "simnic/roce/pcap_io.h"

namespace simnic::cli {
namespace {

struct RtlArgs {
    std::string file;
    bool verbose = false;
};

constexpr int kLinkEthernet = 1;

int run_rtl_icrc(const RtlArgs& a) {
    std::string err;
    auto reader = roce::PcapReader::open(a.file, err);
    if (!reader) {
        std::fprintf(stderr, "simnic rtl icrc: %s\n", err.c_str());
        return 2;
    }
    if (reader->linktype() != kLinkEthernet) {
        std::fprintf(stderr,
                     "simnic rtl icrc: %s: the engine takes Ethernet frames; this capture's link type is %d\n",
                     a.file.c_str(), reader->linktype());
        return 2;
    }
    // Only RoCE frames go to the engine: it has no parser to skip others.
    std::vector<std::vector<uint8_t>> frames;
    std::vector<roce::DecodeResult> ref;
    std::vector<long> index;
    roce::PcapRecord rec;
    roce::Packet pkt;
    long n = 0;
    while (reader->next(rec)) {
        ++n;
        const roce::DecodeResult r = roce::decode_frame(rec.data.data(), rec.data.size(), pkt);
        if (!r.ok() && r.error != roce::DecodeError::BadIcrc) continue;
        // The engine sees the frame without Ethernet padding, as the MAC
        // hands it over after stripping it.
        const size_t ip_end = pkt.l3_off + (pkt.ip_version == roce::IpVersion::V4
                                                ? pkt.ip4.total_len
                                                : roce::kIpv6HdrBytes + pkt.ip6.payload_len);
        frames.emplace_back(rec.data.begin(), rec.data.begin() + static_cast<long>(ip_end));
        ref.push_back(r);
        index.push_back(n);
    }
    if (!reader->error().empty()) {
        std::fprintf(stderr, "simnic rtl icrc: %s: %s\n", a.file.c_str(), reader->error().c_str());
        return 2;
    }

    rtl::IcrcEngineRtl engine;
    rtl::IcrcRunStats stats;
    const std::vector<rtl::IcrcResult> res = engine.run(frames, &stats);
    long agree = 0, disagree = 0, rtl_ok = 0;
    uint64_t lat_min = ~uint64_t{0}, lat_max = 0;
    for (size_t i = 0; i < frames.size(); ++i) {
        const rtl::IcrcResult& r = res[i];
        const bool cpp_ok = ref[i].ok();
        const bool same = !r.err && r.icrc == ref[i].computed_icrc && r.ok == cpp_ok;
        same ? ++agree : ++disagree;
        if (r.ok) ++rtl_ok;
        const uint64_t lat = r.valid_cycle - r.last_beat_cycle;
        lat_min = std::min(lat_min, lat);
        lat_max = std::max(lat_max, lat);
        if (a.verbose || !same)
            std::printf("%ld %zu bytes, %zu beats: RTL icrc 0x%08x %s, C++ 0x%08x %s: %s, latency %" PRIu64
                        " cycles\n",
                        index[i], frames[i].size(),
                        (frames[i].size() + rtl::IcrcEngineRtl::kBeatBytes - 1) / rtl::IcrcEngineRtl::kBeatBytes,
                        r.icrc, r.err ? "ERR" : r.ok ? "ok" : "BAD", ref[i].computed_icrc, cpp_ok ? "ok" : "BAD",
                        same ? "agree" : "DISAGREE", lat);
    }
    std::printf("# RTL ICRC engine, 512-bit datapath: %zu RoCE frames of %ld in the capture\n", frames.size(), n);
    std::printf("#   verdicts: %ld ok, %zu bad; agree with the C++ packet core on %ld, disagree on %ld\n", rtl_ok,
                frames.size() - static_cast<size_t>(rtl_ok), agree, disagree);
    if (!frames.empty())
        std::printf("#   %" PRIu64 " beats in %" PRIu64 " cycles (%.3f beats/cycle incl. pipeline drain), "
                    "%.1f cycles/frame, latency %" PRIu64 "..%" PRIu64 " cycles after the last beat\n",
                    stats.beats, stats.cycles, double(stats.beats) / double(stats.cycles),
                    double(stats.cycles) / double(stats.frames), lat_min, lat_max);
    return disagree ? 1 : 0;
}

}  // namespace

Runner add_rtl_command(CLI::App& app) {
    auto args = std::make_shared<RtlArgs>();
    CLI::App* sub = app.add_subcommand("rtl", "Run captured traffic through simnic's Verilated RTL blocks");
    sub->require_subcommand(1);
    CLI::App* icrc = sub->add_subcommand("icrc", "Check every RoCE frame's ICRC with the RTL engine and the C++ core");
    icrc->add_option("file", args->file, "pcap or pcapng file with Ethernet frames")->required();
    icrc->add_flag("-v,--verbose", args->verbose, "one line per frame (default: only disagreements)");
    return [args] { return run_rtl_icrc(*args); };
}

}  // namespace simnic::cli
