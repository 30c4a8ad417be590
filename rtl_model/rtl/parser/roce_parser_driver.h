// The driver of a Verilated parser with roce_parser's ports behind
// RoceParserRtl: the same code for the built-in designs (roce_parser_rtl.cc)
// and for one's own, compiled at run time into a shared object
// (roce_parser_user_shim.cc, own_rtl.cc). Because that shared object is
// built against this header, its text is part of the wrapper ABI that keys
// the cache (own_rtl.cc).
#pragma once

#include <algorithm>
#include <stdexcept>

#include "roce_parser_ports.h"
#include "roce_parser_rtl.h"
#include "verilated_block.h"

namespace simnic::rtl {

// What one design's driver does; RoceParserRtl holds one.
struct RoceParserRtl::Impl {
    virtual ~Impl() = default;
    virtual roce::HeaderVector parse(const uint8_t* frame, size_t len, uint64_t* cycles_out,
                                     uint64_t* in_cycles_out) = 0;
    virtual uint64_t hold(uint64_t edges, roce::HeaderVector* after) = 0;
    virtual uint64_t cycles() const = 0;
    // Bytes per beat: the DataWidth the design was verilated at, over 8.
    virtual size_t beat_bytes() const = 0;
};

// kRiseOnly: the design is one of the repo's, known to have no falling-edge
// logic (verilated_block.h); one's own is clocked on both edges.
template <typename V, bool kRiseOnly = false>
struct RoceParserDriver final : RoceParserRtl::Impl, VerilatedBlock<V, kRiseOnly> {
    using Block = VerilatedBlock<V, kRiseOnly>;
    RoceParserDriver() {
        // The record is taken as soon as it is valid: the output never
        // stalls, and a record left on the port is consumed by the edge
        // that takes the next frame's first beat.
        (*this)->m_ready_i = 1;
        Block::reset();
    }
    uint64_t cycles() const override { return Block::cycles(); }
    size_t beat_bytes() const override { return kBeatBytes; }
    // The beat the model was verilated with (one's own: the device's
    // mac.width_bytes), from its s_axis_tdata_i port.
    static constexpr size_t kBeatBytes = kSinkBeatBytes<V>;

    roce::HeaderVector parse(const uint8_t* frame, size_t len, uint64_t* cycles_out,
                             uint64_t* in_cycles_out) override {
        V& top = **this;
        const size_t nbeats = std::max<size_t>(1, (len + kBeatBytes - 1) / kBeatBytes);
        const uint64_t start = Block::cycles();  // the next edge takes the first beat
        for (size_t b = 0; b < nbeats; ++b) {
            const size_t off = b * kBeatBytes;
            const size_t n = std::min(kBeatBytes, len - std::min(len, off));
            load_beat(top, kBeatBytes, frame + std::min(len, off), n);
            top.s_axis_tvalid_i = 1;
            top.s_axis_tlast_i = b + 1 == nbeats;
            top.eval();
            // The output never stalls, so the reference parser's input never
            // does either; a design that stalls is waited for, up to a point.
            for (uint64_t i = 0; !top.s_axis_tready_o; ++i) {
                if (i > RoceParserRtl::kMaxLatency) throw std::runtime_error("roce_parser: input stuck not ready");
                Block::tick();
            }
            Block::tick();
        }
        if (in_cycles_out) *in_cycles_out = Block::cycles() - start;
        top.s_axis_tvalid_i = 0;
        top.s_axis_tlast_i = 0;
        top.eval();
        for (uint64_t i = 0; !top.m_valid_o; ++i) {
            // A designer's parser may take longer than this one's 3 edges
            // (its own cycles are the model's timing); one that takes this
            // long has lost the frame.
            if (i > RoceParserRtl::kMaxLatency) throw std::runtime_error("roce_parser: no header vector");
            Block::tick();
        }
        if (cycles_out) *cycles_out = Block::cycles() - start;
        return read_header_vector(top);
    }

    uint64_t hold(uint64_t edges, roce::HeaderVector* after) override {
        V& top = **this;
        top.m_ready_i = 0;
        top.eval();
        uint64_t valid = 0;
        for (uint64_t i = 0; i < edges; ++i) {
            valid += top.m_valid_o ? 1 : 0;
            Block::tick();
        }
        if (after) *after = read_header_vector(top);
        if (!top.m_valid_o) valid = 0;  // it dropped the record by the end
        top.m_ready_i = 1;
        top.eval();
        return valid;
    }
};

}  // namespace simnic::rtl
