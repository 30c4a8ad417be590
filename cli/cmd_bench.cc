// `simnic bench`: a model device under a synthetic workload, without
// applications (cli/bench). Prints modelled throughput, latency, the time
// spent in each stage, cache hit rates and the simulation speed, after a
// warm-up; --trace records the measurement's waveform; --sweep runs one
// parameter over a list of values (optionally per --series value) and
// writes a CSV of every measured column and an SVG plot of the columns
// --y and --y2 name (throughput and QPC hit rate unless told).
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "commands.h"
#include "progress.h"
#include "simnic/bench/bench.h"
#include "simnic/bench/fabric_bench.h"
#include "simnic/bench/sweep.h"
#include "simnic/model/plot.h"

namespace simnic::cli {
namespace {

struct BenchArgs {
    std::string op = "write", config, sweep, series, csv, plot;
    uint32_t size = 65536, qps = 1, depth = 16, mtu = 4096;
    uint64_t messages = 0;
    std::optional<uint64_t> warmup;  // none: qps * depth
    std::vector<std::string> sets;
    std::string y = "gbps", y2 = "qpc_hit_pct";
    std::string trace;
    std::optional<uint64_t> trace_from;
    uint64_t trace_cycles = 0;
    bool json = false, all = false, inline_data = false, events = false;
    // --cq-mod COUNT[,PERIOD_US]: every CQ's own moderation (MODIFY_CQ);
    // the sweep's cq_mod_count and cq_mod_period_us set its halves.
    std::string cq_mod_arg;
    std::optional<model::BenchSpec::CqModeration> cq_mod;
    // --fabric: an incast through the switch model (fabric_bench.h).
    std::string fabric, receiver, senders, out = "bench-fabric";
    std::vector<std::string> flows;  // FROM:TO
    std::string pcap;
    double duration_us = 0;  // --fabric: post for this long (simulated) instead of --messages
    // --fabric --fluid: compare with the DCQCN fluid model, each flow from
    // fluid_from_us (default: half the run) in windows of fluid_window_us.
    bool fluid = false;
    double fluid_from_us = -1, fluid_window_us = 5000;
    // --fabric --seeds A-B: one run per switch marking seed, and the mean of
    // the runs (what --fluid then compares; model::mean_of_runs).
    std::string seeds;
    double start_jitter_us = 0;  // --fabric: each flow starts within this (FabricBenchSpec::start_jitter_us)
    bool messages_given = false;
};

bool read_file(const std::string& path, std::string& text, std::string& err) {
    std::ifstream in(path);
    if (!in) {
        err = "cannot read " + path + ": " + std::strerror(errno);
        return false;
    }
    std::stringstream ss;
    ss << in.rdbuf();
    text = ss.str();
    return true;
}

// The configuration: the file's keys, then each TABLE.KEY=VALUE on top,
// checked by the same parser as `link add ... config`; every problem is
// reported, an override's by its place on the command line ("--set #2").
bool build_config(const std::string& file_text, const std::string& origin, const std::vector<std::string>& sets,
                  model::ModelConfig& cfg, std::string& err) {
    return model::parse_config(file_text, origin, sets, cfg, err);
}

std::vector<std::string> split(const std::string& s, char c) {
    std::vector<std::string> out;
    std::stringstream ss(s);
    std::string w;
    while (std::getline(ss, w, c))
        if (!w.empty()) out.push_back(w);
    return out;
}

// "1,4,16" or "1..16384" (powers of two from A to B).
bool expand(const std::string& list, std::vector<std::string>& out, std::string& err) {
    const size_t dots = list.find("..");
    if (dots == std::string::npos) {
        out = split(list, ',');
    } else {
        char* e1 = nullptr;
        char* e2 = nullptr;
        const unsigned long long a = std::strtoull(list.c_str(), &e1, 10);
        const unsigned long long b = std::strtoull(list.c_str() + dots + 2, &e2, 10);
        if (e1 != list.c_str() + dots || *e2 != 0 || a == 0 || b < a) {
            err = "bad range '" + list + "' (A..B with 1 <= A <= B: powers of two from A to B)";
            return false;
        }
        for (unsigned long long v = a; v <= b; v *= 2) out.push_back(std::to_string(v));
    }
    if (out.empty()) {
        err = "empty value list '" + list + "'";
        return false;
    }
    return true;
}

// A CQ moderation's count or period: an integer of 0..max.
bool mod_field(const std::string& what, const std::string& value, uint64_t max, uint16_t& out, std::string& err) {
    char* e = nullptr;
    const unsigned long long v = std::strtoull(value.c_str(), &e, 10);
    if (value.empty() || *e != 0 || value[0] == '-' || v > max) {
        err = what + " = '" + value + "' is not an integer of 0.." + std::to_string(max);
        return false;
    }
    out = uint16_t(v);
    return true;
}

// --cq-mod COUNT[,PERIOD_US], as ibv_modify_cq's cq_count and cq_period
// (0..65535 CQEs, 0..4095 us: mlx5's MLX5_MAX_CQ_PERIOD).
bool parse_cq_mod(const std::string& text, model::BenchSpec::CqModeration& m, std::string& err) {
    const size_t comma = text.find(',');
    m = {};
    if (!mod_field("--cq-mod COUNT", text.substr(0, comma), 0xFFFF, m.count, err)) return false;
    if (comma != std::string::npos && !mod_field("--cq-mod PERIOD_US", text.substr(comma + 1), 4095, m.period_us, err))
        return false;
    return true;
}

// Applies PARAM=VALUE: a workload parameter (qps, size, depth, messages, op)
// or a configuration key (TABLE.KEY).
bool apply(const std::string& param, const std::string& value, BenchArgs& a, std::vector<std::string>& sets,
           std::string& err) {
    auto num = [&](uint64_t& v) {
        char* e = nullptr;
        v = std::strtoull(value.c_str(), &e, 10);
        if (value.empty() || *e != 0 || v == 0) {
            err = param + " = '" + value + "' is not a positive integer";
            return false;
        }
        return true;
    };
    uint64_t v = 0;
    if (param == "qps") {
        if (!num(v) || v > 65536) return err.empty() ? (err = "qps must be 1..65536", false) : false;
        a.qps = uint32_t(v);
    } else if (param == "size") {
        if (!num(v) || v > (1u << 30)) return err.empty() ? (err = "size must be 1..1 GiB", false) : false;
        a.size = uint32_t(v);
    } else if (param == "depth") {
        if (!num(v) || v > 4096) return err.empty() ? (err = "depth must be 1..4096", false) : false;
        a.depth = uint32_t(v);
    } else if (param == "messages") {
        if (!num(v)) return false;
        a.messages = v;
    } else if (param == "warmup") {
        char* e = nullptr;
        v = std::strtoull(value.c_str(), &e, 10);
        if (value.empty() || *e != 0) return err = "warmup = '" + value + "' is not an integer", false;
        a.warmup = v;
    } else if (param == "op") {
        a.op = value;
    } else if (param == "cq_mod_count" || param == "cq_mod_period_us") {
        if (!a.cq_mod) a.cq_mod.emplace();
        if (param == "cq_mod_count" ? !mod_field(param, value, 0xFFFF, a.cq_mod->count, err)
                                    : !mod_field(param, value, 4095, a.cq_mod->period_us, err))
            return false;
    } else if (param.find('.') != std::string::npos) {
        sets.push_back(param + "=" + value);
    } else {
        err = "unknown parameter '" + param +
              "' (qps, size, depth, messages, warmup, op, cq_mod_count, cq_mod_period_us, or a config key TABLE.KEY)";
        return false;
    }
    return true;
}

bool run_one(const BenchArgs& a, const std::string& file_text, const std::vector<std::string>& sets,
             model::BenchResult& r, std::string& err) {
    model::BenchSpec spec;
    if (!model::parse_bench_op(a.op, spec.op)) {
        err = "--op must be write, read or send, not '" + a.op + "'";
        return false;
    }
    spec.size = a.size;
    spec.mtu = a.mtu;
    spec.qps = a.qps;
    spec.depth = a.depth;
    spec.messages = a.messages;
    spec.warmup = a.warmup;
    spec.inline_data = a.inline_data;
    spec.events = a.events;
    spec.cq_mod = a.cq_mod;
    if (!a.trace.empty()) {
        const size_t dot = a.trace.rfind('.');
        spec.trace_path = a.trace;
        spec.trace_format = dot == std::string::npos ? "" : a.trace.substr(dot + 1);
        spec.trace_from = a.trace_from;
        spec.trace_cycles = a.trace_cycles;
        if (spec.trace_format != "vcd" && spec.trace_format != "fst") {
            err = "--trace " + a.trace + ": the file name must end in .vcd or .fst";
            return false;
        }
    }
    if (!build_config(file_text, a.config.empty() ? "<defaults>" : a.config, sets, spec.cfg, err)) return false;
    return model::run_bench(spec, r, err);
}

// The per-stage figures of a result (Pipeline::stats "stage.*"), in block order.
void print_stages(const model::BenchResult& r) {
    std::printf("  %-28s %10s %10s %10s %10s %10s\n", "time in each stage (ns)", "items", "min", "median", "p99",
                "max");
    for (size_t i = 0; i < r.stats.size(); ++i) {
        const std::string& n = r.stats[i].name;
        if (n.rfind("stage.", 0) != 0 || n.size() < 8 || n.compare(n.size() - 8, 8, ".samples") != 0) continue;
        if (i + 4 >= r.stats.size()) break;
        std::printf("    %-26s %10.0f %10.1f %10.1f %10.1f %10.1f\n", n.substr(6, n.size() - 14).c_str(),
                    r.stats[i].value, r.stats[i + 1].value, r.stats[i + 2].value, r.stats[i + 3].value,
                    r.stats[i + 4].value);
    }
}

void print_result(const BenchArgs& a, const model::BenchResult& r) {
    std::printf("simnic bench: %s %u B%s%s%s, %u QP(s), depth %u, %llu messages", a.op.c_str(), a.size,
                a.inline_data ? " inline" : "", a.events ? " events" : "",
                a.mtu != 4096 ? (" PMTU " + std::to_string(a.mtu)).c_str() : "", a.qps, a.depth,
                (unsigned long long)r.messages);
    if (r.warmup) std::printf(" after %llu of warm-up", (unsigned long long)r.warmup);
    std::printf("\n");
    if (r.rd_atomic && r.rd_atomic < a.depth)
        std::printf("  %-28s %u per QP (max_rd_atomic, the device's limit); the rest of the depth waits in the send "
                    "queue\n",
                    "READs in flight", r.rd_atomic);
    std::printf("  %-28s %.2f Gb/s (%.1f%% of the line)\n", "modelled throughput", r.gbps, r.line_utilisation);
    std::printf("  %-28s %.3f M/s\n", "message rate", r.msg_rate_mps);
    std::printf("  %-28s min %.0f / median %.0f / p99 %.0f ns\n", "message latency", r.lat_min_ns, r.lat_median_ns,
                r.lat_p99_ns);
    if (a.events || a.cq_mod) {
        std::printf("  %-28s %llu completions, %llu events", "completion events", (unsigned long long)r.completions,
                    (unsigned long long)r.events);
        if (r.events) std::printf(" (%.2f completions per event)", double(r.completions) / double(r.events));
        if (a.cq_mod) std::printf("; every CQ moderated to %u CQEs / %u us", a.cq_mod->count, a.cq_mod->period_us);
        if (!a.events) std::printf(" (the host polls and arms no CQ: add --events)");
        std::printf("\n");
    }
    std::printf("  %-28s qpc %.1f%%  mpt %.1f%%  mtt %.1f%%\n", "cache hit rates", r.qpc_hit, r.mpt_hit, r.mtt_hit);
    std::printf("  %-28s %llu cycles = %.1f us\n", "simulated", (unsigned long long)r.sim_cycles, r.sim_ns / 1000.0);
    std::printf("  %-28s %.0f cycles/s (%.3f s wall)\n", "simulation speed", r.cycles_per_s, r.wall_s);
    if (r.errors) std::printf("  %-28s %llu\n", "error completions", (unsigned long long)r.errors);
    print_stages(r);
}

// "A-B" or "A": a range of at most 64 seeds.
bool parse_seed_range(const std::string& text, uint64_t& lo, uint64_t& hi) {
    const size_t dash = text.find('-');
    auto num = [](const std::string& t, uint64_t& v) {
        if (t.empty() || t.size() > 18 || t.find_first_not_of("0123456789") != std::string::npos) return false;
        v = std::stoull(t);
        return true;
    };
    if (!num(text.substr(0, dash), lo)) return false;
    if (dash == std::string::npos) hi = lo;
    else if (!num(text.substr(dash + 1), hi)) return false;
    return lo <= hi && hi - lo < 64;
}

// One comparison's figures, or why there are none (a window where the
// reference has no rate: flows started later than the window, with
// --start-jitter-us).
std::string agreement_text(const congestion::fluid::Agreement& a) {
    if (!a.error.empty()) return "not compared (" + a.error + ")";
    char buf[128];
    std::snprintf(buf, sizeof buf, "largest error %.3f at %.0f us, mean %.3f", a.max_error, a.worst_t_s * 1e6,
                  a.mean_error);
    return buf;
}

// The comparison with the DCQCN fluid model; 1 when a flow's window is off
// by more than 20%.
int print_fluid(const model::FabricFluid& ff, double from_us, double window_us) {
    int fluid_rc = 0;
    const auto& sc = ff.scenario;
    std::printf("  DCQCN fluid model, same parameters (%u flows, bottleneck %.2f Gb/s of frames, %u-byte packets, "
                "links %.2f us, Kmin %.0f B, Kmax %.0f B, Pmax %g):\n",
                sc.flows, sc.bottleneck_bps / 1e9, sc.packet_bytes, sc.link_delay_s * 1e6, sc.red.kmin_bytes,
                sc.red.kmax_bytes, sc.red.pmax);
    if (!ff.flows.error.empty()) {
        std::printf("    each flow: %s\n", ff.flows.error.c_str());
        fluid_rc = 1;
    } else {
        std::printf("    each flow from %.0f us, %zu windows of %.0f us: largest error %.3f (flow %zu at %.0f us), "
                    "mean %.3f: %s within 20%%\n",
                    from_us, ff.flows.windows, window_us, ff.flows.max_error, ff.flows.worst_flow,
                    ff.flows.worst_t_s * 1e6, ff.flows.mean_error, ff.flows.max_error <= 0.2 ? "agree" : "do not agree");
        if (ff.flows.max_error > 0.2) fluid_rc = 1;
    }
    std::printf("    the incast's transient (mean of the flows, 1 ms windows from 0): %s\n",
                agreement_text(ff.transient).c_str());
    if (ff.reference.flows()) {
        std::printf("    the same against the packet-level DCQCN model (same parameters, mean of %u seeds): %s; that "
                    "model against the fluid model: %s\n",
                    model::FabricFluid::kReferenceSeeds, agreement_text(ff.transient_reference).c_str(),
                    agreement_text(ff.reference_fluid).c_str());
        std::printf("    the fabric against the packet-level model in fractions of the fair share (for rates near "
                    "zero): %s\n",
                    agreement_text(ff.transient_reference_share).c_str());
    }
    std::printf("    within 10%% of the fair share (%.2f Gb/s) from: fabric %.1f ms, fluid %.1f ms, packet-level %.1f ms\n",
                ff.fair_bps / 1e9, ff.fabric_converged_s * 1e3, ff.fluid_converged_s * 1e3,
                ff.reference_converged_s * 1e3);
    std::printf("    destination queue's mean from %.0f us: fabric %.0f B, fluid %.0f B\n", from_us,
                ff.fabric_queue_bytes, ff.fluid_queue_bytes);
    return fluid_rc;
}

// --fluid: run `r` against the fluid model (from --fluid-from-us, default
// half the run), printed, and OUT-fluid.csv; print_fluid's verdict, or -1
// when the run cannot be compared (the reason on stderr).
int compare_fluid(const BenchArgs& a, const model::FabricBenchSpec& spec, const model::FabricBenchResult& r) {
    std::string err;
    model::FabricFluid ff;
    const double span_us = r.flows.empty() ? 0 : double(r.flows[0].wire_gbps_series.size()) * r.bin_ns / 1000.0;
    const double from_us = a.fluid_from_us >= 0 ? a.fluid_from_us : span_us / 2;
    if (!model::fabric_fluid(spec, r, from_us * 1e-6, a.fluid_window_us * 1e-6, ff, err)) {
        std::fprintf(stderr, "simnic bench: --fluid: %s\n", err.c_str());
        return -1;
    }
    const int rc = print_fluid(ff, from_us, a.fluid_window_us);
    congestion::fluid::write_csv(std::ofstream(a.out + "-fluid.csv").flush(), ff.fluid);
    std::ofstream(a.out + "-fluid.svg") << model::fabric_fluid_svg(
        r, ff, "simnic bench --fabric " + a.fabric + ": each flow on the wire and in the DCQCN fluid model");
    std::printf("  wrote the fluid model's rates to %s-fluid.csv, and both models' to %s-fluid.svg\n", a.out.c_str(),
                a.out.c_str());
    return rc;
}

// OUT-throughput.csv/.svg, OUT-depth.csv/.svg, OUT-rates.csv of run `r`;
// with congestion control on, OUT-dcqcn.csv/.svg.
void write_fabric_files(const BenchArgs& a, const model::FabricBenchResult& r, const std::string& what) {
    const std::string title = "simnic bench --fabric " + a.fabric + what;
    std::ofstream(a.out + "-throughput.csv") << model::fabric_throughput_csv(r);
    if (!r.depth_csv.empty()) std::ofstream(a.out + "-depth.csv") << r.depth_csv;
    std::ofstream(a.out + "-rates.csv") << model::fabric_rates_csv(r);
    std::ofstream(a.out + "-throughput.svg") << model::fabric_throughput_svg(r, title + ": per-flow throughput");
    std::ofstream(a.out + "-depth.svg") << model::fabric_depth_svg(r, title + ": switch egress queues");
    const char* o = a.out.c_str();
    if (r.depth_csv.empty())
        std::printf("wrote %s-throughput.csv, %s-rates.csv, %s-throughput.svg and %s-depth.svg%s\n", o, o, o, o,
                    what.c_str());
    else
        std::printf("wrote %s-throughput.csv, %s-depth.csv, %s-rates.csv, %s-throughput.svg and %s-depth.svg%s\n", o,
                    o, o, o, o, what.c_str());
    if (r.congestion_on) {
        std::ofstream(a.out + "-dcqcn.csv") << model::fabric_dcqcn_csv(r);
        std::ofstream(a.out + "-dcqcn.svg") << model::fabric_dcqcn_svg(r, title + ": DCQCN's Rc and alpha per flow");
        std::printf("wrote %s-dcqcn.csv and %s-dcqcn.svg: each flow's Rc, Rt and alpha over time%s\n", o, o,
                    what.c_str());
    }
}

// --fabric --seeds A-B: the same fabric and workload once per switch
// marking seed, a line per run, then the mean of the runs (its files, and
// with --fluid its comparison: a fluid model describes the runs' mean).
int run_fabric_seeds(const BenchArgs& a, model::FabricBenchSpec spec, uint64_t lo, uint64_t hi) {
    std::string err;
    std::printf("simnic bench --fabric %s: WRITE %u B, %u QP(s) per flow, depth %u, ", a.fabric.c_str(), spec.size,
                spec.qps, spec.depth);
    if (spec.duration_us > 0) std::printf("posting for %.0f us", spec.duration_us);
    else std::printf("%llu messages per flow", (unsigned long long)spec.messages);
    std::printf(", switch seeds %llu to %llu", (unsigned long long)lo, (unsigned long long)hi);
    if (spec.start_jitter_us > 0) std::printf(", flows starting within %.1f us", spec.start_jitter_us);
    std::printf("\n");
    std::printf("  %-6s %8s %8s %8s %11s %8s %8s %8s %10s\n", "seed", "Gb/s", "marks", "CNPs", "queue peak", "pauses",
                "drops", "errors", a.fluid ? "transient" : "");
    std::vector<model::FabricBenchResult> runs;
    uint64_t errors = 0;
    for (uint64_t seed = lo; seed <= hi; ++seed) {
        spec.topo.sw.seed = seed;
        model::FabricBenchResult r;
        if (!model::run_fabric_bench(spec, r, err)) {
            std::fprintf(stderr, "simnic bench: seed %llu: %s\n", (unsigned long long)seed, err.c_str());
            return 1;
        }
        double gbps = 0;
        uint64_t errs = 0;
        for (const model::FabricFlow& f : r.flows) {
            gbps += f.gbps;
            errs += f.errors;
        }
        errors += errs;
        std::printf("  %-6llu %8.2f %8llu %8llu %11llu %8llu %8llu %8llu", (unsigned long long)seed, gbps,
                    (unsigned long long)r.switch_marks, (unsigned long long)r.receiver_cnp_sent,
                    (unsigned long long)r.max_queue_bytes, (unsigned long long)r.switch_pauses,
                    (unsigned long long)r.switch_drops, (unsigned long long)errs);
        if (a.fluid) {
            model::FabricFluid ff;
            if (!model::fabric_fluid(spec, r, 0, 1e-3, ff, err, /*reference=*/false)) {
                std::fprintf(stderr, "\nsimnic bench: --fluid: %s\n", err.c_str());
                return 2;
            }
            if (ff.transient.error.empty()) std::printf(" %10.3f", ff.transient.max_error);
            else std::printf(" %10s", "-");  // no rate in a window of the model's (a late start)
        }
        std::printf("\n");
        runs.push_back(std::move(r));
    }
    if (a.fluid) std::printf("  (transient: the mean of the flows against the fluid model's, 1 ms windows from 0, "
                             "largest error; -: a window where no flow of the model had started)\n");
    const model::FabricBenchResult m = model::mean_of_runs(runs);
    int fluid_rc = 0;
    if (a.fluid) {
        std::printf("  the mean of the %zu runs:\n", runs.size());
        fluid_rc = compare_fluid(a, spec, m);
        if (fluid_rc < 0) return 2;
    }
    // The depth CSV is every switch queue's, per run: the mean run has none.
    model::FabricBenchResult files = m;
    files.depth_csv.clear();
    write_fabric_files(a, files, " (mean of " + std::to_string(runs.size()) + " seeds)");
    if (errors) std::printf("  %llu error completions\n", (unsigned long long)errors);
    return errors ? 1 : fluid_rc;
}

// --fabric TOPO.toml: every sender writes to the receiver through the
// switch; prints per-flow and switch figures, writes the throughput and
// queue-depth series as CSV and SVG (OUT-throughput.csv/.svg,
// OUT-depth.csv/.svg).
int run_fabric_cmd(const BenchArgs& a, const std::string& file_text) {
    std::string err;
    if (!a.sweep.empty() || !a.trace.empty() || a.op != "write" || a.inline_data || a.events || a.cq_mod ||
        a.json) {
        std::fprintf(stderr, "simnic bench: --fabric runs RDMA WRITE streams only, without --sweep, --trace, --op, "
                             "--inline, --events, --cq-mod or --json\n");
        return 2;
    }
    model::FabricBenchSpec spec;
    if (!model::fabric::load_topology(a.fabric, spec.topo, err)) {
        std::fprintf(stderr, "simnic bench: %s\n", err.c_str());
        return 2;
    }
    if (!build_config(file_text, a.config.empty() ? "<defaults>" : a.config, a.sets, spec.cfg, err)) {
        std::fprintf(stderr, "simnic bench: %s\n", err.c_str());
        return 2;
    }
    spec.receiver = a.receiver;
    spec.pcap = a.pcap;
    spec.senders = split(a.senders, ',');
    for (const std::string& f : a.flows) {
        const size_t c = f.find(':');
        if (c == std::string::npos || c == 0 || c + 1 == f.size()) {
            std::fprintf(stderr, "simnic bench: --flow %s: FROM:TO, two host names\n", f.c_str());
            return 2;
        }
        spec.flows.push_back({f.substr(0, c), f.substr(c + 1)});
    }
    spec.size = a.size;
    spec.qps = a.qps;
    spec.depth = a.depth;
    if (a.messages_given) spec.messages = a.messages;
    if (a.duration_us < 0) {
        std::fprintf(stderr, "simnic bench: --duration-us must not be negative\n");
        return 2;
    }
    spec.duration_us = a.duration_us;
    if (!(a.start_jitter_us >= 0 && a.start_jitter_us <= 1e6)) {
        std::fprintf(stderr, "simnic bench: --start-jitter-us must be between 0 and 1000000\n");
        return 2;
    }
    spec.start_jitter_us = a.start_jitter_us;
    if (a.fluid && spec.cfg.congestion.enable == 0) {
        std::fprintf(stderr, "simnic bench: --fluid compares DCQCN with its fluid model: turn congestion control on "
                             "(--config with [congestion] enable = 1, or --set congestion.enable=1)\n");
        return 2;
    }
    if (!a.seeds.empty()) {
        uint64_t lo = 0, hi = 0;
        if (!parse_seed_range(a.seeds, lo, hi)) {
            std::fprintf(stderr, "simnic bench: --seeds %s: A-B (or A), 0 <= A <= B, at most 64 seeds\n",
                         a.seeds.c_str());
            return 2;
        }
        if (!a.pcap.empty()) {
            std::fprintf(stderr, "simnic bench: --seeds runs the fabric once per seed: without --pcap\n");
            return 2;
        }
        return run_fabric_seeds(a, spec, lo, hi);
    }
    model::FabricBenchResult r;
    if (!model::run_fabric_bench(spec, r, err)) {
        std::fprintf(stderr, "simnic bench: %s\n", err.c_str());
        return 1;
    }
    const std::string recv = spec.receiver.empty() ? spec.topo.hosts[0].name : spec.receiver;
    if (spec.flows.empty())
        std::printf("simnic bench --fabric %s: %zu:1 incast into %s", a.fabric.c_str(), r.flows.size(), recv.c_str());
    else
        std::printf("simnic bench --fabric %s: %zu flows", a.fabric.c_str(), r.flows.size());
    std::printf(", WRITE %u B, %u QP(s) per flow, depth %u", spec.size, spec.qps, spec.depth);
    if (spec.duration_us > 0) std::printf(", posting for %.0f us\n", spec.duration_us);
    else std::printf(", %llu messages per flow\n", (unsigned long long)spec.messages);
    std::printf("  %-12s %8s %9s %8s %8s %8s %8s %8s %8s\n", "flow", "msgs", "Gb/s", "drops", "CE", "PFC rx",
                "held", "retx", "NAK rx");
    uint64_t errors = 0;
    for (const model::FabricFlow& f : r.flows) {
        std::printf("  %-12s %8llu %9.2f %8llu %8llu %8llu %8llu %8llu %8llu\n", (f.host + ">" + f.to).c_str(),
                    (unsigned long long)f.messages, f.gbps, (unsigned long long)f.drops,
                    (unsigned long long)f.ce_marked, (unsigned long long)f.pfc_received,
                    (unsigned long long)f.pfc_held, (unsigned long long)f.retransmits,
                    (unsigned long long)f.naks_received);
        errors += f.errors;
    }
    std::printf("  (drops to NAK rx are the sending device's, shared by its flows)\n");
    std::printf("  switch: %llu drops, %llu ECN marks, %llu PFC pauses and %llu resumes sent; the receivers' queues "
                "peaked at %llu B, the shared buffer at %llu B\n",
                (unsigned long long)r.switch_drops, (unsigned long long)r.switch_marks,
                (unsigned long long)r.switch_pauses, (unsigned long long)r.switch_resumes,
                (unsigned long long)r.max_queue_bytes, (unsigned long long)r.shared_peak);
    if (r.switches.size() > 1)
        for (const auto& sw : r.switches) {
            std::printf("  %-8s per port: pauses sent", sw.name.c_str());
            for (uint64_t v : sw.pauses_sent) std::printf(" %llu", (unsigned long long)v);
            std::printf(", drops");
            for (uint64_t v : sw.drops) std::printf(" %llu", (unsigned long long)v);
            std::printf(", CE marks");
            for (uint64_t v : sw.marks) std::printf(" %llu", (unsigned long long)v);
            std::printf("\n");
        }
    if (r.switch_no_route)
        std::printf("  switch: %llu frames to an address it has no route for\n", (unsigned long long)r.switch_no_route);
    std::printf("  receivers: %llu NAKs (PSN sequence error) sent\n", (unsigned long long)r.receiver_naks_sent);
    std::printf("  goodput %.2f Gb/s: every flow's completed payload over the simulated time; their frames left "
                "the senders at %.2f Gb/s (retransmissions included)\n",
                r.goodput_gbps, r.wire_gbps);
    if (r.congestion_on) {
        // DCQCN (the devices' [congestion] table): the receivers' NPs, then
        // each flow's RPs at the end of the run.
        std::printf("  DCQCN: receivers saw %llu CE packets, sent %llu CNPs (%llu marks within N of the last)\n",
                    (unsigned long long)r.receiver_ce_packets, (unsigned long long)r.receiver_cnp_sent,
                    (unsigned long long)r.receiver_cnp_suppressed);
        std::printf("  %-12s %8s %9s %8s %8s %7s %12s %10s\n", "flow", "CNP rx", "wire Gb/s", "Rc", "Rt", "alpha",
                    "limited us", "holds");
        for (const model::FabricFlow& f : r.flows) {
            const double span_ns = double(f.wire_gbps_series.size()) * r.bin_ns;
            std::printf("  %-12s %8llu %9.2f %8.2f %8.2f %7.4f %12.1f %10llu\n", (f.host + ">" + f.to).c_str(),
                        (unsigned long long)f.rp_cnps, span_ns > 0 ? double(f.wire_bytes) * 8.0 / span_ns : 0.0,
                        f.rate_gbps, f.target_rate_gbps, f.alpha, double(f.rate_limited_ns) / 1000.0,
                        (unsigned long long)f.rate_limit_holds);
        }
    }
    std::printf("  simulated %.1f us in %.3f s wall", r.sim_ns / 1000.0, r.wall_s);
    if (r.timer_polls) std::printf(" (%llu times the fabric went idle with messages outstanding)", (unsigned long long)r.timer_polls);
    std::printf("\n");
    if (errors) std::printf("  %llu error completions\n", (unsigned long long)errors);
    if (!a.pcap.empty()) std::printf("  captured every host link to %s\n", a.pcap.c_str());
    int fluid_rc = 0;
    if (a.fluid) {
        fluid_rc = compare_fluid(a, spec, r);
        if (fluid_rc < 0) return 2;
    }
    write_fabric_files(a, r, "");
    return errors ? 1 : fluid_rc;
}

int run_bench_cmd(BenchArgs a) {
    std::string file_text, err;
    if (!a.cq_mod_arg.empty()) {
        if (!parse_cq_mod(a.cq_mod_arg, a.cq_mod.emplace(), err)) {
            std::fprintf(stderr, "simnic bench: %s\n", err.c_str());
            return 2;
        }
    }
    if (!a.config.empty() && !read_file(a.config, file_text, err)) {
        std::fprintf(stderr, "simnic bench: %s\n", err.c_str());
        return 1;
    }
    if (!a.fabric.empty()) return run_fabric_cmd(a, file_text);
    std::vector<std::string> sets = a.sets;
    if (a.sweep.empty()) {
        model::BenchResult r;
        if (!run_one(a, file_text, sets, r, err)) {
            std::fprintf(stderr, "simnic bench: %s\n", err.c_str());
            return 1;
        }
        if (a.json) {
            std::printf("{\"gbps\": %.4f, \"line_utilisation\": %.3f, \"messages\": %llu, \"errors\": %llu, "
                        "\"lat_min_ns\": %.1f, \"lat_median_ns\": %.1f, \"lat_p99_ns\": %.1f, \"qpc_hit\": %.3f, "
                        "\"mpt_hit\": %.3f, \"mtt_hit\": %.3f, \"sim_cycles\": %llu, \"cycles_per_s\": %.0f, "
                        "\"warmup\": %llu, \"rd_atomic\": %u, \"completions\": %llu, \"events\": %llu, "
                        "\"cq_mod_count\": %u, \"cq_mod_period_us\": %u, \"stats\": {",
                        r.gbps, r.line_utilisation, (unsigned long long)r.messages, (unsigned long long)r.errors,
                        r.lat_min_ns, r.lat_median_ns, r.lat_p99_ns, r.qpc_hit, r.mpt_hit, r.mtt_hit,
                        (unsigned long long)r.sim_cycles, r.cycles_per_s, (unsigned long long)r.warmup, r.rd_atomic,
                        (unsigned long long)r.completions, (unsigned long long)r.events,
                        a.cq_mod ? a.cq_mod->count : 0u, a.cq_mod ? a.cq_mod->period_us : 0u);
            for (size_t i = 0; i < r.stats.size(); ++i)
                std::printf("%s\"%s\": %.6g", i ? ", " : "", r.stats[i].name.c_str(), r.stats[i].value);
            std::printf("}}\n");
        } else {
            print_result(a, r);
            if (a.all)
                for (const model::ModelStat& m : r.stats)
                    std::printf("    %-36s %.3f %s\n", m.name.c_str(), m.value, m.unit.c_str());
        }
        return r.errors ? 1 : 0;
    }
    // --sweep PARAM=LIST [--series PARAM=LIST]
    const size_t eq = a.sweep.find('=');
    if (eq == std::string::npos) {
        std::fprintf(stderr, "simnic bench: --sweep PARAM=LIST, e.g. --sweep qps=1..16384\n");
        return 2;
    }
    const std::string param = a.sweep.substr(0, eq);
    std::vector<std::string> values, series_values{""};
    std::string series_param;
    const std::vector<std::string> y_cols = split(a.y, ',');
    const std::vector<std::string> y2_cols = a.y2 == "none" ? std::vector<std::string>{} : split(a.y2, ',');
    if (y_cols.empty()) {
        std::fprintf(stderr, "simnic bench: --y needs a column\n");
        return 2;
    }
    if (!expand(a.sweep.substr(eq + 1), values, err)) {
        std::fprintf(stderr, "simnic bench: --sweep: %s\n", err.c_str());
        return 2;
    }
    if (!a.series.empty()) {
        const size_t e2 = a.series.find('=');
        if (e2 == std::string::npos || !expand(a.series.substr(e2 + 1), series_values, err)) {
            std::fprintf(stderr, "simnic bench: --series PARAM=LIST: %s\n", err.c_str());
            return 2;
        }
        series_param = a.series.substr(0, e2);
    }
    std::vector<model::SweepPoint> pts;
    // Each run takes seconds: say which one is running (terminal only).
    Progress progress;
    const size_t total = values.size() * series_values.size();
    // With events, how many woke the host: what moderation is swept for.
    const bool show_events = a.events;
    std::printf("%-14s %-14s %10s %8s %10s %8s %12s", param.c_str(), series_param.empty() ? "" : series_param.c_str(),
                "Gb/s", "line%", "p50 ns", "qpc hit%", "cycles/s");
    std::printf(show_events ? " %8s %12s\n" : "\n", "events", "compl/event");
    for (const std::string& sv : series_values) {
        for (const std::string& v : values) {
            BenchArgs b = a;
            std::vector<std::string> s2 = sets;
            if ((!series_param.empty() && !apply(series_param, sv, b, s2, err)) || !apply(param, v, b, s2, err)) {
                std::fprintf(stderr, "simnic bench: %s\n", err.c_str());
                return 2;
            }
            model::SweepPoint p{v, sv, {}};
            progress.update(true, "simnic bench: run %zu of %zu: %s=%s%s%s", pts.size() + 1, total, param.c_str(),
                            v.c_str(), series_param.empty() ? "" : (" " + series_param + "=").c_str(),
                            series_param.empty() ? "" : sv.c_str());
            const bool ran = run_one(b, file_text, s2, p.r, err);
            progress.clear();
            if (!ran) {
                std::fprintf(stderr, "simnic bench: %s=%s: %s\n", param.c_str(), v.c_str(), err.c_str());
                return 1;
            }
            std::printf("%-14s %-14s %10.2f %8.1f %10.0f %8.1f %12.0f", v.c_str(), sv.c_str(), p.r.gbps,
                        p.r.line_utilisation, p.r.lat_median_ns, p.r.qpc_hit, p.r.cycles_per_s);
            if (show_events)
                std::printf(" %8llu %12.2f", (unsigned long long)p.r.events,
                            p.r.events ? double(p.r.completions) / double(p.r.events) : 0.0);
            std::printf("\n");
            std::fflush(stdout);
            pts.push_back(std::move(p));
            // A column to plot that no run measures is found after the first.
            if (pts.size() == 1) {
                model::SweepPlotSpec probe{"", param, series_param, values, series_values, y_cols, y2_cols};
                model::PlotSpec unused;
                if (!model::sweep_plot(probe, pts, unused, err)) {
                    std::fprintf(stderr, "simnic bench: --y/--y2: %s\n", err.c_str());
                    return 2;
                }
            }
        }
    }
    const std::string csv_path = a.csv.empty() ? "bench-" + param + ".csv" : a.csv;
    const std::string svg_path = a.plot.empty() ? "bench-" + param + ".svg" : a.plot;
    const model::SweepTable t = model::sweep_table(param, series_param, pts);
    const std::string csv = model::render_csv(t.header, t.rows);
    model::PlotSpec ps;
    const model::SweepPlotSpec spec{"simnic bench: " + a.op + " " + std::to_string(a.size) + " B", param, series_param,
                                    values, series_values, y_cols, y2_cols};
    if (!model::sweep_plot(spec, pts, ps, err)) {
        std::fprintf(stderr, "simnic bench: --y/--y2: %s\n", err.c_str());
        return 2;
    }
    std::ofstream(csv_path) << csv;
    std::ofstream(svg_path) << model::render_svg(ps);
    std::printf("wrote %s and %s\n", csv_path.c_str(), svg_path.c_str());
    return 0;
}

}  // namespace

Runner add_bench_command(CLI::App& app) {
    auto a = std::make_shared<BenchArgs>();
    CLI::App* sub = app.add_subcommand("bench", "Drive a model device with a synthetic workload (no applications)");
    sub->add_option("--op", a->op, "write, read or send (default write)");
    sub->add_option("--size", a->size, "message size in bytes (default 65536)")->check(CLI::Range(1u, 1u << 30));
    sub->add_option("--mtu", a->mtu, "the QPs' path MTU in bytes: 256, 512, 1024, 2048 or 4096 (default 4096)")
        ->check(CLI::IsMember({256u, 512u, 1024u, 2048u, 4096u}));
    sub->add_option("--qps", a->qps, "number of QPs (default 1)")->check(CLI::Range(1u, 65536u));
    sub->add_option("--depth", a->depth, "messages outstanding per QP (default 16)")->check(CLI::Range(1u, 4096u));
    sub->add_option("--messages", a->messages,
                    "messages measured, in all (default: enough for a steady state); with --fabric, per sender "
                    "(default 64)")
        ->each([a](const std::string&) { a->messages_given = true; });
    sub->add_option("--warmup", a->warmup,
                    "messages run before the measurement starts, so that caches are warm and the pipeline full "
                    "(default: qps * depth; 0: measure from the first doorbell)");
    sub->add_flag("--inline", a->inline_data,
                  "SENDs and WRITEs carry their data in the WQE (IBV_SEND_INLINE; size up to the device's max_inline)");
    sub->add_flag("--events", a->events,
                  "the host sleeps on its CQs (armed with ibv_req_notify_cq) and is woken by their MSI-X "
                  "interrupts (cq.msix_ns) instead of polling");
    sub->add_option("--cq-mod", a->cq_mod_arg,
                    "COUNT[,PERIOD_US]: every CQ's own interrupt moderation, set as ibv_modify_cq sets it "
                    "(MODIFY_CQ): an event per COUNT CQEs or PERIOD_US after the first (0..4095; default 0, no "
                    "timer); with --events the output counts completions and events");
    sub->add_option("--config", a->config, "model configuration (TOML, as for link add ... config)");
    sub->add_option("--set", a->sets, "override a configuration key: TABLE.KEY=VALUE (repeatable)");
    sub->add_option("--sweep", a->sweep,
                    "PARAM=LIST: run over qps, size, depth, cq_mod_count, cq_mod_period_us or a config key; LIST is "
                    "a,b,c or A..B");
    sub->add_option("--series", a->series, "PARAM=LIST: one curve per value (e.g. qpc_cache.entries=256,4096)");
    sub->add_option("--csv", a->csv, "CSV output of a sweep (default bench-PARAM.csv)");
    sub->add_option("--plot", a->plot, "SVG plot of a sweep (default bench-PARAM.svg)");
    sub->add_option("--y", a->y,
                    "columns on the plot's left axis, comma-separated (default gbps; any CSV column: "
                    "latency_median_ns, stage.parser.p99, block.requester.utilisation, ...)");
    sub->add_option("--y2", a->y2, "columns on the right axis (default qpc_hit_pct; none: no right axis)");
    sub->add_option("--trace", a->trace, "waveform of the measurement (single run): FILE.vcd or FILE.fst");
    sub->add_option("--trace-from", a->trace_from, "first cycle of the waveform (default: the measurement's start)");
    sub->add_option("--trace-cycles", a->trace_cycles, "cycles of waveform (default: to the end of the run)");
    sub->add_option("--fabric", a->fabric,
                    "TOPO.toml: an incast of RDMA WRITE streams through the switch model, every host a model device "
                    "in one simulated time (docs/model.md, The fabric)");
    sub->add_option("--receiver", a->receiver, "--fabric: the receiving host (default: the first)");
    sub->add_option("--senders", a->senders, "--fabric: the sending hosts, comma-separated (default: all others)");
    sub->add_option("--flow", a->flows,
                    "--fabric: FROM:TO, a WRITE stream from host FROM to host TO (repeatable; instead of the incast)");
    sub->add_option("--pcap", a->pcap,
                    "--fabric: capture every host link, both directions, in simulated time (us) to FILE");
    sub->add_option("--duration-us", a->duration_us,
                    "--fabric: every flow posts for this much simulated time (us), instead of --messages");
    sub->add_flag("--fluid", a->fluid,
                  "--fabric with [congestion] on: compare each flow's rate with the DCQCN fluid model for the same "
                  "parameters (exit 1 if a window is off by more than 20%)");
    sub->add_option("--fluid-from-us", a->fluid_from_us, "--fluid: compare from this time (default: half the run)");
    sub->add_option("--fluid-window-us", a->fluid_window_us, "--fluid: window of the comparison (default 5000)");
    sub->add_option("--start-jitter-us", a->start_jitter_us,
                    "--fabric: each flow starts at its own time, uniform in [0, this) us, drawn from the switch's "
                    "seed (default 0: all at once)");
    sub->add_option("--seeds", a->seeds,
                    "--fabric: A-B, run once per switch marking seed A..B ([switch] seed) and report the mean of the "
                    "runs (with --fluid: compare the mean with the fluid model)");
    sub->add_option("--out", a->out,
                    "--fabric: prefix of the CSV and SVG files (default bench-fabric: bench-fabric-throughput.csv, "
                    "-depth.csv, -rates.csv (the DCQCN fluid model's CSV form), -throughput.svg, -depth.svg)");
    sub->add_flag("-j,--json", a->json, "JSON output (single run)");
    sub->add_flag("-s,--stats", a->all, "also print every pipeline statistic (single run)");
    return [a] { return run_bench_cmd(*a); };
}

}  // namespace simnic::cli
