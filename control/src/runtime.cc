#include "simnic/control/runtime.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

namespace simnic::control {

RuntimePaths runtime_paths() {
    RuntimePaths p;
    if (const char* d = std::getenv("SIMNIC_RUNTIME_DIR"); d && *d)
        p.dir = d;
    else if (const char* x = std::getenv("XDG_RUNTIME_DIR"); x && *x)
        p.dir = std::string(x) + "/simnic";
    else
        p.dir = "/run/simnic";
    p.socket = p.dir + "/simnicd.sock";
    p.lock = p.dir + "/simnicd.lock";
    p.state = p.dir + "/simnicd.state";
    return p;
}

std::string ensure_runtime_dir(const RuntimePaths& p) {
    if (mkdir(p.dir.c_str(), 0700) == 0 || errno == EEXIST) {
        struct stat st {};
        if (stat(p.dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) return {};
        return "runtime directory " + p.dir + " is not a directory";
    }
    return "cannot create runtime directory " + p.dir + ": " + std::strerror(errno) +
           " (set SIMNIC_RUNTIME_DIR to a writable directory)";
}

bool daemon_lock_held(const RuntimePaths& p) {
    int fd = open(p.lock.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    // A shared lock succeeds only if no daemon holds the exclusive one.
    const bool held = flock(fd, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK;
    close(fd);
    return held;
}

}  // namespace simnic::control
