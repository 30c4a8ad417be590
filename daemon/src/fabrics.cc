// A fabric in the daemon (fabrics.h).
#include "simnic/daemon/fabrics.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cmath>
#include <mutex>

#include "simnic/congestion/rp_record.h"
#include "simnic/model/fabric/fabric.h"
#include "simnic/model/fabric/topology.h"
#include "simnic/roce/pcap_io.h"
#include "depth_record.h"
#include "rate_record.h"

namespace simnic::daemon {

using control::Json;
namespace mf = model::fabric;

namespace {

std::string host_name(const mf::Topology& t, size_t i) {
    return t.hosts[i].name.empty() ? "h" + std::to_string(i) : t.hosts[i].name;
}

// "switch" alone, or the leaves and the spines of a leaf-spine.
std::string switch_name(const mf::Topology& t, size_t k) {
    return t.leaves == 0 ? "switch" : k < t.leaves ? "leaf" + std::to_string(k) : "spine" + std::to_string(k - t.leaves);
}

std::string ipv4_string(uint32_t host_order) {
    const uint32_t n = htonl(host_order);
    char b[INET_ADDRSTRLEN] = {};
    inet_ntop(AF_INET, &n, b, sizeof b);
    return b;
}

}  // namespace

std::string fabric_device_name(const std::string& fabric, const std::string& host) { return fabric + "_" + host; }

std::unique_ptr<DaemonFabric> DaemonFabric::create(const std::string& name, const std::string& origin,
                                                   const std::string& topology_text, const std::string& config_path,
                                                   const std::string& config_text, const std::string& pcap,
                                                   std::string& err) {
    if (!valid_device_name(name, err)) {
        err = "fabric name: " + err;
        return nullptr;
    }
    mf::Topology topo;
    if (!mf::parse_topology(topology_text, origin, topo, err)) return nullptr;
    std::unique_ptr<DaemonFabric> f(new DaemonFabric);
    f->name_ = name;
    f->origin_ = origin;
    for (size_t i = 0; i < topo.hosts.size(); ++i) {
        Device d;
        d.name = fabric_device_name(name, host_name(topo, i));
        std::string why;
        if (!valid_device_name(d.name, why)) {
            err = "host " + host_name(topo, i) + ": device " + d.name + ": " + why;
            return nullptr;
        }
        d.type = DeviceType::Model;
        d.fabric.fabric = name;
        d.fabric.host = i;
        d.fabric.host_name = host_name(topo, i);
        d.fabric.mac = topo.hosts[i].mac;
        d.fabric.ipv4 = topo.hosts[i].ipv4;
        d.config_path = config_path;
        d.config_text = config_text;
        f->devices_.push_back(std::move(d));
    }
    f->fabric_ = mf::Fabric::create(topo, err);
    if (!f->fabric_) {
        err = origin + ": " + err;
        return nullptr;
    }
    if (!pcap.empty()) {
        f->pcap_ = roce::PcapWriter::open(pcap, err);
        if (!f->pcap_) {
            err = "pcap " + pcap + ": " + err;
            return nullptr;
        }
        f->pcap_path_ = pcap;
    }
    f->group_ = std::make_shared<soft_engine::EngineGroup>();
    f->sent_.assign(topo.hosts.size(), {});
    for (size_t i = 0; i < topo.hosts.size(); ++i) f->host_of_mac_[topo.hosts[i].mac] = i;
    f->rates_ = std::make_unique<RateRecord>(kRateBinUs * 1'000'000, kMaxRateCells);
    f->depths_ = std::make_unique<DepthRecord>(kRateBinUs * 1'000'000, kMaxRateCells);
    DepthRecord* depths = f->depths_.get();
    f->fabric_->depth_tap([depths](size_t sw, uint32_t port, unsigned prio, uint64_t ps, uint64_t bytes) {
        depths->set(sw, port, prio, ps, bytes);
    });
    f->rp_record_ = std::make_unique<congestion::RpRecord>(kRateBinUs * 1'000, kMaxRateCells);
    for (size_t i = 0; i < topo.hosts.size(); ++i) f->rp_observers_.push_back(f->rp_record_->source(uint32_t(i)));
    DaemonFabric* fp = f.get();
    f->fabric_->tap([fp](size_t host, bool to_host, const std::vector<uint8_t>& fr, uint64_t ps) {
        // Each frame as it leaves its sender and as it reaches its receiver
        // (a forwarded frame twice: ECT(0) as sent, CE where the switch
        // marked it), stamped with the simulated time (pcap's microseconds).
        if (fp->pcap_) fp->pcap_->write(fr, ps / 1'000'000);
        if (to_host) return;
        Sent& s = fp->sent_[host];
        if (s.bytes == 0) s.first_ps = ps;
        s.bytes += fr.size();
        s.last_ps = ps;
        roce::MacAddr dst{};
        if (fr.size() < dst.size()) return;
        std::copy_n(fr.begin(), dst.size(), dst.begin());
        const auto to = fp->host_of_mac_.find(dst);
        if (to == fp->host_of_mac_.end()) return;
        fp->rates_->count(host, to->second, ps, fr.size());
    });
    return f;
}

DaemonFabric::~DaemonFabric() = default;

bool DaemonFabric::start(std::string& err) {
    bool ok = false;
    group_->exclusive([&] { ok = fabric_->start(err); });
    return ok;
}

double DaemonFabric::hold(bool on, bool& was_held) {
    was_held = group_->hold(on);
    double us = 0;
    group_->exclusive([&] { us = double(fabric_->now_ps()) / 1e6; });
    return us;
}

Json DaemonFabric::fit(size_t room, uint64_t bin_us, const std::function<Json(uint64_t)>& series) {
    for (;;) {
        Json s = series(bin_us);
        const uint64_t got = s.value("bin_us", uint64_t{0});
        if (s.value("bins", uint64_t{0}) <= 1 || got == 0 || s.dump().size() <= room) return s;
        bin_us = got * 2;  // a multiple of the record's bin, as `got` is
    }
}

Json DaemonFabric::rates(uint64_t bin_us) const {
    Json j;
    group_->exclusive([&] {
        const mf::Topology& t = fabric_->topology();
        const RateRecord::Rates r = rates_->rates(bin_us * 1'000'000, kMaxRatePoints);
        j["bin_us"] = r.bin_ps / 1'000'000;
        j["record_bin_us"] = rates_->bin_ps() / 1'000'000;
        j["bins"] = r.bins;
        j["simulated_us"] = double(fabric_->now_ps()) / 1e6;
        Json flows = Json::array();
        for (const RateRecord::Flow& f : r.flows)
            flows.push_back(Json{{"from", host_name(t, f.from)}, {"to", host_name(t, f.to)}, {"bytes", f.bytes},
                                 {"gbps", f.gbps}});
        j["flows"] = std::move(flows);
    });
    return j;
}

Json DaemonFabric::dcqcn(uint64_t bin_us, const std::function<void()>& advance) const {
    Json j;
    group_->exclusive([&] {
        advance();
        const mf::Topology& t = fabric_->topology();
        const uint64_t now_ns = fabric_->now_ps() / 1000;
        const congestion::RpRecord::Table r = rp_record_->table(bin_us * 1000, kMaxRatePoints, now_ns);
        j["bin_us"] = r.bin_ns / 1000;
        j["record_bin_us"] = rp_record_->bin_ns() / 1000;
        j["bins"] = r.bins;
        j["simulated_us"] = double(now_ns) / 1e3;
        // Gb/s to the kb/s and alpha to 1e-9: numbers no longer than they
        // need. A bin where the QP did not exist is null.
        const auto numbers = [](const std::vector<double>& v, double scale, double unit) {
            Json a = Json::array();
            for (double x : v) {
                if (std::isnan(x))
                    a.push_back(nullptr);
                else
                    a.push_back(std::round(x * scale / unit) * unit);
            }
            return a;
        };
        Json qps = Json::array();
        for (const congestion::RpRecord::Track& k : r.tracks) {
            Json q{{"host", host_name(t, k.source)},
                   {"device", devices_[k.source].name},
                   {"qpn", k.id},
                   {"life", k.life},
                   {"begin_us", double(k.begin_ns) / 1e3},
                   {"end_us", k.ended ? Json(double(k.end_ns) / 1e3) : Json(nullptr)},
                   {"rc_gbps", numbers(k.rc_bps, 1e-9, 1e-6)},
                   {"rt_gbps", numbers(k.rt_bps, 1e-9, 1e-6)},
                   {"alpha", numbers(k.alpha, 1, 1e-9)}};
            qps.push_back(std::move(q));
        }
        j["qps"] = std::move(qps);
    });
    return j;
}

Json DaemonFabric::depth(uint64_t bin_us) const {
    Json j;
    group_->exclusive([&] {
        const mf::Topology& t = fabric_->topology();
        const DepthRecord::Depths d = depths_->depths(bin_us * 1'000'000, kMaxRatePoints, fabric_->now_ps());
        j["bin_us"] = d.bin_ps / 1'000'000;
        j["record_bin_us"] = depths_->bin_ps() / 1'000'000;
        j["bins"] = d.bins;
        j["simulated_us"] = double(fabric_->now_ps()) / 1e6;
        Json qs = Json::array();
        for (const DepthRecord::Queue& q : d.queues) {
            const mf::PortPeer& pp = t.peers[q.sw][q.port];
            qs.push_back(Json{{"switch", switch_name(t, q.sw)},
                              {"port", q.port},
                              {"peer", pp.host ? host_name(t, pp.index) : "switch " + std::to_string(pp.index)},
                              {"prio", q.prio},
                              {"now_bytes", q.now_bytes},
                              {"peak_bytes", q.peak}});
        }
        j["queues"] = std::move(qs);
    });
    return j;
}

Json DaemonFabric::show() const {
    Json j;
    group_->exclusive([&] {
        const mf::Topology& t = fabric_->topology();
        j["name"] = name_;
        j["topology"] = origin_;
        j["simulated_us"] = double(fabric_->now_ps()) / 1e6;
        j["held"] = group_->held;
        j["quiet_gaps"] = Json{{"waited_out", group_->gaps_waited_out}, {"cut_short", group_->gaps_cut_short}};
        if (pcap_) {
            pcap_->flush();
            j["pcap"] = pcap_path_;
        }
        Json hosts = Json::array();
        for (size_t i = 0; i < t.hosts.size(); ++i)
            hosts.push_back(Json{{"host", host_name(t, i)},
                                 {"device", devices_[i].name},
                                 {"mac", mac_string(t.hosts[i].mac)},
                                 {"ip", ipv4_string(t.hosts[i].ipv4)},
                                 {"rate_gbps", t.hosts[i].rate_gbps},
                                 {"switch", t.host_at[i].first},
                                 {"port", t.host_at[i].second},
                                 {"tx_frames", fabric_->tx_frames(i)},
                                 {"tx_bytes", sent_[i].bytes},
                                 {"tx_first_us", double(sent_[i].first_ps) / 1e6},
                                 {"tx_last_us", double(sent_[i].last_ps) / 1e6},
                                 {"rx_frames", fabric_->rx_frames(i)},
                                 {"ce_frames_from", fabric_->ce_frames_from(i)}});
        j["hosts"] = hosts;
        Json sws = Json::array();
        for (size_t k = 0; k < fabric_->switches(); ++k) {
            const mf::Switch& sw = fabric_->sw(k);
            Json ports = Json::array();
            // The same fields for a port and for the whole switch, so the two always agree.
            const auto counters_json = [](const mf::PortPrioCounters& c) {
                return Json{{"rx_frames", c.rx_frames},           {"tx_frames", c.tx_frames},
                            {"drops", c.drops},                   {"ecn_marked", c.ecn_marked},
                            {"pause_sent", c.pause_sent},         {"resume_sent", c.resume_sent},
                            {"pause_received", c.pause_received}, {"max_depth_bytes", c.max_depth_bytes}};
            };
            mf::PortPrioCounters tot;
            for (uint32_t p = 0; p < sw.ports(); ++p) {
                mf::PortPrioCounters c;
                // Per priority too (PFC and ECN act per priority), those
                // that saw anything.
                Json prios = Json::array();
                for (unsigned pr = 0; pr < mf::kPriorities; ++pr) {
                    const mf::PortPrioCounters& pc = sw.counters(p, pr);
                    c.add(pc);
                    if (pc.rx_frames || pc.tx_frames || pc.drops || pc.pause_sent || pc.resume_sent ||
                        pc.pause_received) {
                        Json prj = counters_json(pc);
                        prj["prio"] = pr;
                        prios.push_back(std::move(prj));
                    }
                }
                tot.add(c);
                const mf::PortPeer& pp = t.peers[k][p];
                Json pj = counters_json(c);
                pj["priorities"] = std::move(prios);
                pj["port"] = p;
                pj["peer"] = pp.host ? host_name(t, pp.index) : "switch " + std::to_string(pp.index);
                pj["no_route"] = sw.port_counters(p).no_route;
                ports.push_back(std::move(pj));
            }
            Json sj = counters_json(tot);
            sj["name"] = switch_name(t, k);
            sj["shared_peak_bytes"] = sw.shared_peak();
            sj["ports"] = std::move(ports);
            sws.push_back(std::move(sj));
        }
        j["switches"] = sws;
    });
    return j;
}

}  // namespace simnic::daemon
