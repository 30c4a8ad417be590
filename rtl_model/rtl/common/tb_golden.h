// The golden captures (testbench/golden/<kernel>/mtu*/*.pcap and .pcapng) as
// the RTL testbenches read them: every record, in the order of the sorted
// paths, every reference kernel's.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "simnic/roce/pcap_io.h"
#include "tb_fail.h"

namespace simnic::tb {

// Calls fn(path, k, frame) for record k of each capture under `golden_dir`
// (at any depth); fails (tb_fail.h) on a capture that cannot be read or is
// not Ethernet. Returns the number of captures.
template <typename Fn> size_t for_each_golden_frame(const std::string& golden_dir, Fn&& fn) {
    std::vector<std::filesystem::path> paths;
    for (const auto& e : std::filesystem::recursive_directory_iterator(golden_dir)) {
        const std::string ext = e.path().extension().string();
        if (e.is_regular_file() && (ext == ".pcap" || ext == ".pcapng")) paths.push_back(e.path());
    }
    std::sort(paths.begin(), paths.end());
    for (const auto& path : paths) {
        std::string err;
        auto rd = roce::PcapReader::open(path.string(), err);
        if (!rd) fail("cannot open " + path.string() + ": " + err);
        if (rd->linktype() != 1) fail(path.string() + ": not an Ethernet capture");
        roce::PcapRecord rec;
        for (size_t k = 0; rd->next(rec); ++k) fn(path, k, rec.data);
        if (!rd->error().empty()) fail(path.string() + ": " + rd->error());
    }
    return paths.size();
}

// A capture's name for reports: its path under `golden_dir` ("6.1/mtu1024/rping.pcap").
inline std::string golden_name(const std::string& golden_dir, const std::filesystem::path& path) {
    return std::filesystem::relative(path, golden_dir).string();
}

}  // namespace simnic::tb
