// The driver of a Verilated segmentation block with roce_req_seg's ports
// behind ReqSegRtl: the same code for the built-in design (req_seg_rtl.cc)
// and for one's own, compiled at run time into a shared object
// (req_seg_own_shim.cc, own_rtl.cc). Its text is part of the wrapper ABI
// that keys the cache.
#pragma once


#include "req_seg_rtl.h"
#include "verilated_block.h"

namespace simnic::rtl {

// What one design's driver does; ReqSegRtl holds one.
struct ReqSegRtl::Impl {
    virtual ~Impl() = default;
    // The descriptor on the s_* ports, s_valid_i high until an edge takes it.
    virtual void offer(const transport::SegWqe& w) = 0;
    // One edge with m_ready_i = `ready`: what it took and gave.
    virtual ReqSegEdge step(bool ready) = 0;
    virtual uint64_t cycles() const = 0;
};

// kRiseOnly: the design is the repo's, known to have no falling-edge logic
// (verilated_block.h); one's own is clocked on both edges.
template <typename V, bool kRiseOnly = false>
struct ReqSegDriver final : ReqSegRtl::Impl, VerilatedBlock<V, kRiseOnly> {
    using Block = VerilatedBlock<V, kRiseOnly>;
    ReqSegDriver() {
        // Reset as every simnic block is (axis_top.h's sequence), with no
        // descriptor offered; m_ready_i is the caller's on every edge after.
        V& top = **this;
        top.s_valid_i = 0;
        top.m_ready_i = 1;
        Block::reset_inputs_set();
    }
    uint64_t cycles() const override { return Block::cycles(); }

    void offer(const transport::SegWqe& w) override {
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
        top.eval();
    }

    ReqSegEdge step(bool ready) override {
        V& top = **this;
        top.m_ready_i = ready;
        top.eval();
        // What this edge takes: read before it, as the RTL drives it now.
        ReqSegEdge e;
        e.desc_taken = top.s_valid_i && top.s_ready_o;
        if (top.m_valid_o && !ready) e.held = true;
        if (top.m_valid_o && ready) {
            e.packet = true;
            e.last = top.m_last_o;
            transport::SegPacket& s = e.p;
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
        }
        Block::tick();
        if (e.desc_taken) {
            top.s_valid_i = 0;
            top.eval();
        }
        return e;
    }
};

}  // namespace simnic::rtl
