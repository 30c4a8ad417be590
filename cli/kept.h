// What `simnic link` and `simnic fabric` share about kept devices and
// fabrics (`persist`, control/persisted.h): written once so that the two
// keep, say and forget alike.
#pragma once

#include <string>

#include "simnic/control/protocol.h"

namespace simnic::cli {

// After the daemon has created `req` (a link_add or fabric_add request):
// keeps it. 0, or 1 with the reason printed (`what`: "device", "fabric").
int keep_created(const char* what, const control::Json& req);

// `delete NAME` of a device or fabric (`del`, the link_del or fabric_del
// request; `add_op`, the op it was kept under): asks the daemon, then
// forgets a kept one unless the daemon refused to delete it (in use): so a
// kept one is forgotten whether it was running or not. `no_daemon` is
// printed when none runs and nothing was kept. The command's exit status.
int delete_kept(const char* what, const std::string& add_op, const control::Json& del, const std::string& no_daemon);

}  // namespace simnic::cli
