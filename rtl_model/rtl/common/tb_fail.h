// How the standalone RTL testbenches (tb_roce_parser, tb_icrc_engine) report
// a failure: the message, the offending frame as a hex dump, exit status 1.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace simnic::tb {

inline void print_frame(const char* what, const std::vector<uint8_t>& f) {
    std::fprintf(stderr, "%s (%zu bytes):\n", what, f.size());
    for (size_t i = 0; i < f.size(); i += 16) {
        std::fprintf(stderr, "  %04zx:", i);
        for (size_t j = i; j < std::min(f.size(), i + 16); ++j) std::fprintf(stderr, " %02x", f[j]);
        std::fprintf(stderr, "\n");
    }
}

[[noreturn]] inline void fail(const std::string& msg, const std::vector<uint8_t>* frame = nullptr) {
    std::fprintf(stderr, "FAIL: %s\n", msg.c_str());
    if (frame) print_frame("frame", *frame);
    std::exit(1);
}

}  // namespace simnic::tb
