// The ports' MAC TX (tx_queue.h): one sendmmsg per run of frames on a
// socket, a UDP GSO message per run of equal-sized frames where allowed.
#include "tx_queue.h"

#include <netinet/in.h>
#include <netinet/udp.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>

#ifndef UDP_SEGMENT
#define UDP_SEGMENT 103  // linux/udp.h, since Linux 4.18
#endif

namespace simnic::soft_engine {

namespace {

// The kernel's limits on one GSO send (UDP_MAX_SEGMENTS in Linux 4.18 to
// 6.x is 64) and on a UDP datagram's payload (IPv4's 16-bit total length;
// IPv6's payload length, which counts the UDP header too).
constexpr size_t kMaxSegments = 64;
static_assert(TxQueue::kBatch >= kMaxSegments, "a batch must hold a whole GSO send's run of frames");
constexpr size_t kMaxGsoBytes4 = 65535 - 20 - 8;
constexpr size_t kMaxGsoBytes6 = 65535 - 8;

bool same_dst(const TxFrame& a, const TxFrame& b) {
    return a.dst_len == b.dst_len && std::memcmp(&a.dst, &b.dst, a.dst_len) == 0;
}

}  // namespace

TxFrame& TxQueue::next() {
    if (n_ == q_.size()) q_.emplace_back();
    return q_[n_++];
}

size_t TxQueue::gso_run(size_t i, size_t end) const {
    const TxFrame& f = q_[i];
    if (!gso_ || !f.gso) return 1;
    const size_t seg = f.len, cap = f.v6 ? kMaxGsoBytes6 : kMaxGsoBytes4;
    size_t j = i + 1, bytes = seg;
    // Equal sizes, the last one no larger (the kernel's rule for a GSO
    // send), the same destination and TOS: the datagrams it is cut into
    // are then these frames, each with its own UDP header.
    while (j < end && j - i < kMaxSegments) {
        const TxFrame& g = q_[j];
        if (!g.gso || g.fd != f.fd || g.tos != f.tos || g.v6 != f.v6 || !same_dst(f, g) ||
            g.len > seg || bytes + g.len > cap)
            break;
        bytes += g.len;
        ++j;
        if (g.len < seg) break;  // a shorter one ends the run
    }
    return j - i;
}

void TxQueue::flush() {
    mmsghdr msgs[kBatch];
    iovec ivs[kBatch];
    size_t first[kBatch], count[kBatch];  // each message's frames
    // Each message's control data: IP_TOS / IPV6_TCLASS when the frame has
    // a TOS, UDP_SEGMENT when it is a GSO send.
    union Ctl {
        cmsghdr align;
        char buf[CMSG_SPACE(sizeof(int)) + CMSG_SPACE(sizeof(uint16_t))];
    };
    Ctl ctls[kBatch];
    size_t i = 0;
    while (i < n_) {
        // One sendmmsg per run of frames on the same socket.
        size_t end = i;
        while (end < n_ && end - i < kBatch && q_[end].fd == q_[i].fd) ++end;
        size_t nm = 0;
        for (size_t k = i; k < end; ++nm) {
            const size_t run = gso_run(k, end);
            TxFrame& t = q_[k];
            for (size_t r = 0; r < run; ++r) ivs[k - i + r] = iovec{const_cast<uint8_t*>(q_[k + r].bytes()), q_[k + r].len};
            mmsghdr& m = msgs[nm];
            m = mmsghdr{};
            m.msg_hdr.msg_name = t.dst_len ? &t.dst : nullptr;
            m.msg_hdr.msg_namelen = t.dst_len;
            m.msg_hdr.msg_iov = &ivs[k - i];
            m.msg_hdr.msg_iovlen = run;
            first[nm] = k;
            count[nm] = run;
            if (t.tos || run > 1) {
                Ctl& c = ctls[nm];
                std::memset(c.buf, 0, sizeof c.buf);
                m.msg_hdr.msg_control = c.buf;
                m.msg_hdr.msg_controllen = (t.tos ? CMSG_SPACE(sizeof(int)) : 0) +
                                           (run > 1 ? CMSG_SPACE(sizeof(uint16_t)) : 0);
                cmsghdr* cm = CMSG_FIRSTHDR(&m.msg_hdr);
                if (t.tos) {
                    cm->cmsg_level = t.v6 ? IPPROTO_IPV6 : IPPROTO_IP;
                    cm->cmsg_type = t.v6 ? IPV6_TCLASS : IP_TOS;
                    cm->cmsg_len = CMSG_LEN(sizeof(int));
                    const int v = t.tos;
                    std::memcpy(CMSG_DATA(cm), &v, sizeof v);
                    cm = CMSG_NXTHDR(&m.msg_hdr, cm);
                }
                if (run > 1) {
                    cm->cmsg_level = SOL_UDP;
                    cm->cmsg_type = UDP_SEGMENT;
                    cm->cmsg_len = CMSG_LEN(sizeof(uint16_t));
                    const uint16_t seg = uint16_t(t.len);
                    std::memcpy(CMSG_DATA(cm), &seg, sizeof seg);
                }
            }
            k += run;
        }
        const int sent = sendmmsg(q_[i].fd, msgs, unsigned(nm), MSG_DONTWAIT);
        const int err = sent < 0 ? errno : 0;
        size_t done = 0;  // messages accounted for
        for (; done < nm && sent >= 0 && done < size_t(sent); ++done) {
            size_t bytes = 0;
            for (size_t r = 0; r < count[done]; ++r) bytes += q_[first[done] + r].len;
            const bool ok = msgs[done].msg_len == bytes;
            for (size_t r = 0; r < count[done]; ++r) sent_(q_[first[done] + r], ok);
        }
        if (sent > 0 && done < nm) {
            // A message after the first failed, and sendmmsg does not say
            // why (errno is not set): the rest go again, so that the failing
            // one is first and its error is reported.
            i = first[done];
            continue;
        }
        if (done < nm && count[done] > 1 && (err == EIO || err == EINVAL || err == ENOPROTOOPT || err == EOPNOTSUPP)) {
            // The path cannot take a GSO send (a device without checksum
            // offload, an old kernel): from here on every frame goes alone.
            gso_ = false;
            gso_refused_ = true;
            i = first[done];
            continue;
        }
        for (; done < nm; ++done)
            for (size_t r = 0; r < count[done]; ++r) sent_(q_[first[done] + r], false);
        i = end;
    }
    n_ = 0;
}

}  // namespace simnic::soft_engine
