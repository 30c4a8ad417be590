// What one functional step of the datapath did, in the order it did it.
//
// The cycle model is execution-driven: a pipeline stage calls the functional
// datapath (the same code the soft device runs, so the protocol is never
// forked) at the simulated instant the work reaches that stage, and the
// datapath records here every table access, DMA transfer, frame, CQE and EQE
// it performed. The stage then plays the record through the blocks that own
// those resources (caches, DMA engine, TX path, CQ/EQ writers), which is
// where the time goes. This header has no SystemC in it: the soft engine
// includes it to record.
#pragma once

#include <cstdint>
#include <vector>

namespace simnic::model {

// Why a DMA transfer happened (the DMA engine counts bytes per purpose).
enum class DmaPurpose : uint8_t { WqeFetch, RecvWqe, Payload, Atomic, Cqe, Eqe, Context, kCount };

struct Op {
    enum class Kind : uint8_t {
        Qpc,       // id = qpn: the QP's context is needed (QPC cache)
        Mpt,       // id = MPT index of the key being checked (MPT cache)
        Mtt,       // id = MTT index of one translated page (MTT cache)
        DmaRead,   // bytes read from host memory, purpose
        DmaWrite,  // bytes written to host memory, purpose
        WqeFetched,  // id = qpn, aux = WQE ring index (a send WQE entered the requester)
        TxFrame,   // aux = index into OpRecord::frames
        Cqe,       // id = cqn, aux = WQE index, is_send
        Eqe,       // id = event type
    };
    Kind kind;
    DmaPurpose purpose = DmaPurpose::Payload;
    bool is_send = false;
    uint32_t id = 0;
    uint32_t bytes = 0;
    uint32_t aux = 0;
};

// A frame the datapath built: the complete Ethernet frame (ICRC included),
// and the header facts the timing blocks and statistics want.
struct TxFrameRec {
    std::vector<uint8_t> bytes;
    uint32_t qpn = 0;  // source QP
    uint32_t psn = 0;
    uint8_t opcode = 0;
    uint32_t payload = 0;  // payload bytes (without headers, pad, ICRC)
};

struct OpRecord {
    std::vector<Op> ops;
    std::vector<TxFrameRec> frames;
    void clear() {
        ops.clear();
        frames.clear();
    }
    void add(Op::Kind k, uint32_t id = 0, uint32_t bytes = 0, uint32_t aux = 0,
             DmaPurpose p = DmaPurpose::Payload, bool is_send = false) {
        Op o{k};
        o.id = id;
        o.bytes = bytes;
        o.aux = aux;
        o.purpose = p;
        o.is_send = is_send;
        ops.push_back(o);
    }
};

}  // namespace simnic::model
