#include "simnic/wire/faults.h"

#include "simnic/roce/ecn.h"

#include <cerrno>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>

namespace simnic::wire {
namespace {

constexpr size_t kEthHdr = 14;

bool parse_rate(const std::string& v, double& out) {
    if (v.empty()) return false;
    const bool pct = v.back() == '%';
    const std::string num = pct ? v.substr(0, v.size() - 1) : v;
    char* end = nullptr;
    errno = 0;
    const double d = std::strtod(num.c_str(), &end);
    if (errno || end == num.c_str() || *end || !std::isfinite(d)) return false;
    out = pct ? d / 100.0 : d;
    return out >= 0 && out <= 1;
}

bool parse_time_ns(const std::string& v, uint64_t& out) {
    struct Unit {
        const char* suffix;
        double ns;
    };
    static const Unit units[] = {{"ns", 1}, {"us", 1e3}, {"ms", 1e6}, {"s", 1e9}};
    for (const Unit& u : units) {
        const size_t n = std::strlen(u.suffix);
        if (v.size() > n && v.compare(v.size() - n, n, u.suffix) == 0) {
            const std::string num = v.substr(0, v.size() - n);
            char* end = nullptr;
            errno = 0;
            const double d = std::strtod(num.c_str(), &end);
            // "5ms" ends in "s" too: only a number before the suffix counts.
            if (errno || end == num.c_str() || *end || !std::isfinite(d) || d < 0 || d * u.ns > 3.6e12)
                continue;
            out = uint64_t(std::llround(d * u.ns));
            return true;
        }
    }
    return false;
}

std::string pct(double p) {
    char b[32];
    std::snprintf(b, sizeof b, "%g%%", p * 100);
    return b;
}

}  // namespace

bool parse_mac(const std::string& s, Mac& mac) {
    unsigned v[6];
    char tail;
    if (std::sscanf(s.c_str(), "%2x:%2x:%2x:%2x:%2x:%2x%c", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &tail) != 6)
        return false;
    for (int i = 0; i < 6; ++i) mac[size_t(i)] = uint8_t(v[i]);
    return true;
}

std::string mac_string(const Mac& m) {
    char b[18];
    std::snprintf(b, sizeof b, "%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4], m[5]);
    return b;
}

bool FaultRule::matches(const uint8_t* f, size_t len) const {
    if (len < kEthHdr) return !from && !to && all_frames;
    if (to && std::memcmp(f, to->data(), 6) != 0) return false;
    if (from && std::memcmp(f + 6, from->data(), 6) != 0) return false;
    return all_frames || roce::is_roce_v2_frame(f, len);
}

std::string FaultRule::describe() const {
    std::ostringstream o;
    o << "from " << (from ? mac_string(*from) : "any") << " to " << (to ? mac_string(*to) : "any")
      << (all_frames ? ", all frames:" : ":");
    if (drop) o << " drop " << pct(drop);
    if (dup) o << " dup " << pct(dup);
    if (reorder) o << " reorder " << pct(reorder);
    if (corrupt) o << " corrupt " << pct(corrupt);
    if (ce) o << " ce " << pct(ce);
    if (delay_ns || jitter_ns) {
        o << " delay " << delay_ns / 1000 << "+" << jitter_ns / 1000 << "us";
        if (delayed < 1) o << " for " << pct(delayed);
    }
    return o.str();
}

bool parse_rule(const std::string& text, FaultRule& r, std::string& err) {
    r = FaultRule{};
    std::istringstream in(text);
    std::string item;
    bool any = false;
    while (std::getline(in, item, ',')) {
        const size_t eq = item.find('=');
        if (eq == std::string::npos) {
            err = "'" + item + "': expected KEY=VALUE";
            return false;
        }
        const std::string k = item.substr(0, eq), v = item.substr(eq + 1);
        bool ok = true;
        if (k == "from" || k == "to") {
            Mac m;
            ok = parse_mac(v, m);
            (k == "from" ? r.from : r.to) = m;
        } else if (k == "frames") {
            ok = v == "roce" || v == "all";
            r.all_frames = v == "all";
        } else if (k == "drop") ok = parse_rate(v, r.drop);
        else if (k == "dup") ok = parse_rate(v, r.dup);
        else if (k == "reorder") ok = parse_rate(v, r.reorder);
        else if (k == "corrupt") ok = parse_rate(v, r.corrupt);
        else if (k == "delay") ok = parse_time_ns(v, r.delay_ns);
        else if (k == "jitter") ok = parse_time_ns(v, r.jitter_ns);
        else if (k == "delayed") ok = parse_rate(v, r.delayed);
        else if (k == "hold") ok = parse_time_ns(v, r.reorder_hold_ns);
        else if (k == "ce") ok = parse_rate(v, r.ce);
        else {
            err = "unknown key '" + k + "' (from, to, frames, drop, dup, reorder, corrupt, delay, jitter, delayed, hold, ce)";
            return false;
        }
        if (!ok) {
            err = "bad value for " + k + ": '" + v + "'" + (k == "frames" ? " (roce or all)" : "");
            return false;
        }
        any = true;
    }
    if (!any) {
        err = "empty fault rule";
        return false;
    }
    if (r.drop + r.dup + r.reorder + r.corrupt > 1.0 + 1e-12) {
        err = "drop + dup + reorder + corrupt exceed 100%";
        return false;
    }
    return true;
}

FaultInjector::FaultInjector(std::vector<FaultRule> rules, uint64_t seed)
    : rules_(std::move(rules)), counters_(rules_.size()), seed_(seed) {
    // One stream per rule, each seeded from the seed and the rule's position.
    for (size_t i = 0; i < rules_.size(); ++i) {
        std::seed_seq seq{uint32_t(seed), uint32_t(seed >> 32), uint32_t(i), 0x51u};
        rng_.emplace_back(seq);
    }
}

Decision FaultInjector::decide(const uint8_t* frame, size_t len) {
    Decision d;
    for (size_t i = 0; i < rules_.size(); ++i) {
        if (!rules_[i].matches(frame, len)) continue;
        const FaultRule& r = rules_[i];
        FaultCounters& c = counters_[i];
        std::mt19937_64& g = rng_[i];
        d.rule = int(i);
        ++c.frames;
        // One draw picks at most one of the exclusive faults, so the rates
        // add up as written; delay is independent of them.
        const double u = std::uniform_real_distribution<double>(0.0, 1.0)(g);
        const uint64_t jitter = r.jitter_ns ? std::uniform_int_distribution<uint64_t>(0, r.jitter_ns)(g) : 0;
        const uint64_t bit = g();
        double edge = r.drop;
        if (u < edge) {
            d.drop = true;
            ++c.dropped;
            return d;
        }
        if (u < (edge += r.dup)) {
            d.copies = 2;
            ++c.duplicated;
        } else if (u < (edge += r.reorder)) {
            d.reorder = true;  // counted by the wire if it holds the frame
        } else if (u < (edge += r.corrupt) && len > kEthHdr) {
            d.corrupt = true;
            d.flip_bit = size_t(bit % ((len - kEthHdr) * 8));
            ++c.corrupted;
        }
        // A draw of its own only when a share is asked for: rules without
        // `delayed` keep the decisions their seed always gave.
        const bool late = r.delayed >= 1 || std::uniform_real_distribution<double>(0.0, 1.0)(g) < r.delayed;
        d.delay_ns = late ? r.delay_ns + jitter : 0;
        if (d.delay_ns) ++c.delayed;
        // Likewise a draw of its own only for a rule that marks.
        d.ce = r.ce > 0 && (r.ce >= 1 || std::uniform_real_distribution<double>(0.0, 1.0)(g) < r.ce);
        return d;
    }
    return d;
}

void FaultInjector::note_reordered(int rule) {
    if (rule >= 0 && size_t(rule) < counters_.size()) ++counters_[size_t(rule)].reordered;
}

void FaultInjector::mark_ce(std::vector<uint8_t>& f, const Decision& d) {
    if (!d.ce || d.rule < 0 || size_t(d.rule) >= counters_.size()) return;
    const size_t ip = roce::ip_header_offset(f.data(), f.size());
    const std::optional<roce::Ecn> e = ip ? roce::read_ecn(f.data() + ip, f.size() - ip) : std::nullopt;
    if (!e || *e == roce::Ecn::NotEct || *e == roce::Ecn::Ce) return;
    if (roce::mark_ce(f.data() + ip, f.size() - ip)) ++counters_[size_t(d.rule)].ce_marked;
}

void FaultInjector::corrupt(std::vector<uint8_t>& f, const Decision& d) {
    if (!d.corrupt || f.size() <= kEthHdr) return;
    const size_t byte = kEthHdr + d.flip_bit / 8;
    if (byte < f.size()) f[byte] ^= uint8_t(1u << (d.flip_bit % 8));
}

}  // namespace simnic::wire
