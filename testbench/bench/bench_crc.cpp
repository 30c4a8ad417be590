// Throughput of the CRC-32 implementations, in GB/s (10^9 bytes per second),
// on buffers of 64 B, 1 KiB, 4 KiB and 64 KiB already in cache.
//
//   simnic_bench_crc [milliseconds per trial, default 25]
//
// Each figure is the best of several trials, each a loop of independent CRCs
// of the same buffer. Not a test: numbers depend on the machine and its load.
#include <zlib.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "simnic/roce/icrc.h"

namespace roce = simnic::roce;

namespace {

// The baseline: one table lookup per byte, the way roce::crc32 was first
// written. The table holds, for each byte value, the register that byte
// leaves behind when shifted through an empty register.
std::array<uint32_t, 256> make_byte_table() {
    std::array<uint32_t, 256> t{};
    for (uint32_t v = 0; v < 256; ++v) {
        uint32_t r = v;
        for (int bit = 0; bit < 8; ++bit) r = (r >> 1) ^ (0xedb88320u & (0u - (r & 1u)));
        t[v] = r;
    }
    return t;
}
const std::array<uint32_t, 256> kByteTable = make_byte_table();

uint32_t crc32_byte_table(uint32_t crc, const uint8_t* p, size_t n) {
    uint32_t r = ~crc;
    for (const uint8_t* end = p + n; p != end; ++p) r = kByteTable[(r ^ *p) & 0xffu] ^ (r >> 8);
    return ~r;
}

uint32_t crc32_zlib(uint32_t crc, const uint8_t* p, size_t n) {
    return static_cast<uint32_t>(::crc32(crc, p, static_cast<uInt>(n)));
}

struct Impl {
    const char* name;
    uint32_t (*fn)(uint32_t, const uint8_t*, size_t);
};

using Clock = std::chrono::steady_clock;

// Best throughput over `trials` runs of about `ms` milliseconds each.
double measure(const Impl& im, const uint8_t* buf, size_t len, int ms, int trials) {
    // Find an iteration count that takes about `ms`.
    size_t iters = 16;
    for (;;) {
        auto t0 = Clock::now();
        uint32_t sink = 0;
        for (size_t i = 0; i < iters; ++i) {
            asm volatile("" : : "r"(buf) : "memory");  // no hoisting the call
            sink ^= im.fn(static_cast<uint32_t>(i), buf, len);
        }
        asm volatile("" : : "r"(sink));
        const double s = std::chrono::duration<double>(Clock::now() - t0).count();
        if (s * 1e3 >= ms / 4.0 || iters > (size_t{1} << 40)) {
            iters = std::max<size_t>(1, size_t(double(iters) * (ms / 1e3) / std::max(s, 1e-9)));
            break;
        }
        iters *= 4;
    }
    double best = 0;
    for (int t = 0; t < trials; ++t) {
        auto t0 = Clock::now();
        uint32_t sink = 0;
        for (size_t i = 0; i < iters; ++i) {
            asm volatile("" : : "r"(buf) : "memory");
            sink ^= im.fn(static_cast<uint32_t>(i), buf, len);
        }
        asm volatile("" : : "r"(sink));
        const double s = std::chrono::duration<double>(Clock::now() - t0).count();
        best = std::max(best, double(len) * double(iters) / s / 1e9);
    }
    return best;
}

}  // namespace

int main(int argc, char** argv) {
    const int ms = argc > 1 ? std::max(1, std::atoi(argv[1])) : 25;
    constexpr int kTrials = 7;
    const size_t sizes[] = {64, 1024, 4096, 65536};

    std::vector<Impl> impls = {{"byte table (old)", &crc32_byte_table},
                               {"slicing-by-8", &roce::detail::crc32_portable}};
    if (roce::detail::clmul_available())
        impls.push_back({"clmul (PCLMULQDQ)", &roce::detail::crc32_clmul});
    else
        std::printf("note: this CPU lacks PCLMULQDQ/SSE4.1; the clmul row is left out\n");
    if (roce::detail::vclmul_available())
        impls.push_back({"vclmul (VPCLMULQDQ)", &roce::detail::crc32_vclmul});
    else
        std::printf("note: this CPU lacks VPCLMULQDQ/AVX-512; the vclmul row is left out\n");
    impls.push_back({"roce::crc32", &roce::crc32});
    impls.push_back({"zlib crc32", &crc32_zlib});

    std::vector<uint8_t> buf(65536);
    std::mt19937_64 rng(42);
    for (auto& b : buf) b = static_cast<uint8_t>(rng());

    // Every implementation must agree before any of them is timed.
    for (size_t len : sizes) {
        const uint32_t want = crc32_zlib(0, buf.data(), len);
        for (const auto& im : impls) {
            if (im.fn(0, buf.data(), len) != want) {
                std::fprintf(stderr, "%s disagrees with zlib at %zu bytes\n", im.name, len);
                return 1;
            }
        }
    }

    std::printf("CRC-32 throughput, GB/s (best of %d trials of ~%d ms)\n", kTrials, ms);
    std::printf("%-20s", "");
    for (size_t len : sizes) {
        if (len >= 1024) std::printf("%10zu KiB", len / 1024);
        else std::printf("%12zu B", len);
    }
    std::printf("\n");
    for (const auto& im : impls) {
        std::printf("%-20s", im.name);
        for (size_t len : sizes) std::printf("%14.2f", measure(im, buf.data(), len, ms, kTrials));
        std::printf("\n");
        std::fflush(stdout);
    }
    return 0;
}
