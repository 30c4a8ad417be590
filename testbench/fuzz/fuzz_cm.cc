// libFuzzer target for the connection manager (cm::Agent): MADs arriving on
// QP1 interleaved with the application's librdmacm calls, so that every
// MAD meets IDs in every state (LISTEN, REQ_SENT, REQ_RCVD, REP_SENT,
// REP_RCVD, ESTABLISHED, DREQ_SENT, DREQ_RCVD, TIMEWAIT, ERROR, and orphans
// resending their DREQ). The input is a scenario (cm_input.h): the
// application's steps, MADs of every attribute built from the input and,
// for replies, carrying the communication IDs of a MAD the agent sent (so
// that REPs, RTUs, REJs, DREQs and DREPs find their IDs), raw and patched
// MADs, truncated ones, time passing.
//
// Properties checked on every input:
//  - nothing crashes, overflows or hits UB (ASan, UBSan);
//  - each MAD that arrives makes the agent send at most one MAD and raise at
//    most one event (its work is bounded by what arrived); each MAD the
//    agent sends is a CM MAD of a known attribute, from a device it has;
//  - every event names an ID the application holds on that channel; a
//    CONNECT_REQUEST names a new ID and a listening one;
//  - every ID is in a state of IBA 12.9 (or rdma_cm's address states), and
//    init_qp_attr answers a state it accepts with that state;
//  - once the application has destroyed every ID and the timers have run
//    out (no answer from the peer), the agent holds nothing: no ID, no
//    deadline, and every port the input used can be bound and listened on
//    again, for either port space and IP version.
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "cm_input.h"
#include "simnic/cm/agent.h"
#include "simnic/cm/mad.h"

using namespace simnic;
using namespace simnic::fuzz::cm_input;
using cm::Gid;

namespace {

void fail(const char* what) {
    std::fprintf(stderr, "fuzz_cm: %s\n", what);
    std::abort();
}

const char* const kDevices[2] = {"fz0", "fz1"};

Gid v6_gid(std::uint8_t first, std::uint8_t last) {
    Gid g{};
    g[0] = first;
    g[1] = first == 0xfe ? 0x80 : 0x00;
    g[15] = last;
    return g;
}
const Gid kLocalV4 = cm::ipv4_gid(0x0a000001);   // fz0: 10.0.0.1
const Gid kLocalV6 = v6_gid(0xfd, 1);             // fz0: fd00::1
const Gid kLocal1 = cm::ipv4_gid(0x0a000101);    // fz1: 10.0.1.1
const Gid kPeerV4 = cm::ipv4_gid(0x0a000002);    // 10.0.0.2
const Gid kPeerV6 = v6_gid(0xfd, 2);             // fd00::2
const Gid kForeign = cm::ipv4_gid(0xc0a80909);   // on no device

cm::Port port_of(int dev) {
    cm::Port p;
    p.device = kDevices[dev];
    p.node_guid = 0x5254000000000001ull + std::uint64_t(dev);
    p.active_mtu = 3;
    if (dev == 0) p.gids = {{0, kLocalV4}, {1, kLocalV6}};
    else p.gids = {{0, kLocal1}};
    return p;
}

const std::set<std::string> kStates = {"IDLE",     "ADDR_BOUND", "ADDR_QUERY",  "ADDR_RESOLVED", "ROUTE_RESOLVED",
                                       "LISTEN",   "REQ_SENT",   "REQ_RCVD",    "REP_SENT",      "REP_RCVD",
                                       "ESTABLISHED", "DREQ_SENT", "DREQ_RCVD", "TIMEWAIT",      "ERROR"};

struct SentMad {
    cm::Mad mad;
    std::string device;
    Gid sgid, dgid;
};

struct World final : cm::Hooks {
    std::uint64_t now = 1000;
    std::uint32_t seed = 1;
    std::unique_ptr<cm::Agent> agent;
    std::vector<SentMad> sent;
    std::vector<std::uint32_t> handles;  // every ID the application was given
    std::set<std::uint64_t> channels{1, 2, 3};
    std::size_t sends = 0, events = 0;
    bool port_gone[2] = {false, false};
    // SIMNIC_FUZZ_TRACE set: each step and the IDs' states after it, for
    // reading what a crashing input does.
    const bool trace = std::getenv("SIMNIC_FUZZ_TRACE") != nullptr;

    World() {
        // Short MAD timers, as the CM's tests use, so that an input reaches
        // the end of the retries in a few Time steps.
        agent = std::make_unique<cm::Agent>(*this, cm::Timing{100, 50, 3, 80});
        agent->set_port(port_of(0));
        agent->set_port(port_of(1));
    }

