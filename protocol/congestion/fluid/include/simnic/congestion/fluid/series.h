// Per-flow rates (and the bottleneck queue) over time, the common output of
// the fluid model, the packet-level model and (exported) a fabric run; its
// CSV form; and the comparison of two of them.
//
// CSV (docs/model.md, "The fluid model"): lines starting with '#' are
// comments; the first other line is the header
//
//     t_us,rate_gbps_0,rate_gbps_1,...,rate_gbps_<N-1>[,queue_bytes]
//
// and each further line one sample: the time in microseconds (increasing),
// each flow's rate in Gb/s over the interval that ends at t (from the
// previous sample's t; for the fluid model, its value at t), and optionally
// the bottleneck queue's depth in bytes at t.
#pragma once

#include <cstddef>
#include <iosfwd>
#include <string>
#include <vector>

namespace simnic::congestion::fluid {

struct Series {
    std::vector<double> t_s;                    // sample times, seconds
    std::vector<std::vector<double>> rate_bps;  // [flow][sample]
    std::vector<double> queue_bytes;            // [sample]; empty if not known

    std::size_t flows() const { return rate_bps.size(); }
    std::size_t samples() const { return t_s.size(); }
};

void write_csv(std::ostream& out, const Series& s);
// False with `err` set (line number and what is wrong) on bad input.
bool read_csv(std::istream& in, Series& s, std::string& err);

// The time-weighted mean of flow f's rate over [t0, t1): each sample's
// value holds over the interval that ends at its time. NaN if no sample
// covers any of it.
double mean_rate(const Series& s, std::size_t flow, double t0, double t1);
// The same for the queue (NaN if the series has none).
double mean_queue(const Series& s, double t0, double t1);
double max_queue(const Series& s, double t0, double t1);

// The first time from which every flow's mean over each window of
// `window_s` stays within `tolerance` (a fraction) of `fair_bps`, up to the
// series' end; NaN if never.
double convergence_time(const Series& s, double fair_bps, double window_s, double tolerance);

// One flow: the mean of the flows' rates at each sample (the aggregate over
// N), the queue kept. The fluid model's flows, started alike, stay alike
// for ever; a packet-level run's part ways at the first CNPs (which flow's
// packet is marked first is chance) and meet again only slowly, so the
// model's prediction for such a run is this mean (docs/model.md).
Series mean_of_flows(const Series& s);
// Sample by sample the mean of several runs of one scenario (other seeds):
// the expectation the fluid model, a mean-field model, describes. The runs
// must have the same flows and sample times; false with `err` otherwise.
bool ensemble_mean(const std::vector<Series>& runs, Series& mean, std::string& err);

// How a measured series agrees with a reference (the fluid model): per
// flow, the mean rate over consecutive windows of `window_s` from
// `from_s` to the end of both; for each window and flow the relative error
// |measured - reference| / reference, or with `scale_bps` > 0
// |measured - reference| / scale_bps. The second is for a transient that
// passes near zero: an 8:1 incast cuts every flow to a few hundred Mb/s,
// where 0.5 Gb/s apart is a relative error of 2 and 4% of the fair share,
// which is the scale an operator reads a convergence plot in.
struct Agreement {
    std::size_t windows = 0;
    double max_error = 0;   // the largest error of any window and flow
    double mean_error = 0;  // their mean
    double worst_t_s = 0;   // where the largest is (window start)
    std::size_t worst_flow = 0;
    std::string error;      // not empty: the two could not be compared, and why
};
Agreement compare(const Series& reference, const Series& measured, double from_s, double window_s,
                  double scale_bps = 0);

}  // namespace simnic::congestion::fluid
