#include "kept.h"

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
    bool kept = false;
    if (std::string e = control::forget_request(add_op, name, kept); !e.empty()) {
        std::fprintf(stderr, "simnic: cannot forget the kept %s %s: %s\n", what, name.c_str(), e.c_str());
        return 1;
    }
    control::Json reply;
    const CallResult r = call_daemon(del, false, reply);
    if (r == CallResult::Ok) return 0;
    if (kept) {
        // Not running (a daemon could not create it again, or none runs): forgetting it was the work.
        std::fprintf(stderr, "simnic: forgot the kept %s %s (it was not running)\n", what, name.c_str());
        return 0;
    }
    if (r == CallResult::NoDaemon) std::fprintf(stderr, "simnic: %s\n", no_daemon.c_str());
    return 1;
}

}  // namespace simnic::cli
