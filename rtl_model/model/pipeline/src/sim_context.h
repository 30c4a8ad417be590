// Whose SystemC simulation context is current. SystemC keeps it in a global
// (sc_core::sc_curr_simcontext): every use of SystemC, from any thread,
// happens under systemc_lock() with that global set to the context of the
// simulation being touched. The pipeline (pipeline.cc) and the blocks'
// testbenches (tests/block_harness.h) each own a context and enter it with a
// SimGuard.
#pragma once

#include <systemc>

#include <mutex>

namespace simnic::model::sim {

// Process-wide. Recursive: the bench's host model calls Pipeline::doorbell()
// from inside the simulation it is part of.
inline std::recursive_mutex& systemc_lock() {
    static std::recursive_mutex m;
    return m;
}

// Takes the lock and makes `ctx` current; restores the previous context and
// releases the lock on destruction.
class SimGuard {
public:
    explicit SimGuard(sc_core::sc_simcontext* ctx) : lk_(systemc_lock()), prev_(sc_core::sc_curr_simcontext) {
        sc_core::sc_curr_simcontext = ctx;
    }
    ~SimGuard() { sc_core::sc_curr_simcontext = prev_; }
    SimGuard(const SimGuard&) = delete;
    SimGuard& operator=(const SimGuard&) = delete;

private:
    std::lock_guard<std::recursive_mutex> lk_;
    sc_core::sc_simcontext* prev_;
};

}  // namespace simnic::model::sim
