// The `model` device's configuration: one key table (kKeys) drives parsing,
// validation, rendering, describe() and comparison.
#include "simnic/model/config.h"

#include <toml++/toml.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <optional>
#include <sstream>
#include <variant>

namespace simnic::model {

namespace {

// ---------------------------------------------------------------------------
// The key table
// ---------------------------------------------------------------------------

struct Table {
    const char* name;
    const char* doc;
};

constexpr Table kTables[] = {
    {"clock", "The pipeline clock."},
    {"mac", "The Ethernet MAC: the datapath width and the port's line."},
    {"doorbell", "Doorbells: how work reaches the device from the host."},
    {"pipeline", "How frames move between the stages."},
    {"parser", "Packet parser: splits a received frame into its RoCE v2 headers."},
    {"icrc", "ICRC: checks the invariant CRC of received frames, computes it for sent ones."},
    {"tx_build", "TX build: a sent frame's headers (Ethernet, IP, UDP, BTH and the rest) from its descriptor."},
    {"req_seg",
     "Requester segmentation: a send WQE's message cut into path-MTU request packets (opcode, PSN, payload "
     "slice, RETH, AckReq)."},
    {"qpc_cache", "On-chip cache of QP contexts (hw-spec 9.2); a miss reads the QPC by DMA."},
    {"mpt_cache", "On-chip cache of memory protection entries (hw-spec 9.5)."},
    {"mtt_cache", "On-chip cache of memory translation entries (hw-spec 9.6)."},
    {"dma", "DMA between the device and host memory over PCIe."},
    {"requester", "Requester: builds request packets from send WQEs, retransmits."},
    {"responder", "Responder: executes incoming requests, generates ACKs and read responses."},
    {"completer", "Completer: matches ACKs and responses to outstanding requests, completes WQEs."},
    {"cq", "Completion queues."},
    {"eq", "Event queues."},
    {"fw", "Firmware on the management core: executes commands (hw-spec 5)."},
    {"wire", "How the simulation meets a device's real wire (not used by simnic bench)."},
    {"congestion",
     "Congestion control: DCQCN (Zhu et al., SIGCOMM 2015) with ECN and CNPs, per device. Defaults: the "
     "paper's (docs/model.md). The only table a soft device's config may hold."},
};

using U32Ref = std::uint32_t& (*)(ModelConfig&);
using RealRef = double& (*)(ModelConfig&);
using ImplRef = BlockImpl& (*)(ModelConfig&);
using StrRef = std::string& (*)(ModelConfig&);
using StrListRef = std::vector<std::string>& (*)(ModelConfig&);
using Ref = std::variant<U32Ref, RealRef, ImplRef, StrRef, StrListRef>;

constexpr unsigned kPow2 = 1;

struct Key {
    const char* table;
    const char* name;
    Ref ref;           // the member the key sets
    double min, max;   // allowed range, inclusive (numbers only)
    unsigned flags;    // kPow2
    const char* unit;  // "" when none
    const char* doc;
};

// Indexed by BlockImpl; a key's `max` is the last one it accepts (the
// examples are parsers).
constexpr const char* kImplNames[] = {"cpp", "rtl", "rtl_example_slow", "rtl_example_buggy"};

#define SIMNIC_CFG_KEY(t, k, ...) \
    Key{#t, #k, Ref{+[](ModelConfig& c) -> decltype((c.t.k)) { return c.t.k; }}, __VA_ARGS__}

#define SIMNIC_CFG_CACHE_KEYS(t, what, spec_bytes)                                                 \
    SIMNIC_CFG_KEY(t, entries, 1, 1 << 20, 0, "entries", what " the cache holds"),                 \
    SIMNIC_CFG_KEY(t, ways, 1, 1024, kPow2, "ways", "Associativity; entries is a multiple of it"), \
    SIMNIC_CFG_KEY(t, hit_cycles, 0, 1024, 0, "cycles", "Lookup to data out on a hit"),            \
    SIMNIC_CFG_KEY(t, entry_bytes, spec_bytes, 4096, kPow2, "bytes",                               \
                   "Bytes a miss reads by DMA; at least the hw-spec entry")

constexpr Key kKeys[] = {
    SIMNIC_CFG_KEY(clock, freq_mhz, 1, 2000, 0, "MHz",
                   "Pipeline clock; every block but [fw] counts its cycles"),

    SIMNIC_CFG_KEY(mac, width_bytes, 8, 256, kPow2, "bytes",
                   "Datapath width: bytes the MAC and the pipeline move per cycle"),
    SIMNIC_CFG_KEY(mac, line_rate_gbps, 1, 1600, 0, "Gb/s",
                   "The port's line rate; at most width_bytes * 8 * clock.freq_mhz / 1000"),
    SIMNIC_CFG_KEY(mac, ifg_bytes, 0, 255, 0, "bytes",
                   "Preamble, SFD and inter-frame gap a frame adds on the line (Ethernet: 8 + 12)"),
    SIMNIC_CFG_KEY(mac, phy_latency_ns, 0, 100000, 0, "ns",
                   "PHY, PCS and FEC latency in each direction, TX and RX each; 0: not modelled"),
    SIMNIC_CFG_KEY(mac, cable_ns, 0, 1000000, 0, "ns",
                   "Propagation on the cable to the peer, about 5 ns per metre (loopback and bench); 0: none"),

    SIMNIC_CFG_KEY(doorbell, mmio_ns, 0, 100000, 0, "ns",
                   "The CPU's posted MMIO write of a doorbell reaching the device; 0: there when rung"),
    SIMNIC_CFG_KEY(doorbell, wqe_by_mmio_bytes, 0, 4096, 0, "bytes",
                   "A send doorbell whose WQEs total at most this carries them (WQE by MMIO): no WQE fetch; "
                   "0: always fetched"),
    SIMNIC_CFG_KEY(doorbell, recv_wqe_prefetch, 0, 1, 0, "",
                   "1: receive WQEs are read by DMA when posted, ahead of the SEND that uses them; 0: when it "
                   "arrives"),

    SIMNIC_CFG_KEY(pipeline, cut_through, 0, 1, 0, "",
                   "1: cut-through from TX build through the line to the ICRC check (a stage starts on a "
                   "frame's first beat; delivery still waits for the ICRC verdict); 0: store-and-forward"),
    SIMNIC_CFG_KEY(pipeline, place_before_verdict, 0, 1, 0, "",
                   "1 (needs cut_through): the responder writes a request's payload to host memory as it "
                   "streams in, before the ICRC verdict; completion and ACK wait for it, a bad ICRC drops the "
                   "packet after placement. 0: the payload waits on chip for the verdict"),

    SIMNIC_CFG_KEY(parser, impl, 0, 3, 0, "",
                   "Implementation: the C++ model, the Verilated RTL, or a worked example of one's own RTL"),
    SIMNIC_CFG_KEY(parser, latency_cycles, 0, 1024, 0, "cycles",
                   "A frame's last beat in to its headers out (C++ model; RTL has its own timing)"),
    SIMNIC_CFG_KEY(parser, rtl_sources, 0, 0, 0, "",
                   "One's own parser: SystemVerilog files, verilated when the device is created (with impl = "
                   "\"rtl\"; relative to the config file); empty: the built-in RTL"),
    SIMNIC_CFG_KEY(parser, rtl_top, 0, 0, 0, "", "The top module of rtl_sources"),

    SIMNIC_CFG_KEY(icrc, impl, 0, 1, 0, "", "Implementation: the C++ model or the Verilated RTL"),
    SIMNIC_CFG_KEY(icrc, latency_cycles, 0, 1024, 0, "cycles",
                   "A frame's last beat in to its ICRC out (C++ model; RTL has its own timing)"),
    SIMNIC_CFG_KEY(icrc, rtl_sources, 0, 0, 0, "",
                   "One's own ICRC engine: SystemVerilog files, verilated when the device is created (with impl = "
                   "\"rtl\"; relative to the config file); empty: the built-in RTL"),
    SIMNIC_CFG_KEY(icrc, rtl_top, 0, 0, 0, "", "The top module of rtl_sources"),

    SIMNIC_CFG_KEY(tx_build, impl, 0, 1, 0, "", "Implementation: the C++ model or the Verilated RTL"),
    SIMNIC_CFG_KEY(tx_build, latency_cycles, 0, 1024, 0, "cycles",
                   "A frame's descriptor in to its first header beat out (C++ model; RTL has its own timing)"),
    SIMNIC_CFG_KEY(tx_build, rtl_sources, 0, 0, 0, "",
                   "One's own TX header builder: SystemVerilog files, verilated when the device is created (with "
                   "impl = \"rtl\"; relative to the config file); empty: the built-in RTL"),
    SIMNIC_CFG_KEY(tx_build, rtl_top, 0, 0, 0, "", "The top module of rtl_sources"),

    SIMNIC_CFG_KEY(req_seg, impl, 0, 1, 0, "",
                   "Implementation: the C++ model (requester.cycles_per_packet per packet) or the Verilated RTL, "
                   "checked against the C++ on every WQE, with its own cycles"),
    SIMNIC_CFG_KEY(req_seg, rtl_sources, 0, 0, 0, "",
                   "One's own segmentation block: SystemVerilog files, verilated when the device is created (with "
                   "impl = \"rtl\"; relative to the config file); empty: the built-in RTL"),
    SIMNIC_CFG_KEY(req_seg, rtl_top, 0, 0, 0, "", "The top module of rtl_sources"),

    SIMNIC_CFG_CACHE_KEYS(qpc_cache, "QP contexts", hw::qpc::kSize),
    SIMNIC_CFG_CACHE_KEYS(mpt_cache, "MPT entries", hw::mpt_entry::kSize),
    SIMNIC_CFG_CACHE_KEYS(mtt_cache, "MTT entries", hw::mtt_entry::kSize),

    SIMNIC_CFG_KEY(dma, read_latency_ns, 0, 1000000, 0, "ns",
                   "Read request to its first completion: the PCIe round trip"),
    SIMNIC_CFG_KEY(dma, write_latency_ns, 0, 1000000, 0, "ns",
                   "Posted write to visible in host memory"),
    SIMNIC_CFG_KEY(dma, bandwidth_gbps, 1, 4096, 0, "Gb/s",
                   "PCIe link bandwidth per direction, TLP overhead included"),
    SIMNIC_CFG_KEY(dma, max_payload_bytes, 128, 4096, kPow2, "bytes",
                   "Max_Payload_Size: largest write or completion TLP payload"),
    SIMNIC_CFG_KEY(dma, max_read_request_bytes, 128, 4096, kPow2, "bytes",
                   "Max_Read_Request_Size: largest single read request"),
    SIMNIC_CFG_KEY(dma, outstanding_reads, 1, 1024, 0, "requests",
                   "Read requests (tags) in flight at once"),
    SIMNIC_CFG_KEY(dma, tlp_overhead_bytes, 0, 128, 0, "bytes",
                   "Header, framing, sequence number and LCRC each TLP adds on the link"),

    SIMNIC_CFG_KEY(requester, cycles_per_packet, 1, 1024, 0, "cycles",
                   "Pipeline cycles per request packet built"),
    SIMNIC_CFG_KEY(requester, retransmit_queue_entries, 1, 1 << 20, 0, "packets",
                   "Sent packets awaiting acknowledgement, device-wide"),

    SIMNIC_CFG_KEY(responder, cycles_per_packet, 1, 1024, 0, "cycles",
                   "Pipeline cycles per request packet executed"),
    SIMNIC_CFG_KEY(responder, contexts, 1, 1024, 0, "contexts",
                   "Request packets whose memory work (a receive WQE's read, payload writes) proceeds at once; a "
                   "QP's packets share one context (QPN modulo contexts), in order; 1: one packet at a time"),

    SIMNIC_CFG_KEY(completer, cycles_per_packet, 1, 1024, 0, "cycles",
                   "Pipeline cycles per response or ACK handled"),
    SIMNIC_CFG_KEY(completer, contexts, 1, 1024, 0, "contexts",
                   "Responses and timers whose memory work proceeds at once; a QP's share one context (QPN "
                   "modulo contexts), in order; 1: one at a time"),

    SIMNIC_CFG_KEY(cq, cqe_bytes, hw::kCqeSize, 256, kPow2, "bytes",
                   "Bytes written per CQE: the hw-spec 7.1 CQE, or more for padded writes"),
    SIMNIC_CFG_KEY(cq, poll_ns, 0, 1000000, 0, "ns",
                   "A CQE visible in host memory to the application's poll returning it (message latency and "
                   "the bench's host); 0: at once"),
    SIMNIC_CFG_KEY(cq, msix_ns, 0, 1000000, 0, "ns",
                   "A CQ armed for events: the MSI-X interrupt after its completion EQE to the application "
                   "woken in ibv_get_cq_event; 0: at once"),
    SIMNIC_CFG_KEY(cq, moderation_count, 0, 65535, 0, "CQEs",
                   "Interrupt moderation (as ibv_modify_cq's cq_count): an armed CQ's event and MSI-X message "
                   "wait until this many CQEs are written, or moderation_period_ns passed; 0 or 1: at once. "
                   "The default of every CQ that ibv_modify_cq did not give its own"),
    SIMNIC_CFG_KEY(cq, moderation_period_ns, 0, 4095000, 0, "ns",
                   "Interrupt moderation (as ibv_modify_cq's cq_period): the longest an armed CQ's event waits "
                   "from the CQE that raised it; 0: no timer. The default of every CQ that ibv_modify_cq "
                   "did not give its own"),

    SIMNIC_CFG_KEY(eq, eqe_bytes, hw::kEqeSize, 256, kPow2, "bytes",
                   "Bytes written per EQE: the hw-spec 8.1 EQE, or more for padded writes"),

    SIMNIC_CFG_KEY(fw, core_mhz, 1, 5000, 0, "MHz", "The management core's clock"),
    SIMNIC_CFG_KEY(fw, command_cycles, 1, 1000000000, 0, "cycles",
                   "Core cycles the firmware spends per command"),

    SIMNIC_CFG_KEY(wire, quantum_cycles, 0, 1 << 24, 0, "cycles",
                   "Cycles simulated between looks at the wire: what the device sends, and receives back "
                   "through the kernel, crosses at most this late; 0: simulate until idle first, so TX "
                   "and RX of a device talking to itself through the kernel take turns"),

    SIMNIC_CFG_KEY(congestion, enable, 0, 1, 0, "",
                   "1: every QP of the device takes part: its request packets are ECT(0) and paced at its "
                   "rate Rc, CE-marked packets for it are answered with CNPs, CNPs for it lower Rc; 0: off"),
    SIMNIC_CFG_KEY(congestion, line_rate_gbps, 0, 1600, 0, "Gb/s",
                   "Rc's ceiling and its value before any CNP; 0: the port's (mac.line_rate_gbps on a model "
                   "device, 100 on a soft one)"),
    SIMNIC_CFG_KEY(congestion, min_rate_mbps, 0.001, 1600000, 0, "Mb/s",
                   "Rc's and Rt's floor (not in the paper), so that a storm of CNPs cannot stall a QP"),
    SIMNIC_CFG_KEY(congestion, g, 0.000001, 1, 0, "", "g: the gain of the alpha estimate (paper: 1/256)"),
    SIMNIC_CFG_KEY(congestion, initial_alpha, 0, 1, 0, "",
                   "alpha before the first CNP (paper: 1, the first CNP halves Rc)"),
    SIMNIC_CFG_KEY(congestion, alpha_timer_ns, 1, 1000000000, 0, "ns",
                   "K: alpha decays by (1 - g) every K without a CNP (paper: 55 us)"),
    SIMNIC_CFG_KEY(congestion, rate_timer_ns, 1, 1000000000, 0, "ns",
                   "T: the rate increase timer while rate-limited (paper: 55 us)"),
    SIMNIC_CFG_KEY(congestion, byte_counter_bytes, 0, 4000000000, 0, "bytes",
                   "B: one rate increase per B bytes sent while rate-limited (paper: 10 MB, 10^7 bytes); 0: off"),
    SIMNIC_CFG_KEY(congestion, fast_recovery_steps, 0, 1000, 0, "steps",
                   "F: timer or byte counter events of fast recovery before additive increase (paper: 5)"),
    SIMNIC_CFG_KEY(congestion, rai_mbps, 0, 1600000, 0, "Mb/s", "R_AI: the additive increase step (paper: 40 Mb/s)"),
    SIMNIC_CFG_KEY(congestion, rhai_mbps, 0, 1600000, 0, "Mb/s",
                   "R_HAI: the hyper increase step (the authors' ns-3 model: 200 Mb/s; docs/model.md)"),
    SIMNIC_CFG_KEY(congestion, min_cnp_interval_ns, 0, 1000000000, 0, "ns",
                   "N: at most one CNP per QP per N (paper: 50 us); 0: one per CE-marked packet"),
    SIMNIC_CFG_KEY(congestion, cnp_dscp, 0, 63, 0, "",
                   "the DSCP of the CNPs the device sends (Not-ECT), so that switches queue them by it "
                   "(mlx5's roce_np/cnp_dscp: 48, CS6, priority 6 in the DSCP >> 3 map)"),
};

#undef SIMNIC_CFG_CACHE_KEYS
#undef SIMNIC_CFG_KEY

constexpr bool same(const char* a, const char* b) {
    while (*a && *a == *b) ++a, ++b;
    return *a == *b;
}

// Every key is in a listed table, every table has keys, no key twice.
constexpr bool key_table_consistent() {
    for (const Key& k : kKeys) {
        bool listed = false;
        for (const Table& t : kTables) listed = listed || same(k.table, t.name);
        if (!listed) return false;
        int seen = 0;
        for (const Key& o : kKeys) seen += same(k.table, o.table) && same(k.name, o.name);
        if (seen != 1) return false;
    }
    for (const Table& t : kTables) {
        bool used = false;
        for (const Key& k : kKeys) used = used || same(k.table, t.name);
        if (!used) return false;
    }
    return true;
}
static_assert(key_table_consistent(), "kKeys and kTables disagree");

// ---------------------------------------------------------------------------
// Values as text
// ---------------------------------------------------------------------------

std::string full_name(const Key& k) { return std::string(k.table) + "." + k.name; }

bool is_pow2(double v) {
    auto u = static_cast<std::uint64_t>(v);
    return u != 0 && (u & (u - 1)) == 0;
}

// Shortest text that reads back as the same double ("250", "322.265625").
std::string real_text(double v) {
    char buf[64];
    auto r = std::to_chars(buf, buf + sizeof buf, v);
    return std::string(buf, r.ptr);
}

std::string number_text(const Key& k, double v) {
    if (std::holds_alternative<U32Ref>(k.ref)) return std::to_string(static_cast<std::uint64_t>(v));
    return real_text(v);
}

std::string impl_text(BlockImpl i) { return kImplNames[static_cast<int>(i)]; }

// The allowed values of a key, e.g. `8..256 bytes, a power of two`.
std::string allowed(const Key& k) {
    if (std::holds_alternative<StrRef>(k.ref)) return "a string";
    if (std::holds_alternative<StrListRef>(k.ref)) return "an array of strings";
    if (std::holds_alternative<ImplRef>(k.ref)) {
        std::string s;
        for (std::size_t i = 0; i <= std::size_t(k.max) && i < std::size(kImplNames); ++i)
            s += std::string(s.empty() ? "" : " or ") + '"' + kImplNames[i] + '"';
        return s;
    }
    std::string s = number_text(k, k.min) + ".." + number_text(k, k.max);
    if (*k.unit) s += std::string(" ") + k.unit;
    if (k.flags & kPow2) s += ", a power of two";
    return s;
}

// A string as a TOML basic string: "text", with \" \\ and control
// characters escaped.
std::string quoted(std::string_view text) {
    std::string s = "\"";
    for (char ch : text) {
        const auto u = static_cast<unsigned char>(ch);
        if (ch == '"' || ch == '\\') {
            s += '\\';
            s += ch;
        } else if (u < 0x20 || u == 0x7f) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\u%04x", u);
            s += buf;
        } else {
            s += ch;
        }
    }
    return s + '"';
}

// The key's value in `c`; TOML syntax (strings quoted) or plain.
std::string value_text(const Key& k, const ModelConfig& c, bool toml) {
    // Read-only use of the accessors, which take a mutable config.
    auto& m = const_cast<ModelConfig&>(c);
    if (auto* u = std::get_if<U32Ref>(&k.ref)) return std::to_string((*u)(m));
    if (auto* r = std::get_if<RealRef>(&k.ref)) return real_text((*r)(m));
    if (auto* t = std::get_if<StrRef>(&k.ref)) return toml ? quoted((*t)(m)) : (*t)(m);
    if (auto* l = std::get_if<StrListRef>(&k.ref)) {
        std::string s;
        for (const std::string& e : (*l)(m)) s += (s.empty() ? "" : toml ? ", " : " ") + (toml ? quoted(e) : e);
        return toml ? "[" + s + "]" : s;
    }
    std::string s = impl_text((*std::get<ImplRef>(k.ref))(m));
    return toml ? '"' + s + '"' : s;
}

// `an integer 5`, `a string "x"`, ... for type errors.
std::string node_text(const toml::node& n) {
    std::ostringstream os;
    switch (n.type()) {
    case toml::node_type::string: os << "a string " << quoted(n.as_string()->get()); break;
    case toml::node_type::integer: os << "an integer " << *n.as_integer(); break;
    case toml::node_type::floating_point:
        os << "a floating-point number " << *n.as_floating_point();
        break;
    case toml::node_type::boolean: os << "a boolean " << *n.as_boolean(); break;
    case toml::node_type::table: os << "a table"; break;
    case toml::node_type::array: os << "an array"; break;
    case toml::node_type::date: os << "a date " << *n.as_date(); break;
    case toml::node_type::time: os << "a time " << *n.as_time(); break;
    case toml::node_type::date_time: os << "a date-time " << *n.as_date_time(); break;
    case toml::node_type::none: os << "nothing"; break;
    }
    return os.str();
}

// ---------------------------------------------------------------------------
// Checks shared by parse_config and validate_config
// ---------------------------------------------------------------------------

// Empty if `v` is allowed for number key `k`; `shown` is v as written.
std::string range_error(const Key& k, double v, const std::string& shown) {
    std::string head = full_name(k) + " = " + shown;
    if (!(v >= k.min && v <= k.max))
        return head + " is out of range (allowed: " + allowed(k) + ")";
    if ((k.flags & kPow2) && !is_pow2(v))
        return head + " is not a power of two (allowed: " + allowed(k) + ")";
    return {};
}

struct CrossError {
    std::string msg;
    std::vector<std::string> keys;  // the keys involved, for the position
};

std::vector<CrossError> cross_check(const ModelConfig& c) {
    std::vector<CrossError> out;
    const std::pair<const char*, CacheConfig ModelConfig::*> caches[] = {
        {"qpc_cache", &ModelConfig::qpc_cache},
        {"mpt_cache", &ModelConfig::mpt_cache},
        {"mtt_cache", &ModelConfig::mtt_cache},
    };
    for (const auto& [name, member] : caches) {
        const CacheConfig& cc = c.*member;
        if (cc.ways != 0 && cc.entries % cc.ways != 0) {
            std::string e = std::string(name) + ".entries", w = std::string(name) + ".ways";
            out.push_back(CrossError{e + " = " + std::to_string(cc.entries) + " is not a multiple of " + w + " = " +
                                         std::to_string(cc.ways),
                                     {e, w}});
        }
    }
    if (const char* m = congestion::check(c.congestion.dcqcn(c.mac.line_rate_gbps))) {
        out.push_back(CrossError{std::string("[congestion]: ") + m,
                                 {"congestion.min_rate_mbps", "congestion.line_rate_gbps"}});
    }
    // One's own RTL (parser, ICRC engine, TX build, segmentation): sources and a top, with impl = "rtl".
    for (const auto& [name, member] : {std::pair<std::string, BlockConfig ModelConfig::*>{"parser", &ModelConfig::parser},
                                       std::pair<std::string, BlockConfig ModelConfig::*>{"icrc", &ModelConfig::icrc},
                                       std::pair<std::string, BlockConfig ModelConfig::*>{"tx_build", &ModelConfig::tx_build},
                                       std::pair<std::string, BlockConfig ModelConfig::*>{"req_seg", &ModelConfig::req_seg}}) {
        const BlockConfig& p = c.*member;
        const std::string src = name + ".rtl_sources", top = name + ".rtl_top", impl = name + ".impl";
        if (!p.rtl_sources.empty() && p.impl != BlockImpl::rtl)
            out.push_back(CrossError{src + " is set but " + impl + " = \"" + impl_text(p.impl) + "\" (one's own RTL needs " +
                                         impl + " = \"rtl\")",
                                     {src, impl}});
        if (!p.rtl_sources.empty() && p.rtl_top.empty())
            out.push_back(CrossError{src + " is set but " + top + " is empty (name the top module)", {src, top}});
        if (p.rtl_sources.empty() && !p.rtl_top.empty())
            out.push_back(CrossError{top + " = " + quoted(p.rtl_top) + " is set but " + src +
                                         " is empty (list the top's files)",
                                     {top, src}});
    }
    if (c.mac.line_rate_gbps > c.raw_mac_gbps()) {
        out.push_back(CrossError{"mac.line_rate_gbps = " + real_text(c.mac.line_rate_gbps) +
                                     " exceeds the raw MAC rate of " + real_text(c.raw_mac_gbps()) +
                                     " Gb/s (mac.width_bytes " + std::to_string(c.mac.width_bytes) +
                                     " * 8 bits * clock.freq_mhz " + real_text(c.clock.freq_mhz) + " MHz)",
                                 {"mac.line_rate_gbps", "mac.width_bytes", "clock.freq_mhz"}});
    }
    if (c.pipeline.place_before_verdict && !c.pipeline.cut_through) {
        // Placing before the verdict means the payload streams past the ICRC
        // check; store-and-forward has the verdict before the transport sees
        // the frame, so there is nothing to overlap.
        out.push_back(CrossError{"pipeline.place_before_verdict = 1 needs pipeline.cut_through = 1 (with "
                                 "store-and-forward the verdict is out before the responder sees the frame)",
                                 {"pipeline.place_before_verdict", "pipeline.cut_through"}});
    }
    if (c.cq.moderation_count > 1 && c.cq.moderation_period_ns == 0) {
        // A count with no timer would hold an event for ever when fewer CQEs
        // come: the wake-up of an application that waits for them is lost.
        out.push_back(CrossError{"cq.moderation_count = " + std::to_string(c.cq.moderation_count) +
                                     " needs cq.moderation_period_ns > 0: without it an event waits for ever when "
                                     "fewer CQEs come",
                                 {"cq.moderation_count", "cq.moderation_period_ns"}});
    }
    return out;
}

// ---------------------------------------------------------------------------
// Parsing
// ---------------------------------------------------------------------------

std::size_t edit_distance(std::string_view a, std::string_view b) {
    std::vector<std::size_t> row(b.size() + 1);
    for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
    for (std::size_t i = 1; i <= a.size(); ++i) {
        std::size_t diag = row[0];
        row[0] = i;
        for (std::size_t j = 1; j <= b.size(); ++j) {
            std::size_t up = row[j];
            row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] != b[j - 1])});
            diag = up;
        }
    }
    return row[b.size()];
}

