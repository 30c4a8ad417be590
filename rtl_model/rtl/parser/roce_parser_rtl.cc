#include "roce_parser_rtl.h"

#include <algorithm>
#include <stdexcept>

#include "Vroce_parser.h"
#include "Vroce_parser_buggy.h"
#include "Vroce_parser_slow.h"
#include "roce_parser_ports.h"
#include "verilated_block.h"

namespace simnic::rtl {

static_assert(RoceParserRtl::kLatency == kRoceParserLatency);

// The driver, the same for every design with roce_parser's ports.
struct RoceParserRtl::Impl {
    virtual ~Impl() = default;
    virtual roce::HeaderVector parse(const uint8_t* frame, size_t len, uint64_t* cycles_out,
                                     uint64_t* in_cycles_out) = 0;
    virtual uint64_t cycles() const = 0;
};

namespace {

template <typename V>
struct Driver final : RoceParserRtl::Impl, VerilatedBlock<V> {
    using Block = VerilatedBlock<V>;
    Driver() {
        // The record is taken as soon as it is valid: the output never
        // stalls, and a record left on the port is consumed by the edge
        // that takes the next frame's first beat.
        (*this)->m_ready_i = 1;
        Block::reset();
    }
    uint64_t cycles() const override { return Block::cycles(); }

    roce::HeaderVector parse(const uint8_t* frame, size_t len, uint64_t* cycles_out,
                             uint64_t* in_cycles_out) override {
        constexpr size_t kBeatBytes = RoceParserRtl::kBeatBytes;
        V& top = **this;
        const size_t nbeats = std::max<size_t>(1, (len + kBeatBytes - 1) / kBeatBytes);
        const uint64_t start = Block::cycles();  // the next edge takes the first beat
        for (size_t b = 0; b < nbeats; ++b) {
            const size_t off = b * kBeatBytes;
            const size_t n = std::min(kBeatBytes, len - std::min(len, off));
            load_beat(top, kBeatBytes, frame + std::min(len, off), n, [] { return 0u; });
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
};

std::unique_ptr<RoceParserRtl::Impl> make(RoceParserRtl::Design d) {
    switch (d) {
        case RoceParserRtl::Design::ExampleSlow: return std::make_unique<Driver<Vroce_parser_slow>>();
        case RoceParserRtl::Design::ExampleBuggy: return std::make_unique<Driver<Vroce_parser_buggy>>();
        case RoceParserRtl::Design::Reference: break;
    }
    return std::make_unique<Driver<Vroce_parser>>();
}

}  // namespace

RoceParserRtl::RoceParserRtl(Design d) : impl_(make(d)) {}
RoceParserRtl::~RoceParserRtl() = default;

uint64_t RoceParserRtl::cycles() const { return impl_->cycles(); }

roce::HeaderVector RoceParserRtl::parse(const uint8_t* frame, size_t len, uint64_t* cycles_out,
                                       uint64_t* in_cycles_out) {
    return impl_->parse(frame, len, cycles_out, in_cycles_out);
}

}  // namespace simnic::rtl
