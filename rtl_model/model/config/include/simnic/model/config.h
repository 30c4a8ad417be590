// The configuration of a `model` device (the cycle-level NIC pipeline):
//
//   simnic link add NAME type model netdev IFACE config FILE
//
// FILE is TOML. Every key is optional; a key the file leaves out keeps the
// default written here. docs/model-config.toml is render_config() of the
// defaults: every key with its meaning, unit and allowed values.
//
// One table in config.cc lists every key (its table, name, member, range and
// meaning); parsing, validation, rendering, describe() and operator== are all
// driven by it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "simnic/congestion/dcqcn.h"
#include "simnic/congestion/notification_point.h"
#include "simnic/hw/layout.h"

namespace simnic::model {

// Which implementation of a block the pipeline instantiates.
enum class BlockImpl : std::uint8_t {
    cpp,  // the C++ (SystemC) model of the block
    rtl,  // the block's Verilog RTL, run through Verilator
    // The parser only: the worked examples of one's own RTL
    // (rtl_model/rtl/parser/examples): a slower one, one with a planted bug.
    rtl_example_slow,
    rtl_example_buggy,
};
inline bool is_rtl(BlockImpl i) { return i != BlockImpl::cpp; }
const char* to_string(BlockImpl impl);

// [clock]
struct ClockConfig {
    double freq_mhz = 250;  // the pipeline clock, MHz
};

// [mac]
struct MacConfig {
    std::uint32_t width_bytes = 64;  // datapath width: bytes per cycle (a power of two)
    double line_rate_gbps = 100;     // the port's line rate, Gb/s
    std::uint32_t ifg_bytes = 20;    // preamble + SFD + inter-frame gap per frame, bytes
    // PHY, PCS and FEC latency in each direction (TX and RX each), ns; 0: not modelled.
    std::uint32_t phy_latency_ns = 0;
    // Propagation on the cable to the peer (about 5 ns per metre), ns; 0: not modelled.
    std::uint32_t cable_ns = 0;
};

// How work reaches the device from the host.
struct DoorbellConfig {
    // The CPU's posted MMIO write of a doorbell reaching the device, ns;
    // 0: the doorbell is there when rung (one cycle to take it).
    std::uint32_t mmio_ns = 0;
    // A send doorbell whose WQEs total at most this many bytes carries them
    // in its MMIO write (as a BlueFlame / WQE-by-MMIO doorbell): no WQE
    // fetch by DMA. 0: every WQE is fetched.
    std::uint32_t wqe_by_mmio_bytes = 0;
    // Receive WQEs are read by DMA when their doorbell rings, ahead of the
    // SEND that consumes them (1), instead of when it arrives (0).
    std::uint32_t recv_wqe_prefetch = 0;
};

// [pipeline]: how frames move between the stages.
struct PipelineConfig {
    // 1: cut-through where real pipelines stream a frame (TX build -> MAC
    // TX -> the line -> MAC RX -> parser -> ICRC check): a stage starts on a
    // frame when its first beat is there. 0: store-and-forward, every stage
    // starts on a frame when all of it is there.
    std::uint32_t cut_through = 0;
    // 1 (needs cut_through): the responder writes a request's payload to
    // host memory while the frame streams in, before the ICRC verdict, as
    // ConnectX-class NICs do; its completion and ACK still wait for the
    // verdict, and a bad ICRC drops the packet after placement (no PSN
    // advance, no CQE, no ACK: the requester retransmits). 0: "buffer until
    // checked", the payload waits on chip for the verdict.
    std::uint32_t place_before_verdict = 0;
};

// [parser], [icrc], [tx_build], [req_seg]: a block that exists both in C++
// and in RTL.
struct BlockConfig {
    BlockImpl impl = BlockImpl::cpp;  // which implementation runs
    std::uint32_t latency_cycles = 0;  // last beat in to result out, cycles (C++ model)
    // One's own SystemVerilog, verilated when the device is
    // created (docs/model.md, Your own RTL). Empty: the built-in RTL. With
    // impl = rtl. Relative paths in a file are made relative to its folder
    // (parse_config's origin, if it has one); --set ones stay as typed.
    std::vector<std::string> rtl_sources;
    std::string rtl_top;  // the top module of rtl_sources
};

// [qpc_cache], [mpt_cache], [mtt_cache]: on-chip caches of device tables
// held in host memory; a miss costs a DMA read of the entry.
struct CacheConfig {
    std::uint32_t entries = 0;      // entries the cache holds (a multiple of ways)
    std::uint32_t ways = 1;         // associativity (a power of two)
    std::uint32_t hit_cycles = 0;   // lookup to data on a hit, cycles
    std::uint32_t entry_bytes = 0;  // bytes fetched per entry on a miss

