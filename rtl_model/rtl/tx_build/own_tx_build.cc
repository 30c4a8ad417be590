#include "own_tx_build.h"

#include "tx_build_driver.h"
#include "tx_build_interface.h"

namespace simnic::rtl {

OwnRtlStage own_tx_build_stage() {
    const std::string dir = SIMNIC_TX_BUILD_SRC_DIR, common = SIMNIC_RTL_COMMON_DIR;
    OwnRtlStage s;
    s.block = "tx_build";
    s.ports = tx_build_ports();
    s.data_width = TxBuildRtl::kBeatBytes * 8;
    s.prelude = {SIMNIC_PARSER_GEN_PKG};
    s.lib_dirs = {dir};
    s.shim = dir + "/tx_build_own_shim.cc";
    s.include_dirs = {dir, common, SIMNIC_ROCE_INCLUDE_DIR};
    // The code the shim compiles and this build holds the other end of.
    s.abi_files = {dir + "/tx_build_driver.h", dir + "/tx_build_rtl.h", common + "/axis_top.h",
                   common + "/verilated_block.h", std::string(SIMNIC_ROCE_INCLUDE_DIR) + "/simnic/roce/headers.h"};
    s.abi_id = SIMNIC_TX_BUILD_ABI_ID;
    s.entry = "simnic_own_tx_build_create";
    return s;
}

std::unique_ptr<TxBuildRtl::Impl> load_own_tx_build(const OwnRtl& own, OwnRtlBuildInfo* info) {
    using Create = TxBuildRtl::Impl* (*)();
    const OwnRtlStage stage = own_rtl_at_width(own_tx_build_stage(), own);
    auto create = reinterpret_cast<Create>(load_own_rtl(stage, own, info));
    std::unique_ptr<TxBuildRtl::Impl> impl(create());
    // The driver took its beat from the Verilated model's port, which the
    // port check held to DataWidth: this only guards the shared object.
    if (impl->beat_bytes() * 8 != stage.data_width)
        throw OwnRtlError(stage.block + ": " + own.top + " was built with " + std::to_string(impl->beat_bytes() * 8) +
                          "-bit beats, not DataWidth " + std::to_string(stage.data_width));
    return impl;
}

}  // namespace simnic::rtl
