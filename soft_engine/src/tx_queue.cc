// The ports' MAC TX (tx_queue.h): one sendmmsg per run of frames on a
// socket.
#include "tx_queue.h"

#include <netinet/in.h>
#include <sys/socket.h>

#include <cstring>

namespace simnic::soft_engine {

TxFrame& TxQueue::next() {
    if (n_ == q_.size()) q_.emplace_back();
    return q_[n_++];
}

void TxQueue::flush() {
    mmsghdr msgs[kBatch];
    iovec ivs[kBatch];
    // One IP_TOS / IPV6_TCLASS control message per frame that needs one.
    union Ctl {
        cmsghdr align;
        char buf[CMSG_SPACE(sizeof(int))];
    };
    Ctl ctls[kBatch];
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
            if (t.tos) {
                Ctl& c = ctls[j - i];
                std::memset(c.buf, 0, sizeof c.buf);
                msgs[j - i].msg_hdr.msg_control = c.buf;
                msgs[j - i].msg_hdr.msg_controllen = sizeof c.buf;
                cmsghdr* cm = CMSG_FIRSTHDR(&msgs[j - i].msg_hdr);
                cm->cmsg_level = t.v6 ? IPPROTO_IPV6 : IPPROTO_IP;
                cm->cmsg_type = t.v6 ? IPV6_TCLASS : IP_TOS;
                cm->cmsg_len = CMSG_LEN(sizeof(int));
                const int v = t.tos;
                std::memcpy(CMSG_DATA(cm), &v, sizeof v);
            }
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
