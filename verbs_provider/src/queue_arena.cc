#include "queue_arena.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <optional>


namespace simnic::verbs {

namespace {
constexpr std::size_t kPage = 4096;
}

QueueArena::~QueueArena() {
    if (base_) munmap(base_, kArenaBytes);
}

bool QueueArena::init_locked(host::Context& hc) {
    tried_ = true;
    const int fd = memfd_create("simnic-queues", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd < 0) return false;
    void* m = MAP_FAILED;
    bool ok = ftruncate(fd, static_cast<off_t>(kArenaBytes)) == 0 &&
              fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) == 0;
    if (ok) m = mmap(nullptr, kArenaBytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, fd, 0);
    ok = ok && m != MAP_FAILED &&
         host::attach_shm_domain(hc, fd, reinterpret_cast<std::uintptr_t>(m), kArenaBytes, domain_) == 0;
    close(fd);  // the mapping (here and in the daemon) keeps the object
    if (!ok) {
        if (m != MAP_FAILED) munmap(m, kArenaBytes);
        return false;
    }
    base_ = static_cast<std::uint8_t*>(m);
    free_ = base::RangeAllocator<std::size_t>(kArenaBytes);
    return true;
}

std::size_t QueueArena::slot_size(std::size_t bytes) {
    std::size_t len = kMinSlot;
    while (len < bytes) len <<= 1;
    return len;
}

std::optional<std::size_t> QueueArena::alloc_slot_locked(std::size_t len) {
    int k = 0;
    for (std::size_t l = kMinSlot; l < len; l <<= 1) ++k;
    SlotClass& sc = slots_[static_cast<std::size_t>(k)];
    if (sc.partial.empty()) {
        const std::optional<std::size_t> page = free_.alloc(kPage);
        if (!page) return std::nullopt;
        sc.pages[*page] = 0;
        sc.partial.insert(*page);
    }
    const std::size_t page = *sc.partial.begin();
    std::uint64_t& used = sc.pages[page];
    const std::size_t per_page = kPage / len;
    std::size_t slot = 0;
    while (used >> slot & 1) ++slot;
    used |= std::uint64_t{1} << slot;
    const std::uint64_t full = per_page == 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << per_page) - 1;
    if (used == full) sc.partial.erase(page);
    return page + slot * len;
}

void QueueArena::free_slot_locked(std::size_t off, std::size_t len) {
    int k = 0;
    for (std::size_t l = kMinSlot; l < len; l <<= 1) ++k;
    SlotClass& sc = slots_[static_cast<std::size_t>(k)];
    const std::size_t page = off / kPage * kPage;
    auto it = sc.pages.find(page);
    if (it == sc.pages.end()) return;
    it->second &= ~(std::uint64_t{1} << ((off - page) / len));
    if (it->second != 0) {
        sc.partial.insert(page);
        return;
    }
    sc.pages.erase(it);
    sc.partial.erase(page);
    madvise(base_ + page, kPage, MADV_REMOVE);  // the page goes back to the system
    free_.free(page, kPage);
}

std::uint8_t* QueueArena::alloc(host::Context& hc, std::size_t bytes, std::uint16_t& domain, bool shared) {
    // Up to half a page: a slot of the next power of two, aligned to its
    // size (in the arena or out of it); larger: whole pages.
    const bool small = bytes > 0 && bytes <= kPage / 2;
    const std::size_t len = small ? slot_size(bytes) : (bytes + kPage - 1) / kPage * kPage;
    {
        std::lock_guard<std::mutex> lk(mu_);
        if (shared && !tried_) init_locked(hc);
        if (shared && base_) {
            const std::optional<std::size_t> off = small ? alloc_slot_locked(len) : free_.alloc(len);
            if (off) {
                used_[*off] = len;
                domain = domain_;
                // Freed pages were returned (zero), new ones are zero; a
                // ring reused from a punched range is zero too. Be sure.
                std::memset(base_ + *off, 0, len);
                return base_ + *off;
            }
        }
    }
    void* p = nullptr;
    if (posix_memalign(&p, small ? len : kPage, len) != 0) return nullptr;
    std::memset(p, 0, len);
    domain = hc.boot_domain();
    return static_cast<std::uint8_t*>(p);
}

void QueueArena::free(std::uint8_t* p) {
    if (p == nullptr) return;
    std::lock_guard<std::mutex> lk(mu_);
    if (!base_ || p < base_ || p >= base_ + kArenaBytes) {
        std::free(p);
        return;
    }
    const std::size_t off = static_cast<std::size_t>(p - base_);
    auto u = used_.find(off);
    if (u == used_.end()) return;  // not ours: never hand it to free()
    const std::size_t len = u->second;
    used_.erase(u);
    if (len < kPage) {
        free_slot_locked(off, len);
        return;
    }
    madvise(p, len, MADV_REMOVE);  // the pages go back to the system
    free_.free(off, len);
}

}  // namespace simnic::verbs
