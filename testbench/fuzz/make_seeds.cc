// Writes the packet-core vectors and a spread of generated frames as seed
// files for the decoder fuzzer.
#include <cstdio>
#include <string>

#include "simnic/roce/bytes.h"
#include "simnic/roce/icrc.h"
#include "simnic/roce/packet.h"
#include "vectors.h"

namespace {

using namespace simnic::roce;

// The frame with its IPv4 header checksum at 0xffff, the other form of
// ones' complement zero (the identification chosen so that the header
// sums to zero with it), and the ICRC made good again: valid, and what
// the encoder writes back as 0x0000 (fuzz_decode.cc). Empty if the frame
// is not IPv4.
std::vector<uint8_t> checksum_other_zero(std::vector<uint8_t> f) {
    Packet p;
    if (!decode_frame(f.data(), f.size(), p).ok() || p.ip_version != IpVersion::V4) return {};
    uint8_t* ip = f.data() + p.l3_off;
    const size_t hl = p.l4_off - p.l3_off;
    ip[4] = ip[5] = ip[10] = ip[11] = 0;
    // The checksum of the other words is the complement of their sum: as
    // the identification, it completes the sum to 0xffff.
    store_be16(ip + 4, ipv4_checksum(ip, hl));
    ip[10] = ip[11] = 0xff;
    const size_t end = p.l3_off + p.ip4.total_len;  // the ICRC's end, before any Ethernet padding
    store_le32(f.data() + end - kIcrcBytes, compute_icrc(f.data(), end, p.l3_off, p.l4_off, IpVersion::V4));
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
