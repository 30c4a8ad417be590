// Hand-built packet vectors shared by the packet-core unit tests and the RTL
// testbenches, so that every block is checked against the same frames.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace simnic::tb {

struct FrameVector {
    std::string name;
    std::vector<uint8_t> frame;  // a whole Ethernet frame, ICRC included, no FCS
    bool icrc_valid = true;      // false for vectors built with a corrupted ICRC
};

// Every hand-built vector: at least one per opcode of the opcode table, over
// IPv4 and IPv6, with and without a VLAN tag, and with each pad count.
const std::vector<FrameVector>& packet_core_vectors();

}  // namespace simnic::tb
