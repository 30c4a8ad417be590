#include "cm_service.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <random>

#include "simnic/base/clock.h"
#include "simnic/control/cm_protocol.h"
#include "simnic/roce/neighbour.h"

namespace simnic::daemon {

// The daemon is the server side of the control protocol.
using namespace simnic::control;
namespace {

Json addr_json(const cm::SockAddr& a) {
    return Json{{"addr", to_hex(a.addr.data(), a.addr.size())}, {"port", a.port}, {"v6", a.v6}};
}

// An address object (the schema checked its fields: addr is 16 bytes).
bool addr_from(const Request& j, cm::SockAddr& a) {
    const std::vector<uint8_t> b = j.bytes("addr");
    if (b.size() != a.addr.size()) return false;
    std::copy(b.begin(), b.end(), a.addr.begin());
    a.port = static_cast<uint16_t>(j.uint("port"));
    a.v6 = j.flag("v6");
    return true;
}

Json param_json(const cm::ConnParam& p) {
    return Json{{"private_data", to_hex(p.private_data.data(), p.private_data.size())},
                {"responder_resources", p.responder_resources},
                {"initiator_depth", p.initiator_depth},
                {"flow_control", p.flow_control},
                {"retry_count", p.retry_count},
                {"rnr_retry_count", p.rnr_retry_count},
                {"srq", p.srq},
                {"qp_num", p.qp_num},
                {"qkey", p.qkey},
                {"ece_vendor_id", p.ece_vendor_id},
                {"ece_options", p.ece_options}};
}

cm::ConnParam param_from(const Request& j) {
    cm::ConnParam p;
    p.private_data = j.bytes("private_data");
    p.responder_resources = static_cast<uint8_t>(j.uint("responder_resources"));
    p.initiator_depth = static_cast<uint8_t>(j.uint("initiator_depth"));
    p.flow_control = static_cast<uint8_t>(j.uint("flow_control"));
    p.retry_count = static_cast<uint8_t>(j.uint("retry_count", 7));
    p.rnr_retry_count = static_cast<uint8_t>(j.uint("rnr_retry_count", 7));
    p.srq = j.flag("srq");
    p.qp_num = static_cast<uint32_t>(j.uint("qp_num"));
    p.ece_vendor_id = static_cast<uint32_t>(j.uint("ece_vendor_id"));
    p.ece_options = static_cast<uint32_t>(j.uint("ece_options"));
    return p;
}

Json qp_attr_json(const cm::QpAttr& a) {
    return Json{{"mask", a.mask},
                {"state", uint8_t(a.state)},
                {"access_flags", a.access_flags},
                {"pkey_index", a.pkey_index},
                {"port_num", a.port_num},
                {"path_mtu", a.path_mtu},
                {"dest_qpn", a.dest_qpn},
                {"rq_psn", a.rq_psn},
                {"sq_psn", a.sq_psn},
                {"qkey", a.qkey},
                {"max_dest_rd_atomic", a.max_dest_rd_atomic},
                {"max_rd_atomic", a.max_rd_atomic},
                {"min_rnr_timer", a.min_rnr_timer},
                {"timeout", a.timeout},
                {"retry_cnt", a.retry_cnt},
                {"rnr_retry", a.rnr_retry},
                {"dgid", to_hex(a.dgid.data(), a.dgid.size())},
                {"flow_label", a.flow_label},
                {"sgid_index", a.sgid_index},
                {"hop_limit", a.hop_limit},
                {"traffic_class", a.traffic_class},
                {"sl", a.sl}};
}

}  // namespace

CmService::CmService(size_t max_ids_per_channel) : max_ids_per_channel_(max_ids_per_channel) {
    agent_ = std::make_unique<cm::Agent>(*this);
    agent_->set_max_ids_per_channel(max_ids_per_channel_);
    // IPv6 IDs that never set AFONLY follow the host's sysctl, as rdma_cm
    // reads it from the ID's network namespace (the daemon's is the
    // applications').
    if (FILE* f = fopen("/proc/sys/net/ipv6/bindv6only", "re")) {
        int on = 0;
        if (fscanf(f, "%d", &on) == 1) agent_->set_bindv6only(on != 0);
        fclose(f);
    }
    rx_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    timer_fd_ = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
    std::random_device rd;
    rng_ = (uint64_t(rd()) << 32) | rd();
}

CmService::~CmService() {
    if (rx_fd_ >= 0) close(rx_fd_);
    if (timer_fd_ >= 0) close(timer_fd_);
}

DeviceRuntime::GsiHandler CmService::gsi_handler(const std::string& device) {
    // Engine thread: copy, queue, wake the daemon thread (the agent runs there).
    return [this, device](const uint8_t* mad, size_t len, const std::array<uint8_t, 16>& src,
                          const std::array<uint8_t, 16>& dst, uint8_t traffic_class) {
        {
            std::lock_guard<std::mutex> lk(in_mu_);
            in_.push_back(Incoming{device, src, dst, std::vector<uint8_t>(mad, mad + len), traffic_class});
        }
        const uint64_t one = 1;
        if (write(rx_fd_, &one, sizeof one) != sizeof one) {}  // already signalled
    };
}

void CmService::add_device(const std::string& name, DeviceRuntime* rt) {
    devices_[name] = rt;
    refresh_ports();
}

void CmService::remove_device(const std::string& name) {
    devices_.erase(name);
    agent_->remove_port(name);
}

// The GID tables follow the netdevs' addresses: read them afresh whenever
// the agent is about to use them.
void CmService::refresh_ports() {
    for (const auto& [name, rt] : devices_) {
        cm::Port p;
        p.device = name;
        const DeviceRuntime::GsiPort g = rt->gsi_port();
        p.node_guid = g.node_guid;
        p.active_mtu = g.active_mtu;
        for (const auto& [idx, gid] : rt->gids()) p.gids.emplace_back(idx, gid);
        agent_->set_port(p);
    }
}

void CmService::on_rx() {
    uint64_t v;
    while (read(rx_fd_, &v, sizeof v) == sizeof v) {}
    std::vector<Incoming> in;
    {
        std::lock_guard<std::mutex> lk(in_mu_);
        in.swap(in_);
    }
    if (!in.empty()) refresh_ports();
    for (const Incoming& m : in) agent_->on_mad(m.device, m.src, m.dst, m.mad.data(), m.mad.size(), m.traffic_class);
    arm_timer();
}

void CmService::on_timer() {
    uint64_t v;
    while (read(timer_fd_, &v, sizeof v) == sizeof v) {}
    agent_->on_timer();
    arm_timer();
}

void CmService::arm_timer() {
    itimerspec its{};
    if (const uint64_t d = agent_->next_deadline()) {
        its.it_value.tv_sec = time_t(d / 1000);
        its.it_value.tv_nsec = long(d % 1000) * 1000000L;
    }
    timerfd_settime(timer_fd_, TFD_TIMER_ABSTIME, &its, nullptr);
}

void CmService::send_mad(const std::string& device, const cm::Gid& sgid, const cm::Gid& dgid, uint8_t traffic_class,
                         const cm::Mad& mad) {
    auto it = devices_.find(device);
    if (it != devices_.end()) it->second->gsi_send(sgid, dgid, traffic_class, mad.data(), mad.size());
}

void CmService::deliver(uint64_t channel, const cm::Event& ev) {
    auto it = channels_.find(channel);
    if (it == channels_.end()) return;
    Json m{{"event", uint8_t(ev.type)}, {"id", ev.id},           {"listen_id", ev.listen_id},
           {"status", ev.status},       {"device", ev.device},   {"src", addr_json(ev.src)},
           {"dst", addr_json(ev.dst)},  {"param", param_json(ev.param)}};
    if (ev.ah) m["ah"] = qp_attr_json(*ev.ah);  // UD ESTABLISHED: rdma_ud_param.ah_attr
    if (holds_.count(channel)) {
        held_[channel].push_back(std::move(m));
        return;
    }
    // The channel's socket buffer holds hundreds of events; an application
    // that lets more pile up loses the excess, as a full ucma queue would block.
    send_message(it->second.fd, m);
}

void CmService::release(uint64_t channel) {
    auto h = holds_.find(channel);
    if (h == holds_.end() || --h->second > 0) return;
    holds_.erase(h);
    auto kept = held_.find(channel);
    if (kept == held_.end()) return;
    auto ch = channels_.find(channel);
    if (ch != channels_.end())
        for (const Json& m : kept->second) send_message(ch->second.fd, m);
    held_.erase(kept);
}

// A device on a wire reaches its segment's subnets, which the host's
// routing table knows nothing of: the source is that device's address in
// the destination's subnet (for a link-local destination, the link-local
// address of the first such device). A device's own address is reached
// from itself, as the kernel routes a local address (rxe then loops back).
std::optional<cm::Gid> CmService::wire_source(const cm::Gid& dst) const {
    for (const auto& [name, rt] : devices_)
        if (rt->device().wire.on())
            for (const auto& [idx, g] : rt->gids())
                if (g == dst) return dst;
    static constexpr uint8_t kMapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    const bool v4 = std::memcmp(dst.data(), kMapped, 12) == 0;
    auto same_prefix = [](const uint8_t* a, const uint8_t* b, unsigned bits) {
        for (unsigned i = 0; i < bits; ++i)
            if (((a[i / 8] ^ b[i / 8]) >> (7 - i % 8)) & 1) return false;
        return true;
    };
    for (const auto& [name, rt] : devices_) {
        const WireAttach& w = rt->device().wire;
        if (!w.on()) continue;
        if (v4) {
            const uint32_t d = uint32_t(dst[12]) << 24 | uint32_t(dst[13]) << 16 | uint32_t(dst[14]) << 8 | dst[15];
            const uint32_t mask = ~uint32_t(0) << (32 - w.prefix);
            if ((d & mask) == (w.ipv4 & mask)) return cm::ipv4_gid(w.ipv4);
            continue;
        }
        if (dst[0] == 0xfe && (dst[1] & 0xc0) == 0x80) {
            const roce::Ipv6Addr ll = roce::ipv6_link_local(w.mac);
            cm::Gid g{};
            std::copy(ll.begin(), ll.end(), g.begin());
            return g;
        }
        for (const auto& [a, len] : w.ipv6)
            if (same_prefix(a.data(), dst.data(), len)) return a;
    }
    return std::nullopt;
}

// A fabric's host address is reached through the fabric's switch from any
// other host of the fabric (the switch sends no frame back out of the port
// it came in by, so not from the host itself): the source is the first of
// those hosts' devices by name, as a routing table picks the first of
// several interfaces on one subnet. An application that wants another
// binds it (rping -I, perftest's --source_ip).
std::optional<cm::Gid> CmService::fabric_source(const cm::Gid& dst) const {
    const FabricAttach* to = nullptr;
    for (const auto& [name, rt] : devices_)
        if (const FabricAttach& f = rt->device().fabric; f.on() && cm::ipv4_gid(f.ipv4) == dst) to = &f;
    if (!to) return std::nullopt;
    for (const auto& [name, rt] : devices_)
        if (const FabricAttach& f = rt->device().fabric; f.fabric == to->fabric && f.ipv4 != to->ipv4)
            return cm::ipv4_gid(f.ipv4);
    return std::nullopt;
}

std::optional<cm::Gid> CmService::route_source(const cm::Gid& dst) {
    if (std::optional<cm::Gid> g = wire_source(dst)) return g;
    if (std::optional<cm::Gid> g = fabric_source(dst)) return g;
    static constexpr uint8_t kMapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    const bool v4 = std::memcmp(dst.data(), kMapped, 12) == 0;
    // A connected UDP socket learns the source address the routing table
    // picks, without sending anything.
    int fd = socket(v4 ? AF_INET : AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return std::nullopt;
    std::optional<cm::Gid> out;
    if (v4) {
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_port = htons(4791);
        std::memcpy(&a.sin_addr, dst.data() + 12, 4);
        sockaddr_in l{};
        socklen_t len = sizeof l;
        if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
            getsockname(fd, reinterpret_cast<sockaddr*>(&l), &len) == 0)
            out = cm::ipv4_gid(ntohl(l.sin_addr.s_addr));
    } else {
        sockaddr_in6 a{};
        a.sin6_family = AF_INET6;
        a.sin6_port = htons(4791);
        std::memcpy(&a.sin6_addr, dst.data(), 16);
        sockaddr_in6 l{};
        socklen_t len = sizeof l;
        if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
            getsockname(fd, reinterpret_cast<sockaddr*>(&l), &len) == 0) {
            cm::Gid g{};
            std::memcpy(g.data(), &l.sin6_addr, 16);
            out = g;
        }
    }
    close(fd);
    return out;
}

