#include "own_rtl.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace fs = std::filesystem;

namespace simnic::rtl {

namespace {

std::atomic<uint64_t> g_verilator_runs{0};

std::string env_or(const char* name, const char* fallback) {
    const char* v = std::getenv(name);
    return v && *v ? v : fallback;
}

// The tools: where simnic was built they were found by CMake; the
// environment may point elsewhere.
std::string verilator_bin() { return env_or("SIMNIC_VERILATOR", SIMNIC_VERILATOR_BIN); }
std::string verilator_root() { return env_or("VERILATOR_ROOT", SIMNIC_VERILATOR_ROOT); }
std::string cxx() { return env_or("SIMNIC_CXX", SIMNIC_CXX); }

bool read_file(const std::string& path, std::string& out) {
    std::ifstream f(path, std::ios::binary);
    if (!f) return false;
    std::ostringstream s;
    s << f.rdbuf();
    out = s.str();
    return static_cast<bool>(f) || f.eof();
}

// Two 64-bit FNV-1a hashes with different bases: a 128-bit content key
// (not a defence against an adversary, a cache key).
struct Hash {
    uint64_t a = 0xcbf29ce484222325ull, b = 0x84222325cbf29ce4ull;
    void add(const std::string& s) {
        for (unsigned char c : s) {
            a = (a ^ c) * 0x100000001b3ull;
            b = (b ^ c) * 0x100000001b3ull;
            b ^= b >> 29;
        }
        // A separator, so that ("ab", "c") and ("a", "bc") differ.
        a = (a ^ 0xff) * 0x100000001b3ull;
        b = (b ^ 0xfe) * 0x100000001b3ull;
    }
    std::string hex() const {
        char buf[33];
        std::snprintf(buf, sizeof buf, "%016llx%016llx", static_cast<unsigned long long>(a),
                      static_cast<unsigned long long>(b));
        return buf;
    }
};

// Starts argv with stdout and stderr into `log`; its pid (-1: fork failed).
// Everything the child touches is made before fork(): the process may have
// threads (the daemon), and the child must not allocate.
pid_t spawn(const std::vector<std::string>& argv, const std::string& log) {
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    const pid_t pid = fork();
    if (pid != 0) return pid;
    const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
        dup2(fd, 1);
        dup2(fd, 2);
    }
    execvp(args[0], args.data());
    static const char msg[] = "simnic: cannot run ";
    if (write(2, msg, sizeof msg - 1) < 0 || write(2, args[0], std::strlen(args[0])) < 0) _exit(126);
    _exit(127);
}

// The exit status of child `pid` (-1: killed, or no such child).
int wait_for(pid_t pid) {
    int status = 0;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR) return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// Runs argv with stdout and stderr into `log`; its exit status (-1: could
// not run it). `output` gets the log's text.
int run(const std::vector<std::string>& argv, const std::string& log, std::string& output) {
    const pid_t pid = spawn(argv, log);
    if (pid < 0) return -1;
    const int rc = wait_for(pid);
    read_file(log, output);
    return rc;
}

// The last `max` bytes of a tool's output, for a message.
std::string tail_of(const std::string& s, size_t max = 6000) {
    std::string t = s.size() > max ? "...\n" + s.substr(s.size() - max) : s;
    while (!t.empty() && t.back() == '\n') t.pop_back();
    return t;
}

// "5.006 2023-01-22" from <root>/include/verilated_config.h: the Verilator
// whose runtime the shared object is compiled with. Read, not run, so that
// a cached design needs no Verilator run.
std::string verilator_version(const std::string& root) {
    std::string text;
    const std::string path = root + "/include/verilated_config.h";
    if (!read_file(path, text))
        throw OwnRtlError("Verilator not found: cannot read " + path +
                          " (install Verilator 5, e.g. scripts/setup.sh, or set VERILATOR_ROOT)");
    const std::string key = "#define VERILATOR_VERSION \"";
    const size_t p = text.find(key);
    if (p == std::string::npos) throw OwnRtlError(path + ": no VERILATOR_VERSION");
    const size_t q = text.find('"', p + key.size());
    return text.substr(p + key.size(), q - p - key.size());
}

// The files Verilator reads, in order; every problem with the inputs at once.
std::vector<std::string> inputs(const OwnRtlStage& stage, const OwnRtl& own) {
    std::vector<std::string> problems;
    const std::string key = stage.block + ".rtl_sources";
    if (own.sources.empty()) problems.push_back(key + " is empty: list the design's SystemVerilog files");
    if (own.top.empty()) problems.push_back(stage.block + ".rtl_top is empty: name the design's top module");
    std::vector<std::string> files;
    std::vector<fs::path> seen;
    for (const std::string& p : stage.prelude) {
        files.push_back(p);
        seen.push_back(fs::weakly_canonical(p));
    }
    for (const std::string& s : own.sources) {
        std::error_code ec;
        if (!fs::is_regular_file(s, ec)) {
            problems.push_back(key + ": no such file: " + s);
            continue;
        }
        // simnic's packages come first anyway; listing one again is not an error.
        if (std::find(seen.begin(), seen.end(), fs::weakly_canonical(s)) != seen.end()) continue;
        files.push_back(s);
    }
    if (!problems.empty()) {
        std::string m = stage.block + ": one's own RTL:";
        for (const std::string& p : problems) m += "\n  " + p;
        throw OwnRtlError(m);
    }
    return files;
}

std::vector<std::string> verilator_args(const OwnRtlStage& stage, const OwnRtl& own,
                                        const std::vector<std::string>& files, const std::string& mdir) {
    // Warnings are the designer's to read (the logs in the cache), not a
    // reason to refuse the design; errors are.
    std::vector<std::string> a = {verilator_bin(), "-Wno-fatal", "--top-module", own.top, "--Mdir", mdir};
    // A stage without a datapath (the requester's segmentation) has no DataWidth.
    if (stage.data_width) a.push_back("-GDataWidth=" + std::to_string(stage.data_width));
    for (const std::string& d : stage.lib_dirs) a.push_back("-y"), a.push_back(d);
    a.insert(a.end(), files.begin(), files.end());
    return a;
}

// Runs Verilator; throws with its output if it fails.
void verilate(const OwnRtlStage& stage, const OwnRtl& own, std::vector<std::string> args, const char* what,
              const std::string& log) {
    std::string out;
    ++g_verilator_runs;
    const int rc = run(args, log, out);
    if (rc == 0) return;
    if (rc == 127 && out.rfind("simnic: cannot run ", 0) == 0)
        throw OwnRtlError(stage.block + ": " + out.substr(8) +
                          ": Verilator is needed to build one's own RTL (install Verilator 5, e.g. scripts/setup.sh, "
                          "or set SIMNIC_VERILATOR)");
    std::string m = stage.block + ": Verilator rejected " + own.top + " (" + what + ", exit " + std::to_string(rc) +
                    "):\n" + tail_of(out);
    if (out.find("was not found in design") != std::string::npos)
        m = stage.block + ".rtl_top = \"" + own.top + "\": no module of that name in " + stage.block +
            ".rtl_sources (Verilator: " + tail_of(out, 400) + ")";
    throw OwnRtlError(m);
}

std::vector<std::string> port_check(const OwnRtlStage& stage, const OwnRtl& own, const std::vector<std::string>& files,
                                    const std::string& work) {
    const std::string xml = work + "/ports.xml";
    std::vector<std::string> args = verilator_args(stage, own, files, work + "/xml");
    args.insert(args.begin() + 1, {"--xml-only", "--xml-output", xml});
    verilate(stage, own, args, "reading its ports", work + "/xml.log");
    std::string text;
    std::vector<FoundPort> ports;
    if (!read_file(xml, text) || !xml_ports(text, own.top, ports))
        throw OwnRtlError(stage.block + ".rtl_top = \"" + own.top + "\": Verilator's XML has no top module of that name");
    return port_differences(stage.ports, stage.data_width, ports);
}

[[noreturn]] void port_error(const OwnRtlStage& stage, const OwnRtl& own, const std::vector<std::string>& d) {
    const std::string width = stage.data_width ? "DataWidth " + std::to_string(stage.data_width) + "; " : "";
    std::string m = stage.block + ": " + own.top + " does not have the " + stage.block + "'s ports (" + width +
                    "docs/model.md, Your own RTL), " + std::to_string(d.size()) +
                    (d.size() == 1 ? " difference:" : " differences:");
    for (const std::string& x : d) m += "\n  " + x;
    throw OwnRtlError(m);
}

// Compiles the Verilated model, Verilator's runtime and the shim into
// <work>/design.so, two compilers at a time.
void compile(const OwnRtlStage& stage, const OwnRtl& own, const std::string& work) {
    const std::string root = verilator_root();
    std::vector<std::string> srcs;
    for (const auto& e : fs::directory_iterator(work + "/obj"))
        if (e.path().extension() == ".cpp") srcs.push_back(e.path().string());
    std::sort(srcs.begin(), srcs.end());
    srcs.push_back(root + "/include/verilated.cpp");
    srcs.push_back(root + "/include/verilated_threads.cpp");
    srcs.push_back(stage.shim);
    const std::string vtop = "V" + own.top;
    // Verilator's own flags for its generated code (verilated.mk), position
    // independent, everything hidden but the shim's factory.
    std::vector<std::string> common = {cxx(), "-std=gnu++17", "-fPIC", "-Os", "-fvisibility=hidden",
                                       "-faligned-new", "-w", "-DVM_COVERAGE=0", "-DVM_SC=0", "-DVM_TRACE=0",
                                       "-DVM_TRACE_FST=0", "-DVM_TRACE_VCD=0", "-DSIMNIC_VTOP=" + vtop,
                                       "-DSIMNIC_VTOP_HEADER=\"" + vtop + ".h\"", "-I" + work + "/obj",
                                       "-I" + root + "/include", "-I" + root + "/include/vltstd"};
    for (const std::string& d : stage.include_dirs) common.push_back("-I" + d);
    struct Job {
        pid_t pid;
        std::string src, log;
    };
    std::vector<std::string> objs;
    std::vector<Job> running;
    std::string failed;
    // Waits for the oldest job (each compile takes about as long).
    auto reap = [&] {
        const Job j = running.front();
        running.erase(running.begin());
        if (wait_for(j.pid) != 0 && failed.empty()) {
            std::string out;
            read_file(j.log, out);
            failed = "compiling " + j.src + ":\n" + tail_of(out);
            if (out.rfind("simnic: cannot run ", 0) == 0)
                failed = out.substr(8) + " (install a C++ compiler or set SIMNIC_CXX)";
        }
    };
    const long jobs = std::max(1L, std::strtol(env_or("SIMNIC_RTL_JOBS", "2").c_str(), nullptr, 10));
    for (size_t i = 0; i < srcs.size() && failed.empty(); ++i) {
        while (static_cast<long>(running.size()) >= jobs) reap();
        const std::string obj = work + "/o" + std::to_string(i) + ".o", log = obj + ".log";
        std::vector<std::string> argv = common;
        argv.insert(argv.end(), {"-c", srcs[i], "-o", obj});
        const pid_t pid = spawn(argv, log);
        if (pid < 0) {
            failed = "cannot start the compiler";
            break;
        }
        running.push_back({pid, srcs[i], log});
        objs.push_back(obj);
    }
    while (!running.empty()) reap();
    if (failed.empty()) {
        std::vector<std::string> link = {cxx(), "-shared", "-fPIC", "-Wl,--no-undefined", "-o", work + "/design.so"};
        link.insert(link.end(), objs.begin(), objs.end());
        link.push_back("-pthread");
        std::string out;
        if (run(link, work + "/link.log", out) != 0) failed = "linking:\n" + tail_of(out);
    }
    if (!failed.empty())
        throw OwnRtlError(stage.block + ": building " + own.top + " with " + cxx() + " failed, " + failed);
}

void* open_entry(const OwnRtlStage& stage, const std::string& so) {
    // Never closed: the designs' drivers live as long as their devices.
    void* h = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!h) throw OwnRtlError(stage.block + ": cannot load " + so + ": " + dlerror());
    void* f = dlsym(h, stage.entry.c_str());
    if (!f) throw OwnRtlError(stage.block + ": " + so + " has no " + stage.entry);
    return f;
}

}  // namespace

