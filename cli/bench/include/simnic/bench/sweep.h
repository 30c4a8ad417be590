// `simnic bench --sweep`: the table and the plot of a sweep's results.
//
// Every measured figure of a run is a column: the bench's own (gbps,
// latency_median_ns, qpc_hit_pct, ...; bench_columns() lists them with
// their units) and every pipeline statistic by its name as `simnic bench -s`
// prints it (block.requester.utilisation, stage.parser.p99, ...). The CSV
// has them all; the plot shows the columns asked for on either y axis
// against the swept parameter: numbers on a linear or log axis (0
// included), other values (op=write,read) as named positions.
#pragma once

#include <string>
#include <vector>

#include "simnic/bench/bench.h"
#include "simnic/model/plot.h"

namespace simnic::model {

struct Column {
    std::string name, unit;
    double value = 0;
};
// The bench's own figures of a run, then every pipeline statistic.
std::vector<Column> bench_columns(const BenchResult& r);

struct SweepPoint {
    std::string value;   // of the swept parameter
    std::string series;  // of the --series parameter ("" without one)
    BenchResult r;
};

// The CSV's header and rows: the parameter, the series, then every column
// any point has (the union, in first-seen order; a point without one leaves
// it empty).
struct SweepTable {
    std::vector<std::string> header;
    std::vector<std::vector<std::string>> rows;
};
SweepTable sweep_table(const std::string& param, const std::string& series_param, const std::vector<SweepPoint>& pts);

struct SweepPlotSpec {
    std::string title, param, series_param;
    std::vector<std::string> values, series_values;  // as swept, in order
    std::vector<std::string> y, y2;                  // columns on the left and right axes (y2 may be empty)
};
// The plot of `pts`; false and `err` (naming the columns there are) if a
// column asked for is not measured.
bool sweep_plot(const SweepPlotSpec& s, const std::vector<SweepPoint>& pts, PlotSpec& out, std::string& err);

}  // namespace simnic::model
