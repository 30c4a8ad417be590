// The CM MAD codec against kernel rxe's rping exchange (testbench/golden, 6.1
// and 6.12): every MAD decodes to the values the kernel's ib_cm / rdma_cm put
// there and encodes back to the captured bytes.
#include <catch2/catch.hpp>

#include <cstring>
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

struct GoldenMad {
    roce::Packet pkt;
    std::vector<uint8_t> frame;
    cm::Mad mad{};
};

// The QP1 frames of a golden rping capture, in wire order.
std::vector<GoldenMad> qp1_mads(const std::string& file) {
    std::string err;
    auto r = roce::PcapReader::open(std::string(SIMNIC_GOLDEN_DIR) + "/" + file, err);
    REQUIRE(r);
    std::vector<GoldenMad> out;
    roce::PcapRecord rec;
    while (r->next(rec)) {
        GoldenMad g;
        g.frame = rec.data;
        if (!r->decode(rec, g.pkt).ok()) continue;
        if (g.pkt.hdr.bth.dqpn != cm::kGsiQpn) continue;
        REQUIRE(g.pkt.payload_len == cm::kMadBytes);
        std::memcpy(g.mad.data(), g.pkt.payload, cm::kMadBytes);
        out.push_back(g);
    }
    return out;
}

// rping's exchange in each reference kernel's captures, at both MTUs.
const char* const kRpingCaptures[] = {"6.1/mtu1024/rping.pcap", "6.1/mtu4096/rping.pcap",
                                      "6.12/mtu1024/rping.pcap", "6.12/mtu4096/rping.pcap"};

// The REQ's local ACK timeout is rdma_cm's default RoCE packet lifetime
// (CMA_IBOE_PACKET_LIFETIME) plus one: the lifetime went from 18 in 6.1 to 16
// in 6.12, so the timeout from 19 (2.1 s) to 17 (0.5 s). simnic's agent sends
// 6.1's (agent.h: kPacketLifeTime).
uint8_t local_ack_timeout_of(const std::string& capture) {
    return capture.rfind("6.1/", 0) == 0 ? 19 : 17;
}

uint32_t ip_of(const cm::Gid& g) { return uint32_t(g[12]) << 24 | uint32_t(g[13]) << 16 | uint32_t(g[14]) << 8 | g[15]; }

}  // namespace

TEST_CASE("golden rping: QP1 carries REQ, REP, RTU, DREQ, DREP as UD SEND ONLY from QP1", "[cm][mad]") {
    for (const char* f : kRpingCaptures) {
        INFO(f);
        const auto mads = qp1_mads(f);
        REQUIRE(mads.size() == 5);
        const cm::AttrId want[] = {cm::AttrId::ConnectRequest, cm::AttrId::ConnectReply, cm::AttrId::ReadyToUse,
                                   cm::AttrId::DisconnectRequest, cm::AttrId::DisconnectReply};
        for (size_t i = 0; i < mads.size(); ++i) {
            const roce::Packet& p = mads[i].pkt;
            CHECK(p.hdr.bth.opcode == roce::op::UD_SEND_ONLY);
            CHECK(p.hdr.bth.ack_req);
            CHECK(p.hdr.deth.qkey == cm::kGsiQkey);
            CHECK(p.hdr.deth.src_qp == cm::kGsiQpn);
            CHECK(p.udp.sport == roce::roce_udp_sport_unconnected(cm::kGsiQpn));
            cm::MadHdr h;
            REQUIRE(cm::decode_hdr(mads[i].mad.data(), cm::kMadBytes, h) == cm::MadError::Ok);
            CHECK(h.attr_id == uint16_t(want[i]));
            CHECK(h.method == cm::kMethodSend);
            CHECK(h.status == 0);
        }
    }
}

