// The engine's port: where the device's RoCE v2 packets leave and arrive.
// rxe keeps this in rxe_net.c, behind the netdev it is bound to; here it is
// an interface, so that the rest of the engine does not care what is behind
// it. Today's port is the host's UDP stack (udp_port.cc: sockets on UDP
// 4791 of the netdev's addresses). A port of another kind (a device on a raw
// Ethernet segment, with its own MAC and addresses; a link to a switch model
// in simulated time) implements the same calls, and only create() chooses.
//
// What stays in the engine, above every port (net.cc): encoding, the
// loopback shortcut to the device's own addresses, capture, statistics, and
// the decode and dispatch of what arrives.
#pragma once

#include <sys/socket.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "simnic/roce/packet.h"
#include "simnic/soft_engine/engine.h"

namespace simnic::soft_engine {

// An IP address of either version: IPv4 in host order, or 16 bytes of IPv6.
struct IpAddr {
    roce::IpVersion version = roce::IpVersion::V4;
    uint32_t v4 = 0;
    roce::Ipv6Addr v6{};
};
// The same address: the same version, and the field of that version equal.
inline bool operator==(const IpAddr& a, const IpAddr& b) {
    return a.version == b.version && (a.version == roce::IpVersion::V4 ? a.v4 == b.v4 : a.v6 == b.v6);
}

// A frame on its way out: an Ethernet frame as roce::encode_frame built it
// (ICRC included), already checked, with its IP packet located.
struct OutFrame {
    const uint8_t* data = nullptr;
    size_t len = 0;
    bool v6 = false;
    size_t ip_end = 0;  // the IP packet ends here (Ethernet padding may follow)
    // The buffer data points into (its start), when the sender lets the port
    // take it: a port that queues the frame then swaps the buffer with one
    // of its own instead of copying the bytes (the engine encodes the next
    // frame into what it gets back). Null: the port copies.
    std::vector<uint8_t>* owner = nullptr;
    const uint8_t* ip() const { return data + roce::kEthHdrBytes; }
    // The UDP header, and the BTH that starts the UDP payload.
    size_t udp() const { return roce::kEthHdrBytes + (v6 ? roce::kIpv6HdrBytes : roce::kIpv4HdrBytes); }
    size_t bth() const { return udp() + roce::kUdpHdrBytes; }
};

// Where a port hands what arrives (the engine).
class PortSink {
public:
    virtual ~PortSink() = default;
    // An IP packet carrying UDP 4791, its link header gone (the UDP port:
    // the kernel took it off; the port rebuilt the IP and UDP headers).
    virtual void rx_ip(const uint8_t* ip, size_t len) = 0;
    // A whole Ethernet frame carrying RoCE v2 (a port on an Ethernet
    // segment, which keeps ARP and neighbour discovery to itself).
    virtual void rx_frame(const uint8_t* frame, size_t len) = 0;
};

class Port {
public:
    virtual ~Port() = default;

    // ---- local addresses ----
    // The port's IPv4 address (host order): the source of an IPv4 QP whose
    // source GID is not filled in.
    virtual uint32_t ipv4() const = 0;
    // Whether `a` is one of the port's addresses (the loopback shortcut).
    virtual bool is_local(const IpAddr& a) const = 0;

    // ---- neighbours ----
    // The link address of the next hop to `a`, if this port resolves its
    // neighbours itself; nullopt if it does not know it (yet). A port on an
    // Ethernet segment asks (ARP, IPv6 neighbour solicitation), answers for
    // its own addresses inside receive(), and holds what send() gets for a
    // neighbour not yet resolved. The UDP port leaves all of it to the
    // kernel, whose table the firmware reads (fw::LinuxNetdev).
    // Unlike every other call, this one may come from any thread (the
    // firmware resolves address vectors on the control thread): a port that
    // keeps a table guards it.
    virtual std::optional<roce::MacAddr> neighbour(const IpAddr& a) = 0;

