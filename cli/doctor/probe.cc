// The UDP 4791 probe: does a RoCE v2 datagram sent through the kernel reach
// the device? The tutorial's chain for a hanging rping or perftest (6.4)
// ends at a firewall that drops UDP 4791; it finds it by adding an ACCEPT
// rule as root. The probe finds it without root: it sends through the same
// path as the device's own frames (a UDP socket on the netdev's address, the
// kernel's routing, netfilter's OUTPUT and INPUT hooks) and asks the device
// whether anything arrived.
//
// What it sends is a well-formed packet (valid ICRC, DF and IP ID 0, as a
// socket of the device would send it) for a QPN the device never hands out,
// so the device counts it (rx_packets, rx_drops_no_qp) and does nothing else.
//
// With a peer (--peer ADDR, another host's RoCE address), it sends instead a
// CM DisconnectRequest for a connection nobody has, to the peer's QP1: its
// CM answers it with a DisconnectReply, as ib_cm's cm_issue_drep does for
// kernel rxe and simnic's agent does too, and the reply comes back to this
// device's address and port 4791, where the device counts it. That crosses
// the netdev both ways, and the firewalls of both hosts.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

#include "doctor.h"
#include "simnic/cm/mad.h"
#include "simnic/roce/opcode.h"
#include "simnic/roce/packet.h"

