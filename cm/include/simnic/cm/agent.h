// The CM agent: what the Linux kernel's ib_cm and rdma_cm do for an RDMA
// device, done by the simnic daemon for its devices.
//
// One agent serves every device of the daemon (a wildcard listen covers them
// all). It owns the devices' GSI (QP1) traffic: it receives the CM MADs the
// engines deliver, runs the connection state machine of IBA 12.9 for each
// rdma_cm ID (REQ, REP, RTU, REJ, DREQ, DREP, with MAD retransmission on
// timeout as ib_cm does) and produces rdma_cm events for the applications.
// It also resolves addresses to devices (rdma_cm's address layer) and
// computes the QP attributes an application applies at each transition
// (rdma_init_qp_attr).
//
// The agent does no I/O and keeps no clock: MADs, events, routes, time and
// randomness go through Hooks, so tests drive it directly. Not thread-safe:
// one thread (the daemon's) calls it.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "simnic/cm/mad.h"
#include "simnic/hw/verbs.h"

namespace simnic::cm {

// An address as rdma_cm's sockaddr carries it. IPv4 is IPv4-mapped
// (::ffff:a.b.c.d), as in the GID table.
struct SockAddr {
    Gid addr{};
    uint16_t port = 0;
    bool v6 = false;
    bool any() const;  // 0.0.0.0 or ::
};
SockAddr ipv4_addr(uint32_t host_order_ip, uint16_t port);
Gid ipv4_gid(uint32_t host_order_ip);

// What init_qp_attr fills (rdma_init_qp_attr's ibv_qp_attr), in the verbs'
// numbering: hw::qp_attr_mask bits, hw::QpState, hw::access flags.
struct QpAttr {
    uint32_t mask = 0;
    hw::QpState state = hw::QpState::Init;
    uint32_t access_flags = 0;
    uint16_t pkey_index = 0;
    uint8_t port_num = 1;
    uint8_t path_mtu = 0;  // IB MTU code
    uint32_t dest_qpn = 0, rq_psn = 0, sq_psn = 0;
    uint32_t qkey = 0;  // UD
    uint8_t max_dest_rd_atomic = 0, max_rd_atomic = 0, min_rnr_timer = 0;
    uint8_t timeout = 0, retry_cnt = 0, rnr_retry = 0;
    // The address vector (GRH): RoCE always has one.
    Gid dgid{};
    uint32_t flow_label = 0;
    uint8_t sgid_index = 0, hop_limit = 0, traffic_class = 0, sl = 0;
};

// rdma_cm's event numbering (enum rdma_cm_event_type).
//
// The UDP port space (RDMA_PS_UDP) has no connection: rdma_connect resolves
// the peer's service ID to its QP with SIDR (IBA 12.11) and the answer comes
// as ESTABLISHED carrying the peer's QPN, Q_Key and the address vector to it
// (rdma_ud_param); the passive side sees CONNECT_REQUEST and answers with
// rdma_accept or rdma_reject, and nothing follows.
enum class EventType : uint8_t {
    AddrResolved = 0,
    AddrError = 1,
    RouteResolved = 2,
    RouteError = 3,
    ConnectRequest = 4,
    ConnectResponse = 5,
    ConnectError = 6,
    Unreachable = 7,
    Rejected = 8,
    Established = 9,
    Disconnected = 10,
    DeviceRemoval = 11,
    MulticastJoin = 12,
    MulticastError = 13,
};
const char* to_string(EventType t);

// struct rdma_conn_param.
struct ConnParam {
    std::vector<uint8_t> private_data;
    uint8_t responder_resources = 0;
    uint8_t initiator_depth = 0;
    uint8_t flow_control = 0;
    uint8_t retry_count = 7;
    uint8_t rnr_retry_count = 7;
    bool srq = false;
    uint32_t qp_num = 0;
    uint32_t qkey = 0;  // UD: the peer's Q_Key (rdma_ud_param.qkey)
    // ECE (ucma's struct rdma_ucm_ece): connect and accept send it in the
    // REQ or REP (see mad.h); CONNECT_REQUEST and CONNECT_RESPONSE carry
    // the peer's. Zero: none.
    uint32_t ece_vendor_id = 0;
    uint32_t ece_options = 0;  // the MAD's AttributeModifier
};

struct Event {
    EventType type = EventType::AddrResolved;
    uint32_t id = 0;          // the ID the event is for (ConnectRequest: the new one)
    uint32_t listen_id = 0;   // ConnectRequest: the listening ID
    int status = 0;           // 0, a negative errno, or a REJ reason (Rejected)
    std::string device;       // the ID's device, once it has one
    SockAddr src, dst;        // the ID's addresses
    ConnParam param;          // connection events: the peer's parameters
    // UD ESTABLISHED: the address vector to the peer (rdma_ud_param.ah_attr);
    // only the AV fields of the QpAttr (dgid, flow_label, sgid_index,
    // hop_limit, traffic_class, sl) mean anything.
    std::optional<QpAttr> ah;
};

// A device as the agent sees it.
struct Port {
    std::string device;
    uint64_t node_guid = 0;   // as IBA fields carry it (big-endian on the wire)
    uint8_t active_mtu = 3;   // IB MTU code
    uint8_t ca_ack_delay = 15;
    std::vector<std::pair<uint32_t, Gid>> gids;  // GID table: index, GID
};

// A path record as rdma_set_option(RDMA_OPTION_IB, RDMA_OPTION_IB_PATH)
// gives one (struct ibv_path_record, IBA 15.2.5.16), in the fields RoCE uses.
struct PathRecord {
    Gid dgid{}, sgid{};
    uint32_t flow_label = 0;  // 20 bits
    uint8_t hop_limit = 0, traffic_class = 0;
    uint8_t mtu = 0;               // IB MTU code
    uint8_t packet_life_time = 0;  // 4.096 us << n
};

class Hooks {
public:
    virtual ~Hooks() = default;
    // Sends a MAD from the device's QP1 (source GID sgid) to QP1 at dgid,
    // with `traffic_class` in its IP header (TOS or IPv6 traffic class): ib_cm
    // sends a connection's MADs on its path's address vector, so a ToS set
    // with rdma_set_option is on the REQ, REP, RTU and DREQ too.
    virtual void send_mad(const std::string& device, const Gid& sgid, const Gid& dgid, uint8_t traffic_class,
                          const Mad& mad) = 0;
    // Queues an event on the application's event channel.
    virtual void deliver(uint64_t channel, const Event& ev) = 0;
    // The local address the host would send from to reach dst (its routing
    // table), if any.
    virtual std::optional<Gid> route_source(const Gid& dst) = 0;
    // Whether `device` knows the link address of the next hop to `dgid`,
    // starting resolution (ARP, neighbour solicitation) if it does not: the
    // address query of rdma_resolve_addr waits for it, as the kernel's does.
    // A device whose neighbours the host's stack resolves answers true.
    virtual bool neighbour_ready(const std::string& device, const Gid& dgid) {
        (void)device;
        (void)dgid;
        return true;
    }
    virtual uint64_t now_ms() = 0;
    virtual uint32_t random32() = 0;
};

// MAD retransmission (ib_cm: twice the packet life time plus the peer's CM
// response time; 15 retries). Tests shorten it.
struct Timing {
    uint64_t req_ms = 6144;   // REQ and REP: 2 * 4.096us<<18 + 4.096us<<20
    uint64_t dreq_ms = 2048;  // DREQ: 4.096us<<19 (the local ACK timeout)
    uint32_t max_retries = 15;
    uint64_t sidr_ms = 4096;  // SIDR_REQ: rdma_cm's 1 << (CMA_CM_RESPONSE_TIMEOUT - 8) ms
};

// rdma_cm's constants on RoCE, as the kernel's REQs carry them.
inline constexpr uint8_t kCmResponseTimeout = 20;  // 4.096 us << 20, about 4.3 s
inline constexpr uint8_t kMaxCmRetries = 15;
inline constexpr uint8_t kPacketLifeTime = 18;     // RoCE path record
inline constexpr uint8_t kLocalAckTimeout = kPacketLifeTime + 1;
inline constexpr uint8_t kHopLimit = 64;
inline constexpr uint16_t kPsIb = 0x013F;
// rdma_resolve_addr's timeout when none is given (rping passes 2000 ms),
// and how often an address query looks at the neighbour again.
inline constexpr uint32_t kAddrTimeoutMs = 2000;
inline constexpr uint32_t kAddrPollMs = 10;

class Agent {
public:
    explicit Agent(Hooks& hooks, Timing timing = {});
    ~Agent();
    Agent(const Agent&) = delete;
    Agent& operator=(const Agent&) = delete;

