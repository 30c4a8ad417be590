// Human-readable renderings of decoded packets, for `simnic pcap` and for
// test failure messages.
#pragma once

#include <string>

#include "simnic/roce/packet.h"

namespace simnic::roce {

// One line: addresses, opcode, QPN, PSN, the extension headers' key fields,
// payload length and the ICRC verdict.
std::string describe_brief(const Packet& p, const DecodeResult& r);

// Every field of every header, one header per line, indented by two spaces.
std::string describe_verbose(const Packet& p, const DecodeResult& r);

// "ACK credits 31", "NAK PSN sequence error", "RNR NAK timer 12", ...
std::string describe_syndrome(uint8_t syndrome);

}  // namespace simnic::roce
