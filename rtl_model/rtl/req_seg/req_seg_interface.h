// The requester segmentation stage's RTL interface: every port of
// roce_req_seg, in order. The one place it is written: the port checker of
// one's own design reads it and docs/model.md's table is ports_markdown() of
// it (a test keeps them equal).
#pragma once

#include <vector>

#include "rtl_ports.h"

namespace simnic::rtl {

const std::vector<PortSpec>& req_seg_ports();

}  // namespace simnic::rtl
