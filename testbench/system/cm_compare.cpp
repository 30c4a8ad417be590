// cm_compare REFERENCE.pcap CAPTURE.pcap: do the CM MADs in CAPTURE (an
// rdmacm-utils tool on a simnic device) say what the kernel's ib_cm said
// for the same tool in REFERENCE (a golden capture between two kernel-rxe
// VMs, testbench/golden/<kernel>/mtu*/<tool>.pcap)?
//
// Each MAD is decoded with the CM codec and the fields that differ from run
// to run by design are cleared before the two captures are compared:
//   - the MAD header's transaction ID;
//   - communication IDs and SIDR request IDs (random per connection);
//   - QPNs and starting PSNs (the devices' own);
//   - the CA GUID and GIDs, rdma_cm's addresses and source port in its
//     private-data header, the flow label (a hash of the two ports), and the
//     port within the service ID (tests run the tools on ports of their own;
//     the port space stays).
// With --ignore FIELD (repeatable), FIELD is cleared too: a field in which
// the reference kernels differ from one another, and simnic follows one of
// them (local_ack_timeout: the REQ's local ACK timeout, rdma_cm's RoCE packet
// lifetime plus one, 19 on 6.1 and 17 on 6.12; simnic's is 6.1's).
// Every other bit of every MAD must be one the reference holds for the same
// attribute: the message kinds, the CM's timeouts and retry counts, path
// MTU, rate, hop limit, traffic class, SL, the RDMA read depths, the RNR
// retry count, SRQ and flow-control bits, REJ reasons, SIDR statuses and
// Q_Keys, rdma_cm's header version, and the private data after it.
// Retransmissions and a capture's two copies of a frame (a device on lo sees
// it leave and arrive) count once; how many connections a run makes does
// not matter, so the comparison is of the set of distinct MADs per
// attribute.
//
// Prints one line per attribute and, for each MAD the reference has no
// match for, its description and the bytes in which it differs from the
// reference's nearest MAD of that attribute. Exit status 0 when everything
// agrees, 1 on a difference, 2 on bad usage or an unreadable capture.
#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "simnic/cm/mad.h"
#include "simnic/roce/opcode.h"
#include "simnic/roce/packet.h"
#include "simnic/roce/pcap_io.h"

namespace cm = simnic::cm;
namespace roce = simnic::roce;