    void send_mad(const std::string& device, const Gid& sgid, const Gid& dgid, uint8_t, const cm::Mad& mad) override {
        ++sends;
        if (device != kDevices[0] && device != kDevices[1]) fail("a MAD sent from no device");
        cm::MadHdr h;
        if (cm::decode_hdr(mad.data(), mad.size(), h) != cm::MadError::Ok) fail("the agent sent a MAD it cannot read");
        if (sent.size() < 256) sent.push_back({mad, device, sgid, dgid});
    }
    void deliver(std::uint64_t channel, const cm::Event& ev) override {
        ++events;
        if (channel == 0) fail("an event for no channel");
        if (ev.type == cm::EventType::ConnectRequest) {
            if (agent->channel_of(ev.id) != channel) fail("CONNECT_REQUEST for an ID not on its channel");
            if (agent->state_name(ev.listen_id) != "LISTEN") fail("CONNECT_REQUEST from an ID that does not listen");
            handles.push_back(ev.id);
        } else if (agent->channel_of(ev.id) != channel) {
            fail("an event for an ID the channel does not hold");
        }
    }
    std::optional<Gid> route_source(const Gid& dst) override {
        if (dst == kPeerV4) return kLocalV4;
        if (dst == kPeerV6) return kLocalV6;
        return std::nullopt;
    }
    std::uint64_t now_ms() override { return now; }
    std::uint32_t random32() override {
        seed = seed * 1103515245u + 12345u;
        return seed;
    }

    std::uint32_t id(std::uint8_t b) const { return handles.empty() ? b : handles[b % handles.size()]; }
    std::uint64_t channel(std::uint8_t b) { return std::uint64_t(b % 3) + 1; }

