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
    const OwnRtlStage stage = own_rtl_at_width(own_icrc_stage(), own);
    auto create = reinterpret_cast<Create>(load_own_rtl(stage, own, info));
    std::unique_ptr<IcrcEngineRtl::Impl> impl(create());
    // The driver took its beat from the Verilated model's port, which the
    // port check held to DataWidth: this only guards the shared object.
    if (impl->beat_bytes() * 8 != stage.data_width)
        throw OwnRtlError(stage.block + ": " + own.top + " was built with " + std::to_string(impl->beat_bytes() * 8) +
                          "-bit beats, not DataWidth " + std::to_string(stage.data_width));
    return impl;
}

}  // namespace simnic::rtl
