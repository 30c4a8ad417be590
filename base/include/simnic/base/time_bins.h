// Records of values in bins of time that stay within a bound, and the
// tables read from them (`simnic fabric rates`, `depth` and `dcqcn`).
//
// Such a record keeps a series of bins per flow, queue or reaction point.
// At its bound, every series' bins merge in pairs and the bin doubles, so
// a long run keeps its whole history, more coarsely; how two bins merge is
// the record's own (bytes add, a peak is the deeper, a state is the later).
// A table is read in bins of a width the reader asks for, rounded up to
// whole bins of the record and widened until all series together fit in
// the numbers the reader can take.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace simnic::base {

// Bins 2i and 2i+1 of `v` become bin i, merge(earlier, later); an odd last
// bin stays whole. In place: bin i is written only after bins i and below
// were read.
template <class T, class Merge>
void merge_bin_pairs(std::vector<T>& v, Merge merge) {
    for (std::size_t i = 0; i < v.size(); ++i) v[i / 2] = i % 2 ? merge(v[i / 2], v[i]) : v[i];
    v.resize((v.size() + 1) / 2);
}

// How many of a record's bins (`bin` wide) make one bin of a table: at
// least `want` wide, and few enough bins that `series` series over `span`
// of the record's bins hold at most `max_points` numbers (`numbers_per_bin`
// in each series' bin). Never 0.
inline std::uint64_t bins_per_table_bin(std::uint64_t want, std::uint64_t bin, std::uint64_t span,
                                        std::size_t series, std::size_t max_points,
                                        std::size_t numbers_per_bin = 1) {
    std::uint64_t per = std::max<std::uint64_t>(1, (want + bin - 1) / bin);
    if (series == 0) return per;
    const std::uint64_t most = std::max<std::uint64_t>(1, max_points / (numbers_per_bin * series));
    return std::max(per, (span + most - 1) / most);
}

}  // namespace simnic::base
