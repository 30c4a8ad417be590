// What the own-RTL tests (test_own_parser, test_own_icrc, test_own_tx_build)
// do with design files: read one, write a variant of it into the test's
// work directory, and change one piece of its text. `replaced` fails the
// test when the piece is not there, so that a variant meant to break a
// design never quietly equals the original.
#pragma once

#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "own_rtl.h"

namespace simnic::rtl::testkit {

inline std::string read(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    std::ostringstream s;
    s << f.rdbuf();
    return s.str();
}

// Writes `text` as `dir`/`name` (making `dir`) and returns the path.
inline std::string write_in(const std::string& dir, const std::string& name, const std::string& text) {
    std::filesystem::create_directories(dir);
    const std::string p = dir + "/" + name;
    std::ofstream(p, std::ios::binary) << text;
    return p;
}

inline std::string replaced(std::string s, const std::string& from, const std::string& to) {
    const size_t p = s.find(from);
    REQUIRE(p != std::string::npos);
    return s.replace(p, from.size(), to);
}

// The error load_own_rtl() throws for `own` as a design of `stage` (empty if
// none), in a cache in the test's work directory `work`.
inline std::string load_error(const OwnRtlStage& stage, const OwnRtl& own, const std::string& work) {
    setenv("XDG_CACHE_HOME", (work + "/cache").c_str(), 1);
    try {
        load_own_rtl(stage, own);
    } catch (const OwnRtlError& e) {
        return e.what();
    }
    return {};
}

}  // namespace simnic::rtl::testkit
