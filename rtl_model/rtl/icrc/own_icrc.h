// One's own ICRC engine (icrc.rtl_sources, icrc.rtl_top): the stage's part
// of building it at run time (own_rtl.h does the building).
#pragma once

#include <memory>

#include "icrc_engine_rtl.h"
#include "own_rtl.h"

namespace simnic::rtl {

// The ICRC engine stage as own_rtl.h takes it: its ports at DataWidth 512
// (a design built at the device's width: own_rtl_at_width),
// icrc_pkg first, the engine's own modules findable, the shim
// icrc_engine_own_shim.cc and the driver it compiles.
OwnRtlStage own_icrc_stage();

// The driver of one's own engine, from its shared object.
std::unique_ptr<IcrcEngineRtl::Impl> load_own_icrc(const OwnRtl& own, OwnRtlBuildInfo* info);

}  // namespace simnic::rtl
