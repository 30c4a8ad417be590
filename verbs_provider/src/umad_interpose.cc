// libibumad's entry points, in libsimnic-verbs.so, for infiniband-diags
// (ibstat; ibaddr, perfquery and the rest through libibmad). libibumad finds
// CAs in /sys/class/infiniband, where simnic devices are not; here the CA
// list also holds the simnic devices, a simnic CA or port is described by
// umad_ca.h, and every other call goes on to the real libibumad.
//
// The library must not depend on libibumad (most applications never load
// it), so the real functions are looked up lazily with dlvsym(RTLD_NEXT), and
// the simnic path works without them.
//
// libibumad calls some of its own exported functions through its PLT
// (umad_get_ca, umad_get_ca_device_list, umad_free_ca_device_list), so once
// preloaded these definitions also receive libibumad's internal calls. While
// a forwarded call runs, a thread-local depth makes them pass straight
// through: libibumad then sees exactly the kernel's devices, as without us.
//
// Only the functions that take a CA name or a CA/port record are covered.
// Those that take a port id (umad_send, umad_recv, umad_poll, umad_register,
// umad_close_port, ...) never see a simnic device: umad_open_port refuses one
// with -EOPNOTSUPP, since simnic devices have no MAD interface (no SMA, no
// GSI QP), so no id for one exists.
#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "real_symbol.h"
#include "umad_ca.h"

namespace su = simnic::verbs::umad;

namespace {

using su::Ca;
using su::DeviceNode;
using su::Port;

using simnic::verbs::Real;

#define SIMNIC_UMAD_REAL(fn, type, ver)          \
    Real<type>& real_##fn() {                   \
        static Real<type> r(#fn, ver);          \
        return r;                               \
    }

SIMNIC_UMAD_REAL(umad_get_cas_names, int(char (*)[su::kCaNameLen], int), "IBUMAD_1.0")
SIMNIC_UMAD_REAL(umad_get_ca_portguids, int(const char*, __be64*, int), "IBUMAD_1.0")
SIMNIC_UMAD_REAL(umad_get_ca, int(const char*, Ca*), "IBUMAD_1.0")
SIMNIC_UMAD_REAL(umad_release_ca, int(Ca*), "IBUMAD_1.0")
SIMNIC_UMAD_REAL(umad_get_port, int(const char*, int, Port*), "IBUMAD_1.0")
SIMNIC_UMAD_REAL(umad_release_port, int(Port*), "IBUMAD_1.0")
SIMNIC_UMAD_REAL(umad_get_issm_path, int(const char*, int, char*, int), "IBUMAD_1.0")
SIMNIC_UMAD_REAL(umad_open_port, int(const char*, int), "IBUMAD_1.0")
SIMNIC_UMAD_REAL(umad_get_ca_device_list, DeviceNode*(), "IBUMAD_1.1")
SIMNIC_UMAD_REAL(umad_free_ca_device_list, void(DeviceNode*), "IBUMAD_1.1")

// Depth of forwarded calls on this thread (see the file comment).
thread_local int t_in_real = 0;
struct InReal {
    InReal() { ++t_in_real; }
    ~InReal() { --t_in_real; }
    InReal(const InReal&) = delete;
    InReal& operator=(const InReal&) = delete;
};

// A simnic device named `name`, asked from outside libibumad.
bool ours(const char* name) { return t_in_real == 0 && name != nullptr && su::is_device(name); }

// List nodes we allocated (each one calloc: node, then its name), so that
// umad_free_ca_device_list can tell them from libibumad's after any sort.
std::mutex g_nodes_mu;
std::set<DeviceNode*>& our_nodes() {
    static auto* s = new std::set<DeviceNode*>;  // never destroyed: lists may outlive statics
    return *s;
}

DeviceNode* new_node(const std::string& name) {
    auto* n = static_cast<DeviceNode*>(std::calloc(1, sizeof(DeviceNode) + name.size() + 1));
    if (n == nullptr) return nullptr;
    char* s = reinterpret_cast<char*>(n + 1);
    std::memcpy(s, name.c_str(), name.size() + 1);
    n->ca_name = s;
    std::lock_guard<std::mutex> lk(g_nodes_mu);
    our_nodes().insert(n);
    return n;
}

DeviceNode* real_device_list(int& err) {
    err = 0;
    auto* f = real_umad_get_ca_device_list().get();
    if (f == nullptr) return nullptr;
    InReal guard;
    errno = 0;
    DeviceNode* head = f();
    err = errno;
    return head;
}

}  // namespace

#define SIMNIC_EXPORT extern "C" __attribute__((visibility("default")))

SIMNIC_EXPORT void umad_free_ca_device_list(DeviceNode* head);

// The kernel's CAs (libibumad's list), then the simnic devices whose names
// are not already there. NULL with errno 0 is an empty list (libibumad's rule).
SIMNIC_EXPORT DeviceNode* umad_get_ca_device_list() {
    if (t_in_real) {
        auto* f = real_umad_get_ca_device_list().get();
        return f ? f() : (errno = 0, nullptr);
    }
    int err = 0;
    DeviceNode* head = real_device_list(err);
    if (head == nullptr && err != 0) {
        errno = err;
        return nullptr;
    }
    std::vector<std::string> names;
    su::device_names(names);  // no daemon: no simnic devices
    DeviceNode** tail = &head;
    while (*tail) tail = &(*tail)->next;
    for (const std::string& nm : names) {
        bool dup = false;
        for (DeviceNode* n = head; n && !dup; n = n->next) dup = nm == n->ca_name;
        if (dup) continue;
        DeviceNode* n = new_node(nm);
        if (n == nullptr) {
            umad_free_ca_device_list(head);
            errno = ENOMEM;
            return nullptr;
        }
        *tail = n;
        tail = &n->next;
    }
    errno = 0;
    return head;
}