    // Devices come and go with `simnic link add/delete`. Removing one sends
    // DEVICE_REMOVAL to the IDs on it.
    void set_port(const Port& p);
    // The most IDs one event channel may hold (0: no limit), the daemon's
    // bound on cm_create_id: a request that would make its listener's
    // channel hold more is dropped unanswered, as ib_cm drops a REQ its
    // rdma_cm could not take for want of memory (the peer's retransmission
    // tries again), and a SIDR_REQ is answered REJECT.
    void set_max_ids_per_channel(size_t n);
    void remove_port(const std::string& device);

    // ---- the application's calls (librdmacm's), on behalf of `channel` ----
    // Each returns 0 or a positive errno. IDs belong to the channel that
    // created them; destroy_channel destroys them all (a process that died).
    int create_id(uint64_t channel, uint16_t port_space, uint32_t& id);
    int bind(uint32_t id, const SockAddr& addr);
    // ADDR_RESOLVED once the device knows the next hop's link address (at
    // once for most), ADDR_ERROR (-ETIMEDOUT) if it still does not after
    // timeout_ms.
    int resolve_addr(uint32_t id, const std::optional<SockAddr>& src, const SockAddr& dst,
                     uint32_t timeout_ms = kAddrTimeoutMs);
    int resolve_route(uint32_t id);
    // rdma_join_multicast on RoCE, which has no SA (cma_iboe_join_multicast):
    // MULTICAST_JOIN at once, carrying the group's address vector (its MGID
    // as the DGID: ::ffff:a.b.c.d for an IPv4 group), QPN 0xFFFFFF and the
    // port space's Q_Key. The device joins the IP group when a QP is
    // attached to the MGID (hw-spec 5.6.12). EINVAL unless the ID has an
    // address on a device (bound or resolved) and `group` is multicast.
    int join_multicast(uint32_t id, const SockAddr& group);
    // rdma_set_option's RDMA_OPTION_ID_TOS (rdma_set_service_type): kept on
    // the ID, in any state, and read by resolve_route, as cma_resolve_iboe_route
    // reads it into the path's traffic class (a ToS set later leaves the
    // route, so the connection, as it was). The active side's REQ and QP
    // (and a UD ID's ESTABLISHED address vector) carry the route's.
    int set_tos(uint32_t id, uint8_t tos);
    // The rest of rdma_set_option(RDMA_OPTION_ID, ...), as ucma_set_option_id
    // hands them to rdma_cm. Each returns 0 or a positive errno.
    // REUSEADDR (rdma_set_reuseaddr): on in any state but LISTEN, off only
    // before the ID is bound (EINVAL otherwise). Two IDs that both have it
    // may bind the same address and port; a listener must still be alone on
    // its address (checked at listen, which then turns it off).
    int set_reuseaddr(uint32_t id, bool reuse);
    // AFONLY (rdma_set_afonly): before listen (IDLE or ADDR_BOUND), else
    // EINVAL. An ID that never sets it is AF-only if IPv4, and if IPv6 as
    // the host's net.ipv6.bindv6only says (set_bindv6only). A wildcard
    // listener that is not AF-only takes both IP versions' requests, and its
    // port is then taken for the other version too (cma_check_port).
    int set_afonly(uint32_t id, bool afonly);
    void set_bindv6only(bool on);
    // ACK_TIMEOUT (rdma_set_ack_timeout): the local ACK timeout an RC QP gets
    // at RTS from init_qp_attr, instead of the path's (kLocalAckTimeout);
    // EINVAL for a UD port space, in any state otherwise.
    int set_ack_timeout(uint32_t id, uint8_t timeout);
    // RDMA_OPTION_IB_PATH (rdma_set_ib_path): the route is this record
    // instead of one rdma_resolve_route would make, and ROUTE_RESOLVED
    // follows at once. The ID must be ADDR_RESOLVED (EINVAL), on a device
    // (ENODEV); the record's SGID must be in that device's GID table and its
    // MTU a valid code (EINVAL; the kernel fails later, at rdma_connect).
    // The REQ and the QP's address vector then carry the record's DGID,
    // SGID, flow label, hop limit, traffic class and MTU, and the QP's local
    // ACK timeout is its packet life time + 1 (cm_init_av_by_path).
    int set_ib_path(uint32_t id, const PathRecord& path);
    int listen(uint32_t id);
    int connect(uint32_t id, const ConnParam& p);
    int accept(uint32_t id, const ConnParam& p);
    // `reason` as ucma's rdma_reject takes it: 0 means IB_CM_REJ_CONSUMER_DEFINED
    // (28); that and VendorOptionNotSupported (35, rdma_reject_ece) are the
    // only ones allowed, others EINVAL. A UD ID's SIDR_REP says REJECT either way.
    int reject(uint32_t id, const std::vector<uint8_t>& private_data, uint8_t reason = 0);
    int establish(uint32_t id);  // active side, QP in RTS: send the RTU
    // rdma_notify (rdma_cm's, then ib_cm_notify), `event` in the verbs'
    // numbering (enum ibv_event_type): COMM_EST while our REP waits for its
    // RTU makes the connection ESTABLISHED now (the event follows, the REP
    // is no longer resent, a late RTU changes nothing); on one already
    // established EISCONN. PATH_MIG on an established connection: 0 (RoCE
    // has no alternate path to move to). Anything else EINVAL, as are IDs
    // without a device or without a connection (ib_cm ID) of their own.
    int notify(uint32_t id, uint32_t event);
    int disconnect(uint32_t id);
    int destroy_id(uint32_t id);
    // rdma_migrate_id: the ID's later events go to `channel`.
    int migrate(uint32_t id, uint64_t channel);
    void destroy_channel(uint64_t channel);
    int init_qp_attr(uint32_t id, hw::QpState state, QpAttr& out) const;
    // The ID's device and addresses (empty device: not bound to one).
    int query(uint32_t id, std::string& device, SockAddr& src, SockAddr& dst) const;
    // The default responder resources / initiator depth an accept without
    // parameters uses (from the REQ, as librdmacm keeps them).
    int req_defaults(uint32_t id, uint8_t& responder_resources, uint8_t& initiator_depth) const;