// The valid key nearest to `full` (edit distance <= 2), else the only key
// named `leaf` in another table; empty if neither.
std::string suggest_key(std::string_view full, std::string_view leaf) {
    std::string best;
    std::size_t best_d = 3;
    const Key* same_leaf = nullptr;
    int same_leaf_count = 0;
    for (const Key& k : kKeys) {
        std::string f = full_name(k);
        std::size_t d = edit_distance(full, f);
        if (d < best_d) best_d = d, best = f;
        if (leaf == k.name) same_leaf = &k, ++same_leaf_count;
    }
    if (!best.empty()) return best;
    if (same_leaf_count == 1) return full_name(*same_leaf);
    return {};
}

const Table* find_table(std::string_view name) {
    for (const Table& t : kTables)
        if (name == t.name) return &t;
    return nullptr;
}

const Key* find_key(std::string_view table, std::string_view name) {
    for (const Key& k : kKeys)
        if (table == k.table && name == k.name) return &k;
    return nullptr;
}

struct Pos {
    std::uint32_t line = 0, column = 0;  // 0: unknown
};

Pos pos_of(const toml::source_region& r) { return {r.begin.line, r.begin.column}; }

bool before(Pos a, Pos b) {
    if (a.line == 0) return false;
    if (b.line == 0) return true;
    return a.line != b.line ? a.line < b.line : a.column < b.column;
}

