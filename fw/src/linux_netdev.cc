// SPDX-License-Identifier: Apache-2.0
#include "simnic/fw/linux_netdev.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <linux/neighbour.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <utility>

#include "simnic/fw/gid.h"

namespace simnic::fw {

namespace {

class Fd {
public:
    explicit Fd(int fd) : fd_(fd) {}
    ~Fd() {
        if (fd_ >= 0) ::close(fd_);
    }
    Fd(const Fd&) = delete;
    Fd& operator=(const Fd&) = delete;
    int get() const { return fd_; }

private:
    int fd_;
};

bool ifreq_for(const std::string& name, ifreq& ifr) {
    if (name.empty() || name.size() >= IFNAMSIZ) return false;
    std::memset(&ifr, 0, sizeof ifr);
    std::memcpy(ifr.ifr_name, name.data(), name.size());
    return true;
}

// One rtnetlink neighbour dump for `family`; the MAC of `addr` on `ifindex`.
std::optional<Mac> neigh_lookup(int family, const std::uint8_t* addr, std::size_t alen,
                                int ifindex) {
    Fd s(::socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE));
    if (s.get() < 0) return std::nullopt;
    struct {
        nlmsghdr nh;
        ndmsg nd;
    } req{};
    req.nh.nlmsg_len = NLMSG_LENGTH(sizeof(ndmsg));
    req.nh.nlmsg_type = RTM_GETNEIGH;
    req.nh.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
    req.nh.nlmsg_seq = 1;
    req.nd.ndm_family = static_cast<std::uint8_t>(family);
    if (::send(s.get(), &req, req.nh.nlmsg_len, 0) < 0) return std::nullopt;

    constexpr std::uint16_t kUsable = NUD_REACHABLE | NUD_STALE | NUD_DELAY | NUD_PROBE |
                                      NUD_PERMANENT | NUD_NOARP;
    std::optional<Mac> found;
    alignas(nlmsghdr) char buf[16384];
    for (;;) {
        const ssize_t len = ::recv(s.get(), buf, sizeof buf, 0);
        if (len <= 0) return found;
        const auto total = static_cast<std::size_t>(len);
        for (std::size_t off = 0; off + sizeof(nlmsghdr) <= total;) {
            auto* nh = reinterpret_cast<nlmsghdr*>(buf + off);
            if (nh->nlmsg_len < sizeof(nlmsghdr) || nh->nlmsg_len > total - off) break;
            off += NLMSG_ALIGN(nh->nlmsg_len);
            if (nh->nlmsg_type == NLMSG_DONE || nh->nlmsg_type == NLMSG_ERROR) return found;
            if (nh->nlmsg_type != RTM_NEWNEIGH || nh->nlmsg_len < NLMSG_LENGTH(sizeof(ndmsg))) continue;
            const auto* nd = static_cast<const ndmsg*>(NLMSG_DATA(nh));
            if (nd->ndm_ifindex != ifindex || (nd->ndm_state & kUsable) == 0) continue;
            const std::uint8_t* dst = nullptr;
            const std::uint8_t* ll = nullptr;
            std::size_t dlen = 0, llen = 0;
            int alen_left = static_cast<int>(nh->nlmsg_len - NLMSG_LENGTH(sizeof(ndmsg)));
            for (auto* a = reinterpret_cast<rtattr*>(reinterpret_cast<char*>(NLMSG_DATA(nh)) +
                                                     NLMSG_ALIGN(sizeof(ndmsg)));
                 RTA_OK(a, alen_left); a = RTA_NEXT(a, alen_left)) {
                if (a->rta_type == NDA_DST) {
                    dst = static_cast<const std::uint8_t*>(RTA_DATA(a));
                    dlen = RTA_PAYLOAD(a);
                } else if (a->rta_type == NDA_LLADDR) {
                    ll = static_cast<const std::uint8_t*>(RTA_DATA(a));
                    llen = RTA_PAYLOAD(a);
                }
            }
            if (dst && ll && dlen == alen && llen == 6 && std::memcmp(dst, addr, alen) == 0) {
                Mac m{};
                std::memcpy(m.data(), ll, 6);
                found = m;
            }
        }
    }
}

void poke(int family, const std::uint8_t* addr, int ifindex) {
    Fd s(::socket(family, SOCK_DGRAM | SOCK_CLOEXEC, 0));
    if (s.get() < 0) return;
    if (family == AF_INET) {
        sockaddr_in sa{};
        sa.sin_family = AF_INET;
        sa.sin_port = htons(9);
        std::memcpy(&sa.sin_addr, addr, 4);
        (void)::sendto(s.get(), "", 0, MSG_DONTWAIT, reinterpret_cast<sockaddr*>(&sa), sizeof sa);
    } else {
        sockaddr_in6 sa{};
        sa.sin6_family = AF_INET6;
        sa.sin6_port = htons(9);
        sa.sin6_scope_id = static_cast<std::uint32_t>(ifindex);  // needed for link-local
        std::memcpy(&sa.sin6_addr, addr, 16);
        (void)::sendto(s.get(), "", 0, MSG_DONTWAIT, reinterpret_cast<sockaddr*>(&sa), sizeof sa);
    }
}

}  // namespace