    void check_ids() {
        for (std::uint32_t h : handles) {
            const std::string s = agent->state_name(h);
            if (s.empty()) continue;  // destroyed
            if (!kStates.count(s)) fail("an ID in no state");
            for (hw::QpState st : {hw::QpState::Init, hw::QpState::Rtr, hw::QpState::Rts}) {
                cm::QpAttr a;
                if (agent->init_qp_attr(h, st, a) != 0) continue;
                if (a.state != st || !(a.mask & hw::qp_attr_mask::kState)) fail("init_qp_attr answered another state");
                if (a.dest_qpn > 0xFFFFFF) fail("init_qp_attr: a QPN of more than 24 bits");
                if (a.rq_psn > 0xFFFFFF || a.sq_psn > 0xFFFFFF) fail("init_qp_attr: a PSN of more than 24 bits");
            }
        }
    }
};

// The communication IDs of a MAD the agent sent: its own and the peer's.
struct Ids {
    std::uint32_t local = 0, remote = 0;
    std::uint64_t tid = 0;
};
Ids ids_of(const SentMad& s) {
    cm::MadHdr h;
    Ids r;
    if (cm::decode_hdr(s.mad.data(), s.mad.size(), h) != cm::MadError::Ok) return r;
    r.tid = h.tid;
    const std::uint8_t* m = s.mad.data();
    switch (cm::AttrId(h.attr_id)) {
        case cm::AttrId::ConnectRequest: r.local = cm::decode_req(m).local_comm_id; break;
        case cm::AttrId::ConnectReply: {
            const cm::Rep x = cm::decode_rep(m);
            r = {x.local_comm_id, x.remote_comm_id, h.tid};
            break;
        }
        case cm::AttrId::ReadyToUse: {
            const cm::Rtu x = cm::decode_rtu(m);
            r = {x.local_comm_id, x.remote_comm_id, h.tid};
            break;
        }
        case cm::AttrId::ConnectReject: {
            const cm::Rej x = cm::decode_rej(m);
            r = {x.local_comm_id, x.remote_comm_id, h.tid};
            break;
        }
        case cm::AttrId::DisconnectRequest: {
            const cm::Dreq x = cm::decode_dreq(m);
            r = {x.local_comm_id, x.remote_comm_id, h.tid};
            break;
        }
        case cm::AttrId::DisconnectReply: {
            const cm::Drep x = cm::decode_drep(m);
            r = {x.local_comm_id, x.remote_comm_id, h.tid};
            break;
        }
        case cm::AttrId::SidrRequest: r.local = cm::decode_sidr_req(m).request_id; break;
        case cm::AttrId::SidrReply: r.remote = cm::decode_sidr_rep(m).request_id; break;
        default: break;
    }
    return r;
}

cm::Mad build_mad(World& w, Reader& in, std::size_t& len, int& dev) {
    const auto kind = MadKind(in.u8() % kKindCount);
    dev = in.u8() % 2;
    const std::uint8_t pick = in.u8();
    const std::uint8_t flags = in.u8();
    const std::uint32_t comm = in.u32();
    const std::uint32_t qpn = in.u32();
    const std::uint8_t a = in.u8(), b = in.u8(), c = in.u8(), d = in.u8();
    Ids r;
    if (!w.sent.empty() && !(flags & kFlagWrongIds)) r = ids_of(w.sent[pick % w.sent.size()]);
    if (flags & kFlagWrongIds) r = {comm, qpn, comm};
    const std::uint32_t peer_comm = r.remote ? r.remote : comm;
    cm::MadHdr h;
    h.tid = r.tid ? r.tid : comm;
    const bool v6 = flags & kFlagV6;
    const Gid& local = dev == 1 ? kLocal1 : v6 ? kLocalV6 : kLocalV4;
    const Gid& peer = v6 ? kPeerV6 : kPeerV4;
    const std::uint16_t ps = (flags & kFlagUdpPs) ? cm::kPsUdp : cm::kPsTcp;
    const std::uint64_t sid = cm::service_id(ps, kPorts[(flags & kFlagOtherPort) ? 1 : 0]);
    cm::CmaHdr cma;
    cma.cma_version = (flags & kFlagBadCma) ? 0x77 : 0;
    cma.ip_version = v6 ? 6 : 4;
    cma.src_port = std::uint16_t(comm);
    cma.src_addr = peer;
    cma.dst_addr = local;
    if (!v6) {
        std::fill(cma.src_addr.begin(), cma.src_addr.begin() + 12, 0);
        std::fill(cma.dst_addr.begin(), cma.dst_addr.begin() + 12, 0);
    }
    cm::Mad m{};
    switch (kind) {
        case Req: {
            cm::Req x;
            x.local_comm_id = r.remote && !(flags & kFlagWrongIds) ? r.remote : comm;  // a repeated REQ
            x.service_id = sid;
            x.local_ca_guid = 0x5254000000000099ull;
            x.local_qpn = qpn & 0xFFFFFF;
            x.responder_resources = c;
            x.initiator_depth = d;
            x.transport_service_type = b & 3;
            x.starting_psn = comm & 0xFFFFFF;
            x.retry_count = a & 7;
            x.rnr_retry_count = b & 7;
            x.path_mtu = a >> 4;
            x.srq = b & 8;
            x.primary_local_gid = peer;
            x.primary_remote_gid = local;
            x.primary_flow_label = qpn >> 12;
            x.primary_hop_limit = 64;
            cm::put_cma_hdr(x.private_data.data(), cma);
            m = cm::encode(h, x);
            break;
        }
        case Rep: {
            cm::Rep x;
            x.local_comm_id = comm;
            x.remote_comm_id = r.local;
            x.local_qpn = qpn & 0xFFFFFF;
            x.starting_psn = comm & 0xFFFFFF;
            x.responder_resources = c;
            x.initiator_depth = d;
            x.rnr_retry_count = a & 7;
            x.srq = b & 1;
            x.local_ca_guid = 0x5254000000000099ull;
            m = cm::encode(h, x);
            break;
        }
        case Rtu: {
            cm::Rtu x;
            x.local_comm_id = peer_comm;
            x.remote_comm_id = r.local;
            m = cm::encode(h, x);
            break;
        }
        case Rej: {
            cm::Rej x;
            x.local_comm_id = (flags & 32) ? 0 : peer_comm;
            x.remote_comm_id = (flags & 64) ? 0 : r.local;
            x.msg_rejected = cm::RejMsg(a % 3);
            x.reason = std::uint16_t(b | c << 8);
            x.rejected_info_length = d;
            m = cm::encode(h, x);
            break;
        }
        case Dreq: {
            cm::Dreq x;
            x.local_comm_id = peer_comm;
            x.remote_comm_id = r.local;
            x.remote_qpn = qpn & 0xFFFFFF;
            m = cm::encode(h, x);
            break;
        }
        case Drep: {
            cm::Drep x;
            x.local_comm_id = peer_comm;
            x.remote_comm_id = r.local;
            m = cm::encode(h, x);
            break;
        }
        case SidrReq: {
            cm::SidrReq x;
            x.request_id = r.remote && !(flags & kFlagWrongIds) ? r.remote : comm;
            x.service_id = sid;
            cm::put_cma_hdr(x.private_data.data(), cma);
            m = cm::encode(h, x);
            break;
        }
        case SidrRep: {
            cm::SidrRep x;
            x.request_id = r.local;
            x.status = cm::SidrStatus(a % 6);
            x.qpn = qpn & 0xFFFFFF;
            x.service_id = sid;
            x.qkey = (b & 1) ? cm::kUdpQkey : qpn;
            x.info_length = c;
            m = cm::encode(h, x);
            break;
        }
        case Mra:
        case Lap:
        case Apr:
        case Unknown: {
            // A header of the CM class with that attribute, and the IDs where
            // every CM message keeps them.
            cm::Rtu x;
            x.local_comm_id = peer_comm;
            x.remote_comm_id = r.local;
            m = cm::encode(h, x);
            const std::uint16_t attr = kind == Mra ? 0x0011 : kind == Lap ? 0x0019 : kind == Apr ? 0x001A
                                                                                                : std::uint16_t(0x0020 + a);
            m[16] = std::uint8_t(attr >> 8);
            m[17] = std::uint8_t(attr);
            break;
        }
        case Raw:
        case kKindCount:
            for (std::uint8_t& x : m) x = in.u8();
            break;
    }
    const std::uint8_t patches = in.u8() % 16;
    for (std::uint8_t i = 0; i < patches; ++i) {
        const std::uint8_t off = in.u8();
        m[off] = in.u8();
    }
    const std::uint8_t trunc = in.u8();
    len = trunc == 0 ? m.size() : trunc;  // 1..255: a truncated MAD
    (void)w;
    return m;
}

void run(World& w, Reader& in) {
    cm::Agent& ag = *w.agent;
    std::set<std::uint16_t> used_ports{kActivePort};
    while (!in.done()) {
        // A device removed by the previous step comes back.
        for (int d = 0; d < 2; ++d)
            if (w.port_gone[d]) {
                ag.set_port(port_of(d));
                w.port_gone[d] = false;
            }
        const auto op = Op(in.u8() % kOpCount);
        switch (op) {
            case Create: {
                const std::uint8_t ps = in.u8();
                const std::uint16_t space = ps == 0 ? cm::kPsTcp : ps == 1 ? cm::kPsUdp : ps == 2 ? cm::kPsIb : 0x9999;
                std::uint32_t h = 0;
                if (ag.create_id(w.channel(in.u8()), space, h) == 0) w.handles.push_back(h);
                break;
            }
            case Listen: {
                const std::uint32_t id = w.id(in.u8());
                const std::uint16_t port = kPorts[in.u8() % 3];
                const std::uint8_t which = in.u8() % 4;
                cm::SockAddr a;
                a.port = port;
                if (which == 1) a.addr = kLocalV4;
                if (which == 2) {
                    a.addr = kLocalV6;
                    a.v6 = true;
                }
                if (which == 3) a.addr = kForeign;
                if (port) used_ports.insert(port);
                if (ag.bind(id, a) == 0 || which == 0) ag.listen(id);
                break;
            }
            case Connect: {
                const std::uint32_t id = w.id(in.u8());
                const std::uint16_t port = kPorts[in.u8() % 3];
                const std::uint8_t dst = in.u8() % 3;
                const std::uint8_t qpn = in.u8();
                const std::uint8_t priv = in.u8();
                cm::SockAddr to;
                to.port = port;
                to.v6 = dst == 1;
                to.addr = dst == 0 ? kPeerV4 : dst == 1 ? kPeerV6 : kForeign;
                cm::SockAddr from;
                from.port = kActivePort;
                from.v6 = to.v6;
                from.addr = to.v6 ? kLocalV6 : kLocalV4;
                ag.resolve_addr(id, from, to, 100);
                ag.resolve_route(id);
                cm::ConnParam p;
                p.qp_num = 0x100u + qpn;
                p.responder_resources = 1;
                p.initiator_depth = 1;
                p.private_data.assign(priv % 64, priv);
                ag.connect(id, p);
                break;
            }
            case Accept: {
                const std::uint32_t id = w.id(in.u8());
                cm::ConnParam p;
                p.qp_num = 0x200u + in.u8();
                p.responder_resources = in.u8();
                p.initiator_depth = in.u8();
                const std::uint8_t priv = in.u8();
                p.private_data.assign(priv, priv);  // up to 255: more than any message holds
                ag.accept(id, p);
                break;
            }
            case Reject: {
                const std::uint32_t id = w.id(in.u8());
                const std::uint8_t priv = in.u8();
                ag.reject(id, std::vector<std::uint8_t>(priv, priv));
                break;
            }
            case Establish: ag.establish(w.id(in.u8())); break;
            case Notify: {
                const std::uint32_t id = w.id(in.u8());
                ag.notify(id, in.u8() % 8);
                break;
            }
            case SetOption: {
                // rdma_set_option in any state: the agent's state rules and
                // its port and listener rules must hold whatever the order.
                const std::uint32_t id = w.id(in.u8());
                const std::uint8_t which = in.u8() % 5, v = in.u8();
                switch (which) {
                    case 0: ag.set_reuseaddr(id, v & 1); break;
                    case 1: ag.set_afonly(id, v & 1); break;
                    case 2: ag.set_ack_timeout(id, v); break;
                    case 3: {
                        cm::PathRecord p;
                        p.sgid = (v & 1) ? kLocalV4 : kForeign;
                        p.dgid = (v & 2) ? kPeerV4 : kForeign;
                        p.flow_label = v * 0x1111u;
                        p.hop_limit = v;
                        p.traffic_class = v;
                        p.mtu = v % 7;
                        p.packet_life_time = v;
                        ag.set_ib_path(id, p);
                        break;
                    }
                    default: ag.set_tos(id, v); break;
                }
                break;
            }
            case Disconnect: ag.disconnect(w.id(in.u8())); break;
            case Destroy: ag.destroy_id(w.id(in.u8())); break;
            case DestroyChannel: ag.destroy_channel(w.channel(in.u8())); break;
            case Migrate: {
                const std::uint32_t id = w.id(in.u8());
                ag.migrate(id, w.channel(in.u8()));
                break;
            }
            case Mad: {
                std::size_t len = 0;
                int dev = 0;
                const cm::Mad m = build_mad(w, in, len, dev);
                // From the peer to us, as the engine hands QP1's MADs over.
                cm::CmaHdr unused;
                (void)unused;
                const Gid& to = dev == 1 ? kLocal1 : kLocalV4;
                const std::size_t s0 = w.sends, e0 = w.events;
                // An exact-size copy, so that ASan sees a read past a truncated MAD.
                std::vector<std::uint8_t> buf(m.begin(), m.begin() + std::min(len, m.size()));
                ag.on_mad(kDevices[dev], kPeerV4, to, buf.data(), buf.size());
                if (w.sends - s0 > 1) fail("one MAD made the agent send more than one");
                if (w.events - e0 > 1) fail("one MAD raised more than one event");
                break;
            }
            case Time: {
                w.now += std::uint64_t(in.u8()) * 8;
                const std::size_t s0 = w.sends;
                ag.on_timer();
                if (w.sends - s0 > w.handles.size()) fail("a timer pass sent more MADs than there are IDs");
                break;
            }
            case RemovePort: {
                const int d = in.u8() % 2;
                ag.remove_port(kDevices[d]);
                w.port_gone[d] = true;
                break;
            }
            case kOpCount: break;
        }
        w.check_ids();
        if (w.trace) {
            std::fprintf(stderr, "step %d:", int(op));
            for (std::uint32_t h : w.handles) std::fprintf(stderr, " %u=%s", h, ag.state_name(h).c_str());
            std::fprintf(stderr, " (sent %zu)\n", w.sent.size());
        }
    }
    for (int d = 0; d < 2; ++d)
        if (w.port_gone[d]) ag.set_port(port_of(d));

    // The application goes; the peer says nothing more. Every retry runs out
    // within max_retries + 1 intervals of the longest timer.
    for (std::uint64_t ch : w.channels) ag.destroy_channel(ch);
    for (int i = 0; i < 64; ++i) {
        const std::uint64_t d = ag.next_deadline();
        if (d == 0) break;
        w.now = std::max(w.now, d);
        ag.on_timer();
    }
    if (ag.next_deadline() != 0) fail("a timer still runs after every ID was destroyed and every retry ran out");
    if (ag.id_count() != 0) fail("an ID outlived its channel");
    // Nothing holds a port: each can be listened on again (orphans resending
    // their DREQ hold theirs until done).
    for (std::uint16_t port : used_ports) {
        for (std::uint16_t ps : {cm::kPsTcp, cm::kPsUdp}) {
            for (bool v6 : {false, true}) {
                std::uint32_t h = 0;
                if (ag.create_id(99, ps, h) != 0) fail("create_id failed");
                cm::SockAddr a;
                a.port = port;
                a.v6 = v6;
                if (ag.bind(h, a) != 0) {
                    std::fprintf(stderr, "fuzz_cm: port %u of port space 0x%x (%s)\n", port, ps, v6 ? "IPv6" : "IPv4");
                    fail("a port stays in use after every ID was destroyed");
                }
                if (ag.listen(h) != 0) fail("cannot listen on a port after every ID was destroyed");
                ag.destroy_id(h);
            }
        }
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    World w;
    Reader in(data, size);
    run(w, in);
    return 0;
}
