// simnic-dcqcn-fluid: the DCQCN fluid model and its packet-level
// counterpart for N flows through one bottleneck, as CSV; and the
// comparison of any two such CSVs (a fabric run's too). docs/model.md, "The
// fluid model".
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "simnic/congestion/fluid/fluid_model.h"
#include "simnic/congestion/fluid/packet_sim.h"
#include "simnic/congestion/fluid/series.h"

using namespace simnic::congestion;
using namespace simnic::congestion::fluid;

namespace {

const char* kUsage =
    "usage: simnic-dcqcn-fluid fluid|packet [options] [--out FILE.csv]\n"
    "       simnic-dcqcn-fluid fixed-point [options]\n"
    "       simnic-dcqcn-fluid bench [options]\n"
    "       simnic-dcqcn-fluid compare REFERENCE.csv MEASURED.csv... [--from-us T] [--window-us W]\n"
    "                                  [--tolerance F] [--fair-gbps R] [--mean-of-flows 1]\n"
    "\n"
    "fluid        integrate the DCQCN fluid model (Zhu et al. 2015/2016)\n"
    "packet       run the packet-level model (DcqcnRp senders, RED queue, NotificationPoint)\n"
    "fixed-point  the model's fixed point for N equal flows (p*, queue)\n"
    "bench        wall time of both models for 2 to 64 flows (--duration-ms of simulated time)\n"
    "compare      windowed per-flow mean rates of MEASURED against REFERENCE (several\n"
    "             MEASURED: runs of one scenario, their sample-by-sample mean; --mean-of-flows 1:\n"
    "             the mean over the flows, what the fluid model predicts for flows started alike);\n"
    "             exit 0 if every window agrees within the tolerance (default 0.2), 1 if not\n"
    "\n"
    "scenario options (defaults: issue 15's 2:1 incast, the published DCQCN parameters):\n"
    "  --flows N             flows, one per sender (2)\n"
    "  --rate-gbps R         bottleneck and sender line rate (100)\n"
    "  --line-gbps R         sender line rate alone\n"
    "  --duration-ms T       run time (20)\n"
    "  --start-us T,T,...    each flow's start (all 0)\n"
    "  --packet-bytes B      bytes per packet on the wire (1000)\n"
    "  --link-delay-us D     one-way delay of each link (1)\n"
    "  --feedback-delay-us D the fluid model's tau* (derived from the links)\n"
    "  --kmin-kb K --kmax-kb K --pmax P   RED marking (5, 200, 0.01)\n"
    "  --rai-mbps R --rhai-mbps R --g G --timer-us T --alpha-timer-us K\n"
    "  --byte-counter B --fast-recovery F --cnp-interval-us N   DCQCN (40, 200, 1/256, 55, 55, 1e7, 5, 50)\n"
    "  --sample-us S         output sample interval (10)\n"
    "  --step-us S           fluid integration step (0.1)\n"
    "  --seed N              packet model's marking seed (1)\n";

[[noreturn]] void die(const std::string& m) {
    std::cerr << "simnic-dcqcn-fluid: " << m << "\n";
    std::exit(2);
}

double num(const std::string& opt, const char* v) {
    char* end = nullptr;
    const double d = std::strtod(v, &end);
    if (!*v || *end || !std::isfinite(d)) die("bad number for " + opt + ": '" + v + "'");
    return d;
}

// A count or a time that becomes an integer: not negative, not absurd.
uint64_t whole(const std::string& opt, const char* v, double scale = 1) {
    const double d = num(opt, v) * scale;
    if (d < 0 || d > 1e15) die(opt + " must be 0 to 1e15 (after units): '" + v + "'");
    return uint64_t(std::llround(d));
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2) {
        std::cerr << kUsage;
        return 2;
    }
    if (!std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h")) {
        std::cout << kUsage;
        return 0;
    }
    const std::string cmd = argv[1];
    if (cmd != "fluid" && cmd != "packet" && cmd != "compare" && cmd != "fixed-point" && cmd != "bench")
        die("unknown command '" + cmd + "' (fluid, packet, fixed-point, compare, bench; --help)");