    // ---- the wire ----
    // A UD SEND to QP1 arrived on `device` from sgid (the sender's address),
    // `traffic_class` its IP header's TOS or IPv6 traffic class: what ib_cm
    // answers without a connection of its own (a REJ to a REQ nobody listens
    // for, a SIDR_REP) goes back on an address vector made from it.
    void on_mad(const std::string& device, const Gid& src, const Gid& dst, const uint8_t* mad, size_t len,
                uint8_t traffic_class = 0);
    // Retransmits what timed out; returns the next deadline (0: none).
    uint64_t on_timer();
    uint64_t next_deadline() const;

    // The channel an ID belongs to (0: no such ID).
    uint64_t channel_of(uint32_t id) const;
    // Counts for tests and `simnic resource show`; the IDs of one channel
    // (what the daemon bounds).
    size_t id_count() const;
    size_t id_count(uint64_t channel) const;
    std::string state_name(uint32_t id) const;

    // One ID as the kernel's rdma_cm reports it to `rdma resource show
    // cm_id`: its device, rdma_cm's state (RDMA_CM_*, not ib_cm's: every
    // step of connecting is CONNECT, of disconnecting DISCONNECT), port
    // space, addresses and QP. A listener on a wildcard address is reported
    // once per device, as rdma_cm listens on each device for it.
    struct IdInfo {
        uint32_t id = 0;
        uint64_t channel = 0;
        std::string device;
        const char* state = "";
        uint16_t ps = 0;
        SockAddr src, dst;
        uint32_t qpn = 0;  // 0: no QP given yet
    };
    // The IDs on `device` (all devices if empty), in handle order; IDs not
    // yet on a device and those destroyed but still disconnecting are left
    // out, as the kernel tracks an ID from the time it has a device until
    // its application destroys it.
    std::vector<IdInfo> list(const std::string& device = {}) const;

    struct Impl;

private:
    std::unique_ptr<Impl> impl_;
};

}  // namespace simnic::cm
