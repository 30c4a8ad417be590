#include "simnic/model/fabric/switch.h"

#include <algorithm>
#include <ostream>
#include <stdexcept>
#include <utility>

#include "simnic/model/fabric/pfc.h"
#include "simnic/roce/ecn.h"
#include "simnic/roce/packet.h"

namespace simnic::model::fabric {

using sc_core::SC_PS;
using sc_core::sc_time;

namespace {

std::uint64_t mac_key(const std::uint8_t* m) {
    std::uint64_t k = 0;
    for (unsigned i = 0; i < 6; ++i) k = k << 8 | m[i];
    return k;
}

// Where the IP header starts (after an optional 802.1Q tag) and its
// version (4, 6; 0: not IP).
struct L3 {
    std::size_t off = 0;
    unsigned version = 0;
};
L3 find_l3(const std::vector<std::uint8_t>& f) {
    std::size_t off = 12;
    if (f.size() < off + 2) return {};
    std::uint16_t et = std::uint16_t(f[off] << 8 | f[off + 1]);
    off += 2;
    if (et == roce::kEtherTypeVlan) {
        if (f.size() < off + 4) return {};
        et = std::uint16_t(f[off + 2] << 8 | f[off + 3]);
        off += 4;
    }
    if (et == roce::kEtherTypeIpv4 && f.size() >= off + roce::kIpv4HdrBytes && (f[off] >> 4) == 4) return {off, 4};
    if (et == roce::kEtherTypeIpv6 && f.size() >= off + roce::kIpv6HdrBytes && (f[off] >> 4) == 6) return {off, 6};
    return {};
}

// The IP header's traffic class (IPv4 TOS): DSCP in bits 7..2, ECN in 1..0.
std::uint8_t traffic_class(const std::vector<std::uint8_t>& f, const L3& l3) {
    if (l3.version == 4) return f[l3.off + 1];
    return std::uint8_t((f[l3.off] & 0x0F) << 4 | f[l3.off + 1] >> 4);
}

}  // namespace

// One egress port: a thread that sends the port's PFC frames first, then
// data frames by the scheduler, each for its time on the line. It sleeps
// while there is nothing it may send, until a frame arrives (kick), a pause
// ends or an XOFF is due for its refresh.
class EgressPort : public sc_core::sc_module {
public:
    SC_HAS_PROCESS(EgressPort);
    EgressPort(sc_core::sc_module_name n, Switch& sw, std::uint32_t port)
        : sc_core::sc_module(n), sw_(sw), port_(port) {
        SC_THREAD(run);
    }

    sc_core::sc_event kick;
    std::deque<std::vector<std::uint8_t>> control;  // PFC frames to send, in order

private:
    void run();
    // The priority whose head goes next; -1: none may go. `wake` is set to
    // when a paused queue's pause ends (0: no such queue).
    int pick(std::uint64_t now, std::uint64_t& wake);
    // Sends what is due: XOFF refreshes of the priorities still paused upstream.
    std::uint64_t refreshes(std::uint64_t now);

