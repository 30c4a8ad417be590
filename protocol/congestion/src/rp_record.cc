// Reaction points' state over time (rp_record.h).
#include "simnic/congestion/rp_record.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "simnic/base/time_bins.h"

namespace simnic::congestion {

namespace {
constexpr double kNone = std::numeric_limits<double>::quiet_NaN();
}  // namespace

// One source's reports, tagged with it.
class RpRecord::Source final : public RpObserver {
public:
    Source(RpRecord& r, uint32_t s) : r_(r), s_(s) {}
    void rp_begin(uint32_t id, uint64_t t_ns) override { r_.begin(s_, id, t_ns); }
    void rp_rate(uint32_t id, uint64_t t_ns, double rc, double rt) override { r_.rate(s_, id, t_ns, rc, rt); }
    void rp_alpha(uint32_t id, uint64_t t_ns, double a) override { r_.alpha(s_, id, t_ns, a); }
    void rp_end(uint32_t id, uint64_t t_ns) override { r_.end(s_, id, t_ns); }

private:
    RpRecord& r_;
    uint32_t s_;
};

RpRecord::RpRecord(uint64_t bin_ns, size_t max_cells) : bin_ns_(bin_ns), max_cells_(max_cells) {}
RpRecord::~RpRecord() = default;

RpObserver* RpRecord::source(uint32_t source) {
    sources_.push_back(std::make_unique<Source>(*this, source));
    return sources_.back().get();
}

void RpRecord::begin(uint32_t source, uint32_t id, uint64_t t_ns) {
    const auto key = std::make_pair(source, id);
    const auto at = current_.find(key);
    if (at != current_.end() && !kept_[at->second].ended) return;  // the same QP's RP built anew
    const uint64_t bin = t_ns / bin_ns_;
    Kept k{source, id, at == current_.end() ? 1 : kept_[at->second].life + 1, t_ns, bin, bin, false, 0, {}, {}, {}};
    current_[key] = kept_.size();
    kept_.push_back(std::move(k));
}

void RpRecord::end(uint32_t source, uint32_t id, uint64_t t_ns) {
    Kept* k = current(source, id);
    if (!k || k->ended) return;
    k->ended = true;
    k->end_ns = std::max(t_ns, k->begin_ns);
    k->last = std::max(k->last, k->end_ns / bin_ns_);
}

// The track an RP's reports go to: none once its QP has ended.
RpRecord::Kept* RpRecord::current(uint32_t source, uint32_t id) {
    const auto at = current_.find({source, id});
    return at == current_.end() || kept_[at->second].ended ? nullptr : &kept_[at->second];
}

void RpRecord::rate(uint32_t source, uint32_t id, uint64_t t_ns, double rc, double rt) {
    Kept* k = current(source, id);
    if (!k) return;  // told by an RP that never began: not ours to keep
    put(*k, &Kept::rc, t_ns, rc);
    put(*k, &Kept::rt, t_ns, rt);
}

void RpRecord::alpha(uint32_t source, uint32_t id, uint64_t t_ns, double a) {
    if (Kept* k = current(source, id)) put(*k, &Kept::alpha, t_ns, a);
}

void RpRecord::put(Kept& k, std::vector<double> Kept::*v, uint64_t t_ns, double x) {
    // An RP reports no time before its beginning; were one to, it counts
    // as its first bin.
    const uint64_t bin = std::max(t_ns / bin_ns_, k.first);
    std::vector<double>& b = k.*v;
    const size_t j = size_t(bin - k.first);
    if (j >= b.size()) {
        cells_ += j + 1 - b.size();
        b.resize(j + 1, kNone);
    }
    b[j] = x;
    k.last = std::max(k.last, bin);
    while (cells_ > max_cells_) halve();
}

// Bins 2i and 2i+1 of the record become bin i: the later one's value where
// it has one (the state at the merged bin's end), else the earlier one's.
// In place: bin t of a track is written only after every bin at or below t
// was read.
void RpRecord::halve() {
    cells_ = 0;
    for (Kept& k : kept_) {
        const uint64_t first = k.first / 2;
        for (std::vector<double>* v : {&k.rc, &k.rt, &k.alpha}) {
            if (v->empty()) continue;
            for (size_t j = 0; j < v->size(); ++j) {
                const uint64_t r = k.first + j;
                const size_t t = size_t(r / 2 - first);
                if (j == 0 || r % 2 == 0 || !std::isnan((*v)[j])) (*v)[t] = (*v)[j];
            }
            v->resize(size_t((k.first + v->size() - 1) / 2 - first + 1));
            cells_ += v->size();
        }
        k.first = first;
        k.last /= 2;
    }
    bin_ns_ *= 2;
}

RpRecord::Table RpRecord::table(uint64_t want_ns, size_t max_points, uint64_t now_ns) const {
    Table t;
    uint64_t span = now_ns / bin_ns_ + 1;  // the record's bins up to now's
    for (const Kept& k : kept_) span = std::max(span, k.last + 1);
    // Three numbers a track's bin: Rc, Rt, alpha.
    const uint64_t per = base::bins_per_table_bin(want_ns, bin_ns_, span, kept_.size(), max_points, 3);
    t.bin_ns = per * bin_ns_;
    if (kept_.empty()) return t;  // no RP has begun: nothing to show, not bins of nothing
    t.bins = size_t((span + per - 1) / per);
    for (const Kept& k : kept_) {
        const uint64_t end = k.ended ? k.last : span - 1;  // the record's last bin the QP existed in
        Track tr{k.source, k.id, k.life, k.begin_ns, k.ended, k.end_ns, {}, {}, {}};
        // Each output bin: the last value told at or before its end (or
        // the RP's end), if the RP existed within it.
        const auto out = [&](const std::vector<double>& v) {
            std::vector<double> o(t.bins, kNone);
            double last = kNone;
            size_t j = 0;
            for (size_t i = 0; i < t.bins; ++i) {
                const uint64_t lo = i * per, hi = std::min<uint64_t>((i + 1) * per - 1, end);
                if (lo > end) break;
                for (; j < v.size() && k.first + j <= hi; ++j)
                    if (!std::isnan(v[j])) last = v[j];
                if (hi >= k.first) o[i] = last;
            }
            return o;
        };
        tr.rc_bps = out(k.rc);
        tr.rt_bps = out(k.rt);
        tr.alpha = out(k.alpha);
        t.tracks.push_back(std::move(tr));
    }
    return t;
}

}  // namespace simnic::congestion
