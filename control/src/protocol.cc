#include "simnic/control/protocol.h"

#include <errno.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <vector>

namespace simnic::control {

std::string send_message(int fd, const Json& msg, const std::vector<int>& fds) {
    const std::string s = msg.dump();
    if (s.size() > kMaxMessageBytes) return "message too large";
    if (fds.size() > kMaxFdsPerMessage) return "too many descriptors";
    iovec iov{const_cast<char*>(s.data()), s.size()};
    msghdr mh{};
    mh.msg_iov = &iov;
    mh.msg_iovlen = 1;
    alignas(cmsghdr) char ctl[CMSG_SPACE(sizeof(int) * kMaxFdsPerMessage)] = {};
    if (!fds.empty()) {
        mh.msg_control = ctl;
        mh.msg_controllen = CMSG_SPACE(sizeof(int) * fds.size());
        cmsghdr* c = CMSG_FIRSTHDR(&mh);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
        std::memcpy(CMSG_DATA(c), fds.data(), sizeof(int) * fds.size());
    }
    ssize_t n;
    do n = sendmsg(fd, &mh, MSG_NOSIGNAL);
    while (n < 0 && errno == EINTR);
    if (n < 0) return std::string("send: ") + std::strerror(errno);
    return {};
}

std::string recv_message(int fd, Json& msg, int timeout_ms, std::vector<int>* fds) {
    pollfd pfd{fd, POLLIN, 0};
    int r;
    do r = poll(&pfd, 1, timeout_ms);
    while (r < 0 && errno == EINTR);
    if (r == 0) return "timed out waiting for the daemon";
    if (r < 0) return std::string("poll: ") + std::strerror(errno);
    std::vector<char> buf(kMaxMessageBytes);
    iovec iov{buf.data(), buf.size()};
    msghdr mh{};
    mh.msg_iov = &iov;
    mh.msg_iovlen = 1;
    alignas(cmsghdr) char ctl[CMSG_SPACE(sizeof(int) * kMaxFdsPerMessage)] = {};
    mh.msg_control = ctl;
    mh.msg_controllen = sizeof ctl;
    ssize_t n;
    do n = recvmsg(fd, &mh, MSG_TRUNC | MSG_CMSG_CLOEXEC);
    while (n < 0 && errno == EINTR);
    if (n < 0) return std::string("recv: ") + std::strerror(errno);
    // Descriptors arrive even with an empty or bad message: take or close them.
    for (cmsghdr* c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
        const size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (size_t i = 0; i < k; ++i) {
            int rfd;
            std::memcpy(&rfd, CMSG_DATA(c) + i * sizeof(int), sizeof rfd);
            if (fds) fds->push_back(rfd);
            else close(rfd);
        }
    }
    if (n == 0) return "connection closed";
    if (static_cast<size_t>(n) > buf.size()) return "message too large";
    msg = Json::parse(buf.begin(), buf.begin() + n, nullptr, false);
    if (msg.is_discarded() || !msg.is_object()) return "malformed message";
    return {};
}

Json reply_ok() { return Json{{"ok", true}}; }

Json reply_error(int err, const std::string& message) {
    return Json{{"ok", false}, {"errno", err}, {"error", message}};
}

}  // namespace simnic::control
