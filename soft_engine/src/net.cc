// The engine's side of the wire, above its port (port.h), as rxe_net.c's
// send and receive paths and rxe_recv.c hold it. A packet the transport core
// built is prepared for the port's path and encoded; on a model device its
// frame goes down the modelled TX pipeline and reaches the port through
// wire_tx() when it leaves MAC TX, on a soft device it goes to the port at
// once. Frames to the device's own addresses may skip the port (the loopback
// shortcut, EngineConfig::loopback). Whatever arrives, through whichever
// port, is captured, decoded, counted and handed to its QP (or to QP1) here.
#include <algorithm>
#include <cstring>

#include "engine_internal.h"
#include "simnic/roce/opcode.h"

namespace simnic::soft_engine {

namespace {

// Checks a frame built for the wire and locates its IP packet; false if it
// is not an IPv4 (without options) or IPv6 packet with room for UDP.
bool out_frame(const uint8_t* f, size_t len, OutFrame& o) {
    constexpr size_t l3 = roce::kEthHdrBytes;
    if (len < l3 + roce::kIpv4HdrBytes + roce::kUdpHdrBytes) return false;
    o.data = f;
    o.len = len;
    o.v6 = (f[l3] >> 4) == 6;
    if (!o.v6 && ((f[l3] >> 4) != 4 || (f[l3] & 0xF) != 5)) return false;
    if (len < o.bth()) return false;
    // Without Ethernet padding: the IP length says where the packet ends.
    o.ip_end = o.v6 ? l3 + roce::kIpv6HdrBytes + size_t(f[l3 + 4] << 8 | f[l3 + 5])
                    : l3 + size_t(f[l3 + 2] << 8 | f[l3 + 3]);
    return true;
}

// The destination address of a frame out_frame() accepted.
IpAddr destination(const OutFrame& o) {
    IpAddr a;
    const uint8_t* ip = o.ip();
    if (o.v6) {
        a.version = roce::IpVersion::V6;
        std::memcpy(a.v6.data(), ip + 24, 16);
    } else {
        a.v4 = uint32_t(ip[16]) << 24 | uint32_t(ip[17]) << 16 | uint32_t(ip[18]) << 8 | ip[19];
    }
    return a;
}

}  // namespace

void SoftEngine::Impl::transmit(EngineQp& q, roce::Packet& pkt, const tp::SegWqe* wqe, const tp::SegPacket* seg) {
    if (ctx_gone(q.ctx)) return;  // its process has exited: rxe's QP would be gone
    const roce::OpcodeInfo& info = pkt.opinfo();
    port->prepare(pkt);  // the IP fields the port's path writes, before the ICRC covers them
    roce::EncodeOptions eo;
    if (loop_unseen(pkt)) {
        // Through the loopback shortcut and captured by nobody, this frame
        // is seen by no one but this engine's receive path, which trusts it
        // (rx_deliver): its ICRC and IPv4 header checksum would be computed
        // only to be skipped. They carry zero there; a frame anyone can see
        // still gets both. (The CRC was 7% of the engine's time in
        // ib_write_bw -s 65536 with the shortcut, the checksum 1%.)
        eo.fill_icrc = false;
        eo.fill_ip_checksum = false;
        pkt.icrc = 0;
        pkt.ip4.checksum = 0;
    }
    if (!roce::encode_frame(pkt, txbuf, eo)) {
        stat(hw::stats_block::tx_drops);
        return;
    }
    if (rec) {
        // A model device: the frame goes down the TX pipeline and leaves
        // through wire_tx() when it leaves MAC TX.
        TxFrameRec f;
        f.bytes.assign(txbuf.begin(), txbuf.begin() + long(pkt.frame_len));
        f.qpn = q.qpn;
        f.psn = pkt.hdr.bth.psn;
        f.opcode = pkt.hdr.bth.opcode;
        f.payload = uint32_t(pkt.payload_len);
        if (wqe && seg) {
            f.has_seg = true;
            f.seg_wqe = *wqe;
            f.seg = *seg;
        }
        rec->add(Op::Kind::TxFrame, q.qpn, uint32_t(pkt.frame_len), uint32_t(rec->frames.size()));
        rec->frames.push_back(std::move(f));
    } else {
        send_frame(txbuf.data(), pkt.frame_len);
    }
    if (info.has(roce::kRequest) && !q.is_ud()) {
        const uint32_t psn = pkt.hdr.bth.psn;
        if (roce::psn_before(psn, q.hi_psn)) stat(hw::stats_block::retransmits);
        else q.hi_psn = roce::psn_add(psn, 1);
    } else if (info.has(roce::kHasAeth)) {
        const uint8_t syn = pkt.hdr.aeth.syndrome;
        const roce::AethType t = roce::aeth_type(syn);
        if (t == roce::AethType::RnrNak) stat(hw::stats_block::tx_rnr_nak);
        else if (t == roce::AethType::Nak) {
            const hw::Field f[] = {hw::stats_block::tx_nak_psn_seq, hw::stats_block::tx_nak_inv_req,
                                   hw::stats_block::tx_nak_rem_access, hw::stats_block::tx_nak_rem_op};
            if ((syn & 0x1F) < 4) stat(f[syn & 0x1F]);
        }
    }
}

// Whether a packet transmit() encodes will take the loopback shortcut to
// this device's own receive path with no capture to see it: a soft device's
// (a model device's frame goes down its TX pipeline, whose blocks check the
// ICRC), the shortcut on, no device capture (it is opened with the engine
// and kept for its life; tcpdump on the netdev never sees the shortcut's
// frames), and addressed to the port. send_frame() decides the same way from
// the encoded frame.
bool SoftEngine::Impl::loop_unseen(const roce::Packet& pkt) const {
    if (!cfg.loopback || pcap || pipe || rec || cfg.standalone) return false;
    IpAddr a;
    if (pkt.ip_version == roce::IpVersion::V6) {
        a.version = roce::IpVersion::V6;
        a.v6 = pkt.ip6.dst;
    } else {
        a.v4 = pkt.ip4.dst;
    }
    return port->is_local(a);
}

// A frame leaves: through the loopback shortcut, or through the port.
void SoftEngine::Impl::send_frame(const uint8_t* f, size_t len, bool posted_writes_first) {
    // Posted payload writes go out before any frame: an ACK tells the peer
    // that what it acknowledges is in memory, and the peer's application
    // may look at once (rxe writes before it acknowledges). Held back to
    // the batch's end, a WRITE's last bytes landed after its requester had
    // completed it (found by simnic-workload: a model requester, a soft
    // responder, 2 of 1000 seeds). A frame that only joins the port's queue
    // may leave them for tx_flush, which writes them before the queue goes.
    if (posted_writes_first && wc.active) wc_flush();
    OutFrame o;
    if (!out_frame(f, len, o)) {
        stat(hw::stats_block::tx_drops);
        return;
    }
    if (!posted_writes_first) {
        ++tx_unflushed;
        const size_t bth = o.bth();
        if (!(bth < len && roce::opcode_info(f[bth]).has(roce::kRequest))) tx_owes_writes = true;
    }
    if (cfg.standalone) return;  // no wire: the timing model loops MAC TX to MAC RX
    if (cfg.loopback && port->is_local(destination(o))) {
        // rxe's shortcut: the frame never reaches the port. It is counted
        // and captured as sent, then received from the queue by rx_batch()
        // (not here: the sender's state machine is still running).
        const size_t end = std::min(len, o.ip_end);
        stat(hw::stats_block::tx_packets);
        stat(hw::stats_block::tx_bytes, end - o.bth());
        if (pcap) pcap->write(f, len, wall_us());
        if (pipe) {
            pipe->rx_frame(f, len);
            return;
        }
        LoopFrame lf;
        if (!loop_spare.empty()) {
            lf.buf = std::move(loop_spare.back());
            loop_spare.pop_back();
        }
        lf.off = roce::kEthHdrBytes;
        lf.len = end - roce::kEthHdrBytes;
        if (f == txbuf.data()) {
            // transmit()'s own buffer changes hands instead of being copied
            // (a 4 KiB copy per packet was a quarter of the memory traffic
            // of ib_write_bw with the shortcut); the next frame is encoded
            // into the spare, whose size is usually that frame's already.
            std::swap(lf.buf, txbuf);
        } else {
            lf.buf.assign(f, f + end);
        }
        loop_q.push_back(std::move(lf));
        return;
    }
    // The port's queue leaves at the end of the step, or, holding only ACKs
    // that may wait for their flow's reply, later (ack_hold.h).
    if (ack_hold.hold_ns()) {
        AckHold::Flow flow;
        const AckHold::Kind kind = AckHold::classify(o, flow);
        ack_hold.queued(kind, flow, kind == AckHold::Kind::Other ? 0 : hold_now());
    }
    // The port counts what it sends and drops (PortSent); the capture has
    // what it took, or, from a port that writes the link header itself,
    // what it put on the wire (PortSent again). transmit()'s own buffer may
    // change hands (OutFrame::owner): f stays valid, in the port's queue.
    if (f == txbuf.data()) o.owner = &txbuf;
    if (port->send(o) && pcap && !port->captures_sent()) pcap->write(f, len, wall_us());
}

bool SoftEngine::Impl::rx_batch() {
    bool any = false;
    // Loopback frames first: they are this device's own traffic. Bounded, so
    // that doorbells and the port are not starved by a long exchange.
    for (int k = 0; k < 256 && !loop_q.empty(); ++k) {
        LoopFrame lf = std::move(loop_q.front());
        loop_q.pop_front();
        // The responder's payload writes may stay in the frame until the
        // combined write goes (host_memory.cc, wc_add): its buffer is then
        // kept with them, not reused.
        lend_begin = lf.buf.data();
        lend_end = lend_begin + lf.buf.size();
        lent_gen = kNotLent;
        rx_deliver(lf.buf.data() + lf.off, lf.len, RxTrust::Built);
        lend_begin = lend_end = nullptr;
        if (wc.active && lent_gen == wc.gen)
            wc.pinned.push_back(std::move(lf.buf));
        else
            loop_spare.push_back(std::move(lf.buf));
        any = true;
    }
    // With the shortcut, a device on lo mostly talks to itself: while the
    // port stays quiet, look at it every fourth pass only (a recvmsg that
    // finds nothing is a tenth of a spinning pass). Sleep still waits on it.
    if (cfg.loopback && port_quiet > 16 && (++port_skip & 3) != 0) return any;
    rx_doorbells_taken = rx_doorbells_found = false;
    const bool got = port->receive(*this);
    if (const uint64_t d = port->rx_overflow_drops(); d != rx_overflow_published) {
        stat(hw::rx_stats_block::rx_overflow_drops, d - rx_overflow_published, hw::kBar0RxStatsBlock);
        rx_overflow_published = d;
    }
    if (!rx_held.empty()) {
        // A model device: the doorbells first, then the frames into MAC RX
        // (held until the port was done: simulating may send on it).
        if (rx_doorbells_found) pipe->run_unless_lagging([this] { return rx_lags(); });
        for (auto& f : rx_held) pipe->rx_frame(std::move(f));
        rx_held.clear();
    }
    port_quiet = got ? 0 : port_quiet + 1;
    return any || got;
}

// ---- PortSink: what the port received ----

// Before the first frame a pass takes from the port is handled, the
// doorbells rung until it was read go first: the frame was read after them,
// so its sender may have sent it after them (an application posts a
// receive, then tells its peer to send). Handled before them, a SEND found
// the receive queue empty and got an RNR NAK although its WQE had been
// posted a millisecond earlier, when the doorbell came in between the pass's
// FIFO drain and its port read (found by the differential scenarios, qp_rtr
// and qp_sqd on a model device, whose pass simulates in between).
void SoftEngine::Impl::doorbells_before_rx() {
    if (rx_doorbells_taken) return;
    rx_doorbells_taken = true;
    rx_doorbells_found = drain_fifos();
}

// An IP packet (its link header gone): into the model's MAC RX, or to the
// soft datapath.
void SoftEngine::Impl::rx_ip(const uint8_t* ip, size_t total) {
    doorbells_before_rx();
    if (pipe) {
        // A model device: the frame enters at MAC RX, as an Ethernet frame
        // addressed to the port.
        std::vector<uint8_t> fr(roce::kEthHdrBytes + total, 0);
        std::memcpy(fr.data(), port_mac, 6);
        const uint16_t et = (ip[0] >> 4) == 6 ? roce::kEtherTypeIpv6 : roce::kEtherTypeIpv4;
        fr[12] = uint8_t(et >> 8);
        fr[13] = uint8_t(et);
        std::memcpy(fr.data() + roce::kEthHdrBytes, ip, total);
        rx_held.push_back(std::move(fr));
        return;
    }
    rx_deliver(ip, total);
}

// A whole Ethernet frame: into the model's MAC RX, or its IP packet to the
// soft datapath (as the model's MAC RX hands it on, exec_rx).
void SoftEngine::Impl::rx_frame(const uint8_t* frame, size_t len) {
    doorbells_before_rx();
    if (pipe) {
        rx_held.emplace_back(frame, frame + len);
        return;
    }
    if (len <= roce::kEthHdrBytes) {
        // A runt: counted, as a model device's MAC RX counts it (found by
        // fuzz_engine_rx against fuzz_model_rx: only the model counted it).
        stat(hw::stats_block::rx_drops_bad_hdr);
        return;
    }
    rx_deliver(frame + roce::kEthHdrBytes, len - roce::kEthHdrBytes, RxTrust::None, frame);
}

// One received RoCE packet (IPv4 or IPv6): capture, decode, count, and hand
// it to its QP. `eth`: the Ethernet header in front of it, if it came as a
// whole frame (the capture keeps its MACs); else the capture gets a blank one.
void SoftEngine::Impl::rx_deliver(const uint8_t* buf, size_t total, RxTrust trust, const uint8_t* eth,
                                  const roce::Packet* decoded) {
    constexpr size_t kEth = 14;
    const bool v6 = total > 0 && (buf[0] >> 4) == 6;
    const size_t n =
        total - std::min(total, (v6 ? roce::kIpv6HdrBytes : roce::kIpv4HdrBytes) + roce::kUdpHdrBytes);
    {
        if (pcap && eth) {
            pcap->write(eth, kEth + total, wall_us());
        } else if (pcap) {
            std::vector<uint8_t> fr(kEth + total, 0);
            const uint16_t et = v6 ? roce::kEtherTypeIpv6 : roce::kEtherTypeIpv4;
            fr[12] = uint8_t(et >> 8);
            fr[13] = uint8_t(et);
            std::memcpy(fr.data() + kEth, buf, total);
            pcap->write(fr, wall_us());
        }
        roce::Packet pkt;
        roce::DecodeResult r;
        if (decoded && eth) {
            // A model device's parser decoded the frame (its IPv4 header
            // checksum checked) and its ICRC check usually passed it: the
            // ICRC is checked here only if that check did not.
            pkt = *decoded;
            if (trust == RxTrust::None) r = roce::check_icrc(eth, pkt);
        } else {
            // A loopback frame was encoded by this engine a moment ago: its
            // ICRC and IPv4 header checksum are right by construction (and
            // the capture shows them), or were left out where nothing else
            // sees the frame (transmit, loop_unseen).
            roce::DecodeOptions dopt;
            dopt.check_icrc = trust == RxTrust::None;
            dopt.check_ip_checksum = trust != RxTrust::Built;
            r = roce::decode_ip_packet(buf, total, pkt, dopt);
        }
        // The frame's MACs, where it came as a frame (a model device, a
        // wire port): what answers the packet from its own addresses rather
        // than the QP's address vector (a CNP, roce::make_cnp) reverses
        // them. Left out, a model device in a fabric sent its CNPs to MAC 0,
        // for which the switch had no route.
        if (eth) {
            std::copy(eth, eth + 6, pkt.eth.dst.begin());
            std::copy(eth + 6, eth + 12, pkt.eth.src.begin());
        }
        if (!r.ok()) {
            stat(r.error == roce::DecodeError::BadIcrc ? hw::stats_block::icrc_errors
                                                        : hw::stats_block::rx_drops_bad_hdr);
            return;
        }
        stat(hw::stats_block::rx_packets);
        stat(hw::stats_block::rx_bytes, uint64_t(n));
        const roce::OpcodeInfo& info = pkt.opinfo();
        if (info.has(roce::kHasAeth)) {
            const uint8_t syn = pkt.hdr.aeth.syndrome;
            const roce::AethType t = roce::aeth_type(syn);
            if (t == roce::AethType::RnrNak) stat(hw::stats_block::rx_rnr_nak);
            else if (t == roce::AethType::Nak) {
                const hw::Field f[] = {hw::stats_block::rx_nak_psn_seq, hw::stats_block::rx_nak_inv_req,
                                       hw::stats_block::rx_nak_rem_access, hw::stats_block::rx_nak_rem_op};
                if ((syn & 0x1F) < 4) stat(f[syn & 0x1F]);
            }
        }
        // The port's only P_Key is the default full-member 0xFFFF: a BTH
        // P_Key matches it when its low 15 bits are all ones (IBA 10.9.3,
        // either side a full member). rxe drops the rest before the QP
        // sees them (rxe_recv.c, check_keys), whatever the QP.
        if ((pkt.hdr.bth.pkey & 0x7FFF) != 0x7FFF) {
            stat(hw::stats_block::rx_drops_pkey);
            return;
        }
        if (pkt.hdr.bth.dqpn == kGsiQpn) {
            gsi_receive(pkt);
            return;
        }
        if (pkt.hdr.bth.dqpn == hw::kMulticastQpn) {
            rx_multicast(pkt);
            return;
        }
        auto it = qps.find(pkt.hdr.bth.dqpn);
        const hw::QpState st = it == qps.end() ? hw::QpState::Reset : it->second->state();
        if (st == hw::QpState::Reset || st == hw::QpState::Init || ctx_gone(it->second->ctx)) {
            stat(hw::stats_block::rx_drops_no_qp);
            return;
        }
        EngineQp& q = *it->second;
        run(q, [&] { q.core->on_packet(pkt); });
    }
}

void EngineQp::transmit(roce::Packet& pkt) { eng.transmit(*this, pkt); }
void EngineQp::transmit_request(roce::Packet& pkt, const tp::SegWqe& wqe, const tp::SegPacket& seg) {
    eng.transmit(*this, pkt, &wqe, &seg);
}
bool EngineQp::can_transmit() { return eng.tx_room(*this); }

// ---- back-pressure from the receive path ----

bool SoftEngine::Impl::rx_lags() const {
    return loop_q.size() >= kLoopHoldFrames || (port && port->rx_lagging());
}

bool SoftEngine::Impl::tx_room(EngineQp& q) {
    // A model device's requester runs in simulated time, at its pipeline's
    // pace, which its own receive path keeps: holding it on the host's
    // state would make the simulation depend on it.
    if (pipe || !rx_lags()) return true;
    if (std::find(tx_held.begin(), tx_held.end(), q.qpn) == tx_held.end()) {
        tx_held.push_back(q.qpn);
        stat(hw::tx_stats_block::rx_backlog_holds, 1, hw::kBar0TxStatsBlock);
    }
    return false;
}

bool SoftEngine::Impl::resume_held() {
    if (tx_held.empty()) return false;
    // Still lagging: the pass reports work, so that the engine goes on
    // receiving instead of sleeping with requesters held.
    if (rx_lags()) return true;
    std::vector<uint32_t> held;
    held.swap(tx_held);
    for (const uint32_t n : held) {
        // A QP destroyed meanwhile is gone; one made again under the same
        // number has nothing held, and resuming it sends nothing new.
        const auto it = qps.find(n);
        if (it == qps.end() || !it->second->core) continue;
        EngineQp& q = *it->second;
        run(q, [&] { q.core->resume(); });
    }
    return true;
}

}  // namespace simnic::soft_engine
