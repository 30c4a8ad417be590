// `simnic fabric add|show|delete`: a fabric of model devices and a switch in
// one simulated time, in the daemon, for real applications (docs/model.md,
// "The fabric", "Real applications on a fabric"):
//
//   simnic fabric add fab0 docs/examples/fabric/incast2.toml [config FILE] [pcap FILE] [persist]
//   simnic fabric show [fab0] [-j]
//   simnic fabric delete fab0
//   simnic fabric hold fab0
//   simnic fabric release fab0
//   simnic fabric rates fab0 [bin-us N] [out PREFIX]
//   simnic fabric depth fab0 [bin-us N] [out PREFIX]
//   simnic fabric dcqcn fab0 [bin-us N] [out PREFIX]
//
// `add` makes a model device per host of the topology, named FABRIC_HOST
// (fab0_h0, fab0_h1, ...), with the host's MAC and IPv4 address; `simnic link
// show` and ibv_devices list them, and `simnic exec` runs applications on
// them as on any device. They come and go with their fabric (`simnic link
// delete` refuses them). Next to `simnic link add`: a fabric is a set of
// links made at once from one file, not a kind of link. `persist` keeps a
// fabric as it keeps a device (control/persisted.h, the same list): every
// daemon that starts later creates it again, its devices named as before,
// until `simnic fabric delete`. What is kept is the request, which holds the
// topology's and the config's text: a kept fabric stays the one that was
// added when its files are edited or removed (as a kept model device keeps
// its config's text). `hold` stops the fabric's simulated time while
// applications start (their doorbells wait, `simnic stats DEV`'s
// doorbell.waiting counts them), and `release` lets it go on: flows whose
// applications start at different wall times then start at one simulated
// instant, as an experiment on a real fabric would start them. `rates`
// gives each flow's rate over simulated time (frames from one host to
// another as they leave the sender), as CSV, or as PREFIX-rates.csv and an
// SVG plot: what `simnic bench --fabric` gives its own flows. `depth` gives
// each switch egress queue's depth over simulated time (its deepest per
// bin), told by the switches as it changes. `dcqcn` gives
// each QP's DCQCN reaction point over simulated time (Rc, Rt, alpha), as
// the bench gives its flows', told by the reaction points themselves.
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "commands.h"
#include "object_command.h"
#include "daemon_call.h"
#include "kept.h"
#include "simnic/control/persisted.h"
#include "simnic/model/config.h"
#include "simnic/model/fabric/topology.h"
#include "simnic/bench/fabric_bench.h"
#include "simnic/model/plot.h"

