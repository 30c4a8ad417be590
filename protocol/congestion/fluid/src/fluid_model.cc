#include "simnic/congestion/fluid/fluid_model.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace simnic::congestion::fluid {

namespace {

// The model's constants in its own units: rates in packets per second,
// B in packets, times in seconds.
struct Units {
    double pkt_bits;
    double line;    // the senders' line rate
    double cap;     // C
    double min_rate;
    double rai;
    double tau;     // N, the CNP interval
    double tau_p;   // K, the alpha timer
    double timer;   // T
    double bc;      // B, packets (0: no byte counter)
    double f;       // F
    double g;
};

Units units_of(const Scenario& s) {
    Units u{};
    u.pkt_bits = 8.0 * s.packet_bytes;
    u.line = s.rp.line_rate_bps / u.pkt_bits;
    u.cap = s.bottleneck_bps / u.pkt_bits;
    u.min_rate = s.rp.min_rate_bps / u.pkt_bits;
    u.rai = s.rp.rai_bps / u.pkt_bits;
    u.tau = double(s.np.min_cnp_interval_ns) * 1e-9;
    u.tau_p = double(s.rp.alpha_timer_ns) * 1e-9;
    u.timer = double(s.rp.rate_timer_ns) * 1e-9;
    u.bc = double(s.rp.byte_counter_bytes) / s.packet_bytes;
    u.f = s.rp.fast_recovery_steps;
    u.g = s.rp.g;
    return u;
}

// The intermediate terms a..e of the model for marking probability p and
// delayed rate r (> 0). (1-p)^x is exp(x log1p(-p)) so that small p keep
// their precision; p = 0 and p = 1 take the limits.
struct Terms {
    double a, b, c, d, e;
};

Terms terms(const Units& u, double p, double r) {
    Terms t{};
    if (p <= 0) {
        t.a = 0;
        t.b = u.bc > 0 ? 1 / u.bc : 0;
        t.c = t.b;
        t.d = 1 / (u.timer * r);
        t.e = t.d;
        return t;
    }
    if (p >= 1) {
        t.a = 1;
        return t;  // no packet passes unmarked: no increase event completes
    }
    const double l = std::log1p(-p);
    t.a = -std::expm1(u.tau * r * l);
    if (u.bc > 0) {
        t.b = p / std::expm1(-u.bc * l);
        t.c = t.b * std::exp(u.f * u.bc * l);
    }
    t.d = p / std::expm1(-u.timer * r * l);
    t.e = t.d * std::exp(u.f * u.timer * r * l);
    return t;
}

double alpha_target(const Units& u, double p, double r) {
    if (p <= 0 || r <= 0) return 0;
    if (p >= 1) return 1;
    return -std::expm1(u.tau_p * r * std::log1p(-p));
}

}  // namespace

Series integrate_fluid(const Scenario& s, const FluidOptions& opt) {
    const Units u = units_of(s);
    const unsigned n = s.flows;
    const double dt = opt.step_s;
    const uint64_t steps = uint64_t(std::ceil(s.duration_s / dt));
    // tau* in steps, at least one: the history below is read that far back.
    const std::size_t lag = std::max<std::size_t>(1, std::size_t(std::llround(loop_delay_s(s) / dt)));

    std::vector<double> rc(n, 0), rt(n, 0), alpha(n, s.rp.initial_alpha);
    std::vector<bool> started(n, false);
    double q = 0;  // bytes
    // Ring buffers of the last `lag` steps: p, and each flow's R_C.
    std::vector<double> p_hist(lag, 0);
    std::vector<double> rc_hist(std::size_t(n) * lag, 0);

    Series out;
    out.rate_bps.assign(n, {});
    const uint64_t sample_every = std::max<uint64_t>(1, uint64_t(std::llround(s.sample_s / dt)));

    std::vector<double> drc(n), drt(n), dal(n);
    for (uint64_t k = 0; k < steps; ++k) {
        const double t = double(k) * dt;
        for (unsigned i = 0; i < n; ++i) {
            if (!started[i] && t >= start_of(s, i)) {
                started[i] = true;
                rc[i] = rt[i] = u.line;
                alpha[i] = s.rp.initial_alpha;
            }
        }
        const std::size_t slot = k % lag;
        // The values tau* ago: the slot about to be overwritten (zeros
        // before the run, as before every flow's start).
        const double pd = p_hist[slot];
        const double p_now = red_probability(q, s.red);
        for (unsigned i = 0; i < n; ++i) {
            const double rd = rc_hist[std::size_t(i) * lag + slot];
            drc[i] = drt[i] = dal[i] = 0;
            if (!started[i]) continue;
            dal[i] = u.g / u.tau_p * (alpha_target(u, pd, rd) - alpha[i]);
            if (rd <= 0) continue;  // started less than tau* ago: hold
            const Terms m = terms(u, pd, rd);
            drt[i] = -(rt[i] - rc[i]) / u.tau * m.a + u.rai * rd * (m.c + m.e);
            drc[i] = -rc[i] * alpha[i] / (2 * u.tau) * m.a + (rt[i] - rc[i]) / 2 * rd * (m.b + m.d);
        }
        double sum = 0;
        for (unsigned i = 0; i < n; ++i) sum += rc[i];
        const double dq = (sum - u.cap) * s.packet_bytes;  // bytes per second

        // This step's values go into the history before the update.
        p_hist[slot] = p_now;
        for (unsigned i = 0; i < n; ++i) rc_hist[std::size_t(i) * lag + slot] = rc[i];

        for (unsigned i = 0; i < n; ++i) {
            if (!started[i]) continue;
            rc[i] = std::clamp(rc[i] + drc[i] * dt, u.min_rate, u.line);
            rt[i] = std::clamp(rt[i] + drt[i] * dt, u.min_rate, u.line);
            alpha[i] = std::clamp(alpha[i] + dal[i] * dt, 0.0, 1.0);
        }
        q = std::max(0.0, q + dq * dt);

        if ((k + 1) % sample_every == 0) {
            out.t_s.push_back(double(k + 1) * dt);
            for (unsigned i = 0; i < n; ++i) out.rate_bps[i].push_back(rc[i] * u.pkt_bits);
            out.queue_bytes.push_back(q);
        }
    }
    return out;
}

FixedPoint fixed_point(const Scenario& s) {
    const Units u = units_of(s);
    const double r = u.cap / s.flows;
    const double rhs = u.tau * u.tau * u.rai * r;
    auto f = [&](double p) {
        const Terms m = terms(u, p, r);
        return m.a * m.a * alpha_target(u, p, r) / ((m.b + m.d) * (m.c + m.e)) - rhs;
    };
    FixedPoint fp;
    double lo = 1e-12, hi = s.red.pmax;
    if (f(lo) > 0 || f(hi) < 0) return fp;
    for (int it = 0; it < 200; ++it) {
        const double mid = 0.5 * (lo + hi);
        (f(mid) < 0 ? lo : hi) = mid;
    }
    fp.p = 0.5 * (lo + hi);
    fp.queue_bytes = fp.p / s.red.pmax * (s.red.kmax_bytes - s.red.kmin_bytes) + s.red.kmin_bytes;
    fp.found = true;
    return fp;
}

}  // namespace simnic::congestion::fluid
