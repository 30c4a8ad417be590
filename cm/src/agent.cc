#include "simnic/cm/agent.h"

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "simnic/hw/layout.h"
#include "simnic/roce/rules.h"

namespace simnic::cm {

namespace {
constexpr uint8_t kMapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
}

bool SockAddr::any() const {
    if (!v6) return addr[12] == 0 && addr[13] == 0 && addr[14] == 0 && addr[15] == 0;
    return std::all_of(addr.begin(), addr.end(), [](uint8_t b) { return b == 0; });
}

Gid ipv4_gid(uint32_t ip) {
    Gid g{};
    std::memcpy(g.data(), kMapped, 12);
    for (int i = 0; i < 4; ++i) g[size_t(12 + i)] = uint8_t(ip >> (24 - 8 * i));
    return g;
}

SockAddr ipv4_addr(uint32_t ip, uint16_t port) {
    SockAddr a;
    a.addr = ipv4_gid(ip);
    a.port = port;
    return a;
}

const char* to_string(EventType t) {
    switch (t) {
        case EventType::AddrResolved: return "ADDR_RESOLVED";
        case EventType::AddrError: return "ADDR_ERROR";
        case EventType::RouteResolved: return "ROUTE_RESOLVED";
        case EventType::RouteError: return "ROUTE_ERROR";
        case EventType::ConnectRequest: return "CONNECT_REQUEST";
        case EventType::ConnectResponse: return "CONNECT_RESPONSE";
        case EventType::ConnectError: return "CONNECT_ERROR";
        case EventType::Unreachable: return "UNREACHABLE";
        case EventType::Rejected: return "REJECTED";
        case EventType::Established: return "ESTABLISHED";
        case EventType::Disconnected: return "DISCONNECTED";
        case EventType::DeviceRemoval: return "DEVICE_REMOVAL";
        case EventType::MulticastJoin: return "MULTICAST_JOIN";
        case EventType::MulticastError: return "MULTICAST_ERROR";
    }
    return "?";
}

// An rdma_cm ID: rdma_cm's address states, then IBA 12.9's connection
// states (the IB CM's, under their spec names).
enum class State : uint8_t {
    Idle,
    AddrBound,
    AddrQuery,  // waiting for the device to resolve the next hop (RDMA_CM_ADDR_QUERY)
    AddrResolved,
    RouteResolved,
    Listen,
    ReqSent,
    ReqRcvd,
    RepSent,
    RepRcvd,
    Established,
    DreqSent,
    DreqRcvd,
    TimeWait,
    Error,  // REJ'd, unreachable or its device went away: only destroy remains
};

const char* state_str(State s) {
    static const char* const n[] = {"IDLE",     "ADDR_BOUND",  "ADDR_QUERY",    "ADDR_RESOLVED", "ROUTE_RESOLVED", "LISTEN",
                                    "REQ_SENT", "REQ_RCVD",    "REP_SENT",      "REP_RCVD",       "ESTABLISHED",
                                    "DREQ_SENT", "DREQ_RCVD",  "TIMEWAIT",      "ERROR"};
    return n[size_t(s)];
}

struct Id {
    uint32_t handle = 0;
    uint64_t channel = 0;
    uint16_t ps = kPsTcp;
    // The UDP port space: SIDR instead of a connection (REQ_SENT and
    // REQ_RCVD are the SIDR_REQ's, ESTABLISHED the answered SIDR).
    bool ud() const { return ps == kPsUdp; }
    State state = State::Idle;
    std::string device;  // empty: wildcard or not bound yet
    SockAddr src, dst;
    bool bound = false;
    // A connection a listener's REQ made: it shares the listener's port and
    // holds none itself (the kernel's rdma_cm puts only IDs that bound or
    // resolved an address in a port's bind list, as an accepted TCP socket
    // shares its listener's port), so the port is free once the listener
    // goes, whatever its connections do.
    bool accepted = false;
    // The connection (valid from REQ_SENT / REQ_RCVD on).
    uint32_t local_comm_id = 0, remote_comm_id = 0;
    uint64_t tid = 0, remote_guid = 0;
    uint32_t local_qpn = 0, remote_qpn = 0;
    uint32_t sq_psn = 0, rq_psn = 0;
    uint8_t path_mtu = 3;
    uint8_t responder_resources = 0;  // our QP's max_dest_rd_atomic
    uint8_t initiator_depth = 0;      // our QP's max_rd_atomic
    uint8_t retry_count = 7, rnr_retry_count = 7;
    uint8_t req_responder_resources = 0, req_initiator_depth = 0;  // as the REQ offered (passive)
    uint32_t flow_label = 0;
    // rdma_set_option's ToS, and the route's traffic class: the ToS when the
    // route was resolved (active side), the REQ's (passive side).
    uint8_t tos = 0, traffic_class = 0;
    // rdma_set_option's REUSEADDR, AFONLY (afonly_set: the application set
    // it; else the ID's IP version decides, see Impl::afonly_of) and
    // ACK_TIMEOUT.
    bool reuseaddr = false;
    bool afonly_set = false, afonly = false;
    bool ack_timeout_set = false;
    uint8_t ack_timeout = 0;
    // The route's hop limit and packet life time: RoCE's (rdma_cm's) unless
    // the application gave a path record.
    uint8_t hop_limit = kHopLimit, packet_life_time = kPacketLifeTime;
    // The path's local ACK timeout: its packet life time + 1, at most the
    // REQ field's 31 (cm_ack_timeout).
    uint8_t local_ack_timeout() const { return uint8_t(std::min(packet_life_time + 1, 31)); }
    Gid sgid{}, dgid{};
    uint32_t sgid_index = 0;
    // ADDR_QUERY: when to give up (its `deadline` is the next look).
    uint64_t addr_deadline = 0;
    // MAD retransmission: the last MAD sent, when to resend it, how often more.
    Mad last_mad{};
    uint64_t deadline = 0, interval = 0;
    uint32_t retries_left = 0;
    // Destroyed by its application while its DREQ waits for the DREP: kept,
    // unseen by the application, to resend the DREQ until the peer answers
    // or the retries run out.
    bool orphan = false;
};

struct Agent::Impl {
    Hooks& hooks;
    Timing timing;
    std::map<std::string, Port> ports;
    std::map<uint32_t, Id> ids;
    uint32_t next_handle = 1;
    size_t max_ids_per_channel = 0;  // 0: none
    bool bindv6only = false;         // the host's net.ipv6.bindv6only
    // Whether a listener's channel may take one more ID (for a request).
    // The IDs an application holds on `channel` (orphans are the agent's).
    size_t ids_on(uint64_t channel) const {
        size_t n = 0;
        for (const auto& [h, id] : ids) n += id.channel == channel && !id.orphan;
        return n;
    }
    bool room_on(uint64_t channel) const { return max_ids_per_channel == 0 || ids_on(channel) < max_ids_per_channel; }
    // ib_cm's TID: the MAD agent's high half, the ID's communication ID low.
    static constexpr uint64_t kTidHigh = uint64_t{1} << 32;

    Impl(Hooks& h, Timing t) : hooks(h), timing(t) {}

    Id* find(uint32_t h) {
        auto it = ids.find(h);
        return it == ids.end() || it->second.orphan ? nullptr : &it->second;
    }
    const Id* find(uint32_t h) const {
        auto it = ids.find(h);
        return it == ids.end() || it->second.orphan ? nullptr : &it->second;
    }
    Id* by_local_comm(uint32_t comm) {
        if (comm == 0) return nullptr;
        for (auto& [h, id] : ids)
            if (id.local_comm_id == comm && id.state != State::Listen) return &id;
        return nullptr;
    }

