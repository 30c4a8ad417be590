#include "kept.h"

#include <cerrno>
#include <cstdio>

#include "daemon_call.h"
#include "simnic/control/persisted.h"

namespace simnic::cli {

int keep_created(const char* what, const control::Json& req) {
    if (std::string e = control::persist_request(req); !e.empty()) {
        std::fprintf(stderr, "simnic: %s %s created, but not kept: %s\n", what, req.value("name", "").c_str(),
                     e.c_str());
        return 1;
    }
    return 0;
}

int delete_kept(const char* what, const std::string& add_op, const control::Json& del, const std::string& no_daemon) {
    const std::string name = del.value("name", "");
    control::Json reply;
    const CallResult r = call_daemon(del, false, reply);
    // Forgotten once it does not run: deleted now, no daemon, or none of
    // that name in the daemon (a kept one that could not be made again).
    // One the daemon keeps (in use) stays kept, as it stays running.
    if (r == CallResult::Failed && reply.value("errno", 0) != ENODEV) return 1;
    bool kept = false;
    if (std::string e = control::forget_request(add_op, name, kept); !e.empty()) {
        std::fprintf(stderr, "simnic: cannot forget the kept %s %s: %s\n", what, name.c_str(), e.c_str());
        return 1;
    }
    if (r == CallResult::Ok) return 0;
    if (kept) {
        std::fprintf(stderr, "simnic: forgot the kept %s %s (it was not running)\n", what, name.c_str());
        return 0;
    }
    if (r == CallResult::NoDaemon) std::fprintf(stderr, "simnic: %s\n", no_daemon.c_str());
    return 1;
}

}  // namespace simnic::cli
