// The device nodes a kernel RDMA device has, answered for simnic devices
// (issue 11: UCX).
//
// UCX 1.13 lists an IB device only if /dev/infiniband/<dev_name> (the
// ibv_device's dev_name) is a character device the process may read and
// write: uct_ib_device_is_accessible stat()s and access()es it, and never
// opens it. A simnic device has no node: it needs no kernel, and making one
// needs root (mknod), or a user and mount namespace around every process
// that might use the device (mpirun's daemons and ranks included), which
// some machines forbid and which would hide a real /dev/infiniband from the
// process. The preloaded library, which every such process already loads
// (LD_PRELOAD is inherited), answers instead, for the names of simnic
// devices only: stat/lstat say "character device, rw for everyone", as
// udev makes uverbs nodes (major 231, minor 192 + N), and access grants
// R_OK|W_OK.
//
// UCX then reads the device's sysfs files as the kernel would show them for
// rxe: /sys/class/infiniband/<name>/ports/1/gid_attrs/types/<index> (each
// GID's RoCE version: it picks the RoCE v2 IPv4 one, and without them it
// finds no usable GID, "Destination is unreachable") and
// .../gid_attrs/ndevs/<index>. open() of a path under a simnic device's
// /sys/class/infiniband/<name>/ gives a read-only memfd with the text
// libibverbs' ibv_read_sysfs_file already gets for the same file
// (devices.cc), or ENOENT for what rxe does not have (device/numa_node,
// device/local_cpus: rxe on lo has no parent device either).
//
// Every other path goes to the C library unchanged, and so does every call
// when the process has no simnic device.
#include <dlfcn.h>
#include <fcntl.h>
#include <stdarg.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "provider.h"

namespace sv = simnic::verbs;

namespace {

constexpr char kDevDir[] = "/dev/infiniband/";
constexpr unsigned kUverbsMajor = 231, kUverbsMinorBase = 192;

// The index of the simnic device whose node `path` names, or -1. Only paths
// under /dev/infiniband/ cost a look at the device list.
int simnic_node(const char* path) {
    if (!path || std::strncmp(path, kDevDir, sizeof kDevDir - 1) != 0) return -1;
    const char* name = path + sizeof kDevDir - 1;
    const int saved = errno;
    std::vector<ibv_device*> devs;
    int found = -1;
    if (sv::current_devices(devs) == 0)
        for (size_t i = 0; i < devs.size(); ++i)
            if (std::strcmp(devs[i]->dev_name, name) == 0) found = int(i);
    errno = saved;
    return found;
}

void fill_node(struct stat* st, int index) {
    std::memset(st, 0, sizeof *st);
    st->st_mode = S_IFCHR | 0666;
    st->st_rdev = makedev(kUverbsMajor, kUverbsMinorBase + unsigned(index));
    st->st_nlink = 1;
    st->st_blksize = 4096;
}

template <typename F>
F next(const char* name) {
    return reinterpret_cast<F>(dlsym(RTLD_NEXT, name));
}

constexpr char kSysDir[] = "/sys/class/infiniband/";

// open() of a simnic device's sysfs file: 1 with `fd` (or -1 and errno),
// 0 if `path` is not one (the C library's open decides).
int open_sysfs(const char* path, int flags, int& fd) {
    if (!path || std::strncmp(path, kSysDir, sizeof kSysDir - 1) != 0) return 0;
    const int saved = errno;
    std::string text;
    std::vector<ibv_device*> devs;  // the daemon's devices now, as ibv_get_device_list would list them
    if (sv::current_devices(devs) != 0 || devs.empty() || !sv::sysfs_path_text(path, text)) {
        errno = saved;
        return 0;
    }
    if (text.empty()) {
        fd = -1;  // errno: ENOENT
        return 1;
    }
    if ((flags & O_ACCMODE) != O_RDONLY) {
        fd = -1;
        errno = EACCES;  // the attributes rxe has are read-only
        return 1;
    }
    fd = memfd_create("simnic-sysfs", (flags & O_CLOEXEC) ? MFD_CLOEXEC : 0);
    if (fd < 0) return 1;
    if (write(fd, text.data(), text.size()) != ssize_t(text.size()) || lseek(fd, 0, SEEK_SET) != 0) {
        const int e = errno;
        close(fd);
        fd = -1;
        errno = e ? e : EIO;
        return 1;
    }
    errno = saved;
    return 1;
}

// Goes on to the C library's definition; ENOSYS if no later object has one.
template <typename F, typename... A>
int forward(F real, A... a) {
    if (!real) {
        errno = ENOSYS;
        return -1;
    }
    return real(a...);
}

mode_t mode_arg(int flags, va_list ap) {
    return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE ? mode_t(va_arg(ap, int)) : 0;
}

}  // namespace

#pragma GCC visibility push(default)
extern "C" {

int stat(const char* path, struct stat* st) {
    const int i = simnic_node(path);
    if (i >= 0) {
        fill_node(st, i);
        return 0;
    }
    static auto real = next<int (*)(const char*, struct stat*)>("stat");
    return forward(real, path, st);
}

// x86-64: struct stat64 is struct stat.
int stat64(const char* path, struct stat64* st) { return stat(path, reinterpret_cast<struct stat*>(st)); }

int lstat(const char* path, struct stat* st) {
    const int i = simnic_node(path);
    if (i >= 0) {
        fill_node(st, i);
        return 0;
    }
    static auto real = next<int (*)(const char*, struct stat*)>("lstat");
    return forward(real, path, st);
}

int lstat64(const char* path, struct stat64* st) { return lstat(path, reinterpret_cast<struct stat*>(st)); }

// access() and its relatives (shells test -r/-w with eaccess or faccessat).
// 1 with the answer for a simnic node, 0 for any other path.
static int node_access(const char* path, int mode, int& ret) {
    if (simnic_node(path) < 0) return 0;
    ret = 0;
    if (mode & X_OK) {
        errno = EACCES;
        ret = -1;
    }
    return 1;
}

int access(const char* path, int mode) {
    int r;
    if (node_access(path, mode, r)) return r;
    static auto real = next<int (*)(const char*, int)>("access");
    return forward(real, path, mode);
}

int eaccess(const char* path, int mode) {
    int r;
    if (node_access(path, mode, r)) return r;
    static auto real = next<int (*)(const char*, int)>("eaccess");
    return forward(real, path, mode);
}

int euidaccess(const char* path, int mode) { return eaccess(path, mode); }

int faccessat(int dirfd, const char* path, int mode, int flags) {
    int r;
    if (path[0] == '/' && node_access(path, mode, r)) return r;
    static auto real = next<int (*)(int, const char*, int, int)>("faccessat");
    return forward(real, dirfd, path, mode, flags);
}

int open(const char* path, int flags, ...) {
    va_list ap;
    va_start(ap, flags);
    const mode_t mode = mode_arg(flags, ap);
    va_end(ap);
    int fd;
    if (open_sysfs(path, flags, fd)) return fd;
    static auto real = next<int (*)(const char*, int, ...)>("open");
    return forward(real, path, flags, mode);
}

int open64(const char* path, int flags, ...) {
    va_list ap;
    va_start(ap, flags);
    const mode_t mode = mode_arg(flags, ap);
    va_end(ap);
    int fd;
    if (open_sysfs(path, flags, fd)) return fd;
    static auto real = next<int (*)(const char*, int, ...)>("open64");
    return forward(real, path, flags, mode);
}

}  // extern "C"
#pragma GCC visibility pop
