#include "daemon_call.h"

#include <cstdio>
#include <string>

#include "simnic/control/client.h"

namespace simnic::cli {

CallResult call_daemon(const control::Json& req, bool start, control::Json& reply) {
    std::string err, notice;
    control::Client c = control::Client::connect(control::runtime_paths(), start, err, notice);
    if (!notice.empty()) std::fprintf(stderr, "simnic: note: %s\n", notice.c_str());
    if (!c.connected()) {
        if (!start) return CallResult::NoDaemon;
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