namespace simnic::cli::doctor {
namespace {

// The top of the 24-bit QPN space: devices hand out QPNs from the bottom.
constexpr uint32_t kProbeQpn = 0xFFFFFE;
constexpr int kProbes = 3;

std::string dotted(unsigned ip) {
    in_addr a{};
    a.s_addr = htonl(ip);
    char b[INET_ADDRSTRLEN] = {};
    inet_ntop(AF_INET, &a, b, sizeof b);
    return b;
}

// What the device counted of arrivals: every datagram on 4791 lands in one
// of these, whether it decodes or not.
bool arrivals(const std::string& device, uint64_t& n, std::string& err) {
    control::Json reply;
    if (!ask(control::Json{{"op", "stats"}, {"device", device}}, reply, err)) return false;
    n = 0;
    for (const char* k : {"rx_packets", "rx_drops_bad_hdr", "icrc_errors"})
        if (reply["stats"].contains(k)) n += reply["stats"][k].get<uint64_t>();
    return true;
}

}  // namespace

void probe_udp4791(const std::string& device, unsigned ipv4, unsigned peer, int timeout_ms, Check& c) {
    const unsigned to = peer ? peer : ipv4;
    const std::string where = dotted(to) + ":4791";
    uint64_t before = 0;
    std::string err;
    if (!arrivals(device, before, err)) {
        c.status = Status::Skip;
        c.what = "cannot read the device's counters: " + err;
        return;
    }
    const int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        c.status = Status::Skip;
        c.what = std::string("socket: ") + std::strerror(errno);
        return;
    }
    // DF on an unconnected socket: the kernel writes IP ID 0, which is what
    // the device puts back when it rebuilds the IP header the ICRC covers.
    const int pmtu = IP_PMTUDISC_DO;
    setsockopt(fd, IPPROTO_IP, IP_MTU_DISCOVER, &pmtu, sizeof pmtu);
    sockaddr_in src{};
    src.sin_family = AF_INET;
    src.sin_addr.s_addr = htonl(ipv4);
    socklen_t slen = sizeof src;
    if (bind(fd, reinterpret_cast<sockaddr*>(&src), sizeof src) != 0 ||
        getsockname(fd, reinterpret_cast<sockaddr*>(&src), &slen) != 0) {
        c.status = Status::Fail;
        c.what = "cannot bind a UDP socket to " + dotted(ipv4) + ": " + std::strerror(errno);
        c.fix = "the netdev's address went away: ip addr show, then simnic link delete/add the device";
        close(fd);
        return;
    }
    roce::Packet p;
    p.ip4.src = ipv4;
    p.ip4.dst = to;
    p.udp.sport = ntohs(src.sin_port);
    cm::Mad mad{};
    if (peer) {
        // A DREQ from QP1 to QP1 with the GSI's Q_Key, as ib_cm sends it,
        // for local and remote communication IDs no connection has.
        cm::MadHdr h;
        h.attr_id = static_cast<uint16_t>(cm::AttrId::DisconnectRequest);
        h.tid = 0x51AD0C7000000000ull | ipv4;
        cm::Dreq d;
        d.local_comm_id = 0x51AD0C70;
        d.remote_comm_id = 0x51AD0C71;
        mad = cm::encode(h, d);
        p.hdr.bth.opcode = roce::op::UD_SEND_ONLY;
        p.hdr.bth.dqpn = cm::kGsiQpn;
        p.hdr.deth.qkey = cm::kGsiQkey;
        p.hdr.deth.src_qp = cm::kGsiQpn;
        p.payload = mad.data();
        p.payload_len = mad.size();
    } else {
        p.hdr.bth.opcode = roce::op::RC_SEND_ONLY;
        p.hdr.bth.dqpn = kProbeQpn;
    }
    std::vector<uint8_t> frame;
    roce::encode_frame(p, frame);
    sockaddr_in dst{};
    dst.sin_family = AF_INET;
    dst.sin_port = htons(roce::kRoceV2Port);
    dst.sin_addr.s_addr = htonl(to);
    int send_errno = 0;
    for (int i = 0; i < kProbes; ++i)
        if (sendto(fd, frame.data() + p.bth_off, frame.size() - p.bth_off, 0, reinterpret_cast<sockaddr*>(&dst),
                   sizeof dst) < 0)
            send_errno = errno;
    close(fd);
    if (send_errno != 0) {
        // The kernel refused at once: a REJECT or DROP in OUTPUT gives EPERM,
        // a prohibit or blackhole route EACCES or EINVAL, unreachable
        // EHOSTUNREACH.
        c.status = Status::Fail;
        c.what = "the kernel refuses to send UDP to " + where + ": " + std::strerror(send_errno) +
                 (send_errno == EPERM ? " (a firewall rule in OUTPUT)" : " (a route or rule in the way)");
        c.fix = "allow UDP 4791: iptables -I OUTPUT -p udp --dport 4791 -j ACCEPT; check ip rule and ip route "
                "get " + dotted(to);
        return;
    }
    // The first arrival answers the question, but the probe waits on for the
    // rest of its datagrams (or answers), up to kStragglerMs more: one
    // counted after it returned would pass for an answer to the next probe,
    // this doctor's peer probe or the next doctor's (a peer behind a
    // firewall then looked reachable, in about 1 run in 20).
    constexpr int kStragglerMs = 250;
    auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    uint64_t after = before;
    bool answered = false;
    for (;;) {
        if (!arrivals(device, after, err)) {
            c.status = Status::Skip;
            c.what = "cannot read the device's counters: " + err;
            return;
        }
        const auto now = std::chrono::steady_clock::now();
        if (after > before && !answered) {
            answered = true;
            deadline = std::min(deadline, now + std::chrono::milliseconds(kStragglerMs));
        }
        if (after >= before + kProbes || now >= deadline) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(answered ? 2 : 20));
    }
    if (after > before && peer) {
        c.status = Status::Ok;
        c.what = "the peer " + dotted(peer) + " answers a CM request sent from " + dotted(ipv4) + " to " + where +
                 ", and its answer reaches " + device + ": UDP 4791 passes both ways";
        return;
    }
    if (after > before) {
        c.status = Status::Ok;
        c.what = "a RoCE v2 datagram sent through the kernel to " + where + " reaches " + device;
        return;
    }
    c.status = Status::Fail;
    if (peer) {
        c.what = std::to_string(kProbes) + " CM requests sent from " + dotted(ipv4) + " to " + where +
                 " got no answer back to " + device + ": the peer has no RoCE device (rxe or simnic) on " +
                 dotted(peer) + ", or something drops UDP 4791 on the way there or back (a firewall on either "
                 "host); rping and perftest would hang";
        c.fix = "on the peer: rdma link show (or simnic link show), and allow UDP 4791 on both hosts: iptables -I "
                "INPUT -p udp --dport 4791 -j ACCEPT; ping " + dotted(peer) + " checks the route";
        return;
    }
    c.what = std::to_string(kProbes) + " RoCE v2 datagrams sent to " + where + " never reached " + device +
             ": something drops UDP 4791 (a firewall rule in INPUT, a blackhole route or policy rule); rping and "
             "perftest hang until their timeouts";
    c.fix = "allow UDP 4791: iptables -I INPUT -p udp --dport 4791 -j ACCEPT, or firewall-cmd --add-port=4791/udp, "
            "or nft insert rule inet filter input udp dport 4791 accept; ip rule and ip route get " +
            dotted(ipv4) + " show routing";
}

}  // namespace simnic::cli::doctor
