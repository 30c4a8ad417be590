// The DCQCN fluid model: the delay differential equations of Zhu et al.,
// "Congestion Control for Large-Scale RDMA Deployments", SIGCOMM 2015,
// section 4, in the per-flow form of Zhu et al., "ECN or Delay", CoNEXT
// 2016, section 3.2 (Figure: DCQCN fluid model; equations 1 to 5), for the
// N flows of a Scenario, integrated by a fixed-step method of ours.
//
// Per flow i, with p = p(t - tau*) and R' = R_C(i)(t - tau*), every rate in
// packets per second, B in packets:
//
//   p(t)        = RED(q(t))                                        (1)
//   dq/dt       = sum_i R_C(i)(t) - C                              (2)
//   dalpha/dt   = g/tau' ((1 - (1-p)^(tau' R')) - alpha)           (3)
//   dR_T/dt     = -(R_T - R_C)/tau a + R_AI R' c + R_AI R' e        (4)
//   dR_C/dt     = -R_C alpha/(2 tau) a + (R_T - R_C)/2 R' (b + d)  (5)
//
//   a = 1 - (1-p)^(tau R')                 a CNP within tau
//   b = p / ((1-p)^-B - 1)                  byte counter events per packet
//   c = b (1-p)^(F B)                       ... past fast recovery
//   d = p / ((1-p)^(-T R') - 1)             timer events per packet
//   e = d (1-p)^(F T R')                    ... past fast recovery
//
// tau is the NP's CNP interval N, tau' the alpha timer K, T the rate
// increase timer, F the fast recovery steps, R_AI the additive step. The
// model has no hyper increase (the authors omit it), and neither does this.
// As the authors' own integration (fluidmodel/dcqcn/dcqcn2.m) does, R_C and
// R_T stop at the line rate, the queue at 0, and a flow whose delayed rate
// is 0 (it started less than tau* ago) holds its rates. A flow before its
// start sends nothing; it starts at the line rate with R_T at the line rate
// and alpha at the RP's initial alpha.
#pragma once

#include "simnic/congestion/fluid/scenario.h"
#include "simnic/congestion/fluid/series.h"

namespace simnic::congestion::fluid {

struct FluidOptions {
    // The integration step, seconds. 0.1 us: well below every time
    // constant of the model (tau, tau', T are tens of microseconds) and a
    // fraction of tau*.
    double step_s = 1e-7;
};

// check(s) must be empty.
Series integrate_fluid(const Scenario& s, const FluidOptions& opt = {});

// The model's fixed point for N equal flows at C/N (CoNEXT 2016, section
// 3.3, Theorem "unique fixed point"): p* solves
//   a^2 alpha* / ((b + d)(c + e)) = tau^2 R_AI R_C*,
// with alpha* = 1 - (1-p*)^(tau' R_C*), and the queue sits at
//   q* = p*/Pmax (Kmax - Kmin) + Kmin.
struct FixedPoint {
    double p = 0;
    double queue_bytes = 0;
    bool found = false;  // false: no p* in (0, Pmax] (the queue would sit above Kmax)
};
FixedPoint fixed_point(const Scenario& s);

}  // namespace simnic::congestion::fluid
