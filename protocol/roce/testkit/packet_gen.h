// A seeded random RoCE v2 frame generator for testbenches.
//
// Every frame is built through the packet core's encode_frame(), so the
// generator never restates a header layout. Headers are filled with random
// values (variant fields included, so that ICRC masking is exercised), the
// opcode comes from kOpcodeTable and the payload length from what the opcode
// allows. The same seed gives the same frames.
#pragma once

#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

#include "simnic/roce/packet.h"

namespace simnic::tb {

struct PacketGenOptions {
    double vlan_prob = 0.5;           // an 802.1Q tag
    double ipv6_prob = 0.5;           // IPv6 instead of IPv4
    double ipv4_options_prob = 0.1;   // IPv4 with options (IHL 6..15)
    double udp_checksum_prob = 0.25;  // a real UDP checksum instead of rxe's 0
    double small_payload_prob = 0.3;  // draw the payload length from 0..64, else 0..max
    size_t max_payload = 4096;        // largest payload (an IB MTU)
    // Frames whose payload plus pad is not a whole number of 4-byte words.
    // decode_frame() refuses them (BadPadCount) but their ICRC is well
    // defined; they let a streaming engine see every frame length modulo its
    // beat width, which legal frames (always 2 mod 4 bytes long) cannot.
    double unaligned_prob = 0.0;
};

struct GenFrame {
    std::vector<uint8_t> bytes;        // Ethernet frame, ICRC included, no FCS
    roce::Packet pkt;                  // as encoded; pkt.payload points into GenFrame::payload
    std::vector<uint8_t> payload;
    bool decodable = true;             // false for unaligned frames
};

class PacketGen {
public:
    explicit PacketGen(uint64_t seed, const PacketGenOptions& opt = {});

    // Every opcode of kOpcodeTable that valid() accepts.
    static const std::vector<uint8_t>& opcodes();
    // Whether encode_frame() and decode_frame() accept this payload length
    // for the opcode: none for ACKs, READ requests and atomics; a non-empty
    // whole number of words for FIRST and MIDDLE packets; anything otherwise.
    static bool payload_allowed(uint8_t opcode, size_t payload_len);

    // A frame of a random opcode.
    GenFrame next();
    // A frame of the given opcode with a random allowed payload length.
    GenFrame next(uint8_t opcode);
    // A frame of the given opcode and payload length (must be allowed; with
    // `unaligned` the pad count is drawn independently of the length).
    GenFrame make(uint8_t opcode, size_t payload_len, bool unaligned = false);

    std::mt19937_64& rng() { return rng_; }
    uint64_t seed() const { return seed_; }
    const PacketGenOptions& options() const { return opt_; }

private:
    size_t random_payload_len(uint8_t opcode);
    bool chance(double p);
    template <typename T> T rand_bits(unsigned bits);
    void fill_headers(roce::Packet& p, uint8_t opcode);

    uint64_t seed_;
    PacketGenOptions opt_;
    std::mt19937_64 rng_;
};

}  // namespace simnic::tb
