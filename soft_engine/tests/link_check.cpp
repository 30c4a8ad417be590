// A program that links the soft engine and nothing else of simnic's: its
// binary shows what a `soft` device costs at link time. test_link.sh checks
// that no SystemC (or Verilator) came with it: the cycle model plugs into the
// engine through timing.h and is linked only by whoever builds a model
// device.
#include <cstdio>
#include <string>

#include "simnic/soft_engine/engine.h"

int main() {
    simnic::soft_engine::EngineConfig cfg;  // no tables: create() refuses
    std::string err;
    auto engine = simnic::soft_engine::SoftEngine::create(cfg, err);
    std::printf("%s\n", engine ? "created" : err.c_str());
    return engine ? 1 : 0;
}