std::string located(const std::string& origin, Pos p, const std::string& msg) {
    std::string s = origin;
    if (p.line) s += ":" + std::to_string(p.line) + ":" + std::to_string(p.column);
    return s + ": " + msg;
}

// Every problem found, reported in document order (toml++ tables iterate
// by key, not by position), then the overrides' in their order.
struct Problems {
    struct One {
        Pos pos;
        std::string where;  // "origin:line:column" or "--set #N"
        std::string msg;
    };
    std::vector<One> file, later;

    void add(const std::string& origin, Pos p, std::string m) {
        std::string w = origin;
        if (p.line) w += ":" + std::to_string(p.line) + ":" + std::to_string(p.column);
        file.push_back({p, std::move(w), std::move(m)});
    }
    void add(std::string where, std::string m) { later.push_back({Pos{}, std::move(where), std::move(m)}); }
    bool empty() const { return file.empty() && later.empty(); }
    // One line per problem.
    std::string text() {
        std::stable_sort(file.begin(), file.end(), [](const One& a, const One& b) { return before(a.pos, b.pos); });
        std::string s;
        for (const auto* v : {&file, &later})
            for (const One& o : *v) s += (s.empty() ? "" : "\n") + o.where + ": " + o.msg;
        return s;
    }
};

// Sets key `k` from node `n`; an error message on failure.
std::string set_value(const Key& k, const toml::node& n, ModelConfig& c) {
    if (auto* u = std::get_if<U32Ref>(&k.ref)) {
        if (!n.is_integer()) return full_name(k) + ": expected an integer, got " + node_text(n);
        std::int64_t v = n.as_integer()->get();
        std::string e = range_error(k, static_cast<double>(v), std::to_string(v));
        if (!e.empty()) return e;
        (*u)(c) = static_cast<std::uint32_t>(v);
        return {};
    }
    if (auto* r = std::get_if<RealRef>(&k.ref)) {
        double v;
        std::string shown;
        if (n.is_integer()) {
            v = static_cast<double>(n.as_integer()->get());
            shown = std::to_string(n.as_integer()->get());
        } else if (n.is_floating_point()) {
            v = n.as_floating_point()->get();
            shown = real_text(v);
        } else {
            return full_name(k) + ": expected a number, got " + node_text(n);
        }
        std::string e = range_error(k, v, shown);
        if (!e.empty()) return e;
        (*r)(c) = v;
        return {};
    }
    if (auto* t = std::get_if<StrRef>(&k.ref)) {
        if (!n.is_string()) return full_name(k) + ": expected a string, got " + node_text(n);
        (*t)(c) = n.as_string()->get();
        return {};
    }
    if (auto* l = std::get_if<StrListRef>(&k.ref)) {
        // A single string is a list of one (as --set parser.rtl_sources=a.sv gives it).
        if (n.is_string()) {
            (*l)(c) = {n.as_string()->get()};
            return {};
        }
        const toml::array* a = n.as_array();
        if (!a) return full_name(k) + ": expected an array of strings, got " + node_text(n);
        std::vector<std::string> v;
        for (const toml::node& e : *a) {
            if (!e.is_string())
                return full_name(k) + ": expected an array of strings, element " + std::to_string(v.size() + 1) +
                       " is " + node_text(e);
            v.push_back(e.as_string()->get());
        }
        (*l)(c) = std::move(v);
        return {};
    }
    if (!n.is_string())
        return full_name(k) + ": expected a string (" + allowed(k) + "), got " + node_text(n);
    const std::string& s = n.as_string()->get();
    for (std::size_t i = 0; i <= std::size_t(k.max) && i < std::size(kImplNames); ++i) {
        if (s == kImplNames[i]) {
            (*std::get<ImplRef>(k.ref))(c) = static_cast<BlockImpl>(i);
            return {};
        }
    }
    return full_name(k) + " = " + quoted(s) + " is not a valid choice (allowed: " + allowed(k) +
           ")";
}

