#include "simnic/model/fabric/pfc.h"

namespace simnic::model::fabric {

namespace {
void put16(std::uint8_t* p, std::uint16_t v) {
    p[0] = std::uint8_t(v >> 8);
    p[1] = std::uint8_t(v);
}
std::uint16_t get16(const std::uint8_t* p) { return std::uint16_t(p[0] << 8 | p[1]); }
}  // namespace

std::vector<std::uint8_t> encode_pfc(const PfcFrame& p) {
    std::vector<std::uint8_t> f(kPfcFrameBytes, 0);
    for (unsigned i = 0; i < 6; ++i) {
        f[i] = kPfcDst[i];
        f[6 + i] = p.src[i];
    }
    put16(&f[12], kEtherTypeMacControl);
    put16(&f[14], kPfcOpcode);
    put16(&f[16], p.class_enable);
    for (unsigned i = 0; i < 8; ++i) put16(&f[18 + 2 * i], p.time[i]);
    return f;
}

bool is_mac_control(const std::uint8_t* f, std::size_t n) { return n >= 14 && get16(f + 12) == kEtherTypeMacControl; }

bool decode_pfc(const std::uint8_t* f, std::size_t n, PfcFrame& out) {
    if (n < 34 || !is_mac_control(f, n) || get16(f + 14) != kPfcOpcode) return false;
    for (unsigned i = 0; i < 6; ++i) out.src[i] = f[6 + i];
    out.class_enable = get16(f + 16);
    for (unsigned i = 0; i < 8; ++i) out.time[i] = get16(f + 18 + 2 * i);
    return true;
}

}  // namespace simnic::model::fabric