TEST_CASE("golden rping: REQ fields are rdma_cm's and re-encode byte for byte", "[cm][mad]") {
    for (const char* f : kRpingCaptures) {
        INFO(f);
        const auto mads = qp1_mads(f);
        REQUIRE(mads.size() == 5);
        const uint8_t* m = mads[0].mad.data();
        cm::MadHdr h;
        REQUIRE(cm::decode_hdr(m, cm::kMadBytes, h) == cm::MadError::Ok);
        const cm::Req r = cm::decode_req(m);
        // rping's default port 7174 in the TCP port space.
        CHECK(r.service_id == cm::service_id(cm::kPsTcp, 7174));
        CHECK(r.responder_resources == 1);
        CHECK(r.initiator_depth == 1);
        CHECK(r.retry_count == 7);
        CHECK(r.rnr_retry_count == 7);
        CHECK(r.remote_cm_response_timeout == 20);
        CHECK(r.local_cm_response_timeout == 20);
        CHECK(r.max_cm_retries == 15);
        CHECK(r.transport_service_type == 0);
        CHECK(r.pkey == 0xffff);
        CHECK(r.path_mtu == (std::string(f).find("4096") != std::string::npos ? 5 : 3));
        CHECK(r.primary_local_lid == 0xffff);
        CHECK(r.primary_remote_lid == 0xffff);
        // rping sets no ECE: vendor ID and options (the attribute modifier) zero.
        CHECK(r.vendor_id == 0);
        CHECK(h.attr_mod == 0);
        CHECK(r.primary_hop_limit == 64);
        CHECK(r.primary_local_ack_timeout == local_ack_timeout_of(f));
        CHECK(ip_of(r.primary_local_gid) == 0x0a000002);
        CHECK(ip_of(r.primary_remote_gid) == 0x0a000001);
        cm::CmaHdr c;
        REQUIRE(cm::get_cma_hdr(r.private_data.data(), c));
        CHECK(c.ip_version == 4);
        CHECK(ip_of(c.src_addr) == 0x0a000002);
        CHECK(ip_of(c.dst_addr) == 0x0a000001);
        // The flow label is rdma_cm's hash of its two ports (wire rules, case 2).
        CHECK(r.primary_flow_label == roce::cm_flow_label(c.src_port, 7174));
        // ib_cm's TID: agent number high, the local communication ID low.
        CHECK(uint32_t(h.tid) == __builtin_bswap32(r.local_comm_id));
        const cm::Mad again = cm::encode(h, r);
        CHECK(std::memcmp(again.data(), m, cm::kMadBytes) == 0);
        // The cma header as we write it.
        uint8_t hdr[cm::kCmaHdrBytes];
        cm::put_cma_hdr(hdr, c);
        CHECK(std::memcmp(hdr, r.private_data.data(), cm::kCmaHdrBytes) == 0);
    }
}

TEST_CASE("golden rping: REP, RTU, DREQ, DREP link to the REQ and re-encode byte for byte", "[cm][mad]") {
    for (const char* f : kRpingCaptures) {
        INFO(f);
        const auto mads = qp1_mads(f);
        REQUIRE(mads.size() == 5);
        cm::MadHdr hreq, h;
        REQUIRE(cm::decode_hdr(mads[0].mad.data(), cm::kMadBytes, hreq) == cm::MadError::Ok);
        const cm::Req req = cm::decode_req(mads[0].mad.data());

        REQUIRE(cm::decode_hdr(mads[1].mad.data(), cm::kMadBytes, h) == cm::MadError::Ok);
        const cm::Rep rep = cm::decode_rep(mads[1].mad.data());
        CHECK(h.tid == hreq.tid);
        CHECK(rep.remote_comm_id == req.local_comm_id);
        CHECK(rep.responder_resources == 1);
        CHECK(rep.initiator_depth == 1);
        CHECK(rep.target_ack_delay == 15);
        CHECK(rep.rnr_retry_count == 7);
        CHECK(rep.local_qpn != 0);
        CHECK(rep.vendor_id == 0);  // no ECE
        CHECK(h.attr_mod == 0);
        CHECK(std::memcmp(cm::encode(h, rep).data(), mads[1].mad.data(), cm::kMadBytes) == 0);

        REQUIRE(cm::decode_hdr(mads[2].mad.data(), cm::kMadBytes, h) == cm::MadError::Ok);
        const cm::Rtu rtu = cm::decode_rtu(mads[2].mad.data());
        CHECK(h.tid == hreq.tid);
        CHECK(rtu.local_comm_id == req.local_comm_id);
        CHECK(rtu.remote_comm_id == rep.local_comm_id);
        CHECK(std::memcmp(cm::encode(h, rtu).data(), mads[2].mad.data(), cm::kMadBytes) == 0);

        // The client disconnects: its DREQ names the server's QP.
        REQUIRE(cm::decode_hdr(mads[3].mad.data(), cm::kMadBytes, h) == cm::MadError::Ok);
        const cm::Dreq dreq = cm::decode_dreq(mads[3].mad.data());
        CHECK(dreq.local_comm_id == req.local_comm_id);
        CHECK(dreq.remote_comm_id == rep.local_comm_id);
        CHECK(dreq.remote_qpn == rep.local_qpn);
        CHECK(std::memcmp(cm::encode(h, dreq).data(), mads[3].mad.data(), cm::kMadBytes) == 0);
        const uint64_t dreq_tid = h.tid;

        REQUIRE(cm::decode_hdr(mads[4].mad.data(), cm::kMadBytes, h) == cm::MadError::Ok);
        const cm::Drep drep = cm::decode_drep(mads[4].mad.data());
        CHECK(h.tid == dreq_tid);
        CHECK(drep.local_comm_id == rep.local_comm_id);
        CHECK(drep.remote_comm_id == req.local_comm_id);
        CHECK(std::memcmp(cm::encode(h, drep).data(), mads[4].mad.data(), cm::kMadBytes) == 0);
    }
}