    // The device whose GID table holds `gid`, and the entry's index.
    const Port* port_of(const Gid& gid, uint32_t* index = nullptr) const {
        for (const auto& [name, p] : ports)
            for (const auto& [idx, g] : p.gids)
                if (g == gid) {
                    if (index) *index = idx;
                    return &p;
                }
        return nullptr;
    }

    uint32_t new_comm_id() {
        for (;;) {
            const uint32_t c = hooks.random32();
            if (c != 0 && !by_local_comm(c)) return c;
        }
    }

    // rdma_bind_addr's default when the application did not set AFONLY:
    // an IPv4 ID is AF-only, an IPv6 one as net.ipv6.bindv6only says.
    bool afonly_of(const Id& id, bool v6) const { return id.afonly_set ? id.afonly : (!v6 || bindv6only); }

    // cma_check_port: whether `self` may hold address `a` beside the other
    // IDs holding a.port in its port space: EADDRINUSE for the same address,
    // EADDRNOTAVAIL where either is a wildcard, unless both allow reuse
    // (`reuse`: self's REUSEADDR counts; not at listen) or both are AF-only
    // and of different IP versions.
    // Whether `o`, another ID than `self`, holds `port` in self's port
    // space (an accepted connection shares its listener's port instead).
    static bool holds_port(const Id& o, const Id& self, uint16_t port) {
        return &o != &self && o.bound && !o.accepted && o.ps == self.ps && o.src.port == port;
    }

    int check_port(const Id& self, const SockAddr& a, bool reuse) const {
        for (const auto& [h, o] : ids) {
            if (!holds_port(o, self, a.port)) continue;
            if (reuse && o.reuseaddr) continue;
            if (afonly_of(self, a.v6) && afonly_of(o, o.src.v6) && o.src.v6 != a.v6) continue;
            if (a.any() || o.src.any()) return EADDRNOTAVAIL;
            if (o.src.v6 == a.v6 && o.src.addr == a.addr) return EADDRINUSE;
        }
        return 0;
    }

    // An ephemeral port as the kernel's rdma_cm picks one (cma_alloc_any_port):
    // random within the local port range, held by no ID of the port space.
    uint16_t ephemeral(const Id& self, SockAddr a) {
        auto taken = [&](uint16_t port) {
            return std::any_of(ids.begin(), ids.end(), [&](const auto& e) { return holds_port(e.second, self, port); });
        };
        for (int tries = 0; tries < 4096; ++tries) {
            a.port = uint16_t(32768 + hooks.random32() % (60999 - 32768 + 1));
            if (!taken(a.port)) return a.port;
        }
        return 0;
    }

    // cma_match_private_data: a wildcard listener that is not AF-only takes
    // a request of either IP version; otherwise the version of the request's
    // rdma_cm header must be the listener's, and so must its address `to`
    // unless the listener's is a wildcard.
    bool listens_for(const Id& l, const CmaHdr& c, const Gid& to) const {
        if (l.src.any() && !afonly_of(l, l.src.v6)) return true;
        if ((c.ip_version == 6) != l.src.v6) return false;
        return l.src.any() || l.src.addr == to;
    }

    void event(const Id& id, EventType t, int status = 0, const ConnParam* p = nullptr) {
        if (id.orphan) return;
        Event e;
        e.type = t;
        e.id = id.handle;
        e.status = status;
        e.device = id.device;
        e.src = id.src;
        e.dst = id.dst;
        if (p) e.param = *p;
        hooks.deliver(id.channel, e);
    }

    // The ID's last MAD again (a retransmission, or the answer to a
    // repeated request), on the connection's path as the first went.
    void resend(const Id& id) { hooks.send_mad(id.device, id.sgid, id.dgid, id.traffic_class, id.last_mad); }

    void send(Id& id, const Mad& m, uint64_t interval) {
        hooks.send_mad(id.device, id.sgid, id.dgid, id.traffic_class, m);
        id.last_mad = m;
        if (interval) {
            id.interval = interval;
            id.deadline = hooks.now_ms() + interval;
            id.retries_left = timing.max_retries;
        } else {
            id.deadline = 0;
        }
    }

    MadHdr hdr(uint64_t tid) const {
        MadHdr h;
        h.tid = tid;
        return h;
    }

    void send_rej(Id& id, RejReason reason, RejMsg what) {
        Rej r;
        r.local_comm_id = id.local_comm_id;
        r.remote_comm_id = id.remote_comm_id;
        r.msg_rejected = what;
        r.reason = uint16_t(reason);
        send(id, encode(hdr(id.tid), r), 0);
    }

    void send_dreq(Id& id, bool retransmit) {
        Dreq d;
        d.local_comm_id = id.local_comm_id;
        d.remote_comm_id = id.remote_comm_id;
        d.remote_qpn = id.remote_qpn;
        // ib_cm gives a DREQ a new transaction of the same ID.
        id.tid = kTidHigh | id.local_comm_id;
        send(id, encode(hdr(id.tid), d), retransmit ? timing.dreq_ms : 0);
    }

    void send_drep(Id& id) {
        Drep d;
        d.local_comm_id = id.local_comm_id;
        d.remote_comm_id = id.remote_comm_id;
        send(id, encode(hdr(id.tid), d), 0);
    }

    ConnParam param_of(const uint8_t* priv, size_t n, uint8_t rr, uint8_t id_, uint8_t fc, uint8_t retry,
                       uint8_t rnr, bool srq, uint32_t qpn) const {
        ConnParam p;
        p.private_data.assign(priv, priv + n);
        p.responder_resources = rr;
        p.initiator_depth = id_;
        p.flow_control = fc;
        p.retry_count = retry;
        p.rnr_retry_count = rnr;
        p.srq = srq;
        p.qp_num = qpn;
        return p;
    }

    // A listener's new ID for a request (REQ or SIDR_REQ) that arrived on
    // `device` for `local` from `peer`: REQ_RCVD, on the listener's port.
    Id new_child(const Id& listener, const std::string& device, const CmaHdr& c, const Gid& local,
                 const Gid& peer, uint32_t remote_comm_id, uint64_t tid) {
        Id child;
        child.handle = next_handle++;
        child.channel = listener.channel;
        child.ps = listener.ps;
        child.state = State::ReqRcvd;
        child.device = device;
        child.bound = true;
        child.accepted = true;
        child.src.v6 = c.ip_version == 6;
        child.src.addr = local;
        child.src.port = listener.src.port;
        child.dst.v6 = child.src.v6;
        child.dst.addr = peer;
        child.dst.port = c.src_port;
        child.remote_comm_id = remote_comm_id;
        child.tid = tid;
        child.sgid = local;
        child.dgid = peer;
        uint32_t idx = 0;
        if (port_of(child.sgid, &idx)) child.sgid_index = idx;
        return child;
    }

    // Keeps `child` and tells its listener's application: CONNECT_REQUEST.
    void offer(Id child, uint32_t listen_id, ConnParam param) {
        const uint32_t handle = child.handle;
        Id& nid = ids.emplace(handle, std::move(child)).first->second;
        Event e;
        e.type = EventType::ConnectRequest;
        e.id = handle;
        e.listen_id = listen_id;
        e.device = nid.device;
        e.src = nid.src;
        e.dst = nid.dst;
        e.param = std::move(param);
        hooks.deliver(nid.channel, e);
    }

