// The fabric's TOML topology (topology.h): parsed with toml++, as the model
// device's configuration is (rtl_model/model/config), every key checked and
// every problem reported with its place.
#include "simnic/model/fabric/topology.h"

#include <toml++/toml.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>

namespace simnic::model::fabric {

namespace {

// Collects problems as "origin:line:column: key: what".
struct Problems {
    std::string origin;
    std::vector<std::string> lines;
    void add(const toml::source_region& r, const std::string& key, const std::string& what) {
        lines.push_back(origin + ":" + std::to_string(r.begin.line) + ":" + std::to_string(r.begin.column) + ": " +
                        key + ": " + what);
    }
    void add_top(const std::string& key, const std::string& what) { lines.push_back(origin + ": " + key + ": " + what); }
};

// A number (integer or float) >= `min`; its key and problems to `p`.
bool number(const toml::node& n, const std::string& key, double min, Problems& p, double& out) {
    if (auto i = n.as_integer()) out = double(i->get());
    else if (auto f = n.as_floating_point()) out = f->get();
    else {
        p.add(n.source(), key, "must be a number");
        return false;
    }
    if (!std::isfinite(out) || out < min) {
        char b[32];
        std::snprintf(b, sizeof b, "%g", min);
        p.add(n.source(), key, std::string("must be a number of at least ") + b);
        return false;
    }
    return true;
}
bool integer(const toml::node& n, const std::string& key, std::uint64_t min, std::uint64_t max, Problems& p,
             std::uint64_t& out) {
    auto i = n.as_integer();
    if (!i || i->get() < 0) {
        p.add(n.source(), key, "must be a non-negative integer");
        return false;
    }
    out = std::uint64_t(i->get());
    if (out < min || out > max) {
        p.add(n.source(), key, "must be from " + std::to_string(min) + " to " + std::to_string(max));
        return false;
    }
    return true;
}
bool boolean(const toml::node& n, const std::string& key, Problems& p, bool& out) {
    auto b = n.as_boolean();
    if (!b) {
        p.add(n.source(), key, "must be true or false");
        return false;
    }
    out = b->get();
    return true;
}
bool string(const toml::node& n, const std::string& key, Problems& p, std::string& out) {
    auto s = n.as_string();
    if (!s) {
        p.add(n.source(), key, "must be a string");
        return false;
    }
    out = s->get();
    return true;
}

constexpr std::uint64_t kMax = std::uint64_t(1) << 50;

void link_key(const std::string& k, const toml::node& v, const std::string& full, HostSpec& h, Problems& p) {
    double d = 0;
    if (k == "rate_gbps") {
        if (number(v, full, 0.001, p, d)) h.rate_gbps = d;
    } else if (k == "delay_ns") {
        if (number(v, full, 0, p, d)) h.delay_ps = std::uint64_t(d * 1000 + 0.5);
    } else {
        p.add(v.source(), full, "unknown key (rate_gbps, delay_ns)");
    }
}

void priority_table(const toml::table& t, const std::string& where, SwitchPriorityConfig& c, Problems& p) {
    for (const auto& [key, v] : t) {
        const std::string k(key.str()), full = where + "." + k;
        std::uint64_t u = 0;
        double d = 0;
        if (k == "ecn") boolean(v, full, p, c.ecn);
        else if (k == "pfc") boolean(v, full, p, c.pfc);
        else if (k == "kmin_bytes") { if (integer(v, full, 0, kMax, p, u)) c.kmin_bytes = u; }
        else if (k == "kmax_bytes") { if (integer(v, full, 0, kMax, p, u)) c.kmax_bytes = u; }
        else if (k == "pmax") { if (number(v, full, 0, p, d)) c.pmax = d; }
        else if (k == "xoff_bytes") { if (integer(v, full, 0, kMax, p, u)) c.xoff_bytes = u; }
        else if (k == "xon_bytes") { if (integer(v, full, 0, kMax, p, u)) c.xon_bytes = u; }
        else if (k == "headroom_bytes") { if (integer(v, full, 0, kMax, p, u)) c.headroom_bytes = u; }
        else p.add(v.source(), full, "unknown key (ecn, kmin_bytes, kmax_bytes, pmax, pfc, xoff_bytes, xon_bytes, headroom_bytes)");
    }
}

void switch_table(const toml::table& t, SwitchConfig& c, Problems& p) {
    for (const auto& [key, v] : t) {
        const std::string k(key.str()), full = "switch." + k;
        std::uint64_t u = 0;
        double d = 0;
        if (k == "buffer_bytes") { if (integer(v, full, 1, kMax, p, u)) c.buffer_bytes = u; }
        else if (k == "forwarding_latency_ns") { if (number(v, full, 0, p, d)) c.forwarding_latency_ps = std::uint64_t(d * 1000 + 0.5); }
        else if (k == "overhead_bytes") { if (integer(v, full, 0, 1000, p, u)) c.overhead_bytes = std::uint32_t(u); }
        else if (k == "pause_quanta") { if (integer(v, full, 1, 0xFFFF, p, u)) c.pause_quanta = std::uint16_t(u); }
        else if (k == "seed") { if (integer(v, full, 0, kMax, p, u)) c.seed = u; }
        else if (k == "depth_sample_ns") { if (number(v, full, 0, p, d)) c.depth_sample_ps = std::uint64_t(d * 1000 + 0.5); }
        else if (k == "non_ip_priority") { if (integer(v, full, 0, kPriorities - 1, p, u)) c.non_ip_priority = std::uint8_t(u); }
        else if (k == "scheduling") {
            std::string s;
            if (!string(v, full, p, s)) continue;
            if (s == "strict") c.scheduling = Scheduling::strict;
            else if (s == "round_robin") c.scheduling = Scheduling::round_robin;
            else p.add(v.source(), full, "'" + s + "' is not a scheduling (strict, round_robin)");
        } else if (k == "priority") {
            const toml::table* pt = v.as_table();
            if (!pt) {
                p.add(v.source(), full, "must be a table of priorities, e.g. [switch.priority.3]");
                continue;
            }
            for (const auto& [pk, pv] : *pt) {
                const std::string ps(pk.str()), pfull = full + "." + ps;
                const bool digit = ps.size() == 1 && ps[0] >= '0' && ps[0] < char('0' + kPriorities);
                if (!digit) {
                    p.add(pv.source(), pfull, "a priority is 0 to 7");
                    continue;
                }
                const toml::table* one = pv.as_table();
                if (!one) {
                    p.add(pv.source(), pfull, "must be a table");
                    continue;
                }
                priority_table(*one, pfull, c.priority[unsigned(ps[0] - '0')], p);
            }
        } else {
            p.add(v.source(), full,
                  "unknown key (buffer_bytes, forwarding_latency_ns, overhead_bytes, pause_quanta, seed, "
                  "depth_sample_ns, non_ip_priority, scheduling, priority)");
        }
    }
}

}  // namespace

bool parse_mac(const std::string& s, roce::MacAddr& out) {
    unsigned b[6];
    char tail;
    if (std::sscanf(s.c_str(), "%2x:%2x:%2x:%2x:%2x:%2x%c", &b[0], &b[1], &b[2], &b[3], &b[4], &b[5], &tail) != 6 ||
        s.size() != 17)
        return false;
    for (int i = 0; i < 6; ++i) out[size_t(i)] = std::uint8_t(b[i]);
    return true;
}

bool parse_ipv4(const std::string& s, std::uint32_t& out) {
    unsigned b[4];
    char tail;
    if (std::sscanf(s.c_str(), "%3u.%3u.%3u.%3u%c", &b[0], &b[1], &b[2], &b[3], &tail) != 4) return false;
    out = 0;
    for (unsigned x : b) {
        if (x > 255) return false;
        out = out << 8 | x;
    }
    return true;
}

std::string mac_text(const roce::MacAddr& m) {
    char b[18];
    std::snprintf(b, sizeof b, "%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4], m[5]);
    return b;
}
std::string ipv4_text(std::uint32_t a) {
    return std::to_string(a >> 24) + "." + std::to_string(a >> 16 & 255) + "." + std::to_string(a >> 8 & 255) + "." +
           std::to_string(a & 255);
}

bool parse_topology(const std::string& text, const std::string& origin, Topology& out, std::string& err) {
    toml::table root;
    try {
        root = toml::parse(text, origin);
    } catch (const toml::parse_error& e) {
        const auto& b = e.source().begin;
        err = origin + ":" + std::to_string(b.line) + ":" + std::to_string(b.column) + ": " +
              std::string(e.description());
        return false;
    }
    Problems p{origin, {}};
    Topology t;
    HostSpec link_default;
    // [link] first: the defaults every host's link starts from.
    if (const toml::node* l = root.get("link")) {
        if (const toml::table* lt = l->as_table()) {
            for (const auto& [k, v] : *lt) link_key(std::string(k.str()), v, "link." + std::string(k.str()), link_default, p);
        } else {
            p.add(l->source(), "link", "must be a table ([link] rate_gbps, delay_ns)");
        }
    }
    for (const auto& [key, v] : root) {
        const std::string k(key.str());
        if (k == "link") continue;
        if (k == "spine") {
            const toml::table* sp = v.as_table();
            if (!sp) {
                p.add(v.source(), "spine", "must be a table ([spine] count, rate_gbps, delay_ns)");
                continue;
            }
            t.spines = 1;
            for (const auto& [sk, sv] : *sp) {
                const std::string k2(sk.str()), full = "spine." + k2;
                std::uint64_t u = 0;
                HostSpec l;
                if (k2 == "count") {
                    if (integer(sv, full, 1, 64, p, u)) t.spines = std::uint32_t(u);
                } else if (k2 == "rate_gbps" || k2 == "delay_ns") {
                    l.rate_gbps = t.uplink_rate_gbps;
                    l.delay_ps = t.uplink_delay_ps;
                    link_key(k2, sv, full, l, p);
                    t.uplink_rate_gbps = l.rate_gbps;
                    t.uplink_delay_ps = l.delay_ps;
                } else {
                    p.add(sv.source(), full, "unknown key (count, rate_gbps, delay_ns)");
                }
            }
            continue;
        }
        if (k == "switch") {
            if (const toml::table* st = v.as_table()) switch_table(*st, t.sw, p);
            else p.add(v.source(), "switch", "must be a table ([switch])");
        } else if (k == "host") {
            const toml::array* hs = v.as_array();
            if (!hs || !hs->is_array_of_tables()) {
                p.add(v.source(), "host", "must be an array of tables ([[host]])");
                continue;
            }
            for (const toml::node& hn : *hs) {
                const toml::table& ht = *hn.as_table();
                HostSpec h = link_default;
                const std::string where = "host[" + std::to_string(t.hosts.size()) + "]";
                bool has_name = false, has_mac = false, has_ip = false;
                for (const auto& [hk, hv] : ht) {
                    const std::string k2(hk.str()), full = where + "." + k2;
                    std::string s;
                    if (k2 == "name") {
                        if (string(hv, full, p, s)) {
                            if (s.empty()) p.add(hv.source(), full, "must not be empty");
                            h.name = s;
                            has_name = true;
                        }
                    } else if (k2 == "mac") {
                        if (!string(hv, full, p, s)) continue;
                        has_mac = true;
                        if (!parse_mac(s, h.mac)) p.add(hv.source(), full, "'" + s + "' is not a MAC address (aa:bb:cc:dd:ee:ff)");
                        else if (h.mac[0] & 1) p.add(hv.source(), full, "'" + s + "' is a multicast address; a host needs a unicast one");
                    } else if (k2 == "ip") {
                        if (!string(hv, full, p, s)) continue;
                        has_ip = true;
                        if (!parse_ipv4(s, h.ipv4)) p.add(hv.source(), full, "'" + s + "' is not an IPv4 address (a.b.c.d)");
                    } else if (k2 == "rate_gbps" || k2 == "delay_ns") {
                        link_key(k2, hv, full, h, p);
                    } else if (k2 == "leaf") {
                        std::uint64_t u = 0;
                        if (integer(hv, full, 0, 255, p, u)) h.leaf = int(u);
                    } else {
                        p.add(hv.source(), full, "unknown key (name, mac, ip, rate_gbps, delay_ns, leaf)");
                    }
                }
                if (!has_name) p.add(hn.source(), where + ".name", "missing");
                if (!has_mac) p.add(hn.source(), where + ".mac", "missing");
                if (!has_ip) p.add(hn.source(), where + ".ip", "missing");
                t.hosts.push_back(h);
            }
        } else {
            p.add(v.source(), k, "unknown table (link, switch, spine, host)");
        }
    }
    if (t.hosts.size() < 2) p.add_top("host", "a fabric needs at least two hosts ([[host]] tables)");
    std::set<std::string> names;
    std::set<std::uint64_t> macs;
    std::set<std::uint32_t> ips;
    for (size_t i = 0; i < t.hosts.size(); ++i) {
        const HostSpec& h = t.hosts[i];
        std::uint64_t m = 0;
        for (auto b : h.mac) m = m << 8 | b;
        const std::string w = "host[" + std::to_string(i) + "]";
        if (!h.name.empty() && !names.insert(h.name).second) p.add_top(w + ".name", "'" + h.name + "' names two hosts");
        if (m && !macs.insert(m).second) p.add_top(w + ".mac", mac_text(h.mac) + " is another host's too");
        if (h.ipv4 && !ips.insert(h.ipv4).second) p.add_top(w + ".ip", ipv4_text(h.ipv4) + " is another host's too");
    }
    // Leaf-spine: every host on a leaf, every leaf with a host.
    bool any_leaf = false;
    int max_leaf = -1;
    for (const HostSpec& h : t.hosts) {
        any_leaf |= h.leaf >= 0;
        max_leaf = std::max(max_leaf, h.leaf);
    }
    if (any_leaf || t.spines) {
        if (!t.spines) t.spines = 1;
        t.leaves = std::uint32_t(max_leaf + 1);
        std::vector<bool> used(t.leaves, false);
        for (size_t i = 0; i < t.hosts.size(); ++i) {
            if (t.hosts[i].leaf < 0)
                p.add_top("host[" + std::to_string(i) + "].leaf",
                          "missing: with a [spine] or any host on a leaf, every host names its leaf");
            else
                used[size_t(t.hosts[i].leaf)] = true;
        }
        for (std::uint32_t l = 0; l < t.leaves; ++l)
            if (!used[l]) p.add_top("host", "leaf " + std::to_string(l) + " has no host (leaves are numbered from 0)");
        if (t.leaves < 2 && p.lines.empty()) p.add_top("host", "a leaf-spine needs hosts on two leaves or more");
    }
    // The switch: a port per host at its link's rate, the MACs routed.
    t.sw.ports.assign(t.hosts.size(), SwitchPortConfig{});
    t.sw.fdb.clear();
    for (size_t i = 0; i < t.hosts.size(); ++i) {
        t.sw.ports[i].line_rate_bps = std::uint64_t(t.hosts[i].rate_gbps * 1e9 + 0.5);
        t.sw.fdb.push_back({t.hosts[i].mac, std::uint32_t(i)});
    }
    if (p.lines.empty() && t.hosts.size() >= 2) {
        t.build();
        for (size_t k = 0; k < t.switches.size(); ++k) {
            std::string serr;
            if (!validate_switch_config(t.switches[k], serr)) {
                std::istringstream is(serr);
                const std::string which = t.leaves == 0           ? "switch"
                                          : k < t.leaves          ? "switch (leaf " + std::to_string(k) + ")"
                                                                  : "switch (spine " + std::to_string(k - t.leaves) + ")";
                for (std::string line; std::getline(is, line);)
                    if (!line.empty()) p.add_top(which, line);
            }
        }
    }
    if (!p.lines.empty()) {
        err.clear();
        for (const std::string& l : p.lines) err += (err.empty() ? "" : "\n") + l;
        return false;
    }
    out = std::move(t);
    return true;
}

void Topology::build() {
    const size_t n = hosts.size();
    switches.clear();
    peers.clear();
    host_at.assign(n, {0, 0});
    if (leaves == 0) {
        SwitchConfig c = sw;
        c.ports.assign(n, SwitchPortConfig{});
        c.fdb.clear();
        peers.emplace_back(n);
        for (size_t i = 0; i < n; ++i) {
            c.ports[i].line_rate_bps = std::uint64_t(hosts[i].rate_gbps * 1e9 + 0.5);
            c.fdb.push_back({hosts[i].mac, std::uint32_t(i)});
            host_at[i] = {0, std::uint32_t(i)};
            peers[0][i] = PortPeer{true, std::uint32_t(i), 0, hosts[i].rate_gbps, hosts[i].delay_ps};
        }
        switches.push_back(std::move(c));
        return;
    }
    // Leaf L: its hosts on ports 0.., in host order, then one uplink per
    // spine. Spine S: port L leads to leaf L.
    std::vector<std::uint32_t> on_leaf(leaves, 0);
    for (size_t i = 0; i < n; ++i) host_at[i] = {std::uint32_t(hosts[i].leaf), on_leaf[size_t(hosts[i].leaf)]++};
    const std::uint64_t up_bps = std::uint64_t(uplink_rate_gbps * 1e9 + 0.5);
    for (std::uint32_t l = 0; l < leaves + spines; ++l) {
        SwitchConfig c = sw;
        c.fdb.clear();
        c.seed = sw.seed + l;  // each switch its own marking draws
        c.mac_base[4] = std::uint8_t(l);  // and its own PFC source addresses
        std::vector<PortPeer> pp;
        if (l < leaves) {
            c.ports.assign(on_leaf[l] + spines, SwitchPortConfig{});
            pp.resize(c.ports.size());
            for (std::uint32_t s = 0; s < spines; ++s) {
                c.ports[on_leaf[l] + s].line_rate_bps = up_bps;
                pp[on_leaf[l] + s] = PortPeer{false, leaves + s, l, uplink_rate_gbps, uplink_delay_ps};
            }
            for (size_t i = 0; i < n; ++i) {
                if (host_at[i].first == l) {
                    c.ports[host_at[i].second].line_rate_bps = std::uint64_t(hosts[i].rate_gbps * 1e9 + 0.5);
                    pp[host_at[i].second] = PortPeer{true, std::uint32_t(i), 0, hosts[i].rate_gbps, hosts[i].delay_ps};
                    c.fdb.push_back({hosts[i].mac, host_at[i].second});
                } else {
                    c.fdb.push_back({hosts[i].mac, on_leaf[l] + std::uint32_t(i % spines)});
                }
            }
        } else {
            const std::uint32_t s = l - leaves;
            c.ports.assign(leaves, SwitchPortConfig{up_bps});
            pp.resize(leaves);
            for (std::uint32_t k = 0; k < leaves; ++k) pp[k] = PortPeer{false, k, on_leaf[k] + s, uplink_rate_gbps, uplink_delay_ps};
            for (size_t i = 0; i < n; ++i) c.fdb.push_back({hosts[i].mac, host_at[i].first});
        }
        switches.push_back(std::move(c));
        peers.push_back(std::move(pp));
    }
}

bool load_topology(const std::string& path, Topology& out, std::string& err) {
    std::ifstream f(path);
    if (!f) {
        err = path + ": cannot read the topology";
        return false;
    }
    std::stringstream ss;
    ss << f.rdbuf();
    return parse_topology(ss.str(), path, out, err);
}

}  // namespace simnic::model::fabric
