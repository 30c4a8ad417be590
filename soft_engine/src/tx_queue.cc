// The ports' MAC TX (tx_queue.h): one sendmmsg per run of frames on a
// socket.
#include "tx_queue.h"

#include <sys/socket.h>

namespace simnic::soft_engine {

TxFrame& TxQueue::next() {
    if (n_ == q_.size()) q_.emplace_back();
    return q_[n_++];
}

void TxQueue::flush() {
    mmsghdr msgs[kBatch];
    iovec ivs[kBatch];
    size_t i = 0;
    while (i < n_) {
        // One sendmmsg per run of frames on the same socket.
        size_t j = i;
        while (j < n_ && j - i < kBatch && q_[j].fd == q_[i].fd) {
            TxFrame& t = q_[j];
            ivs[j - i] = iovec{t.data.data(), t.data.size()};
            msgs[j - i] = mmsghdr{};
            msgs[j - i].msg_hdr.msg_name = t.dst_len ? &t.dst : nullptr;
            msgs[j - i].msg_hdr.msg_namelen = t.dst_len;
            msgs[j - i].msg_hdr.msg_iov = &ivs[j - i];
            msgs[j - i].msg_hdr.msg_iovlen = 1;
            ++j;
        }
        const int sent = sendmmsg(q_[i].fd, msgs, unsigned(j - i), MSG_DONTWAIT);
        for (size_t k = i; k < j; ++k)
            sent_(q_[k], sent >= 0 && k - i < size_t(sent) && msgs[k - i].msg_len == q_[k].data.size());
        i = j;
    }
    n_ = 0;
}

}  // namespace simnic::soft_engine
