// The driver of a Verilated TX header builder with roce_tx_build's ports
// behind TxBuildRtl: the same code for the built-in design (tx_build_rtl.cc)
// and for one's own, compiled at run time into a shared object
// (tx_build_own_shim.cc, own_rtl.cc). Its text is part of the wrapper ABI
// that keys the cache.
#pragma once

#include <functional>
#include <stdexcept>

#include "tx_build_rtl.h"
#include "verilated_block.h"

namespace simnic::rtl {

// What one design's driver does; TxBuildRtl holds one.
struct TxBuildRtl::Impl {
    virtual ~Impl() = default;
    virtual TxBuildResult build(const TxHeaderDesc& d, const TxBuildRtl::HoldFn& hold) = 0;
    virtual uint64_t cycles() const = 0;
    // Bytes per beat: the DataWidth the design was verilated at, over 8.
    virtual size_t beat_bytes() const = 0;
};

namespace tx_build_detail {

inline uint64_t mac48(const roce::MacAddr& m) {
    uint64_t v = 0;
    for (uint8_t b : m) v = v << 8 | b;
    return v;
}

// 16 bytes, most significant first, onto a 128-bit port (Verilator: four
// 32-bit words, word 0 = bits 31:0).
template <typename Wide> void set128(Wide& w, const roce::Ipv6Addr& a) {
    for (size_t k = 0; k < 4; ++k) {
        const size_t i = 12 - 4 * k;  // the bytes of word k
        w[k] = uint32_t(a[i]) << 24 | uint32_t(a[i + 1]) << 16 | uint32_t(a[i + 2]) << 8 | a[i + 3];
    }
}

}  // namespace tx_build_detail

// kRiseOnly: the design is the repo's, known to have no falling-edge logic
// (verilated_block.h); one's own is clocked on both edges.
template <typename V, bool kRiseOnly = false>
struct TxBuildDriver final : TxBuildRtl::Impl, VerilatedBlock<V, kRiseOnly> {
    using Block = VerilatedBlock<V, kRiseOnly>;
    TxBuildDriver() {
        // Reset as every simnic block is (axis_top.h's sequence), with no
        // descriptor offered and the header's beats always taken.
        V& top = **this;
        top.s_valid_i = 0;
        top.m_axis_tready_i = 1;
        Block::reset_inputs_set();
    }
    uint64_t cycles() const override { return Block::cycles(); }
    size_t beat_bytes() const override { return kBeatBytes; }
    // The beat the model was verilated with (one's own: the device's
    // mac.width_bytes), from its m_axis_tdata_o port.
    static constexpr size_t kBeatBytes = kSourceBeatBytes<V>;

    void offer(V& top, const TxHeaderDesc& d) {
        using namespace tx_build_detail;
        top.s_dmac_i = mac48(d.dmac);
        top.s_smac_i = mac48(d.smac);
        top.s_has_vlan_i = d.has_vlan;
        top.s_vlan_tci_i = d.vlan_tci;
        top.s_ip_version_i = d.ip_version;
        top.s_ip_tos_i = d.ip_tos;
        top.s_ip_ttl_i = d.ip_ttl;
        top.s_ip_id_i = d.ip_id;
        top.s_ip_frag_i = d.ip_frag;
        top.s_ip_flow_label_i = d.ip_flow_label & 0xfffff;
        set128(top.s_src_ip_i, d.src_ip);
        set128(top.s_dst_ip_i, d.dst_ip);
        top.s_udp_sport_i = d.udp_sport;
        top.s_udp_dport_i = d.udp_dport;
        top.s_opcode_i = d.opcode;
        top.s_se_i = d.se;
        top.s_mig_i = d.mig;
        top.s_pkey_i = d.pkey;
        top.s_fecn_i = d.fecn;
        top.s_becn_i = d.becn;
        top.s_dqpn_i = d.dqpn & 0xffffff;
        top.s_ack_req_i = d.ack_req;
        top.s_psn_i = d.psn & 0xffffff;
        top.s_deth_qkey_i = d.deth_qkey;
        top.s_deth_src_qp_i = d.deth_src_qp & 0xffffff;
        top.s_feth_placement_i = d.feth_placement & 0xf;
        top.s_feth_selectivity_i = d.feth_selectivity & 3;
        top.s_reth_va_i = d.reth_va;
        top.s_reth_rkey_i = d.reth_rkey;
        top.s_reth_dma_len_i = d.reth_dma_len;
        top.s_atomic_va_i = d.atomic_va;
        top.s_atomic_rkey_i = d.atomic_rkey;
        top.s_atomic_swap_add_i = d.atomic_swap_add;
        top.s_atomic_compare_i = d.atomic_compare;
        top.s_aeth_syndrome_i = d.aeth_syndrome;
        top.s_aeth_msn_i = d.aeth_msn & 0xffffff;
        top.s_atomic_ack_orig_i = d.atomic_ack_orig;
        top.s_imm_i = d.imm;
        top.s_ieth_rkey_i = d.ieth_rkey;
        top.s_payload_len_i = d.payload_len;
        top.s_valid_i = 1;
    }

