#include "roce_parser_rtl.h"

#include "Vroce_parser.h"
#include "Vroce_parser___024root.h"
#include "Vroce_parser_buggy.h"
#include "Vroce_parser_buggy___024root.h"
#include "Vroce_parser_slow.h"
#include "Vroce_parser_slow___024root.h"
#include "own_parser.h"
#include "roce_parser_driver.h"

namespace simnic::rtl {

static_assert(RoceParserRtl::kLatency == kRoceParserLatency);
// The built-in designs are verilated at kBeatBytes (CMakeLists.txt, DataWidth=512).
static_assert(RoceParserDriver<Vroce_parser, true>::kBeatBytes == RoceParserRtl::kBeatBytes);
static_assert(RoceParserDriver<Vroce_parser_slow, true>::kBeatBytes == RoceParserRtl::kBeatBytes);
static_assert(RoceParserDriver<Vroce_parser_buggy, true>::kBeatBytes == RoceParserRtl::kBeatBytes);

namespace {

std::unique_ptr<RoceParserRtl::Impl> make(RoceParserRtl::Design d) {
    switch (d) {
        case RoceParserRtl::Design::ExampleSlow: return std::make_unique<RoceParserDriver<Vroce_parser_slow, true>>();
        case RoceParserRtl::Design::ExampleBuggy: return std::make_unique<RoceParserDriver<Vroce_parser_buggy, true>>();
        case RoceParserRtl::Design::Reference: break;
    }
    return std::make_unique<RoceParserDriver<Vroce_parser, true>>();
}

}  // namespace

RoceParserRtl::RoceParserRtl(Design d) : impl_(make(d)) {}
RoceParserRtl::RoceParserRtl(const OwnRtl& own, OwnRtlBuildInfo* info) : impl_(load_own_parser(own, info)) {}
RoceParserRtl::~RoceParserRtl() = default;

uint64_t RoceParserRtl::cycles() const { return impl_->cycles(); }
size_t RoceParserRtl::beat_bytes() const { return impl_->beat_bytes(); }
uint64_t RoceParserRtl::hold(uint64_t edges, roce::HeaderVector* after) { return impl_->hold(edges, after); }

roce::HeaderVector RoceParserRtl::parse(const uint8_t* frame, size_t len, uint64_t* cycles_out,
                                       uint64_t* in_cycles_out) {
    return impl_->parse(frame, len, cycles_out, in_cycles_out);
}

}  // namespace simnic::rtl
