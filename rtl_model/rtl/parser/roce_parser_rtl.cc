#include "roce_parser_rtl.h"

#include <algorithm>
#include <stdexcept>

#include "Vroce_parser.h"
#include "roce_parser_ports.h"
#include "verilated_block.h"

namespace simnic::rtl {

static_assert(RoceParserRtl::kLatency == kRoceParserLatency);

struct RoceParserRtl::Impl : VerilatedBlock<Vroce_parser> {
    Impl() {
        // The record is taken as soon as it is valid: the output never
        // stalls, and a record left on the port is consumed by the edge
        // that takes the next frame's first beat.
        (*this)->m_ready_i = 1;
        reset();
    }
};

RoceParserRtl::RoceParserRtl() : impl_(std::make_unique<Impl>()) {}
RoceParserRtl::~RoceParserRtl() = default;

uint64_t RoceParserRtl::cycles() const { return impl_->cycles(); }

roce::HeaderVector RoceParserRtl::parse(const uint8_t* frame, size_t len, uint64_t* cycles_out,
                                       uint64_t* in_cycles_out) {
    Impl& m = *impl_;
    Vroce_parser& top = *m;
    const size_t nbeats = std::max<size_t>(1, (len + kBeatBytes - 1) / kBeatBytes);
    const uint64_t start = m.cycles();  // the next edge takes the first beat
    for (size_t b = 0; b < nbeats; ++b) {
        const size_t off = b * kBeatBytes;
        const size_t n = std::min(kBeatBytes, len - std::min(len, off));
        load_beat(top, kBeatBytes, frame + std::min(len, off), n, [] { return 0u; });
        top.s_axis_tvalid_i = 1;
        top.s_axis_tlast_i = b + 1 == nbeats;
        top.eval();
        // The output never stalls, so the input never does either; this is
        // only a guard.
        for (int i = 0; !top.s_axis_tready_o; ++i) {
            if (i > 64) throw std::runtime_error("roce_parser: input stuck not ready");
            m.tick();
        }
        m.tick();
    }
    if (in_cycles_out) *in_cycles_out = m.cycles() - start;
    top.s_axis_tvalid_i = 0;
    top.s_axis_tlast_i = 0;
    top.eval();
    for (uint64_t i = 0; !top.m_valid_o; ++i) {
        // A designer's parser may take longer than this one's 3 edges (its
        // own cycles are the model's timing); one that takes this long has
        // lost the frame.
        if (i > kMaxLatency) throw std::runtime_error("roce_parser: no header vector");
        m.tick();
    }
    if (cycles_out) *cycles_out = m.cycles() - start;
    return read_header_vector(top);
}

}  // namespace simnic::rtl
