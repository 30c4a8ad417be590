// A fabric in the daemon (fabrics.h).
#include "simnic/daemon/fabrics.h"

#include <arpa/inet.h>

#include <mutex>

#include "simnic/model/fabric/fabric.h"
#include "simnic/model/fabric/topology.h"

namespace simnic::daemon {

using control::Json;
namespace mf = model::fabric;

namespace {

std::string host_name(const mf::Topology& t, size_t i) {
    return t.hosts[i].name.empty() ? "h" + std::to_string(i) : t.hosts[i].name;
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
                                                   const std::string& config_text, std::string& err) {
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
    f->group_ = std::make_shared<soft_engine::EngineGroup>();
    f->sent_.assign(topo.hosts.size(), {});
    DaemonFabric* fp = f.get();
    f->fabric_->tap([fp](size_t host, bool to_host, const std::vector<uint8_t>& fr, uint64_t ps) {
        if (to_host) return;
        Sent& s = fp->sent_[host];
        if (s.bytes == 0) s.first_ps = ps;
        s.bytes += fr.size();
        s.last_ps = ps;
    });
    return f;
}

DaemonFabric::~DaemonFabric() = default;

bool DaemonFabric::start(std::string& err) {
    bool ok = false;
    group_->exclusive([&] { ok = fabric_->start(err); });
    return ok;
}

Json DaemonFabric::show() const {
    Json j;
    group_->exclusive([&] {
        const mf::Topology& t = fabric_->topology();
        j["name"] = name_;
        j["topology"] = origin_;
        j["simulated_us"] = double(fabric_->now_ps()) / 1e6;
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
            mf::PortPrioCounters tot;
            for (uint32_t p = 0; p < sw.ports(); ++p) {
                mf::PortPrioCounters c;
                for (unsigned pr = 0; pr < mf::kPriorities; ++pr) {
                    const mf::PortPrioCounters& x = sw.counters(p, pr);
                    c.rx_frames += x.rx_frames;
                    c.tx_frames += x.tx_frames;
                    c.drops += x.drops;
                    c.ecn_marked += x.ecn_marked;
                    c.pause_sent += x.pause_sent;
                    c.resume_sent += x.resume_sent;
                    c.pause_received += x.pause_received;
                    c.max_depth_bytes = std::max(c.max_depth_bytes, x.max_depth_bytes);
                }
                const mf::PortPeer& pp = t.peers[k][p];
                ports.push_back(Json{{"port", p},
                                     {"peer", pp.host ? host_name(t, pp.index) : "switch " + std::to_string(pp.index)},
                                     {"rx_frames", c.rx_frames},
                                     {"tx_frames", c.tx_frames},
                                     {"drops", c.drops},
                                     {"ecn_marked", c.ecn_marked},
                                     {"pause_sent", c.pause_sent},
                                     {"resume_sent", c.resume_sent},
                                     {"pause_received", c.pause_received},
                                     {"no_route", sw.port_counters(p).no_route},
                                     {"max_depth_bytes", c.max_depth_bytes}});
                tot.rx_frames += c.rx_frames;
                tot.tx_frames += c.tx_frames;
                tot.drops += c.drops;
                tot.ecn_marked += c.ecn_marked;
                tot.pause_sent += c.pause_sent;
                tot.resume_sent += c.resume_sent;
                tot.max_depth_bytes = std::max(tot.max_depth_bytes, c.max_depth_bytes);
            }
            const std::string sname = t.leaves == 0 ? "switch"
                                      : k < t.leaves ? "leaf" + std::to_string(k)
                                                     : "spine" + std::to_string(k - t.leaves);
            sws.push_back(Json{{"name", sname},
                               {"rx_frames", tot.rx_frames},
                               {"tx_frames", tot.tx_frames},
                               {"drops", tot.drops},
                               {"ecn_marked", tot.ecn_marked},
                               {"pause_sent", tot.pause_sent},
                               {"resume_sent", tot.resume_sent},
                               {"max_depth_bytes", tot.max_depth_bytes},
                               {"shared_peak_bytes", sw.shared_peak()},
                               {"ports", ports}});
        }
        j["switches"] = sws;
    });
    return j;
}

}  // namespace simnic::daemon
