// The driver of a Verilated segmentation block with roce_req_seg's ports
// behind ReqSegRtl: the same code for the built-in design (req_seg_rtl.cc)
// and for one's own, compiled at run time into a shared object
// (req_seg_own_shim.cc, own_rtl.cc). Its text is part of the wrapper ABI
// that keys the cache.
#pragma once

#include <stdexcept>

#include "req_seg_rtl.h"
#include "verilated_block.h"

namespace simnic::rtl {

// What one design's driver does; ReqSegRtl holds one.
struct ReqSegRtl::Impl {
    virtual ~Impl() = default;
    virtual ReqSegResult run(const transport::SegWqe& w) = 0;
    virtual uint64_t cycles() const = 0;
};

// kRiseOnly: the design is the repo's, known to have no falling-edge logic
// (verilated_block.h); one's own is clocked on both edges.
template <typename V, bool kRiseOnly = false>
struct ReqSegDriver final : ReqSegRtl::Impl, VerilatedBlock<V, kRiseOnly> {
    using Block = VerilatedBlock<V, kRiseOnly>;
    ReqSegDriver() {
        // Reset as every simnic block is (axis_top.h's sequence), with no
        // descriptor offered and packet descriptors always taken.
        V& top = **this;
        top.s_valid_i = 0;
        top.m_ready_i = 1;
        Block::reset_inputs_set();
    }
    uint64_t cycles() const override { return Block::cycles(); }

    ReqSegResult run(const transport::SegWqe& w) override {
        V& top = **this;
        top.s_qp_type_i = uint8_t(w.qp_type) & 7;
        top.s_wr_opcode_i = uint8_t(w.opcode) & 15;
        top.s_length_i = w.length;
        top.s_first_psn_i = w.first_psn & 0xffffff;
        top.s_pmtu_i = uint8_t(w.pmtu) & 7;
        top.s_remote_addr_i = w.remote_addr;
        top.s_rkey_i = w.rkey;
        top.s_solicited_i = w.solicited;
        top.s_start_pkt_i = w.start_pkt & 0xffffff;
        top.s_count_i = w.count & 0xffffff;
        top.s_noack_i = uint8_t(w.noack > 127 ? 127 : w.noack);
        top.s_valid_i = 1;
        top.m_ready_i = 1;
        top.eval();
        ReqSegResult r;
        bool taken = false;
        uint64_t since = Block::cycles();  // the last event: offered, taken, a packet
        for (bool done = false; !done;) {
            if (Block::cycles() - since > ReqSegRtl::kMaxCyclesPerPacket)
                throw std::runtime_error(taken ? "req_seg: no packet descriptor (m_valid_o) for " +
                                                     std::to_string(ReqSegRtl::kMaxCyclesPerPacket) + " edges"
                                               : "req_seg: the descriptor was never taken (s_ready_o low)");
            // What this edge takes: read before it, as the RTL drives it now.
            const bool take_desc = !taken && top.s_ready_o;
            const bool pkt = top.m_valid_o;
            if (pkt) {
                if (!taken) throw std::runtime_error("req_seg: a packet descriptor came before the WQE was taken");
                transport::SegPacket s;
                s.opcode = top.m_opcode_o;
                s.psn = top.m_psn_o;
                s.payload_off = top.m_payload_off_o;
                s.payload_len = top.m_payload_len_o;
                s.reth = top.m_reth_o;
                s.reth_va = top.m_reth_va_o;
                s.reth_rkey = top.m_reth_rkey_o;
                s.reth_dma_len = top.m_reth_dma_len_o;
                s.ack_req = top.m_ack_req_o;
                s.se = top.m_se_o;
                r.packets.push_back(s);
                done = top.m_last_o || r.packets.size() > w.count;
            }
            Block::tick();
            if (take_desc) {
                taken = true;
                r.desc_cycles = Block::cycles() - since;
                since = Block::cycles();
                top.s_valid_i = 0;
                top.eval();
            }
            if (pkt) {
                r.gaps.push_back(Block::cycles() - since);
                since = Block::cycles();
            }
        }
        // The first packet's time includes the descriptor's.
        if (!r.gaps.empty()) r.gaps[0] += r.desc_cycles;
        return r;
    }
};

}  // namespace simnic::rtl