std::string table_list() {
    std::string s;
    for (const Table& t : kTables) s += std::string(s.empty() ? "" : ", ") + t.name;
    return s;
}

}  // namespace

// ---------------------------------------------------------------------------
// Public API
// ---------------------------------------------------------------------------

const char* to_string(BlockImpl impl) { return kImplNames[static_cast<int>(impl)]; }

std::uint64_t ModelConfig::ns_to_cycles(double ns) const {
    if (!(ns > 0)) return 0;
    // Tolerance so that an exact product (600 ns at 250 MHz = 150) is not
    // rounded up by floating-point noise.
    return static_cast<std::uint64_t>(std::ceil(ns * clock.freq_mhz / 1000.0 - 1e-9));
}

congestion::DcqcnConfig CongestionConfig::dcqcn(double port_gbps) const {
    congestion::DcqcnConfig d;
    d.line_rate_bps = (line_rate_gbps > 0 ? line_rate_gbps : port_gbps) * 1e9;
    d.min_rate_bps = min_rate_mbps * 1e6;
    d.g = g;
    d.initial_alpha = initial_alpha;
    d.alpha_timer_ns = alpha_timer_ns;
    d.rate_timer_ns = rate_timer_ns;
    d.byte_counter_bytes = byte_counter_bytes;
    d.fast_recovery_steps = fast_recovery_steps;
    d.rai_bps = rai_mbps * 1e6;
    d.rhai_bps = rhai_mbps * 1e6;
    return d;
}

