// `simnic pcap FILE`: decode every packet of a capture with the packet core,
// one line each (or every field with -v), with its ICRC verdict.
#include <cinttypes>
#include <cstdio>
#include <memory>
#include <string>

#include "commands.h"
#include "progress.h"
#include "simnic/roce/describe.h"
#include "simnic/roce/pcap_io.h"

namespace simnic::cli {
namespace {

struct PcapArgs {
    std::string file;
    bool verbose = false;
    bool strict = false;
    long count = -1;
};

// Errors before the BTH mean the frame is some other traffic (ARP, TCP, ...)
// rather than a broken RoCE packet.
bool is_other_traffic(roce::DecodeError e) {
    using E = roce::DecodeError;
    return e == E::UnsupportedEthertype || e == E::NotUdp || e == E::NotRoceV2 || e == E::IpFragment;
}

int run_pcap(const PcapArgs& a) {
    std::string err;
    auto reader = roce::PcapReader::open(a.file, err);
    if (!reader) {
        std::fprintf(stderr, "simnic pcap: %s\n", err.c_str());
        return 2;
    }
    if (!reader->linktype_supported()) {
        std::fprintf(stderr, "simnic pcap: %s: unsupported link type %d\n", a.file.c_str(),
                     reader->linktype());
        return 2;
    }
    roce::PcapRecord rec;
    roce::Packet pkt;
    uint64_t first_ts = 0;
    long n = 0, good = 0, bad_icrc = 0, malformed = 0, other = 0;
    // On a terminal while the lines go elsewhere (a file, a pager).
    Progress progress(false);
    while ((a.count < 0 || n < a.count) && reader->next(rec)) {
        if (n == 0) first_ts = rec.ts_us;
        ++n;
        progress.update(false, "simnic pcap: %ld packets, %ld bad ICRC, %ld malformed", n, bad_icrc, malformed);
        const roce::DecodeResult r = reader->decode(rec, pkt);
        const double t = double(rec.ts_us - first_ts) / 1e6;
        if (is_other_traffic(r.error)) {
            ++other;
            if (a.verbose) std::printf("%ld %.6f not RoCE v2: %s\n", n, t, roce::to_string(r.error));
            continue;
        }
        if (r.ok()) ++good;
        else if (r.error == roce::DecodeError::BadIcrc) ++bad_icrc;
        else ++malformed;
        const std::string text = a.verbose ? roce::describe_verbose(pkt, r) : roce::describe_brief(pkt, r);
        std::printf("%ld %.6f %s\n", n, t, text.c_str());
    }
    progress.clear();
    if (!reader->error().empty()) {
        std::fprintf(stderr, "simnic pcap: %s: %s\n", a.file.c_str(), reader->error().c_str());
        return 2;
    }
    std::printf("# %ld packets: %ld RoCE v2 ok, %ld bad ICRC, %ld malformed, %ld other traffic\n", n,
                good, bad_icrc, malformed, other);
    if (a.strict && (bad_icrc || malformed)) return 1;
    return 0;
}

}  // namespace

Runner add_pcap_command(CLI::App& app) {
    auto args = std::make_shared<PcapArgs>();
    CLI::App* sub = app.add_subcommand("pcap", "Decode the RoCE v2 packets of a capture and check their ICRC");
    sub->add_option("file", args->file, "pcap or pcapng file (Ethernet, Linux cooked or raw IP)")
        ->required();
    sub->add_flag("-v,--verbose", args->verbose, "print every field of every header");
    sub->add_flag("--strict", args->strict, "exit 1 if any RoCE packet is malformed or has a bad ICRC");
    sub->add_option("-c,--count", args->count, "stop after this many packets")->check(CLI::NonNegativeNumber);
    return [args] { return run_pcap(*args); };
}

}  // namespace simnic::cli
