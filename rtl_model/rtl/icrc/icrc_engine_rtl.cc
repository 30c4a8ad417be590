#include "icrc_engine_rtl.h"

#include <verilated.h>

#include <algorithm>
#include <deque>

#include "Vicrc_engine.h"
#include "axis_top.h"

namespace simnic::rtl {

struct IcrcEngineRtl::Impl {
    VerilatedContext ctx;
    std::unique_ptr<Vicrc_engine> top;
    uint64_t cycle = 0;

    Impl() : top(new Vicrc_engine{&ctx}) { reset_top(*top, [this] { tick(); }); }
    ~Impl() { top->final(); }

    void tick() {
        clock_cycle(*top);
        ++cycle;
    }
};

IcrcEngineRtl::IcrcEngineRtl() : impl_(std::make_unique<Impl>()) {}
IcrcEngineRtl::~IcrcEngineRtl() = default;

std::vector<IcrcResult> IcrcEngineRtl::run(const std::vector<std::vector<uint8_t>>& frames,
                                           IcrcRunStats* stats) {
    Impl& m = *impl_;
    std::vector<IcrcResult> out(frames.size());
    std::deque<size_t> in_flight;  // frames whose last beat went in, oldest first
    size_t done = 0;
    const uint64_t start = m.cycle;
    uint64_t beats = 0;

    // After each edge, collect a result if the engine raised m_valid_o.
    auto edge = [&] {
        m.top->clk_i = 1;
        m.top->eval();
        ++m.cycle;
        if (m.top->m_valid_o && !in_flight.empty()) {
            IcrcResult& r = out[in_flight.front()];
            in_flight.pop_front();
            r.icrc = m.top->m_icrc_o;
            r.ok = m.top->m_icrc_ok_o;
            r.err = m.top->m_err_o;
            r.valid_cycle = m.cycle;
            ++done;
        }
        m.top->clk_i = 0;
        m.top->eval();
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
            load_beat(*m.top, kBeatBytes, &f[off], std::min(kBeatBytes, f.size() - off), [] { return 0u; });
            m.top->s_axis_tvalid_i = 1;
            m.top->s_axis_tlast_i = b + 1 == nbeats;
            while (!m.top->s_axis_tready_o) edge();
            if (b + 1 == nbeats) {
                in_flight.push_back(k);
                out[k].last_beat_cycle = m.cycle + 1;
            }
            edge();
            ++beats;
        }
    }
    m.top->s_axis_tvalid_i = 0;
    // The engine's latency is a few cycles; allow generous slack, then stop.
    for (int i = 0; i < 64 && done < frames.size(); ++i) edge();
    for (size_t k : in_flight) out[k].err = true;  // never answered
    if (stats) {
        stats->frames = sent;
        stats->beats = beats;
        stats->cycles = m.cycle - start;
    }
    return out;
}

}  // namespace simnic::rtl