    // ---- received MADs ----
    // `reply_tclass`: the traffic class of what answers a MAD without a
    // connection of its own (see on_mad).
    void on_req(const std::string& device, const Gid& from, uint8_t reply_tclass, const uint8_t* mad,
                const MadHdr& h);
    void on_rep(const uint8_t* mad, const MadHdr& h);
    void on_rtu(const uint8_t* mad);
    void on_rej(const uint8_t* mad);
    void on_dreq(const std::string& device, const Gid& from, const Gid& to, uint8_t reply_tclass, const uint8_t* mad,
                 const MadHdr& h);
    void on_drep(const uint8_t* mad);
    void on_sidr_req(const std::string& device, const Gid& from, const Gid& to, uint8_t reply_tclass,
                     const uint8_t* mad, const MadHdr& h);
    void on_sidr_rep(const uint8_t* mad);

    void send_sidr_rep(Id& id, SidrStatus st, uint32_t qpn, const std::vector<uint8_t>& priv) {
        SidrRep r;
        r.request_id = id.remote_comm_id;
        r.status = st;
        r.qpn = st == SidrStatus::Success ? qpn : 0;
        r.service_id = service_id(id.ps, id.src.port);
        r.qkey = st == SidrStatus::Success ? kUdpQkey : 0;
        std::copy(priv.begin(), priv.end(), r.private_data.begin());
        send(id, encode(hdr(id.tid), r), 0);
    }

