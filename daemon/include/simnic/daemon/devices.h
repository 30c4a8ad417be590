// The devices a daemon hosts. Each binds to one netdev, as an rxe device
// does (a netdev carries at most one simnic device), or sits on a wire of
// frames with addresses of its own (several may share a wire), or is a host
// of a fabric (a model device whose wire is the fabric's switch).
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
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

// A device's port on a wire of frames (`simnic link add NAME type T wire
// HOST:PORT addr A.B.C.D/N [addr X::Y/N] [mac M] [mtu N]`): the hub it
// joins and the addresses it has there, as a netdev would have them.
struct WireAttach {
    std::string endpoint;  // HOST:PORT as given
    uint32_t hub_ip = 0;   // host order
    uint16_t hub_port = 0; // 0: not on a wire
    std::array<uint8_t, 6> mac{};
    uint32_t ipv4 = 0;     // host order
    uint8_t prefix = 0;
    std::vector<std::pair<std::array<uint8_t, 16>, uint8_t>> ipv6;  // besides the link-local one
    uint32_t mtu = 1500;
    bool on() const { return hub_port != 0; }
};

// A device of a fabric (`simnic fabric add`, daemon/src/fabrics.cc): the
// fabric, its host in the topology, and that host's MAC and IPv4 address,
// which the device has as its own (as on a wire).
struct FabricAttach {
    std::string fabric;  // empty: not in a fabric
    size_t host = 0;     // index into the topology's hosts
    std::string host_name;
    std::array<uint8_t, 6> mac{};
    uint32_t ipv4 = 0;  // host order
    bool on() const { return !fabric.empty(); }
};
// A fabric's links carry jumbo frames (the ports' active MTU is 4096).
inline constexpr uint32_t kFabricMtu = 9000;

// A decimal number of at most `max` (digits only, as a request field
// carries it) into v; false if `s` is anything else.
bool parse_uint(const std::string& s, unsigned long max, unsigned long& v);

// Reads `wire`, `addr` (a list), `mac` and `mtu` of a link_add request
// into w, with the defaults filled (the MAC from the device's name). An
// error message if anything is missing or malformed.
std::string parse_wire_attach(const std::string& device, const std::string& wire, const std::vector<std::string>& addrs,
                              const std::string& mac, const std::string& mtu, WireAttach& w);
// A locally administered unicast MAC derived from a device name: the same
// name gives the same MAC, run after run.
std::array<uint8_t, 6> wire_mac_for(const std::string& device);
std::string mac_string(const std::array<uint8_t, 6>& mac);

struct Device {
    std::string name;
    DeviceType type = DeviceType::Soft;
    std::string netdev;    // empty for a device on a wire
    WireAttach wire;
    FabricAttach fabric;
    std::string pcap;  // empty: no capture
    // Frames addressed to the device's own address go straight from its TX
    // to its RX instead of through the kernel's UDP stack (rxe's loopback
    // shortcut). Off by default: tcpdump on the netdev then sees nothing of
    // them; the pcap option still records them.
    bool loopback = false;
    // How long an RC ACK may wait at the port for its flow's reply, so that
    // both leave in one system call (`ack_hold_us`, soft_engine's
    // ack_hold.h); 0: never. Only flows seen to reply soon hold one.
    static constexpr unsigned kDefaultAckHoldUs = 50, kMaxAckHoldUs = 100;
    unsigned ack_hold_us = kDefaultAckHoldUs;
    // The configuration file (absolute path; empty: the defaults) and the
    // text it held when the device was added: a model device's whole
    // configuration, a soft device's [congestion] table.
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
