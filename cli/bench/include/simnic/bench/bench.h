// `simnic bench`: drives a model device with a synthetic workload instead of
// applications (issue 5).
//
// The device is the real one: firmware, device tables, the functional
// datapath and the cycle-level pipeline, in this process, with MAC TX looped
// to MAC RX. The host reaches it as a driver does, through a host::Context
// (firmware commands, doorbells) with WQEs and CQEs in hw-spec's formats
// (the hwspec codec, as the verbs provider), and is modelled inside the
// simulation: it posts WQEs to real rings in this process's memory and rings
// doorbells at simulated time 0, then, each time a CQE becomes visible (in
// simulated time), consumes it and posts the next WQE, keeping `depth`
// messages outstanding per QP. Each QP is an RC QP connected to itself, so
// `qps` QPs are `qps` QPC entries.
//
// Warm-up: the first `warmup` messages run exactly as the measured ones,
// back to back with them, but the pipeline's figures are reset when the
// last of them completes: the caches are warm and the pipeline full when
// the measurement starts, so the figures are the steady state's (cold
// misses and the ramp excluded). With warmup 0 the measurement starts at
// the first doorbell, as it did before warm-up existed.
//
// READs: at most max_rd_atomic of a QP's READs are in flight (IBA
// 9.4.4.1). The bench sets it to the depth, at least 16 and at most the
// device's max_qp_init_rd_atom (128); deeper READ queues wait in the send
// queue, as on hardware. BenchResult::rd_atomic says what was used.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "simnic/model/config.h"
#include "simnic/model/pipeline.h"

namespace simnic::model {

enum class BenchOp : uint8_t { Write, Read, Send };
bool parse_bench_op(const std::string& s, BenchOp& op);
const char* to_string(BenchOp op);

struct BenchSpec {
    BenchOp op = BenchOp::Write;
    uint32_t size = 65536;    // bytes per message
    uint32_t mtu = 4096;      // the QPs' path MTU, bytes: 256, 512, 1024, 2048 or 4096
    uint32_t qps = 1;
    uint32_t depth = 16;      // messages outstanding per QP
    uint64_t messages = 0;    // measured, in all; 0: enough for a steady state
    std::optional<uint64_t> warmup;  // messages before the measurement; none: qps * depth
    // SENDs and WRITEs carry their data in the WQE (IBV_SEND_INLINE): the
    // QPs' max_inline is the size (at most hw::kMaxInline), the send queue's
    // stride grows to hold it, and the device reads no payload.
    bool inline_data = false;
    // The host sleeps on its CQs instead of polling them: each CQ is armed
    // (ibv_req_notify_cq, next completion), and the host reacts only when
    // the CQ's MSI-X interrupt wakes it (cq.msix_ns), drains the CQ, re-arms
    // it and posts, as an application on a completion channel does.
    bool events = false;
    // Each CQ's own interrupt moderation, set as ibv_modify_cq sets it
    // (MODIFY_CQ with IBV_CQ_ATTR_MODERATE into the CQC) right after the CQ
    // is created: cq_count CQEs per event, cq_period microseconds (0 to
    // hw::kMaxCqPeriodUs). None: the CQs follow the device's
    // cq.moderation_* keys. Only armed CQs raise events, so it shows with
    // `events` only.
    struct CqModeration {
        uint16_t count = 0;
        uint16_t period_us = 0;
    };
    std::optional<CqModeration> cq_mod;
    ModelConfig cfg;
    // A waveform (Pipeline::trace) of the measurement: from its start (or
    // from cycle trace_from) for trace_cycles cycles (0: to its end).
    std::string trace_path, trace_format;
    std::optional<uint64_t> trace_from;
    uint64_t trace_cycles = 0;
};

struct BenchResult {
    uint64_t warmup = 0;         // messages run before the measurement
    uint32_t rd_atomic = 0;      // READs: the QPs' max_rd_atomic (0 for other ops)
    uint64_t messages = 0;       // completed successfully in the measurement
    uint64_t errors = 0;         // completions with an error status
    double sim_ns = 0;           // measurement start to last completion
    uint64_t sim_cycles = 0;
    double gbps = 0;             // payload delivered per simulated second
    double line_utilisation = 0; // MAC TX: frame bytes + gaps over line rate, %
    double msg_rate_mps = 0;     // messages per simulated microsecond
    double lat_min_ns = 0, lat_median_ns = 0, lat_p99_ns = 0;
    double qpc_hit = 0, mpt_hit = 0, mtt_hit = 0;  // %
    // Completions the host consumed in the measurement (CQEs: a SEND's
    // receive completions too) and the completion events (MSI-X interrupts,
    // cq.interrupts) that woke it; 0 events when it polls. What moderation
    // trades: completions per event against latency.
    uint64_t completions = 0, events = 0;
    double wall_s = 0;           // host time spent simulating
    double cycles_per_s = 0;     // simulation speed
    std::vector<ModelStat> stats;
};

// Runs one workload; false and `err` when the device cannot be set up.
bool run_bench(const BenchSpec& spec, BenchResult& out, std::string& err);

}  // namespace simnic::model
