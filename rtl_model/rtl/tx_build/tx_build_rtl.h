// The TX build stage's RTL (roce_tx_build.sv, or one's own design with its
// ports) behind a plain C++ interface: a frame's header descriptor in, its
// header bytes out, with the cycles the RTL took. The cycle model's TX
// build block runs it on every frame it sends and compares the bytes with
// the frame the datapath built (blocks/tx_build.cc); the tests in tb/
// compare it with roce::encode_frame().
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "simnic/roce/headers.h"

namespace simnic::roce {
struct Packet;
}

namespace simnic::rtl {

struct OwnRtl;
struct OwnRtlBuildInfo;

// One transaction's input: what the stage's s_* ports carry (docs/model.md,
// Your own RTL, the TX build stage's interface). The header's layout,
// lengths, pad count and IPv4 checksum follow from these; reserved bits,
// TVer and the UDP checksum are 0, as a sender leaves them.
struct TxHeaderDesc {
    roce::MacAddr dmac{}, smac{};
    bool has_vlan = false;
    uint16_t vlan_tci = 0;
    uint8_t ip_version = 4;  // 4 or 6
    uint8_t ip_tos = 0;      // IPv4 TOS, IPv6 traffic class
    uint8_t ip_ttl = 64;     // IPv4 TTL, IPv6 hop limit
    uint16_t ip_id = 0;      // IPv4 only
    uint16_t ip_frag = 0;    // IPv4 flags and fragment offset
    uint32_t ip_flow_label = 0;  // IPv6 only, 20 bits
    roce::Ipv6Addr src_ip{}, dst_ip{};  // IPv4: the last 4 bytes (IPv4-mapped)
    uint16_t udp_sport = 0, udp_dport = roce::kRoceV2Port;
    uint8_t opcode = 0;
    bool se = false, mig = false;
    uint16_t pkey = 0xffff;
    bool fecn = false, becn = false;
    uint32_t dqpn = 0;
    bool ack_req = false;
    uint32_t psn = 0;
    uint32_t deth_qkey = 0, deth_src_qp = 0;
    uint8_t feth_placement = 0, feth_selectivity = 0;
    uint64_t reth_va = 0;
    uint32_t reth_rkey = 0, reth_dma_len = 0;
    uint64_t atomic_va = 0;
    uint32_t atomic_rkey = 0;
    uint64_t atomic_swap_add = 0, atomic_compare = 0;
    uint8_t aeth_syndrome = 0;
    uint32_t aeth_msn = 0;
    uint64_t atomic_ack_orig = 0;
    uint32_t imm = 0, ieth_rkey = 0;
    uint16_t payload_len = 0;  // pad and ICRC excluded
};

// The descriptor of packet `p` (as encode_frame() writes it or
// decode_frame() read it); false if the interface cannot carry it: an
// unknown opcode, IPv4 options, a UDP checksum, non-zero reserved bits or
// TVer, a payload over 65535 bytes.
bool tx_header_desc(const roce::Packet& p, TxHeaderDesc& d);
// The descriptor of a frame the datapath built, read back by the packet
// core (no ICRC or IP checksum check), and its header's length (up to the
// payload); false as above, or if the frame does not decode.
bool tx_header_desc_of_frame(const uint8_t* frame, size_t len, TxHeaderDesc& d, size_t* hdr_len);

// What one transaction gave.
struct TxBuildResult {
    std::vector<uint8_t> header;  // the bytes of the beats, tkeep lanes only, up to tlast
    // Edges from the one the descriptor was first offered on through the
    // one that took it: 1 if s_ready_o was high (more: the RTL stalled it).
    uint64_t desc_cycles = 0;
    // Edges from the one that took the descriptor to the one that took the
    // first header beat (roce_tx_build: 1).
    uint64_t latency = 0;
    // Edges from the first header beat's through the last one's, bubbles
    // (m_axis_tvalid_o low between beats) included.
    uint64_t out_cycles = 0;
    uint64_t beats = 0;
    // Edges the first beat was held on with m_axis_tready_i low (what the
    // hold function asked for), and after how many of them it was still
    // on the port unchanged (m_axis_tvalid_o high, the same bytes and
    // tlast): equal for a design that holds its output. Not in
    // desc_cycles, latency or out_cycles.
    uint64_t held = 0, held_valid = 0;
};

class TxBuildRtl {
public:
    static constexpr size_t kBeatBytes = 64;
    // Edges from the descriptor's to the first header beat's (roce_tx_build.sv).
    static constexpr uint64_t kLatency = 1;
    // The most edges a design swapped in may take for one transaction.
    static constexpr uint64_t kMaxCycles = 1024;

    TxBuildRtl();  // roce_tx_build.sv, verilated with simnic
    // One's own design, named by its sources and top: port-checked,
    // verilated and compiled into a shared object (or found in the cache),
    // then loaded (own_rtl.h). Throws OwnRtlError with every problem found.
    explicit TxBuildRtl(const OwnRtl& own, OwnRtlBuildInfo* info = nullptr);
    ~TxBuildRtl();
    TxBuildRtl(const TxBuildRtl&) = delete;
    TxBuildRtl& operator=(const TxBuildRtl&) = delete;

    // Backpressure on the header's first beat: called once, when the RTL
    // first shows it (m_axis_tvalid_o high before an edge), with that
    // edge's number counted from the first the descriptor was offered on
    // (1: the first); returns how many edges, from that one on,
    // m_axis_tready_i is low (the stage after TX build full). The model's
    // function waits in simulated time for the room.
    using HoldFn = std::function<uint64_t(uint64_t first_edge)>;

    // One transaction on the idle block: the descriptor offered until
    // taken, the header's beats taken as they come (m_axis_tready_i high
    // but for the edges `hold` asks for on the first beat). Throws
    // std::runtime_error if the RTL takes more than kMaxCycles edges.
    TxBuildResult build(const TxHeaderDesc& d, const HoldFn& hold = {});

    // Clock cycles simulated so far, reset included.
    uint64_t cycles() const;

    // Bytes per header beat: the DataWidth the design was verilated at,
    // over 8 (kBeatBytes for the built-in design; one's own:
    // OwnRtl::data_width).
    size_t beat_bytes() const;

    // The driver of one design (tx_build_driver.h).
    struct Impl;

private:
    std::unique_ptr<Impl> impl_;
};

}  // namespace simnic::rtl