    // The beat on the m_axis_* ports now: its kept bytes, and tlast.
    static std::vector<uint8_t> port_beat(V& top) {
        std::vector<uint8_t> v;
        for (size_t i = 0; i < kBeatBytes; ++i)
            if (port_bit(top.m_axis_tkeep_o, i)) v.push_back(port_byte(top.m_axis_tdata_o, i));
        v.push_back(top.m_axis_tlast_o ? 1 : 0);
        return v;
    }

    TxBuildResult build(const TxHeaderDesc& d, const TxBuildRtl::HoldFn& hold) override {
        V& top = **this;
        TxBuildResult r;
        offer(top, d);
        top.m_axis_tready_i = 1;
        top.eval();
        const uint64_t start = Block::cycles();  // the next edge is the first the descriptor is offered on
        uint64_t taken = 0, first = 0;
        bool asked = false;
        for (bool done = false; !done;) {
            if (Block::cycles() - start > TxBuildRtl::kMaxCycles + r.held)
                throw std::runtime_error(taken ? "tx_build: the header's last beat (m_axis_tlast_o) never came"
                                               : "tx_build: the descriptor was never taken (s_ready_o low)");
            // The first beat is on the port: the stage after may not take
            // it yet (m_axis_tready_i low for the edges `hold` says), and
            // the RTL must keep it there, unchanged, meanwhile.
            if (hold && !asked && top.m_axis_tvalid_o) {
                asked = true;
                r.held = hold(Block::cycles() - start + 1);
                if (r.held) {
                    const std::vector<uint8_t> want = port_beat(top);
                    top.m_axis_tready_i = 0;
                    top.eval();
                    for (uint64_t i = 0; i < r.held; ++i) {
                        Block::tick();
                        r.held_valid += top.m_axis_tvalid_o && port_beat(top) == want ? 1 : 0;
                    }
                    top.m_axis_tready_i = 1;
                    top.eval();
                }
            }
            // What this edge takes: read before it, as the RTL drives it now.
            const bool take_desc = !taken && top.s_ready_o;
            const bool beat = top.m_axis_tvalid_o;
            if (beat) {
                for (size_t i = 0; i < kBeatBytes; ++i)
                    if (port_bit(top.m_axis_tkeep_o, i)) r.header.push_back(port_byte(top.m_axis_tdata_o, i));
                done = top.m_axis_tlast_o;
            }
            Block::tick();
            if (take_desc) {
                taken = Block::cycles();
                top.s_valid_i = 0;
                top.eval();
            }
            if (beat) {
                if (!r.beats++) first = Block::cycles();
                r.out_cycles = Block::cycles() - first + 1;
            }
        }
        if (!taken) throw std::runtime_error("tx_build: header beats came before the descriptor was taken");
        r.desc_cycles = taken - start;
        r.latency = first - taken - r.held;
        return r;
    }
};

}  // namespace simnic::rtl