bool parse_soft_config(std::string_view text, const std::string& origin_in, CongestionConfig& out, std::string& err) {
    const std::string origin = origin_in.empty() ? "<config>" : origin_in;
    // The tables first, so that a model device's file given to a soft
    // device is refused for what it is, not for one of its values.
    toml::table root;
    try {
        root = toml::parse(text, origin);
    } catch (const toml::parse_error&) {
        ModelConfig c;
        return parse_config(text, origin, c, err);  // reports the syntax error
    }
    std::string bad;
    for (const auto& [k, v] : root) {
        if (k.str() == "congestion") continue;
        bad += located(origin, pos_of(v.source()),
                       "[" + std::string(k.str()) + "] is a model device's; a soft device's config holds [congestion] only") +
               "\n";
    }
    if (!bad.empty()) {
        bad.pop_back();
        err = bad;
        return false;
    }
    ModelConfig c;
    if (!parse_config(text, origin, c, err)) return false;
    out = c.congestion;
    return true;
}

bool operator==(const ModelConfig& a, const ModelConfig& b) {
    for (const Key& k : kKeys)
        if (value_text(k, a, true) != value_text(k, b, true)) return false;
    return true;
}

bool parse_config(std::string_view text, const std::string& origin, ModelConfig& out, std::string& err) {
    return parse_config(text, origin, {}, out, err);
}

