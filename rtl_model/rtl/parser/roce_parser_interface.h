// The parser stage's RTL interface: every port of roce_parser, in order,
// with its direction, width and meaning. The one place it is written: the
// port checker of one's own parser reads it, docs/model.md's port table is
// ports_markdown() of it (a test keeps them equal), and the template
// (template/my_parser.sv) has exactly these ports (a test checks it).
#pragma once

#include <vector>

#include "rtl_ports.h"

namespace simnic::rtl {

const std::vector<PortSpec>& roce_parser_ports();

}  // namespace simnic::rtl
