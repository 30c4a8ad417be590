// The switch's configuration: its defaults and what validation refuses.
#include <catch2/catch.hpp>

#include <string>

#include "simnic/model/fabric/switch_config.h"

using namespace simnic::model::fabric;

TEST_CASE("switch config: the defaults are valid and lossless RoCE on priority 3", "[model][switch]") {
    const SwitchConfig c;
    std::string err;
    CHECK(validate_switch_config(c, err));
    CHECK(err.empty());
    CHECK(c.ports.size() == 4);
    CHECK(c.dscp_to_priority[26] == 3);
    CHECK(c.dscp_to_priority[48] == 6);
    for (unsigned i = 0; i < kPriorities; ++i) {
        CHECK(c.priority[i].pfc == (i == 3));
        CHECK(c.priority[i].ecn == (i == 3));
    }
    CHECK(c.priority[3].kmax_bytes < c.priority[3].xoff_bytes);  // ECN before PFC
    CHECK(c.shared_bytes() == c.buffer_bytes - 4 * c.priority[3].headroom_bytes);
    CHECK(c.frame_time_ps(0, 1098) == 89'440);
    CHECK(c.frame_time_ps(0, 60) == 6'400);
}

TEST_CASE("switch config: validation lists every problem", "[model][switch]") {
    SwitchConfig c;
    c.priority[3].kmin_bytes = c.priority[3].kmax_bytes + 1;
    c.priority[3].pmax = 1.5;
    c.priority[3].xon_bytes = c.priority[3].xoff_bytes + 1;
    c.dscp_to_priority[5] = 8;
    c.fdb.push_back({{2, 0, 0, 0, 0, 1}, 4});
    c.fdb.push_back({{2, 0, 0, 0, 0, 1}, 0});
    c.ports[2].line_rate_bps = 0;
    std::string err;
    CHECK_FALSE(validate_switch_config(c, err));
    for (const char* what : {"kmin_bytes above kmax_bytes", "pmax 1.5", "xon_bytes above xoff_bytes",
                             "dscp_to_priority[5]", "route to port 4", "listed twice", "port 2: line_rate_bps"}) {
        INFO(what);
        CHECK(err.find(what) != std::string::npos);
    }

    SwitchConfig h;
    h.buffer_bytes = 4 * h.priority[3].headroom_bytes;  // all headroom, nothing shared
    CHECK_FALSE(validate_switch_config(h, err));
    CHECK(err.find("leaves no shared buffer") != std::string::npos);
    SwitchConfig none;
    none.ports.clear();
    CHECK_FALSE(validate_switch_config(none, err));
}
