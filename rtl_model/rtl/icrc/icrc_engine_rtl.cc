#include "icrc_engine_rtl.h"

#include "Vicrc_engine.h"
#include "Vicrc_engine___024root.h"
#include "icrc_engine_driver.h"
#include "own_icrc.h"

namespace simnic::rtl {

// The built-in engine is verilated at kBeatBytes (CMakeLists.txt, DataWidth=512).
static_assert(IcrcEngineDriver<Vicrc_engine, true>::kBeatBytes == IcrcEngineRtl::kBeatBytes);

IcrcEngineRtl::IcrcEngineRtl() : impl_(std::make_unique<IcrcEngineDriver<Vicrc_engine, true>>()) {}
IcrcEngineRtl::IcrcEngineRtl(const OwnRtl& own, OwnRtlBuildInfo* info) : impl_(load_own_icrc(own, info)) {}
IcrcEngineRtl::~IcrcEngineRtl() = default;
size_t IcrcEngineRtl::beat_bytes() const { return impl_->beat_bytes(); }

std::vector<IcrcResult> IcrcEngineRtl::run(const std::vector<std::vector<uint8_t>>& frames, IcrcRunStats* stats) {
    return impl_->run(frames, stats);
}

}  // namespace simnic::rtl