    bool destroy(Id& id);
};

Agent::Agent(Hooks& hooks, Timing timing) : impl_(std::make_unique<Impl>(hooks, timing)) {}
Agent::~Agent() = default;

void Agent::set_port(const Port& p) { impl_->ports[p.device] = p; }

void Agent::remove_port(const std::string& device) {
    impl_->ports.erase(device);
    for (auto it = impl_->ids.begin(); it != impl_->ids.end();) {
        Id& id = it->second;
        if (id.device != device) {
            ++it;
            continue;
        }
        // An orphan resending its DREQ has no device to send from now and
        // no application to destroy it: it goes (kept in ERROR, it held its
        // port for ever; found by fuzz_cm).
        if (id.orphan) {
            it = impl_->ids.erase(it);
            continue;
        }
        id.deadline = 0;
        id.state = State::Error;
        impl_->event(id, EventType::DeviceRemoval);
        ++it;
    }
}

int Agent::create_id(uint64_t channel, uint16_t ps, uint32_t& out) {
    // RC connections, and UD through SIDR (RDMA_PS_UDP). RDMA_PS_IPOIB
    // belongs to IPoIB, which RoCE has not.
    if (ps != kPsTcp && ps != kPsIb && ps != kPsUdp) return EPROTONOSUPPORT;
    Id id;
    id.handle = impl_->next_handle++;
    id.channel = channel;
    id.ps = ps;
    out = id.handle;
    impl_->ids.emplace(out, std::move(id));
    return 0;
}

int Agent::bind(uint32_t h, const SockAddr& a) {
    Id* id = impl_->find(h);
    if (!id) return EINVAL;
    if (id->state != State::Idle) return EINVAL;
    std::string device;
    uint32_t idx = 0;
    if (!a.any()) {
        const Port* p = impl_->port_of(a.addr, &idx);
        if (!p) return EADDRNOTAVAIL;
        device = p->device;
    }
    SockAddr s = a;
    if (s.port == 0) {
        s.port = impl_->ephemeral(*id, s);
        if (s.port == 0) return EADDRINUSE;
    } else if (int e = impl_->check_port(*id, s, id->reuseaddr)) {
        return e;
    }
    id->src = s;
    id->device = device;
    id->sgid = s.addr;
    id->sgid_index = idx;
    id->bound = true;
    id->state = State::AddrBound;
    return 0;
}

int Agent::resolve_addr(uint32_t h, const std::optional<SockAddr>& src, const SockAddr& dst, uint32_t timeout_ms) {
    Id* id = impl_->find(h);
    if (!id) return EINVAL;
    if (id->state == State::Idle && src) {
        if (int e = bind(h, *src)) return e;
    }
    if (id->state != State::Idle && id->state != State::AddrBound) return EINVAL;
    if (dst.any()) return EADDRNOTAVAIL;
    id->dst = dst;
    // The source: the bound address, else what the host's routing table
    // would send from (127.0.0.1 for 127.0.0.1).
    std::optional<Gid> from;
    if (id->bound && !id->src.any()) from = id->src.addr;
    else from = impl_->hooks.route_source(dst.addr);
    uint32_t idx = 0;
    const Port* p = from ? impl_->port_of(*from, &idx) : nullptr;
    if (!p) {
        // As rdma_cm: the call succeeds and the event reports the failure.
        id->state = State::AddrBound;
        impl_->event(*id, EventType::AddrError, -ENODEV);
        return 0;
    }
    SockAddr s = id->src;
    s.addr = *from;
    s.v6 = dst.v6;
    if (!id->bound || s.port == 0) {
        s.port = impl_->ephemeral(*id, s);
        if (s.port == 0) return EADDRINUSE;
    }
    id->src = s;
    id->bound = true;
    id->device = p->device;
    id->sgid = *from;
    id->sgid_index = idx;
    id->dgid = dst.addr;
    // A group's link address follows from its IP address (arp_mc_map): there
    // is no neighbour to wait for.
    if (!hw::is_multicast_gid(id->dgid.data()) && !impl_->hooks.neighbour_ready(id->device, id->dgid)) {
        // The kernel's address query waits for the neighbour (addr_resolve
        // with resolve_neigh): so does this one, looking again every few
        // milliseconds until the timeout.
        const uint64_t now = impl_->hooks.now_ms();
        id->state = State::AddrQuery;
        id->addr_deadline = now + (timeout_ms ? timeout_ms : kAddrTimeoutMs);
        id->deadline = now + kAddrPollMs;
        id->retries_left = 0;
        return 0;
    }
    id->state = State::AddrResolved;
    impl_->event(*id, EventType::AddrResolved);
    return 0;
}

int Agent::join_multicast(uint32_t h, const SockAddr& group) {
    Id* id = impl_->find(h);
    if (!id) return EINVAL;
    if ((id->state != State::AddrBound && id->state != State::AddrResolved) || id->device.empty()) return EINVAL;
    if (!hw::is_multicast_gid(group.addr.data())) return EINVAL;
    Event e;
    e.type = EventType::MulticastJoin;
    e.id = id->handle;
    e.device = id->device;
    e.src = id->src;
    e.dst = id->dst;
    e.param.qp_num = hw::kMulticastQpn;
    e.param.qkey = kUdpQkey;  // RDMA_PS_UDP's (cma_set_qkey); IPoIB's would come from its SA
    QpAttr av;
    av.dgid = group.addr;  // cma_iboe_set_mgid: the IPv4-mapped or IPv6 group address
    av.sgid_index = uint8_t(id->sgid_index);
    av.hop_limit = kHopLimit;  // IPV6_DEFAULT_HOPLIMIT for RoCE v2
    e.ah = av;
    if (!id->orphan) impl_->hooks.deliver(id->channel, e);
    return 0;
}

int Agent::resolve_route(uint32_t h) {
    Id* id = impl_->find(h);
    if (!id) return EINVAL;
    if (id->state != State::AddrResolved) return EINVAL;
    auto p = impl_->ports.find(id->device);
    if (p == impl_->ports.end()) return ENODEV;
    // RoCE's "path record" is local: the port's MTU, hop limit 64, and the
    // flow label rdma_cm derives from the two ports.
    id->path_mtu = p->second.active_mtu;
    id->flow_label = roce::cm_flow_label(id->src.port, id->dst.port);
    id->traffic_class = id->tos;  // rdma_cm's default_roce_tos is 0 unless configfs sets it
    id->state = State::RouteResolved;
    impl_->event(*id, EventType::RouteResolved);
    return 0;
}

int Agent::set_tos(uint32_t h, uint8_t tos) {
    Id* id = impl_->find(h);
    if (!id) return EINVAL;
    id->tos = tos;
    return 0;
}

int Agent::set_reuseaddr(uint32_t h, bool reuse) {
    Id* id = impl_->find(h);
    if (!id) return EINVAL;
    if (!((reuse && id->state != State::Listen) || id->state == State::Idle)) return EINVAL;
    id->reuseaddr = reuse;
    return 0;
}

int Agent::set_afonly(uint32_t h, bool afonly) {
    Id* id = impl_->find(h);
    if (!id) return EINVAL;
    if (id->state != State::Idle && id->state != State::AddrBound) return EINVAL;
    id->afonly_set = true;
    id->afonly = afonly;
    return 0;
}

void Agent::set_bindv6only(bool on) { impl_->bindv6only = on; }

int Agent::set_ib_path(uint32_t h, const PathRecord& path) {
    Id* id = impl_->find(h);
    if (!id) return EINVAL;
    if (id->state != State::AddrResolved) return EINVAL;
    auto p = impl_->ports.find(id->device);
    if (p == impl_->ports.end()) return ENODEV;
    uint32_t idx = 0;
    const Port* owner = impl_->port_of(path.sgid, &idx);
    if (!owner || owner->device != id->device) return EINVAL;
    if (path.mtu < 1 || path.mtu > 5) return EINVAL;
    id->sgid = path.sgid;
    id->sgid_index = idx;
    id->dgid = path.dgid;
    id->flow_label = path.flow_label & 0xFFFFF;
    id->hop_limit = path.hop_limit;
    id->traffic_class = path.traffic_class;
    id->path_mtu = path.mtu;
    id->packet_life_time = path.packet_life_time & 0x3F;
    id->state = State::RouteResolved;
    impl_->event(*id, EventType::RouteResolved);
    return 0;
}

int Agent::set_ack_timeout(uint32_t h, uint8_t timeout) {
    Id* id = impl_->find(h);
    if (!id) return EINVAL;
    // rdma_set_ack_timeout: RC (and XRC initiator) QPs only; an ID's QP type
    // follows its port space (rdma_create_id: UD for RDMA_PS_UDP).
    if (id->ud()) return EINVAL;
    id->ack_timeout_set = true;
    id->ack_timeout = timeout;
    return 0;
}

int Agent::listen(uint32_t h) {
    Id* id = impl_->find(h);
    if (!id) return EINVAL;
    if (id->state == State::Idle) {
        if (int e = bind(h, SockAddr{})) return e;
    }
    if (id->state != State::AddrBound) return EINVAL;
    // REUSEADDR let it share its address at bind; a listener may not
    // (rdma_listen checks the port again without it, then turns it off).
    if (id->reuseaddr) {
        if (int e = impl_->check_port(*id, id->src, false)) return e;
        id->reuseaddr = false;
    }
    id->state = State::Listen;
    return 0;
}

// rdma_cm's header, first in the private data of a REQ or SIDR_REQ.
static CmaHdr cma_hdr_of(const Id& id) {
    CmaHdr c;
    c.ip_version = id.dst.v6 ? 6 : 4;
    c.src_port = id.src.port;
    // cma_hdr's IPv4 addresses sit in the last four bytes, after zeros.
    c.src_addr = id.sgid;
    c.dst_addr = id.dgid;
    if (!id.dst.v6) {
        std::fill(c.src_addr.begin(), c.src_addr.begin() + 12, 0);
        std::fill(c.dst_addr.begin(), c.dst_addr.begin() + 12, 0);
    }
    return c;
}

int Agent::connect(uint32_t h, const ConnParam& p) {
    Id* id = impl_->find(h);
    if (!id) return EINVAL;
    if (id->state != State::RouteResolved) return EINVAL;
    if (id->ud()) {
        // SIDR (cma_resolve_ib_udp): the request ID is the ID's
        // communication ID; retransmitted until the SIDR_REP comes.
        if (p.private_data.size() > kSidrReqPrivateBytes - kCmaHdrBytes) return EINVAL;
        id->local_comm_id = impl_->new_comm_id();
        id->tid = Impl::kTidHigh | id->local_comm_id;
        SidrReq r;
        r.request_id = id->local_comm_id;
        r.service_id = service_id(id->ps, id->dst.port);
        put_cma_hdr(r.private_data.data(), cma_hdr_of(*id));
        std::copy(p.private_data.begin(), p.private_data.end(), r.private_data.begin() + kCmaHdrBytes);
        id->state = State::ReqSent;
        impl_->send(*id, encode(impl_->hdr(id->tid), r), impl_->timing.sidr_ms);
        return 0;
    }
    if (p.private_data.size() > kReqPrivateBytes - kCmaHdrBytes) return EINVAL;
    auto port = impl_->ports.find(id->device);
    if (port == impl_->ports.end()) return ENODEV;
    id->local_comm_id = impl_->new_comm_id();
    id->tid = Impl::kTidHigh | id->local_comm_id;
    id->local_qpn = p.qp_num & roce::kPsnMask;
    // ib_cm's meaning of the starting PSNs (ib_send_cm_req, cm_req_handler,
    // ib_send_cm_rep, cm_rep_handler; seen in the golden rping captures): the
    // REQ's is the PSN the active side's receive queue expects, the first the
    // passive side sends; the REP's the other way round.
    id->rq_psn = impl_->hooks.random32() & roce::kPsnMask;
    id->retry_count = p.retry_count & 7;
    id->rnr_retry_count = p.rnr_retry_count & 7;
    Req r;
    r.local_comm_id = id->local_comm_id;
    r.service_id = service_id(id->ps, id->dst.port);
    r.local_ca_guid = port->second.node_guid;
    r.local_qpn = id->local_qpn;
    r.responder_resources = p.responder_resources;
    r.initiator_depth = p.initiator_depth;
    r.remote_cm_response_timeout = kCmResponseTimeout;
    r.end_to_end_flow_control = p.flow_control != 0;
    r.starting_psn = id->rq_psn;
    r.local_cm_response_timeout = kCmResponseTimeout;
    r.retry_count = id->retry_count;
    r.path_mtu = id->path_mtu;
    r.rnr_retry_count = id->rnr_retry_count;
    r.max_cm_retries = kMaxCmRetries;
    r.srq = p.srq;
    r.primary_local_gid = id->sgid;
    r.primary_remote_gid = id->dgid;
    r.primary_flow_label = id->flow_label;
    r.primary_traffic_class = id->traffic_class;  // cm_format_req: the path's
    r.primary_hop_limit = id->hop_limit;
    r.primary_local_ack_timeout = id->local_ack_timeout();
    r.vendor_id = p.ece_vendor_id & kVendorIdMask;
    put_cma_hdr(r.private_data.data(), cma_hdr_of(*id));
    std::copy(p.private_data.begin(), p.private_data.end(), r.private_data.begin() + kCmaHdrBytes);
    id->state = State::ReqSent;
    MadHdr mh = impl_->hdr(id->tid);
    mh.attr_mod = p.ece_options;  // ECE's options (cm_format_mad_ece_hdr)
    impl_->send(*id, encode(mh, r), impl_->timing.req_ms);
    return 0;
}

int Agent::accept(uint32_t h, const ConnParam& p) {
    Id* id = impl_->find(h);
    if (!id) return EINVAL;
    if (id->state != State::ReqRcvd) return EINVAL;
    if (id->ud()) {
        // The SIDR_REP with our QP and rdma_cm's UDP Q_Key; nothing follows.
        if (p.private_data.size() > kSidrRepPrivateBytes) return EINVAL;
        id->local_qpn = p.qp_num & roce::kPsnMask;
        impl_->send_sidr_rep(*id, SidrStatus::Success, id->local_qpn, p.private_data);
        id->state = State::Established;
        return 0;
    }
    if (p.private_data.size() > kRepPrivateBytes) return EINVAL;
    auto port = impl_->ports.find(id->device);
    if (port == impl_->ports.end()) return ENODEV;
    id->local_qpn = p.qp_num & roce::kPsnMask;
    id->responder_resources = p.responder_resources;
    id->initiator_depth = p.initiator_depth;
    id->rnr_retry_count = p.rnr_retry_count & 7;
    Rep r;
    r.local_comm_id = id->local_comm_id;
    r.remote_comm_id = id->remote_comm_id;
    r.local_qpn = id->local_qpn;
    r.starting_psn = id->rq_psn;  // what our receive queue expects
    r.responder_resources = p.responder_resources;
    r.initiator_depth = p.initiator_depth;
    r.target_ack_delay = port->second.ca_ack_delay;
    r.end_to_end_flow_control = p.flow_control != 0;
    r.rnr_retry_count = id->rnr_retry_count;
    r.srq = p.srq;
    r.local_ca_guid = port->second.node_guid;
    r.vendor_id = p.ece_vendor_id & kVendorIdMask;
    std::copy(p.private_data.begin(), p.private_data.end(), r.private_data.begin());
    id->state = State::RepSent;
    MadHdr mh = impl_->hdr(id->tid);
    mh.attr_mod = p.ece_options;  // ECE's options (cm_format_mad_ece_hdr)
    impl_->send(*id, encode(mh, r), impl_->timing.req_ms);
    return 0;
}

int Agent::reject(uint32_t h, const std::vector<uint8_t>& priv, uint8_t reason) {
    Id* id = impl_->find(h);
    if (!id) return EINVAL;
    // ucma_reject: no reason is the consumer's own; the only other one an
    // application may give is rdma_reject_ece's.
    if (reason == 0) reason = uint8_t(RejReason::ConsumerReject);
    if (reason != uint8_t(RejReason::ConsumerReject) && reason != uint8_t(RejReason::VendorOptionNotSupported))
        return EINVAL;
    if (id->ud()) {
        // rdma_reject of a SIDR_REQ: a SIDR_REP that says so.
        if (id->state != State::ReqRcvd) return EINVAL;
        if (priv.size() > kSidrRepPrivateBytes) return EINVAL;
        impl_->send_sidr_rep(*id, SidrStatus::Rejected, 0, priv);
        id->state = State::Error;
        return 0;
    }
    if (priv.size() > kRejPrivateBytes) return EINVAL;
    RejMsg what;
    if (id->state == State::ReqRcvd) what = RejMsg::Req;
    else if (id->state == State::RepRcvd) what = RejMsg::Rep;
    else return EINVAL;
    Rej r;
    r.local_comm_id = id->local_comm_id;
    r.remote_comm_id = id->remote_comm_id;
    r.msg_rejected = what;
    r.reason = reason;
    std::copy(priv.begin(), priv.end(), r.private_data.begin());
    impl_->send(*id, encode(impl_->hdr(id->tid), r), 0);
    id->state = State::Error;
    return 0;
}

int Agent::establish(uint32_t h) {
    Id* id = impl_->find(h);
    if (!id) return EINVAL;
    if (id->state != State::RepRcvd) return EINVAL;
    Rtu r;
    r.local_comm_id = id->local_comm_id;
    r.remote_comm_id = id->remote_comm_id;
    id->state = State::Established;
    impl_->send(*id, encode(impl_->hdr(id->tid), r), 0);
    return 0;
}

int Agent::notify(uint32_t h, uint32_t event) {
    // ib_event_type's (and ibv_event_type's) numbers of the two events
    // ib_cm_notify knows.
    constexpr uint32_t kCommEst = 4, kPathMig = 6;
    Id* id = impl_->find(h);
    if (!id) return EINVAL;
    // ucma_notify: an ID without a device; rdma_notify: one without an ib_cm
    // ID of its own (not yet connecting, or a UD ID, whose SIDR ib_cm ID is
    // idle once answered; a listener's is in LISTEN, which ib_cm refuses too).
    if (id->device.empty() || id->ud()) return EINVAL;
    if (event == kCommEst) {
        // cm_establish: REP_SENT (or MRA_REP_RCVD, which simnic never enters).
        if (id->state == State::Established) return EISCONN;
        if (id->state != State::RepSent) return EINVAL;
        // The QP saw the peer's first packet before the RTU (an application
        // calls this on IBV_EVENT_COMM_EST): established now, the REP no
        // longer resent (cm_establish_handler cancels it); a late RTU is
        // dropped as for any established connection.
        id->deadline = 0;
        id->state = State::Established;
        const ConnParam p = impl_->param_of(nullptr, 0, id->responder_resources, id->initiator_depth, 0,
                                            id->retry_count, id->rnr_retry_count, false, id->remote_qpn);
        impl_->event(*id, EventType::Established, 0, &p);
        return 0;
    }
    if (event == kPathMig) {
        // cm_migrate: only an established connection with no path load in
        // progress (rdma_cm on RoCE loads none).
        return id->state == State::Established ? 0 : EINVAL;
    }
    return EINVAL;
}

int Agent::disconnect(uint32_t h) {
    Id* id = impl_->find(h);
    if (!id) return EINVAL;
    switch (id->state) {
        case State::Established:
            id->state = State::DreqSent;
            impl_->send_dreq(*id, true);
            return 0;
        case State::DreqRcvd:
            // Answering the peer's disconnect (rdma_disconnect after DISCONNECTED).
            id->state = State::TimeWait;
            impl_->send_drep(*id);
            return 0;
        case State::DreqSent:
        case State::TimeWait: return 0;
        default: return EINVAL;
    }
}

// What ib_cm sends when an ID goes away in each state, so that the peer
// learns of it rather than waiting out its timers. A connection's DREQ
// (destroyed established, or while its DREQ is out) is resent until the DREP
// comes or the retries run out, as IBA 12.9.6 has the CM do; ib_cm stops
// resending when the ID is destroyed, so that one lost DREQ leaves the peer
// connected to nobody (rping's server waiting for ever after its client,
// which destroys its ID right after rdma_disconnect, lost the DREQ on a lossy
// wire). True if the ID must stay, as an orphan, for that.
bool Agent::Impl::destroy(Id& id) {
    if (id.ud()) {
        // A SIDR_REQ left unanswered is refused (ib_cm's
        // cm_reject_sidr_req); one we sent is simply no longer waited for.
        if (id.state == State::ReqRcvd) send_sidr_rep(id, SidrStatus::Rejected, 0, {});
        return false;
    }
    switch (id.state) {
        case State::ReqSent: send_rej(id, RejReason::Timeout, RejMsg::Req); break;
        case State::ReqRcvd: send_rej(id, RejReason::ConsumerReject, RejMsg::Req); break;
        case State::RepSent: send_rej(id, RejReason::ConsumerReject, RejMsg::Rep); break;
        case State::RepRcvd: send_rej(id, RejReason::ConsumerReject, RejMsg::Rep); break;
        case State::Established:
            id.state = State::DreqSent;
            send_dreq(id, true);
            break;
        case State::DreqRcvd: send_drep(id); break;
        default: break;
    }
    if (id.state != State::DreqSent) return false;
    id.orphan = true;
    id.channel = 0;
    return true;
}

int Agent::destroy_id(uint32_t h) {
    Id* id = impl_->find(h);
    if (!id) return EINVAL;
    if (!impl_->destroy(*id)) impl_->ids.erase(h);
    return 0;
}

void Agent::destroy_channel(uint64_t channel) {
    for (auto it = impl_->ids.begin(); it != impl_->ids.end();) {
        if (it->second.channel == channel && !it->second.orphan) {
            it = impl_->destroy(it->second) ? std::next(it) : impl_->ids.erase(it);
        } else {
            ++it;
        }
    }
}

int Agent::init_qp_attr(uint32_t h, hw::QpState st, QpAttr& a) const {
    namespace m = hw::qp_attr_mask;
    const Id* id = impl_->find(h);
    if (!id) return EINVAL;
    a = QpAttr{};
    a.state = st;
    if (id->ud()) {
        // rdma_cm's UD QP (cma_ib_init_qp_attr, ucma_init_ud_qp): the
        // port, P_Key index and the UDP Q_Key at INIT; RTR and RTS need
        // nothing but the state and the SQ PSN, 0.
        switch (st) {
            case hw::QpState::Init:
                a.mask = m::kState | m::kPkeyIndex | m::kPort | m::kQkey;
                a.qkey = kUdpQkey;
                return 0;
            case hw::QpState::Rtr: a.mask = m::kState; return 0;
            case hw::QpState::Rts: a.mask = m::kState | m::kSqPsn; return 0;
            default: return EINVAL;
        }
    }
    const bool connected = id->state == State::ReqRcvd || id->state == State::RepSent ||
                           id->state == State::RepRcvd || id->state == State::Established;
    switch (st) {
        case hw::QpState::Init:
            // Before the connection exists rdma_cm grants no remote access;
            // once the IB CM knows the responder resources it grants what
            // they allow (ib_cm_init_qp_attr).
            a.mask = m::kState | m::kAccessFlags | m::kPkeyIndex | m::kPort;
            if (connected) {
                a.access_flags = hw::access::kRemoteWrite;
                if (id->responder_resources) a.access_flags |= hw::access::kRemoteRead | hw::access::kRemoteAtomic;
            }
            return 0;
        case hw::QpState::Rtr:
            if (!connected) return EINVAL;
            a.mask = m::kState | m::kAv | m::kPathMtu | m::kDestQpn | m::kRqPsn |
                     m::kMaxDestRdAtomic | m::kMinRnrTimer;
            a.path_mtu = id->path_mtu;
            a.dest_qpn = id->remote_qpn;
            a.rq_psn = id->rq_psn;
            a.max_dest_rd_atomic = id->responder_resources;
            a.min_rnr_timer = 0;
            a.dgid = id->dgid;
            a.flow_label = id->flow_label;
            a.traffic_class = id->traffic_class;
            a.sgid_index = uint8_t(id->sgid_index);
            a.hop_limit = id->hop_limit;
            return 0;
        case hw::QpState::Rts:
            if (!connected) return EINVAL;
            a.mask = m::kState | m::kTimeout | m::kRetryCnt | m::kRnrRetry | m::kSqPsn |
                     m::kMaxQpRdAtomic;
            a.sq_psn = id->sq_psn;
            // rdma_init_qp_attr: the path's, unless rdma_set_ack_timeout set one.
            a.timeout = id->ack_timeout_set ? id->ack_timeout : id->local_ack_timeout();
            a.retry_cnt = id->retry_count;
            a.rnr_retry = id->rnr_retry_count;
            a.max_rd_atomic = id->initiator_depth;
            return 0;
        default: return EINVAL;
    }
}

int Agent::query(uint32_t h, std::string& device, SockAddr& src, SockAddr& dst) const {
    const Id* id = impl_->find(h);
    if (!id) return EINVAL;
    device = id->device;
    src = id->src;
    dst = id->dst;
    return 0;
}

int Agent::req_defaults(uint32_t h, uint8_t& rr, uint8_t& idp) const {
    const Id* id = impl_->find(h);
    if (!id) return EINVAL;
    rr = id->req_initiator_depth;
    idp = id->req_responder_resources;
    return 0;
}

int Agent::migrate(uint32_t h, uint64_t channel) {
    Id* id = impl_->find(h);
    if (!id || channel == 0) return EINVAL;
    id->channel = channel;
    return 0;
}

uint64_t Agent::channel_of(uint32_t h) const {
    const Id* id = impl_->find(h);
    return id ? id->channel : 0;
}

void Agent::set_max_ids_per_channel(size_t n) { impl_->max_ids_per_channel = n; }

size_t Agent::id_count() const {
    size_t n = 0;
    for (const auto& [h, id] : impl_->ids) n += !id.orphan;
    return n;
}

size_t Agent::id_count(uint64_t channel) const { return impl_->ids_on(channel); }

std::string Agent::state_name(uint32_t h) const {
    const Id* id = impl_->find(h);
    return id ? state_str(id->state) : "";
}

// rdma_cm's name for the state an ID of ours is in (enum rdma_cm_state).
static const char* rdma_cm_state(State s) {
    switch (s) {
        case State::Idle: return "IDLE";
        case State::AddrBound: return "ADDR_BOUND";
        case State::AddrQuery: return "ADDR_QUERY";
        case State::AddrResolved: return "ADDR_RESOLVED";
        case State::RouteResolved: return "ROUTE_RESOLVED";
        case State::Listen: return "LISTEN";
        case State::ReqSent:
        case State::ReqRcvd:
        case State::RepSent:
        case State::RepRcvd:
        case State::Established: return "CONNECT";
        // rdma_cm leaves CONNECT for DISCONNECT on a DREQ either way, a REJ
        // or an unreachable peer; only rdma_destroy_id ends it.
        case State::DreqSent:
        case State::DreqRcvd:
        case State::TimeWait:
        case State::Error: return "DISCONNECT";
    }
    return "?";
}

std::vector<Agent::IdInfo> Agent::list(const std::string& device) const {
    std::vector<IdInfo> out;
    for (const auto& [h, id] : impl_->ids) {
        if (id.orphan) continue;
        IdInfo info;
        info.id = h;
        info.channel = id.channel;
        info.state = rdma_cm_state(id.state);
        info.ps = id.ps;
        info.src = id.src;
        info.dst = id.dst;
        info.qpn = id.local_qpn;
        if (!id.device.empty()) {
            if (!device.empty() && id.device != device) continue;
            info.device = id.device;
            out.push_back(info);
        } else if (id.state == State::Listen) {
            for (const auto& [name, port] : impl_->ports) {
                if (!device.empty() && name != device) continue;
                info.device = name;
                out.push_back(info);
            }
        }
    }
    return out;
}

// ---- the wire ----

void Agent::on_mad(const std::string& device, const Gid& src, const Gid& dst, const uint8_t* mad, size_t len,
                   uint8_t traffic_class) {
    MadHdr h;
    if (decode_hdr(mad, len, h) != MadError::Ok) return;  // not ours to answer: dropped, as ib_mad does
    if (!impl_->ports.count(device)) return;
    // What ib_cm sends without a connection of its own (a REJ to a REQ no
    // one listens for, a DREP to an unknown DREQ, a SIDR_REP) goes on an
    // address vector made from the received packet (cm_init_av_for_response,
    // ib_init_ah_attr_from_wc). Its traffic class is read from the first
    // word of the 40-byte GRH area: for RoCE v2 over IPv6 the packet's, over
    // IPv4 zeros (rxe puts the IPv4 header in the area's last 20 bytes).
    const uint8_t reply_tclass = std::equal(kMapped, kMapped + 12, src.begin()) ? 0 : traffic_class;
    switch (AttrId(h.attr_id)) {
        case AttrId::ConnectRequest: impl_->on_req(device, src, reply_tclass, mad, h); break;
        case AttrId::ConnectReply: impl_->on_rep(mad, h); break;
        case AttrId::ReadyToUse: impl_->on_rtu(mad); break;
        case AttrId::ConnectReject: impl_->on_rej(mad); break;
        case AttrId::DisconnectRequest: impl_->on_dreq(device, src, dst, reply_tclass, mad, h); break;
        case AttrId::DisconnectReply: impl_->on_drep(mad); break;
        case AttrId::MsgRcptAck: break;  // simnic answers in time; an MRA changes nothing here
        case AttrId::SidrRequest: impl_->on_sidr_req(device, src, dst, reply_tclass, mad, h); break;
        case AttrId::SidrReply: impl_->on_sidr_rep(mad); break;
    }
}

void Agent::Impl::on_req(const std::string& device, const Gid& from, uint8_t reply_tclass, const uint8_t* mad,
                         const MadHdr& h) {
    const Req r = decode_req(mad);
    // A repeated REQ (our REP was lost or is late): answer again, once.
    for (auto& [hd, id] : ids) {
        if (id.remote_comm_id == r.local_comm_id && id.remote_guid == r.local_ca_guid &&
            (id.state == State::ReqRcvd || id.state == State::RepSent || id.state == State::Established)) {
            if (id.state == State::RepSent) resend(id);
            return;
        }
    }
    const Port& port = ports.at(device);
    CmaHdr c;
    const bool have_cma = get_cma_hdr(r.private_data.data(), c);
    Id* listener = nullptr;
    if (have_cma) {
        for (auto& [hd, id] : ids) {
            if (id.state != State::Listen || service_id(id.ps, id.src.port) != r.service_id) continue;
            if (!id.device.empty() && id.device != device) continue;
            if (!listens_for(id, c, r.primary_remote_gid)) continue;
            listener = &id;
            break;
        }
    }
    if (!listener || r.transport_service_type != 0) {
        // No one listens on this service ID: REJ, as ib_cm does.
        Rej j;
        j.local_comm_id = 0;
        j.remote_comm_id = r.local_comm_id;
        j.msg_rejected = RejMsg::Req;
        j.reason = uint16_t(RejReason::InvalidServiceId);
        hooks.send_mad(device, r.primary_remote_gid, from, reply_tclass, encode(hdr(h.tid), j));
        return;
    }
    if (!room_on(listener->channel)) return;  // its channel is full: the REQ's resend may find room
    Id child = new_child(*listener, device, c, r.primary_remote_gid, r.primary_local_gid, r.local_comm_id, h.tid);
    child.local_comm_id = new_comm_id();
    child.remote_guid = r.local_ca_guid;
    child.remote_qpn = r.local_qpn;
    // The REQ's starting PSN is where our sends begin; our receive queue's
    // goes back in the REP (see Agent::connect).
    child.sq_psn = r.starting_psn;
    child.rq_psn = hooks.random32() & roce::kPsnMask;
    child.path_mtu = std::min(r.path_mtu, port.active_mtu);
    // The passive side's view: our responder resources serve the peer's
    // initiator depth, and the other way round.
    child.req_responder_resources = r.responder_resources;
    child.req_initiator_depth = r.initiator_depth;
    child.responder_resources = r.initiator_depth;
    child.initiator_depth = r.responder_resources;
    child.retry_count = r.retry_count;
    child.rnr_retry_count = r.rnr_retry_count;
    child.flow_label = r.primary_flow_label;
    // The passive side's path is the REQ's (cm_format_paths_from_req): its
    // traffic class, hop limit, and a packet life time one below the REQ's
    // local ACK timeout.
    child.traffic_class = r.primary_traffic_class;
    child.hop_limit = r.primary_hop_limit;
    child.packet_life_time = uint8_t(r.primary_local_ack_timeout - (r.primary_local_ack_timeout > 0));
    ConnParam p = param_of(r.private_data.data() + kCmaHdrBytes, kReqPrivateBytes - kCmaHdrBytes,
                           child.responder_resources, child.initiator_depth, r.end_to_end_flow_control,
                           r.retry_count, r.rnr_retry_count, r.srq, r.local_qpn);
    p.ece_vendor_id = r.vendor_id;  // cm_format_req_event, cma_set_req_event_data
    p.ece_options = h.attr_mod;
    offer(std::move(child), listener->handle, std::move(p));
}

void Agent::Impl::on_rep(const uint8_t* mad, const MadHdr& h) {
    const Rep r = decode_rep(mad);
    Id* id = by_local_comm(r.remote_comm_id);
    if (!id) return;
    if (id->state == State::Established && id->remote_comm_id == r.local_comm_id) {
        // Our RTU was lost: the peer resent its REP.
        resend(*id);
        return;
    }
    if (id->state != State::ReqSent) return;
    id->deadline = 0;
    id->remote_comm_id = r.local_comm_id;
    id->remote_guid = r.local_ca_guid;
    id->remote_qpn = r.local_qpn;
    id->sq_psn = r.starting_psn;  // the REP's: where our sends begin
    // ib_cm's active side: the REP's responder resources are what our
    // initiator may use, its initiator depth what our responder must serve.
    id->initiator_depth = r.responder_resources;
    id->responder_resources = r.initiator_depth;
    id->rnr_retry_count = r.rnr_retry_count;
    id->state = State::RepRcvd;
    ConnParam p = param_of(r.private_data.data(), kRepPrivateBytes, r.initiator_depth, r.responder_resources,
                           r.end_to_end_flow_control, 0, r.rnr_retry_count, r.srq, r.local_qpn);
    p.ece_vendor_id = r.vendor_id;  // cm_format_rep_event, cma_set_rep_event_data
    p.ece_options = h.attr_mod;
    event(*id, EventType::ConnectResponse, 0, &p);
}

void Agent::Impl::on_rtu(const uint8_t* mad) {
    const Rtu r = decode_rtu(mad);
    Id* id = by_local_comm(r.remote_comm_id);
    if (!id || id->state != State::RepSent || id->remote_comm_id != r.local_comm_id) return;
    id->deadline = 0;
    id->state = State::Established;
    const ConnParam p = param_of(r.private_data.data(), kRtuPrivateBytes, id->responder_resources,
                                 id->initiator_depth, 0, id->retry_count, id->rnr_retry_count, false, id->remote_qpn);
    event(*id, EventType::Established, 0, &p);
}

void Agent::Impl::on_rej(const uint8_t* mad) {
    const Rej r = decode_rej(mad);
    Id* id = by_local_comm(r.remote_comm_id);
    if (!id && r.remote_comm_id == 0) {
        // A REJ from a side that never learnt our ID (it gave up waiting for
        // our REP): it names itself only.
        for (auto& [h, o] : ids)
            if (o.remote_comm_id == r.local_comm_id && o.state != State::Listen) id = &o;
    }
    if (!id) return;
    if (id->state != State::ReqSent && id->state != State::RepSent && id->state != State::RepRcvd &&
        id->state != State::ReqRcvd)
        return;
    id->deadline = 0;
    id->state = State::Error;
    const ConnParam p = param_of(r.private_data.data(), kRejPrivateBytes, 0, 0, 0, 0, 0, false, 0);
    event(*id, EventType::Rejected, r.reason, &p);
}

void Agent::Impl::on_dreq(const std::string& device, const Gid& from, const Gid& to, uint8_t reply_tclass,
                          const uint8_t* mad, const MadHdr& h) {
    const Dreq d = decode_dreq(mad);
    Id* id = by_local_comm(d.remote_comm_id);
    if (!id || id->remote_comm_id != d.local_comm_id) {
        // Nothing knows this connection (any more): a DREP ends the peer's
        // wait, as ib_cm's cm_issue_drep does.
        Drep r;
        r.local_comm_id = d.remote_comm_id;
        r.remote_comm_id = d.local_comm_id;
        hooks.send_mad(device, to, from, reply_tclass, encode(hdr(h.tid), r));
        return;
    }
    id->tid = h.tid;
    const ConnParam p = param_of(d.private_data.data(), kDreqPrivateBytes, 0, 0, 0, 0, 0, false, 0);
    switch (id->state) {
        case State::RepSent:
        case State::RepRcvd:
        case State::Established:
            id->deadline = 0;
            id->state = State::DreqRcvd;
            event(*id, EventType::Disconnected, 0, &p);
            break;
        case State::DreqSent:
            // Both sides disconnect at once: answer, and we are done too.
            id->state = State::TimeWait;
            send_drep(*id);
            if (id->orphan) {
                // Its application destroyed it; it was kept only to resend
                // the DREQ, which this DREQ answers as well as a DREP would.
                // Kept, it would hold its port for ever (found by fuzz_cm).
                ids.erase(id->handle);
                break;
            }
            event(*id, EventType::Disconnected, 0, &p);
            break;
        case State::TimeWait: send_drep(*id); break;  // our DREP was lost
        default: break;
    }
}

void Agent::Impl::on_drep(const uint8_t* mad) {
    const Drep d = decode_drep(mad);
    Id* id = by_local_comm(d.remote_comm_id);
    if (!id || id->state != State::DreqSent || id->remote_comm_id != d.local_comm_id) return;
    id->deadline = 0;
    id->state = State::TimeWait;
    if (id->orphan) {
        ids.erase(id->handle);
        return;
    }
    const ConnParam p = param_of(d.private_data.data(), kDrepPrivateBytes, 0, 0, 0, 0, 0, false, 0);
    event(*id, EventType::Disconnected, 0, &p);
}

void Agent::Impl::on_sidr_req(const std::string& device, const Gid& from, const Gid& to, uint8_t reply_tclass,
                              const uint8_t* mad, const MadHdr& h) {
    const SidrReq r = decode_sidr_req(mad);
    // A repeated SIDR_REQ: answer again what we answered, or stay silent
    // while the application decides.
    for (auto& [hd, id] : ids) {
        if (id.ud() && id.remote_comm_id == r.request_id && id.dgid == from &&
            (id.state == State::ReqRcvd || id.state == State::Established)) {
            if (id.state == State::Established) resend(id);
            return;
        }
    }
    CmaHdr c;
    Id* listener = nullptr;
    if (get_cma_hdr(r.private_data.data(), c)) {
        for (auto& [hd, id] : ids) {
            if (id.state != State::Listen || !id.ud() || service_id(id.ps, id.src.port) != r.service_id) continue;
            if (!id.device.empty() && id.device != device) continue;
            if (!listens_for(id, c, to)) continue;
            listener = &id;
            break;
        }
    }
    if (!listener || !room_on(listener->channel)) {
        // No one serves this service ID (ib_cm: IB_SIDR_UNSUPPORTED), or its
        // channel is full (ib_cm rejects a SIDR_REQ its handler failed).
        SidrRep j;
        j.request_id = r.request_id;
        j.status = listener ? SidrStatus::Rejected : SidrStatus::Unsupported;
        j.service_id = r.service_id;
        hooks.send_mad(device, to, from, reply_tclass, encode(hdr(h.tid), j));
        return;
    }
    ConnParam p;
    p.private_data.assign(r.private_data.begin() + kCmaHdrBytes, r.private_data.end());
    Id child = new_child(*listener, device, c, to, from, r.request_id, h.tid);
    child.traffic_class = reply_tclass;  // the SIDR_REP's (cm_sidr_req_handler)
    offer(std::move(child), listener->handle, std::move(p));
}

void Agent::Impl::on_sidr_rep(const uint8_t* mad) {
    const SidrRep r = decode_sidr_rep(mad);
    Id* id = by_local_comm(r.request_id);
    if (!id || !id->ud() || id->state != State::ReqSent) return;
    id->deadline = 0;
    Event e;
    e.id = id->handle;
    e.device = id->device;
    e.src = id->src;
    e.dst = id->dst;
    e.param.private_data.assign(r.private_data.begin(), r.private_data.end());
    if (r.status != SidrStatus::Success) {
        // cma_sidr_rep_handler: UNREACHABLE with the SIDR status.
        id->state = State::Error;
        e.type = EventType::Unreachable;
        e.status = int(r.status);
    } else if (r.qkey != kUdpQkey) {
        // cma_set_qkey: the port space's Q_Key or nothing.
        id->state = State::Error;
        e.type = EventType::AddrError;
        e.status = -EINVAL;
    } else {
        id->state = State::Established;
        id->remote_qpn = r.qpn;
        e.type = EventType::Established;
        e.param.qp_num = r.qpn;
        e.param.qkey = r.qkey;
        QpAttr av;
        av.dgid = id->dgid;
        av.flow_label = id->flow_label;
        av.traffic_class = id->traffic_class;  // ib_init_ah_attr_from_path of the route
        av.sgid_index = uint8_t(id->sgid_index);
        av.hop_limit = id->hop_limit;
        e.ah = av;
    }
    if (!id->orphan) hooks.deliver(id->channel, e);
}

uint64_t Agent::on_timer() {
    const uint64_t now = impl_->hooks.now_ms();
    std::vector<uint32_t> done;  // orphans whose DREQ ran out of retries
    for (auto& [h, id] : impl_->ids) {
        if (id.deadline == 0 || id.deadline > now) continue;
        if (id.state == State::AddrQuery) {
            id.deadline = 0;
            if (impl_->hooks.neighbour_ready(id.device, id.dgid)) {
                id.state = State::AddrResolved;
                impl_->event(id, EventType::AddrResolved);
            } else if (now >= id.addr_deadline) {
                // As rdma_cm reports a neighbour that never answered.
                id.state = State::AddrBound;
                impl_->event(id, EventType::AddrError, -ETIMEDOUT);
            } else {
                id.deadline = std::min(now + kAddrPollMs, id.addr_deadline);
            }
            continue;
        }
        if (id.retries_left > 0) {
            --id.retries_left;
            impl_->resend(id);
            id.deadline = now + id.interval;
            continue;
        }
        // Out of retries: what ib_cm reports to rdma_cm for each state.
        id.deadline = 0;
        switch (id.state) {
            case State::ReqSent:
            case State::RepSent:
                id.state = State::Error;
                impl_->event(id, EventType::Unreachable, -ETIMEDOUT);
                break;
            case State::DreqSent:
                id.state = State::TimeWait;
                if (id.orphan) done.push_back(h);
                impl_->event(id, EventType::Disconnected, -ETIMEDOUT);
                break;
            default: break;
        }
    }
    for (uint32_t h : done) impl_->ids.erase(h);
    return next_deadline();
}

uint64_t Agent::next_deadline() const {
    uint64_t d = 0;
    for (const auto& [h, id] : impl_->ids)
        if (id.deadline && (d == 0 || id.deadline < d)) d = id.deadline;
    return d;
}

}  // namespace simnic::cm