TEST_CASE("REJ layout: reason and rejected message where IBA puts them", "[cm][mad]") {
    cm::MadHdr h;
    h.tid = 0x0000000112345678ull;
    cm::Rej j;
    j.local_comm_id = 0x01020304;
    j.remote_comm_id = 0x0a0b0c0d;
    j.msg_rejected = cm::RejMsg::Rep;
    j.reason = uint16_t(cm::RejReason::InvalidServiceId);
    j.private_data[0] = 0xee;
    const cm::Mad m = cm::encode(h, j);
    const uint8_t* p = m.data() + cm::kMadHdrBytes;
    CHECK(m[16] == 0x00);
    CHECK(m[17] == 0x12);  // attribute ID ConnectReject
    CHECK(p[0] == 0x01);
    CHECK(p[7] == 0x0d);
    CHECK(p[8] == 0x40);   // MessageREJected = 1 in the top two bits
    CHECK(p[10] == 0x00);
    CHECK(p[11] == 8);     // reason
    CHECK(p[84] == 0xee);  // private data after the 72-byte ARI
    const cm::Rej back = cm::decode_rej(m.data());
    CHECK(back.reason == 8);
    CHECK(back.msg_rejected == cm::RejMsg::Rep);
    CHECK(back.remote_comm_id == 0x0a0b0c0d);
}

