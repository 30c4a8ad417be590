// Checks a range of this process against its mappings, as pinning it would
// (see user_pages.h). The device never pins: it reaches registered memory
// through process_vm_readv/writev, which look each page up at that moment.
// Without this check an MR over unmapped memory would register and fail only
// at its first access, where rxe, like every verbs driver, refuses it at
// registration. On-demand MRs skip it: not needing the pages now is what
// they are for.
#include "simnic/host/user_pages.h"

#include <fcntl.h>
#include <sys/ioctl.h>
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

// Walks mapping lines in address order over [start, last]: `next` is the
// first byte not yet found in a mapping. Returns 0 once the range is
// covered, EFAULT at the first gap or mapping without the rights, and
// EAGAIN while more lines are needed.
int walk(std::string_view& lines, std::uintptr_t& next, std::uintptr_t last, bool writable) {
    while (true) {
        const std::size_t nl = lines.find('\n');
        if (nl == std::string_view::npos) return EAGAIN;  // an incomplete line waits for more
        const std::string_view line = lines.substr(0, nl);
        lines.remove_prefix(nl + 1);
        Vma m;
        if (!parse_line(line, m) || m.hi <= next) continue;
        if (m.lo > next) return EFAULT;  // a hole
        if (!m.read || (writable && !m.write)) return EFAULT;
        if (m.hi - 1 >= last) return 0;
        next = m.hi;
    }
}

bool bad_range(std::uintptr_t start, std::size_t len) { return start + (len - 1) < start; }

// PROCMAP_QUERY (Linux 6.11, include/uapi/linux/fs.h): the mapping that
// covers an address, or the next one, with its rights, from an ioctl on the
// maps file, without the kernel writing out every mapping as text (which
// costs about ten times more). Declared here: Debian 12's headers predate it.
struct ProcmapQuery {
    std::uint64_t size, query_flags, query_addr, vma_start, vma_end, vma_flags, vma_page_size, vma_offset, inode;
    std::uint32_t dev_major, dev_minor, vma_name_size, build_id_size;
    std::uint64_t vma_name_addr, build_id_addr;
};
constexpr unsigned long kProcmapQuery = _IOWR('f', 17, ProcmapQuery);
constexpr std::uint64_t kVmaReadable = 0x01, kVmaWritable = 0x02, kCoveringOrNextVma = 0x10;

// The walk of walk(), one ioctl per mapping; EAGAIN when the kernel has no
// PROCMAP_QUERY (the caller reads the text instead).
int query_walk(int fd, std::uintptr_t start, std::uintptr_t last, bool writable) {
    std::uintptr_t next = start;
    while (true) {
        ProcmapQuery q{};
        q.size = sizeof q;
        q.query_flags = kCoveringOrNextVma;
        q.query_addr = next;
        if (::ioctl(fd, kProcmapQuery, &q) != 0) return errno == ENOENT ? EFAULT : EAGAIN;
        if (q.vma_start > next) return EFAULT;  // a hole
        if (!(q.vma_flags & kVmaReadable) || (writable && !(q.vma_flags & kVmaWritable))) return EFAULT;
        if (q.vma_end - 1 >= last) return 0;
        next = q.vma_end;
    }
}

// The text of the maps file, read a block at a time and no further than the
// range's end, through walk().
int text_walk(int fd, std::uintptr_t start, std::uintptr_t last, bool writable) {
    std::string buf;
    std::size_t used = 0;  // bytes of buf already walked
    std::uintptr_t next = start;
    char block[4096];
    while (true) {
        const ssize_t n = ::read(fd, block, sizeof block);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return EFAULT;  // the mappings ended before the range did
        buf.erase(0, used);
        buf.append(block, std::size_t(n));
        std::string_view v = buf;
        const int e = walk(v, next, last, writable);
        if (e != EAGAIN) return e;
        used = buf.size() - v.size();
    }
}

// Both ways of reading /proc/self/maps, behind the same checks of the range;
// `query`: ask with PROCMAP_QUERY first, and read the text only on a kernel
// without it (the ioctl leaves the file's offset at 0).
int check_maps(const void* addr, std::size_t len, bool writable, bool query) {
    const auto start = reinterpret_cast<std::uintptr_t>(addr);
    if (len == 0) return 0;
    if (bad_range(start, len)) return EFAULT;
    const int fd = ::open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
    // Without /proc (a chroot, a restricted container) nothing can be told:
    // registration goes on, and a missing page fails at its first access.
    if (fd < 0) return 0;
    const std::uintptr_t last = start + (len - 1);
    int e = query ? query_walk(fd, start, last, writable) : EAGAIN;
    if (e == EAGAIN) e = text_walk(fd, start, last, writable);
    ::close(fd);
    return e;
}

}  // namespace

int check_user_pages(std::string_view maps, const void* addr, std::size_t len, bool writable) {
    const auto start = reinterpret_cast<std::uintptr_t>(addr);
    if (len == 0) return 0;
    if (bad_range(start, len)) return EFAULT;
    std::uintptr_t next = start;
    std::string text(maps);
    if (text.empty() || text.back() != '\n') text += '\n';
    std::string_view v = text;
    const int e = walk(v, next, start + (len - 1), writable);
    return e == EAGAIN ? EFAULT : e;  // the mappings ended before the range did
}

int check_user_pages(const void* addr, std::size_t len, bool writable) {
    return check_maps(addr, len, writable, true);
}

int check_user_pages_by_text(const void* addr, std::size_t len, bool writable) {
    return check_maps(addr, len, writable, false);
}

}  // namespace simnic::host
