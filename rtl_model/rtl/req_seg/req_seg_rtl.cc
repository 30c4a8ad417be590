#include "req_seg_rtl.h"

#include "Vroce_req_seg.h"
#include "Vroce_req_seg___024root.h"
#include "own_req_seg.h"
#include "req_seg_driver.h"

namespace simnic::rtl {

ReqSegRtl::ReqSegRtl() : impl_(std::make_unique<ReqSegDriver<Vroce_req_seg, true>>()) {}
ReqSegRtl::ReqSegRtl(const OwnRtl& own, OwnRtlBuildInfo* info) : impl_(load_own_req_seg(own, info)) {}
ReqSegRtl::~ReqSegRtl() = default;

ReqSegResult ReqSegRtl::run(const transport::SegWqe& w) { return impl_->run(w); }
uint64_t ReqSegRtl::cycles() const { return impl_->cycles(); }

}  // namespace simnic::rtl