bool CmService::neighbour_ready(const std::string& device, const cm::Gid& dgid) {
    auto it = devices_.find(device);
    return it == devices_.end() || it->second->neighbour_ready(dgid);
}

uint64_t CmService::now_ms() { return base::mono_ns() / 1000000; }

uint32_t CmService::random32() {
    // xorshift64*: IDs and PSNs need to differ between runs, not to be secret.
    rng_ ^= rng_ >> 12;
    rng_ ^= rng_ << 25;
    rng_ ^= rng_ >> 27;
    return uint32_t((rng_ * 0x2545F4914F6CDD1Dull) >> 32);
}

void CmService::drop(int fd) {
    for (auto it = channels_.begin(); it != channels_.end(); ++it) {
        if (it->second.fd != fd) continue;
        holds_.erase(it->first);
        held_.erase(it->first);
        agent_->destroy_channel(it->first);
        channels_.erase(it);
        arm_timer();
        return;
    }
}

Json CmService::cm_id_list(const std::string& device) const {
    // An address as the kernel's sockaddr prints: IPv4 for an IPv4 ID.
    auto text = [](const cm::SockAddr& a) {
        char buf[INET6_ADDRSTRLEN] = {};
        if (!a.v6) inet_ntop(AF_INET, a.addr.data() + 12, buf, sizeof buf);
        else inet_ntop(AF_INET6, a.addr.data(), buf, sizeof buf);
        return std::string(buf);
    };
    Json out = Json::array();
    for (const cm::Agent::IdInfo& i : agent_->list(device)) {
        auto ch = channels_.find(i.channel);
        Json o{{"cm-idn", i.id},
               {"state", i.state},
               {"ps", i.ps},
               {"pid", ch == channels_.end() ? 0 : ch->second.pid},
               {"src-addr", text(i.src)},
               {"src-port", i.src.port},
               {"dst-addr", text(i.dst)},
               {"dst-port", i.dst.port}};
        if (i.qpn) o["lqpn"] = i.qpn;
        out.push_back(o);
    }
    return out;
}