uint64_t verilator_runs() { return g_verilator_runs.load(); }

std::string own_rtl_cache_dir() {
    const char* xdg = std::getenv("XDG_CACHE_HOME");
    if (xdg && *xdg == '/') return std::string(xdg) + "/simnic/rtl";
    const char* home = std::getenv("HOME");
    if (home && *home) return std::string(home) + "/.cache/simnic/rtl";
    throw OwnRtlError("no cache folder for one's own RTL: set XDG_CACHE_HOME or HOME");
}

OwnRtlStage own_rtl_at_width(const OwnRtlStage& stage, const OwnRtl& own) {
    OwnRtlStage s = stage;
    if (!own.data_width) return s;
    const std::string w = std::to_string(own.data_width);
    if (!stage.data_width)
        throw OwnRtlError(stage.block + ": one's own RTL at DataWidth " + w +
                          ": the stage has no datapath, and no DataWidth parameter");
    // The drivers take a beat from the data port's bytes (axis_top.h,
    // kPortBytes): Verilator's integer or 32-bit words hold exactly the
    // port for these widths, the datapath's (mac.width_bytes 8 to 256).
    const uint32_t d = own.data_width;
    if (d < 64 || d > 2048 || (d & (d - 1)))
        throw OwnRtlError(stage.block + ": one's own RTL at DataWidth " + w +
                          ": a datapath is a power of two from 64 to 2048 bits (mac.width_bytes 8 to 256)");
    s.data_width = d;
    return s;
}

