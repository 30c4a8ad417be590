// A FIFO on one array that doubles when full and never shrinks, for queues
// on a hot path: once it has been as full as it gets, pushing and popping
// allocate nothing. std::deque gives a block back and takes one again every
// few items, and takes one per item for items larger than its block (a send
// WQE's entry, a frame's record). An item leaves moved out and its slot is
// reset, so that nothing it held (a shared_ptr) lingers in the ring.
// Random access from the front, as a deque's; references last until the
// next push_back (which may grow the array).
#pragma once

#include <cstddef>
#include <utility>
#include <vector>

namespace simnic::base {

template <typename T>
class Ring {
public:
    bool empty() const { return n_ == 0; }
    std::size_t size() const { return n_; }
    T& operator[](std::size_t i) { return buf_[(head_ + i) & (buf_.size() - 1)]; }
    const T& operator[](std::size_t i) const { return buf_[(head_ + i) & (buf_.size() - 1)]; }
    T& front() { return (*this)[0]; }
    const T& front() const { return (*this)[0]; }
    const T& back() const { return (*this)[n_ - 1]; }
    void push_back(T v) {
        if (n_ == buf_.size()) grow();
        (*this)[n_] = std::move(v);
        ++n_;
    }
    T pop_front() {
        T v = std::move(front());
        drop_front();
        return v;
    }
    // pop_front() for an item not wanted any more.
    void drop_front() {
        front() = T{};
        head_ = (head_ + 1) & (buf_.size() - 1);
        --n_;
    }

private:
    void grow() {
        std::vector<T> b(buf_.empty() ? 4 : buf_.size() * 2);  // a power of two
        for (std::size_t i = 0; i < n_; ++i) b[i] = std::move((*this)[i]);
        buf_ = std::move(b);
        head_ = 0;
    }
    std::vector<T> buf_;
    std::size_t head_ = 0, n_ = 0;
};

}  // namespace simnic::base
