// The daemon's control protocol.
//
// Every request and reply is one JSON object in one SOCK_SEQPACKET message,
// so there is no framing to get wrong and a client that dies mid-request
// cannot leave half a message behind. Requests carry "op"; replies carry
// "ok" (bool) and, when false, "error" (a sentence for the user) and "errno".
//
//   {"op":"ping"}                                     -> {"ok":true,"pid":N,"version":"..."}
//   {"op":"link_add","name":N,"type":"soft","netdev":I[,"pcap":F]}
//   {"op":"link_del","name":N}
//   {"op":"link_show"[,"name":N]}                      -> {"ok":true,"links":[...]}
//   {"op":"shutdown"}
#pragma once

#include <nlohmann/json.hpp>

#include <string>

namespace simnic::daemon {

using Json = nlohmann::json;

inline constexpr size_t kMaxMessageBytes = 1 << 20;
inline constexpr const char* kVersion = "0.1.0";

// One message on a SOCK_SEQPACKET socket. Return an error message, or empty.
std::string send_message(int fd, const Json& msg);
std::string recv_message(int fd, Json& msg, int timeout_ms);

Json reply_ok();
Json reply_error(int err, const std::string& message);

}  // namespace simnic::daemon
