// `simnic exec -- CMD ARGS...`: run CMD with simnic devices visible to it.
//
// It sets, then execs CMD:
//   LD_PRELOAD          the simnic verbs provider (libsimnic-verbs.so) in
//                       front of whatever LD_PRELOAD already held;
//   SIMNIC_RUNTIME_DIR  the daemon's runtime directory, so that CMD finds the
//                       same daemon whatever its own XDG_RUNTIME_DIR is.
// Users can export both themselves instead (`simnic exec --print-env`).
//
// Before CMD starts, simnic exec checks that a daemon runs, and that a
// device CMD names with -d / --ib-dev (the rdma-core and perftest tools'
// option) is one of its devices or a real one; otherwise it says which and
// exits 1 without running CMD (--no-check runs it regardless). A daemon with
// no devices is no error: `ibstat -l` then lists none.
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "commands.h"
#include "daemon_call.h"
#include "simnic/control/runtime.h"

namespace simnic::cli {
namespace {

struct ExecArgs {
    std::vector<std::string> cmd;
    bool print_env = false;
    bool no_check = false;
};

std::string self_dir() {
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) return ".";
    exe[n] = 0;
    std::string s(exe);
    return s.substr(0, s.rfind('/'));
}

// The provider library: $SIMNIC_VERBS_LIB, else next to an installed simnic
// (PREFIX/lib/simnic/), else in the build tree.
std::string provider_path() {
    if (const char* p = std::getenv("SIMNIC_VERBS_LIB"); p && *p) return p;
    const std::string dir = self_dir();
    for (const std::string& cand : {dir + "/../lib/simnic/libsimnic-verbs.so",
                                    dir + "/../verbs_provider/libsimnic-verbs.so"})
        if (access(cand.c_str(), R_OK) == 0) {
            char real[4096];
            return realpath(cand.c_str(), real) ? std::string(real) : cand;
        }
    return {};
}

// The device an rdma-core or perftest tool is told to use (-d NAME, -dNAME,
// --ib-dev NAME, --ib-dev=NAME), or empty. Only for those tools: elsewhere
// -d means other things (rping's is "debug").
std::string named_device(const std::vector<std::string>& cmd) {
    if (cmd.empty()) return {};
    const std::string tool = cmd[0].substr(cmd[0].rfind('/') + 1);
    if (tool.rfind("ibv_", 0) != 0 && tool.rfind("ib_", 0) != 0) return {};
    for (size_t i = 1; i < cmd.size(); ++i) {
        const std::string& w = cmd[i];
        if ((w == "-d" || w == "--ib-dev") && i + 1 < cmd.size()) return cmd[i + 1];
        if (w.rfind("--ib-dev=", 0) == 0) return w.substr(9);
        if (w.size() > 2 && w.rfind("-d", 0) == 0 && w[2] != '-') return w.substr(2);
    }
    return {};
}

// 0 if CMD may start: a daemon runs, and the device CMD names (if any) is
// there. Otherwise says why (exit status 1).
int preflight(const ExecArgs& a) {
    const control::RuntimePaths paths = control::runtime_paths();
    if (!paths.error.empty()) {
        std::fprintf(stderr, "simnic exec: %s\n", paths.error.c_str());
        return 1;
    }
    control::Json reply;
    switch (call_daemon(control::Json{{"op", "link_show"}}, false, reply)) {
        case CallResult::Ok: break;
        case CallResult::Failed: return 1;
        case CallResult::NoDaemon:
            std::fprintf(stderr,
                         "simnic exec: no simnic daemon is running (runtime directory %s), so there is no simnic "
                         "device; `simnic link add NAME type soft netdev IFACE` starts one (%s not started)\n",
                         paths.dir.c_str(), a.cmd[0].c_str());
            return 1;
    }
    std::vector<std::string> names;
    if (reply.contains("links") && reply["links"].is_array())
        for (const control::Json& l : reply["links"])
            if (l.is_object() && l.contains("ifname") && l["ifname"].is_string())
                names.push_back(l["ifname"].get<std::string>());
    const std::string dev = named_device(a.cmd);
    if (!dev.empty() && std::find(names.begin(), names.end(), dev) == names.end() &&
        access(("/sys/class/infiniband/" + dev).c_str(), F_OK) != 0) {
        std::string list;
        for (const std::string& n : names) list += (list.empty() ? "" : ", ") + n;
        if (list.empty()) list = "none";
        std::fprintf(stderr,
                     "simnic exec: %s names device %s, which does not exist (simnic devices: %s); not started\n",
                     a.cmd[0].c_str(), dev.c_str(), list.c_str());
        return 1;
    }
    return 0;
}

int run_exec(const ExecArgs& a) {
    const std::string lib = provider_path();
    if (lib.empty()) {
        std::fprintf(stderr, "simnic exec: cannot find libsimnic-verbs.so (set SIMNIC_VERBS_LIB)\n");
        return 127;
    }
    std::string preload = lib;
    if (const char* old = std::getenv("LD_PRELOAD"); old && *old) preload += std::string(":") + old;
    const std::string runtime = control::runtime_paths().dir;
    if (a.print_env) {
        std::printf("export LD_PRELOAD=%s\nexport SIMNIC_RUNTIME_DIR=%s\n", preload.c_str(), runtime.c_str());
        return 0;
    }
    if (a.cmd.empty()) {
        std::fprintf(stderr, "usage: simnic exec -- CMD [ARGS...]\n");
        return 2;
    }
    if (!a.no_check)
        if (const int rc = preflight(a); rc != 0) return rc;
    setenv("LD_PRELOAD", preload.c_str(), 1);
    setenv("SIMNIC_RUNTIME_DIR", runtime.c_str(), 1);
    std::vector<char*> argv;
    for (const std::string& s : a.cmd) argv.push_back(const_cast<char*>(s.c_str()));
    argv.push_back(nullptr);
    execvp(argv[0], argv.data());
    std::fprintf(stderr, "simnic exec: %s: %s\n", argv[0], std::strerror(errno));
    return errno == ENOENT ? 127 : 126;
}

// CMD's words, taken from argv before CLI11 parses it (take_exec_command).
std::vector<std::string>& exec_cmd() {
    static std::vector<std::string> cmd;
    return cmd;
}

}  // namespace

