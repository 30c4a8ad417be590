// librdmacm for simnic devices, inside libsimnic-verbs.so (LD_PRELOAD).
//
// Linux's librdmacm is a thin layer over the kernel's rdma_cm
// (/dev/infiniband/rdma_cm); for simnic devices the simnic daemon plays that
// kernel: its CM agent (cm/, daemon/src/cm_service.*) resolves addresses,
// speaks the IB CM on the devices' QP1 and produces the events. This file
// defines librdmacm's exported entry points and does what librdmacm itself
// does in the application: it keeps the rdma_cm_id and rdma_cm_event
// objects, opens the device contexts (id->verbs), creates QPs and moves them
// through INIT, RTR and RTS with the attributes the CM computed, exactly
// where librdmacm does (rdma_create_qp, rdma_accept, the CONNECT_RESPONSE
// that becomes ESTABLISHED, rdma_disconnect).
//
// An event channel is a connection to the daemon, so channel->fd is a real
// socket: poll it, make it non-blocking, as with librdmacm. Requests go over
// one more connection per process.
//
// Life cycles follow librdmacm and the kernel's ucma file:
//   - rdma_destroy_id waits until every event handed out for the ID has been
//     acked; events still queued for it are dropped unread;
//   - a thread waiting in rdma_get_cm_event when its channel is destroyed
//     keeps waiting (the kernel's read holds the file), and so does one that
//     calls it on a channel already destroyed, which the kernel would fail
//     with EBADF: an event thread that outlives its channel, as rping's
//     does, must not fail for it (a late call used to reach the real
//     librdmacm, which said ENODEV: issue 12's "rdma_get_cm_event: No such
//     device" under CPU load);
//   - when the daemon goes away (it died or stopped), each ID of a channel
//     that is bound to a device gets RDMA_CM_EVENT_DEVICE_REMOVAL, as rdma_cm
//     reports a removed device, and then rdma_get_cm_event fails with ENODEV.
//
// rsockets (rsocket.c, inside librdmacm) runs on these IDs too: it calls
// the entry points here, and two of librdmacm's internal functions that
// read an ID as librdmacm lays it out, which an Id therefore mirrors
// (CmaIdPrivate below).
//
// Which library serves a process is decided once, at its first event
// channel (or ID, or address lookup): if the daemon has any simnic device,
// simnic does; otherwise every call goes on to the real librdmacm
// (dlvsym(RTLD_NEXT)), i.e. the kernel's rdma_cm. Objects of the other kind
// are always passed on, so a call never mixes them. The synchronous API
// (rdma_create_ep, rdma_get_request), rdma_migrate_id, the CQs
// rdma_create_qp makes when given none, SRQs through the CM, ECE
// (rdma_set_local_ece and friends, with ibv_query_ece/ibv_set_ece on the QP,
// which a simnic QP answers EOPNOTSUPP as rxe's does) and rdma_notify are
// done as librdmacm does them.
#include <dlfcn.h>
#include <fcntl.h>
#include <infiniband/sa.h>
#include <netdb.h>
#include <netinet/in.h>
#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "provider.h"
#include "real_symbol.h"
#include "simnic/cm/agent.h"
#include "simnic/control/client.h"
#include "simnic/control/cm_protocol.h"
#include "simnic/control/protocol.h"
#include "simnic/control/runtime.h"

namespace sv = simnic::verbs;
namespace ctl = simnic::control;
namespace scm = simnic::cm;
using simnic::control::Json;

// The CM's numbering is librdmacm's. (The QP attributes it computes are in
// the verbs vocabulary, which verbs_abi.cc checks against libibverbs.)
static_assert(int(scm::EventType::AddrResolved) == RDMA_CM_EVENT_ADDR_RESOLVED);
static_assert(int(scm::EventType::ConnectRequest) == RDMA_CM_EVENT_CONNECT_REQUEST);
static_assert(int(scm::EventType::ConnectResponse) == RDMA_CM_EVENT_CONNECT_RESPONSE);
static_assert(int(scm::EventType::Established) == RDMA_CM_EVENT_ESTABLISHED);
static_assert(int(scm::EventType::DeviceRemoval) == RDMA_CM_EVENT_DEVICE_REMOVAL);
static_assert(scm::kPsTcp == RDMA_PS_TCP && scm::kPsIb == RDMA_PS_IB && scm::kPsUdp == RDMA_PS_UDP);
static_assert(scm::kUdpQkey == RDMA_UDP_QKEY);

