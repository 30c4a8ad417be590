// Helpers shared by the bench's tests.
#pragma once

#include <catch2/catch.hpp>

#include <string>

#include "simnic/bench/bench.h"

namespace simnic::model::bench_checks {

// A run of `s` that must succeed: every one of its messages completed, none
// in error.
inline BenchResult run_ok(const BenchSpec& s) {
    BenchResult r;
    std::string err;
    const bool ok = run_bench(s, r, err);
    INFO(err);
    REQUIRE(ok);
    REQUIRE(r.errors == 0);
    REQUIRE(r.messages == s.messages);
    return r;
}

// A statistic of the run, or `missing` when the run does not list it (the
// per-purpose byte counts, for one, are listed only when not 0).
inline double stat_or(const BenchResult& r, const std::string& name, double missing) {
    for (const ModelStat& s : r.stats)
        if (s.name == name) return s.value;
    return missing;
}

}  // namespace simnic::model::bench_checks
