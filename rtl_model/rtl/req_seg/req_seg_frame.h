// A request frame made to carry the segmentation RTL's packet descriptor.
//
// The cycle model's requester plays frames the datapath built (payload
// gathered, headers encoded by roce::encode_frame) before its segmentation
// RTL ran on them. With impl = rtl the pipeline follows the RTL's result, as
// it does the parser's and TX build's: where the RTL's descriptor differs
// from the one the frame was built from, the frame is re-encoded with the
// RTL's BTH opcode, PSN, AckReq and SE and its RETH (VA, R_Key, DMA length),
// its ICRC recomputed (IP/UDP lengths and checksums too, which stay as they
// were: the headers' layout and the payload are the frame's). What the
// frame cannot carry (other headers, another payload) leaves it as built.
// Not part of the wrapper ABI: it runs beside the block, not in it.
#pragma once

#include <cstdint>
#include <vector>

#include "simnic/transport/segmentation.h"

namespace simnic::rtl {

enum class SegSplice : uint8_t {
    Spliced,    // the frame carries the RTL's fields now
    NotAFrame,  // the frame does not decode (the packet core refuses it)
    Layout,     // the RTL's opcode has other headers, or no payload where the frame has one (or the reverse),
                // or m_reth_o disagrees with its opcode
    Payload,    // the RTL's payload offset or length is not the frame's
    Encode,     // the packet core will not encode the RTL's fields on this payload (a FIRST or MIDDLE
                // of a length that is not a whole number of words), or not at the frame's length
};
const char* to_string(SegSplice s);

// Puts `got`'s fields on `frame`, built by the datapath for `want` (its
// payload at want.payload_off). Changes `frame` only if it returns Spliced.
SegSplice splice_seg_packet(std::vector<uint8_t>& frame, const transport::SegPacket& want,
                            const transport::SegPacket& got);

}  // namespace simnic::rtl
