// Which of a process's memory is private to it, as /proc/PID/maps tells:
// what the engine asks before it keeps a read-ahead copy of one process's
// memory across a write into another's (host_memory.cc).
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace simnic::soft_engine {

class MapSpans {
public:
    // Whether all of [start, start + len) in process `pid` lies in private
    // mappings ('p' in the permissions of /proc/PID/maps): a write there
    // changes no other process's memory (process_vm_writev breaks
    // copy-on-write as a store would). Unknown (no /proc, bytes not mapped):
    // false. The spans read are kept until clear().
    bool all_private(pid_t pid, uintptr_t start, size_t len);
    // Forgets every span: after anything that may map other memory where
    // the kept spans were (an MR's registration, a process's exit).
    void clear() { spans_.clear(); }

private:
    struct Span {
        pid_t pid;
        uintptr_t start, end;
        bool priv;
    };
    // A bound on the spans kept: a process with many mappings and writes
    // spread across them reads its maps again, no more.
    static constexpr size_t kMaxSpans = 256;
    std::vector<Span> spans_;
};

}  // namespace simnic::soft_engine
