// The device's side of an SHM domain's memory object (hw-spec 1.3): a host
// hands the device a memfd, and the device maps it to reach the host's
// queues and buffers with plain loads and stores. The daemon's devices and
// in-process ones (host::open_local_context) accept an object by the same
// rules.
#pragma once

#include <cstdint>
#include <string>

namespace simnic::fw {

// Maps object `fd` of `size` bytes shared, read and write, into `p`. The
// object must be sealed against shrinking (a mapping of a truncated file
// faults on access, and the device would take the fault) and growing (past
// the size that was checked), and `size` must be its size. 0, or an errno
// with `why` saying what was wrong: EPERM for the seals, EINVAL for the
// size, mmap's own errno. The caller keeps `fd` and unmaps `p` (munmap of
// `size` bytes).
int map_shm_object(int fd, std::uint64_t size, std::uint8_t*& p, std::string& why);

}  // namespace simnic::fw