    Scenario s;
    FluidOptions fo;
    uint64_t seed = 1;
    std::string out_path;
    std::vector<std::string> files;
    double from_us = 0, window_us = 1000, tolerance = 0.2, fair_gbps = 0;
    bool line_set = false;
    bool flow_mean = false;
    for (int i = 2; i < argc; ++i) {
        const std::string a = argv[i];
        if (a.rfind("--", 0) != 0) {
            files.push_back(a);
            continue;
        }
        if (i + 1 >= argc) die("option " + a + " needs a value");
        const char* v = argv[++i];
        if (a == "--out") out_path = v;
        else if (a == "--flows") {
            const double n = num(a, v);
            if (n < 1 || n > 4096 || n != std::floor(n)) die("--flows must be 1 to 4096");
            s.flows = unsigned(n);
        } else if (a == "--rate-gbps") {
            s.bottleneck_bps = num(a, v) * 1e9;
            if (!line_set) s.rp.line_rate_bps = s.bottleneck_bps;
        } else if (a == "--line-gbps") {
            s.rp.line_rate_bps = num(a, v) * 1e9;
            line_set = true;
        } else if (a == "--duration-ms") s.duration_s = num(a, v) * 1e-3;
        else if (a == "--start-us") {
            s.start_s.clear();
            std::stringstream ss(v);
            std::string t;
            while (std::getline(ss, t, ',')) s.start_s.push_back(num(a, t.c_str()) * 1e-6);
        } else if (a == "--packet-bytes") s.packet_bytes = uint32_t(std::min<uint64_t>(whole(a, v), 1u << 30));
        else if (a == "--link-delay-us") s.link_delay_s = num(a, v) * 1e-6;
        else if (a == "--feedback-delay-us") s.feedback_delay_s = num(a, v) * 1e-6;
        else if (a == "--kmin-kb") s.red.kmin_bytes = num(a, v) * 1e3;
        else if (a == "--kmax-kb") s.red.kmax_bytes = num(a, v) * 1e3;
        else if (a == "--pmax") s.red.pmax = num(a, v);
        else if (a == "--rai-mbps") s.rp.rai_bps = num(a, v) * 1e6;
        else if (a == "--rhai-mbps") s.rp.rhai_bps = num(a, v) * 1e6;
        else if (a == "--g") s.rp.g = num(a, v);
        else if (a == "--timer-us") s.rp.rate_timer_ns = whole(a, v, 1e3);
        else if (a == "--alpha-timer-us") s.rp.alpha_timer_ns = whole(a, v, 1e3);
        else if (a == "--byte-counter") s.rp.byte_counter_bytes = whole(a, v);
        else if (a == "--fast-recovery") {
            const uint64_t f = whole(a, v);
            if (f > 1000) die("--fast-recovery must be 0 to 1000");
            s.rp.fast_recovery_steps = unsigned(f);
        }
        else if (a == "--cnp-interval-us") s.np.min_cnp_interval_ns = whole(a, v, 1e3);
        else if (a == "--sample-us") s.sample_s = num(a, v) * 1e-6;
        else if (a == "--step-us") fo.step_s = num(a, v) * 1e-6;
        else if (a == "--seed") seed = whole(a, v);
        else if (a == "--from-us") from_us = num(a, v);
        else if (a == "--window-us") window_us = num(a, v);
        else if (a == "--tolerance") tolerance = num(a, v);
        else if (a == "--fair-gbps") fair_gbps = num(a, v);
        else if (a == "--mean-of-flows") flow_mean = num(a, v) != 0;
        else die("unknown option " + a + " (--help)");
    }

