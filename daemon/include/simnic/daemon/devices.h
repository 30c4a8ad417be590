// The devices a daemon hosts. Each binds to one netdev, as an rxe device
// does; a netdev carries at most one simnic device.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "simnic/control/protocol.h"

namespace simnic::daemon {

enum class DeviceType { Soft, Model };

struct NetdevState {
    bool exists = false;
    bool up = false;       // IFF_UP
    bool running = false;  // IFF_RUNNING: carrier
    int mtu = 0;
};

// Reads a netdev's state from the kernel (ioctl on a datagram socket).
NetdevState query_netdev(const std::string& ifname);

struct Device {
    std::string name;
    DeviceType type = DeviceType::Soft;
    std::string netdev;
    std::string pcap;  // empty: no capture
    // Frames addressed to the device's own address go straight from its TX
    // to its RX instead of through the kernel's UDP stack (rxe's loopback
    // shortcut). Off by default: tcpdump on the netdev then sees nothing of
    // them; the pcap option still records them.
    bool loopback = false;
    // Model devices: the configuration file (absolute path; empty: the
    // defaults) and the text it held when the device was added.
    std::string config_path;
    std::string config_text;
};

class DeviceTable {
public:
    // Adds a device; returns an error message (and sets err_no) on failure.
    std::string add(const Device& d, int& err_no);
    std::string remove(const std::string& name, int& err_no);
    const Device* find(const std::string& name) const;
    std::vector<const Device*> all() const;

    // `rdma link show` shaped description of one device's port.
    static control::Json link_json(const Device& d);

private:
    std::map<std::string, Device> devices_;
};

// Device names follow the kernel's rules for RDMA device names.
bool valid_device_name(const std::string& name, std::string& why);
const char* type_name(DeviceType t);
bool parse_type(const std::string& s, DeviceType& t);

}  // namespace simnic::daemon
