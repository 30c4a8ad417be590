// Checks a range of this process against its mappings, as pinning it would
// (see user_pages.h). The device never pins: it reaches registered memory
// through process_vm_readv/writev, which look each page up at that moment.
// Without this check an MR over unmapped memory would register and fail only
// at its first access, where rxe, like every verbs driver, refuses it at
// registration. On-demand MRs skip it: not needing the pages now is what
// they are for.
#include "simnic/host/user_pages.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <string>

namespace simnic::host {

namespace {

// One "lo-hi perms ..." line of /proc/<pid>/maps (proc(5)).
struct Vma {
    std::uintptr_t lo = 0, hi = 0;
    bool read = false, write = false;
};

bool parse_hex(std::string_view& s, std::uintptr_t& v) {
    v = 0;
    std::size_t i = 0;
    for (; i < s.size(); ++i) {
        const char c = s[i];
        unsigned d = 0;
        if (c >= '0' && c <= '9') d = unsigned(c - '0');
        else if (c >= 'a' && c <= 'f') d = unsigned(c - 'a' + 10);
        else break;
        if (v >> (sizeof v * 8 - 4)) return false;  // more digits than an address has
        v = v << 4 | d;
    }
    if (i == 0) return false;
    s.remove_prefix(i);
    return true;
}

bool parse_line(std::string_view line, Vma& m) {
    if (!parse_hex(line, m.lo) || line.empty() || line[0] != '-') return false;
    line.remove_prefix(1);
    if (!parse_hex(line, m.hi) || line.size() < 3 || line[0] != ' ') return false;
    m.read = line[1] == 'r';
    m.write = line[2] == 'w';
    return m.hi > m.lo;
}

std::string read_self_maps() {
    std::string out;
    const int fd = ::open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return out;
    char buf[16384];
    for (;;) {
        const ssize_t n = ::read(fd, buf, sizeof buf);
        if (n > 0) {
            out.append(buf, std::size_t(n));
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        break;
    }
    ::close(fd);
    return out;
}

}  // namespace

int check_user_pages(std::string_view maps, const void* addr, std::size_t len, bool writable) {
    const auto start = reinterpret_cast<std::uintptr_t>(addr);
    if (len == 0) return 0;
    if (start + (len - 1) < start) return EFAULT;
    const std::uintptr_t last = start + (len - 1);
    std::uintptr_t next = start;  // the first byte not yet found in a mapping
    // The mappings come in address order; walk them until the range is
    // covered, and fail at the first gap or the first mapping without the
    // rights the MR needs.
    while (!maps.empty()) {
        const std::size_t nl = maps.find('\n');
        const std::string_view line = maps.substr(0, nl);
        maps.remove_prefix(nl == std::string_view::npos ? maps.size() : nl + 1);
        Vma m;
        if (!parse_line(line, m) || m.hi <= next) continue;
        if (m.lo > next) return EFAULT;  // a hole
        if (!m.read || (writable && !m.write)) return EFAULT;
        if (m.hi - 1 >= last) return 0;
        next = m.hi;
    }
    return EFAULT;
}

int check_user_pages(const void* addr, std::size_t len, bool writable) {
    const std::string maps = read_self_maps();
    // Without /proc (a chroot, a restricted container) nothing can be told:
    // registration goes on, and a missing page fails at its first access.
    if (maps.empty()) return 0;
    return check_user_pages(maps, addr, len, writable);
}

}  // namespace simnic::host
