#include "simnic/congestion/dcqcn.h"

#include <algorithm>
#include <cmath>

namespace simnic::congestion {

const char* check(const DcqcnConfig& c) {
    if (!(c.line_rate_bps > 0)) return "line rate must be positive";
    if (!(c.min_rate_bps > 0) || c.min_rate_bps > c.line_rate_bps)
        return "minimum rate must be positive and at most the line rate";
    if (!(c.g > 0 && c.g <= 1)) return "g must be in (0, 1]";
    if (!(c.initial_alpha >= 0 && c.initial_alpha <= 1)) return "initial alpha must be in [0, 1]";
    if (c.alpha_timer_ns == 0) return "the alpha timer K must be positive";
    if (c.rate_timer_ns == 0) return "the rate increase timer T must be positive";
    if (!(c.rai_bps >= 0) || !(c.rhai_bps >= 0)) return "R_AI and R_HAI must not be negative";
    return nullptr;
}

const char* to_string(IncreaseStage s) {
    switch (s) {
        case IncreaseStage::FastRecovery: return "fast recovery";
        case IncreaseStage::Additive: return "additive increase";
        case IncreaseStage::Hyper: return "hyper increase";
    }
    return "?";
}

DcqcnRp::DcqcnRp(const DcqcnConfig& cfg, uint64_t now_ns)
    : cfg_(cfg),
      rc_(cfg.line_rate_bps),
      rt_(cfg.line_rate_bps),
      alpha_(cfg.initial_alpha),
      now_ns_(now_ns),
      next_alpha_ns_(now_ns + cfg.alpha_timer_ns) {}

IncreaseStage DcqcnRp::stage() const {
    // The counts of the event being made are included: with the timer
    // alone, its first F expiries are fast recovery and the F+1st is the
    // first additive increase.
    const unsigned f = cfg_.fast_recovery_steps;
    if (std::max(t_cnt_, bc_) <= f) return IncreaseStage::FastRecovery;
    if (std::min(t_cnt_, bc_) > f) return IncreaseStage::Hyper;
    return IncreaseStage::Additive;
}

void DcqcnRp::clamp() {
    rt_ = std::clamp(rt_, cfg_.min_rate_bps, cfg_.line_rate_bps);
    rc_ = std::clamp(rc_, cfg_.min_rate_bps, cfg_.line_rate_bps);
}

// One timer or byte counter event; t_cnt_ / bc_ already count it.
void DcqcnRp::rate_increase() {
    switch (stage()) {
        case IncreaseStage::FastRecovery: ++counters_.fast_recovery_steps; break;
        case IncreaseStage::Additive:
            rt_ += cfg_.rai_bps;
            ++counters_.additive_steps;
            break;
        case IncreaseStage::Hyper:
            // QCN's hyperactive increase: the step grows with the number of
            // events past F that both counters have made (1, 2, ...).
            rt_ += double(std::min(t_cnt_, bc_) - cfg_.fast_recovery_steps) * cfg_.rhai_bps;
            ++counters_.hyper_steps;
            break;
    }
    rt_ = std::min(rt_, cfg_.line_rate_bps);
    rc_ = (rt_ + rc_) / 2;
    clamp();
    // Halving the gap reaches the line rate only in the limit: within a bit
    // per second of it, the QP is back at line rate and no longer limited.
    if (cfg_.line_rate_bps - rc_ < 1.0) {
        rc_ = rt_ = cfg_.line_rate_bps;
        limited_ = false;
        t_cnt_ = bc_ = 0;
        bytes_ = 0;
    }
    tell_rate();
}

void DcqcnRp::observe(RpObserver* o, uint32_t id) {
    observer_ = o;
    id_ = id;
    if (!o) return;
    o->rp_begin(id, now_ns_);
    tell_rate();
    o->rp_alpha(id, now_ns_, alpha_);
}

void DcqcnRp::advance(uint64_t now_ns) {
    now_ns = std::max(now_ns, now_ns_);
    // The alpha timer: alpha does not feed the increases, so it runs on its
    // own. A long idle gap is many expiries: past a few thousand, alpha is
    // below 1e-6 of itself and the rest is applied at once.
    if (now_ns >= next_alpha_ns_) {
        const uint64_t n = (now_ns - next_alpha_ns_) / cfg_.alpha_timer_ns + 1;
        const uint64_t loop = std::min<uint64_t>(n, 4096);
        for (uint64_t i = 0; i < loop; ++i) {
            alpha_ *= 1 - cfg_.g;
            if (observer_) observer_->rp_alpha(id_, next_alpha_ns_ + i * cfg_.alpha_timer_ns, alpha_);
        }
        if (n > loop) {
            alpha_ *= std::pow(1 - cfg_.g, double(n - loop));
            if (observer_) observer_->rp_alpha(id_, next_alpha_ns_ + (n - 1) * cfg_.alpha_timer_ns, alpha_);
        }
        next_alpha_ns_ += n * cfg_.alpha_timer_ns;
        counters_.alpha_decays += n;
    }
    // The increase timer, one expiry at a time: each may end the limited
    // state, which stops the timer and the time counted as limited.
    while (limited_ && next_rate_ns_ <= now_ns) {
        counters_.rate_limited_ns += next_rate_ns_ - now_ns_;
        now_ns_ = next_rate_ns_;
        next_rate_ns_ += cfg_.rate_timer_ns;
        ++t_cnt_;
        rate_increase();
    }
    if (limited_) counters_.rate_limited_ns += now_ns - now_ns_;
    now_ns_ = now_ns;
}

void DcqcnRp::on_cnp(uint64_t now_ns) {
    advance(now_ns);
    ++counters_.cnps_received;
    rt_ = rc_;
    rc_ = rc_ * (1 - alpha_ / 2);
    alpha_ = (1 - cfg_.g) * alpha_ + cfg_.g;
    clamp();
    limited_ = true;
    t_cnt_ = bc_ = 0;
    bytes_ = 0;
    next_rate_ns_ = now_ns_ + cfg_.rate_timer_ns;
    next_alpha_ns_ = now_ns_ + cfg_.alpha_timer_ns;
    tell_rate();
    if (observer_) observer_->rp_alpha(id_, now_ns_, alpha_);
}

void DcqcnRp::on_bytes_sent(uint64_t bytes, uint64_t now_ns) {
    advance(now_ns);
    sent_any_ = true;
    last_send_ns_ = now_ns_;
    if (!limited_ || cfg_.byte_counter_bytes == 0) return;
    bytes_ += bytes;
    while (limited_ && bytes_ >= cfg_.byte_counter_bytes) {
        bytes_ -= cfg_.byte_counter_bytes;
        ++bc_;
        rate_increase();
    }
}

uint64_t DcqcnRp::earliest_send_ns(uint64_t bytes, uint64_t now_ns) const {
    if (!sent_any_) return now_ns;
    const double gap_ns = double(bytes) * 8 * 1e9 / rc_;
    const uint64_t t = last_send_ns_ + static_cast<uint64_t>(std::ceil(gap_ns));
    return std::max(t, now_ns);
}

}  // namespace simnic::congestion
