// One's own RTL for a stage, named at run time (a device's config: e.g.
// parser.rtl_sources, parser.rtl_top): its ports checked against the
// stage's interface, verilated and compiled with the stage's driver into a
// shared object, cached by content, and loaded (docs/model.md, Your own
// RTL). Needs Verilator and a C++ compiler when the design is not cached.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "rtl_ports.h"

namespace simnic::rtl {

// A designer's block: its SystemVerilog files, in compile order, its top
// module, and the DataWidth to build it at: the device's datapath,
// mac.width_bytes * 8 (0: the stage's own, OwnRtlStage::data_width, 512).
// The stage's driver is compiled with the design and takes its beat from
// the Verilated model's data port, so a design built at 256 moves 32 bytes
// a cycle. A stage without a datapath (the requester's segmentation)
// refuses a width.
struct OwnRtl {
    std::vector<std::string> sources;
    std::string top;
    uint32_t data_width = 0;
};

// What building or loading one did.
struct OwnRtlBuildInfo {
    bool cache_hit = false;  // the shared object was there: nothing was run
    std::string dir;         // its folder in the cache
};

// Every problem found (missing files, each port difference, Verilator's
// or the compiler's output), one line each after the first.
struct OwnRtlError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// What a stage brings to building one's own RTL for it.
struct OwnRtlStage {
    std::string block;             // "parser": the config's table, in messages
    std::vector<PortSpec> ports;   // the interface
    uint32_t data_width = 0;       // DataWidth the design is built with (-G) unless OwnRtl names one; 0: the stage has none
    std::vector<std::string> prelude;   // simnic's packages, compiled before the sources
    std::vector<std::string> lib_dirs;  // searched for modules the sources use (-y)
    std::string shim;              // C++ compiled with the model: defines `entry`
    std::vector<std::string> include_dirs;  // for the shim
    std::vector<std::string> abi_files;     // the wrapper code the shim compiles: in the cache key
    std::string abi_id;            // the build's own wrapper ABI id: in the cache key
    std::string entry;             // the shim's factory, extern "C"
};

// The stage's factory from the design's shared object (cached or built
// now). Throws OwnRtlError.
void* load_own_rtl(const OwnRtlStage& stage, const OwnRtl& own, OwnRtlBuildInfo* info = nullptr);

// `stage` at the DataWidth `own` is built at (OwnRtl::data_width, else the
// stage's). Throws OwnRtlError for a width the stage cannot take: one for a
// stage without a datapath, or not a power of two from 64 to 2048 bits.
OwnRtlStage own_rtl_at_width(const OwnRtlStage& stage, const OwnRtl& own);

// Only the port check (a Verilator --xml-only pass): every difference, or
// nothing. Throws OwnRtlError for missing files or a design Verilator
// rejects.
std::vector<std::string> check_own_rtl_ports(const OwnRtlStage& stage, const OwnRtl& own);

// Verilator runs this process has made (the cache's test reads it).
uint64_t verilator_runs();

// Where built designs are kept: $XDG_CACHE_HOME/simnic/rtl, else
// ~/.cache/simnic/rtl.
std::string own_rtl_cache_dir();

}  // namespace simnic::rtl
