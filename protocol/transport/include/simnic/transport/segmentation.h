// The requester's segmentation: one WQE's message cut into path-MTU request
// packets, each with its BTH opcode (FIRST/MIDDLE/LAST/ONLY), PSN, payload
// slice, RETH and AckReq. Requester::send_packet builds every request packet
// from seg_packet(), and the cycle model checks the segmentation stage's RTL
// (rtl_model/rtl/req_seg) against it: the one place this protocol is written.
//
// What one transaction of the stage is (docs/model.md, the requester
// segmentation stage's interface): a SegWqe in, `count` SegPackets out.
#pragma once

#include <cstdint>
#include <vector>

#include "simnic/hw/verbs.h"
#include "simnic/roce/rules.h"

namespace simnic::transport {

// A WQE as the requester's scheduler hands it to segmentation, with the
// packets it may make now (the window, the rate limiter and a retry decide
// which). Only what segmentation reads: the gather list, the atomic operands,
// the DETH and FETH fields go past it.
struct SegWqe {
    hw::QpType qp_type = hw::QpType::Rc;
    hw::WrOpcode opcode = hw::WrOpcode::Send;
    // Message bytes (at most 2^31); FLUSH: its flush length (the RETH's
    // DMA length; it carries no payload).
    uint32_t length = 0;
    uint32_t first_psn = 0;  // the WQE's first PSN (24 bits)
    roce::IbMtu pmtu = roce::IbMtu::Mtu4096;
    uint64_t remote_addr = 0;
    uint32_t rkey = 0;
    bool solicited = false;  // IBV_SEND_SOLICITED: SE on the last packet
    uint32_t start_pkt = 0;  // the first packet to make (a retry resumes mid-message)
    uint32_t count = 1;      // packets to make, from start_pkt
    // The QP's request packets sent without AckReq since the last one that
    // had it (RC only; rxe's noack_pkts).
    uint32_t noack = 0;
};
bool operator==(const SegWqe& a, const SegWqe& b);

// One request packet as segmentation describes it; TX build adds the rest.
struct SegPacket {
    uint8_t opcode = 0;        // BTH opcode
    uint32_t psn = 0;          // BTH PSN
    uint32_t payload_off = 0;  // where its payload starts in the message (k * PMTU)
    uint32_t payload_len = 0;  // its payload bytes (0: none; a READ request has none)
    bool reth = false;         // the opcode carries a RETH
    uint64_t reth_va = 0;      // RETH fields (0 without one)
    uint32_t reth_rkey = 0;
    uint32_t reth_dma_len = 0;
    bool ack_req = false;  // BTH AckReq
    bool se = false;       // BTH solicited event
};
bool operator==(const SegPacket& a, const SegPacket& b);
inline bool operator!=(const SegPacket& a, const SegPacket& b) { return !(a == b); }

// Packets of a message: one per PMTU (at least one); one for an atomic,
// ATOMIC_WRITE or FLUSH. A READ's is the number of its response packets (its
// PSNs); its request is one packet.
uint32_t seg_npkts(hw::WrOpcode o, uint64_t length, uint32_t pmtu_bytes);

// The BTH opcode of packet `k` of `n` of a message: the RC form, moved to the
// UC or UD range as the QP type asks. 0 for a local operation.
uint8_t request_opcode(hw::QpType t, hw::WrOpcode o, uint32_t k, uint32_t n);

// Packet `k` of `w` (k from w.start_pkt on; `count` is not looked at), with
// `noack` the QP's count before it, moved on past it.
SegPacket seg_packet(const SegWqe& w, uint32_t k, uint32_t& noack);

// The transaction: packets start_pkt .. start_pkt + count - 1 of `w`,
// starting from w.noack.
std::vector<SegPacket> segment(const SegWqe& w);

}  // namespace simnic::transport
