// Compiled at run time with one's own ICRC engine's Verilated model
// (own_rtl.cc): the same driver as the built-in engine's, behind a factory
// the model finds by name. SIMNIC_VTOP is the model's class (V<top>).
#include SIMNIC_VTOP_HEADER

#include "icrc_engine_driver.h"

extern "C" __attribute__((visibility("default"))) simnic::rtl::IcrcEngineRtl::Impl* simnic_own_icrc_create() {
    return new simnic::rtl::IcrcEngineDriver<SIMNIC_VTOP>();
}
