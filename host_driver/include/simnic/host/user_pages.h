// The host side's part of registering memory: what the kernel's
// ib_umem_get does for a verbs driver before the device sees an MR.
#pragma once

#include <cstddef>
#include <string_view>

namespace simnic::host {

// Whether [addr, addr + len) of this process can be pinned for a device:
// every byte in a mapping, readable, and writable as well when `writable`
// (the MR has a right that lets the device write: ib_access_writable).
// 0, or EFAULT as ib_umem_get answers for a hole, a PROT_NONE guard page or
// a read-only mapping asked to be writable. The mappings come from
// /proc/self/maps: its PROCMAP_QUERY ioctl (Linux 6.11) where the kernel has
// it, else its text (check_user_pages_by_text); `maps` lets a test give its
// own text in that format.
int check_user_pages(const void* addr, std::size_t len, bool writable);
int check_user_pages_by_text(const void* addr, std::size_t len, bool writable);
int check_user_pages(std::string_view maps, const void* addr, std::size_t len, bool writable);

}  // namespace simnic::host
