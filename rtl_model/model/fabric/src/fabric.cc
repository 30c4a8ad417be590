// The fabric (fabric.h): one simulation context, the switch, a delay line
// per link direction, and the devices' pipelines plugged into them.
#include "simnic/model/fabric/fabric.h"

#include <stdlib.h>

#include <algorithm>
#include <deque>
#include <functional>
#include <sstream>
#include <utility>

#include "sim_context.h"  // the pipeline's process-wide SystemC lock

namespace simnic::model::fabric {

using sim::SimGuard;

// A link direction: frames handed in now come out at their due time, in
// order (each direction carries one frame at a time, so due times never go
// back). An SC_METHOD on one event: nothing runs between frames.
class DelayLine : public sc_core::sc_module {
public:
    using Out = std::function<void(std::vector<std::uint8_t>&&)>;
    SC_HAS_PROCESS(DelayLine);
    DelayLine(sc_core::sc_module_name n, Out out) : sc_core::sc_module(n), out_(std::move(out)) {
        SC_METHOD(fire);
        sensitive << ev_;
        dont_initialize();
    }
    void push(std::uint64_t due_ps, std::vector<std::uint8_t>&& f) {
        const std::uint64_t now = sc_core::sc_time_stamp().value();
        due_ps = std::max({due_ps, now, q_.empty() ? 0 : q_.back().first});
        q_.emplace_back(due_ps, std::move(f));
        if (q_.size() == 1) ev_.notify(sc_core::sc_time(double(due_ps - now), sc_core::SC_PS));
    }

private:
    void fire() {
        const std::uint64_t now = sc_core::sc_time_stamp().value();
        while (!q_.empty() && q_.front().first <= now) {
            std::vector<std::uint8_t> f = std::move(q_.front().second);
            q_.pop_front();
            out_(std::move(f));
        }
        if (!q_.empty()) ev_.notify(sc_core::sc_time(double(q_.front().first - now), sc_core::SC_PS));
    }
    Out out_;
    std::deque<std::pair<std::uint64_t, std::vector<std::uint8_t>>> q_;
    sc_core::sc_event ev_;
};

Fabric::Fabric(const Topology& topo) : topo_(topo) {}

std::unique_ptr<Fabric> Fabric::create(const Topology& topo_in, std::string& err) {
    if (topo_in.hosts.size() < 2) {
        err = "a fabric needs at least two hosts";
        return nullptr;
    }
    // The switches from the settings as they are now (a caller may have
    // changed `sw` since the topology was parsed).
    Topology topo = topo_in;
    topo.build();
    for (const SwitchConfig& c : topo.switches)
        if (!validate_switch_config(c, err)) return nullptr;
    setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 0);
    std::unique_ptr<Fabric> f(new Fabric(topo));
    const size_t n = topo.hosts.size();
    f->devs_.assign(n, nullptr);
    f->tx_.assign(n, 0);
    f->rx_.assign(n, 0);
    f->ce_from_.assign(n, 0);
    SimGuard g(nullptr);
    f->ctx_ = new sc_core::sc_simcontext;
    sc_core::sc_curr_simcontext = f->ctx_;
    Fabric* fp = f.get();
    const Topology& t = f->topo_;
    for (size_t k = 0; k < t.switches.size(); ++k) {
        // Egress port p of switch k: the frame's last bit leaves now.
        //  - to a host: its first bit reached the host a link delay after it
        //    started, which MAC RX (taking the frame's line time at the same
        //    rate) turns back into its last bit in. A delay shorter than the
        //    line time cannot go back before now: the frame is then late by
        //    the difference.
        //  - to a switch: its last bit is in there a link delay later.
        const std::string name =
            t.leaves == 0 ? "switch" : k < t.leaves ? "leaf" + std::to_string(k) : "spine" + std::to_string(k - t.leaves);
        f->sws_.push_back(std::make_unique<Switch>(
            name.c_str(), t.switches[k], [fp, k](std::uint32_t port, std::vector<std::uint8_t>&& fr) {
                const std::uint64_t now = sc_core::sc_time_stamp().value();
                const PortPeer& pp = fp->topo_.peers[k][port];
                if (pp.host) {
                    const std::uint64_t line = fp->topo_.switches[k].frame_time_ps(port, std::uint32_t(fr.size()));
                    fp->down_[pp.index]->push(now - std::min(now, line) + pp.delay_ps, std::move(fr));
                } else {
                    fp->trunk_[k][port]->push(now + pp.delay_ps, std::move(fr));
                }
            }));
    }
    f->trunk_.resize(t.switches.size());
    for (size_t k = 0; k < t.switches.size(); ++k) {
        f->trunk_[k].resize(t.peers[k].size());
        for (size_t p = 0; p < t.peers[k].size(); ++p) {
            const PortPeer pp = t.peers[k][p];
            if (pp.host) continue;
            f->trunk_[k][p] = std::make_unique<DelayLine>(
                ("trunk_" + std::to_string(k) + "_" + std::to_string(p)).c_str(),
                [fp, pp](std::vector<std::uint8_t>&& fr) { fp->sws_[pp.index]->receive(pp.port, std::move(fr)); });
        }
    }
    for (size_t i = 0; i < n; ++i) {
        const std::string h = t.hosts[i].name.empty() ? "h" + std::to_string(i) : t.hosts[i].name;
        const auto at = t.host_at[i];
        f->up_.push_back(std::make_unique<DelayLine>(("up_" + h).c_str(), [fp, at](std::vector<std::uint8_t>&& fr) {
            fp->sws_[at.first]->receive(at.second, std::move(fr));
        }));
        f->down_.push_back(std::make_unique<DelayLine>(("down_" + h).c_str(), [fp, i](std::vector<std::uint8_t>&& fr) {
            ++fp->rx_[i];
            fp->count_ce(fr);
            if (fp->tap_) fp->tap_(i, true, fr, sc_core::sc_time_stamp().value());
            if (fp->devs_[i]) fp->devs_[i]->rx_frame(fr.data(), fr.size());
        }));
    }
    return f;
}

