// The Verilated ICRC engine (DataWidth 512; one's own at the width it was
// built at) behind a plain C++ interface, for
// tools that want the RTL's verdict and timing on real frames (`simnic rtl
// icrc`). The testbench in tb/ drives the RTL itself, with its own stimulus
// and checks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace simnic::rtl {

struct IcrcResult {
    uint32_t icrc = 0;          // m_icrc_o: the computed ICRC
    bool ok = false;            // m_icrc_ok_o: equals the carried ICRC
    bool err = false;           // m_err_o: not IP, bad IHL or too short
    uint64_t first_beat_cycle = 0;  // cycle whose edge took the frame's first beat
    uint64_t last_beat_cycle = 0;  // cycle whose edge took the frame's last beat
    uint64_t valid_cycle = 0;      // cycle whose edge raised m_valid_o
};

struct IcrcRunStats {
    uint64_t frames = 0;
    uint64_t beats = 0;
    uint64_t cycles = 0;  // from the first beat to the last result
};

struct OwnRtl;
struct OwnRtlBuildInfo;

class IcrcEngineRtl {
public:
    static constexpr size_t kBeatBytes = 64;

    IcrcEngineRtl();
    // One's own engine, named by its sources and top: port-checked,
    // verilated and compiled into a shared object (or found in the cache),
    // then loaded (own_rtl.h). Throws OwnRtlError with every problem found.
    explicit IcrcEngineRtl(const OwnRtl& own, OwnRtlBuildInfo* info = nullptr);
    ~IcrcEngineRtl();
    IcrcEngineRtl(const IcrcEngineRtl&) = delete;
    IcrcEngineRtl& operator=(const IcrcEngineRtl&) = delete;

    // Streams the frames back to back, one beat per cycle, and returns one
    // result per frame, in order. Empty frames are not sent and get err set.
    std::vector<IcrcResult> run(const std::vector<std::vector<uint8_t>>& frames,
                                IcrcRunStats* stats = nullptr);

    // Bytes per beat: the DataWidth the design was verilated at, over 8
    // (kBeatBytes for the built-in engine; one's own: OwnRtl::data_width).
    size_t beat_bytes() const;

    // The driver of one design (icrc_engine_driver.h).
    struct Impl;

private:
    std::unique_ptr<Impl> impl_;
};

}  // namespace simnic::rtl
