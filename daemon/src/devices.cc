#include "simnic/daemon/devices.h"

#include <errno.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>

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
    for (const auto& [name, other] : devices_) {
        if (other.netdev == d.netdev) {
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
    const NetdevState n = query_netdev(d.netdev);
    // As rxe: the port follows the netdev's carrier.
    const bool active = n.exists && n.up && n.running;
    Json j;
    j["ifname"] = d.name;
    j["port"] = 1;
    j["state"] = active ? "ACTIVE" : "DOWN";
    j["physical_state"] = active ? "LINK_UP" : "DISABLED";
    j["netdev"] = d.netdev;
    j["type"] = type_name(d.type);
    j["netdev_mtu"] = n.mtu;
    if (!d.pcap.empty()) j["pcap"] = d.pcap;
    if (d.loopback) j["loopback"] = "on";
    if (!d.config_path.empty()) j["config"] = d.config_path;
    return j;
}

}  // namespace simnic::daemon
