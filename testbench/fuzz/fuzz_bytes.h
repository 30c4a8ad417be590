// The byte stream of the structured fuzz inputs (fuzz_cm, fuzz_engine_rx):
// big-endian fields read by the fuzzer, where a read past the end gives
// zeros so that any input, however short, is a whole program; written the
// same way by the seed programs, which store each seed as a file.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

namespace simnic::fuzz {

struct ByteReader {
    const std::uint8_t* p;
    std::size_t n, i = 0;
    ByteReader(const std::uint8_t* d, std::size_t s) : p(d), n(s) {}
    bool done() const { return i >= n; }
    std::uint8_t u8() { return i < n ? p[i++] : 0; }
    std::uint16_t u16() { return static_cast<std::uint16_t>(u8() << 8 | u8()); }
    std::uint32_t u32() { return std::uint32_t{u16()} << 16 | u16(); }
    std::uint64_t u64() { return std::uint64_t{u32()} << 32 | u32(); }
};

// Self: the input's own writer, whose step builders chain with these.
template <class Self>
struct ByteWriter {
    std::vector<std::uint8_t> b;
    Self& u8(std::uint8_t v) {
        b.push_back(v);
        return static_cast<Self&>(*this);
    }
    Self& u16(std::uint16_t v) { return u8(static_cast<std::uint8_t>(v >> 8)).u8(static_cast<std::uint8_t>(v)); }
    Self& u32(std::uint32_t v) { return u16(static_cast<std::uint16_t>(v >> 16)).u16(static_cast<std::uint16_t>(v)); }
    Self& u64(std::uint64_t v) { return u32(static_cast<std::uint32_t>(v >> 32)).u32(static_cast<std::uint32_t>(v)); }
};

// A seed program's main: `PROGRAM DIR` writes each seed as DIR/NAME.
template <class W>
int write_seed_files(int argc, char** argv, const std::vector<std::pair<const char*, W>>& seeds) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: %s DIR\n", argv[0]);
        return 2;
    }
    for (const auto& [name, w] : seeds) {
        std::ofstream f(std::string(argv[1]) + "/" + name, std::ios::binary);
        f.write(reinterpret_cast<const char*>(w.b.data()), static_cast<std::streamsize>(w.b.size()));
        if (!f) {
            std::fprintf(stderr, "cannot write %s/%s\n", argv[1], name);
            return 1;
        }
    }
    return 0;
}

}  // namespace simnic::fuzz
