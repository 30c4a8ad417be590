#include "simnic/control/runtime.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace simnic::control {

RuntimePaths runtime_paths() {
    RuntimePaths p;
    if (const char* d = std::getenv("SIMNIC_RUNTIME_DIR"); d && *d) {
        p.dir = d;
    } else if (const char* x = std::getenv("XDG_RUNTIME_DIR"); x && *x) {
        p.dir = std::string(x) + "/simnic";
    } else if (geteuid() == 0) {
        p.dir = "/run/simnic";
    } else {
        // Without a session's runtime directory, a private one of our own
        // in the temporary directory, named by uid (tmux's rule).
        const char* t = std::getenv("TMPDIR");
        const std::string tmp = t && t[0] == '/' ? t : "/tmp";
        p.dir = tmp + "/simnic-" + std::to_string(geteuid());
        p.private_fallback = true;
        p.error = check_private_dir(p.dir, false);
    }
    p.socket = p.dir + "/simnicd.sock";
    p.lock = p.dir + "/simnicd.lock";
    p.state = p.dir + "/simnicd.state";
    return p;
}

std::string check_private_dir(const std::string& dir, bool must_exist) {
    struct stat st {};
    if (lstat(dir.c_str(), &st) != 0) {
        if (errno == ENOENT && !must_exist) return {};
        return "cannot use runtime directory " + dir + ": " + std::strerror(errno);
    }
    const std::string fix = " (remove it, or set SIMNIC_RUNTIME_DIR to a directory of your own)";
    if (S_ISLNK(st.st_mode)) return "runtime directory " + dir + " is a symbolic link; refusing it" + fix;
    if (!S_ISDIR(st.st_mode)) return "runtime directory " + dir + " is not a directory" + fix;
    if (st.st_uid != geteuid())
        return "runtime directory " + dir + " belongs to uid " + std::to_string(st.st_uid) + ", not to you (uid " +
               std::to_string(geteuid()) + "); refusing it" + fix;
    if ((st.st_mode & (S_IRWXG | S_IRWXO)) != 0) {
        char mode[8];
        std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
        return "runtime directory " + dir + " has mode " + mode +
               ": others can reach it; refusing it (chmod 700 it, or set SIMNIC_RUNTIME_DIR)";
    }
    return {};
}

std::string ensure_runtime_dir(const RuntimePaths& p) {
    if (!p.error.empty()) return p.error;
    if (mkdir(p.dir.c_str(), 0700) != 0 && errno != EEXIST)
        return "cannot create runtime directory " + p.dir + ": " + std::strerror(errno) +
               " (set SIMNIC_RUNTIME_DIR to a writable directory)";
    // Whoever made it, it is checked now: mkdir does not follow a symlink
    // someone else planted, but EEXIST does not say whose it is.
    if (p.private_fallback) return check_private_dir(p.dir, true);
    struct stat st {};
    if (stat(p.dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) return {};
    return "runtime directory " + p.dir + " is not a directory";
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