    Switch& sw_;
    const std::uint32_t port_;
    unsigned rr_next_ = kPriorities - 1;  // round robin: the priority served last
};

std::uint64_t EgressPort::refreshes(std::uint64_t now) {
    std::uint64_t next = 0;
    for (unsigned i = 0; i < kPriorities; ++i) {
        Switch::Queue& qu = sw_.q(port_, i);
        if (!qu.xoff) continue;
        if (qu.refresh_at <= now) sw_.send_pfc(port_, i, true);  // resets refresh_at
        if (!next || qu.refresh_at < next) next = qu.refresh_at;
    }
    return next;
}

int EgressPort::pick(std::uint64_t now, std::uint64_t& wake) {
    wake = 0;
    auto eligible = [&](unsigned i) {
        const Switch::Queue& qu = sw_.q(port_, i);
        if (qu.frames.empty()) return false;
        if (qu.paused_until > now) {
            if (!wake || qu.paused_until < wake) wake = qu.paused_until;
            return false;
        }
        return true;
    };
    int chosen = -1;
    if (sw_.cfg_.scheduling == Scheduling::strict) {
        for (int i = kPriorities - 1; i >= 0; --i)
            if (eligible(unsigned(i))) {
                chosen = i;
                break;
            }
    } else {
        for (unsigned k = 1; k <= kPriorities; ++k) {
            const unsigned i = (rr_next_ + k) % kPriorities;
            if (eligible(i)) {
                chosen = int(i);
                rr_next_ = i;
                break;
            }
        }
    }
    if (chosen >= 0) wake = 0;
    return chosen;
}

void EgressPort::run() {
    for (;;) {
        const std::uint64_t now = sw_.now();
        const std::uint64_t refresh = refreshes(now);
        if (!control.empty()) {
            std::vector<std::uint8_t> f = std::move(control.front());
            control.pop_front();
            sc_core::wait(sc_time(double(sw_.cfg_.frame_time_ps(port_, std::uint32_t(f.size()))), SC_PS));
            sw_.sink_(port_, std::move(f));
            continue;
        }
        std::uint64_t pause_end = 0;
        const int i = pick(now, pause_end);
        if (i < 0) {
            std::uint64_t wake = pause_end;
            if (refresh && (!wake || refresh < wake)) wake = refresh;
            if (wake)
                sc_core::wait(sc_time(double(wake - now), SC_PS), kick);
            else
                sc_core::wait(kick);
            continue;
        }
        Switch::Queue& qu = sw_.q(port_, unsigned(i));
        // The frame stays at the front (and in the queue's depth) while it
        // is on the line; nothing else takes it meanwhile.
        sc_core::wait(
            sc_time(double(sw_.cfg_.frame_time_ps(port_, std::uint32_t(qu.frames.front().bytes.size()))), SC_PS));
        Switch::Frame f = std::move(qu.frames.front());
        qu.frames.pop_front();
        sw_.set_depth(qu, qu.depth - f.bytes.size());
        ++qu.c.tx_frames;
        qu.c.tx_bytes += f.bytes.size();
        sw_.release(f);
        sw_.sink_(port_, std::move(f.bytes));
    }
}

Switch::Switch(sc_core::sc_module_name name, const SwitchConfig& cfg, Sink sink)
    : sc_core::sc_module(name), cfg_(cfg), sink_(std::move(sink)), rng_(cfg.seed) {
    std::string err;
    if (!validate_switch_config(cfg_, err)) throw std::invalid_argument("switch configuration:\n" + err);
    shared_cap_ = cfg_.shared_bytes();
    queues_.resize(cfg_.ports.size() * kPriorities);
    port_c_.resize(cfg_.ports.size());
    for (const auto& r : cfg_.fdb) fdb_[mac_key(r.mac.data())] = r.port;
    for (std::uint32_t p = 0; p < ports(); ++p)
        egress_.push_back(std::make_unique<EgressPort>(sc_core::sc_gen_unique_name("egress"), *this, p));
    SC_METHOD(forward);
    sensitive << delay_ev_;
    dont_initialize();
}

Switch::~Switch() = default;

void Switch::receive(std::uint32_t port, std::vector<std::uint8_t> bytes) {
    if (port >= ports()) throw std::out_of_range("switch: no such port");
    if (bytes.size() < roce::kEthHdrBytes) {
        ++port_c_[port].runts;
        return;
    }
    if (is_mac_control(bytes.data(), bytes.size())) return receive_mac_control(port, bytes);

    Frame f;
    f.in_port = port;
    const L3 l3 = find_l3(bytes);
    f.prio = l3.version ? cfg_.dscp_to_priority[traffic_class(bytes, l3) >> 2] : cfg_.non_ip_priority;
    Queue& in = q(port, f.prio);
    ++in.c.rx_frames;
    in.c.rx_bytes += bytes.size();

    const auto r = fdb_.find(mac_key(bytes.data()));
    if (r == fdb_.end() || r->second == port) {
        ++port_c_[port].no_route;
        return;
    }
    f.out_port = r->second;
    f.bytes = std::move(bytes);
    if (!admit(f)) {
        ++in.c.drops;
        ++q(f.out_port, f.prio).c.tx_drops;
        return;
    }
    const std::uint64_t due = now() + cfg_.forwarding_latency_ps;
    const bool idle = delay_.empty();
    delay_.emplace_back(due, std::move(f));
    if (idle) delay_ev_.notify(sc_time(double(cfg_.forwarding_latency_ps), SC_PS));
}

// Shared buffer first; a PFC priority past its xoff (or finding the shared
// buffer full) goes into its headroom and pauses the upstream port. What
// fits nowhere is dropped.
//
// The headroom is the excess of what the port and priority hold over its
// share, not a set of frames: bytes that leave come off the headroom first.
// (Counted per frame, the frames admitted after an XOFF, the last to leave,
// kept the headroom full after the XON, and each pause cycle left less of
// it for the next.)
bool Switch::admit(Frame& f) {
    const std::uint64_t len = f.bytes.size();
    const SwitchPriorityConfig& pc = cfg_.priority[f.prio];
    Queue& in = q(f.in_port, f.prio);
    const std::uint64_t in_shared = in.ingress - in.headroom_used;
    if ((!pc.pfc || in_shared + len <= pc.xoff_bytes) && shared_used_ + len <= shared_cap_) {
        shared_used_ += len;
        shared_peak_ = std::max(shared_peak_, shared_used_);
    } else if (pc.pfc && in.headroom_used + len <= pc.headroom_bytes) {
        in.headroom_used += len;
        in.c.max_headroom_bytes = std::max(in.c.max_headroom_bytes, in.headroom_used);
    } else {
        return false;
    }
    in.ingress += len;
    in.c.max_ingress_bytes = std::max(in.c.max_ingress_bytes, in.ingress);
    if (pc.pfc && !in.xoff && (in.ingress > pc.xoff_bytes || in.headroom_used)) send_pfc(f.in_port, f.prio, true);
    return true;
}

void Switch::release(const Frame& f) {
    const std::uint64_t len = f.bytes.size();
    Queue& in = q(f.in_port, f.prio);
    const std::uint64_t from_headroom = std::min(len, in.headroom_used);
    in.headroom_used -= from_headroom;
    shared_used_ -= len - from_headroom;
    in.ingress -= len;
    if (in.xoff && in.ingress <= cfg_.priority[f.prio].xon_bytes) send_pfc(f.in_port, f.prio, false);
}

void Switch::send_pfc(std::uint32_t port, unsigned prio, bool xoff) {
    Queue& qu = q(port, prio);
    PfcFrame p;
    // The port's address: the base plus the port number (48-bit sum).
    const std::uint64_t a = mac_key(cfg_.mac_base.data()) + port;
    for (unsigned i = 0; i < 6; ++i) p.src[i] = std::uint8_t(a >> (8 * (5 - i)));
    p.class_enable = std::uint16_t(1u << prio);
    p.time[prio] = xoff ? cfg_.pause_quanta : 0;
    qu.xoff = xoff;
    if (xoff) {
        ++qu.c.pause_sent;
        qu.refresh_at = now() + std::max<std::uint64_t>(1, cfg_.pause_time_ps(port, cfg_.pause_quanta) / 2);
    } else {
        ++qu.c.resume_sent;
        qu.refresh_at = 0;
    }
    egress_[port]->control.push_back(encode_pfc(p));
    egress_[port]->kick.notify(sc_core::SC_ZERO_TIME);
}

void Switch::receive_mac_control(std::uint32_t port, const std::vector<std::uint8_t>& bytes) {
    PfcFrame p;
    if (!decode_pfc(bytes.data(), bytes.size(), p)) {
        ++port_c_[port].mac_control;
        return;
    }
    const std::uint64_t t = now();
    for (unsigned i = 0; i < kPriorities; ++i) {
        if (!(p.class_enable >> i & 1)) continue;
        Queue& qu = q(port, i);
        ++(p.time[i] ? qu.c.pause_received : qu.c.resume_received);
        // Honoured where PFC is on for the priority, as a port configured
        // lossless for some priorities only does.
        if (!cfg_.priority[i].pfc) continue;
        const std::uint64_t until = t + cfg_.pause_time_ps(port, p.time[i]);
        const std::uint64_t old = std::max(qu.paused_until, t);
        if (until > old)
            qu.c.paused_ps += until - old;
        else
            qu.c.paused_ps -= old - until;
        qu.paused_until = until;
    }
    egress_[port]->kick.notify(sc_core::SC_ZERO_TIME);
}

void Switch::forward() {
    const std::uint64_t t = now();
    arbitrate_ties(t);
    while (!delay_.empty() && delay_.front().first <= t) {
        Frame f = std::move(delay_.front().second);
        delay_.pop_front();
        Queue& out = q(f.out_port, f.prio);
        mark_ecn(f, out);
        const std::uint64_t len = f.bytes.size();
        const std::uint32_t port = f.out_port;
        out.frames.push_back(std::move(f));
        out.used = true;
        set_depth(out, out.depth + len);
        egress_[port]->kick.notify(sc_core::SC_ZERO_TIME);
    }
    if (!delay_.empty()) delay_ev_.notify(sc_time(double(delay_.front().first - t), SC_PS));
}

// Frames whose last bits arrived at the same time on several ports enter
// their egress queues in an order that rotates among the ports, as an
// ingress arbiter's round robin serves them, not in the order the
// simulation kernel happened to run their links' processes. That order is
// fixed for a given build (and moves with any change to which process runs
// first), and the frame taken second finds the queue one frame deeper,
// which RED marks more often: two DCQCN flows paced alike, whose frames
// often arrive together, split the bottleneck unevenly by it.
void Switch::arbitrate_ties(std::uint64_t t) {
    const std::uint32_t n_ports = ports();
    auto b = delay_.begin();
    while (b != delay_.end() && b->first <= t) {
        auto e = b;
        while (e != delay_.end() && e->first == b->first) ++e;
        if (e - b > 1) {
            const std::uint32_t first = tie_rr_;
            const auto rank = [&](const std::pair<std::uint64_t, Frame>& x) {
                return (x.second.in_port + n_ports - first) % n_ports;
            };
            // Stable: one port's frames keep their order.
            std::stable_sort(b, e, [&](const auto& x, const auto& y) { return rank(x) < rank(y); });
            tie_rr_ = (b->second.in_port + 1) % n_ports;
        }
        b = e;
    }
}

// RED on the depth the frame finds (the frame on the line included, the
// frame itself not): CE on ECT(0) and ECT(1) frames only. The ICRC masks
// the traffic class, so it stays valid (docs/wire-format.md).
void Switch::mark_ecn(Frame& f, Queue& out) {
    const SwitchPriorityConfig& pc = cfg_.priority[f.prio];
    if (!pc.ecn) return;
    const L3 l3 = find_l3(f.bytes);
    if (!l3.version) return;
    std::uint8_t* ip = &f.bytes[l3.off];
    const std::size_t ip_len = f.bytes.size() - l3.off;
    const std::optional<roce::Ecn> ecn = roce::read_ecn(ip, ip_len);
    if (!ecn || *ecn == roce::Ecn::NotEct || *ecn == roce::Ecn::Ce) return;  // not ECN-capable, or already CE
    const std::uint64_t d = out.depth;
    bool mark;
    if (d < pc.kmin_bytes) {
        mark = false;
    } else if (d > pc.kmax_bytes) {
        mark = true;
    } else {
        const double p =
            pc.kmax_bytes == pc.kmin_bytes ? pc.pmax : pc.pmax * double(d - pc.kmin_bytes) / double(pc.kmax_bytes - pc.kmin_bytes);
        // 53 random bits: a uniform double in [0, 1).
        mark = double(rng_() >> 11) * 0x1.0p-53 < p;
    }
    if (!mark) return;
    // The packet core's marking, as a switch does it: CE, the IPv4 header
    // checksum updated (RFC 1624).
    if (roce::mark_ce(ip, ip_len)) ++out.c.ecn_marked;
}

void Switch::sample_to(Queue& qu, std::uint64_t t, bool inclusive) {
    const std::uint64_t step = cfg_.depth_sample_ps;
    for (std::uint64_t k = qu.series.size(); inclusive ? k * step <= t : k * step < t; ++k) qu.series.push_back(qu.depth);
}

void Switch::set_depth(Queue& qu, std::uint64_t depth) {
    if (cfg_.depth_sample_ps) sample_to(qu, now(), false);
    qu.depth = depth;
    qu.c.max_depth_bytes = std::max(qu.c.max_depth_bytes, depth);
    if (depth_tap_) {
        const size_t i = size_t(&qu - queues_.data());
        depth_tap_(std::uint32_t(i / kPriorities), unsigned(i % kPriorities), now(), depth);
    }
}

void Switch::flush_depth() {
    if (!cfg_.depth_sample_ps) return;
    for (Queue& qu : queues_) sample_to(qu, now(), true);
}

void Switch::write_depth_csv(std::ostream& os) const {
    std::vector<std::size_t> cols;
    std::size_t rows = 0;
    for (std::size_t i = 0; i < queues_.size(); ++i)
        if (queues_[i].used) {
            cols.push_back(i);
            rows = std::max(rows, queues_[i].series.size());
        }
    os << "time_ns";
    for (std::size_t i : cols) os << ",port" << i / kPriorities << "_prio" << i % kPriorities;
    os << '\n';
    for (std::size_t k = 0; k < rows; ++k) {
        os << double(k * cfg_.depth_sample_ps) / 1000.0;
        for (std::size_t i : cols) {
            const auto& s = queues_[i].series;
            os << ',' << (k < s.size() ? s[k] : s.empty() ? 0 : s.back());
        }
        os << '\n';
    }
}

}  // namespace simnic::model::fabric
