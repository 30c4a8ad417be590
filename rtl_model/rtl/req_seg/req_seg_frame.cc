#include "req_seg_frame.h"

#include "simnic/roce/opcode.h"
#include "simnic/roce/packet.h"

namespace simnic::rtl {

const char* to_string(SegSplice s) {
    switch (s) {
        case SegSplice::Spliced: return "spliced";
        case SegSplice::NotAFrame: return "the frame does not decode";
        case SegSplice::Layout: return "the RTL's opcode has another header layout than the frame's";
        case SegSplice::Payload: return "the RTL's payload is not the frame's";
        case SegSplice::Encode: return "the RTL's opcode cannot carry the frame's payload";
    }
    return "?";
}

SegSplice splice_seg_packet(std::vector<uint8_t>& frame, const transport::SegPacket& want,
                            const transport::SegPacket& got) {
    roce::Packet p;
    if (!roce::decode_frame(frame.data(), frame.size(), p)) return SegSplice::NotAFrame;
    // The layout: which extension headers follow the BTH (their bits are
    // the mask's lowest, ext_flag order) and whether a payload does.
    constexpr uint32_t kLayout = (roce::kPayload - 1) | roce::kPayload;
    const roce::OpcodeInfo& rtl = roce::opcode_info(got.opcode);
    if (!rtl.valid() || (rtl.mask & kLayout) != (p.opinfo().mask & kLayout) || got.reth != rtl.has(roce::Ext::RETH))
        return SegSplice::Layout;
    if (got.payload_off != want.payload_off || got.payload_len != p.payload_len) return SegSplice::Payload;
    p.hdr.bth.opcode = got.opcode;
    p.hdr.bth.psn = got.psn & 0xffffff;
    p.hdr.bth.ack_req = got.ack_req;
    p.hdr.bth.se = got.se;
    if (got.reth) {
        p.hdr.reth.va = got.reth_va;
        p.hdr.reth.rkey = got.reth_rkey;
        p.hdr.reth.dma_len = got.reth_dma_len;
    }
    // Everything else as the frame had it: a UDP checksum if it carried one
    // (rxe sends none), the Ethernet padding of a short frame.
    roce::EncodeOptions opt;
    opt.udp_checksum = p.udp.checksum ? roce::UdpChecksum::Compute : roce::UdpChecksum::Zero;
    opt.pad_to_eth_min = frame.size() == roce::kEthMinFrameBytes;
    std::vector<uint8_t> out;
    if (!roce::encode_frame(p, out, opt) || out.size() != frame.size()) return SegSplice::Encode;
    frame.swap(out);
    return SegSplice::Spliced;
}

}  // namespace simnic::rtl
