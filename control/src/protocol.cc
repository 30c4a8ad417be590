#include "simnic/control/protocol.h"

#include <errno.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

namespace simnic::control {

size_t message_capacity(int fd) {
    int sndbuf = 0;
    socklen_t len = sizeof sndbuf;
    if (getsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, &len) != 0 || sndbuf <= 32) return kMaxMessageBytes;
    // net/unix/af_unix.c refuses a datagram longer than sk_sndbuf - 32.
    return std::min(kMaxMessageBytes, static_cast<size_t>(sndbuf) - 32);
}

void widen_send_buffer(int fd) {
    // The kernel doubles what it is asked for (half is its own overhead).
    const int want = int(kMaxMessageBytes / 2 + 4096);
    setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &want, sizeof want);
}

std::string send_message(int fd, const Json& msg, const std::vector<int>& fds) {
    // Replace, not throw, should a string ever hold bad UTF-8: a reply must
    // always go out.
    const std::string s = msg.dump(-1, ' ', false, Json::error_handler_t::replace);
    if (s.size() > kMaxMessageBytes) return "message too large";
    if (fds.size() > kMaxFdsPerMessage) return "too many descriptors";
    const int e = send_raw(fd, s, fds);
    if (e == EMSGSIZE) return "message too large";  // longer than the socket's buffer takes (message_capacity)
    if (e != 0) return std::string("send: ") + std::strerror(e);
    return {};
}

int send_raw(int fd, const std::string& bytes, const std::vector<int>& fds, int flags) {
    iovec iov{const_cast<char*>(bytes.data()), bytes.size()};
    msghdr mh{};
    mh.msg_iov = &iov;
    mh.msg_iovlen = 1;
    // cmsghdr-aligned room for every descriptor (none: no control message).
    std::vector<cmsghdr> ctl((CMSG_SPACE(sizeof(int) * fds.size()) + sizeof(cmsghdr) - 1) / sizeof(cmsghdr));
    if (!fds.empty()) {
        mh.msg_control = ctl.data();
        mh.msg_controllen = CMSG_SPACE(sizeof(int) * fds.size());
        cmsghdr* c = CMSG_FIRSTHDR(&mh);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
        std::memcpy(CMSG_DATA(c), fds.data(), sizeof(int) * fds.size());
    }
    ssize_t n;
    do n = sendmsg(fd, &mh, flags | MSG_NOSIGNAL);
    while (n < 0 && errno == EINTR);
    if (n < 0) return errno;
    return n == static_cast<ssize_t>(bytes.size()) ? 0 : EMSGSIZE;
}

int recv_raw(int fd, RawMessage& m, int timeout_ms) {
    m = RawMessage{};
    pollfd pfd{fd, POLLIN, 0};
    int r;
    do r = poll(&pfd, 1, timeout_ms);
    while (r < 0 && errno == EINTR);
    if (r == 0) return ETIMEDOUT;
    if (r < 0) return errno;
    // One buffer per thread, allocated once and never cleared: a message is
    // at most kMaxMessageBytes, and most are a few hundred bytes.
    thread_local std::unique_ptr<char[]> buf(new char[kMaxMessageBytes]);
    iovec iov{buf.get(), kMaxMessageBytes};
    msghdr mh{};
    mh.msg_iov = &iov;
    mh.msg_iovlen = 1;
    alignas(cmsghdr) char ctl[CMSG_SPACE(sizeof(int) * kMaxFdsPerMessage)] = {};
    mh.msg_control = ctl;
    mh.msg_controllen = sizeof ctl;
    ssize_t n;
    do n = recvmsg(fd, &mh, MSG_TRUNC | MSG_CMSG_CLOEXEC);
    while (n < 0 && errno == EINTR);
    if (n < 0) return errno;
    // Descriptors arrive even with an empty or bad message: take them all.
    for (cmsghdr* c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
        const size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (size_t i = 0; i < k; ++i) {
            int rfd;
            std::memcpy(&rfd, CMSG_DATA(c) + i * sizeof(int), sizeof rfd);
            m.fds.push_back(rfd);
        }
    }
    m.too_many_fds = (mh.msg_flags & MSG_CTRUNC) != 0;
    if (n == 0) return ECONNRESET;
    m.too_long = static_cast<size_t>(n) > kMaxMessageBytes;
    m.bytes.assign(buf.get(), std::min(static_cast<size_t>(n), kMaxMessageBytes));
    return 0;
}

std::string parse_message(const std::string& bytes, Json& out) {
    out = Json::parse(bytes, nullptr, false);
    if (out.is_discarded()) return "the request is not valid JSON in UTF-8";
    if (!out.is_object()) return "the request is not a JSON object";
    return {};
}

std::string recv_message(int fd, Json& msg, int timeout_ms, std::vector<int>* fds) {
    RawMessage m;
    const int e = recv_raw(fd, m, timeout_ms);
    for (int f : m.fds) {
        if (fds) fds->push_back(f);
        else close(f);
    }
    if (e == ETIMEDOUT) return "timed out waiting for the daemon";
    if (e == ECONNRESET) return "connection closed";
    if (e != 0) return std::string("recv: ") + std::strerror(e);
    if (m.too_long) return "message too large";
    if (!parse_message(m.bytes, msg).empty()) return "malformed message";
    return {};
}

Json reply_ok() { return Json{{"ok", true}}; }

Json reply_error(int err, const std::string& message) {
    return Json{{"ok", false}, {"errno", err}, {"error", message}};
}

}  // namespace simnic::control
