// How CM requests, replies and events spell their binary fields in the
// daemon's JSON messages (cm_service.h has the requests): byte strings
// (addresses, private data) as lower-case hex. Shared by the daemon and the
// rdma_cm interposer in the verbs provider.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace simnic::control {

inline std::string to_hex(const uint8_t* p, size_t n) {
    static const char d[] = "0123456789abcdef";
    std::string s(n * 2, '0');
    for (size_t i = 0; i < n; ++i) {
        s[2 * i] = d[p[i] >> 4];
        s[2 * i + 1] = d[p[i] & 15];
    }
    return s;
}

// False (out unchanged) unless `s` is an even number of hex digits.
inline bool from_hex(const std::string& s, std::vector<uint8_t>& out) {
    if (s.size() % 2) return false;
    auto v = [](char c) -> int {
        if (c >= '0' && c <= '9') return c - '0';
        if (c >= 'a' && c <= 'f') return c - 'a' + 10;
        if (c >= 'A' && c <= 'F') return c - 'A' + 10;
        return -1;
    };
    std::vector<uint8_t> b(s.size() / 2);
    for (size_t i = 0; i < b.size(); ++i) {
        const int hi = v(s[2 * i]), lo = v(s[2 * i + 1]);
        if (hi < 0 || lo < 0) return false;
        b[i] = uint8_t(hi << 4 | lo);
    }
    out = std::move(b);
    return true;
}

}  // namespace simnic::control
