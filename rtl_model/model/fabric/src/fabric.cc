// The fabric (fabric.h): one simulation context, the switch, a delay line
// per link direction, and the devices' pipelines plugged into them.
#include "simnic/model/fabric/fabric.h"

#include <stdlib.h>

#include <algorithm>
#include <deque>
#include <functional>
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

std::unique_ptr<Fabric> Fabric::create(const Topology& topo, std::string& err) {
    if (topo.hosts.size() < 2) {
        err = "a fabric needs at least two hosts";
        return nullptr;
    }
    if (!validate_switch_config(topo.sw, err)) return nullptr;
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
    // Switch egress port j: the frame's last bit leaves now; its first bit
    // reaches host j's MAC RX a link delay after it left, which MAC RX
    // (taking the frame's line time at the same rate) turns back into its
    // last bit in. A delay shorter than the line time cannot go back before
    // now: the frame is then late by the difference.
    f->sw_ = std::make_unique<Switch>("switch", topo.sw, [fp](std::uint32_t port, std::vector<std::uint8_t>&& fr) {
        const std::uint64_t now = sc_core::sc_time_stamp().value();
        const std::uint64_t line = fp->topo_.sw.frame_time_ps(port, std::uint32_t(fr.size()));
        const std::uint64_t due = now - std::min(now, line) + fp->topo_.hosts[port].delay_ps;
        fp->down_[port]->push(due, std::move(fr));
    });
    for (size_t i = 0; i < n; ++i) {
        const std::string h = topo.hosts[i].name.empty() ? "h" + std::to_string(i) : topo.hosts[i].name;
        f->up_.push_back(std::make_unique<DelayLine>(("up_" + h).c_str(), [fp, i](std::vector<std::uint8_t>&& fr) {
            fp->sw_->receive(std::uint32_t(i), std::move(fr));
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
    sw_.reset();
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

std::uint64_t Fabric::now_ps() const {
    SimGuard g(ctx_);
    return ctx_->time_stamp().value();
}

}  // namespace simnic::model::fabric
