// PFC frames (IEEE 802.1Qbb, the MAC control frame of IEEE 802.3 Annex 31D):
//
//   dst 01:80:C2:00:00:01 | src | EtherType 0x8808 | opcode 0x0101 |
//   class-enable vector (2 bytes; bit i: time[i] is valid) |
//   time[0..7] (2 bytes each, in quanta of 512 bit times) | zeros to 60 bytes
//
// 60 bytes: the Ethernet minimum without the FCS, which the model's frames
// do not carry. All fields big-endian. A time of 0 for an enabled class is
// a resume (XON).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "simnic/roce/headers.h"

namespace simnic::model::fabric {

inline constexpr roce::MacAddr kPfcDst = {0x01, 0x80, 0xC2, 0x00, 0x00, 0x01};
inline constexpr std::uint16_t kEtherTypeMacControl = 0x8808;
inline constexpr std::uint16_t kPfcOpcode = 0x0101;
inline constexpr std::size_t kPfcFrameBytes = 60;
inline constexpr std::uint32_t kPauseQuantumBits = 512;

struct PfcFrame {
    roce::MacAddr src{};
    std::uint16_t class_enable = 0;           // bit i: priority i's time is valid
    std::array<std::uint16_t, 8> time{};      // quanta per priority
};

std::vector<std::uint8_t> encode_pfc(const PfcFrame& p);
// True if the frame is a MAC control frame (EtherType 0x8808): it is the
// MAC's, never forwarded.
bool is_mac_control(const std::uint8_t* f, std::size_t n);
// Decodes a PFC frame; false if it is not one (wrong EtherType or opcode,
// too short).
bool decode_pfc(const std::uint8_t* f, std::size_t n, PfcFrame& out);

}  // namespace simnic::model::fabric
