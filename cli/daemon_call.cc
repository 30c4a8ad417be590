#include "daemon_call.h"

#include <cstdio>
#include <string>

#include "simnic/control/client.h"

namespace simnic::cli {

CallResult call_daemon(const control::Json& req, bool start, control::Json& reply) {
    const control::RuntimePaths paths = control::runtime_paths();
    std::string err, notice;
    control::Client c = control::Client::connect(paths, start, err, notice);
    if (!c.connected() && !start && paths.error.empty() && !control::daemon_lock_held(paths)) {
        // Nothing runs: what a dead daemon left goes, once the user is told.
        if (control::forget_dead_daemon(paths) && notice.empty())
            notice = "removed a stale socket left by a simnic daemon that is gone";
        if (!notice.empty()) std::fprintf(stderr, "simnic: note: %s\n", notice.c_str());
        return CallResult::NoDaemon;
    }
    if (!notice.empty()) std::fprintf(stderr, "simnic: note: %s\n", notice.c_str());
    if (!c.connected()) {
        std::fprintf(stderr, "simnic: %s\n", err.c_str());
        return CallResult::Failed;
    }
    reply = c.request(req);
    if (!reply.value("ok", false)) {
        std::fprintf(stderr, "simnic: %s\n", reply.value("error", std::string("request failed")).c_str());
        return CallResult::Failed;
    }
    return CallResult::Ok;
}

}  // namespace simnic::cli
