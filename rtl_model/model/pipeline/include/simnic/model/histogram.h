// A latency histogram of fixed size and O(1) insertion, for the time items
// spend in each pipeline stage (Pipeline::stats(), "stage.*").
//
// Log-linear buckets, as HdrHistogram has them: values below 2^kSubBits are
// counted exactly, larger ones in 2^kSubBits buckets per power of two, so a
// quantile is within 1 / 2^kSubBits (0.8 %) of the true value. min() and
// max() are exact, and a quantile is clamped to them, so a stage whose items
// all take the same time reports that time exactly. Plain C++.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace simnic::model {

class Histogram {
public:
    static constexpr unsigned kSubBits = 7;

    void add(uint64_t v) {  // inline: one per item per stage
        const size_t b = bucket(v);
        if (b >= counts_.size()) grow(b);
        ++counts_[b];
        if (v < min_ || n_ == 0) min_ = v;
        if (v > max_) max_ = v;
        sum_ += v;
        ++n_;
    }
    void clear();
    uint64_t count() const { return n_; }
    uint64_t min() const { return n_ ? min_ : 0; }
    uint64_t max() const { return max_; }
    uint64_t sum() const { return sum_; }
    // The value of rank min(n - 1, floor(f * n)) in sorted order (the
    // convention of the message latency's exact quantiles); 0 when empty.
    uint64_t quantile(double f) const;

private:
    // Bucket b < 2^kSubBits holds exactly b. Above: the power of two 2^e
    // (e >= kSubBits) is cut into 2^kSubBits buckets of width 2^(e - kSubBits).
    static size_t bucket(uint64_t v) {
        constexpr uint64_t kSub = uint64_t{1} << kSubBits;
        if (v < kSub) return size_t(v);
        const unsigned shift = 63u - unsigned(__builtin_clzll(v)) - kSubBits;
        return size_t((uint64_t(shift) + 1) * kSub + ((v >> shift) - kSub));
    }
    void grow(size_t b);
    static uint64_t bucket_low(size_t b);
    static uint64_t bucket_high(size_t b);  // inclusive

    std::vector<uint64_t> counts_;  // grown to the largest bucket used
    uint64_t n_ = 0, min_ = 0, max_ = 0, sum_ = 0;
};

}  // namespace simnic::model
