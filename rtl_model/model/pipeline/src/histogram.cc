#include "simnic/model/histogram.h"

#include <algorithm>

namespace simnic::model {

namespace {
constexpr uint64_t kSub = uint64_t{1} << Histogram::kSubBits;
}  // namespace

uint64_t Histogram::bucket_low(size_t b) {
    if (b < kSub) return b;
    const uint64_t shift = b / kSub - 1, mant = kSub + b % kSub;
    return mant << shift;
}

uint64_t Histogram::bucket_high(size_t b) {
    if (b < kSub) return b;
    const uint64_t shift = b / kSub - 1;
    return bucket_low(b) + ((uint64_t{1} << shift) - 1);
}

void Histogram::grow(size_t b) { counts_.resize(b + 1, 0); }

void Histogram::clear() {
    counts_.clear();
    n_ = min_ = max_ = sum_ = 0;
}

uint64_t Histogram::quantile(double f) const {
    if (n_ == 0) return 0;
    const uint64_t rank = std::min<uint64_t>(n_ - 1, uint64_t(f * double(n_)));
    uint64_t seen = 0;
    for (size_t b = 0; b < counts_.size(); ++b) {
        seen += counts_[b];
        if (seen > rank) {
            // The middle of the bucket, within what was seen.
            const uint64_t lo = bucket_low(b), hi = bucket_high(b);
            return std::clamp(lo + (hi - lo) / 2, min_, max_);
        }
    }
    return max_;
}

}  // namespace simnic::model
