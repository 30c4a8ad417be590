// The daemon's server: the control socket, the devices it hosts, the CM, and
// every client connection, driven by one epoll loop on one thread.
// run_daemon() (daemon.h) runs one for `simnic daemon`; the control
// protocol's tests and fuzzer run one in-process and drive it with run_once().
//
// Every request is checked against the protocol's schema
// (simnic/control/schema.h) before a handler sees it; a malformed one is
// answered with an error and the connection stays served. What one client
// can hold is bounded (ServerOptions): connections per process, descriptors
// and bytes per message (protocol.h), shared memory objects per context, CM
// IDs per event channel.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "simnic/control/runtime.h"
#include "simnic/daemon/device_runtime.h"
#include "simnic/daemon/devices.h"

namespace simnic::daemon {

// Makes a device's runtime for `link_add` (DeviceRuntime::create unless a
// test wants devices without a wire).
using DeviceFactory =
    std::function<std::unique_ptr<DeviceRuntime>(const Device&, std::string& err, DeviceRuntime::GsiHandler gsi)>;

struct ServerOptions {
    DeviceFactory make_device;  // empty: DeviceRuntime::create
    // Take SIGTERM, SIGINT and SIGHUP through a signalfd (they are blocked
    // for the process): the daemon does; an in-process server does not.
    bool signals = false;
    bool log = true;  // lines to stderr (the daemon's log file)
    // Connections one process may hold at once (SO_PEERCRED's pid): a
    // client that opens more gets an EMFILE reply and is closed. One
    // connection per context, per rdma_cm event channel, plus one.
    std::size_t max_connections_per_process = 1024;
    // Shared memory objects (add_shm) one context may hold.
    std::size_t max_shm_per_context = 8;
    // rdma_cm IDs one event channel may create (cm_create_id).
    std::size_t max_cm_ids_per_channel = 4096;
};

class Server {
public:
    Server(const control::RuntimePaths& paths, ServerOptions opt = {});
    ~Server();  // tells every context its device is gone, then closes everything
    Server(const Server&) = delete;
    Server& operator=(const Server&) = delete;

    // Takes the lock, binds the socket. An error message, or empty.
    std::string start();
    // Serves until a `shutdown` request or a signal; 0, or 1 on a fatal error.
    int loop();
    // One round: waits up to `timeout_ms` (0: not at all) for something to
    // do and does it. Returns how many things it did (0: it was idle), or -1
    // on a fatal error.
    int run_once(int timeout_ms);
    bool stop_requested() const;
    // Creates a device or a fabric from a link_add or fabric_add request as
    // a client's would be (the kept devices and fabrics,
    // control/persisted.h, at start): the reply.
    control::Json add_kept(const control::Json& req);

    // Requests whose handling threw, caught by the last-resort catch around
    // dispatch (answered with EIO and logged). Never more than 0 unless the
    // daemon has a bug: the fuzzer checks it after every input.
    std::uint64_t internal_errors() const;
    std::size_t connections() const;

    struct Impl;

private:
    std::unique_ptr<Impl> impl_;
};

}  // namespace simnic::daemon