namespace {

// The CM MADs of a capture in wire order, each distinct MAD once (a
// retransmission repeats its MAD, TID included). False, with `err`, when
// the capture cannot be read or holds a QP1 frame that is not a CM MAD.
bool read_cm_mads(const char* path, std::vector<cm::Mad>& out, std::string& err) {
    auto rd = roce::PcapReader::open(path, err);
    if (!rd) return false;
    roce::PcapRecord rec;
    std::set<cm::Mad> seen;
    for (size_t n = 1; rd->next(rec); ++n) {
        roce::Packet p;
        if (!rd->decode(rec, p).ok() || p.hdr.bth.dqpn != cm::kGsiQpn) continue;
        cm::MadHdr h;
        if (p.hdr.bth.opcode != roce::op::UD_SEND_ONLY || p.payload_len != cm::kMadBytes ||
            cm::decode_hdr(p.payload, p.payload_len, h) != cm::MadError::Ok) {
            err = "frame " + std::to_string(n) + ": a QP1 frame that is not one CM MAD";
            return false;
        }
        cm::Mad m;
        std::copy(p.payload, p.payload + cm::kMadBytes, m.begin());
        if (seen.insert(m).second) out.push_back(m);
    }
    return true;
}

void clear_cma_hdr(uint8_t* private_data) {
    cm::CmaHdr c;
    if (!cm::get_cma_hdr(private_data, c)) return;  // not rdma_cm's: compared as it is
    c.src_port = 0;
    c.src_addr = {};
    c.dst_addr = {};
    cm::put_cma_hdr(private_data, c);
}

uint64_t port_space_only(uint64_t service_id) { return service_id & ~uint64_t{0xffff}; }

// The fields --ignore may name.
struct Ignored {
    bool local_ack_timeout = false;
};

// The MAD with its run-dependent fields, and those ignored, cleared.
cm::Mad normalise(const cm::Mad& mad, const Ignored& ignored) {
    cm::MadHdr h;
    cm::decode_hdr(mad.data(), mad.size(), h);
    h.tid = 0;
    switch (cm::AttrId(h.attr_id)) {
        case cm::AttrId::ConnectRequest: {
            cm::Req r = cm::decode_req(mad.data());
            r.local_comm_id = 0;
            r.service_id = port_space_only(r.service_id);
            r.local_ca_guid = 0;
            r.local_qpn = 0;
            r.starting_psn = 0;
            r.primary_local_gid = {};
            r.primary_remote_gid = {};
            r.primary_flow_label = 0;
            if (ignored.local_ack_timeout) r.primary_local_ack_timeout = 0;
            clear_cma_hdr(r.private_data.data());
            return cm::encode(h, r);
        }
        case cm::AttrId::ConnectReply: {
            cm::Rep r = cm::decode_rep(mad.data());
            r.local_comm_id = r.remote_comm_id = 0;
            r.local_qpn = 0;
            r.starting_psn = 0;
            r.local_ca_guid = 0;
            return cm::encode(h, r);
        }
        case cm::AttrId::ReadyToUse: {
            cm::Rtu r = cm::decode_rtu(mad.data());
            r.local_comm_id = r.remote_comm_id = 0;
            return cm::encode(h, r);
        }
        case cm::AttrId::ConnectReject: {
            cm::Rej r = cm::decode_rej(mad.data());
            r.local_comm_id = r.remote_comm_id = 0;
            return cm::encode(h, r);
        }
        case cm::AttrId::DisconnectRequest: {
            cm::Dreq r = cm::decode_dreq(mad.data());
            r.local_comm_id = r.remote_comm_id = 0;
            r.remote_qpn = 0;
            return cm::encode(h, r);
        }
        case cm::AttrId::DisconnectReply: {
            cm::Drep r = cm::decode_drep(mad.data());
            r.local_comm_id = r.remote_comm_id = 0;
            return cm::encode(h, r);
        }
        case cm::AttrId::SidrRequest: {
            cm::SidrReq r = cm::decode_sidr_req(mad.data());
            r.request_id = 0;
            r.service_id = port_space_only(r.service_id);
            clear_cma_hdr(r.private_data.data());
            return cm::encode(h, r);
        }
        case cm::AttrId::SidrReply: {
            cm::SidrRep r = cm::decode_sidr_rep(mad.data());
            r.request_id = 0;
            r.qpn = 0;
            r.service_id = port_space_only(r.service_id);
            return cm::encode(h, r);
        }
        case cm::AttrId::MsgRcptAck: {
            // No codec of its own: the two communication IDs lead, as in an
            // RTU; the rest is compared as it is.
            cm::Mad m = mad;
            for (size_t i = 0; i < 8; ++i) m[cm::kMadHdrBytes + i] = 0;
            for (size_t i = 8; i < 16; ++i) m[i] = 0;  // the TID
            return m;
        }
    }
    return mad;
}

using Kinds = std::map<uint16_t, std::set<cm::Mad>>;  // attribute -> distinct normalised MADs

struct Side {
    Kinds kinds;
    std::map<uint16_t, size_t> count;  // distinct MADs as sent, per attribute
};

bool load(const char* path, const Ignored& ignored, Side& s) {
    std::string err;
    std::vector<cm::Mad> mads;
    if (!read_cm_mads(path, mads, err)) {
        std::printf("FAIL: %s: %s\n", path, err.c_str());
        return false;
    }
    for (const cm::Mad& m : mads) {
        cm::MadHdr h;
        cm::decode_hdr(m.data(), m.size(), h);
        s.kinds[h.attr_id].insert(normalise(m, ignored));
        ++s.count[h.attr_id];
    }
    return true;
}

size_t differing_bytes(const cm::Mad& a, const cm::Mad& b) {
    size_t n = 0;
    for (size_t i = 0; i < a.size(); ++i) n += a[i] != b[i];
    return n;
}

// The bytes of `got` that differ from `want`, as MAD offsets (the message
// starts at byte 24; IBA 12.6 gives its fields' places from there).
void print_diff(const cm::Mad& want, const cm::Mad& got) {
    std::printf("    reference: %s\n    capture:   %s\n", cm::describe(want.data(), want.size()).c_str(),
                cm::describe(got.data(), got.size()).c_str());
    for (size_t i = 0; i < got.size(); ++i) {
        if (want[i] == got[i]) continue;
        if (i >= cm::kMadHdrBytes)
            std::printf("    MAD byte %3zu (message byte %3zu): reference 0x%02x, capture 0x%02x\n", i,
                        i - cm::kMadHdrBytes, want[i], got[i]);
        else
            std::printf("    MAD byte %3zu (header): reference 0x%02x, capture 0x%02x\n", i, want[i], got[i]);
    }
}

}  // namespace