Json CmService::id_reply(uint32_t id) {
    Json r = reply_ok();
    std::string dev;
    cm::SockAddr s, d;
    if (agent_->query(id, dev, s, d) == 0) {
        r["device"] = dev;
        r["src"] = addr_json(s);
        r["dst"] = addr_json(d);
    }
    return r;
}

Json CmService::handle(int fd, const Request& req) {
    const std::string op(req.op());
    ucred cred{};
    socklen_t clen = sizeof cred;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen) != 0)
        return reply_error(errno, std::string("SO_PEERCRED: ") + std::strerror(errno));
    if (op == "cm_channel") {
        for (const auto& [c, ch] : channels_)
            if (ch.fd == fd) return reply_error(EBUSY, "this connection already is an event channel");
        const uint64_t c = next_channel_++;
        channels_[c] = Channel{fd, cred.pid};
        Json r = reply_ok();
        r["channel"] = c;
        return r;
    }
    refresh_ports();
    auto own = [&](uint64_t c) {
        auto it = channels_.find(c);
        return it != channels_.end() && it->second.pid == cred.pid;
    };
    if (op == "cm_create_id") {
        const uint64_t c = req.uint("channel");
        if (!own(c)) return reply_error(EINVAL, "cm_create_id: no event channel " + std::to_string(c) + " of this process");
        // An event channel's IDs live until it closes: bound them.
        if (agent_->id_count(c) >= max_ids_per_channel_)
            return reply_error(ENOMEM, "cm_create_id: the event channel already has " +
                                           std::to_string(max_ids_per_channel_) + " IDs (the most one may)");
        uint32_t id = 0;
        if (int e = agent_->create_id(c, static_cast<uint16_t>(req.uint("ps")), id))
            return reply_error(e, "cm_create_id: " + std::string(std::strerror(e)));
        Json r = reply_ok();
        r["id"] = id;
        return r;
    }
    if (op == "cm_requeue") {
        const uint64_t c = req.uint("channel");
        if (!own(c)) return reply_error(EINVAL, "cm_requeue: no event channel " + std::to_string(c) + " of this process");
        const std::string& text = req.str("message");
        Json m;
        if (!parse_message(text, m).empty() || !m.is_object())
            return reply_error(EINVAL, "cm_requeue: the message is not a JSON object");
        send_raw(channels_[c].fd, text);
        return reply_ok();
    }
    if (op == "cm_release") {
        const uint64_t from = req.uint("from"), to = req.uint("to");
        if (!own(from) || !own(to)) return reply_error(EINVAL, "cm_release: not event channels of this process");
        if (!holds_.count(from) || !holds_.count(to)) return reply_error(EINVAL, "cm_release: nothing is held");
        release(from);
        release(to);
        return reply_ok();
    }
    const uint32_t id = static_cast<uint32_t>(req.uint("id"));
    if (!own(agent_->channel_of(id))) return reply_error(EINVAL, op + ": no CM ID " + std::to_string(id) + " of this process");
    int e = 0;
    Json extra;
    if (op == "cm_bind") {
        cm::SockAddr a;
        if (!addr_from(req.object("addr"), a)) return reply_error(EINVAL, "cm_bind: bad address");
        e = agent_->bind(id, a);
    } else if (op == "cm_resolve_addr") {
        cm::SockAddr d, s;
        if (!addr_from(req.object("dst"), d)) return reply_error(EINVAL, "cm_resolve_addr: bad address");
        std::optional<cm::SockAddr> src;
        if (req.has("src")) {
            if (!addr_from(req.object("src"), s)) return reply_error(EINVAL, "cm_resolve_addr: bad source address");
            src = s;
        }
        e = agent_->resolve_addr(id, src, d, uint32_t(req.uint("timeout_ms", cm::kAddrTimeoutMs)));
    } else if (op == "cm_resolve_route") {
        e = agent_->resolve_route(id);
    } else if (op == "cm_join") {
        cm::SockAddr g;
        if (!addr_from(req.object("addr"), g)) return reply_error(EINVAL, "cm_join: bad address");
        e = agent_->join_multicast(id, g);
    } else if (op == "cm_set_option") {
        const auto v = static_cast<uint8_t>(req.uint("value"));
        switch (req.uint("option")) {  // RDMA_OPTION_ID_*; the schema allows 0..3
            case 0: e = agent_->set_tos(id, v); break;
            case 1: e = agent_->set_reuseaddr(id, v != 0); break;
            case 2: e = agent_->set_afonly(id, v != 0); break;
            default: e = agent_->set_ack_timeout(id, v); break;
        }
    } else if (op == "cm_set_ib_path") {
        cm::PathRecord path;
        const std::vector<uint8_t> dgid = req.bytes("dgid"), sgid = req.bytes("sgid");
        std::copy(dgid.begin(), dgid.end(), path.dgid.begin());  // 16 bytes: the schema checked
        std::copy(sgid.begin(), sgid.end(), path.sgid.begin());
        path.flow_label = uint32_t(req.uint("flow_label"));
        path.hop_limit = uint8_t(req.uint("hop_limit"));
        path.traffic_class = uint8_t(req.uint("tclass"));
        path.mtu = uint8_t(req.uint("mtu"));
        path.packet_life_time = uint8_t(req.uint("packet_life_time"));
        e = agent_->set_ib_path(id, path);
    } else if (op == "cm_listen") {
        e = agent_->listen(id);
    } else if (op == "cm_connect" || op == "cm_accept") {
        const cm::ConnParam p = param_from(req.object("param"));
        e = op == "cm_connect" ? agent_->connect(id, p) : agent_->accept(id, p);
    } else if (op == "cm_reject") {
        e = agent_->reject(id, req.bytes("private_data"), static_cast<uint8_t>(req.uint("reason")));
    } else if (op == "cm_establish") {
        e = agent_->establish(id);
    } else if (op == "cm_notify") {
        e = agent_->notify(id, static_cast<uint32_t>(req.uint("event")));
    } else if (op == "cm_disconnect") {
        e = agent_->disconnect(id);
    } else if (op == "cm_destroy_id") {
        e = agent_->destroy_id(id);
        arm_timer();
        return e ? reply_error(e, "cm_destroy_id: " + std::string(std::strerror(e))) : reply_ok();
    } else if (op == "cm_migrate") {
        // rdma_migrate_id: to another event channel of the same process.
        const uint64_t c = req.uint("channel");
        if (!own(c)) return reply_error(EINVAL, "cm_migrate: no event channel " + std::to_string(c) + " of this process");
        if (agent_->id_count(c) >= max_ids_per_channel_)
            return reply_error(ENOMEM, "cm_migrate: the event channel already has " +
                                           std::to_string(max_ids_per_channel_) + " IDs (the most one may)");
        const uint64_t from = agent_->channel_of(id);
        e = agent_->migrate(id, c);
        if (e) return reply_error(e, op + ": " + std::strerror(e));
        Json r = id_reply(id);
        if (req.flag("hold") && from != c) {
            ++holds_[from];
            ++holds_[c];
            r["held_from"] = from;  // what the process hands cm_release
        }
        arm_timer();
        return r;
    } else if (op == "cm_init_qp_attr") {
        cm::QpAttr a;
        e = agent_->init_qp_attr(id, hw::QpState(req.uint("state")), a);
        if (!e) extra = qp_attr_json(a);
    } else if (op == "cm_req_defaults") {
        uint8_t rr = 0, idp = 0;
        e = agent_->req_defaults(id, rr, idp);
        extra = Json{{"responder_resources", rr}, {"initiator_depth", idp}};
    } else if (op != "cm_query") {
        return reply_error(EOPNOTSUPP, "no handler for '" + op + "'");
    }
    arm_timer();
    if (e) return reply_error(e, op + ": " + std::strerror(e));
    Json r = id_reply(id);
    if (!extra.is_null()) r["attr"] = extra;
    return r;
}

}  // namespace simnic::daemon
