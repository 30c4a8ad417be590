// One's own TX header builder (tx_build.rtl_sources, tx_build.rtl_top): the
// TX build stage's part of building it at run time (own_rtl.h does the
// building).
#pragma once

#include <memory>

#include "own_rtl.h"
#include "tx_build_rtl.h"

namespace simnic::rtl {

// The TX build stage as own_rtl.h takes it: its ports at DataWidth 512 (a
// design built at the device's width: own_rtl_at_width),
// roce_parser_gen_pkg (the opcode table) first, roce_tx_build.sv findable
// (the examples build on it), the shim tx_build_own_shim.cc and the driver
// it compiles.
OwnRtlStage own_tx_build_stage();

// The driver of one's own design, from its shared object.
std::unique_ptr<TxBuildRtl::Impl> load_own_tx_build(const OwnRtl& own, OwnRtlBuildInfo* info);

}  // namespace simnic::rtl