int main(int argc, char** argv) {
    Ignored ignored;
    std::vector<const char*> files;
    std::string ignoring;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--ignore" && i + 1 < argc && std::string(argv[i + 1]) == "local_ack_timeout") {
            ignored.local_ack_timeout = true;
            ignoring += std::string(ignoring.empty() ? "" : ", ") + argv[++i];
        } else if (a == "--ignore") {
            std::fprintf(stderr, "cm_compare: --ignore takes one of: local_ack_timeout\n");
            return 2;
        } else {
            files.push_back(argv[i]);
        }
    }
    if (files.size() != 2) {
        std::fprintf(stderr, "usage: cm_compare [--ignore FIELD]... REFERENCE.pcap CAPTURE.pcap\n");
        return 2;
    }
    const char* const ref_path = files[0];
    Side ref, cap;
    if (!load(ref_path, ignored, ref) || !load(files[1], ignored, cap)) return 2;
    if (ref.kinds.empty()) {
        std::printf("FAIL: %s holds no CM MAD\n", ref_path);
        return 1;
    }
    std::set<uint16_t> attrs;
    for (const auto& [a, _] : ref.kinds) attrs.insert(a);
    for (const auto& [a, _] : cap.kinds) attrs.insert(a);
    size_t bad = 0, agreed = 0;
    for (uint16_t a : attrs) {
        const char* name = cm::to_string(cm::AttrId(a));
        const auto& want = ref.kinds[a];
        const auto& got = cap.kinds[a];
        if (want.empty() || got.empty()) {
            std::printf("%-8s reference %zu, capture %zu: %s\n", name, ref.count[a], cap.count[a],
                        want.empty() ? "the kernel sent none" : "simnic sent none");
            ++bad;
            continue;
        }
        size_t unmatched = 0;
        for (const cm::Mad& m : got) unmatched += want.count(m) == 0;
        std::printf("%-8s reference %zu, capture %zu: %s\n", name, ref.count[a], cap.count[a],
                    unmatched ? "DIFFERS" : "same");
        if (!unmatched) {
            agreed += cap.count[a];
            continue;
        }
        ++bad;
        for (const cm::Mad& m : got) {
            if (want.count(m)) continue;
            const cm::Mad* nearest = &*want.begin();
            for (const cm::Mad& w : want)
                if (differing_bytes(w, m) < differing_bytes(*nearest, m)) nearest = &w;
            print_diff(*nearest, m);
        }
    }
    if (bad) {
        std::printf("FAIL: %zu of %zu attributes differ from %s\n", bad, attrs.size(), ref_path);
        return 1;
    }
    std::printf("ok: %zu CM MADs of %zu kinds, each as the kernel's in %s%s%s\n", agreed, attrs.size(), ref_path,
                ignoring.empty() ? "" : " (ignoring ", ignoring.empty() ? "" : (ignoring + ")").c_str());
    return 0;
}
