// Compiled at run time with one's own parser's Verilated model
// (own_rtl.cc): the same driver as the built-in designs', behind a factory
// the model finds by name. SIMNIC_VTOP is the model's class (V<top>).
#include SIMNIC_VTOP_HEADER

#include "roce_parser_driver.h"

extern "C" __attribute__((visibility("default"))) simnic::rtl::RoceParserRtl::Impl* simnic_own_parser_create() {
    return new simnic::rtl::RoceParserDriver<SIMNIC_VTOP>();
}