TEST_CASE("ECE: REQ and REP carry the vendor ID and options where ib_cm puts them", "[cm][mad][ece]") {
    // cm_format_req / cm_format_rep (kernel 5.8 on): the options are the MAD
    // header's attribute modifier; the REQ's vendor ID is the 24 bits after
    // LocalCommunicationID's reserved byte, the REP's three bytes each follow
    // LocalQPN, LocalEECN and StartingPSN. The fields around them keep their
    // values.
    cm::MadHdr h;
    h.attr_mod = 0xa1b2c3d4;
    cm::Req r;
    r.local_comm_id = 0x01020304;
    r.vendor_id = 0xfe15b3;
    r.service_id = 0x0000000001061c06ull;
    const cm::Mad mq = cm::encode(h, r);
    CHECK(mq[20] == 0xa1);
    CHECK(mq[23] == 0xd4);
    const uint8_t* q = mq.data() + cm::kMadHdrBytes;
    CHECK(q[3] == 0x04);
    CHECK(q[4] == 0x00);  // reserved
    CHECK(q[5] == 0xfe);
    CHECK(q[6] == 0x15);
    CHECK(q[7] == 0xb3);
    CHECK(q[14] == 0x1c);
    cm::MadHdr hq;
    REQUIRE(cm::decode_hdr(mq.data(), mq.size(), hq) == cm::MadError::Ok);
    CHECK(hq.attr_mod == 0xa1b2c3d4);
    const cm::Req rq = cm::decode_req(mq.data());
    CHECK(rq.vendor_id == 0xfe15b3);
    CHECK(rq.local_comm_id == 0x01020304);
    CHECK(rq.service_id == r.service_id);
    // Only 24 bits travel.
    r.vendor_id = 0x12fe15b3;
    CHECK(cm::decode_req(cm::encode(h, r).data()).vendor_id == 0xfe15b3);

    cm::Rep p;
    p.local_qpn = 0x000011;
    p.local_eecn = 0;
    p.starting_psn = 0xabcdef;
    p.vendor_id = 0xfe15b3;
    p.responder_resources = 1;
    const cm::Mad mp = cm::encode(h, p);
    CHECK(mp[20] == 0xa1);
    const uint8_t* b = mp.data() + cm::kMadHdrBytes;
    CHECK(b[14] == 0x11);
    CHECK(b[15] == 0xfe);  // VendorID[23:16]
    CHECK(b[19] == 0x15);  // VendorID[15:8]
    CHECK(b[20] == 0xab);
    CHECK(b[22] == 0xef);
    CHECK(b[23] == 0xb3);  // VendorID[7:0]
    CHECK(b[24] == 1);
    const cm::Rep rp = cm::decode_rep(mp.data());
    CHECK(rp.vendor_id == 0xfe15b3);
    CHECK(rp.local_qpn == 0x11);
    CHECK(rp.starting_psn == 0xabcdef);
    CHECK(cm::describe(mp.data(), mp.size()).find("ece 0xfe15b3/0xa1b2c3d4") != std::string::npos);
}

TEST_CASE("REJ layout: the reason rdma_reject_ece sends, vendor option not supported (35)", "[cm][mad][ece]") {
    cm::Rej j;
    j.reason = uint16_t(cm::RejReason::VendorOptionNotSupported);
    const cm::Mad m = cm::encode(cm::MadHdr{}, j);
    CHECK(m[cm::kMadHdrBytes + 10] == 0);
    CHECK(m[cm::kMadHdrBytes + 11] == 35);
    CHECK(cm::decode_rej(m.data()).reason == 35);
}

TEST_CASE("bad MADs are refused with the reason", "[cm][mad]") {
    cm::MadHdr h;
    cm::Mad m = cm::encode(cm::MadHdr{}, cm::Rtu{});
    CHECK(cm::decode_hdr(m.data(), 100, h) == cm::MadError::TooShort);
    m[1] = 0x04;  // performance management class
    CHECK(cm::decode_hdr(m.data(), m.size(), h) == cm::MadError::NotCm);
    m[1] = cm::kMgmtClassCm;
    m[2] = 1;
    CHECK(cm::decode_hdr(m.data(), m.size(), h) == cm::MadError::BadVersion);
    m[2] = cm::kCmClassVersion;
    m[17] = 0x19;  // LAP, which simnic does not speak
    CHECK(cm::decode_hdr(m.data(), m.size(), h) == cm::MadError::UnknownAttr);
}

