// DCQCN's reaction point (RP): the sender's per-QP rate control, as
// published by Zhu et al., "Congestion Control for Large-Scale RDMA
// Deployments", SIGCOMM 2015, section 3.2 (the paper's names: Rc, Rt,
// alpha, g, K, T, B, F, R_AI, R_HAI), and restated by Zhu et al., "ECN or
// Delay: Lessons Learnt from Analysis of DCQCN and TIMELY", CoNEXT 2016,
// section 3.1 (its authors' LaTeX source, github.com/jitupadhye-zz/rdma,
// conext2016/dcqcn-protocol.tex), which says the increase works "in a
// manner identical to QCN".
//
// - On a CNP: Rt = Rc, Rc = Rc (1 - alpha/2), alpha = (1 - g) alpha + g;
//   the timer, the byte counter and their counts restart.
// - Every K without a CNP: alpha = (1 - g) alpha.
// - Every T (the timer) and every B bytes sent (the byte counter) while
//   rate-limited, one rate increase. Its stage follows from how often each
//   has fired since the last CNP (T_cnt, BC): fast recovery while both are
//   at most F (Rc = (Rt + Rc) / 2), hyper increase once both exceed F
//   (Rt += i R_HAI with i = min(T_cnt, BC) - F, then Rc = (Rt + Rc) / 2),
//   additive increase in between (Rt += R_AI, then Rc = (Rt + Rc) / 2).
//   The growing hyper step is QCN's hyperactive increase, as the DCQCN
//   authors' own simulator does it (github.com/bobzhuyb/ns3-rdma,
//   qbb-net-device.cc, rpr_hyper_increase: R_HAI times min(byte stage,
//   time stage) - F + 1, its stages counting from 0).
// - Rc and Rt never exceed the line rate nor fall below min_rate. Once Rc is
//   back at the line rate the QP is no longer rate-limited and the increase
//   timer stops.
//
// Pure logic with no clock of its own: every call passes the time in
// nanoseconds (monotonic; a time before the last one is taken as the last
// one), so that the soft engine and the cycle model share it. One DcqcnRp
// per QP; the requester's scheduler asks earliest_send_ns() before a packet
// leaves and reports it with on_bytes_sent().
#pragma once

#include <cstdint>

