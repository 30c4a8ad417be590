// The daemon's CM: the cm::Agent on the daemon thread, wired to the
// devices' QP1 and to the applications' event channels.
//
// Protocol (requests on any connection of the process, see protocol.h):
//   {"op":"cm_channel"}  -> {"ok":true,"channel":C}
//     The connection becomes an rdma_event_channel: from now on the daemon
//     sends it one message per rdma_cm event ({"event":T,"id":..,...}) and
//     reads nothing from it. When it closes (rdma_destroy_event_channel, or
//     the process died) every ID of the channel is destroyed, as ib_cm does
//     for a closed ucma file: connected peers get a DREQ.
//   {"op":"cm_create_id","channel":C,"ps":P}          -> {"id":I}
//   {"op":"cm_bind"|"cm_resolve_addr"|"cm_resolve_route"|"cm_set_option"|"cm_set_ib_path"|"cm_listen"|
//        "cm_connect"|"cm_accept"|"cm_reject"|"cm_establish"|"cm_notify"|"cm_disconnect"|
//        "cm_destroy_id"|"cm_query"|"cm_init_qp_attr"|"cm_req_defaults",
//    "id":I, ...}                                      -> {"ok":..,"device":..,"src":..,"dst":..}
//   rdma_migrate_id, which moves an ID's events not yet read along with it
//   (the kernel's ucma_migrate_id), in three steps:
//   {"op":"cm_migrate","id":I,"channel":C,"hold":true} moves the ID and from
//     then on keeps back what the daemon has for the ID's old channel and C;
//   {"op":"cm_requeue","channel":C,"message":TEXT}     puts an event the
//     process read off the old channel (all are on its socket once cm_migrate
//     is answered) on channel C, ahead of what is kept back;
//   {"op":"cm_release","from":B,"to":C}                sends what was kept back.
//   So every ID's events keep their order. A hold ends with the channel, too.
// Each request's fields, types and limits are in the protocol's schema
// (control/src/schema.cc); the daemon checks them before handle() runs.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "simnic/cm/agent.h"
#include "simnic/daemon/device_runtime.h"
#include "simnic/control/protocol.h"
#include "simnic/control/schema.h"

namespace simnic::daemon {

class CmService final : public cm::Hooks {
public:
    // `max_ids_per_channel`: the IDs cm_create_id may make on one channel.
    explicit CmService(size_t max_ids_per_channel = 4096);
    ~CmService() override;
    CmService(const CmService&) = delete;
    CmService& operator=(const CmService&) = delete;
    bool ok() const { return rx_fd_ >= 0 && timer_fd_ >= 0; }

    // Descriptors for the daemon's epoll: MADs queued by the engines, and
    // the retransmission timer.
    int rx_fd() const { return rx_fd_; }
    int timer_fd() const { return timer_fd_; }
    void on_rx();
    void on_timer();

    // The handler a device's engine calls for its QP1 traffic (any thread).
    DeviceRuntime::GsiHandler gsi_handler(const std::string& device);
    void add_device(const std::string& name, DeviceRuntime* rt);
    void remove_device(const std::string& name);

    // A cm_* request from connection `fd`, checked against the schema.
    control::Json handle(int fd, const control::Request& req);
    // Connection `fd` closed.
    void drop(int fd);
    // The rdma_cm IDs on `device`, for `simnic resource show cm_id`: one
    // object each, its fields named as iproute2's `rdma resource` names
    // them, with the process that owns its event channel.
    control::Json cm_id_list(const std::string& device) const;

    // cm::Hooks
    void send_mad(const std::string& device, const cm::Gid& sgid, const cm::Gid& dgid, uint8_t traffic_class,
                  const cm::Mad& mad) override;
    void deliver(uint64_t channel, const cm::Event& ev) override;
    std::optional<cm::Gid> route_source(const cm::Gid& dst) override;
    bool neighbour_ready(const std::string& device, const cm::Gid& dgid) override;
    uint64_t now_ms() override;
    uint32_t random32() override;

private:
    struct Incoming {
        std::string device;
        cm::Gid src{}, dst{};
        std::vector<uint8_t> mad;
        uint8_t traffic_class = 0;
    };
    struct Channel {
        int fd = -1;
        int pid = 0;
    };
    void refresh_ports();
    std::optional<cm::Gid> wire_source(const cm::Gid& dst) const;
    std::optional<cm::Gid> fabric_source(const cm::Gid& dst) const;
    void arm_timer();
    control::Json id_reply(uint32_t id);

    std::unique_ptr<cm::Agent> agent_;
    std::map<std::string, DeviceRuntime*> devices_;
    std::map<uint64_t, Channel> channels_;
    // Channels whose events are kept back (cm_migrate's hold), how many
    // holds each, and what was kept, in order.
    std::map<uint64_t, unsigned> holds_;
    std::map<uint64_t, std::vector<control::Json>> held_;
    void release(uint64_t channel);
    uint64_t next_channel_ = 1;
    int rx_fd_ = -1, timer_fd_ = -1;
    std::mutex in_mu_;
    std::vector<Incoming> in_;
    uint64_t rng_ = 0;
    size_t max_ids_per_channel_;
};

}  // namespace simnic::daemon
