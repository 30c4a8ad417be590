#include "simnic/wire/hub.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <deque>
#include <memory>
#include <queue>

#include <nlohmann/json.hpp>

#include "simnic/base/clock.h"
#include "simnic/roce/pcap_io.h"

namespace simnic::wire {
using base::mono_ns;
using base::wall_us;

struct Hub::Impl {
    int fd = -1;
    HubOptions opt;
    std::vector<sockaddr_in> members;
    std::unique_ptr<FaultInjector> faults;
    std::unique_ptr<roce::PcapWriter> pcap_in, pcap_out;
    // A frame on its way: released at `due` to every member but `src`.
    struct Pending {
        uint64_t due;
        uint64_t seq;  // keeps frames of equal due time in arrival order
        sockaddr_in src;
        std::vector<uint8_t> frame;
        bool operator>(const Pending& o) const { return due != o.due ? due > o.due : seq > o.seq; }
    };
    std::priority_queue<Pending, std::vector<Pending>, std::greater<Pending>> timed;
    // Per rule: a frame held back for reordering, released after the rule's
    // next frame or at its deadline.
    struct Held {
        bool full = false;
        Pending p;
    };
    std::vector<Held> held;
    uint64_t seq = 0;

    static bool same(const sockaddr_in& a, const sockaddr_in& b) {
        return a.sin_port == b.sin_port && a.sin_addr.s_addr == b.sin_addr.s_addr;
    }
    void add_member(const sockaddr_in& a, HubStats& st) {
        for (const sockaddr_in& m : members)
            if (same(m, a)) return;
        members.push_back(a);
        ++st.joins;
    }
    void deliver(const Pending& p, HubStats& st) {
        if (pcap_out && (!opt.pcap_limit || st.frames_out < opt.pcap_limit)) pcap_out->write(p.frame, wall_us());
        for (const sockaddr_in& m : members) {
            if (same(m, p.src)) continue;
            if (sendto(fd, p.frame.data(), p.frame.size(), 0, reinterpret_cast<const sockaddr*>(&m), sizeof m) < 0)
                ++st.send_errors;
            else
                ++st.frames_out;
        }
    }
    void schedule(Pending p, uint64_t delay_ns, HubStats& st) {
        if (delay_ns == 0) return deliver(p, st);
        p.due = mono_ns() + delay_ns;
        timed.push(std::move(p));
    }
};

Hub::~Hub() {
    if (!impl_) return;
    if (impl_->fd >= 0) close(impl_->fd);
    delete impl_;
}

bool Hub::open(const HubOptions& opt, std::string& err) {
    impl_ = new Impl;
    Impl& m = *impl_;
    m.opt = opt;
    m.fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (m.fd < 0) {
        err = std::string("socket: ") + std::strerror(errno);
        return false;
    }
    // Bursts from fast members (simnic devices send a message's packets at
    // once) must not overflow the hub's queue.
    const int buf = 8 << 20;
    setsockopt(m.fd, SOL_SOCKET, SO_RCVBUF, &buf, sizeof buf);
    setsockopt(m.fd, SOL_SOCKET, SO_SNDBUF, &buf, sizeof buf);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(opt.port);
    if (bind(m.fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
        err = "cannot bind UDP 127.0.0.1:" + std::to_string(opt.port) + ": " + std::strerror(errno);
        return false;
    }
    socklen_t alen = sizeof a;
    getsockname(m.fd, reinterpret_cast<sockaddr*>(&a), &alen);
    port_ = ntohs(a.sin_port);
    for (uint16_t p : opt.members) {
        sockaddr_in s{};
        s.sin_family = AF_INET;
        s.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        s.sin_port = htons(p);
        m.members.push_back(s);
    }
    if (!opt.faults.empty()) {
        m.faults = std::make_unique<FaultInjector>(opt.faults, opt.seed);
        m.held.resize(opt.faults.size());
    }
    if (!opt.pcap.empty() && !(m.pcap_in = roce::PcapWriter::open(opt.pcap, err))) return false;
    if (!opt.pcap_delivered.empty() && !(m.pcap_out = roce::PcapWriter::open(opt.pcap_delivered, err))) return false;
    if (!opt.ready_file.empty()) {
        FILE* f = std::fopen(opt.ready_file.c_str(), "w");
        if (!f) {
            err = "cannot write " + opt.ready_file + ": " + std::strerror(errno);
            return false;
        }
        std::fprintf(f, "%d %u\n", int(getpid()), unsigned(port_));
        std::fclose(f);
    }
    return true;
}

void Hub::publish(bool running) {
    Impl& m = *impl_;
    if (m.faults) stats_.faults = m.faults->counters();
    if (m.pcap_in) m.pcap_in->flush();
    if (m.pcap_out) m.pcap_out->flush();
    if (m.opt.stats_file.empty()) return;
    // Written aside and renamed, so that a reader never sees half a file.
    const std::string tmp = m.opt.stats_file + ".tmp";
    if (FILE* f = std::fopen(tmp.c_str(), "w")) {
        std::fputs(stats_json(running).c_str(), f);
        std::fclose(f);
        std::rename(tmp.c_str(), m.opt.stats_file.c_str());
    }
}

void Hub::run(const std::atomic<bool>& stop) {
    Impl& m = *impl_;
    const uint64_t end = m.opt.lifetime_s > 0 ? mono_ns() + uint64_t(m.opt.lifetime_s * 1e9) : 0;
    std::vector<uint8_t> buf(65536);
    // Readers (the rig's status, tests) look while the wire runs: the
    // captures are flushed whenever the hub has drained its socket, and the
    // stats file is rewritten at most every 200 ms while the counters change.
    bool changed = true;
    uint64_t last_stats = 0;
    while (!stop.load(std::memory_order_relaxed)) {
        uint64_t now = mono_ns();
        if (end && now >= end) break;
        if (changed && now - last_stats >= 200'000'000) {
            publish(true);
            last_stats = now;
            changed = false;
        }
        // Release what is due: delayed frames, and held frames past their hold.
        while (!m.timed.empty() && m.timed.top().due <= now) {
            Impl::Pending p = m.timed.top();
            m.timed.pop();
            m.deliver(p, stats_);
            changed = true;
        }
        uint64_t next = end ? end : now + 500'000'000;
        for (Impl::Held& h : m.held)
            if (h.full) {
                if (h.p.due <= now) {
                    h.full = false;
                    m.deliver(h.p, stats_);
                    changed = true;
                } else {
                    next = std::min(next, h.p.due);
                }
            }
        if (!m.timed.empty()) next = std::min(next, m.timed.top().due);
        if (changed) next = std::min(next, last_stats + 200'000'000);
        pollfd pfd{m.fd, POLLIN, 0};
        const uint64_t wait_ns = next > now ? next - now : 0;
        const int timeout_ms = int(std::min<uint64_t>((wait_ns + 999'999) / 1'000'000, 500));
        if (poll(&pfd, 1, timeout_ms) <= 0) continue;
        // Drain what is there, then loop to the timers.
        bool drained = false;
        for (int k = 0; k < 64; ++k) {
            sockaddr_in src{};
            socklen_t slen = sizeof src;
            const ssize_t n =
                recvfrom(m.fd, buf.data(), buf.size(), MSG_DONTWAIT, reinterpret_cast<sockaddr*>(&src), &slen);
            if (n < 0) {
                drained = true;
                break;
            }
            changed = true;
            m.add_member(src, stats_);
            if (n == 0) continue;  // a join
            ++stats_.frames_in;
            stats_.bytes_in += uint64_t(n);
            const uint8_t* f = buf.data();
            if (m.pcap_in && (!m.opt.pcap_limit || stats_.frames_in <= m.opt.pcap_limit))
                m.pcap_in->write(f, size_t(n), wall_us());
            Impl::Pending p{0, ++m.seq, src, std::vector<uint8_t>(f, f + n)};
            if (!m.faults) {
                m.deliver(p, stats_);
                continue;
            }
            const Decision d = m.faults->decide(f, size_t(n));
            if (d.rule >= 0) {
                // A frame held for reordering goes out right after this one.
                Impl::Held& h = m.held[size_t(d.rule)];
                const bool release_held = h.full;
                Impl::Pending held_frame;
                if (release_held) {
                    held_frame = std::move(h.p);
                    h.full = false;
                }
                if (!d.drop) {
                    FaultInjector::corrupt(p.frame, d);
                    m.faults->mark_ce(p.frame, d);
                    if (d.reorder && !release_held) {
                        p.due = mono_ns() + m.opt.faults[size_t(d.rule)].reorder_hold_ns;
                        h.p = std::move(p);
                        h.full = true;
                        m.faults->note_reordered(d.rule);
                    } else {
                        for (int c = 0; c < d.copies; ++c) m.schedule(p, d.delay_ns, stats_);
                    }
                }
                if (release_held) m.deliver(held_frame, stats_);
                continue;
            }
            m.deliver(p, stats_);
        }
        // Idle: what was captured becomes readable.
        if (drained) {
            if (m.pcap_in) m.pcap_in->flush();
            if (m.pcap_out) m.pcap_out->flush();
        }
    }
    // Whatever is still on its way arrives before the wire stops.
    while (!m.timed.empty()) {
        m.deliver(m.timed.top(), stats_);
        m.timed.pop();
    }
    for (Impl::Held& h : m.held)
        if (h.full) m.deliver(h.p, stats_);
    publish(false);
}

std::string Hub::stats_json(bool running) const {
    nlohmann::json j{{"port", port_},
                     {"running", running},
                     {"frames_in", stats_.frames_in},
                     {"frames_out", stats_.frames_out},
                     {"bytes_in", stats_.bytes_in},
                     {"joins", stats_.joins},
                     {"send_errors", stats_.send_errors},
                     {"seed", impl_ ? impl_->opt.seed : 0}};
    nlohmann::json rules = nlohmann::json::array();
    for (size_t i = 0; i < stats_.faults.size(); ++i) {
        const FaultCounters& c = stats_.faults[i];
        rules.push_back({{"rule", impl_->opt.faults[i].describe()},
                         {"frames", c.frames},
                         {"dropped", c.dropped},
                         {"duplicated", c.duplicated},
                         {"reordered", c.reordered},
                         {"corrupted", c.corrupted},
                         {"delayed", c.delayed},
                         {"ce_marked", c.ce_marked}});
    }
    j["faults"] = rules;
    return j.dump() + "\n";
}

}  // namespace simnic::wire
