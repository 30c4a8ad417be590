// The switch's testbench harness, on the pattern of the pipeline's
// block_harness.h: a SwitchBench owns a SystemC context of its own (entered
// with sim::SimGuard), ONE switch (the design under test), and the test's
// processes around it:
//
//   tb::SwitchBench b(cfg);
//   auto& s0 = b.source(0, frames, {.cable_ps = 100'000});  // a sender on port 0
//   b.run();                                                // until idle
//   CHECK(b.out(1)[0].t_ps == ...);                         // what left port 1, when
//
// A Source stands for a device's MAC TX on the far end of a cable: it sends
// its frames back to back at its line rate, each no earlier than its time,
// and honours the PFC frames the switch sends back on its port (after the
// cable's delay, for their pause time, finishing the frame on the line) as
// a lossless NIC does. Test processes only record; assertions go after
// run(), in the test body (an exception inside a SystemC thread would not
// reach Catch).
#pragma once

#include <systemc>

#include <stdlib.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "sim_context.h"
#include "simnic/model/fabric/pfc.h"
#include "simnic/model/fabric/switch.h"
#include "simnic/roce/opcode.h"
#include "simnic/roce/packet.h"

namespace simnic::model::fabric::tb {

inline uint64_t now_ps() { return sc_core::sc_time_stamp().value(); }
inline void wait_until(uint64_t t) {
    const uint64_t n = now_ps();
    if (t > n) sc_core::wait(sc_core::sc_time(double(t - n), sc_core::SC_PS));
}

// A frame that left the switch, and when its last bit did.
struct Seen {
    uint64_t t_ps = 0;
    std::vector<uint8_t> bytes;
};

// A test process: an SC_THREAD that runs `body` once.
class TbProcess : public sc_core::sc_module {
public:
    SC_HAS_PROCESS(TbProcess);
    TbProcess(sc_core::sc_module_name n, std::function<void()> body) : sc_core::sc_module(n), body_(std::move(body)) {
        SC_THREAD(main);
    }

private:
    void main() { body_(); }
    std::function<void()> body_;
};

struct SourceOptions {
    uint64_t line_rate_bps = 100'000'000'000ull;
    uint32_t overhead_bytes = 20;
    uint64_t cable_ps = 0;   // each way
    bool honour_pfc = true;
};

// A sender on one port (see above). `sent` holds when each frame's last bit
// reached the switch.
struct Source {
    uint32_t port = 0;
    SourceOptions opt;
    std::vector<std::pair<uint64_t, std::vector<uint8_t>>> frames;  // (not before, frame)
    std::vector<uint64_t> arrived_ps;
    // PFC frames on their way back: (when they reach the source, frame).
    std::vector<std::pair<uint64_t, PfcFrame>> pfc_in;
    size_t pfc_seen = 0;
    std::array<uint64_t, kPriorities> paused_until{};
    std::vector<std::pair<uint64_t, std::vector<uint8_t>>> in_flight;  // (arrives, frame) on the cable

    uint64_t frame_ps(size_t bytes) const {
        return ((bytes + opt.overhead_bytes) * 8 * 1'000'000'000'000ull + opt.line_rate_bps / 2) / opt.line_rate_bps;
    }
};

class SwitchBench {
public:
    explicit SwitchBench(const SwitchConfig& cfg) : guard_(nullptr) {
        setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 0);
        ctx_ = new sc_core::sc_simcontext;
        sc_core::sc_curr_simcontext = ctx_;
        out_.resize(cfg.ports.size());
        // Events belong to the context current when they are made: this one.
        wake_ = std::make_unique<sc_core::sc_event>();
        cable_ev_ = std::make_unique<sc_core::sc_event>();
        sw_ = std::make_unique<Switch>("switch", cfg, [this](uint32_t p, std::vector<uint8_t>&& f) { sunk(p, std::move(f)); });
    }
    ~SwitchBench() {
        procs_.clear();
        sw_.reset();
        wake_.reset();
        cable_ev_.reset();
        delete ctx_;
    }
    SwitchBench(const SwitchBench&) = delete;
    SwitchBench& operator=(const SwitchBench&) = delete;

    Switch& sw() { return *sw_; }
    // Every frame that left port p (PFC frames included), in order.
    const std::vector<Seen>& out(uint32_t p) const { return out_[p]; }
    // Data frames only / PFC frames only, of port p.
    std::vector<Seen> data_out(uint32_t p) const { return filter(p, false); }
    std::vector<Seen> pfc_out(uint32_t p) const { return filter(p, true); }

