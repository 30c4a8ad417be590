#include "simnic/fw/shm_object.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>

namespace simnic::fw {

int map_shm_object(int fd, std::uint64_t size, std::uint8_t*& p, std::string& why) {
    p = nullptr;
    const int seals = fcntl(fd, F_GET_SEALS);
    if (seals < 0 || (seals & (F_SEAL_SHRINK | F_SEAL_GROW)) != (F_SEAL_SHRINK | F_SEAL_GROW)) {
        why = "the memory object must be a memfd sealed against shrinking and growing";
        return EPERM;
    }
    struct stat st {};
    // 1 TiB: more than any host's queues and buffers, and far below what
    // the address arithmetic of a domain could overflow.
    if (fstat(fd, &st) != 0 || size == 0 || std::uint64_t(st.st_size) != size || size > (std::uint64_t{1} << 40)) {
        why = "size " + std::to_string(size) + " does not match the object";
        return EINVAL;
    }
    void* m = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, fd, 0);
    if (m == MAP_FAILED) {
        const int e = errno;
        why = std::string("mmap: ") + std::strerror(e);
        return e;
    }
    p = static_cast<std::uint8_t*>(m);
    return 0;
}

}  // namespace simnic::fw