std::vector<std::string> check_own_rtl_ports(const OwnRtlStage& stage_default, const OwnRtl& own) {
    const OwnRtlStage stage = own_rtl_at_width(stage_default, own);
    const std::vector<std::string> files = inputs(stage, own);
    const fs::path tmp = fs::temp_directory_path() / ("simnic-ports-" + std::to_string(getpid()));
    fs::remove_all(tmp);
    fs::create_directories(tmp);
    try {
        auto d = port_check(stage, own, files, tmp.string());
        fs::remove_all(tmp);
        return d;
    } catch (...) {
        fs::remove_all(tmp);
        throw;
    }
}

void* load_own_rtl(const OwnRtlStage& stage_default, const OwnRtl& own, OwnRtlBuildInfo* info) {
    // Built at the device's DataWidth if it names one: the -G, the port
    // check's widths and the key all take it.
    const OwnRtlStage stage = own_rtl_at_width(stage_default, own);
    const std::vector<std::string> files = inputs(stage, own);
    // The key: what goes into the shared object. The design's files (their
    // text, in order), simnic's packages and the modules it may take from
    // the stage's folders, the top and its DataWidth, the Verilator and
    // compiler, and the wrapper code the shim compiles.
    Hash h;
    const std::string root = verilator_root();
    h.add(verilator_version(root));
    h.add(root);
    h.add(cxx());
    h.add(stage.abi_id);
    h.add(own.top);
    h.add(std::to_string(stage.data_width));
    std::vector<std::string> hashed = files;
    for (const std::string& d : stage.lib_dirs) {
        std::vector<std::string> lib;
        std::error_code ec;
        for (const auto& e : fs::directory_iterator(d, ec))
            if (e.path().extension() == ".sv" || e.path().extension() == ".svh") lib.push_back(e.path().string());
        std::sort(lib.begin(), lib.end());
        hashed.insert(hashed.end(), lib.begin(), lib.end());
    }
    hashed.push_back(stage.shim);
    hashed.insert(hashed.end(), stage.abi_files.begin(), stage.abi_files.end());
    for (const std::string& f : hashed) {
        std::string text;
        if (!read_file(f, text)) throw OwnRtlError(stage.block + ": cannot read " + f);
        h.add(text);
    }
    const std::string cache = own_rtl_cache_dir();
    const std::string dir = cache + "/" + stage.block + "-" + own.top + "-" + h.hex();
    const std::string so = dir + "/design.so";
    if (info) info->dir = dir;
    std::error_code ec;
    if (fs::is_regular_file(so, ec)) {
        if (info) info->cache_hit = true;
        return open_entry(stage, so);
    }
    // Built in a folder of its own, then renamed into place: a run that
    // fails leaves nothing in the cache, two runs at once do not clash.
    fs::create_directories(cache, ec);
    if (ec) throw OwnRtlError("cannot create the RTL cache " + cache + ": " + ec.message());
    std::string tmpl = cache + "/.build-XXXXXX";
    if (!mkdtemp(tmpl.data())) throw OwnRtlError("cannot create a folder in " + cache + ": " + std::strerror(errno));
    const std::string work = tmpl;
    try {
        const std::vector<std::string> d = port_check(stage, own, files, work);
        if (!d.empty()) port_error(stage, own, d);
        std::vector<std::string> args = verilator_args(stage, own, files, work + "/obj");
        args.insert(args.begin() + 1, {"--cc", "-O3", "--x-assign", "fast", "--x-initial", "fast"});
        verilate(stage, own, args, "verilating", work + "/verilate.log");
        compile(stage, own, work);
    } catch (...) {
        fs::remove_all(work, ec);
        throw;
    }
    // Only the shared object and the logs are kept.
    fs::remove_all(work + "/obj", ec);
    fs::remove_all(work + "/xml", ec);
    for (const auto& e : fs::directory_iterator(work, ec))
        if (e.path().extension() == ".o") fs::remove(e.path(), ec);
    fs::rename(work, dir, ec);
    if (ec) fs::remove_all(work, ec);  // another run put it there first
    if (info) info->cache_hit = false;
    return open_entry(stage, so);
}

}  // namespace simnic::rtl
