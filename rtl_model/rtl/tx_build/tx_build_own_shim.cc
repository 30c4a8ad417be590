// Compiled at run time with one's own TX header builder's Verilated model
// (own_rtl.cc): the same driver as the built-in design's, behind a factory
// the model finds by name. SIMNIC_VTOP is the model's class (V<top>).
#include SIMNIC_VTOP_HEADER

#include "tx_build_driver.h"

extern "C" __attribute__((visibility("default"))) simnic::rtl::TxBuildRtl::Impl* simnic_own_tx_build_create() {
    return new simnic::rtl::TxBuildDriver<SIMNIC_VTOP>();
}
