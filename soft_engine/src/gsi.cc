// QP1, the GSI: it belongs to the host's connection manager (the
// daemon's cm::Agent), not to an application. MADs that arrive for it go to
// EngineConfig::gsi_rx; MADs the CM sends leave as rxe sends them, built
// here with the packet core and put straight on the wire, or, on a fabric's
// device, into its TX pipeline (TimingModel::tx_frame).
#include <algorithm>

#include "engine_internal.h"
#include "simnic/roce/opcode.h"

namespace simnic::soft_engine {

void SoftEngine::Impl::gsi_receive(const roce::Packet& pkt) {
    if (pkt.hdr.bth.opcode != roce::op::UD_SEND_ONLY || pkt.hdr.deth.qkey != kGsiQkey || !cfg.gsi_rx) {
        stat(hw::stats_block::rx_drops_no_qp);
        return;
    }
    std::array<uint8_t, 16> src{}, dst{};
    const bool v4 = pkt.ip_version == roce::IpVersion::V4;
    if (v4) {
        src[10] = src[11] = dst[10] = dst[11] = 0xff;
        for (int i = 0; i < 4; ++i) {
            src[size_t(12 + i)] = uint8_t(pkt.ip4.src >> (24 - 8 * i));
            dst[size_t(12 + i)] = uint8_t(pkt.ip4.dst >> (24 - 8 * i));
        }
    } else {
        std::copy(pkt.ip6.src.begin(), pkt.ip6.src.end(), src.begin());
        std::copy(pkt.ip6.dst.begin(), pkt.ip6.dst.end(), dst.begin());
    }
    cfg.gsi_rx(pkt.payload, pkt.payload_len, src, dst, v4 ? pkt.ip4.tos : pkt.ip6.traffic_class);
}

bool SoftEngine::Impl::gsi_send(const std::array<uint8_t, 16>& sgid, const std::array<uint8_t, 16>& dgid,
                                const std::array<uint8_t, 6>& dmac, const uint8_t* mad, size_t len,
                                uint8_t traffic_class) {
    static constexpr uint8_t kMapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    const bool v4 = std::equal(kMapped, kMapped + 12, sgid.begin());
    if (v4 != std::equal(kMapped, kMapped + 12, dgid.begin())) return false;
    std::lock_guard<std::recursive_mutex> lk(mu);
    roce::Packet p;
    // The port's MAC as the firmware has it now (BAR0's port block, written
    // after the engine was built): a fabric's switch sees the host's own.
    std::copy(port_mac, port_mac + 6, p.eth.src.begin());
    if (cfg.bar)
        hw::get_bytes(cfg.bar + hw::kBar0PortBlock, hw::port_block::kSize, hw::port_block::mac, p.eth.src.data(), 6);
    std::copy(dmac.begin(), dmac.end(), p.eth.dst.begin());
    if (v4) {
        p.ip_version = roce::IpVersion::V4;
        p.eth.ethertype = roce::kEtherTypeIpv4;
        auto ip = [](const std::array<uint8_t, 16>& g) {
            return uint32_t(g[12]) << 24 | uint32_t(g[13]) << 16 | uint32_t(g[14]) << 8 | g[15];
        };
        p.ip4.src = ip(sgid);
        p.ip4.dst = ip(dgid);
        p.ip4.tos = traffic_class;  // the connection's, as rxe takes it from the GSI send's AV (rxe_prepare4/6)
    } else {
        p.ip_version = roce::IpVersion::V6;
        p.eth.ethertype = roce::kEtherTypeIpv6;
        std::copy(sgid.begin(), sgid.end(), p.ip6.src.begin());
        std::copy(dgid.begin(), dgid.end(), p.ip6.dst.begin());
        p.ip6.traffic_class = traffic_class;
    }
    port->prepare(p);  // the IP fields the port's path writes, as for every packet
    // QP1 never gets an address vector: rxe keeps its creation-time port.
    p.udp.sport = roce::roce_udp_sport_unconnected(kGsiQpn);
    p.hdr.bth.opcode = roce::op::UD_SEND_ONLY;
    p.hdr.bth.pkey = 0xffff;
    p.hdr.bth.dqpn = kGsiQpn;
    p.hdr.bth.ack_req = true;
    p.hdr.bth.psn = gsi_psn;
    p.hdr.deth.qkey = kGsiQkey;
    p.hdr.deth.src_qp = kGsiQpn;
    p.payload = mad;
    p.payload_len = len;
    if (!roce::encode_frame(p, gsi_buf)) {
        stat(hw::stats_block::tx_drops);
        return false;
    }
    gsi_psn = roce::psn_add(gsi_psn, 1);
    // A fabric's device has no port: the MAD enters its TX pipeline and
    // crosses the fabric in simulated time like any frame, simulated by the
    // engine's next pass (woken below).
    if (pipe && pipe->tx_frame(gsi_buf.data(), p.frame_len)) {
        gsi_pending = true;
        wake();
        return true;
    }
    // Any other device: straight to its port (on a model device too: QP1 is
    // the host's, and its few MADs are not worth a place in the modelled TX
    // timing).
    send_frame(gsi_buf.data(), p.frame_len);
    tx_flush();
    wake();  // a loopback frame waits in loop_q
    return true;
}

}  // namespace simnic::soft_engine
