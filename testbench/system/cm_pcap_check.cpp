// cm_pcap_check FILE: checks a capture of an rdma_cm connection (rping)
// against kernel rxe's wire rules (docs/rxe-wire-rules.md):
//   - every RoCE frame decodes and has a valid ICRC;
//   - QP1 frames are UD SEND ONLY from QP1 to QP1, Q_Key 0x80010000, AckReq,
//     UDP source port 0xD872, carrying one 256-byte CM MAD;
//   - the MADs come in rxe's order: REQ, REP, RTU, then DREQ, DREP;
//   - the REQ's flow label is rdma_cm's hash of its two ports, and every RC
//     frame's UDP source port is the fold of that flow label;
//   - the starting PSNs as ib_cm means them: the passive side's first
//     request carries the REQ's, the active side's the REP's.
// A capture taken on the device (`pcap FILE`) holds each frame on lo twice
// (sent and received): identical MADs count once. REQ/REJ pairs
// before the connection (a client that tried before the server listened)
// are skipped.
// Prints one line per MAD and a summary; exits 1 on the first broken rule.
// With --list, only the per-frame rules apply (any exchange, e.g. a peer
// that died), and the MADs are listed.
#include <cstdio>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "simnic/cm/mad.h"
#include "simnic/roce/opcode.h"
#include "simnic/roce/packet.h"
#include "simnic/roce/pcap_io.h"
#include "simnic/roce/rules.h"

namespace cm = simnic::cm;
namespace roce = simnic::roce;

namespace {
int fail(const char* what, size_t frame) {
    std::printf("FAIL: frame %zu: %s\n", frame, what);
    return 1;
}
}  // namespace

int main(int argc, char** argv) {
    const bool list_only = argc == 3 && std::strcmp(argv[1], "--list") == 0;
    if (argc != 2 && !list_only) {
        std::fprintf(stderr, "usage: cm_pcap_check [--list] FILE\n");
        return 2;
    }
    std::string err;
    auto rd = roce::PcapReader::open(argv[argc - 1], err);
    if (!rd) {
        std::printf("FAIL: %s\n", err.c_str());
        return 1;
    }
    roce::PcapRecord rec;
    std::set<std::vector<uint8_t>> seen;
    std::vector<cm::AttrId> order;
    uint32_t flow_label = 0;
    bool have_req = false, have_rep = false;
    cm::Req req_seen;
    cm::Rep rep_seen;
    bool active_sent = false, passive_sent = false;
    size_t n = 0, rc_frames = 0;
    while (rd->next(rec)) {
        ++n;
        roce::Packet p;
        const roce::DecodeResult r = rd->decode(rec, p);
        if (r.error == roce::DecodeError::NotRoceV2 || r.error == roce::DecodeError::NotUdp ||
            r.error == roce::DecodeError::UnsupportedEthertype)
            continue;  // other traffic
        if (!r.ok()) return fail(roce::to_string(r.error), n);
        if (p.hdr.bth.dqpn == cm::kGsiQpn) {
            // The same MAD seen leaving and arriving: count it once (a
            // retransmission differs in its PSN, so it still counts).
            if (!seen.insert(std::vector<uint8_t>(rec.data.begin() + long(p.l4_off), rec.data.end())).second) continue;
            if (p.hdr.bth.opcode != roce::op::UD_SEND_ONLY) return fail("QP1 frame is not UD SEND ONLY", n);
            if (p.hdr.deth.src_qp != cm::kGsiQpn || p.hdr.deth.qkey != cm::kGsiQkey)
                return fail("QP1 frame not from QP1 with the GSI Q_Key", n);
            if (!p.hdr.bth.ack_req) return fail("MAD without AckReq", n);
            if (p.udp.sport != roce::roce_udp_sport_unconnected(cm::kGsiQpn))
                return fail("QP1 frame not from UDP port 0xD872", n);
            if (p.payload_len != cm::kMadBytes) return fail("QP1 payload is not one 256-byte MAD", n);
            cm::MadHdr h;
            if (cm::decode_hdr(p.payload, p.payload_len, h) != cm::MadError::Ok) return fail("bad CM MAD", n);
            std::printf("%zu %s\n", n, cm::describe(p.payload, p.payload_len).c_str());
            order.push_back(cm::AttrId(h.attr_id));
            if (cm::AttrId(h.attr_id) == cm::AttrId::ConnectRequest) {
                const cm::Req req = cm::decode_req(p.payload);
                cm::CmaHdr c;
                if (!cm::get_cma_hdr(req.private_data.data(), c)) return fail("REQ without rdma_cm's header", n);
                if (req.primary_flow_label != roce::cm_flow_label(c.src_port, uint16_t(req.service_id)))
                    return fail("REQ flow label is not rdma_cm's hash of its ports", n);
                flow_label = req.primary_flow_label;
                have_req = true;
                req_seen = req;
                have_rep = active_sent = passive_sent = false;
            }
            if (cm::AttrId(h.attr_id) == cm::AttrId::ConnectReply) {
                rep_seen = cm::decode_rep(p.payload);
                have_rep = true;
            }
            continue;
        }
        if (roce::opcode_transport(p.hdr.bth.opcode) != roce::Transport::RC) continue;
        ++rc_frames;
        if (list_only) continue;
        if (!have_req) return fail("RC traffic before the REQ", n);
        if (p.udp.sport != roce::udp_sport_from_flow_label(flow_label))
            return fail("RC frame's UDP source port is not the fold of the REQ's flow label", n);
        if (have_rep && p.opinfo().has(roce::kRequest)) {
            // To the passive side's QP: the active side sends, from the REP's PSN.
            const bool from_active = p.hdr.bth.dqpn == rep_seen.local_qpn;
            bool& first = from_active ? active_sent : passive_sent;
            const uint32_t want = from_active ? rep_seen.starting_psn : req_seen.starting_psn;
            if (!first && p.hdr.bth.psn != want)
                return fail(from_active ? "the active side's first request is not at the REP's starting PSN"
                                        : "the passive side's first request is not at the REQ's starting PSN",
                            n);
            first = true;
        }
    }
    if (list_only) return 0;  // the MADs only: decoded, valid, from QP1
    // A client that tried before the server listened: its REQ and the REJ
    // that answered it come first and are no part of the connection.
    size_t rejected = 0;
    while (order.size() >= 2 && order[0] == cm::AttrId::ConnectRequest && order[1] == cm::AttrId::ConnectReject) {
        order.erase(order.begin(), order.begin() + 2);
        ++rejected;
    }
    const std::vector<cm::AttrId> want = {cm::AttrId::ConnectRequest, cm::AttrId::ConnectReply,
                                          cm::AttrId::ReadyToUse, cm::AttrId::DisconnectRequest,
                                          cm::AttrId::DisconnectReply};
    if (order != want) {
        std::printf("FAIL: the MADs are not REQ, REP, RTU, DREQ, DREP (%zu MADs)\n", order.size());
        return 1;
    }
    if (rc_frames == 0) {
        std::printf("FAIL: no RC traffic\n");
        return 1;
    }
    std::printf("ok: %zu frames, 5 CM MADs in rxe's order (after %zu rejected attempts), %zu RC frames from UDP port "
                "0x%04x (flow label 0x%05x)\n",
                n, rejected, rc_frames, roce::udp_sport_from_flow_label(flow_label), flow_label);
    return 0;
}
