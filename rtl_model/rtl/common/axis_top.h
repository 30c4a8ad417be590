// Driving a Verilated RTL block with a clock, an active-low reset and an
// AXI-stream sink (s_axis_tdata_i/tkeep_i/tvalid_i/tlast_i), the port
// convention every simnic RTL block follows (lowRISC style: clk_i, rst_ni).
// Both the blocks' C++ wrappers (which the cycle model runs in place of the
// C++ twins) and their testbenches drive the RTL through these helpers, so
// the reset sequence and the byte-lane order are written once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace simnic::rtl {

// One rising and one falling clock edge. `after_rise` runs between them,
// when the outputs registered on the rising edge are valid (a testbench
// checks them there, a wrapper collects a result).
template <typename V, typename AfterRise> void clock_cycle(V& top, AfterRise&& after_rise) {
    top.clk_i = 1;
    top.eval();
    after_rise();
    top.clk_i = 0;
    top.eval();
}

// One clock cycle; outputs registered on the rising edge are valid after it
// returns.
template <typename V> void clock_cycle(V& top) {
    clock_cycle(top, [] {});
}

// The reset every simnic block gets: rst_ni low for three cycles, then high
// and one more cycle, so that every register has left reset before the
// first input. `tick` runs one cycle (the caller's, so that it can count
// cycles or check outputs on each edge). The inputs are the caller's to set
// first (none valid).
template <typename V, typename Tick> void reset_sequence(V& top, Tick&& tick) {
    top.clk_i = 0;
    top.rst_ni = 0;
    top.eval();
    for (int i = 0; i < 3; ++i) tick();
    top.rst_ni = 1;
    top.eval();
    tick();
}

// The same for a block with an AXI-stream sink, no beat valid. Inputs other
// than the stream's are the caller's to set first.
template <typename V, typename Tick> void reset_top(V& top, Tick&& tick) {
    top.s_axis_tvalid_i = 0;
    reset_sequence(top, tick);
}

// tkeep with the low n lanes set (all of them for n >= the port's width).
template <typename Port> void set_keep(Port& port, size_t n) {
    using T = std::decay_t<Port>;
    port = n >= sizeof(T) * 8 ? static_cast<T>(~T{0}) : static_cast<T>((T{1} << n) - 1);
}

// One beat: bytes [0, n) from p into lanes 0..n-1 of s_axis_tdata_i (lane 0 =
// bits 7:0 of word 0, as Verilator lays out a wide port); lanes n.. get
// filler() (a testbench passes random garbage, a wrapper zeros). tkeep is set
// to n lanes.
template <typename V, typename Filler>
void load_beat(V& top, size_t beat_bytes, const uint8_t* p, size_t n, Filler&& filler) {
    for (size_t w = 0; w < beat_bytes / 4; ++w) {
        uint32_t v = 0;
        for (size_t i = 0; i < 4; ++i) {
            const size_t byte = w * 4 + i;
            const uint32_t x = byte < n ? p[byte] : static_cast<uint8_t>(filler());
            v |= x << (8 * i);
        }
        top.s_axis_tdata_i[w] = v;
    }
    set_keep(top.s_axis_tkeep_i, n);
}

// The same with zeros in lanes n.. (a wrapper's beat). On a little-endian
// host Verilator's 32-bit words hold the lanes in wire order, so the beat is
// one copy; this is per beat of every frame, beside the model's eval().
template <typename V> void load_beat(V& top, size_t beat_bytes, const uint8_t* p, size_t n) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    static_assert(sizeof(top.s_axis_tdata_i[0]) == 4, "Verilator's wide words are 32 bits");
    auto* lanes = reinterpret_cast<uint8_t*>(&top.s_axis_tdata_i[0]);
    const size_t k = n < beat_bytes ? n : beat_bytes;
    if (k) std::memcpy(lanes, p, k);
    std::memset(lanes + k, 0, beat_bytes - k);
    set_keep(top.s_axis_tkeep_i, n);
#else
    load_beat(top, beat_bytes, p, n, [] { return 0u; });
#endif
}

}  // namespace simnic::rtl
