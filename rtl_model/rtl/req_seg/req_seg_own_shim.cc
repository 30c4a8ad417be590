// Compiled at run time with one's own segmentation block's Verilated model
// (own_rtl.cc): the same driver as the built-in design's, behind a factory
// the model finds by name. SIMNIC_VTOP is the model's class (V<top>).
#include SIMNIC_VTOP_HEADER

#include "req_seg_driver.h"

extern "C" __attribute__((visibility("default"))) simnic::rtl::ReqSegRtl::Impl* simnic_own_req_seg_create() {
    return new simnic::rtl::ReqSegDriver<SIMNIC_VTOP>();
}
