#include "simnic/daemon/protocol.h"

#include <errno.h>
#include <poll.h>
#include <sys/socket.h>

#include <cstring>
#include <vector>

namespace simnic::daemon {

std::string send_message(int fd, const Json& msg) {
    const std::string s = msg.dump();
    if (s.size() > kMaxMessageBytes) return "message too large";
    ssize_t n;
    do n = send(fd, s.data(), s.size(), MSG_NOSIGNAL);
    while (n < 0 && errno == EINTR);
    if (n < 0) return std::string("send: ") + std::strerror(errno);
    return {};
}

std::string recv_message(int fd, Json& msg, int timeout_ms) {
    pollfd pfd{fd, POLLIN, 0};
    int r;
    do r = poll(&pfd, 1, timeout_ms);
    while (r < 0 && errno == EINTR);
    if (r == 0) return "timed out waiting for the daemon";
    if (r < 0) return std::string("poll: ") + std::strerror(errno);
    std::vector<char> buf(kMaxMessageBytes);
    ssize_t n;
    do n = recv(fd, buf.data(), buf.size(), MSG_TRUNC);
    while (n < 0 && errno == EINTR);
    if (n < 0) return std::string("recv: ") + std::strerror(errno);
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

}  // namespace simnic::daemon
