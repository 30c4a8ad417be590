// `simnic wire`: run a wire (an Ethernet segment of whole frames on a UDP
// hub, see simnic/wire/hub.h) in the foreground, optionally with faults.
//
//   simnic wire --port 47000 --pcap wire.pcap
//   simnic wire --port 47000 --fault drop=1%,reorder=1%,dup=0.5% --seed 7
//   simnic wire --port 47000 --fault from=52:54:00:12:34:01,drop=5% --fault delay=20us,jitter=10us
#include <atomic>
#include <csignal>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "commands.h"
#include "simnic/wire/hub.h"

namespace simnic::cli {
namespace {

std::atomic<bool> g_stop{false};
void on_signal(int) { g_stop = true; }

struct WireArgs {
    wire::HubOptions opt;
    std::vector<std::string> faults;
    bool quiet = false;
};

int run_wire(WireArgs& a) {
    for (const std::string& f : a.faults) {
        wire::FaultRule r;
        std::string err;
        if (!wire::parse_rule(f, r, err)) {
            std::fprintf(stderr, "simnic wire: --fault %s: %s\n", f.c_str(), err.c_str());
            return 2;
        }
        a.opt.faults.push_back(r);
    }
    wire::Hub hub;
    std::string err;
    if (!hub.open(a.opt, err)) {
        std::fprintf(stderr, "simnic wire: %s\n", err.c_str());
        return 1;
    }
    struct sigaction sa {};
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, nullptr);
    sigaction(SIGTERM, &sa, nullptr);
    if (!a.quiet) {
        std::fprintf(stderr, "simnic wire: udp 127.0.0.1:%u", unsigned(hub.port()));
        if (!a.opt.faults.empty()) std::fprintf(stderr, ", seed %llu", (unsigned long long)a.opt.seed);
        std::fprintf(stderr, "\n");
        for (const wire::FaultRule& r : a.opt.faults) std::fprintf(stderr, "  fault %s\n", r.describe().c_str());
    }
    hub.run(g_stop);
    if (!a.quiet) std::fputs(hub.stats_json().c_str(), stderr);
    return 0;
}

}  // namespace

Runner add_wire_command(CLI::App& app) {
    auto a = std::make_shared<WireArgs>();
    CLI::App* sub = app.add_subcommand(
        "wire", "Run an Ethernet segment of whole frames (a UDP hub on 127.0.0.1) with optional faults");
    sub->footer(
        "One UDP datagram carries one Ethernet frame. The first datagram from a new address makes it a\n"
        "member (a zero-length one joins without sending a frame); every frame goes to every other\n"
        "member. Simnic devices join with `simnic link add NAME type soft wire 127.0.0.1:PORT addr A/N`,\n"
        "QEMU VMs with `-netdev dgram`.\n\n"
        "A fault rule is KEY=VALUE,... with from=MAC and to=MAC to pick a direction (default: every\n"
        "direction), drop=, dup=, reorder=, corrupt= as a percentage (1%) or a fraction (0.01), and\n"
        "delay=, jitter=, hold= as a time (50us, 2ms), delayed= the share of frames that wait (default\n"
        "all), ce= the share of ECN-capable frames a congested switch marks CE (ECN; with the devices'\n"
        "congestion control on). The first matching rule decides a frame's fate.\n"
        "Rules act on RoCE v2 frames (UDP port 4791) only, unless frames=all: a lost ARP reply fails\n"
        "the verb waiting for it after 1 s, and a corrupted one teaches a peer a wrong MAC for up to\n"
        "45 s (as Linux's neighbour table keeps it), which tests neighbour handling, not RDMA.\n"
        "Reordering holds a frame until the rule's next frame has gone (or `hold`, default 1ms).\n"
        "The same --seed replays the same decisions for the same frames.");
    sub->add_option("--port", a->opt.port, "UDP port on 127.0.0.1 (default: an ephemeral port)");
    sub->add_option("--member", a->opt.members, "a member known in advance (its UDP port on 127.0.0.1)");
    sub->add_option("--pcap", a->opt.pcap, "capture of every frame as sent");
    sub->add_option("--pcap-delivered", a->opt.pcap_delivered, "capture of every frame as delivered (after faults)");
    sub->add_option("--pcap-limit", a->opt.pcap_limit, "stop capturing after this many frames");
    sub->add_option("--fault", a->faults, "a fault rule (repeatable; see below)");
    sub->add_option("--seed", a->opt.seed, "seed of the fault injector")->default_val(1);
    sub->add_option("--lifetime", a->opt.lifetime_s, "stop after this many seconds")
        ->check(CLI::NonNegativeNumber);
    sub->add_option("--ready-file", a->opt.ready_file, "write \"PID PORT\" here once listening");
    sub->add_option("--stats", a->opt.stats_file, "keep the counters here as JSON (rewritten while running, final when stopped)");
    sub->add_flag("-q,--quiet", a->quiet, "print nothing");
    return [a] { return run_wire(*a); };
}

}  // namespace simnic::cli