namespace simnic::congestion {

// Every parameter, with its default and where the default comes from. The
// defaults are DCQCN's as its authors publish them, not NVIDIA mlx5's: mlx5
// exposes the same knobs (drivers/infiniband/hw/mlx5/cong.c, named below)
// but its defaults come from the device's firmware and are not published
// with the driver, and the issue asks for DCQCN as published. The SIGCOMM
// 2015 paper itself could not be read here; each default cites where it was
// checked (docs/model.md, "Parameters", has the table):
//   [conext]  the CoNEXT 2016 paper's LaTeX source (jitupadhye-zz/rdma,
//             conext2016/), which restates the SIGCOMM paper's defaults;
//   [fluid.m] the same authors' fluid-model program (fluidmodel/dcqcn/
//             dcqcn2.m), its "DCQCN fixed parameters";
//   [ns3]     the DCQCN authors' ns-3 simulator released with the CoNEXT
//             paper (bobzhuyb/ns3-rdma), its sample mix/config.txt.
struct DcqcnConfig {
    // The port's line rate: Rc's and Rt's ceiling and their value before
    // any CNP. 100 Gb/s: issue 15's experiments. Set by the engine.
    double line_rate_bps = 100e9;
    // Rc's and Rt's floor. Not in the paper (there Rc halves at most once
    // per CNP and CNPs come at most every N); ours, 1 Mb/s, so that a
    // storm of CNPs cannot stall a QP. mlx5: rp_min_rate.
    double min_rate_bps = 1e6;
    // g, the gain of the alpha estimate: 1/256 ([fluid.m]; [ns3]
    // DCTCP_GAIN 0.00390625). mlx5: rp_dce_tcp_g.
    double g = 1.0 / 256;
    // alpha before the first CNP: 1, so that the first CNP halves the rate
    // ([fluid.m] starts every flow with alpha 1; the released ns-3 starts at
    // 0.5, HPCC's ns-3 sets 1 on the first CNP). mlx5:
    // rp_initial_alpha_value.
    double initial_alpha = 1.0;
    // K, the alpha timer (the fluid model's tau'): 55 us ([conext]: "the
    // default parameter settings given in [the SIGCOMM paper] set both the
    // Timer T and alpha update interval tau' equal to 55us"). mlx5:
    // rp_dce_tcp_rtt.
    uint64_t alpha_timer_ns = 55'000;
    // T, the rate increase timer: 55 us ([conext], as K). mlx5:
    // rp_time_reset.
    uint64_t rate_timer_ns = 55'000;
    // B, the byte counter: 10 MB, 10^7 bytes ([fluid.m]: B = 10e6 bytes,
    // "10MB"). mlx5: rp_byte_reset. 0 turns the byte counter off.
    uint64_t byte_counter_bytes = 10'000'000;
    // F, the fast recovery steps: 5 ([conext]: "fixed at 5"). mlx5:
    // rp_threshold.
    unsigned fast_recovery_steps = 5;
    // R_AI, the additive increase step: 40 Mb/s ([conext]: "fixed at
    // 40Mbps"). mlx5: rp_ai_rate.
    double rai_bps = 40e6;
    // R_HAI, the hyper increase step: 200 Mb/s ([ns3]: RATE_HAI 200Mb/s
    // beside RATE_AI 40Mb/s). Not verified against the SIGCOMM paper,
    // which the sources read here do not quote for it. The i-th hyper
    // increase since the last CNP adds i R_HAI (see above). mlx5:
    // rp_hai_rate.
    double rhai_bps = 200e6;
    // Pace at the line rate too, not only below it: each packet waits for
    // Rc's gap even before the first CNP. A NIC's rate limiter sits before
    // its TX queue, so a CNP slows the very next packet; a requester that
    // builds a doorbell's packets at once and leaves the pace to the MAC
    // queues up to its whole window ahead of the limiter, and a CNP slows
    // only what comes after that (docs/model.md, the 2:1 transient). Set
    // by the engine in a fabric, where protocol time is simulated time;
    // off on a host's UDP path, which has no line rate to keep and where a
    // timer per packet would only cost.
    bool pace_line_rate = false;
};

// nullptr if the configuration is usable, else what is wrong with it.
const char* check(const DcqcnConfig& cfg);

// Which rate increase the next timer or byte counter event makes.
enum class IncreaseStage : uint8_t { FastRecovery, Additive, Hyper };
const char* to_string(IncreaseStage s);

// For `simnic stats`: what the RP did.
struct RpCounters {
    uint64_t cnps_received = 0;
    uint64_t alpha_decays = 0;          // K expiries without a CNP
    uint64_t fast_recovery_steps = 0;
    uint64_t additive_steps = 0;
    uint64_t hyper_steps = 0;
    uint64_t rate_limited_ns = 0;       // time spent with Rc below the line rate
};

// Told every change of a reaction point's state, at the time it takes
// effect (`simnic fabric dcqcn` records them: congestion/rp_record.h). A
// QP's Rc, Rt and alpha over time then come from the RP itself, exactly,
// with no one polling it at every bin. Alpha and the rates change on
// separate timers and advance() catches up on the alpha timer first, so
// each kind of call comes in time order, but a rate call may come after an
// alpha call of a later time. Called under whatever guards the RP.
class RpObserver {
public:
    virtual ~RpObserver() = default;
    // RP `id` exists from `t_ns` (its state follows at once). A QP's RP
    // may begin again while the QP lives (an engine builds its transport
    // core anew at INIT and at RTR): one life until rp_end.
    virtual void rp_begin(uint32_t id, uint64_t t_ns) = 0;
    virtual void rp_rate(uint32_t id, uint64_t t_ns, double rc_bps, double rt_bps) = 0;
    virtual void rp_alpha(uint32_t id, uint64_t t_ns, double alpha) = 0;
    // Its QP is gone (not told by the RP: its owner knows when).
    virtual void rp_end(uint32_t id, uint64_t t_ns) = 0;
};

class DcqcnRp {
public:
    // A QP that starts at line rate at `now_ns`. check(cfg) must pass.
    explicit DcqcnRp(const DcqcnConfig& cfg = {}, uint64_t now_ns = 0);

    // From now on, every change is told to `o` (null: no one) as RP `id`,
    // first rp_begin and the state at the last time given to the RP.
    void observe(RpObserver* o, uint32_t id);

    // Runs the alpha timer and the rate increase timer up to `now_ns`.
    void advance(uint64_t now_ns);
    // A CNP for this QP arrived.
    void on_cnp(uint64_t now_ns);
    // A packet of `bytes` left at `now_ns` (the byte counter and the rate
    // limiter count it).
    void on_bytes_sent(uint64_t bytes, uint64_t now_ns);

    // The rate limiter: the earliest time a packet of `bytes` may leave, so
    // that each packet follows the previous one by its own size at Rc. No
    // earlier than `now_ns`; at `now_ns` for the first packet.
    uint64_t earliest_send_ns(uint64_t bytes, uint64_t now_ns) const;

    double rate_bps() const { return rc_; }          // Rc
    double target_rate_bps() const { return rt_; }   // Rt
    double alpha() const { return alpha_; }
    bool rate_limited() const { return limited_; }
    // The stage of the next rate increase (FastRecovery when not limited).
    IncreaseStage stage() const;
    unsigned timer_count() const { return t_cnt_; }  // T_cnt since the last CNP
    unsigned byte_count() const { return bc_; }      // BC since the last CNP
    const RpCounters& counters() const { return counters_; }
    const DcqcnConfig& config() const { return cfg_; }

private:
    void rate_increase();
    void clamp();
    void tell_rate() const {
        if (observer_) observer_->rp_rate(id_, now_ns_, rc_, rt_);
    }

    DcqcnConfig cfg_;
    double rc_;
    double rt_;
    double alpha_;
    bool limited_ = false;
    uint64_t now_ns_;
    uint64_t next_alpha_ns_;
    uint64_t next_rate_ns_ = 0;  // meaningful while limited_
    uint64_t bytes_ = 0;         // toward the next byte counter event
    unsigned t_cnt_ = 0;
    unsigned bc_ = 0;
    bool sent_any_ = false;
    uint64_t last_send_ns_ = 0;
    RpCounters counters_;
    RpObserver* observer_ = nullptr;
    uint32_t id_ = 0;
};

}  // namespace simnic::congestion
