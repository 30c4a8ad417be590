// `simnic trace NAME vcd|fst FILE [--from CYCLE] [--cycles N]`: a waveform of
// a model device's pipeline (every channel between two blocks: valid, ready,
// transfers, fill level and the QPN, PSN, opcode and length of the item at
// its head; each block's busy and stall; cache hit and miss strobes; DMA
// tags in flight; the retransmit queue; the cycle), for gtkwave; the list is
// in docs/model.md. `simnic trace NAME stop` closes it early. A --from in
// the past is refused by the device.
#include <unistd.h>

#include <cstdio>
#include <memory>
#include <optional>
#include <string>

#include "commands.h"
#include "daemon_call.h"

namespace simnic::cli {
namespace {

using control::Json;

struct TraceArgs {
    std::string device, format, file;
    std::optional<uint64_t> from;  // none: now
    uint64_t cycles = 100000;
};

int run_trace(const TraceArgs& a) {
    Json req{{"op", "trace"}, {"device", a.device}};
    if (a.format == "stop") {
        req["stop"] = true;
    } else {
        if (a.format != "vcd" && a.format != "fst") {
            std::fprintf(stderr, "simnic trace: format must be vcd or fst (or 'stop'), not '%s'\n", a.format.c_str());
            return 2;
        }
        if (a.file.empty()) {
            std::fprintf(stderr, "usage: simnic trace NAME vcd|fst FILE [--from CYCLE] [--cycles N]\n");
            return 2;
        }
        char buf[4096];
        req["file"] = (a.file[0] == '/' || !getcwd(buf, sizeof buf)) ? a.file : std::string(buf) + "/" + a.file;
        req["format"] = a.format;
        if (a.from) req["from"] = *a.from;
        req["cycles"] = a.cycles;
    }
    Json reply;
    if (call_daemon(req, false, reply) != CallResult::Ok) return 1;  // the daemon's reason is printed
    std::printf("%s: trace %s\n", a.device.c_str(), reply.value("trace", "").c_str());
    return 0;
}

}  // namespace

Runner add_trace_command(CLI::App& app) {
    auto a = std::make_shared<TraceArgs>();
    CLI::App* sub = app.add_subcommand(
        "trace", "Record a model device's pipeline handshakes as a waveform: NAME vcd|fst FILE, or NAME stop");
    sub->add_option("name", a->device, "model device")->required();
    sub->add_option("format", a->format, "vcd, fst or stop")->required();
    sub->add_option("file", a->file, "waveform file");
    sub->add_option("--from", a->from, "first cycle, not in the past (default: now)");
    sub->add_option("--cycles", a->cycles, "cycles to record (default 100000)")->check(CLI::PositiveNumber);
    return [a] { return run_trace(*a); };
}

}  // namespace simnic::cli