    std::uint32_t sets() const { return entries / ways; }
};

// [dma]: the PCIe path to host memory.
struct DmaConfig {
    std::uint32_t read_latency_ns = 600;         // read request to first completion, ns
    std::uint32_t write_latency_ns = 200;        // posted write to visible in host memory, ns
    double bandwidth_gbps = 200;                 // link bandwidth per direction, Gb/s
    std::uint32_t max_payload_bytes = 256;       // PCIe Max_Payload_Size, bytes
    std::uint32_t max_read_request_bytes = 512;  // PCIe Max_Read_Request_Size, bytes
    std::uint32_t outstanding_reads = 32;        // read requests (tags) in flight at once
    std::uint32_t tlp_overhead_bytes = 24;       // header, framing, LCRC per TLP on the link, bytes
};

// [requester]
struct RequesterConfig {
    std::uint32_t cycles_per_packet = 2;            // pipeline cycles per request packet built
    std::uint32_t retransmit_queue_entries = 1024;  // packets awaiting ACK, device-wide
};

// [responder], [completer]: a transport stage.
struct StageConfig {
    std::uint32_t cycles_per_packet = 2;  // pipeline cycles per packet handled
    // Contexts that play the stage's decisions (memory waits, writes, frames
    // handed on) at once; a QP's packets always go to the same one (QPN
    // modulo contexts), so a QP's order holds while one QP's wait for host
    // memory (a receive WQE) does not hold up another's. 1: one at a time.
    std::uint32_t contexts = 16;
};

// [cq]
struct CqConfig {
    std::uint32_t cqe_bytes = hw::kCqeSize;  // bytes written per CQE (hw-spec 7.1)
    // A CQE visible in host memory to the application's poll returning it
    // (the poll loop's turn and the cache miss on the CQE's line), ns; 0: at once.
    std::uint32_t poll_ns = 0;
    // A CQ armed for events (ibv_req_notify_cq): the MSI-X interrupt that
    // follows the completion event's EQE, to the application blocked in
    // ibv_get_cq_event being woken (the interrupt's delivery, the driver's
    // handler, the wake-up of the completion channel's reader), ns; 0: at once.
    std::uint32_t msix_ns = 0;
    // Interrupt moderation, as a CQ's moderation (ibv_modify_cq with
    // IBV_CQ_ATTR_MODERATE: cq_count, cq_period): an armed CQ's completion
    // event, its EQE and MSI-X message, waits until moderation_count CQEs
    // of the CQ are written (the one that raised it included) or
    // moderation_period_ns have passed since that CQE, whichever is first.
    // 0/0: no moderation, as mlx5_ib creates a verbs CQ (docs/model.md).
    // The device's default: a CQ that ibv_modify_cq gave its own (MODIFY_CQ,
    // the CQC's mod_*) follows that instead.
    std::uint32_t moderation_count = 0;      // CQEs; 0 or 1: no count
    std::uint32_t moderation_period_ns = 0;  // ns; 0: no timer (then count must be 0 or 1)
};

// [eq]
struct EqConfig {
    std::uint32_t eqe_bytes = hw::kEqeSize;  // bytes written per EQE (hw-spec 8.1)
};

// [fw]
struct FwConfig {
    double core_mhz = 500;                // the management core's clock, MHz
    std::uint32_t command_cycles = 2000;  // core cycles per firmware command
};

// [wire]: how the simulation meets a device's real wire (the kernel's UDP
// on its netdev). Not used by `simnic bench`, whose MAC TX feeds MAC RX.
struct WireConfig {
    // Cycles simulated between two looks at the wire: frames sent go out,
    // frames received (from a peer, or the device's own coming back through
    // the kernel) come in, at most this late. 0: simulate until idle first.
    std::uint32_t quantum_cycles = 1024;
};

// [congestion]: RoCE v2 congestion control in the device (DCQCN with ECN and
// CNPs; docs/model.md, "Congestion control"). The same table configures a
// `soft` device, whose config file may hold this table only. The defaults
// are DcqcnConfig's and NpConfig's (simnic/congestion), whose comments give
// each one's source.
struct CongestionConfig {
    std::uint32_t enable = 0;          // 1: on (every QP of the device), 0: off
    double line_rate_gbps = 0;         // Rc's ceiling; 0: the port's ([mac] line rate; 100 on a soft device)
    double min_rate_mbps = 1;          // Rc's and Rt's floor
    double g = 1.0 / 256;              // alpha's gain
    double initial_alpha = 1;          // alpha before the first CNP
    std::uint32_t alpha_timer_ns = 55'000;    // K
    std::uint32_t rate_timer_ns = 55'000;     // T
    std::uint32_t byte_counter_bytes = 10'000'000;  // B; 0: no byte counter
    std::uint32_t fast_recovery_steps = 5;    // F
    double rai_mbps = 40;              // R_AI
    double rhai_mbps = 200;            // R_HAI
    std::uint32_t min_cnp_interval_ns = 50'000;  // N, per QP
    std::uint32_t cnp_dscp = 48;       // the CNPs' IP DSCP (mlx5's roce_np/cnp_dscp)