    // Frames handed to receive() at the given times, on `port`, from a
    // process (a device on a zero-length cable that ignores PFC).
    void inject(uint32_t port, std::vector<std::pair<uint64_t, std::vector<uint8_t>>> items) {
        auto q = std::make_shared<decltype(items)>(std::move(items));
        thread("inject", [this, port, q] {
            for (auto& [at, f] : *q) {
                wait_until(at);
                sw_->receive(port, std::move(f));
            }
        });
    }

    // A sender on `port` (see Source).
    Source& source(uint32_t port, std::vector<std::pair<uint64_t, std::vector<uint8_t>>> frames,
                   SourceOptions opt = {}) {
        auto s = std::make_unique<Source>();
        s->port = port;
        s->opt = opt;
        s->frames = std::move(frames);
        Source* src = s.get();
        sources_.push_back(std::move(s));
        thread("source", [this, src] { run_source(*src); });
        thread("cable", [this, src] { run_cable(*src); });
        return *src;
    }

    void thread(const std::string& name, std::function<void()> body) {
        if (started_) throw std::logic_error("SwitchBench: add test processes before the first run()");
        procs_.push_back(std::make_unique<TbProcess>(sc_core::sc_gen_unique_name(name.c_str()), std::move(body)));
    }

    uint64_t run() {
        started_ = true;
        sc_core::sc_start();
        sw_->flush_depth();
        return now_ps();
    }

private:
    std::vector<Seen> filter(uint32_t p, bool pfc) const {
        std::vector<Seen> v;
        for (const Seen& s : out_[p])
            if (is_mac_control(s.bytes.data(), s.bytes.size()) == pfc) v.push_back(s);
        return v;
    }
    void sunk(uint32_t p, std::vector<uint8_t>&& f) {
        PfcFrame pf;
        if (decode_pfc(f.data(), f.size(), pf)) {
            for (auto& s : sources_)
                if (s->port == p) s->pfc_in.emplace_back(now_ps() + s->opt.cable_ps, pf);
            wake_->notify(sc_core::SC_ZERO_TIME);  // paused sources look again
        }
        out_[p].push_back(Seen{now_ps(), std::move(f)});
    }
    // Applies the PFC frames that have reached the source by now.
    static void apply_pfc(Source& s, uint64_t now) {
        while (s.pfc_seen < s.pfc_in.size() && s.pfc_in[s.pfc_seen].first <= now) {
            const auto& [t, pf] = s.pfc_in[s.pfc_seen++];
            for (unsigned i = 0; i < kPriorities; ++i)
                if (pf.class_enable >> i & 1)
                    s.paused_until[i] = t + (uint64_t(pf.time[i]) * kPauseQuantumBits * 1'000'000'000'000ull +
                                             s.opt.line_rate_bps / 2) / s.opt.line_rate_bps;
        }
    }
    static unsigned prio_of(const SwitchConfig& c, const std::vector<uint8_t>& f) {
        roce::Packet p;
        roce::DecodeOptions o;
        o.check_icrc = false;
        if (!roce::decode_frame(f.data(), f.size(), p, o)) return c.non_ip_priority;
        const uint8_t tc = p.ip_version == roce::IpVersion::V4 ? p.ip4.tos : p.ip6.traffic_class;
        return c.dscp_to_priority[tc >> 2];
    }
    void run_source(Source& s) {
        for (auto& [at, f] : s.frames) {
            wait_until(at);
            const unsigned prio = prio_of(sw_->config(), f);
            for (;;) {
                apply_pfc(s, now_ps());
                if (!s.opt.honour_pfc || s.paused_until[prio] <= now_ps()) break;
                // Paused: until the pause ends, the next PFC frame on the
                // cable reaches us, or the switch sends another.
                uint64_t wake = s.paused_until[prio];
                if (s.pfc_seen < s.pfc_in.size()) wake = std::min(wake, s.pfc_in[s.pfc_seen].first);
                sc_core::wait(sc_core::sc_time(double(wake - now_ps()), sc_core::SC_PS), *wake_);
            }
            sc_core::wait(sc_core::sc_time(double(s.frame_ps(f.size())), sc_core::SC_PS));
            s.in_flight.emplace_back(now_ps() + s.opt.cable_ps, std::move(f));
            cable_ev_->notify(sc_core::SC_ZERO_TIME);
        }
    }
    void run_cable(Source& s) {
        size_t next = 0;
        for (;;) {
            while (next >= s.in_flight.size()) sc_core::wait(*cable_ev_);
            wait_until(s.in_flight[next].first);
            s.arrived_ps.push_back(now_ps());
            sw_->receive(s.port, std::move(s.in_flight[next].second));
            ++next;
        }
    }

