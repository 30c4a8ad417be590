// The simnic daemon: hosts devices, one per netdev binding, and serves the
// control socket. A device lives here the way a NIC lives in a host, so that
// every process that opens it shares one device.
#pragma once

#include <string>

namespace simnic::daemon {

struct DaemonOptions {
    bool foreground = false;  // stay attached to the terminal and log to stderr
};

// Runs the daemon until a shutdown request or SIGTERM/SIGINT. Returns the
// process exit status. `ready_fd`, if >= 0, gets one byte written once the
// socket accepts connections (how `simnic` waits for a daemon it started).
int run_daemon(const DaemonOptions& opt, int ready_fd);

}  // namespace simnic::daemon
