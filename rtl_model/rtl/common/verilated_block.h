// A Verilated RTL block as its C++ wrapper or its testbench holds it: the
// model (in a VerilatedContext of its own unless given one), the clock
// cycles it has run, and the clock and reset of axis_top.h counted on it.
#pragma once

#include <verilated.h>

#include <cstdint>
#include <memory>

#include "axis_top.h"

namespace simnic::rtl {

template <typename V> class VerilatedBlock {
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
        clock_cycle(*top_, [&] {
            ++cycle_;
            after_rise();
        });
    }
    void tick() { tick([] {}); }

    // reset_top() with tick() for each cycle. Inputs other than the stream's
    // are the caller's to set first.
    void reset() { reset_top(*top_, [this] { tick(); }); }
    // reset_sequence() with tick() for each cycle, for a block whose input
    // is a descriptor: every input is the caller's to set first.
    void reset_inputs_set() { reset_sequence(*top_, [this] { tick(); }); }

private:
    std::unique_ptr<VerilatedContext> own_ctx_;
    std::unique_ptr<V> top_;
    uint64_t cycle_ = 0;
};

}  // namespace simnic::rtl