    if (cmd == "compare") {
        if (files.size() < 2) die("compare takes the reference CSV and one or more measured CSVs");
        std::vector<Series> ser(files.size());
        for (std::size_t k = 0; k < files.size(); ++k) {
            std::ifstream in(files[k]);
            if (!in) die("cannot open " + files[k]);
            std::string err;
            if (!read_csv(in, ser[k], err)) die(files[k] + ": " + err);
        }
        Series measured;
        {
            std::string err;
            if (!ensemble_mean(std::vector<Series>(ser.begin() + 1, ser.end()), measured, err)) die(err);
        }
        Series reference = ser[0];
        if (flow_mean) {
            reference = mean_of_flows(reference);
            measured = mean_of_flows(measured);
        }
        if (!(window_us > 0)) die("--window-us must be positive");
        const Agreement a = compare(reference, measured, from_us * 1e-6, window_us * 1e-6);
        if (!a.error.empty()) die(a.error);
        std::cout << "windows " << a.windows << " of " << window_us << " us from " << from_us << " us\n"
                  << "max relative error " << a.max_error << " (flow " << a.worst_flow << ", window at "
                  << a.worst_t_s * 1e6 << " us)\nmean relative error " << a.mean_error << "\n";
        const double fair = fair_gbps > 0 ? fair_gbps * 1e9 : 0;
        if (fair > 0) {
            const Series* both[2] = {&reference, &measured};
            for (int k = 0; k < 2; ++k)
                std::cout << (k ? "measured" : "reference") << " converged within 10% of " << fair_gbps
                          << " Gb/s from " << convergence_time(*both[k], fair, window_us * 1e-6, 0.1) * 1e6 << " us\n";
        }
        const bool ok = a.max_error <= tolerance;
        std::cout << (ok ? "agree" : "disagree") << " within " << tolerance << "\n";
        return ok ? 0 : 1;
    }

    if (!files.empty()) die("unexpected argument '" + files[0] + "'");
    if (std::string e = check(s); !e.empty()) {
        e.pop_back();  // the last line's newline
        die("bad scenario:\n" + e);
    }
    if (!(fo.step_s > 0) || fo.step_s > 1e-5) die("--step-us must be in (0, 10]");

    if (cmd == "fixed-point") {
        const FixedPoint fp = fixed_point(s);
        if (!fp.found) {
            std::cout << "no fixed point with p <= Pmax: the queue would sit above Kmax\n";
            return 1;
        }
        std::cout << "p* " << fp.p << "\nqueue* " << fp.queue_bytes << " bytes\nrate* " << s.bottleneck_bps / s.flows * 1e-9
                  << " Gb/s per flow\ntau* " << loop_delay_s(s) * 1e6 << " us\n";
        return 0;
    }

    if (cmd == "bench") {
        // Figures, not a test: how fast each model runs, against the
        // number of flows (all into one bottleneck, all starting at once).
        std::cout << "flows,model,simulated_ms,wall_ms,packets,packets_per_wall_s,slowdown\n";
        for (unsigned n : {2u, 4u, 8u, 16u, 32u, 64u}) {
            Scenario b = s;
            b.flows = n;
            b.start_s.clear();
            for (int m = 0; m < 2; ++m) {
                PacketStats st;
                const auto t0 = std::chrono::steady_clock::now();
                if (m == 0) (void)integrate_fluid(b, fo);
                else (void)simulate_packets(b, seed, &st);
                const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
                std::cout << n << "," << (m ? "packet" : "fluid") << "," << b.duration_s * 1e3 << "," << wall * 1e3 << ","
                          << st.packets << "," << (m ? double(st.packets) / wall : 0.0) << "," << wall / b.duration_s << "\n";
            }
        }
        return 0;
    }

    PacketStats st;
    const Series ser = cmd == "fluid" ? integrate_fluid(s, fo) : simulate_packets(s, seed, &st);
    std::ofstream file;
    if (!out_path.empty()) {
        file.open(out_path);
        if (!file) die("cannot write " + out_path);
    }
    std::ostream& out = out_path.empty() ? std::cout : file;
    out << "# simnic-dcqcn-fluid " << cmd << ": " << s.flows << " flows, " << s.bottleneck_bps * 1e-9
        << " Gb/s bottleneck, tau* " << loop_delay_s(s) * 1e6 << " us\n";
    if (cmd == "packet")
        out << "# packets " << st.packets << ", marked " << st.marked << ", CNPs " << st.cnps << ", max queue "
            << st.max_queue_bytes << " bytes\n";
    write_csv(out, ser);
    return 0;
}
