// AddressSanitizer and SystemC's coroutine stacks, for the fuzzers that
// build a model device per input (fuzz_model_rx).
//
// SystemC (Debian's libsystemc, QuickThreads) gives each SC_THREAD a stack
// of its own, mmap'd with a guard page, and munmaps it when the simulation
// context is deleted. A block's thread never returns, so the frames it holds
// then never run their epilogues: ASan's shadow of that stack keeps their
// redzones poisoned after the unmap. ASan's instrumented prologues write only
// a new frame's redzones, taking the rest of a stack's shadow to be clean,
// so the next stack the kernel maps at that address reports a
// stack-buffer-overflow inside a live variable (seen after 59 inputs:
// `agg.tmp` in `Chan<FrameTok>::push`, the write inside the variable, its
// shadow a dead frame's right redzone). ASan (clang 14) clears no shadow on
// munmap, so this does: munmap is not one of its interceptors, and
// libsystemc's calls resolve to this definition.
#include <sanitizer/asan_interface.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstddef>

extern "C" int munmap(void* addr, size_t len) {
    // Shadow only: the pages themselves may be PROT_NONE (the guard page).
    __asan_unpoison_memory_region(addr, len);
    return static_cast<int>(syscall(SYS_munmap, addr, len));
}
