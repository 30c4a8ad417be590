// libFuzzer target for the packet decoder.
//
// Properties checked on every input:
//  - decoding never reads outside the input (ASan) and never hits UB (UBSan);
//  - a frame that decodes (with or without a bad ICRC) re-encodes to exactly
//    the same bytes, as long as its pad bytes are zero (the encoder writes
//    zero pad, and pad content is not a header field) and it carries no
//    Ethernet padding; an IPv4 header checksum of 0xffff, the other
//    ones'-complement zero, which the decoder accepts as Linux does, is
//    re-encoded as the computed 0x0000 (test_decode.cpp has the case);
//  - the decoder's verdict does not depend on anything past the input.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "simnic/roce/packet.h"

using namespace simnic::roce;

namespace {

bool pad_is_zero(const uint8_t* f, const Packet& p) {
    const uint8_t* pad = f + p.payload_off + p.payload_len;
    for (unsigned i = 0; i < p.hdr.bth.pad; ++i)
        if (pad[i]) return false;
    return true;
}

void check_roundtrip(const uint8_t* data, size_t size, bool ethernet) {
    Packet p;
    DecodeResult r = ethernet ? decode_frame(data, size, p) : decode_ip_packet(data, size, p);
    if (!r.ok() && r.error != DecodeError::BadIcrc) return;
    if (!pad_is_zero(data, p)) return;
    const size_t ip_end = p.l3_off + (p.ip_version == IpVersion::V4 ? p.ip4.total_len
                                                                    : kIpv6HdrBytes + p.ip6.payload_len);
    if (ip_end != size) return;  // Ethernet padding is not re-encoded
    // Where the input's IPv4 checksum sits, taken before encode_frame
    // rewrites the packet's offsets for the frame it builds.
    const bool csum_other_zero = p.ip_version == IpVersion::V4 && data[p.l3_off + 10] == 0xff &&
                                 data[p.l3_off + 11] == 0xff;
    const size_t csum_off = p.l3_off + 10;
    EncodeOptions keep;
    keep.fill_icrc = false;
    keep.udp_checksum = UdpChecksum::Keep;
    std::vector<uint8_t> out;
    if (!encode_frame(p, out, keep)) std::abort();
    const size_t eth = ethernet ? 0 : kEthHdrBytes;  // re-encoding adds an Ethernet header
    if (out.size() != size + eth) std::abort();
    // The one difference allowed: the checksum's other zero, written as 0x0000.
    uint8_t* csum = out.data() + eth + csum_off;
    if (csum_other_zero && csum[0] == 0 && csum[1] == 0) csum[0] = csum[1] = 0xff;
    if (std::memcmp(out.data() + eth, data, size) != 0) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    // Copy into an exact-size heap buffer so ASan sees any overread.
    std::vector<uint8_t> buf(data, data + size);
    check_roundtrip(buf.data(), buf.size(), true);
    check_roundtrip(buf.data(), buf.size(), false);
    return 0;
}