namespace {

// Calls the real librdmacm's `fn` at version `ver`, or fails with ENOSYS if
// the process has none.
#define REAL(fn, ver, fail, ...)                          \
    do {                                                  \
        static sv::Real<decltype(fn)> r(#fn, ver);        \
        auto* p = r.get();                                \
        if (!p) {                                         \
            errno = ENOSYS;                               \
            return fail;                                  \
        }                                                 \
        return p(__VA_ARGS__);                            \
    } while (0)

struct Chan {
    rdma_event_channel ch{};  // first: the application holds &ch
    std::unique_ptr<ctl::Client> conn;
    uint64_t id = 0;
    // Threads inside rdma_get_cm_event on this channel (g_mu). The channel
    // is torn down only once none is: a destroyed channel's connection
    // stays open while a thread still waits on it, as a read of the
    // kernel's ucma file holds the file open.
    int waiters = 0;
    bool destroyed = false;  // rdma_destroy_event_channel ran (g_mu)
    bool lost = false;       // the daemon closed the connection: it is gone (g_mu)
    // One thread reads the socket at a time: get_event, or rdma_migrate_id
    // taking an ID's unread events off it (move_unread_events).
    std::mutex rd_mu;
};

// librdmacm's own code reads an ID's private part in two places: rsockets
// (rsocket.c, compiled into librdmacm) calls ucma_complete and
// ucma_max_qpsize, functions internal to librdmacm, so the calls never reach
// this library; they read the rdma_cm_id they are given as librdmacm's
// struct cma_id_private (cma.c): the ID's cma_device, for the most work
// requests a QP of its device takes (max_qpsize, rsockets' queue sizes),
// and `sync`, nonzero for an ID made without a channel, whose calls wait
// for their event (else ucma_complete returns at once, and an rconnect
// finishes before its connection does). So an Id begins as that structure
// does. These are the layouts of rdma-core v30 (2020, when cma_device
// gained its list entry) to today; Debian 12 has v44.
struct CmaDevice {  // struct cma_device, up to max_qpsize
    ibv_device* dev = nullptr;
    void* entry[2] = {};  // a list_node
    ibv_context* verbs = nullptr;
    ibv_pd* pd = nullptr;
    ibv_xrcd* xrcd = nullptr;
    void* port = nullptr;
    uint64_t guid = 0;
    int port_cnt = 0;
    int refcnt = 0;
    int max_qpsize = 0;  // the device's max_qp_wr
};
static_assert(offsetof(CmaDevice, max_qpsize) == 72, "cma_device.max_qpsize (rdma-core v30+)");
struct CmaIdPrivate {  // struct cma_id_private after its rdma_cm_id, up to sync
    CmaDevice* cma_dev = nullptr;
    void* connect = nullptr;
    size_t connect_len = 0;
    int events_completed = 0;
    int connect_error = 0;
    int sync = 0;  // Id::own_chan, as librdmacm sees it
};
static_assert(offsetof(CmaIdPrivate, sync) == 32, "cma_id_private.sync (rdma-core v30+)");

struct Id {
    rdma_cm_id id{};  // first: the application holds &id
    CmaIdPrivate lib;  // second: what librdmacm's internal functions read (above)
    uint32_t handle = 0;
    Chan* chan = nullptr;
    bool own_chan = false;  // created for a synchronous ID (channel NULL); set through set_own_chan
    std::string device;
    // rdma_accept(id, NULL)'s defaults, from the CONNECT_REQUEST.
    uint8_t resp_res = 0, init_depth = 0;
    // ECE as librdmacm keeps it (cma_id_private's local_ece, remote_ece):
    // what rdma_set_local_ece set, or the QP's (ibv_query_ece) once
    // rdma_create_qp made one; what the peer's REQ or REP carried.
    ibv_ece local_ece{}, remote_ece{};
    // Events handed to the application for this ID, and those it acked
    // (g_mu): rdma_destroy_id waits until they match, as librdmacm's does.
    uint64_t events_reported = 0, events_completed = 0;
    bool removal_reported = false;  // DEVICE_REMOVAL given after the daemon went (g_mu)
    // rdma_create_ep with RAI_PASSIVE: the QP attributes each connection
    // rdma_get_request hands out gets (librdmacm's ucma_passive_ep).
    std::unique_ptr<ibv_qp_init_attr> qp_init_attr;
    // The multicast groups joined (librdmacm's mc_list, g_mu): the address
    // as given, the join's context, its flags, and the MGID the join event
    // reported (zero until then).
    struct Mc {
        sockaddr_storage addr{};
        void* context = nullptr;
        uint32_t join_flags = RDMA_MC_JOIN_FLAG_FULLMEMBER;
        ibv_gid mgid{};
    };
    std::vector<Mc> mcs;

    void set_own_chan(bool own) {
        own_chan = own;
        lib.sync = own;
    }
};

struct Ev {
    rdma_cm_event ev{};  // first
    std::vector<uint8_t> priv;
};

// The process's state. Allocated once and never destroyed: an application
// whose thread calls exit() while another is still inside librdmacm (rping's
// event thread exits on an error while its main thread tears down) must not
// find these torn down under it, nor wait at exit for a condition variable
// a thread still waits on.
template <typename T>
T& forever() {
    return *new T();
}
std::mutex& g_mu = forever<std::mutex>();  // every table below, and the request connection
std::condition_variable& g_acked = forever<std::condition_variable>();  // an event was acked
std::set<Chan*>& g_chans = forever<std::set<Chan*>>();
// Channels the application destroyed. Kept (a few bytes each, with their
// connection closed) so that a call on one is recognised as ours and never
// goes to the real librdmacm, which would fail it with ENODEV.
std::set<Chan*>& g_dead_chans = forever<std::set<Chan*>>();
std::set<Id*>& g_ids = forever<std::set<Id*>>();
std::map<std::pair<Chan*, uint32_t>, Id*>& g_by_handle = forever<std::map<std::pair<Chan*, uint32_t>, Id*>>();
std::set<Ev*>& g_events = forever<std::set<Ev*>>();
std::set<rdma_addrinfo*>& g_addrinfos = forever<std::set<rdma_addrinfo*>>();
// One context per device, for the process's life.
std::map<std::string, ibv_context*>& g_contexts = forever<std::map<std::string, ibv_context*>>();
std::map<ibv_context*, ibv_pd*>& g_default_pd = forever<std::map<ibv_context*, ibv_pd*>>();
// Each device's cma_device as librdmacm's internal functions read it (Id::lib).
std::map<std::string, CmaDevice*>& g_cma_devs = forever<std::map<std::string, CmaDevice*>>();
std::unique_ptr<ctl::Client>& g_ctl = forever<std::unique_ptr<ctl::Client>>();
// The process that opened g_ctl. The daemon knows a request's process by
// its connection (SO_PEERCRED, fixed at connect), so a child of fork() opens
// its own: over its parent's, its requests would be the parent's, and its
// own event channels not its own.
pid_t g_ctl_pid = 0;
int g_mode = -1;  // -1 undecided, 0 the real librdmacm, 1 simnic

Chan* our_chan(const rdma_event_channel* c) {
    auto* p = reinterpret_cast<Chan*>(const_cast<rdma_event_channel*>(c));
    return c && g_chans.count(p) ? p : nullptr;
}
Id* our_id(const rdma_cm_id* i) {
    auto* p = reinterpret_cast<Id*>(const_cast<rdma_cm_id*>(i));
    return i && g_ids.count(p) ? p : nullptr;
}
Id* ours_locked(const rdma_cm_id* i) {
    std::lock_guard<std::mutex> lk(g_mu);
    return our_id(i);
}

bool simnic_mode() {
    std::lock_guard<std::mutex> lk(g_mu);
    if (g_mode < 0) {
        std::vector<ibv_device*> devs;
        g_mode = sv::current_devices(devs) == 0 && !devs.empty() ? 1 : 0;
    }
    return g_mode == 1;
}

std::unique_ptr<ctl::Client> connect_daemon(int& err) {
    std::string e, notice;
    auto c = std::make_unique<ctl::Client>(ctl::Client::connect(ctl::runtime_paths(), false, e, notice));
    if (!c->connected()) {
        err = ENODEV;
        return nullptr;
    }
    return c;
}

// A request to the daemon; errno and false on failure.
bool call(const Json& req, Json& reply) {
    std::lock_guard<std::mutex> lk(g_mu);
    if (!g_ctl || !g_ctl->alive() || g_ctl_pid != getpid()) {
        // (A child closes only its copy of its parent's connection.)
        int e = 0;
        g_ctl = connect_daemon(e);
        if (!g_ctl) {
            errno = e;
            return false;
        }
        g_ctl_pid = getpid();
    }
    reply = g_ctl->request(req);
    if (!reply.value("ok", false)) {
        errno = reply.value("errno", EIO);
        if (errno == 0) errno = EIO;
        return false;
    }
    return true;
}

int fail(int e) {
    errno = e;
    return -1;
}

// sockaddr <-> the daemon's address JSON (IPv4 as an IPv4-mapped GID).
bool addr_to_json(const sockaddr* sa, Json& j) {
    uint8_t g[16] = {};
    uint16_t port = 0;
    bool v6 = false;
    if (!sa) return false;
    if (sa->sa_family == AF_INET) {
        const auto* s = reinterpret_cast<const sockaddr_in*>(sa);
        g[10] = g[11] = 0xff;
        std::memcpy(g + 12, &s->sin_addr, 4);
        port = ntohs(s->sin_port);
    } else if (sa->sa_family == AF_INET6) {
        const auto* s = reinterpret_cast<const sockaddr_in6*>(sa);
        std::memcpy(g, &s->sin6_addr, 16);
        port = ntohs(s->sin6_port);
        v6 = true;
        // An IPv4-mapped IPv6 address is an IPv4 peer for rdma_cm too.
        static constexpr uint8_t kMapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
        if (std::memcmp(g, kMapped, 12) == 0) v6 = false;
    } else {
        return false;
    }
    j = Json{{"addr", ctl::to_hex(g, 16)}, {"port", port}, {"v6", v6}};
    return true;
}

void json_to_addr(const Json& j, sockaddr_storage& out) {
    std::vector<uint8_t> g;
    if (!j.is_object() || !ctl::from_hex(j.value("addr", ""), g) || g.size() != 16) return;
    std::memset(&out, 0, sizeof out);
    const uint16_t port = j.value("port", uint16_t{0});
    if (j.value("v6", false)) {
        auto* s = reinterpret_cast<sockaddr_in6*>(&out);
        s->sin6_family = AF_INET6;
        s->sin6_port = htons(port);
        std::memcpy(&s->sin6_addr, g.data(), 16);
    } else {
        auto* s = reinterpret_cast<sockaddr_in*>(&out);
        s->sin_family = AF_INET;
        s->sin_port = htons(port);
        std::memcpy(&s->sin_addr, g.data() + 12, 4);
    }
}

// The process's context on a simnic device (librdmacm opens every device
// once and keeps it; so do we).
ibv_context* context_of(const std::string& device) {
    if (device.empty()) return nullptr;
    std::lock_guard<std::mutex> lk(g_mu);
    auto it = g_contexts.find(device);
    if (it != g_contexts.end()) return it->second;
    std::vector<ibv_device*> devs;
    if (sv::current_devices(devs) != 0) return nullptr;
    for (ibv_device* d : devs) {
        if (device != sv::device_name(d)) continue;
        ibv_context* c = sv::open_device(d);
        if (c) g_contexts[device] = c;
        return c;
    }
    return nullptr;
}

// librdmacm's PD of a device: one per device context, which every ID bound
// to the device carries (id->pd) and which a QP or SRQ made through the CM
// without a PD of its own gets. (librdmacm frees it with the device's last
// ID; here it lives as long as the process's context does.)
ibv_pd* default_pd(ibv_context* verbs) {
    std::lock_guard<std::mutex> lk(g_mu);
    ibv_pd*& pd = g_default_pd[verbs];
    if (!pd) pd = sv::alloc_pd(verbs);
    return pd;
}

// The cma_device of a device whose context the process holds.
CmaDevice* cma_device_of(const std::string& device, ibv_context* verbs) {
    ibv_device_attr a{};
    if (!verbs || sv::query_device(verbs, &a) != 0) return nullptr;
    std::lock_guard<std::mutex> lk(g_mu);
    CmaDevice*& d = g_cma_devs[device];
    if (!d) {
        d = new CmaDevice;
        d->dev = verbs->device;
        d->verbs = verbs;
        d->guid = a.node_guid;
        d->port_cnt = a.phys_port_cnt;
        d->max_qpsize = a.max_qp_wr;
    }
    return d;
}

// An ID's device and addresses as the daemon reports them.
void update(Id* i, const Json& j) {
    if (j.contains("src")) json_to_addr(j["src"], i->id.route.addr.src_storage);
    if (j.contains("dst")) json_to_addr(j["dst"], i->id.route.addr.dst_storage);
    const std::string dev = j.value("device", "");
    if (!dev.empty() && !i->id.verbs) {
        i->device = dev;
        i->id.verbs = context_of(dev);
        i->id.port_num = 1;
        i->lib.cma_dev = cma_device_of(dev, i->id.verbs);
        // As librdmacm's ucma_get_device: an ID has its device's PD from the
        // moment it has the device, so that memory can be registered for
        // it (rdma_reg_msgs) before its QP exists, as datagram rsockets do.
        if (i->id.verbs && !i->id.pd) i->id.pd = default_pd(i->id.verbs);
    }
    // The GIDs of the route, as librdmacm's RoCE addresses carry them.
    auto gid_of = [](const sockaddr_storage& s, ibv_gid& g) {
        std::memset(&g, 0, sizeof g);
        if (s.ss_family == AF_INET) {
            g.raw[10] = g.raw[11] = 0xff;
            std::memcpy(g.raw + 12, &reinterpret_cast<const sockaddr_in&>(s).sin_addr, 4);
        } else if (s.ss_family == AF_INET6) {
            std::memcpy(g.raw, &reinterpret_cast<const sockaddr_in6&>(s).sin6_addr, 16);
        }
    };
    gid_of(i->id.route.addr.src_storage, i->id.route.addr.addr.ibaddr.sgid);
    gid_of(i->id.route.addr.dst_storage, i->id.route.addr.addr.ibaddr.dgid);
    i->id.route.addr.addr.ibaddr.pkey = htons(0xffff);
}

bool id_call(Id* i, Json req, Json& reply) {
    req["id"] = i->handle;
    if (!call(req, reply)) return false;
    update(i, reply);
    return true;
}

Id* new_id(Chan* c, uint32_t handle, void* context, rdma_port_space ps) {
    auto* i = new Id;
    i->handle = handle;
    i->chan = c;
    i->id.channel = &c->ch;
    i->id.context = context;
    i->id.ps = ps;
    // librdmacm's rule: the UDP and IPoIB port spaces are UD.
    i->id.qp_type = ps == RDMA_PS_UDP || ps == RDMA_PS_IPOIB ? IBV_QPT_UD : IBV_QPT_RC;
    std::lock_guard<std::mutex> lk(g_mu);
    g_ids.insert(i);
    g_by_handle[{c, handle}] = i;
    return i;
}

// The CQs and completion channels librdmacm makes for a QP created without
// them (ucma_create_cqs): one of each per side, the ID as the CQ's context;
// they live in id->send_cq/recv_cq and their channels, and go with the QP.
int create_cqs(Id* i, uint32_t send_size, uint32_t recv_size);
void destroy_cqs(Id* i) {
    rdma_cm_id& id = i->id;
    if (id.recv_cq) {
        sv::destroy_cq(id.recv_cq);
        if (id.send_cq && id.send_cq != id.recv_cq) sv::destroy_cq(id.send_cq);
    } else if (id.send_cq) {
        sv::destroy_cq(id.send_cq);
    }
    id.recv_cq = id.send_cq = nullptr;
    if (id.recv_cq_channel) {
        sv::destroy_comp_channel(id.recv_cq_channel);
        if (id.send_cq_channel && id.send_cq_channel != id.recv_cq_channel)
            sv::destroy_comp_channel(id.send_cq_channel);
    } else if (id.send_cq_channel) {
        sv::destroy_comp_channel(id.send_cq_channel);
    }
    id.recv_cq_channel = id.send_cq_channel = nullptr;
}
int create_cqs(Id* i, uint32_t send_size, uint32_t recv_size) {
    rdma_cm_id& id = i->id;
    auto one = [&](uint32_t size, ibv_comp_channel*& ch, ibv_cq*& cq) {
        if (!size) return true;
        if (!(ch = sv::create_comp_channel(id.verbs))) return false;
        cq = sv::create_cq(id.verbs, int(size), &id, ch, 0);
        return cq != nullptr;
    };
    if (one(recv_size, id.recv_cq_channel, id.recv_cq) && one(send_size, id.send_cq_channel, id.send_cq)) return 0;
    const int e = errno;
    destroy_cqs(i);
    return fail(e);
}

// rdma_init_qp_attr for our IDs.
int init_qp_attr(Id* i, ibv_qp_attr* a, int* mask) {
    Json r;
    if (!id_call(i, Json{{"op", "cm_init_qp_attr"}, {"state", int(a->qp_state)}}, r)) return -1;
    const Json& x = r["attr"];
    const ibv_qp_state st = a->qp_state;
    std::memset(a, 0, sizeof *a);
    a->qp_state = st;
    *mask = x.value("mask", 0);
    a->qp_access_flags = x.value("access_flags", 0u);
    a->pkey_index = x.value("pkey_index", uint16_t{0});
    a->port_num = x.value("port_num", uint8_t{1});
    a->path_mtu = ibv_mtu(x.value("path_mtu", 3));
    a->dest_qp_num = x.value("dest_qpn", 0u);
    a->rq_psn = x.value("rq_psn", 0u);
    a->sq_psn = x.value("sq_psn", 0u);
    a->qkey = x.value("qkey", 0u);
    a->max_dest_rd_atomic = x.value("max_dest_rd_atomic", uint8_t{0});
    a->max_rd_atomic = x.value("max_rd_atomic", uint8_t{0});
    a->min_rnr_timer = x.value("min_rnr_timer", uint8_t{0});
    a->timeout = x.value("timeout", uint8_t{0});
    a->retry_cnt = x.value("retry_cnt", uint8_t{0});
    a->rnr_retry = x.value("rnr_retry", uint8_t{0});
    if (*mask & IBV_QP_AV) {
        std::vector<uint8_t> g;
        ctl::from_hex(x.value("dgid", ""), g);
        if (g.size() == 16) std::memcpy(a->ah_attr.grh.dgid.raw, g.data(), 16);
        a->ah_attr.is_global = 1;
        a->ah_attr.grh.flow_label = x.value("flow_label", 0u);
        a->ah_attr.grh.sgid_index = x.value("sgid_index", uint8_t{0});
        a->ah_attr.grh.hop_limit = x.value("hop_limit", uint8_t{64});
        a->ah_attr.grh.traffic_class = x.value("traffic_class", uint8_t{0});
        a->ah_attr.sl = x.value("sl", uint8_t{0});
        a->ah_attr.port_num = 1;
    }
    return 0;
}

int modify_to(Id* i, ibv_qp_state st, int override_rd = -1) {
    ibv_qp_attr a{};
    a.qp_state = st;
    int mask = 0;
    if (init_qp_attr(i, &a, &mask)) return -1;
    // rdma_accept/rdma_connect's responder resources and initiator depth
    // win over the REQ's, as in librdmacm.
    if (override_rd >= 0 && st == IBV_QPS_RTR) a.max_dest_rd_atomic = uint8_t(override_rd);
    if (override_rd >= 0 && st == IBV_QPS_RTS) a.max_rd_atomic = uint8_t(override_rd);
    const int e = sv::modify_qp(i->id.qp, &a, mask);
    return e ? fail(e) : 0;
}

int modify_err(Id* i) {
    if (!i->id.qp) return 0;
    ibv_qp_attr a{};
    a.qp_state = IBV_QPS_ERR;
    const int e = sv::modify_qp(i->id.qp, &a, IBV_QP_STATE);
    return e ? fail(e) : 0;
}

// INIT then RTR then RTS (librdmacm's ucma_modify_qp_rtr / _rts).
int to_rts(Id* i, int resp_res, int init_depth) {
    if (modify_to(i, IBV_QPS_INIT) || modify_to(i, IBV_QPS_RTR, resp_res) || modify_to(i, IBV_QPS_RTS, init_depth))
        return -1;
    return 0;
}

Json param_json(const rdma_conn_param* p, uint32_t qpn, bool srq) {
    Json j{{"private_data", p && p->private_data ? ctl::to_hex(static_cast<const uint8_t*>(p->private_data),
                                                              p->private_data_len)
                                                  : ""},
           {"responder_resources", p ? p->responder_resources : 0},
           {"initiator_depth", p ? p->initiator_depth : 0},
           {"flow_control", p ? p->flow_control : 0},
           {"retry_count", p ? std::min<int>(p->retry_count, 7) : 7},
           {"rnr_retry_count", p ? std::min<int>(p->rnr_retry_count, 7) : 7},
           {"srq", srq},
           {"qp_num", qpn & 0xFFFFFF}};  // a QPN has 24 bits (the schema's limit)
    return j;
}

// librdmacm's ECE at the QP's creation (init_ece, then set_local_ece after
// the QP is in INIT): the QP's own ECE replaces what rdma_set_local_ece set
// (nothing, {0, 0}, when the provider has no ECE: EOPNOTSUPP, as rxe's and
// simnic's); a QP made for a CONNECT_REQUEST that carried ECE is told the
// peer's options if the vendors match, else to use none.
int init_ece(Id* i, ibv_qp* qp) {
    ibv_ece ece{};
    int e = ibv_query_ece(qp, &ece);
    if (e && e != EOPNOTSUPP) return fail(e);
    i->local_ece.vendor_id = ece.vendor_id;
    i->local_ece.options = ece.options;
    if (!i->remote_ece.vendor_id) return 0;
    if (i->remote_ece.vendor_id != i->local_ece.vendor_id) {
        ece.vendor_id = i->local_ece.vendor_id;
        ece.options = 0;
    } else {
        ece.vendor_id = i->remote_ece.vendor_id;
        ece.options = i->remote_ece.options;
    }
    e = ibv_set_ece(qp, &ece);
    return e && e != EOPNOTSUPP ? fail(e) : 0;
}

int set_local_ece(Id* i, ibv_qp* qp) {
    if (!i->remote_ece.vendor_id) return 0;
    ibv_ece ece{};
    const int e = ibv_query_ece(qp, &ece);
    if (e && e != EOPNOTSUPP) return fail(e);
    i->local_ece.options = ece.options;
    return 0;
}

// librdmacm's ucma_process_conn_resp_ece, before the QP goes to RTR and RTS
// on CONNECT_RESPONSE: a REP without ECE tells the QP to use none; one with
// a vendor other than ours is an error (EINVAL, the QP to ERR).
int conn_resp_ece_before(Id* i, const ibv_ece& remote) {
    ibv_ece ece = remote;
    if (!remote.vendor_id) {
        ece.vendor_id = i->local_ece.vendor_id;
        ece.options = 0;
    } else if (remote.vendor_id != i->local_ece.vendor_id) {
        modify_err(i);
        return fail(EINVAL);
    }
    i->remote_ece.vendor_id = remote.vendor_id;
    const int e = ibv_set_ece(i->id.qp, &ece);
    return e && e != EOPNOTSUPP ? fail(e) : 0;
}

// ... and after: the options the QP settled on are ours (none without ECE).
int conn_resp_ece_after(Id* i) {
    ibv_ece ece{};
    const int e = ibv_query_ece(i->id.qp, &ece);
    if (e && e != EOPNOTSUPP) {
        modify_err(i);
        return fail(e);
    }
    i->local_ece.options = e == EOPNOTSUPP ? 0 : ece.options;
    return 0;
}

// The device's limits on RDMA READ/atomic depth, which librdmacm applies.
// An RC connection's RDMA read depths as librdmacm settles them (cma.c:
// ucma_valid_param, rdma_connect, rdma_accept). No conn_param, or
// RDMA_MAX_RESP_RES / RDMA_MAX_INIT_DEPTH (0xFF), asks for the device's
// maximum: rdma_connect(id, NULL) offers max_qp_rd_atom and
// max_qp_init_rd_atom (kernel ib_cm's REQ from rdma_client carries 128 and
// 128 on rxe), rdma_accept no more than the REQ offered (`offered_*`, the
// peer's values as the CONNECT_REQUEST gave them). A value above the
// device's maximum is EINVAL, as is a missing conn_param on an ID without a
// QP; other port spaces than TCP are not checked.
bool rd_depths(Id* i, const rdma_conn_param* cp, int offered_rr, int offered_idp, int& rr, int& idp) {
    ibv_device_attr a{};
    a.max_qp_rd_atom = a.max_qp_init_rd_atom = 0xFF;
    if (i->id.verbs) sv::query_device(i->id.verbs, &a);
    if (i->id.ps == RDMA_PS_TCP) {
        if (!i->id.qp && !cp) return false;
        if (cp && cp->responder_resources != RDMA_MAX_RESP_RES && cp->responder_resources > a.max_qp_rd_atom)
            return false;
        if (cp && cp->initiator_depth != RDMA_MAX_INIT_DEPTH && cp->initiator_depth > a.max_qp_init_rd_atom)
            return false;
    }
    rr = cp && cp->responder_resources != RDMA_MAX_RESP_RES ? cp->responder_resources
                                                              : std::min(offered_rr, a.max_qp_rd_atom);
    idp = cp && cp->initiator_depth != RDMA_MAX_INIT_DEPTH ? cp->initiator_depth
                                                            : std::min(offered_idp, a.max_qp_init_rd_atom);
    return true;
}

// A thread waiting on a channel the application destroyed waits on: the
// kernel's ucma file gives a read that is already waiting nothing more, and
// an application's event thread that outlives its channel (rping's does:
// its main thread destroys the channel while the thread goes on reading)
// must not fail for it. It ends with the process.
[[noreturn]] void wait_forever() {
    for (;;) pause();  // a signal's handler returns here
}

// The daemon is gone: the device of every ID on the channel went with it.
// One RDMA_CM_EVENT_DEVICE_REMOVAL per ID bound to a device, as rdma_cm
// reports a removed device to each of its IDs; null once all have had one.
Ev* removal_event(Chan* c) {
    std::lock_guard<std::mutex> lk(g_mu);
    for (Id* i : g_ids) {
        if (i->chan != c || i->removal_reported || i->device.empty()) continue;
        i->removal_reported = true;
        ++i->events_reported;
        auto* ev = new Ev;
        ev->ev.event = RDMA_CM_EVENT_DEVICE_REMOVAL;
        ev->ev.id = &i->id;
        g_events.insert(ev);
        i->id.event = &ev->ev;
        return ev;
    }
    return nullptr;
}

Chan* new_channel();

// The channel whose socket this thread reads now (inside get_event, whose
// read lock it holds).
thread_local Chan* t_reading = nullptr;

// rdma_migrate_id takes the ID's events that were queued and not yet read
// along to the new channel, as the kernel's ucma_migrate_id does
// (ucma_move_events), and with them any CONNECT_REQUEST a migrated listener
// has queued, whose new ID moves too. The daemon holds both channels' new
// events from cm_migrate on; by its answer every event it sent the old
// channel before is on that socket (its one thread writes it first). That
// socket is read to the end here and each event put back (cm_requeue) on
// the new channel if it is a moving ID's, else on the old one, in order;
// then the daemon sends what it held. Every ID's events keep their order.
// Skipped when another thread is reading the old channel: it gets those
// events there (get_event finds their ID wherever it went).
void move_unread_events(Chan* from, Chan* to, uint32_t handle, bool held) {
    std::unique_lock<std::mutex> rd(from->rd_mu, std::defer_lock);
    const bool reader = t_reading == from || rd.try_lock();
    std::vector<Json> unread;
    for (Json m; reader && ctl::recv_message(from->ch.fd, m, 0).empty();)
        if (m.is_object()) unread.push_back(std::move(m));
    std::set<uint32_t> moving{handle};
    Json r;
    for (const Json& m : unread) {
        const uint32_t id = m.value("id", 0u);
        bool moves = moving.count(id) != 0;
        if (!moves && m.value("event", 0) == RDMA_CM_EVENT_CONNECT_REQUEST && moving.count(m.value("listen_id", 0u)) &&
            call(Json{{"op", "cm_migrate"}, {"id", id}, {"channel", to->id}}, r) && r.value("ok", false)) {
            moving.insert(id);
            moves = true;
        }
        call(Json{{"op", "cm_requeue"}, {"channel", moves ? to->id : from->id}, {"message", m.dump()}}, r);
    }
    if (held) call(Json{{"op", "cm_release"}, {"from", from->id}, {"to", to->id}}, r);
}

// rdma_migrate_id: the ID's events go to `to` from now on (the daemon's
// cm_migrate); a synchronous ID's own channel goes, and `own` says whether
// `to` is the ID's own (librdmacm makes one for a synchronous ID).
int migrate(Id* i, Chan* to, bool own) {
    Json r;
    if (!id_call(i, Json{{"op", "cm_migrate"}, {"channel", to->id}, {"hold", true}}, r)) return -1;
    Chan* from = i->chan;
    const bool was_own = i->own_chan;
    if (was_own && i->id.event) {
        rdma_ack_cm_event(i->id.event);
        i->id.event = nullptr;
    }
    {
        std::lock_guard<std::mutex> lk(g_mu);
        g_by_handle.erase({from, i->handle});
        g_by_handle[{to, i->handle}] = i;
        i->chan = to;
        i->id.channel = &to->ch;
        i->set_own_chan(own);
        // As librdmacm's: return once the events handed out on the old
        // channel for this ID were acked (none can be waiting here but a
        // synchronous ID's, acked above).
    }
    if (from != to) move_unread_events(from, to, i->handle, r.contains("held_from"));
    if (was_own) rdma_destroy_event_channel(&from->ch);
    return 0;
}

// Reads one event of a simnic channel (blocking unless the fd is
// O_NONBLOCK) and does librdmacm's part of it.
// The UDP port space's events carry rdma_ud_param: on ESTABLISHED (the
// SIDR_REP) the peer's QPN, Q_Key and the address vector to it, for
// ibv_create_ah.
void fill_ud_param(Ev* ev, const Json& param, const Json& m) {
    rdma_ud_param& ud = ev->ev.param.ud;
    ud.private_data = ev->priv.empty() ? nullptr : ev->priv.data();
    ud.private_data_len = uint8_t(std::min<size_t>(ev->priv.size(), 255));
    ud.qp_num = param.value("qp_num", 0u);
    ud.qkey = param.value("qkey", 0u);
    if (!m.contains("ah")) return;
    const Json& a = m["ah"];
    std::vector<uint8_t> g;
    ctl::from_hex(a.value("dgid", ""), g);
    if (g.size() == 16) std::memcpy(ud.ah_attr.grh.dgid.raw, g.data(), 16);
    ud.ah_attr.is_global = 1;
    ud.ah_attr.grh.flow_label = a.value("flow_label", 0u);
    ud.ah_attr.grh.sgid_index = a.value("sgid_index", uint8_t{0});
    ud.ah_attr.grh.hop_limit = a.value("hop_limit", uint8_t{64});
    ud.ah_attr.grh.traffic_class = a.value("traffic_class", uint8_t{0});
    ud.ah_attr.sl = a.value("sl", uint8_t{0});
    ud.ah_attr.port_num = 1;
}

// The MGID rdma_cm makes of a group address on RoCE v2 (cma_iboe_set_mgid):
// an IPv4 group a.b.c.d is ::ffff:a.b.c.d, an IPv6 group itself.
bool mgid_of(const sockaddr_storage& a, ibv_gid& g) {
    std::memset(&g, 0, sizeof g);
    if (a.ss_family == AF_INET) {
        g.raw[10] = g.raw[11] = 0xff;
        std::memcpy(g.raw + 12, &reinterpret_cast<const sockaddr_in&>(a).sin_addr, 4);
        return true;
    }
    if (a.ss_family == AF_INET6) {
        std::memcpy(g.raw, &reinterpret_cast<const sockaddr_in6&>(a).sin6_addr, 16);
        return true;
    }
    return false;
}

// librdmacm's part of a join's event (ucma_process_join): the join's
// context as private data, and the ID's QP attached to the group unless the
// join was send-only; a failed attach turns the event into MULTICAST_ERROR.
void process_join(Id* id, Ev* ev) {
    rdma_ud_param& ud = ev->ev.param.ud;
    ud.private_data = nullptr;
    ud.private_data_len = 0;
    ud.ah_attr.dlid = 0;  // RoCE: no multicast LID
    uint32_t flags = RDMA_MC_JOIN_FLAG_FULLMEMBER;
    ibv_gid mgid = ud.ah_attr.grh.dgid;
    {
        std::lock_guard<std::mutex> lk(g_mu);
        for (Id::Mc& mc : id->mcs) {
            ibv_gid g;
            if (!mgid_of(mc.addr, g) || std::memcmp(g.raw, mgid.raw, 16) != 0) continue;
            ud.private_data = mc.context;
            flags = mc.join_flags;
            mc.mgid = mgid;
            break;
        }
    }
    if (ev->ev.event != RDMA_CM_EVENT_MULTICAST_JOIN || !id->id.qp ||
        flags == RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER)
        return;
    if (const int e = sv::attach_mcast(id->id.qp, &mgid, 0)) {
        ev->ev.event = RDMA_CM_EVENT_MULTICAST_ERROR;
        ev->ev.status = e;
    }
}

int get_event(Chan* c, rdma_cm_event** out) {
    std::unique_lock<std::mutex> rd(c->rd_mu, std::defer_lock);
    if (t_reading != c) rd.lock();
    struct Reading {
        Chan* prev;
        explicit Reading(Chan* c) : prev(t_reading) { t_reading = c; }
        ~Reading() { t_reading = prev; }
    } reading(c);
    for (;;) {
        const int fl = fcntl(c->ch.fd, F_GETFL);
        const int timeout = fl >= 0 && (fl & O_NONBLOCK) ? 0 : -1;
        Json m;
        const std::string err = ctl::recv_message(c->ch.fd, m, timeout);
        bool destroyed;
        {
            std::lock_guard<std::mutex> lk(g_mu);
            destroyed = c->destroyed;
            if (!err.empty() && err != "timed out waiting for the daemon") c->lost = true;
        }
        if (destroyed) {
            // Nothing more is delivered on a destroyed channel: what comes
            // is for IDs that are gone. Wait on, unless the daemon went.
            if (err.empty()) continue;
            return fail(err == "timed out waiting for the daemon" ? EAGAIN : EBADF);
        }
        if (err == "timed out waiting for the daemon") return fail(EAGAIN);
        if (!err.empty()) {
            if (Ev* ev = removal_event(c)) {
                *out = &ev->ev;
                return 0;
            }
            return fail(ENODEV);
        }
        auto* ev = new Ev;
        ev->ev.event = rdma_cm_event_type(m.value("event", 0));
        ev->ev.status = m.value("status", 0);
        Id* id = nullptr;
        Id* listen = nullptr;
        {
            std::lock_guard<std::mutex> lk(g_mu);
            const uint32_t h = m.value("id", 0u);
            auto it = g_by_handle.find({c, h});
            if (it != g_by_handle.end()) id = it->second;
            // Migrated while another thread was reading this channel
            // (move_unread_events leaves its earlier events here then).
            for (auto o = g_by_handle.begin(); !id && h && o != g_by_handle.end(); ++o)
                if (o->first.second == h) id = o->second;
            auto lt = g_by_handle.find({c, m.value("listen_id", 0u)});
            if (lt != g_by_handle.end()) listen = lt->second;
        }
        const Json param = m.value("param", Json::object());
        ctl::from_hex(param.value("private_data", ""), ev->priv);
        if (ev->ev.event == RDMA_CM_EVENT_CONNECT_REQUEST) {
            if (!listen) {
                delete ev;
                continue;  // its listener is gone: the daemon rejects it when the ID is destroyed
            }
            id = new_id(c, m.value("id", 0u), listen->id.context, listen->id.ps);
            id->id.qp_type = listen->id.qp_type;
            id->resp_res = param.value("responder_resources", uint8_t{0});
            id->init_depth = param.value("initiator_depth", uint8_t{0});
            id->remote_ece.vendor_id = param.value("ece_vendor_id", 0u);
            id->remote_ece.options = param.value("ece_options", 0u);
            ev->ev.listen_id = &listen->id;
            // A synchronous listener's connections are synchronous too, each
            // on a channel of its own (librdmacm's ucma_process_conn_req).
            if (listen->own_chan) {
                Chan* own = new_channel();
                if (!own || migrate(id, own, true)) {
                    if (own) rdma_destroy_event_channel(&own->ch);
                    Json r;
                    id_call(id, Json{{"op", "cm_reject"}, {"private_data", ""}}, r);
                    delete ev;
                    continue;
                }
            }
        }
        if (!id) {
            delete ev;  // for an ID destroyed meanwhile
            continue;
        }
        update(id, m);
        ev->ev.id = &id->id;
        if (ev->ev.event == RDMA_CM_EVENT_MULTICAST_JOIN || ev->ev.event == RDMA_CM_EVENT_MULTICAST_ERROR) {
            fill_ud_param(ev, param, m);
            process_join(id, ev);
        } else if (id->id.qp_type == IBV_QPT_UD) {
            fill_ud_param(ev, param, m);
            if (ev->ev.event == RDMA_CM_EVENT_UNREACHABLE) modify_err(id);
        } else {
            rdma_conn_param& cp = ev->ev.param.conn;
            cp.private_data = ev->priv.empty() ? nullptr : ev->priv.data();
            cp.private_data_len = uint8_t(std::min<size_t>(ev->priv.size(), 255));
            cp.responder_resources = param.value("responder_resources", uint8_t{0});
            cp.initiator_depth = param.value("initiator_depth", uint8_t{0});
            cp.flow_control = param.value("flow_control", uint8_t{0});
            cp.retry_count = param.value("retry_count", uint8_t{0});
            cp.rnr_retry_count = param.value("rnr_retry_count", uint8_t{0});
            cp.srq = param.value("srq", false) ? 1 : 0;
            cp.qp_num = param.value("qp_num", 0u);
            ibv_ece remote{};
            remote.vendor_id = param.value("ece_vendor_id", 0u);
            remote.options = param.value("ece_options", 0u);
            if (ev->ev.event == RDMA_CM_EVENT_CONNECT_RESPONSE && !id->id.qp) {
                id->remote_ece = remote;  // for rdma_get_remote_ece
            } else if (ev->ev.event == RDMA_CM_EVENT_CONNECT_RESPONSE) {
                // librdmacm finishes the connection itself when it owns the QP:
                // RTR and RTS from the REP, the RTU, and ESTABLISHED for the app.
                Json r;
                if (conn_resp_ece_before(id, remote) == 0 && to_rts(id, -1, -1) == 0 &&
                    id_call(id, Json{{"op", "cm_establish"}}, r) && conn_resp_ece_after(id) == 0) {
                    ev->ev.event = RDMA_CM_EVENT_ESTABLISHED;
                } else {
                    ev->ev.status = -errno;
                    ev->ev.event = RDMA_CM_EVENT_CONNECT_ERROR;
                    modify_err(id);
                    id_call(id, Json{{"op", "cm_reject"}, {"private_data", ""}}, r);
                }
            } else if (ev->ev.event == RDMA_CM_EVENT_REJECTED || ev->ev.event == RDMA_CM_EVENT_UNREACHABLE) {
                modify_err(id);
            }
        }
        {
            std::lock_guard<std::mutex> lk(g_mu);
            g_events.insert(ev);
            ++id->events_reported;
        }
        id->id.event = &ev->ev;
        *out = &ev->ev;
        return 0;
    }
}

// rdma_get_cm_event on a simnic channel, live or destroyed.
int get_event_on(Chan* c, rdma_cm_event** out) {
    bool gone;
    {
        std::lock_guard<std::mutex> lk(g_mu);
        gone = c->destroyed && !c->conn;  // destroyed and torn down before this call
        if (!gone) ++c->waiters;
    }
    if (gone) wait_forever();
    const int r = get_event(c, out);
    const int e = errno;
    std::unique_ptr<ctl::Client> closing;
    {
        std::lock_guard<std::mutex> lk(g_mu);
        if (--c->waiters == 0 && c->destroyed) closing = std::move(c->conn);  // what destroy put off
    }
    closing.reset();
    errno = e;
    return r;
}

// A synchronous ID (created without a channel) waits for its event, as
// librdmacm's ucma_complete does.
int complete(Id* i) {
    if (!i->own_chan) return 0;
    if (i->id.event) {
        rdma_ack_cm_event(i->id.event);
        i->id.event = nullptr;
    }
    rdma_cm_event* e = nullptr;
    if (get_event(i->chan, &e)) return -1;
    if (e->status) return fail(e->status < 0 ? -e->status : ECONNREFUSED);
    return 0;
}

Chan* new_channel() {
    int e = 0;
    auto conn = connect_daemon(e);
    if (!conn) {
        errno = e;
        return nullptr;
    }
    Json r = conn->request(Json{{"op", "cm_channel"}});
    if (!r.value("ok", false)) {
        errno = r.value("errno", EIO);
        return nullptr;
    }
    auto* c = new Chan;
    c->ch.fd = conn->fd();
    c->id = r.value("channel", uint64_t{0});
    c->conn = std::move(conn);
    std::lock_guard<std::mutex> lk(g_mu);
    g_chans.insert(c);
    return c;
}

}  // namespace

#pragma GCC visibility push(default)
extern "C" {

rdma_event_channel* rdma_create_event_channel(void) {
    if (!simnic_mode()) REAL(rdma_create_event_channel, "RDMACM_1.0", nullptr);
    Chan* c = new_channel();
    return c ? &c->ch : nullptr;
}

void rdma_destroy_event_channel(rdma_event_channel* channel) {
    Chan* c;
    std::unique_ptr<ctl::Client> closing;
    {
        std::lock_guard<std::mutex> lk(g_mu);
        c = our_chan(channel);
        if (c) {
            g_chans.erase(c);
            g_dead_chans.insert(c);
            c->destroyed = true;
            // Closing the connection destroys whatever IDs are left in the
            // daemon; a thread still waiting on the channel closes it when
            // it leaves (get_event_on).
            if (c->waiters == 0) closing = std::move(c->conn);
        } else if (g_dead_chans.count(reinterpret_cast<Chan*>(channel))) {
            return;  // destroyed twice
        }
    }
    if (!c) {
        static sv::Real<decltype(rdma_destroy_event_channel)> real("rdma_destroy_event_channel", "RDMACM_1.0");
        if (auto* p = real.get()) p(channel);
        return;
    }
}

int rdma_create_id(rdma_event_channel* channel, rdma_cm_id** id, void* context, rdma_port_space ps) {
    Chan* c;
    {
        std::lock_guard<std::mutex> lk(g_mu);
        c = our_chan(channel);
    }
    bool own = false;
    if (!c) {
        if (channel || !simnic_mode()) REAL(rdma_create_id, "RDMACM_1.0", -1, channel, id, context, ps);
        if (!(c = new_channel())) return -1;
        own = true;
    }
    Json r;
    if (!call(Json{{"op", "cm_create_id"}, {"channel", c->id}, {"ps", int(ps)}}, r)) {
        if (own) rdma_destroy_event_channel(&c->ch);
        return -1;
    }
    Id* i = new_id(c, r.value("id", 0u), context, ps);
    i->set_own_chan(own);
    *id = &i->id;
    return 0;
}

int rdma_destroy_id(rdma_cm_id* id) {
    Id* i = ours_locked(id);
    if (!i) REAL(rdma_destroy_id, "RDMACM_1.0", -1, id);
    if (i->own_chan && i->id.event) rdma_ack_cm_event(i->id.event);
    Json r;
    id_call(i, Json{{"op", "cm_destroy_id"}}, r);  // events still queued for it are dropped unread
    {
        // As librdmacm's: an event the application was handed for the ID
        // may still be in use by another thread until it is acked.
        std::unique_lock<std::mutex> lk(g_mu);
        g_acked.wait(lk, [i] { return i->events_completed >= i->events_reported; });
        g_ids.erase(i);
        g_by_handle.erase({i->chan, i->handle});
    }
    if (i->own_chan) rdma_destroy_event_channel(&i->chan->ch);
    delete i;
    return 0;
}

int rdma_bind_addr(rdma_cm_id* id, sockaddr* addr) {
    Id* i = ours_locked(id);
    if (!i) REAL(rdma_bind_addr, "RDMACM_1.0", -1, id, addr);
    Json a, r;
    if (!addr_to_json(addr, a)) return fail(EAFNOSUPPORT);
    return id_call(i, Json{{"op", "cm_bind"}, {"addr", a}}, r) ? 0 : -1;
}

int rdma_resolve_addr(rdma_cm_id* id, sockaddr* src_addr, sockaddr* dst_addr, int timeout_ms) {
    Id* i = ours_locked(id);
    if (!i) REAL(rdma_resolve_addr, "RDMACM_1.0", -1, id, src_addr, dst_addr, timeout_ms);
    Json req{{"op", "cm_resolve_addr"}}, d, s, r;
    if (!addr_to_json(dst_addr, d)) return fail(EAFNOSUPPORT);
    req["dst"] = d;
    // How long the address query may wait for the neighbour (ADDR_ERROR after).
    if (timeout_ms > 0) req["timeout_ms"] = timeout_ms;
    if (src_addr && src_addr->sa_family != AF_UNSPEC) {
        if (!addr_to_json(src_addr, s)) return fail(EAFNOSUPPORT);
        req["src"] = s;
    }
    if (!id_call(i, req, r)) return -1;
    return complete(i);
}

int rdma_resolve_route(rdma_cm_id* id, int timeout_ms) {
    Id* i = ours_locked(id);
    if (!i) REAL(rdma_resolve_route, "RDMACM_1.0", -1, id, timeout_ms);
    Json r;
    if (!id_call(i, Json{{"op", "cm_resolve_route"}}, r)) return -1;
    return complete(i);
}

int rdma_listen(rdma_cm_id* id, int backlog) {
    Id* i = ours_locked(id);
    if (!i) REAL(rdma_listen, "RDMACM_1.0", -1, id, backlog);
    Json r;
    return id_call(i, Json{{"op", "cm_listen"}}, r) ? 0 : -1;
}

int rdma_create_qp(rdma_cm_id* id, ibv_pd* pd, ibv_qp_init_attr* qp_init_attr) {
    Id* i = ours_locked(id);
    if (!i) REAL(rdma_create_qp, "RDMACM_1.0", -1, id, pd, qp_init_attr);
    if (!qp_init_attr) return fail(EINVAL);
    // librdmacm: rdma_create_qp is rdma_create_qp_ex with the PD.
    ibv_qp_init_attr_ex ax{};
    std::memcpy(&ax, qp_init_attr, sizeof *qp_init_attr);
    ax.comp_mask = IBV_QP_INIT_ATTR_PD;
    ax.pd = pd;
    if (rdma_create_qp_ex(id, &ax)) return -1;
    qp_init_attr->send_cq = ax.send_cq;
    qp_init_attr->recv_cq = ax.recv_cq;
    qp_init_attr->srq = ax.srq;
    qp_init_attr->cap = ax.cap;
    return 0;
}

int rdma_create_qp_ex(rdma_cm_id* id, ibv_qp_init_attr_ex* attr) {
    Id* i = ours_locked(id);
    if (!i) REAL(rdma_create_qp_ex, "RDMACM_1.0", -1, id, attr);
    if (!attr || !i->id.verbs || i->id.qp) return fail(EINVAL);
    if (!(attr->comp_mask & IBV_QP_INIT_ATTR_PD) || !attr->pd) {
        // The ID's PD (rdma_create_ep's, else its device's).
        ibv_pd* d = i->id.pd ? i->id.pd : default_pd(i->id.verbs);
        if (!d) return -1;
        attr->pd = d;
        attr->comp_mask |= IBV_QP_INIT_ATTR_PD;
    } else if (attr->pd->context != i->id.verbs) {
        return fail(EINVAL);
    }
    if ((i->id.recv_cq && attr->recv_cq && i->id.recv_cq != attr->recv_cq) ||
        (i->id.send_cq && attr->send_cq && i->id.send_cq != attr->send_cq))
        return fail(EINVAL);
    if (create_cqs(i, attr->send_cq || i->id.send_cq ? 0 : attr->cap.max_send_wr,
                   attr->recv_cq || i->id.recv_cq ? 0 : attr->cap.max_recv_wr))
        return -1;
    if (!attr->send_cq) attr->send_cq = i->id.send_cq;
    if (!attr->recv_cq) attr->recv_cq = i->id.recv_cq;
    if (i->id.srq && !attr->srq) attr->srq = i->id.srq;
    ibv_qp* qp = sv::create_qp_ex(i->id.verbs, attr);
    if (!qp) {
        const int e = errno;
        destroy_cqs(i);
        return fail(e);
    }
    i->id.qp = qp;
    i->id.pd = attr->pd;
    // A UD QP is ready to send at once (librdmacm's ucma_init_ud_qp); an
    // RC QP waits in INIT for its connection.
    if (init_ece(i, qp) || modify_to(i, IBV_QPS_INIT) ||
        (qp->qp_type == IBV_QPT_UD && (modify_to(i, IBV_QPS_RTR) || modify_to(i, IBV_QPS_RTS))) ||
        set_local_ece(i, qp)) {
        const int e = errno;
        sv::destroy_qp(qp);
        i->id.qp = nullptr;
        destroy_cqs(i);
        return fail(e);
    }
    return 0;
}

void rdma_destroy_qp(rdma_cm_id* id) {
    Id* i = ours_locked(id);
    if (!i) {
        static sv::Real<decltype(rdma_destroy_qp)> real("rdma_destroy_qp", "RDMACM_1.0");
        if (auto* p = real.get()) p(id);
        return;
    }
    if (i->id.qp) sv::destroy_qp(i->id.qp);
    i->id.qp = nullptr;
    destroy_cqs(i);  // those rdma_create_qp made, as librdmacm's
}

int rdma_connect(rdma_cm_id* id, rdma_conn_param* conn_param) {
    Id* i = ours_locked(id);
    if (!i) REAL(rdma_connect, "RDMACM_1.0", -1, id, conn_param);
    int rr = 0, idp = 0;
    if (!rd_depths(i, conn_param, 0xFF, 0xFF, rr, idp)) return fail(EINVAL);
    Json p = param_json(conn_param, i->id.qp ? i->id.qp->qp_num : conn_param ? conn_param->qp_num : 0,
                        i->id.qp ? i->id.srq != nullptr || i->id.qp->srq != nullptr : conn_param && conn_param->srq);
    p["responder_resources"] = rr;
    p["initiator_depth"] = idp;
    // ucma_copy_ece_param_to_kern_req: our ECE.
    p["ece_vendor_id"] = i->local_ece.vendor_id;
    p["ece_options"] = i->local_ece.options;
    Json r;
    if (!id_call(i, Json{{"op", "cm_connect"}, {"param", p}}, r)) return -1;
    return complete(i);
}

int rdma_accept(rdma_cm_id* id, rdma_conn_param* conn_param) {
    Id* i = ours_locked(id);
    if (!i) REAL(rdma_accept, "RDMACM_1.0", -1, id, conn_param);
    int rr = 0, idp = 0;
    if (!rd_depths(i, conn_param, i->resp_res, i->init_depth, rr, idp)) return fail(EINVAL);
    if (i->id.qp && i->id.qp_type != IBV_QPT_UD && to_rts(i, rr, idp)) {
        const int e = errno;
        Json r;
        id_call(i, Json{{"op", "cm_reject"}, {"private_data", ""}}, r);
        return fail(e);
    }
    Json p = param_json(conn_param, i->id.qp ? i->id.qp->qp_num : conn_param ? conn_param->qp_num : 0,
                        i->id.qp ? i->id.qp->srq != nullptr : conn_param && conn_param->srq);
    p["responder_resources"] = rr;
    p["initiator_depth"] = idp;
    if (!conn_param) p["rnr_retry_count"] = 7;
    // ucma_copy_ece_param_to_kern_rep: the REQ's vendor back, our options.
    p["ece_vendor_id"] = i->remote_ece.vendor_id;
    p["ece_options"] = i->local_ece.options;
    Json r;
    if (!id_call(i, Json{{"op", "cm_accept"}, {"param", p}}, r)) {
        modify_err(i);
        return -1;
    }
    return complete(i);
}

namespace {
// librdmacm's reject_with_reason: 0 is rdma_reject's (the CM makes it
// consumer defined), 35 rdma_reject_ece's.
int reject_with_reason(Id* i, const void* private_data, uint8_t private_data_len, uint8_t reason) {
    Json r;
    const std::string pd = private_data ? ctl::to_hex(static_cast<const uint8_t*>(private_data), private_data_len) : "";
    return id_call(i, Json{{"op", "cm_reject"}, {"private_data", pd}, {"reason", reason}}, r) ? 0 : -1;
}
}  // namespace

int rdma_reject(rdma_cm_id* id, const void* private_data, uint8_t private_data_len) {
    Id* i = ours_locked(id);
    if (!i) REAL(rdma_reject, "RDMACM_1.0", -1, id, private_data, private_data_len);
    return reject_with_reason(i, private_data, private_data_len, 0);
}

int rdma_establish(rdma_cm_id* id) {
    Id* i = ours_locked(id);
    if (!i) REAL(rdma_establish, "RDMACM_1.2", -1, id);
    Json r;
    return id_call(i, Json{{"op", "cm_establish"}}, r) ? 0 : -1;
}

int rdma_disconnect(rdma_cm_id* id) {
    Id* i = ours_locked(id);
    if (!i) REAL(rdma_disconnect, "RDMACM_1.0", -1, id);
    // As librdmacm on IB and RoCE: the QP stops first, then the DREQ (or
    // the DREP answering the peer's).
    if (modify_err(i)) return -1;
    Json r;
    return id_call(i, Json{{"op", "cm_disconnect"}}, r) ? 0 : -1;
}

int rdma_init_qp_attr(rdma_cm_id* id, ibv_qp_attr* qp_attr, int* qp_attr_mask) {
    Id* i = ours_locked(id);
    if (!i) REAL(rdma_init_qp_attr, "RDMACM_1.2", -1, id, qp_attr, qp_attr_mask);
    if (!qp_attr || !qp_attr_mask) return fail(EINVAL);
    return init_qp_attr(i, qp_attr, qp_attr_mask);
}

int rdma_get_cm_event(rdma_event_channel* channel, rdma_cm_event** event) {
    Chan* c;
    {
        std::lock_guard<std::mutex> lk(g_mu);
        c = our_chan(channel);
        if (!c && channel && g_dead_chans.count(reinterpret_cast<Chan*>(channel)))
            c = reinterpret_cast<Chan*>(channel);
    }
    if (!c) REAL(rdma_get_cm_event, "RDMACM_1.0", -1, channel, event);
    if (!event) return fail(EINVAL);
    return get_event_on(c, event);
}

int rdma_ack_cm_event(rdma_cm_event* event) {
    Ev* e = reinterpret_cast<Ev*>(event);
    {
        std::lock_guard<std::mutex> lk(g_mu);
        if (!event || !g_events.erase(e)) e = nullptr;
        if (e) {
            if (Id* i = our_id(event->id)) {
                ++i->events_completed;
                if (i->id.event == event) i->id.event = nullptr;
            }
        }
    }
    if (!e) REAL(rdma_ack_cm_event, "RDMACM_1.0", -1, event);
    g_acked.notify_all();
    delete e;
    return 0;
}

const char* rdma_event_str(rdma_cm_event_type event) {
    static const char* const names[] = {
        "RDMA_CM_EVENT_ADDR_RESOLVED",    "RDMA_CM_EVENT_ADDR_ERROR",     "RDMA_CM_EVENT_ROUTE_RESOLVED",
        "RDMA_CM_EVENT_ROUTE_ERROR",      "RDMA_CM_EVENT_CONNECT_REQUEST", "RDMA_CM_EVENT_CONNECT_RESPONSE",
        "RDMA_CM_EVENT_CONNECT_ERROR",    "RDMA_CM_EVENT_UNREACHABLE",    "RDMA_CM_EVENT_REJECTED",
        "RDMA_CM_EVENT_ESTABLISHED",      "RDMA_CM_EVENT_DISCONNECTED",   "RDMA_CM_EVENT_DEVICE_REMOVAL",
        "RDMA_CM_EVENT_MULTICAST_JOIN",   "RDMA_CM_EVENT_MULTICAST_ERROR", "RDMA_CM_EVENT_ADDR_CHANGE",
        "RDMA_CM_EVENT_TIMEWAIT_EXIT"};
    const unsigned e = unsigned(event);
    return e < sizeof names / sizeof names[0] ? names[e] : "UNKNOWN EVENT";
}

__be16 rdma_get_src_port(rdma_cm_id* id) {
    Id* i = ours_locked(id);
    if (!i) REAL(rdma_get_src_port, "RDMACM_1.0", 0, id);
    const sockaddr_storage& s = i->id.route.addr.src_storage;
    return s.ss_family == AF_INET6 ? reinterpret_cast<const sockaddr_in6&>(s).sin6_port
                                   : reinterpret_cast<const sockaddr_in&>(s).sin_port;
}

__be16 rdma_get_dst_port(rdma_cm_id* id) {
    Id* i = ours_locked(id);
    if (!i) REAL(rdma_get_dst_port, "RDMACM_1.0", 0, id);
    const sockaddr_storage& s = i->id.route.addr.dst_storage;
    return s.ss_family == AF_INET6 ? reinterpret_cast<const sockaddr_in6&>(s).sin6_port
                                   : reinterpret_cast<const sockaddr_in&>(s).sin_port;
}

namespace {
// RDMA_OPTION_IB_PATH, as ucma_set_ib_path reads it: an array of
// ibv_path_data (EINVAL unless optlen is a whole number of them), of which
// the first primary bidirectional GMP record is the route (EINVAL if none);
// the ID must have a device. The agent checks the rest (rdma_set_ib_path).
int set_ib_path(Id* i, const void* optval, size_t optlen) {
    if (!optval || optlen == 0 || optlen % sizeof(ibv_path_data) != 0) return fail(EINVAL);
    constexpr uint32_t kWanted = IBV_PATH_FLAG_GMP | IBV_PATH_FLAG_PRIMARY | IBV_PATH_FLAG_BIDIRECTIONAL;
    const auto* base = static_cast<const uint8_t*>(optval);
    const ibv_path_record* rec = nullptr;
    ibv_path_data d;
    for (size_t off = 0; off < optlen; off += sizeof d) {
        std::memcpy(&d, base + off, sizeof d);  // the application's array need not be aligned
        if (d.flags == kWanted) {
            rec = &d.path;
            break;
        }
    }
    if (!rec || !i->id.verbs) return fail(EINVAL);  // ucma_set_ib_path: no device, EINVAL
    const uint32_t fh = ntohl(rec->flowlabel_hoplimit);  // flow label 27:8, hop limit 7:0
    Json r;
    return id_call(i,
                   Json{{"op", "cm_set_ib_path"},
                        {"dgid", ctl::to_hex(rec->dgid.raw, 16)},
                        {"sgid", ctl::to_hex(rec->sgid.raw, 16)},
                        {"flow_label", (fh >> 8) & 0xFFFFF},
                        {"hop_limit", fh & 0xFF},
                        {"tclass", rec->tclass},
                        {"mtu", rec->mtu & 0x3F},
                        {"packet_life_time", rec->packetlifetime & 0x3F}},
                   r)
               ? 0
               : -1;
}
}  // namespace

int rdma_set_option(rdma_cm_id* id, int level, int optname, void* optval, size_t optlen) {
    Id* i = ours_locked(id);
    if (!i) REAL(rdma_set_option, "RDMACM_1.0", -1, id, level, optname, optval, optlen);
    if (level == RDMA_OPTION_ID && optname >= RDMA_OPTION_ID_TOS && optname <= RDMA_OPTION_ID_ACK_TIMEOUT) {
        // ucma_set_option_id: TOS and ACK_TIMEOUT take one byte, REUSEADDR
        // and AFONLY an int (made 0 or 1); another length is EINVAL. The
        // agent keeps the ToS for rdma_resolve_route, which puts it in the
        // route (cma_resolve_iboe_route), and applies rdma_cm's state rules
        // to the rest.
        const bool one_byte = optname == RDMA_OPTION_ID_TOS || optname == RDMA_OPTION_ID_ACK_TIMEOUT;
        if (!optval || optlen != (one_byte ? sizeof(uint8_t) : sizeof(int))) return fail(EINVAL);
        uint8_t value = 0;
        if (one_byte) {
            value = *static_cast<const uint8_t*>(optval);
        } else {
            int v = 0;
            std::memcpy(&v, optval, sizeof v);
            value = v != 0;
        }
        Json r;
        return id_call(i, Json{{"op", "cm_set_option"}, {"option", optname}, {"value", value}}, r) ? 0 : -1;
    }
    if (level == RDMA_OPTION_IB && optname == RDMA_OPTION_IB_PATH) return set_ib_path(i, optval, optlen);
    return fail(ENOSYS);
}

ibv_context** rdma_get_devices(int* num_devices) {
    if (!simnic_mode()) REAL(rdma_get_devices, "RDMACM_1.0", nullptr, num_devices);
    std::vector<ibv_device*> devs;
    sv::current_devices(devs);
    auto** list = static_cast<ibv_context**>(calloc(devs.size() + 1, sizeof(ibv_context*)));
    if (!list) return nullptr;
    int n = 0;
    for (ibv_device* d : devs)
        if (ibv_context* c = context_of(sv::device_name(d))) list[n++] = c;
    if (num_devices) *num_devices = n;
    return list;
}

void rdma_free_devices(ibv_context** list) {
    // Our lists hold only our contexts; the real library's hold none of ours.
    if (list && list[0] && sv::is_context(list[0])) {
        free(list);
        return;
    }
    if (list && !list[0] && simnic_mode()) {
        free(list);
        return;
    }
    static sv::Real<decltype(rdma_free_devices)> real("rdma_free_devices", "RDMACM_1.0");
    if (auto* p = real.get()) p(list);
}

// Name resolution without the kernel: getaddrinfo, as rdma_getaddrinfo
// does for IP addresses on RoCE (RC over the TCP port space).
int rdma_getaddrinfo(const char* node, const char* service, const rdma_addrinfo* hints, rdma_addrinfo** res) {
    if (!simnic_mode()) REAL(rdma_getaddrinfo, "RDMACM_1.0", -1, node, service, hints, res);
    if (!res || (!node && !service)) return fail(EINVAL);
    addrinfo h{};
    h.ai_family = hints ? hints->ai_family : AF_UNSPEC;
    h.ai_socktype = SOCK_STREAM;
    const bool passive = hints && (hints->ai_flags & RAI_PASSIVE);
    if (passive) h.ai_flags |= AI_PASSIVE;
    if (hints && (hints->ai_flags & RAI_NUMERICHOST)) h.ai_flags |= AI_NUMERICHOST;
    addrinfo* ai = nullptr;
    const int rc = getaddrinfo(node, service, &h, &ai);
    if (rc) return fail(rc == EAI_SYSTEM ? errno : ENOENT);
    rdma_addrinfo* head = nullptr;
    rdma_addrinfo** tail = &head;
    for (addrinfo* a = ai; a; a = a->ai_next) {
        auto* r = static_cast<rdma_addrinfo*>(calloc(1, sizeof(rdma_addrinfo)));
        auto* sa = static_cast<sockaddr*>(malloc(a->ai_addrlen));
        if (!r || !sa) {
            free(r);
            free(sa);
            break;
        }
        std::memcpy(sa, a->ai_addr, a->ai_addrlen);
        r->ai_flags = hints ? hints->ai_flags : 0;
        r->ai_family = a->ai_family;
        // As librdmacm's ucma_set_hints: the port space and QP type asked
        // for, each following from the other, RC over TCP's by default.
        int ps = hints ? hints->ai_port_space : 0, qpt = hints ? hints->ai_qp_type : 0;
        if (!ps) ps = qpt == IBV_QPT_UD ? RDMA_PS_UDP : RDMA_PS_TCP;
        if (!qpt) qpt = ps == RDMA_PS_UDP || ps == RDMA_PS_IPOIB ? IBV_QPT_UD : IBV_QPT_RC;
        r->ai_qp_type = qpt;
        r->ai_port_space = ps;
        if (passive) {
            r->ai_src_len = a->ai_addrlen;
            r->ai_src_addr = sa;
        } else {
            r->ai_dst_len = a->ai_addrlen;
            r->ai_dst_addr = sa;
            // The source the hints name goes with an active result, as
            // librdmacm copies it (udaddy -b, rdma_client -b): without it
            // the CM picks the route's source, which on a host with two
            // devices on one subnet may be the other device.
            if (hints && hints->ai_src_addr && hints->ai_src_len) {
                r->ai_src_addr = static_cast<sockaddr*>(malloc(hints->ai_src_len));
                if (r->ai_src_addr) {
                    std::memcpy(r->ai_src_addr, hints->ai_src_addr, hints->ai_src_len);
                    r->ai_src_len = hints->ai_src_len;
                }
            }
        }
        *tail = r;
        tail = &r->ai_next;
    }
    freeaddrinfo(ai);
    if (!head) return fail(ENOMEM);
    {
        std::lock_guard<std::mutex> lk(g_mu);
        g_addrinfos.insert(head);
    }
    *res = head;
    return 0;
}

void rdma_freeaddrinfo(rdma_addrinfo* res) {
    bool ours;
    {
        std::lock_guard<std::mutex> lk(g_mu);
        ours = g_addrinfos.erase(res) > 0;
    }
    if (!ours) {
        static sv::Real<decltype(rdma_freeaddrinfo)> real("rdma_freeaddrinfo", "RDMACM_1.0");
        if (auto* p = real.get()) p(res);
        return;
    }
    while (res) {
        rdma_addrinfo* n = res->ai_next;
        free(res->ai_src_addr);
        free(res->ai_dst_addr);
        free(res);
        res = n;
    }
}

int rdma_migrate_id(rdma_cm_id* id, rdma_event_channel* channel) {
    Id* i = ours_locked(id);
    if (!i) REAL(rdma_migrate_id, "RDMACM_1.0", -1, id, channel);
    Chan* to;
    {
        std::lock_guard<std::mutex> lk(g_mu);
        to = our_chan(channel);
    }
    if (channel && !to) return fail(EINVAL);  // not one of simnic's channels
    if (!channel && i->own_chan) return fail(EINVAL);  // librdmacm: already synchronous
    const bool own = !to;
    if (own && !(to = new_channel())) return -1;
    if (migrate(i, to, own)) {
        const int e = errno;
        if (own) rdma_destroy_event_channel(&to->ch);
        return fail(e);
    }
    return 0;
}

// ---- the synchronous API (librdmacm's rdma_create_ep and friends) ----

int rdma_get_request(rdma_cm_id* listen, rdma_cm_id** id) {
    Id* l = ours_locked(listen);
    if (!l) REAL(rdma_get_request, "RDMACM_1.0", -1, listen, id);
    if (!l->own_chan || !id) return fail(EINVAL);  // only a synchronous listener
    if (l->id.event) {
        rdma_ack_cm_event(l->id.event);
        l->id.event = nullptr;
    }
    rdma_cm_event* ev = nullptr;
    if (get_event_on(l->chan, &ev)) return -1;
    int e = 0;
    if (ev->event == RDMA_CM_EVENT_REJECTED)
        e = ECONNREFUSED;
    else if (ev->status)
        e = ev->status < 0 ? -ev->status : ev->status;
    else if (ev->event != RDMA_CM_EVENT_CONNECT_REQUEST)
        e = EINVAL;
    if (!e && l->qp_init_attr) {
        ibv_qp_init_attr attr = *l->qp_init_attr;
        if (rdma_create_qp(ev->id, l->id.pd, &attr)) e = errno;
    }
    if (e) {
        l->id.event = ev;  // acked by the listener's next call, as librdmacm does
        return fail(e);
    }
    *id = ev->id;
    ev->id->event = ev;  // acked by the connection's next synchronous call
    return 0;
}

int rdma_create_ep(rdma_cm_id** id, rdma_addrinfo* res, ibv_pd* pd, ibv_qp_init_attr* qp_init_attr) {
    if (!simnic_mode()) REAL(rdma_create_ep, "RDMACM_1.0", -1, id, res, pd, qp_init_attr);
    if (!id || !res) return fail(EINVAL);
    rdma_cm_id* cid = nullptr;
    if (rdma_create_id(nullptr, &cid, nullptr, rdma_port_space(res->ai_port_space))) return -1;
    Id* i = ours_locked(cid);
    i->id.qp_type = ibv_qp_type(res->ai_qp_type);
    int e = 0;
    if (res->ai_flags & RAI_PASSIVE) {
        // librdmacm's ucma_passive_ep: bound now; rdma_get_request makes
        // each connection's QP with these attributes.
        if (rdma_bind_addr(cid, res->ai_src_addr)) {
            e = errno;
        } else {
            if (pd) i->id.pd = pd;
            if (qp_init_attr) {
                i->qp_init_attr = std::make_unique<ibv_qp_init_attr>(*qp_init_attr);
                i->qp_init_attr->qp_type = ibv_qp_type(res->ai_qp_type);
            }
        }
    } else if (rdma_resolve_addr(cid, res->ai_src_addr, res->ai_dst_addr, 2000) || rdma_resolve_route(cid, 2000)) {
        e = errno;
    } else if (qp_init_attr) {
        qp_init_attr->qp_type = ibv_qp_type(res->ai_qp_type);
        if (rdma_create_qp(cid, pd, qp_init_attr)) e = errno;
    }
    if (e) {
        rdma_destroy_ep(cid);
        return fail(e);
    }
    *id = cid;
    return 0;
}

void rdma_destroy_ep(rdma_cm_id* id) {
    if (ours_locked(id)) {
        if (id->qp) rdma_destroy_qp(id);
        if (id->srq) rdma_destroy_srq(id);
        rdma_destroy_id(id);  // frees the saved QP attributes with the ID
        return;
    }
    static sv::Real<decltype(rdma_destroy_ep)> real("rdma_destroy_ep", "RDMACM_1.0");
    if (auto* p = real.get()) p(id);
}

// SRQs through the CM (basic ones: a simnic device has no XRC).
int rdma_create_srq_ex(rdma_cm_id* id, ibv_srq_init_attr_ex* attr) {
    Id* i = ours_locked(id);
    if (!i) REAL(rdma_create_srq_ex, "RDMACM_1.0", -1, id, attr);
    if (!attr || !(attr->comp_mask & IBV_SRQ_INIT_ATTR_TYPE) || !i->id.verbs) return fail(EINVAL);
    if (attr->srq_type != IBV_SRQT_BASIC) return fail(EOPNOTSUPP);
    if (!(attr->comp_mask & IBV_SRQ_INIT_ATTR_PD) || !attr->pd) {
        ibv_pd* d = i->id.pd ? i->id.pd : default_pd(i->id.verbs);
        if (!d) return -1;
        attr->pd = d;
        attr->comp_mask |= IBV_SRQ_INIT_ATTR_PD;
    }
    ibv_srq_init_attr basic{};
    basic.srq_context = attr->srq_context;
    basic.attr = attr->attr;
    ibv_srq* srq = sv::create_srq(attr->pd, &basic);
    if (!srq) return -1;
    attr->attr = basic.attr;
    if (!i->id.pd) i->id.pd = attr->pd;
    i->id.srq = srq;
    return 0;
}

int rdma_create_srq(rdma_cm_id* id, ibv_pd* pd, ibv_srq_init_attr* attr) {
    if (!ours_locked(id)) REAL(rdma_create_srq, "RDMACM_1.0", -1, id, pd, attr);
    if (!attr) return fail(EINVAL);
    ibv_srq_init_attr_ex ax{};
    ax.attr = attr->attr;
    ax.srq_context = attr->srq_context;
    ax.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD;
    ax.srq_type = IBV_SRQT_BASIC;
    ax.pd = pd;
    if (rdma_create_srq_ex(id, &ax)) return -1;
    attr->attr = ax.attr;
    return 0;
}

void rdma_destroy_srq(rdma_cm_id* id) {
    if (Id* i = ours_locked(id)) {
        if (i->id.srq) sv::destroy_srq(i->id.srq);
        i->id.srq = nullptr;
        return;
    }
    static sv::Real<decltype(rdma_destroy_srq)> real("rdma_destroy_srq", "RDMACM_1.0");
    if (auto* p = real.get()) p(id);
}

// ---- multicast (librdmacm's rdma_join_multicast2, rdma_leave_multicast) ----

namespace {

bool same_addr(const sockaddr_storage& a, const sockaddr* b) {
    if (a.ss_family != b->sa_family) return false;
    if (a.ss_family == AF_INET)
        return reinterpret_cast<const sockaddr_in&>(a).sin_addr.s_addr ==
               reinterpret_cast<const sockaddr_in*>(b)->sin_addr.s_addr;
    return std::memcmp(&reinterpret_cast<const sockaddr_in6&>(a).sin6_addr,
                       &reinterpret_cast<const sockaddr_in6*>(b)->sin6_addr, 16) == 0;
}

// The join: remembered on the ID first (its event finds the context there),
// then asked of the daemon's CM, whose MULTICAST_JOIN follows on the channel.
int join(Id* i, const sockaddr* addr, uint32_t flags, void* context) {
    Json a, r;
    if (!addr || !addr_to_json(addr, a)) return fail(addr ? EAFNOSUPPORT : EINVAL);
    Id::Mc mc;
    std::memcpy(&mc.addr, addr, addr->sa_family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6));
    mc.context = context;
    mc.join_flags = flags;
    {
        std::lock_guard<std::mutex> lk(g_mu);
        i->mcs.push_back(mc);
    }
    if (id_call(i, Json{{"op", "cm_join"}, {"addr", a}}, r)) return complete(i);
    const int e = errno;
    {
        std::lock_guard<std::mutex> lk(g_mu);
        for (auto it = i->mcs.end(); it != i->mcs.begin();) {
            --it;
            if (it->context == context && same_addr(it->addr, addr)) {
                i->mcs.erase(it);
                break;
            }
        }
    }
    return fail(e);
}

}  // namespace

int rdma_join_multicast(rdma_cm_id* id, sockaddr* addr, void* context) {
    Id* i = ours_locked(id);
    if (!i) REAL(rdma_join_multicast, "RDMACM_1.0", -1, id, addr, context);
    return join(i, addr, RDMA_MC_JOIN_FLAG_FULLMEMBER, context);
}

int rdma_join_multicast_ex(rdma_cm_id* id, rdma_cm_join_mc_attr_ex* mc_join_attr, void* context) {
    Id* i = ours_locked(id);
    if (!i) REAL(rdma_join_multicast_ex, "RDMACM_1.1", -1, id, mc_join_attr, context);
    if (!mc_join_attr) return fail(EINVAL);
    if (mc_join_attr->comp_mask >= RDMA_CM_JOIN_MC_ATTR_RESERVED) return fail(ENOTSUP);
    if (!(mc_join_attr->comp_mask & RDMA_CM_JOIN_MC_ATTR_ADDRESS)) return fail(EINVAL);
    if (!(mc_join_attr->comp_mask & RDMA_CM_JOIN_MC_ATTR_JOIN_FLAGS) ||
        mc_join_attr->join_flags >= RDMA_MC_JOIN_FLAG_RESERVED)
        return fail(EINVAL);
    return join(i, mc_join_attr->addr, mc_join_attr->join_flags, context);
}

// The QP leaves the group (unless the join was send-only); on RoCE nothing
// else holds the membership, which the device drops with its last QP.
int rdma_leave_multicast(rdma_cm_id* id, sockaddr* addr) {
    Id* i = ours_locked(id);
    if (!i) REAL(rdma_leave_multicast, "RDMACM_1.0", -1, id, addr);
    if (!addr) return fail(EINVAL);
    Id::Mc mc;
    {
        std::lock_guard<std::mutex> lk(g_mu);
        auto it = std::find_if(i->mcs.begin(), i->mcs.end(), [&](const Id::Mc& m) { return same_addr(m.addr, addr); });
        if (it == i->mcs.end()) return fail(EADDRNOTAVAIL);
        mc = *it;
        i->mcs.erase(it);
    }
    if (id->qp && mc.join_flags != RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER) {
        if (const int e = sv::detach_mcast(id->qp, &mc.mgid, 0)) {
            std::lock_guard<std::mutex> lk(g_mu);
            i->mcs.push_back(mc);
            return fail(e);
        }
    }
    return 0;
}

// ---- rdma_notify and ECE ----

// The CM's rdma_notify (the daemon's cm_notify: ucma_notify, rdma_notify,
// ib_cm_notify): COMM_EST on a connection whose RTU has not come makes it
// ESTABLISHED, whose event follows on the channel.
int rdma_notify(rdma_cm_id* id, ibv_event_type event) {
    Id* i = ours_locked(id);
    if (!i) REAL(rdma_notify, "RDMACM_1.0", -1, id, event);
    Json r;
    return id_call(i, Json{{"op", "cm_notify"}, {"event", uint32_t(event)}}, r) ? 0 : -1;
}

// librdmacm's checks: none once the ID has a QP (rdma_create_qp took the
// QP's ECE), a vendor ID and no comp_mask.
int rdma_set_local_ece(rdma_cm_id* id, ibv_ece* ece) {
    Id* i = ours_locked(id);
    if (!i) REAL(rdma_set_local_ece, "RDMACM_1.3", -1, id, ece);
    if (i->id.qp || !ece || !ece->vendor_id || ece->comp_mask) return fail(EINVAL);
    i->local_ece.vendor_id = ece->vendor_id;
    i->local_ece.options = ece->options;
    return 0;
}

// What the peer's REQ (CONNECT_REQUEST) or REP (CONNECT_RESPONSE) carried;
// as librdmacm, only on an ID without a QP (with one, the QP has the
// outcome: ibv_query_ece).
int rdma_get_remote_ece(rdma_cm_id* id, ibv_ece* ece) {
    Id* i = ours_locked(id);
    if (!i) REAL(rdma_get_remote_ece, "RDMACM_1.3", -1, id, ece);
    if (i->id.qp || !ece) return fail(EINVAL);
    ece->vendor_id = i->remote_ece.vendor_id;
    ece->options = i->remote_ece.options;
    ece->comp_mask = 0;
    return 0;
}

// A REJ whose reason is IBA's "vendor option not supported" (35), which the
// active side's REJECTED carries as its status.
int rdma_reject_ece(rdma_cm_id* id, const void* private_data, uint8_t private_data_len) {
    Id* i = ours_locked(id);
    if (!i) REAL(rdma_reject_ece, "RDMACM_1.3", -1, id, private_data, private_data_len);
    return reject_with_reason(i, private_data, private_data_len, uint8_t(scm::RejReason::VendorOptionNotSupported));
}

}  // extern "C"
#pragma GCC visibility pop