bool parse_config(std::string_view text, const std::string& origin_in, const std::vector<std::string>& overrides,
                  ModelConfig& out, std::string& err) {
    const std::string origin = origin_in.empty() ? "<config>" : origin_in;
    toml::table root;
    try {
        root = toml::parse(text, origin);
    } catch (const toml::parse_error& e) {
        std::string d(e.description());
        std::replace(d.begin(), d.end(), '\n', ' ');
        err = located(origin, pos_of(e.source()), d);
        return false;
    }

    ModelConfig c;
    // Full key -> who set it last: the file's position, or an override.
    struct Setter {
        bool by_override = false;
        Pos pos;
        std::string where;  // an override's label
    };
    std::map<std::string, Setter> set_at;
    Problems problems;
    for (auto&& [tkey, tnode] : root) {
        const std::string tname(tkey.str());
        if (!find_table(tname)) {
            if (tnode.is_table()) {
                std::string near;
                std::size_t near_d = 3;
                for (const Table& t : kTables) {
                    std::size_t d = edit_distance(tname, t.name);
                    if (d < near_d) near_d = d, near = t.name;
                }
                problems.add(origin, pos_of(tkey.source()),
                             "unknown table [" + tname + "] (" +
                                 (near.empty() ? "tables: " + table_list() : "did you mean [" + near + "]?") + ")");
            } else {
                std::string s = suggest_key(tname, tname);
                problems.add(origin, pos_of(tkey.source()),
                             "unknown key '" + tname + "' outside any table" +
                                 (s.empty() ? "" : " (did you mean '" + s + "'?)"));
            }
            continue;
        }
        const toml::table* tbl = tnode.as_table();
        if (!tbl) {
            problems.add(origin, pos_of(tnode.source()),
                         "'" + tname + "' must be a table ([" + tname + "]), got " + node_text(tnode));
            continue;
        }
        for (auto&& [kkey, knode] : *tbl) {
            const std::string kname(kkey.str());
            const Key* k = find_key(tname, kname);
            if (!k) {
                std::string s = suggest_key(tname + "." + kname, kname);
                problems.add(origin, pos_of(kkey.source()),
                             "unknown key '" + tname + "." + kname + "'" +
                                 (s.empty() ? "" : " (did you mean '" + s + "'?)"));
                continue;
            }
            std::string e = set_value(*k, knode, c);
            if (!e.empty())
                problems.add(origin, pos_of(knode.source()), e);
            else
                set_at[full_name(*k)] = Setter{false, pos_of(knode.source()), {}};
        }
    }
    // A file names its RTL relative to itself (the daemon, which gets the
    // file's absolute path as the origin, runs elsewhere); overrides are
    // relative to the working directory, as typed.
    if (const std::size_t slash = origin.rfind('/'); slash != std::string::npos)
        for (auto* list : {&c.parser.rtl_sources, &c.icrc.rtl_sources, &c.tx_build.rtl_sources, &c.req_seg.rtl_sources})
            for (std::string& src : *list)
                if (!src.empty() && src[0] != '/') src = origin.substr(0, slash + 1) + src;
    // The overrides, in order, each named by its place on the command line.
    for (std::size_t i = 0; i < overrides.size(); ++i) {
        const std::string& kv = overrides[i];
        const std::string where = "--set #" + std::to_string(i + 1);
        const std::size_t eq = kv.find('=');
        const std::string full = kv.substr(0, eq);
        const std::size_t dot = full.find('.');
        if (eq == std::string::npos || dot == std::string::npos || dot == 0 || dot + 1 == full.size()) {
            problems.add(where, "'" + kv + "': expected TABLE.KEY=VALUE, e.g. qpc_cache.entries=64");
            continue;
        }
        const std::string tname = full.substr(0, dot), kname = full.substr(dot + 1);
        const Key* k = find_key(tname, kname);
        if (!k) {
            std::string s = suggest_key(full, kname);
            problems.add(where, "unknown key '" + full + "'" + (s.empty() ? "" : " (did you mean '" + s + "'?)"));
            continue;
        }
        std::string value = kv.substr(eq + 1);
        // A bare word is a string (parser.impl=rtl), as a shell user types it.
        const bool text_key = std::holds_alternative<StrRef>(k->ref) || std::holds_alternative<StrListRef>(k->ref);
        if (text_key ? (value.empty() || (value[0] != '"' && value[0] != '[' && value[0] != '\''))
                     : (!value.empty() && std::isalpha(static_cast<unsigned char>(value[0])) && value != "true" &&
                        value != "false" && value != "nan" && value != "inf"))
            value = quoted(value);  // a path as typed: parser.rtl_sources=../my_parser.sv
        toml::table one;
        try {
            one = toml::parse("v = " + value, where);
        } catch (const toml::parse_error& e) {
            std::string d(e.description());
            std::replace(d.begin(), d.end(), '\n', ' ');
            problems.add(where, full + ": '" + kv.substr(eq + 1) + "' is not a TOML value (" + d + ")");
            continue;
        }
        const toml::node* v = one.get("v");
        std::string e = v ? set_value(*k, *v, c) : full + ": no value";
        if (!e.empty())
            problems.add(where, e);
        else
            set_at[full] = Setter{true, {}, where};
    }
    // Each rule across keys, cited where its earliest-set key was set (the
    // file before the overrides).
    if (problems.empty()) {
        for (const CrossError& x : cross_check(c)) {
            const Setter* first = nullptr;
            for (const std::string& key : x.keys) {
                auto it = set_at.find(key);
                if (it == set_at.end()) continue;
                const Setter& s = it->second;
                if (!first || (first->by_override && !s.by_override) ||
                    (!first->by_override && !s.by_override && before(s.pos, first->pos)))
                    first = &s;
            }
            if (first && first->by_override)
                problems.add(first->where, x.msg);
            else
                problems.add(origin, first ? first->pos : Pos{}, x.msg);
        }
    }
    if (!problems.empty()) {
        err = problems.text();
        return false;
    }
    out = c;
    return true;
}

