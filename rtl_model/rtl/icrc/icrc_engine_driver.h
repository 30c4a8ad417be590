// The driver of a Verilated ICRC engine with icrc_engine's ports behind
// IcrcEngineRtl: the same code for the built-in engine (icrc_engine_rtl.cc)
// and for one's own, compiled at run time into a shared object
// (icrc_engine_own_shim.cc, own_rtl.cc); its text is part of the wrapper
// ABI that keys the cache.
#pragma once

#include <algorithm>
#include <deque>

#include "icrc_engine_rtl.h"
#include "verilated_block.h"

namespace simnic::rtl {

// What one design's driver does; IcrcEngineRtl holds one.
struct IcrcEngineRtl::Impl {
    virtual ~Impl() = default;
    virtual std::vector<IcrcResult> run(const std::vector<std::vector<uint8_t>>& frames, IcrcRunStats* stats) = 0;
    // Bytes per beat: the DataWidth the design was verilated at, over 8.
    virtual size_t beat_bytes() const = 0;
};

// kRiseOnly: the design is the repo's engine, known to have no falling-edge
// logic (verilated_block.h); one's own is clocked on both edges.
template <typename V, bool kRiseOnly = false>
struct IcrcEngineDriver final : IcrcEngineRtl::Impl, VerilatedBlock<V, kRiseOnly> {
    using Block = VerilatedBlock<V, kRiseOnly>;
    IcrcEngineDriver() { Block::reset(); }
    size_t beat_bytes() const override { return kBeatBytes; }
    // The beat the model was verilated with (one's own: the device's
    // mac.width_bytes), from its s_axis_tdata_i port.
    static constexpr size_t kBeatBytes = kSinkBeatBytes<V>;

    std::vector<IcrcResult> run(const std::vector<std::vector<uint8_t>>& frames, IcrcRunStats* stats) override {
        Block& m = *this;
        std::vector<IcrcResult> out(frames.size());
        std::deque<size_t> in_flight;  // frames whose last beat went in, oldest first
        size_t done = 0;
        const uint64_t start = m.cycles();
        uint64_t beats = 0;

        // After each rising edge, collect a result if the engine raised m_valid_o.
        auto edge = [&] {
            m.tick([&] {
                if (m->m_valid_o && !in_flight.empty()) {
                    IcrcResult& r = out[in_flight.front()];
                    in_flight.pop_front();
                    r.icrc = m->m_icrc_o;
                    r.ok = m->m_icrc_ok_o;
                    r.err = m->m_err_o;
                    r.valid_cycle = m.cycles();
                    ++done;
                }
            });
        };

        size_t sent = 0;
        for (size_t k = 0; k < frames.size(); ++k) {
            const std::vector<uint8_t>& f = frames[k];
            if (f.empty()) {
                out[k].err = true;
                ++done;
                continue;
            }
            ++sent;
            const size_t nbeats = (f.size() + kBeatBytes - 1) / kBeatBytes;
            for (size_t b = 0; b < nbeats; ++b) {
                const size_t off = b * kBeatBytes;
                load_beat(*m, kBeatBytes, &f[off], std::min(kBeatBytes, f.size() - off));
                m->s_axis_tvalid_i = 1;
                m->s_axis_tlast_i = b + 1 == nbeats;
                while (!m->s_axis_tready_o) edge();
                if (b == 0) out[k].first_beat_cycle = m.cycles() + 1;
                if (b + 1 == nbeats) {
                    in_flight.push_back(k);
                    out[k].last_beat_cycle = m.cycles() + 1;
                }
                edge();
                ++beats;
            }
        }
        m->s_axis_tvalid_i = 0;
        // This engine's latency is 7 edges at DataWidth 512; one swapped in for
        // it may take longer (its own cycles are the model's timing), up to
        // 1024, after which a frame counts as never answered.
        for (int i = 0; i < 1024 && done < frames.size(); ++i) edge();
        for (size_t k : in_flight) out[k].err = true;  // never answered
        if (stats) {
            stats->frames = sent;
            stats->beats = beats;
            stats->cycles = m.cycles() - start;
        }
        return out;
    }
};

}  // namespace simnic::rtl
