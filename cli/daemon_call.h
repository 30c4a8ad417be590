// One request from the CLI to the daemon, with the CLI's way of reporting:
// notes and errors on stderr as `simnic: ...`, like `rdma`.
#pragma once

#include "simnic/control/protocol.h"

namespace simnic::cli {

enum class CallResult {
    Ok,        // reply holds the daemon's successful answer
    NoDaemon,  // none runs and `start` was false; nothing printed
    Failed,    // the error was printed
};

// Sends `req`; with `start`, starts a daemon when none runs. A notice about a
// dead daemon or a stale socket is printed whatever the outcome.
CallResult call_daemon(const control::Json& req, bool start, control::Json& reply);

}  // namespace simnic::cli
