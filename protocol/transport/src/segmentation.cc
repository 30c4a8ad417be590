#include "simnic/transport/segmentation.h"

#include <algorithm>

#include "simnic/roce/opcode.h"
#include "simnic/transport/qp_context.h"

namespace simnic::transport {

namespace op = roce::op;

bool operator==(const SegWqe& a, const SegWqe& b) {
    return a.qp_type == b.qp_type && a.opcode == b.opcode && a.length == b.length && a.first_psn == b.first_psn &&
           a.pmtu == b.pmtu && a.remote_addr == b.remote_addr && a.rkey == b.rkey && a.solicited == b.solicited &&
           a.start_pkt == b.start_pkt && a.count == b.count && a.noack == b.noack;
}

bool operator==(const SegPacket& a, const SegPacket& b) {
    return a.opcode == b.opcode && a.psn == b.psn && a.payload_off == b.payload_off &&
           a.payload_len == b.payload_len && a.reth == b.reth && a.reth_va == b.reth_va &&
           a.reth_rkey == b.reth_rkey && a.reth_dma_len == b.reth_dma_len && a.ack_req == b.ack_req && a.se == b.se;
}

uint32_t seg_npkts(hw::WrOpcode o, uint64_t length, uint32_t pmtu_bytes) {
    if (hw::is_atomic(o) || hw::is_placement(o)) return 1;
    return std::max<uint32_t>(1, static_cast<uint32_t>((length + pmtu_bytes - 1) / pmtu_bytes));
}

// Same choice as rxe's next_opcode(), but from the packet's position rather
// than the previous opcode, so that a restart in the middle of a message
// needs no replay of the earlier ones.
uint8_t request_opcode(hw::QpType t, hw::WrOpcode o, uint32_t k, uint32_t n) {
    const bool first = k == 0, last = k + 1 == n, only = first && last;
    uint8_t c = 0;
    switch (o) {
        case hw::WrOpcode::Send:
            c = only ? op::RC_SEND_ONLY : first ? op::RC_SEND_FIRST
                : last ? op::RC_SEND_LAST : op::RC_SEND_MIDDLE;
            break;
        case hw::WrOpcode::SendWithImm:
            c = only ? op::RC_SEND_ONLY_WITH_IMMEDIATE : first ? op::RC_SEND_FIRST
                : last ? op::RC_SEND_LAST_WITH_IMMEDIATE : op::RC_SEND_MIDDLE;
            break;
        case hw::WrOpcode::SendWithInv:
            c = only ? op::RC_SEND_ONLY_WITH_INVALIDATE : first ? op::RC_SEND_FIRST
                : last ? op::RC_SEND_LAST_WITH_INVALIDATE : op::RC_SEND_MIDDLE;
            break;
        case hw::WrOpcode::RdmaWrite:
            c = only ? op::RC_RDMA_WRITE_ONLY : first ? op::RC_RDMA_WRITE_FIRST
                : last ? op::RC_RDMA_WRITE_LAST : op::RC_RDMA_WRITE_MIDDLE;
            break;
        case hw::WrOpcode::RdmaWriteWithImm:
            c = only ? op::RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE : first ? op::RC_RDMA_WRITE_FIRST
                : last ? op::RC_RDMA_WRITE_LAST_WITH_IMMEDIATE : op::RC_RDMA_WRITE_MIDDLE;
            break;
        case hw::WrOpcode::RdmaRead: return op::RC_RDMA_READ_REQUEST;
        case hw::WrOpcode::AtomicCmpAndSwp: return op::RC_COMPARE_SWAP;
        case hw::WrOpcode::AtomicFetchAndAdd: return op::RC_FETCH_ADD;
        case hw::WrOpcode::Flush: return op::RC_FLUSH;
        case hw::WrOpcode::AtomicWrite: return op::RC_ATOMIC_WRITE;
        case hw::WrOpcode::LocalInv:
        case hw::WrOpcode::BindMw: return 0;
    }
    if (t == hw::QpType::Uc) return static_cast<uint8_t>(c | 0x20);
    if (t == hw::QpType::Ud)
        return o == hw::WrOpcode::SendWithImm ? op::UD_SEND_ONLY_WITH_IMMEDIATE : op::UD_SEND_ONLY;
    return c;
}

SegPacket seg_packet(const SegWqe& w, uint32_t k, uint32_t& noack) {
    const uint32_t mtu = roce::ib_mtu_bytes(w.pmtu);
    const bool read = w.opcode == hw::WrOpcode::RdmaRead;
    const uint32_t n = seg_npkts(w.opcode, w.length, mtu);
    SegPacket s;
    // A READ is one request for the response packets from k on.
    s.opcode = request_opcode(w.qp_type, w.opcode, read ? 0 : k, read ? 1 : n);
    s.psn = roce::psn_add(w.first_psn, k);
    const roce::OpcodeInfo& info = roce::opcode_info(s.opcode);
    const bool last = (info.mask & roce::kLast) != 0;
    s.se = last && w.solicited;
    // AckReq: the last packet of each RC request, and now and then inside a
    // long one so that the window keeps moving (rxe's RXE_MAX_PKT_PER_ACK).
    if (w.qp_type == hw::QpType::Rc) {
        s.ack_req = last || noack++ > kMaxPktsPerAck;
        if (s.ack_req) noack = 0;
    }
    const uint64_t off = uint64_t{k} * mtu;
    s.payload_off = static_cast<uint32_t>(off);
    if (info.has(roce::Ext::RETH)) {
        s.reth = true;
        s.reth_va = w.remote_addr + off;
        s.reth_rkey = w.rkey;
        s.reth_dma_len = info.has(roce::kFlush) ? w.length : static_cast<uint32_t>(w.length - (read ? off : 0));
    }
    if (info.has(roce::kPayload) && !read) s.payload_len = static_cast<uint32_t>(std::min<uint64_t>(mtu, w.length - off));
    return s;
}

std::vector<SegPacket> segment(const SegWqe& w) {
    std::vector<SegPacket> out;
    out.reserve(w.count);
    uint32_t noack = w.noack;
    for (uint32_t i = 0; i < w.count; ++i) out.push_back(seg_packet(w, w.start_pkt + i, noack));
    return out;
}

}  // namespace simnic::transport
