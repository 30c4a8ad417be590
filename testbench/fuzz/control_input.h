// How the control-socket fuzzer (fuzz_control.cc) reads its input, and how
// its seed maker (make_control_seeds.cc) writes one: a sequence of actions
// by a few clients of one daemon.
//
//   action  := op:u8 ...
//   op % 4 == 0 (send):   conn:u8 nfds:u8 fd_kind:u8 * nfds len:u16le bytes[len]
//   op % 4 == 1 (close):  conn:u8      the client closes that connection
//   op % 4 == 2 (pump):                the daemon runs until idle
//   op % 4 == 3 (reopen): conn:u8      a new connection in that slot
//
// A message can carry descriptors of the kinds below, as a hostile or
// broken client would pass them: memfds of various sizes, sealed or not,
// pipes, /dev/null, an eventfd, a socket.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace simnic::fuzz {

inline constexpr std::size_t kConns = 4;

enum class FdKind : std::uint8_t {
    Memfd4k = 0,        // sealed against growing and shrinking, 4 KiB
    Memfd64k,           // sealed, 64 KiB
    Memfd4kUnsealed,    // not sealed
    Memfd0,             // sealed, empty
    Memfd1g,            // sealed, 1 GiB, sparse
    MemfdOdd,           // sealed, 4097 bytes
    PipeRead,
    PipeWrite,
    DevNull,
    EventFd,
    Socket,             // one end of a socketpair
    kCount
};
// Sizes of the memfd kinds, for seeds that must match (add_shm's size).
inline constexpr std::uint64_t kMemfdBytes[] = {4096, 65536, 4096, 0, std::uint64_t{1} << 30, 4097};

struct Action {
    enum Kind : std::uint8_t { Send = 0, Close = 1, Pump = 2, Reopen = 3 } kind = Send;
    std::uint8_t conn = 0;
    std::vector<FdKind> fds;
    std::string bytes;
};

inline std::string encode(const std::vector<Action>& actions) {
    std::string out;
    for (const Action& a : actions) {
        out.push_back(static_cast<char>(a.kind));
        if (a.kind == Action::Pump) continue;
        out.push_back(static_cast<char>(a.conn));
        if (a.kind != Action::Send) continue;
        out.push_back(static_cast<char>(a.fds.size()));
        for (FdKind k : a.fds) out.push_back(static_cast<char>(k));
        const std::size_t n = a.bytes.size() > 0xFFFF ? 0xFFFF : a.bytes.size();
        out.push_back(static_cast<char>(n & 0xFF));
        out.push_back(static_cast<char>(n >> 8));
        out.append(a.bytes, 0, n);
    }
    return out;
}

// Reads actions until the input runs out (a cut action is dropped).
inline std::vector<Action> decode(const std::uint8_t* p, std::size_t n) {
    std::vector<Action> out;
    std::size_t i = 0;
    auto byte = [&](std::uint8_t& b) {
        if (i >= n) return false;
        b = p[i++];
        return true;
    };
    for (;;) {
        std::uint8_t op = 0;
        if (!byte(op)) break;
        Action a;
        a.kind = static_cast<Action::Kind>(op % 4);
        if (a.kind != Action::Pump) {
            if (!byte(a.conn)) break;
            a.conn %= kConns;
        }
        if (a.kind == Action::Send) {
            std::uint8_t nfds = 0, lo = 0, hi = 0;
            if (!byte(nfds)) break;
            nfds %= 12;  // up to 11: past the 8 a message may carry
            bool cut = false;
            for (std::uint8_t k = 0; k < nfds && !cut; ++k) {
                std::uint8_t kind = 0;
                cut = !byte(kind);
                a.fds.push_back(static_cast<FdKind>(kind % static_cast<std::uint8_t>(FdKind::kCount)));
            }
            if (cut || !byte(lo) || !byte(hi)) break;
            const std::size_t len = std::min<std::size_t>(std::size_t{lo} | std::size_t{hi} << 8, n - i);
            a.bytes.assign(reinterpret_cast<const char*>(p + i), len);
            i += len;
        }
        out.push_back(std::move(a));
    }
    return out;
}

}  // namespace simnic::fuzz
