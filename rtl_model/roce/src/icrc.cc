#include "simnic/roce/icrc.h"

#include <array>
#include <cstring>

#include "simnic/roce/bytes.h"

namespace simnic::roce {
namespace {

// Slicing-by-8 tables for the reflected CRC-32 polynomial. Built at compile
// time; table[k][b] is the CRC of byte b followed by k zero bytes.
using CrcTables = std::array<std::array<uint32_t, 256>, 8>;

constexpr CrcTables make_tables() {
    CrcTables t{};
    for (uint32_t b = 0; b < 256; ++b) {
        uint32_t c = b;
        for (int i = 0; i < 8; ++i) c = (c & 1) ? (c >> 1) ^ 0xedb88320u : c >> 1;
        t[0][b] = c;
    }
    for (size_t k = 1; k < 8; ++k)
        for (uint32_t b = 0; b < 256; ++b) t[k][b] = (t[k - 1][b] >> 8) ^ t[0][t[k - 1][b] & 0xff];
    return t;
}
constexpr CrcTables kTables = make_tables();

// The raw CRC register: no pre- or post-inversion.
uint32_t crc32_raw(uint32_t c, const uint8_t* p, size_t n) {
    while (n >= 8) {
        uint32_t lo = c ^ load_le32(p);
        uint32_t hi = load_le32(p + 4);
        c = kTables[7][lo & 0xff] ^ kTables[6][(lo >> 8) & 0xff] ^ kTables[5][(lo >> 16) & 0xff] ^
            kTables[4][lo >> 24] ^ kTables[3][hi & 0xff] ^ kTables[2][(hi >> 8) & 0xff] ^
            kTables[1][(hi >> 16) & 0xff] ^ kTables[0][hi >> 24];
        p += 8;
        n -= 8;
    }
    while (n--) c = (c >> 8) ^ kTables[0][(c ^ *p++) & 0xff];
    return c;
}

}  // namespace

uint32_t crc32(uint32_t crc, const uint8_t* data, size_t len) {
    return ~crc32_raw(~crc, data, len);
}

uint32_t compute_icrc(const uint8_t* frame, size_t len, size_t l3_off, size_t l4_off,
                      IpVersion version) {
    // The masked fields all sit in the IP, UDP and BTH headers. Copy those
    // (at most 60 + 8 + 12 bytes) and mask the copy; the rest is covered in
    // place.
    constexpr uint8_t kLrhStandIn[8] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
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

    uint32_t c = crc32_raw(0xffffffffu, kLrhStandIn, sizeof kLrhStandIn);
    c = crc32_raw(c, hdr, hdr_len);
    c = crc32_raw(c, frame + hdr_end, len - kIcrcBytes - hdr_end);
    return ~c;
}

}  // namespace simnic::roce
