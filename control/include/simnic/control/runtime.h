// Where the daemon keeps its socket, lock and state, and how a client
// reaches it.
//
// Runtime directory: $SIMNIC_RUNTIME_DIR, else $XDG_RUNTIME_DIR/simnic, else
// /run/simnic. It holds
//   simnicd.sock   the control socket (SOCK_SEQPACKET: one message per request)
//   simnicd.lock   flock()ed by the live daemon; a socket without a locked
//                  lock file is stale
//   simnicd.state  the live daemon's pid and devices, so that a client can
//                  tell the user what was lost when a daemon died
#pragma once

#include <string>

namespace simnic::control {

struct RuntimePaths {
    std::string dir;
    std::string socket;
    std::string lock;
    std::string state;
};

// Resolves the runtime directory from the environment (does not create it).
RuntimePaths runtime_paths();

// Creates the directory (mode 0700) if missing. Returns an error message, or
// empty on success.
std::string ensure_runtime_dir(const RuntimePaths& p);

// True if a live daemon holds the lock file.
bool daemon_lock_held(const RuntimePaths& p);

}  // namespace simnic::control