    sim::SimGuard guard_;  // first: held for the bench's life, released last
    sc_core::sc_simcontext* ctx_ = nullptr;
    std::unique_ptr<Switch> sw_;
    std::vector<std::vector<Seen>> out_;
    std::vector<std::unique_ptr<Source>> sources_;
    std::vector<std::unique_ptr<TbProcess>> procs_;
    std::unique_ptr<sc_core::sc_event> wake_, cable_ev_;
    bool started_ = false;
};

// ---- stimulus ----

inline roce::MacAddr host_mac(unsigned h) { return {0x02, 0, 0, 0, 0, uint8_t(h)}; }

struct FrameSpec {
    unsigned src = 1, dst = 2;  // hosts (MAC 02:00:00:00:00:hh, IP 10.0.0.hh)
    uint32_t psn = 0;
    size_t payload = 1024;      // RDMA WRITE payload, bytes
    uint8_t dscp = 26;
    uint8_t ecn = 0b10;         // ECT(0)
    bool ipv6 = false;
};

// A RoCE v2 RDMA WRITE Only frame by the packet core: lengths, the IPv4
// checksum and the ICRC filled in. 1024 payload bytes over IPv4: 1098 bytes.
inline std::vector<uint8_t> roce_frame(const FrameSpec& s) {
    roce::Packet p;
    p.eth.dst = host_mac(s.dst);
    p.eth.src = host_mac(s.src);
    const uint8_t tc = uint8_t(s.dscp << 2 | s.ecn);
    if (s.ipv6) {
        p.ip_version = roce::IpVersion::V6;
        p.eth.ethertype = roce::kEtherTypeIpv6;
        p.ip6.traffic_class = tc;
        p.ip6.src[15] = uint8_t(s.src);
        p.ip6.dst[15] = uint8_t(s.dst);
        p.ip6.src[0] = p.ip6.dst[0] = 0xFD;
    } else {
        p.ip4.tos = tc;
        p.ip4.src = 0x0A000000u | s.src;
        p.ip4.dst = 0x0A000000u | s.dst;
    }
    p.udp.sport = uint16_t(0xC000 | s.src);
    p.hdr.bth.opcode = roce::op::RC_RDMA_WRITE_ONLY;
    p.hdr.bth.dqpn = 0x11;
    p.hdr.bth.psn = s.psn;
    p.hdr.reth.va = 0x10000;
    p.hdr.reth.rkey = 0x1234;
    p.hdr.reth.dma_len = uint32_t(s.payload);
    std::vector<uint8_t> data(s.payload);
    for (size_t i = 0; i < s.payload; ++i) data[i] = uint8_t(i * 7 + s.psn);
    p.payload = data.data();
    p.payload_len = s.payload;
    std::vector<uint8_t> f;
    if (!roce::encode_frame(p, f)) throw std::invalid_argument("roce_frame: does not encode");
    return f;
}

// A decoded frame that left the switch: its PSN, source host, ECN bits, and
// whether its ICRC and IPv4 checksum still check.
struct Decoded {
    bool ok = false;
    uint32_t psn = 0;
    unsigned src = 0;
    uint8_t ecn = 0;
};
inline Decoded decode(const std::vector<uint8_t>& f) {
    roce::Packet p;
    Decoded d;
    d.ok = roce::decode_frame(f.data(), f.size(), p).ok();  // ICRC and IP checksum checked
    d.psn = p.hdr.bth.psn;
    d.src = p.eth.src[5];
    d.ecn = uint8_t((p.ip_version == roce::IpVersion::V4 ? p.ip4.tos : p.ip6.traffic_class) & 3);
    return d;
}

// A switch with `ports` ports, host h on port h - 1 (hosts 1..ports), one
// rate; PFC and ECN as `cfg` says otherwise.
inline SwitchConfig small_switch(unsigned ports, SwitchConfig cfg = {}) {
    cfg.ports.assign(ports, SwitchPortConfig{});
    cfg.fdb.clear();
    for (unsigned h = 1; h <= ports; ++h) cfg.fdb.push_back({host_mac(h), h - 1});
    return cfg;
}

}  // namespace simnic::model::fabric::tb
