// Where the daemon keeps its socket, lock and state, and how a client
// reaches it.
//
// Runtime directory: $SIMNIC_RUNTIME_DIR, else $XDG_RUNTIME_DIR/simnic,
// else /run/simnic for root, else a private directory of the user's own,
// ${TMPDIR:-/tmp}/simnic-UID (su - user, cron and many CI containers set no
// XDG_RUNTIME_DIR). The fallback is checked before every use, as tmux and
// ssh-agent check theirs: a directory, not a symlink, owned by the user,
// with no access for group or others; anything else is refused with a
// sentence saying why (RuntimePaths::error). It holds
//   simnicd.sock   the control socket (SOCK_SEQPACKET: one message per request)
//   simnicd.lock   flock()ed by the live daemon; a socket without a locked
//                  lock file is stale
//   simnicd.state  the live daemon's pid, devices and the processes that
//                  have them open, so that a client can tell the user what
//                  was lost when a daemon died
//   simnicd.log    a detached daemon's log
#pragma once

#include <string>

namespace simnic::control {

struct RuntimePaths {
    std::string dir;
    std::string socket;
    std::string lock;
    std::string state;
    // The per-user fallback (${TMPDIR:-/tmp}/simnic-UID): checked as above.
    bool private_fallback = false;
    // Set when the directory must not be used (the fallback failed its
    // checks): why, for the user. Nothing connects or starts then.
    std::string error;
};

// Resolves the runtime directory from the environment (does not create it).
RuntimePaths runtime_paths();

// Creates the directory (mode 0700) if missing, and checks it. Returns an
// error message, or empty on success.
std::string ensure_runtime_dir(const RuntimePaths& p);

// Empty if `dir` is a private directory of this user's (a directory, not a
// symlink, owned by the effective uid, no group or other access), else why
// not. A missing directory is fine unless `must_exist`.
std::string check_private_dir(const std::string& dir, bool must_exist);

// True if a live daemon holds the lock file.
bool daemon_lock_held(const RuntimePaths& p);

}  // namespace simnic::control
