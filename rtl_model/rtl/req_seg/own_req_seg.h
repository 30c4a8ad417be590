// One's own requester segmentation (req_seg.rtl_sources, req_seg.rtl_top):
// the stage's part of building it at run time (own_rtl.h does the
// building).
#pragma once

#include <memory>

#include "own_rtl.h"
#include "req_seg_rtl.h"

namespace simnic::rtl {

// The segmentation stage as own_rtl.h takes it: its ports (no DataWidth),
// roce_parser_gen_pkg (the opcode table) first, roce_req_seg.sv findable
// (the examples build on it), the shim req_seg_own_shim.cc and the driver it
// compiles.
OwnRtlStage own_req_seg_stage();

// The driver of one's own design, from its shared object.
std::unique_ptr<ReqSegRtl::Impl> load_own_req_seg(const OwnRtl& own, OwnRtlBuildInfo* info);

}  // namespace simnic::rtl
