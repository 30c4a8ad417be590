// Reading and writing packet captures (libpcap formats, pcap and pcapng).
//
// simnic writes Ethernet captures that tcpdump, tshark and gtkwave's friends
// read; it reads whatever link type a capture of RoCE traffic usually has:
// Ethernet (tcpdump -i lo / eth0), Linux cooked v1 and v2 (tcpdump -i any)
// and raw IP.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "simnic/roce/packet.h"

namespace simnic::roce {

struct PcapRecord {
    uint64_t ts_us = 0;      // capture time, microseconds since the epoch
    uint32_t orig_len = 0;   // length on the wire (may exceed data.size())
    std::vector<uint8_t> data;
};

class PcapReader {
public:
    ~PcapReader();
    // Opens `path`; on failure returns null and sets `err`.
    static std::unique_ptr<PcapReader> open(const std::string& path, std::string& err);
    // Next record; false at the end of the file or on a read error (see error()).
    bool next(PcapRecord& rec);
    const std::string& error() const { return err_; }
    int linktype() const { return linktype_; }
    // True when decode() understands this capture's link type.
    bool linktype_supported() const;
    // Decode a record of this capture, whatever its link type. A record cut
    // short by the snap length decodes as truncated.
    DecodeResult decode(const PcapRecord& rec, Packet& out, const DecodeOptions& opt = {}) const;

private:
    PcapReader() = default;
    struct Impl;
    std::unique_ptr<Impl> impl_;
    int linktype_ = 0;
    std::string err_;
};

class PcapWriter {
public:
    ~PcapWriter();
    // Creates (truncates) `path` as an Ethernet pcap; null and `err` on failure.
    static std::unique_ptr<PcapWriter> open(const std::string& path, std::string& err);
    void write(const uint8_t* frame, size_t len, uint64_t ts_us);
    void write(const std::vector<uint8_t>& frame, uint64_t ts_us) { write(frame.data(), frame.size(), ts_us); }
    void flush();

private:
    PcapWriter() = default;
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace simnic::roce