void Fabric::write_depth_csv(std::ostream& os) {
    SimGuard g(ctx_);
    std::vector<std::vector<std::string>> lines(sws_.size());
    for (size_t k = 0; k < sws_.size(); ++k) {
        sws_[k]->flush_depth();
        std::ostringstream one;
        sws_[k]->write_depth_csv(one);
        std::istringstream is(one.str());
        for (std::string l; std::getline(is, l);) lines[k].push_back(l);
    }
    // Every switch samples on the same grid up to the same now: row r is
    // the same time in each.
    const size_t rows = lines.empty() ? 0 : lines[0].size();
    for (size_t r = 0; r < rows; ++r) {
        std::string row;
        for (size_t k = 0; k < sws_.size(); ++k) {
            if (r >= lines[k].size()) continue;
            const std::string& l = lines[k][r];
            const size_t comma = l.find(',');
            if (k == 0) row = l.substr(0, comma);
            if (comma == std::string::npos) continue;
            std::string cells = l.substr(comma);
            if (r == 0 && sws_.size() > 1) {
                // Header: prefix each queue with its switch.
                std::string named;
                std::istringstream cs(cells.substr(1));
                for (std::string c; std::getline(cs, c, ',');) named += ",s" + std::to_string(k) + "_" + c;
                cells = named;
            }
            row += cells;
        }
        os << row << "\n";
    }
}

void Fabric::count_ce(const std::vector<std::uint8_t>& fr) {
    if (fr.size() < 16) return;
    const std::uint16_t et = std::uint16_t(fr[12] << 8 | fr[13]);
    std::uint8_t ecn = 0;
    if (et == roce::kEtherTypeIpv4) ecn = fr[15] & 3;
    else if (et == roce::kEtherTypeIpv6) ecn = (fr[15] >> 4) & 3;
    if (ecn != 3) return;
    for (size_t h = 0; h < topo_.hosts.size(); ++h)
        if (std::equal(topo_.hosts[h].mac.begin(), topo_.hosts[h].mac.end(), fr.begin() + 6)) ++ce_from_[h];
}

Fabric::~Fabric() {
    // The devices' pipelines belong to their engines, which the caller
    // destroys first (they use this context).
    SimGuard g(ctx_);
    up_.clear();
    down_.clear();
    trunk_.clear();
    sws_.clear();
    delete ctx_;
}

soft_engine::TimingFactory Fabric::factory(size_t i, ModelConfig cfg) {
    cfg.mac.line_rate_gbps = topo_.hosts[i].rate_gbps;
    SharedWire w;
    w.ctx = ctx_;
    // MAC TX: the frame's last bit leaves now, and is at the switch a link
    // delay later.
    w.tx = [this, i](std::vector<std::uint8_t>&& fr) {
        ++tx_[i];
        if (tap_) tap_(i, false, fr, sc_core::sc_time_stamp().value());
        up_[i]->push(sc_core::sc_time_stamp().value() + topo_.hosts[i].delay_ps, std::move(fr));
    };
    const std::string name = topo_.hosts[i].name.empty() ? "h" + std::to_string(i) : topo_.hosts[i].name;
    soft_engine::TimingFactory inner = Pipeline::shared_factory(name, cfg, w, &devs_[i]);
    return inner;
}

bool Fabric::start(std::string& err) {
    for (size_t i = 0; i < devs_.size(); ++i)
        if (!devs_[i]) {
            err = "host " + topo_.hosts[i].name + " has no device";
            return false;
        }
    SimGuard g(ctx_);
    sc_core::sc_report_handler::set_actions(sc_core::SC_ID_NO_SC_START_ACTIVITY_, sc_core::SC_DO_NOTHING);
    sc_core::sc_start(sc_core::SC_ZERO_TIME);
    started_ = true;
    return true;
}

std::uint64_t Fabric::run() {
    SimGuard g(ctx_);
    const std::uint64_t t0 = ctx_->time_stamp().value();
    sc_core::sc_start();
    return ctx_->time_stamp().value() - t0;
}

void Fabric::run_until(std::uint64_t ps) {
    SimGuard g(ctx_);
    const std::uint64_t now = ctx_->time_stamp().value();
    if (ps > now) sc_core::sc_start(sc_core::sc_time(double(ps - now), sc_core::SC_PS), sc_core::SC_RUN_TO_TIME);
}

bool Fabric::run_until_or_idle(std::uint64_t ps) {
    SimGuard g(ctx_);
    const std::uint64_t now = ctx_->time_stamp().value();
    if (ps <= now) return true;
    // Every event before `ps`. This policy leaves the clock at the last
    // event, not at `ps`, when the next one lies beyond (an idle gap costs
    // no simulated time): then nothing is left before `ps`, and unless the
    // fabric is idle the clock moves there with nothing to do on the way.
    sc_core::sc_start(sc_core::sc_time(double(ps - now), sc_core::SC_PS), sc_core::SC_EXIT_ON_STARVATION);
    if (!sc_core::sc_pending_activity(ctx_)) return false;
    const std::uint64_t at = ctx_->time_stamp().value();
    if (at < ps) sc_core::sc_start(sc_core::sc_time(double(ps - at), sc_core::SC_PS), sc_core::SC_RUN_TO_TIME);
    return true;
}

std::uint64_t Fabric::now_ps() const {
    SimGuard g(ctx_);
    return ctx_->time_stamp().value();
}

}  // namespace simnic::model::fabric
