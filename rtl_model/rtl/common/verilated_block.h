// A Verilated RTL block as its C++ wrapper or its testbench holds it: the
// model (in a VerilatedContext of its own unless given one), the clock
// cycles it has run, and the clock and reset of axis_top.h counted on it.
#pragma once

#include <verilated.h>

#include <cstdint>
#include <memory>
#include <type_traits>
#include <utility>

#include "axis_top.h"

namespace simnic::rtl {

namespace detail {

// Where a Verilated model keeps the clock's value as its last eval() saw
// it, to find the rising edge on the next: Verilator's own name for it,
// which its versions spell differently (5.006: __Vtrigrprev__TOP__clk_i;
// later 5.x: __Vtrigprevexpr___TOP__clk_i__0). Found at compile time, on
// the model's root (the caller includes V<top>___024root.h).
template <typename R, typename = void> struct ClkPrevV5006 : std::false_type {};
template <typename R>
struct ClkPrevV5006<R, std::void_t<decltype(std::declval<R&>().__Vtrigrprev__TOP__clk_i)>> : std::true_type {};
template <typename R, typename = void> struct ClkPrevV5020 : std::false_type {};
template <typename R>
struct ClkPrevV5020<R, std::void_t<decltype(std::declval<R&>().__Vtrigprevexpr___TOP__clk_i__0)>> : std::true_type {};

}  // namespace detail

// kRiseOnly: the design has no logic on the clock's falling edge and no
// logic that reads the clock's level (every simnic block: always_ff
// @(posedge clk_i), with an asynchronous reset at most), which its driver
// knows and one's own design is not assumed to. For such a design the
// falling edge's eval() only re-settles the logic fed by the inputs, which
// have not changed since the rising edge's eval(): that is a third of a
// wide block's work per cycle (the ICRC engine's body CRC is input logic).
// tick() then skips it and tells the model's edge detector that the clock
// was seen low, so that the next eval() with the clock high is a rising
// edge as before; the block's cycles, outputs and timing are the same
// (the stages' tests and the bench's figures check it). Where the model
// does not keep that value under a name known here, every edge is
// evaluated, as for any design.
template <typename V, bool kRiseOnly = false> class VerilatedBlock {
public:
    explicit VerilatedBlock(VerilatedContext* ctx = nullptr)
        : own_ctx_(ctx ? nullptr : std::make_unique<VerilatedContext>()),
          top_(std::make_unique<V>(ctx ? ctx : own_ctx_.get())) {}
    ~VerilatedBlock() { top_->final(); }
    VerilatedBlock(const VerilatedBlock&) = delete;
    VerilatedBlock& operator=(const VerilatedBlock&) = delete;

    V& operator*() { return *top_; }
    V* operator->() { return top_.get(); }
    const V* operator->() const { return top_.get(); }

    // Clock cycles run so far, reset included.
    uint64_t cycles() const { return cycle_; }

    // One clock cycle, counted at its rising edge: `after_rise` sees the
    // outputs registered on it and cycles() already including it.
    template <typename AfterRise> void tick(AfterRise&& after_rise) {
        top_->clk_i = 1;
        top_->eval();
        ++cycle_;
        after_rise();
        top_->clk_i = 0;
        if constexpr (kRiseOnly) static_assert(sizeof(Root) > 0, "kRiseOnly: include the model's V<top>___024root.h");
        if constexpr (kSkipFall) {
            mark_clock_low(*top_->rootp);
        } else {
            top_->eval();
        }
    }
    void tick() { tick([] {}); }

    // reset_top() with tick() for each cycle. Inputs other than the stream's
    // are the caller's to set first.
    void reset() { reset_top(*top_, [this] { tick(); }); }
    // reset_sequence() with tick() for each cycle, for a block whose input
    // is a descriptor: every input is the caller's to set first.
    void reset_inputs_set() { reset_sequence(*top_, [this] { tick(); }); }

private:
    using Root = std::remove_const_t<std::remove_pointer_t<decltype(std::declval<V&>().rootp)>>;
    // (std::conjunction: the root is looked into only for kRiseOnly, the
    // one case where the caller has included its header.)
    static constexpr bool kSkipFall =
        std::conjunction_v<std::bool_constant<kRiseOnly>,
                           std::disjunction<detail::ClkPrevV5006<Root>, detail::ClkPrevV5020<Root>>>;

    // The falling edge as the next eval() would have recorded it.
    template <typename R> static void mark_clock_low(R& root) {
        if constexpr (detail::ClkPrevV5006<R>::value) {
            root.__Vtrigrprev__TOP__clk_i = 0;
        } else {
            root.__Vtrigprevexpr___TOP__clk_i__0 = 0;
        }
    }

    std::unique_ptr<VerilatedContext> own_ctx_;
    std::unique_ptr<V> top_;
    uint64_t cycle_ = 0;
};

}  // namespace simnic::rtl
