// The Verilated RoCE v2 header parser (DataWidth 512; one's own at the
// width it was built at) behind a plain C++
// interface, so that the cycle model can run the RTL where it would run the
// C++ twin simnic::roce::parse_header_vector(). The testbench in tb/ drives
// the RTL itself, with its own stimulus and checks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "simnic/roce/header_vector.h"

namespace simnic::rtl {

struct OwnRtl;
struct OwnRtlBuildInfo;

class RoceParserRtl {
public:
    // Which design: roce_parser.sv, or one of the worked examples of
    // bringing one's own (examples/: two more output register slices; a
    // planted bug in the PSN of SEND Only packets). Same ports, same driver.
    enum class Design { Reference, ExampleSlow, ExampleBuggy };

    static constexpr size_t kBeatBytes = 64;
    // Clock edges from the one that takes a frame's last beat to the one
    // after which its header vector is valid (roce_parser.sv, Latency).
    static constexpr uint64_t kLatency = 3;
    // The longest latency a parser swapped in for this one may have.
    static constexpr uint64_t kMaxLatency = 1024;

    explicit RoceParserRtl(Design d = Design::Reference);
    // One's own parser, named by its sources and top: port-checked,
    // verilated and compiled into a shared object (or found in the cache),
    // then loaded (own_rtl.h). Throws OwnRtlError with every problem found.
    // `info`, if given, tells what was done.
    explicit RoceParserRtl(const OwnRtl& own, OwnRtlBuildInfo* info = nullptr);
    ~RoceParserRtl();
    RoceParserRtl(const RoceParserRtl&) = delete;
    RoceParserRtl& operator=(const RoceParserRtl&) = delete;

    // Parse one frame (Ethernet, no FCS): stream its beats into the idle
    // parser one per cycle, then clock until its header vector comes out.
    // A frame of 0 bytes is one beat with no byte kept. `cycles_out`, if
    // given, receives the cycles the frame took, from the edge that took its
    // first beat through the edge after which the record was valid:
    // max(1, ceil(len / beat_bytes())) + kLatency for roce_parser. Equals parse_header_vector(frame,
    // len) field for field (tb/ checks this). `in_cycles_out`, if given,
    // receives the part of those cycles that took the beats in (the first
    // beat's edge through the last one's, input stalls included): the rest
    // is the RTL's latency. Throws std::runtime_error if the RTL never
    // answers.
    roce::HeaderVector parse(const uint8_t* frame, size_t len, uint64_t* cycles_out = nullptr,
                             uint64_t* in_cycles_out = nullptr);

    // Backpressure after parse(): `edges` edges with m_ready_i low while
    // the frame's header vector is on the port (the stage after the parser
    // full). Returns the edges m_valid_o was high on (0 if it is low after
    // them: the record was dropped); `after` gets the port's header vector
    // then, which a design that holds its output leaves unchanged.
    // m_ready_i is high again afterwards.
    uint64_t hold(uint64_t edges, roce::HeaderVector* after = nullptr);

    // Clock cycles simulated so far, reset included.
    uint64_t cycles() const;

    // Bytes per beat: the DataWidth the design was verilated at, over 8
    // (kBeatBytes for the built-in designs; one's own: OwnRtl::data_width).
    size_t beat_bytes() const;

    // The driver of one design (roce_parser_rtl.cc).
    struct Impl;

private:
    std::unique_ptr<Impl> impl_;
};

}  // namespace simnic::rtl