bool load_config(const std::string& path, ModelConfig& out, std::string& err) {
    std::FILE* f = std::fopen(path.c_str(), "rb");
    if (!f) {
        err = path + ": cannot open: " + std::strerror(errno);
        return false;
    }
    std::string text;
    char buf[4096];
    std::size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) text.append(buf, n);
    const bool failed = std::ferror(f);
    const int saved = errno;
    std::fclose(f);
    if (failed) {
        err = path + ": cannot read: " + std::strerror(saved);
        return false;
    }
    return parse_config(text, path, out, err);
}

bool validate_config(const ModelConfig& cfg, std::string& err) {
    auto& m = const_cast<ModelConfig&>(cfg);  // read-only use of the accessors
    std::string all;
    auto add = [&](const std::string& e) { all += (all.empty() ? "" : "\n") + e; };
    for (const Key& k : kKeys) {
        double v;
        if (auto* u = std::get_if<U32Ref>(&k.ref))
            v = (*u)(m);
        else if (auto* r = std::get_if<RealRef>(&k.ref))
            v = (*r)(m);
        else if (std::holds_alternative<StrRef>(k.ref) || std::holds_alternative<StrListRef>(k.ref))
            continue;  // any text; cross_check() has the rules
        else {
            // An enum holds a named value; not every key takes every one.
            const auto i = static_cast<std::size_t>((*std::get<ImplRef>(k.ref))(m));
            if (i > std::size_t(k.max))
                add(full_name(k) + " = " + value_text(k, cfg, true) + " is not a valid choice (allowed: " + allowed(k) +
                    ")");
            continue;
        }
        std::string e = range_error(k, v, value_text(k, cfg, true));
        if (!e.empty()) add(e);
    }
    // The rules across keys assume each key in range.
    if (all.empty())
        for (const CrossError& x : cross_check(cfg)) add(x.msg);
    if (all.empty()) return true;
    err = all;
    return false;
}

std::string render_config(const ModelConfig& cfg) {
    std::string s =
        "# Configuration of a simnic `model` device (the cycle-level NIC pipeline):\n"
        "#   simnic link add NAME type model netdev IFACE config FILE\n"
        "# Every key is optional: a key the file leaves out keeps its default.\n"
        "# Each key's comment gives its meaning and [unit, allowed values].\n";
    for (const Table& t : kTables) {
        s += std::string("\n# ") + t.doc + "\n[" + t.name + "]\n";
        for (const Key& k : kKeys) {
            if (std::strcmp(k.table, t.name) != 0) continue;
            s += std::string("# ") + k.doc + " [" + allowed(k) +
                 (std::holds_alternative<RealRef>(k.ref) ? ", fractions allowed" : "") + "]\n";
            s += std::string(k.name) + " = " + value_text(k, cfg, true) + "\n";
        }
    }
    return s;
}

std::vector<std::pair<std::string, std::string>> describe(const ModelConfig& cfg) {
    std::vector<std::pair<std::string, std::string>> v;
    for (const Key& k : kKeys) v.emplace_back(full_name(k), value_text(k, cfg, false));
    return v;
}

}  // namespace simnic::model