int take_exec_command(int argc, char** argv) {
    // CLI11 (2.1) would unbracket and split CMD's words ("[a,b]" becomes a
    // and b: its syntax for a list) and move CMD's own options out of order,
    // so it never sees them: CMD starts after "--", or at the first word that
    // is not one of exec's options; from there on every word is CMD's, byte
    // for byte.
    if (argc < 2 || std::strcmp(argv[1], "exec") != 0) return argc;
    for (int i = 2; i < argc; ++i) {
        const bool dashdash = std::strcmp(argv[i], "--") == 0;
        if (!dashdash && argv[i][0] == '-') continue;  // exec's own option (or one CLI11 refuses)
        exec_cmd().assign(argv + i + (dashdash ? 1 : 0), argv + argc);
        return i;
    }
    return argc;
}

Runner add_exec_command(CLI::App& app) {
    auto args = std::make_shared<ExecArgs>();
    CLI::App* sub = app.add_subcommand("exec", "Run a command with simnic devices visible to it (simnic exec -- CMD ARGS...)");
    sub->add_flag("--print-env", args->print_env, "print the environment simnic exec sets, as shell exports");
    sub->add_flag("--no-check", args->no_check,
                  "run CMD even if no daemon runs or the device it names (-d) is not there");
    // For the help only: take_exec_command keeps CMD's words from CLI11.
    sub->add_option("cmd", args->cmd, "the command and its arguments");
    return [args] {
        args->cmd = exec_cmd();
        return run_exec(*args);
    };
}

}  // namespace simnic::cli
