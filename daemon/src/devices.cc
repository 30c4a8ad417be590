#include "simnic/daemon/devices.h"

#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "simnic/roce/neighbour.h"

namespace simnic::daemon {

// The daemon is the server side of the control protocol.
using namespace simnic::control;

NetdevState query_netdev(const std::string& ifname) {
    NetdevState s;
    if (ifname.empty() || ifname.size() >= IFNAMSIZ || if_nametoindex(ifname.c_str()) == 0) return s;
    s.exists = true;
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return s;
    ifreq ifr{};
    std::memcpy(ifr.ifr_name, ifname.c_str(), ifname.size());
    if (ioctl(fd, SIOCGIFFLAGS, &ifr) == 0) {
        s.up = ifr.ifr_flags & IFF_UP;
        s.running = ifr.ifr_flags & IFF_RUNNING;
    }
    if (ioctl(fd, SIOCGIFMTU, &ifr) == 0) s.mtu = ifr.ifr_mtu;
    close(fd);
    return s;
}

bool valid_device_name(const std::string& name, std::string& why) {
    // IB_DEVICE_NAME_MAX is 64 with the terminating NUL; '%' is the kernel's
    // template character and '/' would break sysfs-style paths.
    if (name.empty() || name.size() > 63) {
        why = "a device name has 1 to 63 characters";
        return false;
    }
    for (char c : name) {
        const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                        c == '_' || c == '-' || c == '.';
        if (!ok) {
            why = std::string("character '") + c + "' is not allowed in a device name (use letters, digits, _ - .)";
            return false;
        }
    }
    return true;
}

// ---- devices on a wire ----

bool parse_uint(const std::string& s, unsigned long max, unsigned long& v) {
    if (s.empty() || s.size() > 10 || s.find_first_not_of("0123456789") != std::string::npos) return false;
    v = std::stoul(s);
    return v <= max;
}

namespace {

std::string addr_string(const uint8_t* a, bool v6) {
    char b[INET6_ADDRSTRLEN] = {};
    inet_ntop(v6 ? AF_INET6 : AF_INET, a, b, sizeof b);
    return b;
}

}  // namespace

std::array<uint8_t, 6> wire_mac_for(const std::string& device) {
    // FNV-1a over the name, then a 64-bit finaliser (MurmurHash3's fmix64)
    // so that names differing in their last character differ in every
    // byte: stable across runs and builds.
    uint64_t h = 0xcbf29ce484222325ull;
    for (unsigned char c : device) h = (h ^ c) * 0x100000001b3ull;
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ull;
    h ^= h >> 33;
    std::array<uint8_t, 6> m{};
    for (size_t i = 0; i < 6; ++i) m[i] = uint8_t(h >> (8 * (7 - i)));
    m[0] = uint8_t((m[0] & 0xfc) | 0x02);  // locally administered, unicast
    return m;
}

std::string mac_string(const std::array<uint8_t, 6>& m) {
    char b[18];
    std::snprintf(b, sizeof b, "%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4], m[5]);
    return b;
}

std::string parse_wire_attach(const std::string& device, const std::string& wire, const std::vector<std::string>& addrs,
                              const std::string& mac, const std::string& mtu, WireAttach& w) {
    w = WireAttach{};
    w.endpoint = wire;
    // The hub: HOST:PORT, HOST an IPv4 address (the wire is a UDP hub; the
    // rig's and `simnic wire`'s listen on 127.0.0.1).
    const size_t colon = wire.rfind(':');
    unsigned long port = 0;
    in_addr host{};
    if (colon == std::string::npos || inet_pton(AF_INET, wire.substr(0, colon).c_str(), &host) != 1 ||
        !parse_uint(wire.substr(colon + 1), 65535, port) || port == 0)
        return "wire: '" + wire + "' is not HOST:PORT with an IPv4 host (as 127.0.0.1:47000, what `simnic wire` prints)";
    w.hub_ip = ntohl(host.s_addr);
    w.hub_port = uint16_t(port);
    // Addresses: A.B.C.D/N (exactly one) and any X::Y/N, as `ip addr add`
    // takes them.
    bool have4 = false;
    for (const std::string& a : addrs) {
        const size_t slash = a.find('/');
        const std::string ip = a.substr(0, slash);
        unsigned long len = 0;
        in_addr v4{};
        in6_addr v6{};
        const bool is4 = inet_pton(AF_INET, ip.c_str(), &v4) == 1;
        const bool is6 = !is4 && inet_pton(AF_INET6, ip.c_str(), &v6) == 1;
        if (slash == std::string::npos || (!is4 && !is6) || !parse_uint(a.substr(slash + 1), is4 ? 32 : 128, len) ||
            len == 0)
            return "addr: '" + a + "' is not an address with its prefix length (as 10.0.0.10/24 or fd00::10/64)";
        if (is4) {
            const uint32_t h = ntohl(v4.s_addr);
            if (have4) return "addr: a wire device has one IPv4 address (" + a + " is a second)";
            if (h == 0 || (h >> 28) == 0xe || h == 0xffffffffu || (h >> 24) == 127)
                return "addr: " + a + " is not a unicast address a device on a wire can have";
            have4 = true;
            w.ipv4 = h;
            w.prefix = uint8_t(len);
        } else {
            std::array<uint8_t, 16> b{};
            std::memcpy(b.data(), &v6, 16);
            if (b[0] == 0xff || IN6_IS_ADDR_UNSPECIFIED(&v6) || IN6_IS_ADDR_LOOPBACK(&v6) || IN6_IS_ADDR_V4MAPPED(&v6))
                return "addr: " + a + " is not a unicast address a device on a wire can have";
            w.ipv6.emplace_back(b, uint8_t(len));
        }
    }
    if (!have4) return "a device on a wire needs its IPv4 address: addr A.B.C.D/N (as 10.0.0.10/24)";
    if (mac.empty()) {
        w.mac = wire_mac_for(device);
    } else {
        unsigned b[6];
        char tail = 0;
        if (std::sscanf(mac.c_str(), "%2x:%2x:%2x:%2x:%2x:%2x%c", &b[0], &b[1], &b[2], &b[3], &b[4], &b[5], &tail) != 6)
            return "mac: '" + mac + "' is not a MAC address (as 02:00:00:00:00:01)";
        for (size_t i = 0; i < 6; ++i) w.mac[i] = uint8_t(b[i]);
        if ((w.mac[0] & 1) || w.mac == std::array<uint8_t, 6>{})
            return "mac: " + mac + " is not a unicast address (the low bit of the first byte is the group bit)";
    }
    if (!mtu.empty()) {
        unsigned long v = 0;
        // 1280: the port always has IPv6 (its link-local address), whose
        // links carry at least that; 9216: the largest jumbo frame NICs take.
        if (!parse_uint(mtu, 9216, v) || v < 1280) return "mtu: '" + mtu + "' is not an MTU from 1280 to 9216";
        w.mtu = uint32_t(v);
    }
    return {};
}

const char* type_name(DeviceType t) { return t == DeviceType::Soft ? "soft" : "model"; }

bool parse_type(const std::string& s, DeviceType& t) {
    if (s == "soft") t = DeviceType::Soft;
    else if (s == "model") t = DeviceType::Model;
    else return false;
    return true;
}

std::string DeviceTable::add(const Device& d, int& err_no) {
    std::string why;
    if (!valid_device_name(d.name, why)) {
        err_no = EINVAL;
        return why;
    }
    if (devices_.count(d.name)) {
        err_no = EEXIST;
        return "device " + d.name + " already exists";
    }
    if (d.fabric.on()) {
        // Its addresses are the topology's, which checked them.
        devices_[d.name] = d;
        return {};
    }
    if (d.wire.on()) {
        // Several devices may share a wire, as NICs share a segment, but not
        // an address.
        for (const auto& [name, other] : devices_) {
            if (!other.wire.on() || other.wire.hub_ip != d.wire.hub_ip || other.wire.hub_port != d.wire.hub_port)
                continue;
            err_no = EEXIST;
            if (other.wire.mac == d.wire.mac)
                return "MAC " + mac_string(d.wire.mac) + " is already device " + name + "'s on wire " + d.wire.endpoint;
            if (other.wire.ipv4 == d.wire.ipv4) {
                const uint32_t n = htonl(d.wire.ipv4);
                return "address " + addr_string(reinterpret_cast<const uint8_t*>(&n), false) + " is already device " +
                       name + "'s on wire " + d.wire.endpoint;
            }
            for (const auto& a : d.wire.ipv6)
                for (const auto& b : other.wire.ipv6)
                    if (a.first == b.first)
                        return "address " + addr_string(a.first.data(), true) + " is already device " + name +
                               "'s on wire " + d.wire.endpoint;
        }
        devices_[d.name] = d;
        return {};
    }
    for (const auto& [name, other] : devices_) {
        if (!other.wire.on() && other.netdev == d.netdev) {
            err_no = EEXIST;
            return "netdev " + d.netdev + " already has simnic device " + name +
                   " (one device per netdev, as with rxe)";
        }
    }
    if (!query_netdev(d.netdev).exists) {
        err_no = ENODEV;
        return "netdev " + d.netdev + " does not exist";
    }
    devices_[d.name] = d;
    return {};
}

std::string DeviceTable::remove(const std::string& name, int& err_no) {
    if (!devices_.erase(name)) {
        err_no = ENODEV;
        return "no device " + name;
    }
    return {};
}

const Device* DeviceTable::find(const std::string& name) const {
    auto it = devices_.find(name);
    return it == devices_.end() ? nullptr : &it->second;
}

std::vector<const Device*> DeviceTable::all() const {
    std::vector<const Device*> v;
    for (const auto& kv : devices_) v.push_back(&kv.second);
    return v;
}

Json DeviceTable::link_json(const Device& d) {
    Json j;
    // A fabric's or a wire's port has no carrier to lose: it is up while the device exists. A
    // netdev's follows the netdev's carrier, as rxe's does.
    bool active = true;
    if (d.fabric.on()) {
        j["fabric"] = d.fabric.fabric;
        j["host"] = d.fabric.host_name;
        j["mac"] = mac_string(d.fabric.mac);
        const uint32_t n4 = htonl(d.fabric.ipv4);
        const roce::Ipv6Addr ll = roce::ipv6_link_local(d.fabric.mac);
        j["addr"] = Json::array({addr_string(reinterpret_cast<const uint8_t*>(&n4), false),
                                 addr_string(ll.data(), true) + "/64"});
        j["mtu"] = kFabricMtu;
    } else if (d.wire.on()) {
        j["wire"] = d.wire.endpoint;
        j["mac"] = mac_string(d.wire.mac);
        const uint32_t n4 = htonl(d.wire.ipv4);
        Json addrs = Json::array();
        addrs.push_back(addr_string(reinterpret_cast<const uint8_t*>(&n4), false) + "/" +
                        std::to_string(d.wire.prefix));
        // The link-local address the port forms from its MAC, as `ip addr`
        // lists a netdev's.
        const roce::Ipv6Addr ll = roce::ipv6_link_local(d.wire.mac);
        addrs.push_back(addr_string(ll.data(), true) + "/64");
        for (const auto& [a, len] : d.wire.ipv6)
            if (!std::equal(a.begin(), a.end(), ll.begin())) addrs.push_back(addr_string(a.data(), true) + "/" + std::to_string(len));
        j["addr"] = addrs;
        j["mtu"] = d.wire.mtu;
        j["loopback"] = "on";
    } else {
        const NetdevState n = query_netdev(d.netdev);
        active = n.exists && n.up && n.running;
        j["netdev"] = d.netdev;
        j["netdev_mtu"] = n.mtu;
        if (d.loopback) j["loopback"] = "on";
    }
    if (d.ack_hold_us != Device::kDefaultAckHoldUs) j["ack_hold_us"] = d.ack_hold_us;
    j["ifname"] = d.name;
    j["port"] = 1;
    j["state"] = active ? "ACTIVE" : "DOWN";
    j["physical_state"] = active ? "LINK_UP" : "DISABLED";
    j["type"] = type_name(d.type);
    if (!d.pcap.empty()) j["pcap"] = d.pcap;
    if (!d.config_path.empty()) j["config"] = d.config_path;
    return j;
}

}  // namespace simnic::daemon
