// `simnic doctor [DEVICE]`: the tutorial's troubleshooting chains (its
// chapter 6: the module, the device nodes, a port that stays DOWN, rping and
// perftest hanging, QPs that pile up) walked for simnic, one check at a time.
//
// Each check says OK, or what is wrong and the command that fixes it. The
// checks only look: they start no daemon, remove no stale socket and change
// no device (the UDP probe sends three datagrams to the device, which counts
// them as it counts any packet for a QP it does not have).
#pragma once

#include <string>
#include <vector>

#include "simnic/control/protocol.h"

namespace simnic::cli::doctor {

enum class Status {
    Ok,    // as it should be
    Note,  // nothing wrong, but worth knowing (e.g. how to start applications)
    Warn,  // probably not what the user wants; the exit status stays 0
    Fail,  // an RDMA application will fail or hang; the exit status is 1
    Skip,  // could not be checked because an earlier check failed
};

const char* to_string(Status s);

// One check's result. `id` is stable (scripts and the guide name checks by
// it): runtime_dir, daemon, kept (only when something is kept), device,
// port, netdev, address, mtu, gid, udp4791, exec, ptrace, stale.
struct Check {
    std::string id;
    std::string device;  // the device it is about; empty for the host's checks
    Status status = Status::Ok;
    std::string what;  // one line: what was found
    std::string fix;   // the command or step that fixes it; empty when OK
};

struct Options {
    std::string device;       // empty: every device the daemon has
    std::string peer;         // another host's RoCE address (IPv4) to probe UDP 4791 with; empty: none
    int probe_timeout_ms = 1000;
};

// Runs every check in the tutorial's order and returns them.
std::vector<Check> run(const Options& opt);

// The UDP 4791 probe on its own (probe.cc): sends a RoCE v2 packet the
// device drops (a SEND to a QPN no device hands out) from `ipv4` (host byte
// order) to `ipv4`:4791 through the kernel, the path every frame of the
// device takes, and watches the device's receive counters. With `peer`
// (non-zero), a CM request to that address instead, whose answer comes back
// to the device. Addresses in host byte order. Fills `c`.
void probe_udp4791(const std::string& device, unsigned ipv4, unsigned peer, int timeout_ms, Check& c);

// One request to the running daemon (none is started); false with `err` set
// when there is no answer or the answer is an error.
bool ask(const control::Json& req, control::Json& reply, std::string& err);

}  // namespace simnic::cli::doctor
