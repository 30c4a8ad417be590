// One's own parser (parser.rtl_sources, parser.rtl_top): the parser stage's
// part of building it at run time (own_rtl.h does the building).
#pragma once

#include <memory>

#include "own_rtl.h"
#include "roce_parser_rtl.h"

namespace simnic::rtl {

// The parser stage as own_rtl.h takes it: its ports at DataWidth 512 (a
// design built at the device's width: own_rtl_at_width),
// simnic's packages first, roce_parser.sv findable (the examples build on
// it), the shim roce_parser_own_shim.cc and the driver it compiles.
OwnRtlStage own_parser_stage();

// The driver of one's own parser, from its shared object.
std::unique_ptr<RoceParserRtl::Impl> load_own_parser(const OwnRtl& own, OwnRtlBuildInfo* info);

}  // namespace simnic::rtl