TEST_CASE("SIDR_REQ and SIDR_REP layouts: fields where IBA 12.11 puts them", "[cm][mad][sidr]") {
    cm::MadHdr h;
    h.tid = 0x0000000100000042ull;
    cm::SidrReq q;
    q.request_id = 0x01020304;
    q.service_id = cm::service_id(cm::kPsUdp, 7174);
    q.private_data[0] = 0xaa;
    const cm::Mad mq = cm::encode(h, q);
    CHECK(mq[17] == 0x17);  // attribute ID SIDR_REQ
    const uint8_t* p = mq.data() + cm::kMadHdrBytes;
    CHECK(p[0] == 0x01);
    CHECK(p[3] == 0x04);
    CHECK((p[4] == 0xff && p[5] == 0xff));  // P_Key
    CHECK(p[12] == 0x01);                   // service ID 0x0000000001111c06: UDP port space
    CHECK(p[13] == 0x11);
    CHECK(p[14] == 0x1c);
    CHECK(p[15] == 0x06);
    CHECK(p[16] == 0xaa);  // private data
    cm::MadHdr back;
    REQUIRE(cm::decode_hdr(mq.data(), mq.size(), back) == cm::MadError::Ok);
    const cm::SidrReq q2 = cm::decode_sidr_req(mq.data());
    CHECK(q2.request_id == q.request_id);
    CHECK(q2.service_id == q.service_id);
    CHECK(cm::encode(back, q2) == mq);

    cm::SidrRep r;
    r.request_id = 0x01020304;
    r.status = cm::SidrStatus::Rejected;
    r.qpn = 0xabcdef;
    r.service_id = q.service_id;
    r.qkey = cm::kUdpQkey;
    r.private_data[0] = 0xbb;
    const cm::Mad mr = cm::encode(h, r);
    CHECK(mr[17] == 0x18);  // SIDR_REP
    p = mr.data() + cm::kMadHdrBytes;
    CHECK(p[4] == 2);  // status
    CHECK((p[8] == 0xab && p[9] == 0xcd && p[10] == 0xef && p[11] == 0));  // QPN, then reserved
    CHECK(p[19] == 0x06);                                                  // service ID's last byte
    CHECK((p[20] == 0x01 && p[23] == 0x67));                                // Q_Key
    CHECK(p[96] == 0xbb);  // private data after the 72-byte ClassPortInfo
    const cm::SidrRep r2 = cm::decode_sidr_rep(mr.data());
    CHECK(r2.qpn == r.qpn);
    CHECK(r2.qkey == r.qkey);
    CHECK(r2.status == r.status);
    CHECK(cm::encode(h, r2) == mr);
}

namespace {
// A MAD decoded with its attribute's reader and written again with its
// writer (an attribute the codec has no message for comes back empty).
cm::Mad reencode(const cm::Mad& m) {
    cm::MadHdr h;
    if (cm::decode_hdr(m.data(), m.size(), h) != cm::MadError::Ok) return {};
    switch (cm::AttrId(h.attr_id)) {
        case cm::AttrId::ConnectRequest: return cm::encode(h, cm::decode_req(m.data()));
        case cm::AttrId::ConnectReply: return cm::encode(h, cm::decode_rep(m.data()));
        case cm::AttrId::ReadyToUse: return cm::encode(h, cm::decode_rtu(m.data()));
        case cm::AttrId::ConnectReject: return cm::encode(h, cm::decode_rej(m.data()));
        case cm::AttrId::DisconnectRequest: return cm::encode(h, cm::decode_dreq(m.data()));
        case cm::AttrId::DisconnectReply: return cm::encode(h, cm::decode_drep(m.data()));
        case cm::AttrId::SidrRequest: return cm::encode(h, cm::decode_sidr_req(m.data()));
        case cm::AttrId::SidrReply: return cm::encode(h, cm::decode_sidr_rep(m.data()));
        case cm::AttrId::MsgRcptAck: break;
    }
    return {};
}
}  // namespace

TEST_CASE("golden: every CM MAD of every rdma_cm tool's capture re-encodes byte for byte", "[cm][mad]") {
    // The captures of testbench/golden/regenerate.py's rdma_cm cases: RC
    // connections (rping, ucmatose, cmtime, rdma_client), UD service ID
    // resolution (udaddy) and the answers to a peer nobody listens for
    // (cm_reject: REJ; sidr_reject: SIDR_REP "unsupported").
    const char* const tools[] = {"rping", "ucmatose", "cmtime", "rdma_client", "udaddy", "cm_reject", "sidr_reject"};
    size_t n = 0;
    for (const char* kernel : {"6.1", "6.12"})
        for (const char* mtu : {"mtu1024", "mtu4096"})
            for (const char* tool : tools) {
                const std::string f = std::string(kernel) + "/" + mtu + "/" + tool + ".pcap";
                INFO(f);
                const auto mads = qp1_mads(f);
                CHECK(!mads.empty());
                for (const GoldenMad& g : mads) {
                    INFO(cm::describe(g.mad.data(), g.mad.size()));
                    CHECK(reencode(g.mad) == g.mad);
                    ++n;
                }
            }
    CHECK(n > 100);
}
