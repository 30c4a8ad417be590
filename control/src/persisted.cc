#include "simnic/control/persisted.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

namespace simnic::control {
namespace {

std::string config_dir() {
    if (const char* d = std::getenv("SIMNIC_CONFIG_DIR"); d && *d) return d;
    if (const char* x = std::getenv("XDG_CONFIG_HOME"); x && x[0] == '/') return std::string(x) + "/simnic";
    const char* home = std::getenv("HOME");
    return std::string(home && *home ? home : "/") + "/.config/simnic";
}

// mkdir -p, private: the list names the user's interfaces and files.
std::string make_dirs(const std::string& dir) {
    std::string path;
    std::stringstream ss(dir);
    std::string part;
    while (std::getline(ss, part, '/')) {
        if (part.empty()) {
            if (path.empty()) path = "/";
            continue;
        }
        path += (path.empty() || path.back() == '/' ? "" : "/") + part;
        if (mkdir(path.c_str(), 0700) != 0 && errno != EEXIST)
            return "cannot create " + path + ": " + std::strerror(errno);
    }
    return {};
}

std::string save(const std::vector<Json>& entries) {
    const std::string dir = config_dir();
    if (std::string e = make_dirs(dir); !e.empty()) return e;
    const std::string path = persisted_devices_path(), tmp = path + ".tmp";
    {
        std::ofstream out(tmp, std::ios::trunc);
        if (!out) return "cannot write " + tmp + ": " + std::strerror(errno);
        for (const Json& j : entries) out << j.dump() << "\n";
        if (!out.flush()) return "cannot write " + tmp + ": " + std::strerror(errno);
    }
    if (rename(tmp.c_str(), path.c_str()) != 0) return "cannot replace " + path + ": " + std::strerror(errno);
    return {};
}

// An entry is known by its op and name (a device and a fabric may share a name).
bool same_entry(const Json& j, const std::string& op, const std::string& name) {
    return j.value("op", "") == op && j.value("name", "") == name;
}

}  // namespace

std::string persisted_devices_path() { return config_dir() + "/devices.jsonl"; }

std::vector<Json> load_persisted(std::string& err) {
    err.clear();
    std::vector<Json> out;
    std::ifstream in(persisted_devices_path());
    std::string line;
    for (int n = 1; std::getline(in, line); ++n) {
        if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
        Json j;
        if (!parse_message(line, j).empty() || !j.contains("name") || !j["name"].is_string() ||
            !j.contains("op") || !j["op"].is_string()) {
            err += (err.empty() ? "" : "; ") + persisted_devices_path() + ":" + std::to_string(n) +
                   " is not a kept device or fabric";
            continue;
        }
        out.push_back(std::move(j));
    }
    return out;
}

bool is_persisted(const Json& req) {
    std::string ignored;
    for (const Json& j : load_persisted(ignored))
        if (j == req) return true;
    return false;
}

std::string persist_request(const Json& req) {
    std::string ignored;
    std::vector<Json> entries = load_persisted(ignored);
    bool replaced = false;
    for (Json& j : entries)
        if (same_entry(j, req.value("op", ""), req.value("name", ""))) {
            j = req;
            replaced = true;
        }
    if (!replaced) entries.push_back(req);
    return save(entries);
}

std::string forget_request(const std::string& op, const std::string& name, bool& found) {
    std::string ignored;
    std::vector<Json> entries = load_persisted(ignored);
    const size_t before = entries.size();
    std::vector<Json> kept;
    for (Json& j : entries)
        if (!same_entry(j, op, name)) kept.push_back(std::move(j));
    found = kept.size() != before;
    return found ? save(kept) : std::string();
}

}  // namespace simnic::control
