#include "own_parser.h"

#include "roce_parser_driver.h"
#include "roce_parser_interface.h"

namespace simnic::rtl {

OwnRtlStage own_parser_stage() {
    const std::string dir = SIMNIC_PARSER_SRC_DIR, common = SIMNIC_RTL_COMMON_DIR;
    OwnRtlStage s;
    s.block = "parser";
    s.ports = roce_parser_ports();
    s.data_width = RoceParserRtl::kBeatBytes * 8;
    s.prelude = {SIMNIC_PARSER_GEN_PKG, dir + "/roce_parser_pkg.sv"};
    s.lib_dirs = {dir};
    s.shim = dir + "/roce_parser_own_shim.cc";
    s.include_dirs = {dir, common, SIMNIC_ROCE_INCLUDE_DIR};
    // The code the shim compiles and this build holds the other end of.
    s.abi_files = {dir + "/roce_parser_driver.h", dir + "/roce_parser_rtl.h", dir + "/roce_parser_ports.h",
                   common + "/axis_top.h", common + "/verilated_block.h",
                   std::string(SIMNIC_ROCE_INCLUDE_DIR) + "/simnic/roce/header_vector.h",
                   std::string(SIMNIC_ROCE_INCLUDE_DIR) + "/simnic/roce/headers.h",
                   std::string(SIMNIC_ROCE_INCLUDE_DIR) + "/simnic/roce/packet.h",
                   std::string(SIMNIC_ROCE_INCLUDE_DIR) + "/simnic/roce/opcode.h"};
    s.abi_id = SIMNIC_PARSER_ABI_ID;
    s.entry = "simnic_own_parser_create";
    return s;
}

std::unique_ptr<RoceParserRtl::Impl> load_own_parser(const OwnRtl& own, OwnRtlBuildInfo* info) {
    using Create = RoceParserRtl::Impl* (*)();
    const OwnRtlStage stage = own_rtl_at_width(own_parser_stage(), own);
    auto create = reinterpret_cast<Create>(load_own_rtl(stage, own, info));
    std::unique_ptr<RoceParserRtl::Impl> impl(create());
    // The driver took its beat from the Verilated model's port, which the
    // port check held to DataWidth: this only guards the shared object.
    if (impl->beat_bytes() * 8 != stage.data_width)
        throw OwnRtlError(stage.block + ": " + own.top + " was built with " + std::to_string(impl->beat_bytes() * 8) +
                          "-bit beats, not DataWidth " + std::to_string(stage.data_width));
    return impl;
}

}  // namespace simnic::rtl