    // ---- leaving ----
    // Sets the IP header fields the port's path decides, before the packet
    // is encoded, so that the ICRC covers the bytes that go out (the UDP
    // port: those the kernel will write; a port writing its own IP headers:
    // the IPv4 identification as kernel rxe chooses it).
    virtual void prepare(roce::Packet& pkt) = 0;
    // Sends a frame, or queues it until flush() (or until its neighbour is
    // resolved); false if it was dropped. Each frame is reported once to the
    // port's `sent` callback.
    virtual bool send(const OutFrame& f) = 0;
    // True if the port writes the link header itself and reports each frame
    // with it through PortSent when it leaves (a port on a segment puts its
    // neighbour's MAC in, perhaps after resolving it): the engine captures
    // that frame, not the one it handed to send().
    virtual bool captures_sent() const { return false; }
    // Whatever send() queued leaves now (the end of each engine step).
    virtual void flush() = 0;

    // ---- multicast groups ----
    // The port joins (or leaves) IP multicast group `group`, so that what is
    // sent to it arrives here too: IGMP/MLD membership on the netdev (the
    // UDP port), the group's MAC in the port's filter (a port on a segment).
    // False if it could not. The descriptors of fds() may change.
    virtual bool set_group(const IpAddr& group, bool join) {
        (void)group;
        (void)join;
        return false;
    }

    // ---- arriving ----
    // Hands `sink` a bounded batch of what has arrived; true if anything.
    virtual bool receive(PortSink& sink) = 0;
    // True if the port holds received frames that receive() has not handed
    // on yet (the engine must not sleep on the descriptors then).
    virtual bool rx_pending() const { return false; }
    // True while what the port has taken off its descriptors and not yet
    // handed on has grown past what it can hold without loss to come
    // (UdpPort's backlog, filled while the device sends to itself): the
    // engine then holds its requesters back until it is false again
    // (rx_backlog_holds, WirePort::can_transmit).
    virtual bool rx_lagging() const { return false; }
    // Datagrams the host's network stack dropped at the port's descriptors
    // for want of buffer room, as far as the port has learned of them, since
    // it was opened (RX_STATS_BLOCK's rx_overflow_drops, hw-spec 2.6.4).
    virtual uint64_t rx_overflow_drops() const { return 0; }
    // Descriptors readable when something arrives: the engine's sleep waits
    // on them (it never reads them itself).
    virtual std::vector<int> fds() const = 0;
};

// A receiving socket's drops as the kernel counts them (SO_RXQ_OVFL: its
// own count of what it dropped at the socket since the socket was made,
// sent with each datagram once it is not 0), for Port::rx_overflow_drops:
// enable() it on the socket, then note() each control message of each
// datagram received there.
struct SocketDrops {
    uint32_t seen = 0;  // the count as last seen
    static void enable(int fd) {
        const int one = 1;
        setsockopt(fd, SOL_SOCKET, SO_RXQ_OVFL, &one, sizeof one);
    }
    static bool is_count(const cmsghdr& c) { return c.cmsg_level == SOL_SOCKET && c.cmsg_type == SO_RXQ_OVFL; }
    // Adds to `total` what the count in `c` grew by since the last.
    void note(const cmsghdr& c, uint64_t& total) {
        uint32_t count = 0;
        std::memcpy(&count, CMSG_DATA(&c), sizeof count);
        total += uint32_t(count - seen);  // modulo 2^32, as the kernel's counter
        seen = count;
    }
};

// How a port reports each frame it sent (ok) or dropped: the engine counts
// them in STATS_BLOCK (tx_packets, `bytes` from the BTH on; tx_drops). A
// port whose captures_sent() is true passes the whole frame as it left
// (`frame`, `len`), for the device's capture; others pass null.
using PortSent = std::function<void(size_t bytes, bool ok, const uint8_t* frame, size_t len)>;

// The UDP port on `netdev` (udp_port.cc): its first IPv4 address and every
// IPv6 address; UDP 4791 bound on each unless `sockets` is false (a device
// without a wire: the addresses only). Null and `err` on failure.
std::unique_ptr<Port> open_udp_port(const std::string& netdev, bool sockets, PortSent sent, std::string& err);

// The port on the wire `w` names (wire_port.cc): joins the hub, checking
// that something listens there. Null and `err` on failure.
std::unique_ptr<Port> open_wire_port(const WireConfig& w, PortSent sent, std::string& err);

}  // namespace simnic::soft_engine
