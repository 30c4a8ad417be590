#include "own_icrc.h"

#include "icrc_engine_driver.h"
#include "icrc_engine_interface.h"

namespace simnic::rtl {

OwnRtlStage own_icrc_stage() {
    const std::string dir = SIMNIC_ICRC_SRC_DIR, common = SIMNIC_RTL_COMMON_DIR;
    OwnRtlStage s;
    s.block = "icrc";
    s.ports = icrc_engine_ports();
    s.data_width = IcrcEngineRtl::kBeatBytes * 8;
    s.prelude = {dir + "/icrc_pkg.sv"};
    s.lib_dirs = {dir};
    s.shim = dir + "/icrc_engine_own_shim.cc";
    s.include_dirs = {dir, common};
    s.abi_files = {dir + "/icrc_engine_driver.h", dir + "/icrc_engine_rtl.h", common + "/axis_top.h",
                   common + "/verilated_block.h"};
    s.abi_id = SIMNIC_ICRC_ABI_ID;
    s.entry = "simnic_own_icrc_create";
    return s;
}

std::unique_ptr<IcrcEngineRtl::Impl> load_own_icrc(const OwnRtl& own, OwnRtlBuildInfo* info) {
    using Create = IcrcEngineRtl::Impl* (*)();
    auto create = reinterpret_cast<Create>(load_own_rtl(own_icrc_stage(), own, info));
    return std::unique_ptr<IcrcEngineRtl::Impl>(create());
}

}  // namespace simnic::rtl