    // The reaction point's configuration for a port of `port_gbps` (used
    // when line_rate_gbps is 0).
    congestion::DcqcnConfig dcqcn(double port_gbps) const;
    congestion::NpConfig np() const {
        return congestion::NpConfig{min_cnp_interval_ns, static_cast<std::uint8_t>(cnp_dscp)};
    }
};

struct ModelConfig {
    ClockConfig clock;
    MacConfig mac;
    DoorbellConfig doorbell;
    PipelineConfig pipeline;
    // Packet parser: headers out 4 cycles after the packet's last beat.
    BlockConfig parser{BlockImpl::cpp, /*latency_cycles=*/4, {}, {}};
    // ICRC check/insert: 7 cycles, as the RTL engine (rtl_model/rtl/icrc).
    BlockConfig icrc{BlockImpl::cpp, /*latency_cycles=*/7, {}, {}};
    // TX build's header builder: 0 cycles from a frame's descriptor to its
    // first beat, so that the C++ model's TX build costs the frame's beats
    // alone; the RTL (rtl_model/rtl/tx_build) brings its own (1).
    BlockConfig tx_build{BlockImpl::cpp, /*latency_cycles=*/0, {}, {}};
    // The requester's segmentation (impl, rtl_sources, rtl_top; no
    // latency_cycles: the C++ model's time per packet is
    // requester.cycles_per_packet, the RTL brings its own).
    BlockConfig req_seg{BlockImpl::cpp, /*latency_cycles=*/0, {}, {}};
    // QP contexts (hw-spec 9.2): 256 entries, 4 ways, 2 cycles, 256 bytes.
    CacheConfig qpc_cache{256, 4, 2, hw::qpc::kSize};
    // Memory protection entries (hw-spec 9.5): 1024 entries, 4 ways, 2 cycles, 64 bytes.
    CacheConfig mpt_cache{1024, 4, 2, hw::mpt_entry::kSize};
    // Memory translation entries (hw-spec 9.6): 4096 entries, 8 ways, 2 cycles, 8 bytes.
    CacheConfig mtt_cache{4096, 8, 2, hw::mtt_entry::kSize};
    DmaConfig dma;
    RequesterConfig requester;
    StageConfig responder;
    StageConfig completer;
    CqConfig cq;
    EqConfig eq;
    FwConfig fw;
    WireConfig wire;
    CongestionConfig congestion;

    // Derived values.
    double clock_period_ps() const { return 1e6 / clock.freq_mhz; }
    // What the datapath can carry: width_bytes * 8 bits every cycle, Gb/s.
    double raw_mac_gbps() const { return mac.width_bytes * 8.0 * clock.freq_mhz / 1000.0; }
    // Datapath beats (cycles) that carry `bytes`.
    std::uint32_t beats(std::uint32_t bytes) const {
        return (bytes + mac.width_bytes - 1) / mac.width_bytes;
    }
    // Time a frame of `frame_bytes` occupies the line, preamble and gap included, ps.
    double line_time_ps(std::uint32_t frame_bytes) const {
        return (frame_bytes + mac.ifg_bytes) * 8000.0 / mac.line_rate_gbps;
    }
    // Pipeline cycles covering `ns` nanoseconds (rounded up).
    std::uint64_t ns_to_cycles(double ns) const;
    // Time one firmware command takes on the management core, ns.
    double fw_command_ns() const { return fw.command_cycles * 1000.0 / fw.core_mhz; }
};

// Compares every configuration key.
bool operator==(const ModelConfig& a, const ModelConfig& b);
inline bool operator!=(const ModelConfig& a, const ModelConfig& b) { return !(a == b); }

// Parses TOML `text`: starts from the defaults and overrides what the text
// sets. `origin` names the text in messages (a file name). On failure returns
// false, leaves `out` unchanged and sets `err` to every problem found, one
// line each, in document order: "origin:line:column: message" (the position
// where toml++ has one). A TOML syntax error stops the parse: it is the only
// line then.
bool parse_config(std::string_view text, const std::string& origin, ModelConfig& out,
                  std::string& err);
// The same, then `overrides` on top, in order: each "TABLE.KEY=VALUE" as
// `simnic bench --set` takes it (VALUE is TOML; a bare word is a string, so
// parser.impl=rtl works). A problem with the Nth override is reported as
// "--set #N: message", after the text's; a rule across keys (cache ways,
// the line rate) is cited where the first of its keys was set.
bool parse_config(std::string_view text, const std::string& origin,
                  const std::vector<std::string>& overrides, ModelConfig& out, std::string& err);
// Reads and parses the file at `path` (as parse_config, origin = path).
bool load_config(const std::string& path, ModelConfig& out, std::string& err);
// Checks ranges and cross-field rules of a configuration built in code;
// every problem, one line each.
bool validate_config(const ModelConfig& cfg, std::string& err);

// The whole configuration as TOML, a comment per key (meaning, unit, allowed
// values). parse_config(render_config(c)) gives c back.
std::string render_config(const ModelConfig& cfg);
// A `soft` device's config: TOML with the [congestion] table only (a soft
// device has no pipeline to time). As parse_config; a key of another table
// is an error that names it.
bool parse_soft_config(std::string_view text, const std::string& origin, CongestionConfig& out, std::string& err);

// "table.key" -> value, every key in table order (strings unquoted).
std::vector<std::pair<std::string, std::string>> describe(const ModelConfig& cfg);

}  // namespace simnic::model
