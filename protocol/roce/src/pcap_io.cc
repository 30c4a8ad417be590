#include "simnic/roce/pcap_io.h"

#include <pcap/pcap.h>

#include "simnic/roce/bytes.h"

namespace simnic::roce {

// Link-layer header types from the tcpdump.org registry; not every libpcap
// header defines the newer ones.
namespace {
constexpr int kLinkEthernet = 1;      // DLT_EN10MB
constexpr int kLinkRaw = 101;         // LINKTYPE_RAW
constexpr int kLinkIpv4 = 228;        // LINKTYPE_IPV4
constexpr int kLinkIpv6 = 229;        // LINKTYPE_IPV6
constexpr int kLinkLinuxSll = 113;    // LINKTYPE_LINUX_SLL (16-byte header)
constexpr int kLinkLinuxSll2 = 276;   // LINKTYPE_LINUX_SLL2 (20-byte header)
constexpr int kLinkDltRaw = 12;       // DLT_RAW as some systems number it
}  // namespace

struct PcapReader::Impl {
    pcap_t* handle = nullptr;
    ~Impl() {
        if (handle) pcap_close(handle);
    }
};

PcapReader::~PcapReader() = default;

std::unique_ptr<PcapReader> PcapReader::open(const std::string& path, std::string& err) {
    char ebuf[PCAP_ERRBUF_SIZE] = {};
    pcap_t* h = pcap_open_offline(path.c_str(), ebuf);
    if (!h) {
        err = ebuf;
        return nullptr;
    }
    std::unique_ptr<PcapReader> r(new PcapReader());
    r->impl_ = std::make_unique<Impl>();
    r->impl_->handle = h;
    r->linktype_ = pcap_datalink(h);
    return r;
}

bool PcapReader::next(PcapRecord& rec) {
    pcap_pkthdr* hdr = nullptr;
    const u_char* data = nullptr;
    int rc = pcap_next_ex(impl_->handle, &hdr, &data);
    if (rc == 1) {
        rec.ts_us = uint64_t(hdr->ts.tv_sec) * 1000000u + uint64_t(hdr->ts.tv_usec);
        rec.orig_len = hdr->len;
        rec.data.assign(data, data + hdr->caplen);
        return true;
    }
    if (rc == PCAP_ERROR) err_ = pcap_geterr(impl_->handle);
    return false;
}

bool PcapReader::linktype_supported() const {
    switch (linktype_) {
        case kLinkEthernet: case kLinkRaw: case kLinkDltRaw: case kLinkIpv4: case kLinkIpv6:
        case kLinkLinuxSll: case kLinkLinuxSll2:
            return true;
        default:
            return false;
    }
}

DecodeResult PcapReader::decode(const PcapRecord& rec, Packet& out, const DecodeOptions& opt) const {
    const uint8_t* d = rec.data.data();
    const size_t n = rec.data.size();
    // Cooked headers end with the protocol type; what follows is the IP packet.
    auto cooked = [&](size_t hdr_len, size_t proto_off) {
        DecodeResult r;
        if (n < hdr_len) {
            out = Packet{};
            r.error = DecodeError::TruncatedEthernet;
            return r;
        }
        const uint16_t proto = load_be16(d + proto_off);
        if (proto != kEtherTypeIpv4 && proto != kEtherTypeIpv6) {
            out = Packet{};
            r.error = DecodeError::UnsupportedEthertype;
            r.offset = proto_off;
            return r;
        }
        r = decode_ip_packet(d + hdr_len, n - hdr_len, out, opt);
        r.offset += hdr_len;
        return r;
    };
    switch (linktype_) {
        case kLinkEthernet: return decode_frame(d, n, out, opt);
        case kLinkLinuxSll: return cooked(16, 14);
        case kLinkLinuxSll2: return cooked(20, 0);
        default: return decode_ip_packet(d, n, out, opt);
    }
}

struct PcapWriter::Impl {
    pcap_t* dead = nullptr;
    pcap_dumper_t* dumper = nullptr;
    ~Impl() {
        if (dumper) pcap_dump_close(dumper);
        if (dead) pcap_close(dead);
    }
};

PcapWriter::~PcapWriter() = default;

std::unique_ptr<PcapWriter> PcapWriter::open(const std::string& path, std::string& err) {
    auto impl = std::make_unique<Impl>();
    impl->dead = pcap_open_dead(kLinkEthernet, 65535);
    if (!impl->dead) {
        err = "pcap_open_dead failed";
        return nullptr;
    }
    impl->dumper = pcap_dump_open(impl->dead, path.c_str());
    if (!impl->dumper) {
        err = pcap_geterr(impl->dead);
        return nullptr;
    }
    std::unique_ptr<PcapWriter> w(new PcapWriter());
    w->impl_ = std::move(impl);
    return w;
}

void PcapWriter::write(const uint8_t* frame, size_t len, uint64_t ts_us) {
    pcap_pkthdr hdr{};
    hdr.ts.tv_sec = static_cast<time_t>(ts_us / 1000000u);
    hdr.ts.tv_usec = static_cast<suseconds_t>(ts_us % 1000000u);
    hdr.caplen = hdr.len = static_cast<bpf_u_int32>(len);
    pcap_dump(reinterpret_cast<u_char*>(impl_->dumper), &hdr, frame);
}

void PcapWriter::flush() { pcap_dump_flush(impl_->dumper); }

}  // namespace simnic::roce
