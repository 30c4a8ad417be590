#include "simnic/roce/icrc.h"

#include <array>
#include <cstring>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define SIMNIC_CRC_HAVE_X86 1
#else
#define SIMNIC_CRC_HAVE_X86 0
#endif

#include "simnic/roce/bytes.h"

// CRC-32 of IEEE 802.3 in two implementations: slicing-by-8 tables for short
// inputs (and any CPU), and carry-less multiplication (PCLMULQDQ) folding for
// long ones. Every constant either uses is computed below, at compile time,
// from the generator polynomial; nothing is a copied magic number.
//
// Notation. A message is a polynomial over GF(2) whose first bit (bit 0 of
// byte 0: the CRC is "reflected") is the highest power. With the register
// preset already XORed into the first 32 message bits, the CRC register after
// a message M is M(x) * x^32 mod P(x).
//
// Two bit orders appear:
//  - "normal": bit i of a word is the coefficient of x^i. Used only for the
//    compile-time algebra in namespace gf2, where it reads naturally.
//  - "reflected, width w": bit i is the coefficient of x^(w-1-i). This is how
//    the CRC register and the message bytes are laid out, so every run-time
//    value is reflected. A 128-bit block loaded from memory is reflected with
//    width 128; its low 64-bit half holds the higher powers.
namespace simnic::roce {
namespace {

namespace gf2 {

// The IEEE 802.3 generator, from its list of exponents.
constexpr uint64_t make_generator() {
    constexpr unsigned kExponents[] = {32, 26, 23, 22, 16, 12, 11, 10, 8, 7, 5, 4, 2, 1, 0};
    uint64_t p = 0;
    for (unsigned e : kExponents) p |= uint64_t{1} << e;
    return p;
}
constexpr uint64_t kP = make_generator();  // normal order, degree 32

// Reverse the low `width` bits of v (normal <-> reflected of that width).
constexpr uint64_t reflect(uint64_t v, unsigned width) {
    uint64_t r = 0;
    for (unsigned i = 0; i < width; ++i)
        if ((v >> i) & 1) r |= uint64_t{1} << (width - 1 - i);
    return r;
}

// x^n mod P, normal order (degree < 32).
constexpr uint64_t xpow_mod(unsigned n) {
    uint64_t r = 1;
    for (unsigned i = 0; i < n; ++i) {
        r <<= 1;
        if ((r >> 32) & 1) r ^= kP;
    }
    return r;
}

// a * b mod x^64 (carry-less), normal order. Only used to check constants.
constexpr uint64_t mul_low64(uint64_t a, uint64_t b) {
    uint64_t r = 0;
    for (unsigned i = 0; i < 64; ++i)
        if ((b >> i) & 1) r ^= a << i;
    return r;
}

// floor(x^64 / P), normal order (degree 32): schoolbook division of x^64,
// one dividend bit at a time from the top. When the running remainder reaches
// degree 32 after bringing in the dividend bit of degree d, the quotient gets
// x^d and P is subtracted.
constexpr uint64_t barrett_quotient() {
    uint64_t rem = 0, quo = 0;
    for (int d = 64; d >= 0; --d) {
        rem = (rem << 1) | (d == 64 ? 1u : 0u);
        if ((rem >> 32) & 1) {
            rem ^= kP;
            quo |= uint64_t{1} << d;
        }
    }
    return quo;
}

// Reflected width-32 form of x^n mod P: the form the run-time code multiplies
// with.
constexpr uint32_t xpow_mod_r32(unsigned n) { return static_cast<uint32_t>(reflect(xpow_mod(n), 32)); }

}  // namespace gf2

// The CRC register's polynomial (P without x^32, reflected width 32).
constexpr uint32_t kPolyR32 = static_cast<uint32_t>(gf2::reflect(gf2::kP & 0xffffffffu, 32));
static_assert(kPolyR32 == 0xedb88320u, "IEEE 802.3 polynomial, as zlib has it");

// Self-checks of the algebra: x^32 = P - x^32 terms; multiplying exponents adds.
static_assert(gf2::xpow_mod(32) == (gf2::kP ^ (uint64_t{1} << 32)));
static_assert(gf2::xpow_mod(64) ==
              ([] {
                  // (x^32 mod P)^2 mod P, reduced bit by bit from the top.
                  uint64_t a = gf2::xpow_mod(32), r = 0;
                  for (int i = 31; i >= 0; --i) {
                      r <<= 1;
                      if ((r >> 32) & 1) r ^= gf2::kP;
                      if ((a >> i) & 1) r ^= a;
                  }
                  return r;
              })());
// Barrett: x^64 = mu * P + (x^64 mod P), so the low 64 bits of mu * P are
// x^64 mod P (the x^64 term falls off the top).
static_assert(gf2::mul_low64(gf2::barrett_quotient(), gf2::kP) == gf2::xpow_mod(64));
static_assert((gf2::barrett_quotient() >> 32) == 1, "mu has degree 32");

// ---------------------------------------------------------------------------
// Slicing-by-8 tables.

// Advance a reflected register by eight zero bits: multiply by x^8 mod P.
constexpr uint32_t times_x8(uint32_t v) {
    for (int i = 0; i < 8; ++i) v = (v >> 1) ^ ((v & 1u) ? kPolyR32 : 0u);
    return v;
}

// kSlice[k][b] = register after byte b, as the register's low byte, followed
// by k zero bytes: b(x) * x^(8(k+1)) mod P (reflected). A block of eight bytes
// is then a XOR of one lookup per byte, byte j using kSlice[7 - j].
using SliceTables = std::array<std::array<uint32_t, 256>, 8>;

constexpr SliceTables make_slice_tables() {
    SliceTables t{};
    for (uint32_t b = 0; b < 256; ++b) {
        uint32_t v = times_x8(b);
        for (size_t k = 0; k < 8; ++k) {
            t[k][b] = v;
            v = times_x8(v);
        }
    }
    return t;
}
constexpr SliceTables kSlice = make_slice_tables();
// Byte 0x80 is the register's x^24 term; eight steps take it to x^32 = P - x^32.
static_assert(kSlice[0][0x80] == kPolyR32);

// One byte into a raw register (no pre/post inversion).
constexpr uint32_t step_byte(uint32_t c, uint8_t b) {
    return (c >> 8) ^ kSlice[0][(c ^ b) & 0xffu];
}

// The raw CRC register over n bytes by the tables.
uint32_t table_raw(uint32_t c, const uint8_t* p, size_t n) {
    for (; n >= 8; n -= 8, p += 8) {
        const uint32_t a = c ^ load_le32(p);  // bytes 0..3, register folded in
        const uint32_t b = load_le32(p + 4);  // bytes 4..7
        c = kSlice[7][a & 0xffu] ^ kSlice[6][(a >> 8) & 0xffu] ^ kSlice[5][(a >> 16) & 0xffu] ^
            kSlice[4][a >> 24] ^ kSlice[3][b & 0xffu] ^ kSlice[2][(b >> 8) & 0xffu] ^
            kSlice[1][(b >> 16) & 0xffu] ^ kSlice[0][b >> 24];
    }
    for (size_t i = 0; i < n; ++i) c = step_byte(c, p[i]);
    return c;
}

// ---------------------------------------------------------------------------
// Carry-less multiply folding (x86 only).
#if SIMNIC_CRC_HAVE_X86
//
// The product rule everything below relies on. Let q be a 64-bit word holding
// Q(x) reflected with width 64, and k a 64-bit word whose low 32 bits hold
// K(x) = x^n mod P reflected with width 32. PCLMULQDQ(q, k) has bit i+j set
// from q_i and k_j, i.e. from x^(63-i) * x^(31-j) = x^(94-(i+j)): the 128-bit
// product is Q*K reflected with width 95. Read with a wider width w (bit m
// standing for x^(w-1-m)), the same bits mean Q*K*x^(w-95). So a constant
// x^(E - (w - 95)) mod P gives, read at width w, something congruent to
// Q*x^E: each constant below is the exponent wanted minus that offset.
//
// Folding a 128-bit block V = H*x^64 + L (H, the higher powers, is the low
// 64-bit half of the register; L the high half) forward by F bits, i.e. into V*x^F mod P within 128 bits:
// V*x^F = H*x^(64+F) + L*x^F, and the result is read at width 128 (offset 33),
// so the two constants are x^(F+31) for H and x^(F-33) for L.
struct FoldKeys {
    uint32_t for_high_powers;  // multiplies the low 64-bit half
    uint32_t for_low_powers;   // multiplies the high 64-bit half
};
constexpr FoldKeys fold_keys(unsigned bits) {
    return {gf2::xpow_mod_r32(bits + 64 - 33), gf2::xpow_mod_r32(bits - 33)};
}
// Main loop: four 128-bit lanes, each moving 4*128 bits per step.
constexpr FoldKeys kFold512 = fold_keys(512);
// Merging the four lanes: lane i sits 3-i blocks (of 128 bits) before the
// last one, so it moves forward by that much.
constexpr FoldKeys kFold384 = fold_keys(384);
constexpr FoldKeys kFold256 = fold_keys(256);
constexpr FoldKeys kFold128 = fold_keys(128);

// Final reduction of one 128-bit block V = H*x^64 + L, to V*x^32 mod P:
//  1. V*x^32 = H*x^96 + L*x^32. L*x^32 is just L read at width 96, and
//     H*(x^96 mod P) comes from the product rule read at width 96 (offset 1),
//     hence x^95. The sum U has 96 bits.
//  2. U = U1*x^64 + U0 (U1 its top 32 bits). U1*x^64 from the product rule
//     with U1 in place of Q (a 32-bit operand: width 63 instead of 95) read at
//     width 64 (offset 1), hence x^63. Adding U0 gives W, 64 bits.
//  3. W mod P by Barrett reduction, below.
constexpr uint32_t kReduce96 = gf2::xpow_mod_r32(95);
constexpr uint32_t kReduce64 = gf2::xpow_mod_r32(63);
// Barrett for W = W1*x^32 + W0 (W1, W0 32-bit): the quotient W div P is the
// top 32 bits (degrees 32..63) of W1*mu, mu = floor(x^64 / P), and the result
// is W0 + (quotient*P mod x^32). mu and P have degree 32, so they are kept
// reflected with width 33; a 32-bit operand times a 33-bit one then gives
// bits reflected with width 64, with degrees 32..63 in the low half and
// degrees 0..31 in the high half.
constexpr uint64_t kBarrettMuR33 = gf2::reflect(gf2::barrett_quotient(), 33);
constexpr uint64_t kPolyR33 = gf2::reflect(gf2::kP, 33);

#define SIMNIC_CLMUL_TARGET __attribute__((target("pclmul,sse4.1")))

SIMNIC_CLMUL_TARGET inline __m128i keys(FoldKeys k) {
    return _mm_set_epi64x(static_cast<long long>(k.for_low_powers),
                          static_cast<long long>(k.for_high_powers));
}

SIMNIC_CLMUL_TARGET inline __m128i load128(const uint8_t* p) {
    return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
}

// v * x^F mod P within 128 bits (see FoldKeys).
SIMNIC_CLMUL_TARGET inline __m128i advance(__m128i v, __m128i k) {
    return _mm_xor_si128(_mm_clmulepi64_si128(v, k, 0x00), _mm_clmulepi64_si128(v, k, 0x11));
}

// Keep the low 32 bits, zero the rest.
SIMNIC_CLMUL_TARGET inline __m128i low32(__m128i v) {
    return _mm_blend_epi16(_mm_setzero_si128(), v, 0x03);
}

// The raw register equal to V * x^32 mod P.
SIMNIC_CLMUL_TARGET inline uint32_t reduce(__m128i v) {
    const __m128i k = _mm_set_epi64x(static_cast<long long>(kReduce64),
                                     static_cast<long long>(kReduce96));
    // Step 1: H * x^95-key, plus L moved down to the top of the 96 bits.
    const __m128i u = _mm_xor_si128(_mm_clmulepi64_si128(v, k, 0x00), _mm_srli_si128(v, 8));
    // Step 2: U1 (low 32 bits) * x^63-key, plus U0 (bits 32..95) moved down.
    const __m128i w = _mm_xor_si128(_mm_clmulepi64_si128(low32(u), k, 0x10), _mm_srli_si128(u, 4));
    // Step 3: Barrett.
    const __m128i b = _mm_set_epi64x(static_cast<long long>(kPolyR33),
                                     static_cast<long long>(kBarrettMuR33));
    const __m128i quo = low32(_mm_clmulepi64_si128(low32(w), b, 0x00));
    const __m128i qp = _mm_clmulepi64_si128(quo, b, 0x10);
    return static_cast<uint32_t>(_mm_extract_epi32(_mm_xor_si128(w, qp), 1));
}

// The raw register over n bytes by folding; the last n % 16 bytes (and inputs
// under 16 bytes) go through the tables.
SIMNIC_CLMUL_TARGET uint32_t clmul_raw(uint32_t c, const uint8_t* p, size_t n) {
    if (n < 16) return table_raw(c, p, n);
    const __m128i seed = _mm_cvtsi32_si128(static_cast<int>(c));
    __m128i acc;
    if (n >= 64) {
        __m128i l0 = _mm_xor_si128(load128(p), seed);
        __m128i l1 = load128(p + 16);
        __m128i l2 = load128(p + 32);
        __m128i l3 = load128(p + 48);
        p += 64;
        n -= 64;
        const __m128i k512 = keys(kFold512);
        while (n >= 64) {
            l0 = _mm_xor_si128(advance(l0, k512), load128(p));
            l1 = _mm_xor_si128(advance(l1, k512), load128(p + 16));
            l2 = _mm_xor_si128(advance(l2, k512), load128(p + 32));
            l3 = _mm_xor_si128(advance(l3, k512), load128(p + 48));
            p += 64;
            n -= 64;
        }
        // Bring every lane to the position of the last one and add them.
        acc = _mm_xor_si128(_mm_xor_si128(advance(l0, keys(kFold384)), advance(l1, keys(kFold256))),
                            _mm_xor_si128(advance(l2, keys(kFold128)), l3));
    } else {
        acc = _mm_xor_si128(load128(p), seed);
        p += 16;
        n -= 16;
    }
    const __m128i k128 = keys(kFold128);
    for (; n >= 16; n -= 16, p += 16) acc = _mm_xor_si128(advance(acc, k128), load128(p));
    return table_raw(reduce(acc), p, n);
}

#undef SIMNIC_CLMUL_TARGET

// The same folding four times as wide (VPCLMULQDQ on 512-bit registers): each
// register holds four consecutive 128-bit blocks, and the product rule holds
// per block, so a key broadcast to the four blocks moves all of them forward
// by the same distance. Four registers take 256 bytes per step; at a
// payload's length that is about four times the 128-bit path's speed, and
// the ICRC is computed twice per packet (sent and received).
// Main loop: four registers, each moving 4*512 bits per step.
constexpr FoldKeys kFold2048 = fold_keys(2048);
// Merging the four registers: register i sits 3-i registers (of 512 bits)
// before the last one.
constexpr FoldKeys kFold1536 = fold_keys(1536);
constexpr FoldKeys kFold1024 = fold_keys(1024);

#define SIMNIC_VCLMUL_TARGET __attribute__((target("vpclmulqdq,avx512f,avx512vl,pclmul,sse4.1")))

// (GCC 12's plain broadcast and extract intrinsics pass an undefined vector
// that -Wmaybe-uninitialized reports; the set and zero-masked forms below
// do the same without one.)
SIMNIC_VCLMUL_TARGET inline __m512i keys512(FoldKeys k) {
    const auto hi = static_cast<long long>(k.for_high_powers), lo = static_cast<long long>(k.for_low_powers);
    return _mm512_set_epi64(lo, hi, lo, hi, lo, hi, lo, hi);
}

// 128-bit block i of v.
template <int I>
SIMNIC_VCLMUL_TARGET inline __m128i block(__m512i v) {
    return _mm512_maskz_extracti32x4_epi32(0xf, v, I);
}

SIMNIC_VCLMUL_TARGET inline __m512i load512(const uint8_t* p) { return _mm512_loadu_si512(p); }

// Each 128-bit block of v times x^F mod P (see FoldKeys).
SIMNIC_VCLMUL_TARGET inline __m512i advance512(__m512i v, __m512i k) {
    return _mm512_xor_si512(_mm512_clmulepi64_epi128(v, k, 0x00), _mm512_clmulepi64_epi128(v, k, 0x11));
}

SIMNIC_VCLMUL_TARGET uint32_t vclmul_raw(uint32_t c, const uint8_t* p, size_t n) {
    if (n < 256) return clmul_raw(c, p, n);
    __m512i z0 = _mm512_xor_si512(load512(p), _mm512_zextsi128_si512(_mm_cvtsi32_si128(static_cast<int>(c))));
    __m512i z1 = load512(p + 64);
    __m512i z2 = load512(p + 128);
    __m512i z3 = load512(p + 192);
    p += 256;
    n -= 256;
    const __m512i k2048 = keys512(kFold2048);
    while (n >= 256) {
        z0 = _mm512_xor_si512(advance512(z0, k2048), load512(p));
        z1 = _mm512_xor_si512(advance512(z1, k2048), load512(p + 64));
        z2 = _mm512_xor_si512(advance512(z2, k2048), load512(p + 128));
        z3 = _mm512_xor_si512(advance512(z3, k2048), load512(p + 192));
        p += 256;
        n -= 256;
    }
    const __m512i k512 = keys512(kFold512);
    __m512i z = _mm512_xor_si512(_mm512_xor_si512(advance512(z0, keys512(kFold1536)), advance512(z1, keys512(kFold1024))),
                                 _mm512_xor_si512(advance512(z2, k512), z3));
    for (; n >= 64; n -= 64, p += 64) z = _mm512_xor_si512(advance512(z, k512), load512(p));
    // The register's four blocks into one, as the 128-bit path merges its
    // lanes, then that path's tail.
    __m128i acc = _mm_xor_si128(
        _mm_xor_si128(advance(block<0>(z), keys(kFold384)),
                      advance(block<1>(z), keys(kFold256))),
        _mm_xor_si128(advance(block<2>(z), keys(kFold128)), block<3>(z)));
    const __m128i k128 = keys(kFold128);
    for (; n >= 16; n -= 16, p += 16) acc = _mm_xor_si128(advance(acc, k128), load128(p));
    return table_raw(reduce(acc), p, n);
}

#undef SIMNIC_VCLMUL_TARGET

bool detect_clmul() {
    __builtin_cpu_init();
    return __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse4.1");
}

// What the 512-bit path needs besides detect_clmul()'s. libgcc's check of
// avx512f includes the OS's saving of the 512-bit state (XGETBV). Valgrind's
// CPU has no AVX-512, so callgrind counts the 128-bit path.
bool detect_vclmul() {
    __builtin_cpu_init();
    return __builtin_cpu_supports("vpclmulqdq") && __builtin_cpu_supports("avx512f") &&
           __builtin_cpu_supports("avx512vl");
}

#else

uint32_t clmul_raw(uint32_t c, const uint8_t* p, size_t n) { return table_raw(c, p, n); }
uint32_t vclmul_raw(uint32_t c, const uint8_t* p, size_t n) { return table_raw(c, p, n); }
bool detect_clmul() { return false; }
bool detect_vclmul() { return false; }

#endif

// Decided once at start-up. Until these initializers have run (another
// translation unit's static constructor calling crc32) they read false and
// the tables are used, which is just as correct.
const bool g_clmul = detect_clmul();
const bool g_vclmul = g_clmul && detect_vclmul();  // initialized after g_clmul: same unit, later

// The raw register over n bytes, by whichever implementation suits.
inline uint32_t crc_raw(uint32_t c, const uint8_t* p, size_t n) {
    if (n >= detail::kVclmulMinBytes && g_vclmul) return vclmul_raw(c, p, n);
    if (n >= detail::kClmulMinBytes && g_clmul) return clmul_raw(c, p, n);
    return table_raw(c, p, n);
}

}  // namespace

namespace detail {

uint32_t crc32_portable(uint32_t crc, const uint8_t* data, size_t len) {
    return ~table_raw(~crc, data, len);
}

bool clmul_available() { return g_clmul; }

uint32_t crc32_clmul(uint32_t crc, const uint8_t* data, size_t len) {
    return ~clmul_raw(~crc, data, len);
}

bool vclmul_available() { return g_vclmul; }

uint32_t crc32_vclmul(uint32_t crc, const uint8_t* data, size_t len) {
    return ~vclmul_raw(~crc, data, len);
}

}  // namespace detail

uint32_t crc32(uint32_t crc, const uint8_t* data, size_t len) {
    return ~crc_raw(~crc, data, len);
}

namespace {
// The register after the preset and the eight 0xFF bytes that stand in for
// the LRH: the same for every frame, so computed here once.
constexpr uint32_t lrh_stand_in_register() {
    uint32_t c = 0xffffffffu;
    for (int i = 0; i < 8; ++i) c = step_byte(c, 0xff);
    return c;
}
constexpr uint32_t kAfterLrhStandIn = lrh_stand_in_register();
}  // namespace

uint32_t compute_icrc(const uint8_t* frame, size_t len, size_t l3_off, size_t l4_off,
                      IpVersion version) {
    // The masked fields all sit in the IP, UDP and BTH headers. Copy those
    // (at most 60 + 8 + 12 bytes) and mask the copy; the rest is covered in
    // place. Three pieces: the LRH stand-in (a constant register), the masked
    // header copy (short: tables) and the payload (long ones fold with
    // PCLMULQDQ).
    const size_t hdr_end = l4_off + kUdpHdrBytes + kBthBytes;
    uint8_t hdr[60 + kUdpHdrBytes + kBthBytes];
    // Callers pass offsets from a decoded or encoded frame; refuse anything
    // else rather than read or write out of bounds.
    if (l4_off < l3_off || l4_off - l3_off > 60 || hdr_end + kIcrcBytes > len) return 0;
    const size_t hdr_len = hdr_end - l3_off;
    std::memcpy(hdr, frame + l3_off, hdr_len);

    if (version == IpVersion::V4) {
        hdr[1] = 0xff;                 // TOS
        hdr[8] = 0xff;                 // TTL
        hdr[10] = hdr[11] = 0xff;      // header checksum
    } else {
        hdr[0] |= 0x0f;                // traffic class, high nibble
        hdr[1] = hdr[2] = hdr[3] = 0xff;  // traffic class low nibble, flow label
        hdr[7] = 0xff;                 // hop limit
    }
    const size_t udp = l4_off - l3_off;
    hdr[udp + 6] = hdr[udp + 7] = 0xff;  // UDP checksum
    hdr[udp + kUdpHdrBytes + 4] = 0xff;  // BTH byte 4: FECN, BECN, resv6a

    uint32_t c = crc_raw(kAfterLrhStandIn, hdr, hdr_len);
    c = crc_raw(c, frame + hdr_end, len - kIcrcBytes - hdr_end);
    return ~c;
}

}  // namespace simnic::roce
