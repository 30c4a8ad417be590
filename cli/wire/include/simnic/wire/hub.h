// A wire: an Ethernet segment of whole frames between processes, with an
// optional fault injector and capture.
//
// The wire is a hub on a UDP port of 127.0.0.1. One datagram carries one
// Ethernet frame (no preamble, no FCS). The first datagram from a new source
// address makes that address a member; a zero-length datagram joins without
// putting a frame on the wire. Every frame a member sends goes to every other
// member, after the fault injector has decided its fate (faults.h). Members
// filter by destination MAC themselves, as NICs on a hub do.
//
// Its users: the rig's VMs (QEMU's `-netdev dgram`), simnic devices attached
// with `simnic link add ... wire 127.0.0.1:PORT`, recorders and injectors.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "simnic/wire/faults.h"

namespace simnic::wire {

struct HubOptions {
    uint16_t port = 0;                 // 0: an ephemeral port (see HubReady)
    std::vector<uint16_t> members;     // members known in advance (127.0.0.1:port)
    std::string pcap;                  // every frame as its sender sent it
    std::string pcap_delivered;        // every frame as the other members got it
    uint64_t pcap_limit = 0;           // 0: no limit
    std::vector<FaultRule> faults;
    uint64_t seed = 1;
    double lifetime_s = 0;             // 0: until stopped
    std::string ready_file;            // "PID PORT\n" once the socket is bound
    std::string stats_file;            // JSON counters, rewritten while the wire runs
                                       // (within 200 ms of a change) and when it stops
};

struct HubStats {
    uint64_t frames_in = 0, frames_out = 0, bytes_in = 0, joins = 0, send_errors = 0;
    std::vector<FaultCounters> faults;
};

class Hub {
public:
    // Binds the socket; false and `err` on failure.
    bool open(const HubOptions& opt, std::string& err);
    ~Hub();
    uint16_t port() const { return port_; }
    // Forwards frames until `stop` is set or the lifetime is over. The
    // captures are flushed whenever the hub is idle, so that they can be
    // read while it runs.
    void run(const std::atomic<bool>& stop);
    const HubStats& stats() const { return stats_; }
    // The counters as one line of JSON; "running" says whether they may still grow.
    std::string stats_json(bool running = false) const;

private:
    // Flushes the captures and rewrites the stats file.
    void publish(bool running);

    struct Impl;
    Impl* impl_ = nullptr;
    uint16_t port_ = 0;
    HubStats stats_;
};

}  // namespace simnic::wire
