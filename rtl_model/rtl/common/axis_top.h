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
#include <utility>

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

// The bytes a port of a Verilated model holds: a port up to 64 bits is an
// integer (CData..QData), a wider one an array of 32-bit words (VlWide).
// For a datapath port of a power-of-two width of 64 bits or more that is
// its width in bytes, which is how a driver compiled with the model learns
// the DataWidth it was built at (decltype of a port: Verilator 5 declares
// the model's ports as references).
template <typename Port> inline constexpr size_t kPortBytes = sizeof(std::remove_reference_t<Port>);

// The bytes one beat of `V`'s AXI-stream sink carries (DataWidth / 8).
template <typename V>
inline constexpr size_t kSinkBeatBytes = kPortBytes<decltype(std::declval<V&>().s_axis_tdata_i)>;
// The same for its AXI-stream source.
template <typename V>
inline constexpr size_t kSourceBeatBytes = kPortBytes<decltype(std::declval<V&>().m_axis_tdata_o)>;

// Bit i of a port, an integer or an array of 32-bit words.
template <typename Port> bool port_bit(const Port& port, size_t i) {
    if constexpr (std::is_integral_v<Port>) {
        return (static_cast<uint64_t>(port) >> i) & 1;
    } else {
        return (port[i / 32] >> (i % 32)) & 1;
    }
}

// Byte i of a port (bits 8i+7:8i), an integer or an array of 32-bit words.
template <typename Port> uint8_t port_byte(const Port& port, size_t i) {
    if constexpr (std::is_integral_v<Port>) {
        return static_cast<uint8_t>(static_cast<uint64_t>(port) >> (8 * i));
    } else {
        return static_cast<uint8_t>(port[i / 4] >> (8 * (i % 4)));
    }
}

// tkeep with the low n lanes set (all of them for n >= the port's width).
template <typename Port> void set_keep(Port& port, size_t n) {
    using T = std::decay_t<Port>;
    if constexpr (std::is_integral_v<T>) {
        port = n >= sizeof(T) * 8 ? static_cast<T>(~T{0}) : static_cast<T>((T{1} << n) - 1);
    } else {
        // A wide tkeep (DataWidth over 512 bits): word by word.
        for (size_t w = 0; w < sizeof(T) / 4; ++w) {
            const size_t lo = 32 * w;
            port[w] = n >= lo + 32 ? ~uint32_t{0} : n <= lo ? 0u : (uint32_t{1} << (n - lo)) - 1;
        }
    }
}

// One beat: bytes [0, n) from p into lanes 0..n-1 of s_axis_tdata_i (lane 0 =
// bits 7:0 of word 0, as Verilator lays out a wide port); lanes n.. get
// filler() (a testbench passes random garbage, a wrapper zeros). tkeep is set
// to n lanes.
template <typename V, typename Filler>
void load_beat(V& top, size_t beat_bytes, const uint8_t* p, size_t n, Filler&& filler) {
    using Data = std::remove_reference_t<decltype(top.s_axis_tdata_i)>;
    if constexpr (std::is_integral_v<Data>) {
        // DataWidth 64: the port is one integer, lane 0 its low byte.
        uint64_t v = 0;
        for (size_t byte = 0; byte < beat_bytes && byte < sizeof(Data); ++byte) {
            const uint64_t x = byte < n ? p[byte] : static_cast<uint8_t>(filler());
            v |= x << (8 * byte);
        }
        top.s_axis_tdata_i = static_cast<Data>(v);
    } else {
        for (size_t w = 0; w < beat_bytes / 4; ++w) {
            uint32_t v = 0;
            for (size_t i = 0; i < 4; ++i) {
                const size_t byte = w * 4 + i;
                const uint32_t x = byte < n ? p[byte] : static_cast<uint8_t>(filler());
                v |= x << (8 * i);
            }
            top.s_axis_tdata_i[w] = v;
        }
    }
    set_keep(top.s_axis_tkeep_i, n);
}

// The same with zeros in lanes n.. (a wrapper's beat). On a little-endian
// host Verilator's 32-bit words hold the lanes in wire order, so the beat is
// one copy; this is per beat of every frame, beside the model's eval().
template <typename V> void load_beat(V& top, size_t beat_bytes, const uint8_t* p, size_t n) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    // The port's own bytes, an integer's (DataWidth 64) as a wide one's.
    using Data = std::remove_reference_t<decltype(top.s_axis_tdata_i)>;
    if constexpr (!std::is_integral_v<Data>)
        static_assert(sizeof(top.s_axis_tdata_i[0]) == 4, "Verilator's wide words are 32 bits");
    auto* lanes = reinterpret_cast<uint8_t*>(&top.s_axis_tdata_i);
    if (beat_bytes > sizeof(Data)) beat_bytes = sizeof(Data);
    const size_t k = n < beat_bytes ? n : beat_bytes;
    if (k) std::memcpy(lanes, p, k);
    std::memset(lanes + k, 0, beat_bytes - k);
    set_keep(top.s_axis_tkeep_i, n);
#else
    load_beat(top, beat_bytes, p, n, [] { return 0u; });
#endif
}

}  // namespace simnic::rtl
