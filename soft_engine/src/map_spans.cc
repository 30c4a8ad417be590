#include "map_spans.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>

namespace simnic::soft_engine {

bool MapSpans::all_private(pid_t pid, uintptr_t start, size_t len) {
    const uintptr_t end = start + len;
    if (end < start) return false;
    bool read = false;
    for (uintptr_t at = start; at < end;) {
        const auto it = std::find_if(spans_.begin(), spans_.end(),
                                     [&](const Span& s) { return s.pid == pid && s.start <= at && at < s.end; });
        if (it != spans_.end()) {
            if (!it->priv) return false;
            at = it->end;
            continue;
        }
        if (read) return false;  // not mapped
        read = true;
        if (spans_.size() > kMaxSpans) spans_.clear();
        FILE* f = std::fopen(("/proc/" + std::to_string(pid) + "/maps").c_str(), "re");
        if (!f) return false;
        // Only the spans that meet the range are kept; the file is in
        // address order.
        char line[512];
        while (std::fgets(line, sizeof line, f)) {
            unsigned long long a = 0, b = 0;
            char perms[8] = {};
            const bool whole = std::strchr(line, '\n') != nullptr;
            if (std::sscanf(line, "%llx-%llx %7s", &a, &b, perms) == 3 && b > at) {
                if (a >= end) break;
                spans_.push_back(Span{pid, uintptr_t(a), uintptr_t(b), perms[3] == 'p'});
            }
            // A line longer than the buffer (a long path): skip its rest.
            while (!whole && std::fgets(line, sizeof line, f) && !std::strchr(line, '\n')) {
            }
        }
        std::fclose(f);
    }
    return true;
}

}  // namespace simnic::soft_engine
