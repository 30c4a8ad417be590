// The ICRC engine stage's RTL interface: every port of icrc_engine, in
// order. The one place it is written: the port checker of one's own engine
// reads it and docs/model.md's table is ports_markdown() of it (a test keeps
// them equal).
#pragma once

#include <vector>

#include "rtl_ports.h"

namespace simnic::rtl {

const std::vector<PortSpec>& icrc_engine_ports();

}  // namespace simnic::rtl
