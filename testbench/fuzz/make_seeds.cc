// Writes the packet-core vectors and a spread of generated frames as seed
// files for the decoder fuzzer.
#include <cstdio>
#include <string>

#include "simnic/roce/icrc.h"
#include "vectors.h"

namespace {

// The frame with its IPv4 header checksum at 0xffff, the other form of
// ones' complement zero (the identification chosen so that the header
// sums to zero with it), and the ICRC made good again: valid, and what
// the encoder writes back as 0x0000 (fuzz_decode.cc). Empty if the frame
// is not IPv4.
std::vector<uint8_t> checksum_other_zero(std::vector<uint8_t> f) {
    size_t l3 = 14;
    if (f.size() > 18 && f[12] == 0x81 && f[13] == 0x00) l3 = 18;
    if (f.size() < l3 + 20 || f[l3 - 2] != 0x08 || f[l3 - 1] != 0x00) return {};
    const size_t hl = size_t(f[l3] & 0x0f) * 4;
    if (hl < 20 || f.size() < l3 + hl) return {};
    uint32_t sum = 0;
    for (size_t i = 0; i < hl; i += 2)
        if (i != 4 && i != 10) sum += uint32_t(f[l3 + i]) << 8 | f[l3 + i + 1];
    while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
    const uint16_t id = uint16_t(~sum);  // sum + id == 0xffff
    f[l3 + 4] = uint8_t(id >> 8);
    f[l3 + 5] = uint8_t(id);
    f[l3 + 10] = f[l3 + 11] = 0xff;
    const uint32_t icrc = simnic::roce::compute_icrc(f.data(), f.size(), l3, l3 + hl, simnic::roce::IpVersion::V4);
    for (size_t k = 0; k < 4; ++k) f[f.size() - 4 + k] = uint8_t(icrc >> (8 * k));  // carried little-endian
    return f;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: %s DIR\n", argv[0]);
        return 2;
    }
    const std::string dir = argv[1];
    int n = 0;
    auto put = [&](const std::vector<uint8_t>& f) {
        const std::string path = dir + "/seed-" + std::to_string(n++);
        FILE* fp = std::fopen(path.c_str(), "wb");
        if (!fp || std::fwrite(f.data(), 1, f.size(), fp) != f.size()) {
            std::fprintf(stderr, "cannot write %s\n", path.c_str());
            return false;
        }
        std::fclose(fp);
        return true;
    };
    for (const auto& v : simnic::tb::packet_core_vectors())
        if (!put(v.frame)) return 1;
    for (const auto& v : simnic::tb::packet_core_vectors()) {
        if (!v.icrc_valid) continue;
        const std::vector<uint8_t> f = checksum_other_zero(v.frame);
        if (!f.empty() && !put(f)) return 1;
    }
    std::printf("wrote %d seeds to %s\n", n, dir.c_str());
    return 0;
}