namespace simnic::cli {
namespace {

using control::Json;

using FabricArgs = ObjectArgs;

constexpr const char* kAddUsage =
    "usage: simnic fabric add NAME TOPOLOGY.toml [config FILE] [pcap FILE] [persist]\n"
    "  TOPOLOGY: hosts, links and switch settings (docs/examples/fabric/*.toml); each host becomes a\n"
    "            model device NAME_HOST with the host's MAC and IPv4 address\n"
    "  config: every device's model configuration (docs/model-config.toml; [congestion] enable = 1\n"
    "          turns DCQCN on)\n"
    "  pcap:   capture every host's link: each frame as it leaves its sender and as it reaches its\n"
    "          receiver (CE marks, CNPs, PFC frames), stamped with the simulated time; complete when\n"
    "          the fabric is deleted (fabric show flushes it)\n";

std::string absolute(const std::string& p) {
    char buf[4096];
    return (p.empty() || p[0] == '/' || !getcwd(buf, sizeof buf)) ? p : std::string(buf) + "/" + p;
}

bool read_file(const std::string& path, std::string& text) {
    std::ifstream in(path);
    if (!in) return false;
    std::stringstream ss;
    ss << in.rdbuf();
    text = ss.str();
    return true;
}

// Prints what `add` made: "fabric NAME: DEVICE...".
void print_devices(const std::string& name, const Json& devices) {
    std::printf("fabric %s:", name.c_str());
    for (const Json& d : devices) std::printf(" %s", d.get<std::string>().c_str());
    std::printf("\n");
}

// The devices of fabric `name` in the running daemon (started now if none
// runs, which creates the kept fabrics), or null if it has no such fabric.
Json running_devices(const std::string& name) {
    Json reply;
    if (call_daemon(Json{{"op", "fabric_show"}}, true, reply) != CallResult::Ok) return nullptr;
    for (const Json& f : reply.value("fabrics", Json::array()))
        if (f.value("name", "") == name) {
            Json devs = Json::array();
            for (const Json& h : f.value("hosts", Json::array())) devs.push_back(h.value("device", ""));
            return devs;
        }
    return nullptr;
}

int fabric_add(const FabricArgs& a) {
    // NAME TOPOLOGY, then keyword and value pairs, each keyword once, and
    // `persist`, a word of its own, where a keyword may be.
    std::string config_path, pcap_path;
    bool persist = false;
    bool usage = a.words.size() < 2;
    for (size_t i = 2; !usage && i < a.words.size(); i += 2) {
        const std::string& k = a.words[i];
        if (k == "persist") {
            usage = persist;
            persist = true;
            --i;  // a word without a value
            continue;
        }
        std::string* v = k == "config" ? &config_path : k == "pcap" ? &pcap_path : nullptr;
        if (!v) std::fprintf(stderr, "simnic fabric add: unknown keyword '%s' (config, pcap, persist)\n", k.c_str());
        usage = !v || !v->empty() || i + 1 >= a.words.size() || a.words[i + 1].empty();
        if (!usage) *v = a.words[i + 1];
    }
    if (usage) {
        std::fputs(kAddUsage, stderr);
        return 2;
    }
    const std::string& topo_path = a.words[1];
    Json req{{"op", "fabric_add"}, {"name", a.words[0]}, {"topology", absolute(topo_path)}};
    std::string text;
    if (!read_file(topo_path, text)) {
        std::fprintf(stderr, "simnic fabric add: cannot read topology %s: %s\n", topo_path.c_str(),
                     std::strerror(errno));
        return 1;
    }
    // Checked here, so that mistakes are reported with their lines before
    // anything starts (the daemon checks again).
    std::string err;
    model::fabric::Topology topo;
    if (!model::fabric::parse_topology(text, topo_path, topo, err)) {
        std::fprintf(stderr, "simnic fabric add: %s\n", err.c_str());
        return 1;
    }
    req["topology_text"] = text;
    if (!pcap_path.empty()) req["pcap"] = absolute(pcap_path);
    if (!config_path.empty()) {
        const std::string& cp = config_path;
        std::string ct;
        if (!read_file(cp, ct)) {
            std::fprintf(stderr, "simnic fabric add: cannot read config %s: %s\n", cp.c_str(), std::strerror(errno));
            return 1;
        }
        model::ModelConfig cfg;
        if (!model::parse_config(ct, cp, cfg, err)) {
            std::fprintf(stderr, "simnic fabric add: %s\n", err.c_str());
            return 1;
        }
        req["config"] = absolute(cp);
        req["config_text"] = ct;
    }
    if (persist && control::is_persisted(req)) {
        // The same fabric kept before: a daemon starting now creates it
        // from the list, and asking again changes nothing.
        if (Json devs = running_devices(a.words[0]); !devs.is_null()) {
            print_devices(a.words[0], devs);
            return 0;
        }
    }
    Json reply;
    if (call_daemon(req, true, reply) != CallResult::Ok) return 1;
    print_devices(a.words[0], reply.value("devices", Json::array()));
    return persist ? keep_created("fabric", req) : 0;
}

void print_fabric(const Json& f) {
    std::printf("fabric %s topology %s simulated %.1f us%s", f.value("name", "").c_str(),
                f.value("topology", "").c_str(), f.value("simulated_us", 0.0),
                f.value("held", false) ? " held" : "");
    if (f.contains("pcap")) std::printf(" pcap %s", f.value("pcap", "").c_str());
    std::printf("\n");
    // How much of the simulated time is the applications' (docs/model.md,
    // "Simulated time and wall-clock time"): a gap before a timer waited
    // out in wall time became simulated time.
    const Json q = f.value("quiet_gaps", Json::object());
    std::printf("  quiet gaps: %llu waited out in wall time, %llu cut short by new work\n",
                (unsigned long long)q.value("waited_out", 0ull), (unsigned long long)q.value("cut_short", 0ull));
    for (const Json& h : f["hosts"]) {
        std::printf("  host %s device %s mac %s ip %s rate %g Gb/s: tx %llu rx %llu frames, %llu CE-marked from it",
                    h.value("host", "").c_str(), h.value("device", "").c_str(), h.value("mac", "").c_str(),
                    h.value("ip", "").c_str(), h.value("rate_gbps", 0.0),
                    (unsigned long long)h.value("tx_frames", 0ull), (unsigned long long)h.value("rx_frames", 0ull),
                    (unsigned long long)h.value("ce_frames_from", 0ull));
        // Its frames' rate in simulated time, from its first frame to its
        // last (gaps included: the time the applications left it idle).
        const double first = h.value("tx_first_us", 0.0), last = h.value("tx_last_us", 0.0);
        if (last > first)
            std::printf(", sent %.2f Gb/s from %.1f to %.1f us", double(h.value("tx_bytes", 0ull)) * 8 / (last - first) / 1e3,
                        first, last);
        std::printf("\n");
    }
    for (const Json& s : f["switches"]) {
        std::printf("  %s: rx %llu tx %llu frames, %llu drops, %llu ECN marks, %llu pauses and %llu resumes sent, "
                    "deepest queue %llu B, shared buffer peak %llu B\n",
                    s.value("name", "").c_str(), (unsigned long long)s.value("rx_frames", 0ull),
                    (unsigned long long)s.value("tx_frames", 0ull), (unsigned long long)s.value("drops", 0ull),
                    (unsigned long long)s.value("ecn_marked", 0ull), (unsigned long long)s.value("pause_sent", 0ull),
                    (unsigned long long)s.value("resume_sent", 0ull),
                    (unsigned long long)s.value("max_depth_bytes", 0ull),
                    (unsigned long long)s.value("shared_peak_bytes", 0ull));
        // A port's counters, then each priority's that saw anything.
        const auto counters = [](const Json& c) {
            std::printf("rx %llu tx %llu frames, %llu drops, %llu marks, %llu pauses sent, %llu received, deepest %llu B\n",
                        (unsigned long long)c.value("rx_frames", 0ull), (unsigned long long)c.value("tx_frames", 0ull),
                        (unsigned long long)c.value("drops", 0ull), (unsigned long long)c.value("ecn_marked", 0ull),
                        (unsigned long long)c.value("pause_sent", 0ull),
                        (unsigned long long)c.value("pause_received", 0ull),
                        (unsigned long long)c.value("max_depth_bytes", 0ull));
        };
        for (const Json& p : s["ports"]) {
            std::printf("    port %u (%s): ", p.value("port", 0u), p.value("peer", "").c_str());
            counters(p);
            if (p.contains("priorities"))
                for (const Json& pr : p["priorities"]) {
                    std::printf("      prio %u: ", pr.value("prio", 0u));
                    counters(pr);
                }
        }
    }
}

int fabric_show(const FabricArgs& a) {
    if (a.words.size() > 1) {
        std::fprintf(stderr, "usage: simnic fabric show [NAME] [-j]\n");
        return 2;
    }
    Json req{{"op", "fabric_show"}};
    if (!a.words.empty()) req["name"] = a.words[0];
    Json reply;
    switch (call_daemon(req, false, reply)) {
        case CallResult::Ok: break;
        case CallResult::Failed: return 1;
        case CallResult::NoDaemon:
            if (a.words.empty()) {
                if (a.json) std::printf("[]\n");
                return 0;
            }
            std::fprintf(stderr, "simnic: no fabric %s\n", a.words[0].c_str());
            return 1;
    }
    if (a.json) {
        std::printf("%s\n", reply["fabrics"].dump().c_str());
        return 0;
    }
    for (const Json& f : reply["fabrics"]) print_fabric(f);
    return 0;
}

int fabric_delete(const FabricArgs& a) {
    if (a.words.size() != 1) {
        std::fprintf(stderr, "usage: simnic fabric delete NAME\n");
        return 2;
    }
    // A kept fabric is forgotten whether or not it runs now (not if in use).
    return delete_kept("fabric", "fabric_add", Json{{"op", "fabric_del"}, {"name", a.words[0]}},
                       "no simnic daemon is running (no fabric " + a.words[0] + ")");
}

// A request about fabric `name` (hold, release, rates): true with the
// reply; false when it failed (said on stderr), no daemon running included.
bool call_fabric(const Json& req, const std::string& name, Json& reply) {
    switch (call_daemon(req, false, reply)) {
        case CallResult::Ok: return true;
        case CallResult::Failed: return false;
        case CallResult::NoDaemon: break;
    }
    std::fprintf(stderr, "simnic: no simnic daemon is running (no fabric %s)\n", name.c_str());
    return false;
}

// hold or release NAME: the daemon says at what simulated time it stands.
int fabric_hold(const FabricArgs& a, bool on) {
    const char* verb = on ? "hold" : "release";
    if (a.words.size() != 1) {
        std::fprintf(stderr, "usage: simnic fabric %s NAME\n", verb);
        return 2;
    }
    Json reply;
    if (!call_fabric(Json{{"op", "fabric_hold"}, {"name", a.words[0]}, {"hold", on}}, a.words[0], reply)) return 1;
    // Saying so when nothing changed: a script that releases a fabric it
    // never held learns of it.
    const bool was = reply.value("was_held", false);
    std::printf("fabric %s %s at %.3f us simulated%s\n", a.words[0].c_str(), on ? "held" : "released",
                reply.value("simulated_us", 0.0), was == on ? (on ? " (it was held)" : " (it was not held)") : "");
    return 0;
}

constexpr const char* kRatesUsage =
    "usage: simnic fabric rates NAME [bin-us N] [out PREFIX]\n"
    "  each flow's rate in simulated time (frames from one host to another as they leave the sender),\n"
    "  Gb/s per bin of N us (a multiple of 10, default 10; wider when the record's bins are, after a long\n"
    "  run, or to keep the reply to 50000 numbers);\n"
    "  CSV on stdout, or PREFIX-rates.csv and PREFIX-rates.svg\n";

// `rates` and `dcqcn`: NAME [bin-us N] [out PREFIX]. 0, or the exit code
// after saying what is wrong.
int series_args(const FabricArgs& a, const char* cmd, const char* usage_text, uint64_t& bin_us, std::string& out) {
    std::string bin_text;
    bool usage = a.words.empty();
    for (size_t i = 1; !usage && i < a.words.size(); i += 2) {
        const std::string& k = a.words[i];
        std::string* v = k == "bin-us" ? &bin_text : k == "out" ? &out : nullptr;
        if (!v) std::fprintf(stderr, "simnic fabric %s: unknown keyword '%s' (bin-us, out)\n", cmd, k.c_str());
        usage = !v || !v->empty() || i + 1 >= a.words.size() || a.words[i + 1].empty();
        if (!usage) *v = a.words[i + 1];
    }
    bin_us = 10;
    if (!usage && !bin_text.empty()) {
        char* end = nullptr;
        errno = 0;
        const unsigned long long v = std::strtoull(bin_text.c_str(), &end, 10);
        if (errno || *end || bin_text[0] == '-' || v < 10 || v > 1'000'000 || v % 10) {
            std::fprintf(stderr, "simnic fabric %s: bin-us %s: a multiple of 10 from 10 to 1000000\n", cmd,
                         bin_text.c_str());
            return 2;
        }
        bin_us = v;
    }
    if (usage) {
        std::fputs(usage_text, stderr);
        return 2;
    }
    return 0;
}

// What `rates` and `dcqcn` share: the arguments, the daemon's reply
// (`fabric_CMD`, its CMD object, whose ITEMS are the series), and a word on
// stderr when the bins are wider than asked: the record's own bins grow
// with a long run, and a reply holds at most 50,000 numbers.
struct SeriesReply {
    std::string out;
    Json r;                       // the reply's CMD object
    model::FabricBenchResult fr;  // bin_ns set; the caller adds the series
    double bin_us = 0;
    size_t bins = 0;
};
int fetch_series(const FabricArgs& a, const char* cmd, const char* usage_text, const char* items, const char* noun,
                 SeriesReply& s) {
    uint64_t bin_us = 0;
    if (const int rc = series_args(a, cmd, usage_text, bin_us, s.out)) return rc;
    Json reply;
    if (!call_fabric(Json{{"op", std::string("fabric_") + cmd}, {"name", a.words[0]}, {"bin_us", bin_us}}, a.words[0],
                     reply))
        return 1;
    s.r = reply[cmd];
    s.bin_us = s.r.value("bin_us", 10.0);
    s.bins = s.r.value("bins", size_t{0});
    s.fr.bin_ns = uint64_t(s.bin_us * 1000);
    if (s.bin_us != double(bin_us))
        std::fprintf(stderr, "simnic fabric %s: bins of %.0f us (the record's are %.0f us; %zu %s: at most %zu "
                     "numbers)\n",
                     cmd, s.bin_us, s.r.value("record_bin_us", 10.0), s.r[items].size(), noun, size_t{50'000});
    return 0;
}

// The CSV on stdout, or PREFIX-CMD.csv and PREFIX-CMD.svg.
int emit_series(const char* cmd, const SeriesReply& s, const char* noun, size_t n, const std::string& csv,
                const std::string& svg) {
    if (s.out.empty()) {
        std::fputs(csv.c_str(), stdout);
        return 0;
    }
    const std::string base = s.out + "-" + cmd;
    for (const auto& [file, text] : {std::pair{base + ".csv", csv}, {base + ".svg", svg}}) {
        std::ofstream o(file);
        if (!(o << text) || !o.flush()) {
            std::fprintf(stderr, "simnic fabric %s: cannot write %s: %s\n", cmd, file.c_str(), std::strerror(errno));
            return 1;
        }
    }
    std::printf("wrote %s.csv and %s.svg: %zu %s, %zu bins of %.0f us\n", base.c_str(), base.c_str(), n, noun, s.bins,
                s.bin_us);
    return 0;
}

int fabric_rates(const FabricArgs& a) {
    SeriesReply s;
    if (const int rc = fetch_series(a, "rates", kRatesUsage, "flows", "flows", s)) return rc;
    // Written as simnic bench --fabric writes its flows' (OUT-throughput.csv
    // and .svg: time_us of the bin's start, then FROM_TO_gbps per flow), by
    // the same code; here each series is the flow's frames on the wire.
    for (const Json& f : s.r["flows"]) {
        model::FabricFlow flow;
        flow.host = f.value("from", "");
        flow.to = f.value("to", "");
        flow.gbps_series = f["gbps"].get<std::vector<double>>();
        flow.gbps_series.resize(s.bins);
        s.fr.flows.push_back(std::move(flow));
    }
    return emit_series("rates", s, "flows", s.fr.flows.size(), model::fabric_throughput_csv(s.fr),
                       s.out.empty() ? std::string()
                                     : model::fabric_throughput_svg(
                                           s.fr, "simnic fabric " + a.words[0] + ": each flow's rate in simulated time"));
}

constexpr const char* kDepthUsage =
    "usage: simnic fabric depth NAME [bin-us N] [out PREFIX]\n"
    "  each switch egress queue's depth in simulated time: the deepest it was in each bin of N us\n"
    "  (bytes; as rates), for every queue that has held a frame;\n"
    "  CSV on stdout, or PREFIX-depth.csv and PREFIX-depth.svg\n";

int fabric_depth(const FabricArgs& a) {
    SeriesReply s;
    if (const int rc = fetch_series(a, "depth", kDepthUsage, "queues", "queues", s)) return rc;
    // time_us of the bin's start, as rates, then SWITCH_portP_prioI_bytes
    // per queue: the deepest it was within the bin.
    std::ostringstream csv;
    csv << "time_us";
    model::PlotSpec p;
    p.title = "simnic fabric " + a.words[0] + ": each switch egress queue's depth in simulated time";
    p.x = {"simulated time (us)"};
    p.y_left = {"queue depth, the deepest in each bin (bytes)"};
    p.y_left.min = 0;
    std::vector<std::vector<double>> cols;
    for (const Json& q : s.r["queues"]) {
        const std::string sw = q.value("switch", ""), peer = q.value("peer", "");
        const unsigned port = q.value("port", 0u), prio = q.value("prio", 0u);
        csv << "," << sw << "_port" << port << "_prio" << prio << "_bytes";
        std::vector<double> v(s.bins, 0);
        const Json& pk = q["peak_bytes"];
        for (size_t i = 0; i < s.bins && i < pk.size(); ++i) v[i] = pk[i].get<double>();
        model::Series line{sw + " port " + std::to_string(port) + " (" + peer + ") prio " + std::to_string(prio), {}, {}};
        for (size_t i = 0; i < s.bins; ++i) {
            line.x.push_back(double(i) * s.bin_us);
            line.y.push_back(v[i]);
        }
        p.left.push_back(std::move(line));
        cols.push_back(std::move(v));
    }
    csv << "\n";
    for (size_t i = 0; i < s.bins; ++i) {
        csv << double(i) * s.bin_us;
        for (const std::vector<double>& c : cols) csv << "," << uint64_t(c[i]);
        csv << "\n";
    }
    return emit_series("depth", s, "queues", cols.size(), csv.str(), s.out.empty() ? std::string() : model::render_svg(p));
}

constexpr const char* kDcqcnUsage =
    "usage: simnic fabric dcqcn NAME [bin-us N] [out PREFIX]\n"
    "  each QP's DCQCN reaction point in simulated time: Rc and Rt (Gb/s) and alpha at the end of each\n"
    "  bin of N us (as rates), from the QP's creation to its end, for the fabric's devices with\n"
    "  congestion control on;\n"
    "  CSV on stdout, or PREFIX-dcqcn.csv and PREFIX-dcqcn.svg (Rc on the left axis, alpha on the right)\n";

int fabric_dcqcn(const FabricArgs& a) {
    SeriesReply s;
    if (const int rc = fetch_series(a, "dcqcn", kDcqcnUsage, "qps", "QPs", s)) return rc;
    // Written as simnic bench --fabric writes its flows' reaction points
    // (OUT-dcqcn.csv and .svg), by the same code: a QP is a "flow" from its
    // host to its QPN (HOST_qpN, and HOST_qpN_M for the M-th QP of that
    // number), and a bin where it did not exist (null) is empty.
    const auto numbers = [&](const Json& v) {
        std::vector<double> x(s.bins, std::nan(""));
        for (size_t i = 0; i < s.bins && i < v.size(); ++i)
            if (v[i].is_number()) x[i] = v[i].get<double>();
        return x;
    };
    for (const Json& q : s.r["qps"]) {
        model::FabricFlow flow;
        flow.host = q.value("host", "");
        const unsigned life = q.value("life", 1u);
        flow.to = "qp" + std::to_string(q.value("qpn", 0u)) + (life > 1 ? "_" + std::to_string(life) : "");
        flow.rc_gbps_series = numbers(q["rc_gbps"]);
        flow.rt_gbps_series = numbers(q["rt_gbps"]);
        flow.alpha_series = numbers(q["alpha"]);
        s.fr.flows.push_back(std::move(flow));
    }
    char about[200];
    std::snprintf(about, sizeof about,
                  "simnic fabric dcqcn %s: each QP's DCQCN reaction point at the end of each %.0f us of simulated "
                  "time: Rc and Rt in Gb/s, alpha",
                  a.words[0].c_str(), s.bin_us);
    return emit_series(
        "dcqcn", s, "QPs", s.fr.flows.size(), model::fabric_dcqcn_csv(s.fr, about),
        s.out.empty() ? std::string()
                      : model::fabric_dcqcn_svg(s.fr, "simnic fabric " + a.words[0] + ": DCQCN's Rc and alpha per QP"));
}

}  // namespace

Runner add_fabric_command(CLI::App& app) {
    return add_object_command(
        app,
        {"fabric", "Add, show, delete, hold and release fabrics, and their flows' rates: model devices and a switch in one simulated time",
         "Add a fabric: NAME TOPOLOGY.toml [config FILE] [pcap FILE] [persist]; a device NAME_HOST per host",
         kAddUsage, "NAME, TOPOLOGY, config FILE, pcap FILE and persist", "Show fabrics: hosts, devices, switch counters: [NAME]",
         "fabric name", "Delete a fabric and its devices: NAME", "fabric name"},
        {fabric_add,
         fabric_show,
         fabric_delete,
         {{"hold",
           "Stop a fabric's simulated time (its devices take doorbells; nothing is simulated) until "
           "release: NAME",
           "fabric name", [](const FabricArgs& a) { return fabric_hold(a, true); }},
          {"release", "Let a held fabric's simulated time go on: NAME", "fabric name",
           [](const FabricArgs& a) { return fabric_hold(a, false); }},
          {"rates", "Each flow's rate in simulated time, as CSV or CSV and SVG: NAME [bin-us N] [out PREFIX]",
           "NAME, bin-us N and out PREFIX", fabric_rates},
          {"depth",
           "Each switch egress queue's depth (its deepest per bin) in simulated time, as CSV or CSV and SVG: "
           "NAME [bin-us N] [out PREFIX]",
           "NAME, bin-us N and out PREFIX", fabric_depth},
          {"dcqcn",
           "Each QP's DCQCN reaction point (Rc, Rt, alpha) in simulated time, as CSV or CSV and SVG: NAME "
           "[bin-us N] [out PREFIX]",
           "NAME, bin-us N and out PREFIX", fabric_dcqcn}}});
}

}  // namespace simnic::cli