// Frees our nodes here and hands libibumad's, relinked, back to libibumad
// (a sort may have interleaved them).
SIMNIC_EXPORT void umad_free_ca_device_list(DeviceNode* head) {
    auto* real = real_umad_free_ca_device_list().get();
    if (t_in_real) {
        if (real) real(head);
        return;
    }
    DeviceNode* theirs = nullptr;
    DeviceNode** tail = &theirs;
    for (DeviceNode* n = head; n != nullptr;) {
        DeviceNode* next = n->next;
        bool mine;
        {
            std::lock_guard<std::mutex> lk(g_nodes_mu);
            mine = our_nodes().erase(n) != 0;
        }
        if (mine) {
            std::free(n);
        } else {
            *tail = n;
            tail = &n->next;
        }
        n = next;
    }
    *tail = nullptr;
    if (theirs != nullptr && real != nullptr) real(theirs);
}

// Up to `max` CA names, sorted as libibumad sorts them; unchanged when there
// is no simnic device.
SIMNIC_EXPORT int umad_get_cas_names(char cas[][su::kCaNameLen], int max) {
    std::vector<std::string> sims;
    if (t_in_real == 0) su::device_names(sims);
    if (sims.empty()) {
        auto* f = real_umad_get_cas_names().get();
        if (f == nullptr) return 0;
        InReal guard;
        return f(cas, max);
    }
    if (cas == nullptr || max < 0) return -EINVAL;
    std::vector<std::string> names;
    int err = 0;
    DeviceNode* real = real_device_list(err);
    for (DeviceNode* n = real; n; n = n->next) names.emplace_back(n->ca_name);
    if (real) {
        InReal guard;
        real_umad_free_ca_device_list().get()(real);
    }
    for (const std::string& s : sims)
        if (std::find(names.begin(), names.end(), s) == names.end()) names.push_back(s);
    std::sort(names.begin(), names.end());
    int j = 0;
    for (const std::string& s : names) {
        if (j >= max) break;
        if (s.size() >= su::kCaNameLen) continue;  // libibumad skips such names too
        std::memcpy(cas[j++], s.c_str(), s.size() + 1);
    }
    return j;
}

SIMNIC_EXPORT int umad_get_ca(const char* ca_name, Ca* ca) {
    if (ours(ca_name)) return su::get_ca(ca_name, ca);
    auto* f = real_umad_get_ca().get();
    if (f == nullptr) return -ENODEV;
    InReal guard;
    return f(ca_name, ca);
}

SIMNIC_EXPORT int umad_release_ca(Ca* ca) {
    if (ca == nullptr) return -ENODEV;
    if (ours(ca->ca_name)) {
        su::release_ca(ca);
        return 0;
    }
    auto* f = real_umad_release_ca().get();
    if (f == nullptr) {
        su::release_ca(ca);  // same allocation scheme as libibumad's
        return 0;
    }
    InReal guard;
    return f(ca);
}

SIMNIC_EXPORT int umad_get_port(const char* ca_name, int portnum, Port* port) {
    if (ours(ca_name)) return su::get_port(ca_name, portnum, port);
    auto* f = real_umad_get_port().get();
    if (f == nullptr) return -ENODEV;
    InReal guard;
    return f(ca_name, portnum, port);
}

SIMNIC_EXPORT int umad_release_port(Port* port) {
    if (port == nullptr) return -ENODEV;
    if (ours(port->ca_name)) {
        su::release_port(port);
        return 0;
    }
    auto* f = real_umad_release_port().get();
    if (f == nullptr) {
        su::release_port(port);
        return 0;
    }
    InReal guard;
    return f(port);
}

SIMNIC_EXPORT int umad_get_ca_portguids(const char* ca_name, __be64* portguids, int max) {
    if (ours(ca_name)) return su::get_ca_portguids(ca_name, portguids, max);
    auto* f = real_umad_get_ca_portguids().get();
    if (f == nullptr) return -ENODEV;
    InReal guard;
    return f(ca_name, portguids, max);
}

// No MAD interface on a simnic device: no umad port to open, no ISSM.
SIMNIC_EXPORT int umad_open_port(const char* ca_name, int portnum) {
    if (ours(ca_name)) return -EOPNOTSUPP;
    auto* f = real_umad_open_port().get();
    if (f == nullptr) return -EOPNOTSUPP;
    InReal guard;
    return f(ca_name, portnum);
}

SIMNIC_EXPORT int umad_get_issm_path(const char* ca_name, int portnum, char path[], int max) {
    if (ours(ca_name)) return -EOPNOTSUPP;
    auto* f = real_umad_get_issm_path().get();
    if (f == nullptr) return -ENODEV;
    InReal guard;
    return f(ca_name, portnum, path, max);
}
