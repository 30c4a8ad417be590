// The daemon's control protocol.
//
// Every request and reply is one JSON object in one SOCK_SEQPACKET message,
// so there is no framing to get wrong and a client that dies mid-request
// cannot leave half a message behind. Requests carry "op"; replies carry
// "ok" (bool) and, when false, "error" (a sentence for the user) and "errno".
//
//   {"op":"ping"}                                     -> {"ok":true,"pid":N,"version":"...",
//                                                         "heap_in_use":B,"heap_held":B}
//   {"op":"link_add","name":N,"type":"soft","netdev":I[,"pcap":F]}
//   {"op":"link_del","name":N}
//   {"op":"link_show"[,"name":N]}                      -> {"ok":true,"links":[...]}
//   {"op":"fabric_add","name":F,"topology":PATH,"topology_text":T[,"config":P,"config_text":C][,"pcap":P]}
//                                                       a fabric and a model device F_HOST per host
//   {"op":"fabric_del","name":F}                       the fabric and its devices
//   {"op":"fabric_show"[,"name":F]}                    -> {"ok":true,"fabrics":[...]}
//   {"op":"fabric_hold","name":F,"hold":B}             -> {"ok":true,"simulated_us":T,"was_held":W}: its
//                                                         simulated time stands still (B true)
//                                                         or goes on
//   {"op":"fabric_rates","name":F[,"bin_us":B]}        -> {"ok":true,"rates":{"bin_us":..,"bins":..,
//                                                         "flows":[{"from","to","bytes","gbps":[..]}]}}
//   {"op":"fabric_depth","name":F[,"bin_us":B]}        -> {"ok":true,"depth":{"bin_us":..,"bins":..,
//                                                         "queues":[{"switch","port","peer","prio",
//                                                         "now_bytes","peak_bytes":[..]}]}}
//   {"op":"fabric_dcqcn","name":F[,"bin_us":B]}        -> {"ok":true,"dcqcn":{"bin_us":..,"bins":..,
//                                                         "qps":[{"host","device","qpn","life","begin_us",
//                                                         "end_us","rc_gbps":[..],"rt_gbps":[..],
//                                                         "alpha":[..]}]}} (null: the QP did not exist)
//   {"op":"resource_counts","device":N}               -> {"ok":true,"qps":..,"cqs":..,"mrs":..,
//                                                         "pds":..,"srqs":..,"ahs":..,"contexts":..}
//   {"op":"resources"[,"device":N][,"lists":L][,"after":C]}
//                                                     -> {"ok":true,"devices":[{"name":..,"qps":..,
//                                                         ..,"qp_list":[..],"gids":[..]}][,"more":C]}
//                                                         in pages: resources.h
//   {"op":"stats","device":N[,"reset":true]}          -> {"ok":true,"stats":{counter:value,..},
//                                                         "congestion":{"enabled":..,"qps":[..]
//                                                         [,"more_after":QPN]}
//                                                         [,"model":[..],"trace":..]} (reset: a
//                                                         model device's figures start again)
//   {"op":"stats","device":N,"qps_after":QPN}          -> {"ok":true,"congestion":{..}}: the
//                                                         congestion list's next page
//   {"op":"shutdown"}
//   {"op":"open_context","device":N}                  -> {"ok":true,"ctx_id":..,"boot_domain":..,
//                                                         "daemon_pid":..} + fds [context page,
//                                                         BAR0 global area, interrupt eventfd,
//                                                         command doorbell eventfd, engine
//                                                         wake eventfd (hw-spec 3.4)]
//     The connection then belongs to the context: when it closes (the process
//     exited or died), the daemon destroys the context and everything in it.
//   {"op":"cm_channel"}, {"op":"cm_*",...}             the connection manager (rdma_cm):
//                                                       see daemon/src/cm_service.h
//
// Every op's fields, their types and limits, and the descriptors it carries
// are declared once, in schema.cc; the daemon checks each request against
// them before acting on it (schema.h).
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace simnic::control {

using Json = nlohmann::json;

inline constexpr size_t kMaxMessageBytes = 1 << 20;
inline constexpr const char* kVersion = "0.1.0";

inline constexpr size_t kMaxFdsPerMessage = 8;

// One message on a SOCK_SEQPACKET socket, optionally with file descriptors
// (SCM_RIGHTS). Return an error message, or empty. Received descriptors are
// close-on-exec and belong to the caller.
std::string send_message(int fd, const Json& msg, const std::vector<int>& fds = {});
std::string recv_message(int fd, Json& msg, int timeout_ms, std::vector<int>* fds = nullptr);

// One message as it arrived, before it is parsed (what the daemon reads, so
// that it can answer each way a message can be wrong).
struct RawMessage {
    std::string bytes;       // at most kMaxMessageBytes
    std::vector<int> fds;    // SCM_RIGHTS descriptors, now the caller's (close-on-exec)
    bool too_long = false;   // the message was longer than kMaxMessageBytes: `bytes` is cut
    bool too_many_fds = false;  // more than kMaxFdsPerMessage: the kernel closed the rest
};
// The longest message `fd` can send now. A SOCK_SEQPACKET unix socket
// sends a message whole or not at all, and not one longer than its send
// buffer less the kernel's 32 bytes of bookkeeping: with Linux's default
// buffer (net.core.wmem_default, 208 KiB) that is far below
// kMaxMessageBytes, and a longer message fails with EMSGSIZE.
size_t message_capacity(int fd);
// Asks for a send buffer that holds a message of kMaxMessageBytes. An
// unprivileged process is granted at most twice net.core.wmem_max (416 KiB
// by default), so a sender of long messages bounds them by
// message_capacity, not by kMaxMessageBytes.
void widen_send_buffer(int fd);
// Sends `bytes` as one message with `fds` (SCM_RIGHTS), as they are: no size
// or descriptor limit, so that tests and fuzzers can send what send_message
// refuses to. `flags` are sendmsg's (MSG_NOSIGNAL is always added). 0, or
// sendmsg's errno (EMSGSIZE also when only part went out).
int send_raw(int fd, const std::string& bytes, const std::vector<int>& fds = {}, int flags = 0);
// 0 with `m` filled; ETIMEDOUT; ECONNRESET when the peer closed (a zero-length
// read, which SOCK_SEQPACKET cannot tell from an empty message); or recvmsg's
// errno. Descriptors are taken even when the message is bad.
int recv_raw(int fd, RawMessage& m, int timeout_ms);
// Empty if `bytes` is one JSON object (then in `out`), else why not.
std::string parse_message(const std::string& bytes, Json& out);

Json reply_ok();
Json reply_error(int err, const std::string& message);

}  // namespace simnic::control
