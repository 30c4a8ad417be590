#include "own_req_seg.h"

#include "req_seg_driver.h"
#include "req_seg_interface.h"

namespace simnic::rtl {

OwnRtlStage own_req_seg_stage() {
    const std::string dir = SIMNIC_REQ_SEG_SRC_DIR, common = SIMNIC_RTL_COMMON_DIR;
    const std::string transport = SIMNIC_TRANSPORT_INCLUDE_DIR;
    OwnRtlStage s;
    s.block = "req_seg";
    s.ports = req_seg_ports();
    s.data_width = 0;
    s.prelude = {SIMNIC_PARSER_GEN_PKG};
    s.lib_dirs = {dir};
    s.shim = dir + "/req_seg_own_shim.cc";
    // segmentation.h includes the hw-spec's and the packet core's headers.
    s.include_dirs = {dir, common, transport, SIMNIC_ROCE_INCLUDE_DIR, SIMNIC_HWSPEC_INCLUDE_DIR};
    // The code the shim compiles and this build holds the other end of.
    s.abi_files = {dir + "/req_seg_driver.h", dir + "/req_seg_rtl.h", common + "/axis_top.h",
                   common + "/verilated_block.h", transport + "/simnic/transport/segmentation.h",
                   std::string(SIMNIC_HWSPEC_INCLUDE_DIR) + "/simnic/hw/verbs.h",
                   std::string(SIMNIC_ROCE_INCLUDE_DIR) + "/simnic/roce/rules.h"};
    s.abi_id = SIMNIC_REQ_SEG_ABI_ID;
    s.entry = "simnic_own_req_seg_create";
    return s;
}

std::unique_ptr<ReqSegRtl::Impl> load_own_req_seg(const OwnRtl& own, OwnRtlBuildInfo* info) {
    using Create = ReqSegRtl::Impl* (*)();
    auto create = reinterpret_cast<Create>(load_own_rtl(own_req_seg_stage(), own, info));
    return std::unique_ptr<ReqSegRtl::Impl>(create());
}

}  // namespace simnic::rtl
