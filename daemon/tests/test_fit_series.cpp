// DaemonFabric::fit: a fabric's series (`simnic fabric rates|depth|dcqcn`)
// widened until its reply fits the connection, the narrowest bins that do.
#include <catch2/catch.hpp>

#include <cstdint>
#include <vector>

#include "simnic/daemon/fabrics.h"

using simnic::control::Json;
using simnic::daemon::DaemonFabric;

namespace {

// A series of 20 ms in bins of at least 10 us (a multiple of them, as a
// record's), one number per bin; `asked` collects the bins asked for.
Json series_of(std::uint64_t bin_us, std::vector<std::uint64_t>& asked) {
    asked.push_back(bin_us);
    const std::uint64_t bin = (bin_us + 9) / 10 * 10, bins = (20'000 + bin - 1) / bin;
    return Json{{"bin_us", bin}, {"bins", bins}, {"values", std::vector<double>(bins, 12.345678)}};
}

}  // namespace

TEST_CASE("fit: a series that fits is taken once, as asked, and a longer one doubles its bins until it fits",
          "[fit]") {
    std::vector<std::uint64_t> asked;
    const auto series = [&](std::uint64_t b) { return series_of(b, asked); };
    const size_t whole = series_of(10, asked).dump().size();
    asked.clear();

    Json s = DaemonFabric::fit(whole, 10, series);
    CHECK(s["bin_us"] == 10);
    CHECK(s["bins"] == 2000);
    CHECK(asked == std::vector<std::uint64_t>{10});

    // A third of the room: 40 us bins (500 numbers) fit, 20 us (1000) do not.
    asked.clear();
    s = DaemonFabric::fit(whole / 3, 10, series);
    CHECK(asked == std::vector<std::uint64_t>{10, 20, 40});
    CHECK(s["bin_us"] == 40);
    CHECK(s.dump().size() <= whole / 3);
    CHECK(series_of(20, asked).dump().size() > whole / 3);

    // A bin asked for that is no multiple of the record's: doubled from
    // what the record gave (30 us, then 60 ...).
    asked.clear();
    s = DaemonFabric::fit(whole / 5, 25, series);
    CHECK(asked.front() == 25);
    CHECK(asked[1] == 60);
    CHECK(s.dump().size() <= whole / 5);
    CHECK(s["bin_us"].get<std::uint64_t>() % 30 == 0);

    // No room at all: it stops at one bin rather than loop.
    asked.clear();
    s = DaemonFabric::fit(1, 10, series);
    CHECK(s["bins"] == 1);
    CHECK(s["bin_us"].get<std::uint64_t>() >= 20'000);
}

TEST_CASE("fit: an empty series (no bins yet) is taken as it is", "[fit]") {
    int calls = 0;
    const Json s = DaemonFabric::fit(0, 10, [&](std::uint64_t) {
        ++calls;
        return Json{{"bin_us", 10}, {"bins", 0}};
    });
    CHECK(calls == 1);
    CHECK(s["bins"] == 0);
}