LinuxNetdev::LinuxNetdev(std::string ifname) : name_(std::move(ifname)) {}

std::optional<NetdevSnapshot> LinuxNetdev::query() {
    Fd s(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
    ifreq ifr{};
    if (s.get() < 0 || !ifreq_for(name_, ifr)) return std::nullopt;
    NetdevSnapshot nd;
    nd.name = name_;
    if (::ioctl(s.get(), SIOCGIFINDEX, &ifr) < 0) return std::nullopt;
    nd.ifindex = static_cast<std::uint32_t>(ifr.ifr_ifindex);
    if (::ioctl(s.get(), SIOCGIFMTU, &ifr) < 0) return std::nullopt;
    nd.mtu = static_cast<std::uint32_t>(ifr.ifr_mtu);
    if (::ioctl(s.get(), SIOCGIFHWADDR, &ifr) < 0) return std::nullopt;
    std::memcpy(nd.mac.data(), ifr.ifr_hwaddr.sa_data, 6);  // lo: six zero bytes
    if (::ioctl(s.get(), SIOCGIFFLAGS, &ifr) < 0) return std::nullopt;
    nd.up = (ifr.ifr_flags & IFF_UP) != 0;
    nd.running = (ifr.ifr_flags & IFF_RUNNING) != 0;

    ifaddrs* list = nullptr;
    if (::getifaddrs(&list) == 0) {
        for (ifaddrs* a = list; a != nullptr; a = a->ifa_next) {
            if (a->ifa_addr == nullptr || a->ifa_name == nullptr || name_ != a->ifa_name) continue;
            if (a->ifa_addr->sa_family == AF_INET) {
                std::array<std::uint8_t, 4> ip{};
                std::memcpy(ip.data(), &reinterpret_cast<const sockaddr_in*>(a->ifa_addr)->sin_addr, 4);
                nd.ipv4.push_back(ip);
            } else if (a->ifa_addr->sa_family == AF_INET6) {
                Gid g{};
                std::memcpy(g.data(), &reinterpret_cast<const sockaddr_in6*>(a->ifa_addr)->sin6_addr, 16);
                nd.ipv6.push_back(g);
            }
        }
        ::freeifaddrs(list);
    }
    return nd;
}

std::optional<Mac> LinuxNetdev::resolve_neighbor(const Gid& dgid) {
    ifreq ifr{};
    Fd s(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
    if (s.get() < 0 || !ifreq_for(name_, ifr) || ::ioctl(s.get(), SIOCGIFINDEX, &ifr) < 0)
        return std::nullopt;
    const int ifindex = ifr.ifr_ifindex;
    const bool v4 = is_ipv4_mapped(dgid);
    const int family = v4 ? AF_INET : AF_INET6;
    const std::uint8_t* addr = v4 ? dgid.data() + 12 : dgid.data();
    std::optional<Mac> m = neigh_lookup(family, addr, v4 ? 4 : 16, ifindex);
    if (!m) poke(family, addr, ifindex);
    return m;
}

}  // namespace simnic::fw
