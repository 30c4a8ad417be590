#include "simnic/congestion/fluid/packet_sim.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <queue>
#include <random>
#include <vector>

namespace simnic::congestion::fluid {

namespace {

enum class Ev : uint8_t {
    Send,       // a sender may put its next packet on its link
    Arrive,     // a packet reaches the bottleneck queue
    Depart,     // the bottleneck finishes sending its head packet
    Cnp,        // a CNP reaches a sender
};

struct Event {
    uint64_t t;
    uint64_t seq;  // FIFO among events of the same time
    Ev kind;
    uint32_t flow;
    bool ce;
    // At one time a departure first (the frame that finishes leaving is
    // gone when another finishes arriving: back-to-back frames at the same
    // rate find an empty queue), then in the order posted.
    bool operator>(const Event& o) const {
        if (t != o.t) return t > o.t;
        const bool d = kind == Ev::Depart, od = o.kind == Ev::Depart;
        if (d != od) return od;
        return seq > o.seq;
    }
};

struct Packet {
    uint32_t flow;
    bool ce;
};

uint64_t ns_of(double s) { return uint64_t(std::llround(s * 1e9)); }

}  // namespace

Series simulate_packets(const Scenario& s, uint64_t seed, PacketStats* stats) {
    const unsigned n = s.flows;
    const uint64_t end = ns_of(s.duration_s);
    const uint64_t sample = std::max<uint64_t>(1, ns_of(s.sample_s));
    const uint64_t link = ns_of(s.link_delay_s);
    const uint32_t bytes = s.packet_bytes;
    // Serialization times; ceil so that a rate is never exceeded.
    const uint64_t ser_line = uint64_t(std::ceil(8.0 * bytes * 1e9 / s.rp.line_rate_bps));
    const uint64_t ser_bottleneck = uint64_t(std::ceil(8.0 * bytes * 1e9 / s.bottleneck_bps));

    std::vector<DcqcnRp> rp;
    rp.reserve(n);
    for (unsigned i = 0; i < n; ++i) rp.emplace_back(s.rp, ns_of(start_of(s, i)));
    NotificationPoint np(s.np);
    std::mt19937_64 rng(seed);

    std::priority_queue<Event, std::vector<Event>, std::greater<Event>> ev;
    uint64_t seq = 0;
    auto post = [&](uint64_t t, Ev k, uint32_t flow, bool ce = false) { ev.push(Event{t, seq++, k, flow, ce}); };
    for (unsigned i = 0; i < n; ++i) post(ns_of(start_of(s, i)), Ev::Send, i);

    std::deque<Packet> fifo;
    uint64_t depth = 0;  // bytes queued, the one on the line included
    PacketStats st;
    st.rp.resize(n);

    // Output: bytes each flow sent per sample interval; the queue at each
    // interval's end.
    const std::size_t samples = std::size_t(end / sample);
    std::vector<std::vector<uint64_t>> sent(n, std::vector<uint64_t>(samples, 0));
    std::vector<double> qsamp;
    qsamp.reserve(samples);
    uint64_t next_sample = sample;

    while (!ev.empty()) {
        const Event e = ev.top();
        if (e.t >= end) break;
        ev.pop();
        // The queue as it stood at each interval's end before this event.
        while (next_sample <= e.t && qsamp.size() < samples) {
            qsamp.push_back(double(depth));
            next_sample += sample;
        }
        switch (e.kind) {
            case Ev::Send: {
                DcqcnRp& r = rp[e.flow];
                const uint64_t at = r.earliest_send_ns(bytes, e.t);
                if (at > e.t) {  // the limiter holds it (the rate fell since this was posted)
                    post(at, Ev::Send, e.flow);
                    break;
                }
                r.on_bytes_sent(bytes, e.t);
                sent[e.flow][std::min<std::size_t>(samples - 1, std::size_t(e.t / sample))] += bytes;
                ++st.packets;
                post(e.t + ser_line + link, Ev::Arrive, e.flow);
                // The next packet: when the link is free and the limiter
                // allows (asked again then: the rate may change meanwhile).
                post(std::max(e.t + ser_line, r.earliest_send_ns(bytes, e.t + ser_line)), Ev::Send, e.flow);
                break;
            }
            case Ev::Arrive: {
                // RED on the depth the packet finds.
                const double p = red_probability(double(depth), s.red);
                const bool ce = p >= 1 || (p > 0 && double(rng() >> 11) * 0x1.0p-53 < p);
                st.marked += ce;
                fifo.push_back(Packet{e.flow, ce});
                depth += bytes;
                st.max_queue_bytes = std::max(st.max_queue_bytes, double(depth));
                if (fifo.size() == 1) post(e.t + ser_bottleneck, Ev::Depart, 0);
                break;
            }
            case Ev::Depart: {
                const Packet pk = fifo.front();
                fifo.pop_front();
                depth -= bytes;
                if (!fifo.empty()) post(e.t + ser_bottleneck, Ev::Depart, 0);
                // At the receiver one link later; a CNP, if the NP asks for
                // one, two links back to the sender.
                if (pk.ce && np.on_ce(pk.flow, e.t + link)) {
                    ++st.cnps;
                    post(e.t + 3 * link, Ev::Cnp, pk.flow);
                }
                break;
            }
            case Ev::Cnp:
                rp[e.flow].on_cnp(e.t);
                break;
        }
    }
    while (qsamp.size() < samples) qsamp.push_back(double(depth));

    Series out;
    out.rate_bps.assign(n, {});
    for (std::size_t k = 0; k < samples; ++k) {
        out.t_s.push_back(double((k + 1) * sample) * 1e-9);
        for (unsigned i = 0; i < n; ++i) out.rate_bps[i].push_back(double(sent[i][k]) * 8 / (double(sample) * 1e-9));
    }
    out.queue_bytes = std::move(qsamp);
    if (stats) {
        for (unsigned i = 0; i < n; ++i) {
            rp[i].advance(end);
            st.rp[i] = rp[i].counters();
        }
        *stats = std::move(st);
    }
    return out;
}

}  // namespace simnic::congestion::fluid
