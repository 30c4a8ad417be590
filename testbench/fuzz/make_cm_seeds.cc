// Writes the CM fuzzer's seed corpus into DIR: the scenarios rdma_cm really
// runs over QP1 (cm_input.h), from which the fuzzing engine reaches the
// rest: a passive and an active RC connection through to their disconnect,
// both sides of SIDR, rejects on either side, retries running out, a DREQ
// crossing ours after the application destroyed its ID, MADs of the
// attributes simnic does not answer, a raw and a truncated one.
#include <vector>

#include "cm_input.h"

using namespace simnic::fuzz::cm_input;

namespace {

// Handles: the IDs in the order the application got them (created, then
// CONNECT_REQUEST's). Sent: the agent's MADs in the order it sent them.
Writer passive_rc() {
    Writer w;
    w.op(Create).u8(0).u8(0);
    w.op(Listen).u8(0).u8(0).u8(0);
    w.mad(Req, 0, kFlagWrongIds, 0x1000, 0x11, 0x33, 0x04, 1, 1);  // -> handle 1
    w.op(Accept).u8(1).u8(0x21).u8(1).u8(1).u8(8);                 // REP: sent 0
    w.mad(Rtu, 0);
    w.mad(Dreq, 0);
    w.op(Disconnect).u8(1);  // DREP: sent 1
    w.op(Destroy).u8(1);
    return w;
}

// rdma_notify: the RTU is late, the application reports the QP's first
// packet (COMM_EST), then the RTU comes and changes nothing.
Writer passive_notify() {
    Writer w;
    w.op(Create).u8(0).u8(0);
    w.op(Listen).u8(0).u8(0).u8(0);
    w.mad(Req, 0, kFlagWrongIds, 0x1002, 0x13, 0x34, 0x04, 1, 1);  // -> handle 1
    w.op(Notify).u8(1).u8(4);                                       // REQ_RCVD: EINVAL
    w.op(Accept).u8(1).u8(0x22).u8(1).u8(1).u8(0);                 // REP: sent 0
    w.op(Notify).u8(1).u8(4);                                       // ESTABLISHED
    w.op(Notify).u8(1).u8(4);                                       // EISCONN
    w.op(Notify).u8(1).u8(6);
    w.mad(Rtu, 0);
    w.op(Time).u8(200);
    return w;
}

// rdma_set_option: two reusing IDs on one port, then one listens; an
// AF-only one; the active side's ACK timeout and a route from a path record
// (IB_PATH), with a ToS on its MADs.
Writer options() {
    Writer w;
    w.op(Create).u8(0).u8(0);
    w.op(Create).u8(0).u8(0);
    w.op(SetOption).u8(0).u8(0).u8(1);  // REUSEADDR
    w.op(SetOption).u8(1).u8(0).u8(1);
    w.op(SetOption).u8(1).u8(1).u8(1);  // AFONLY
    w.op(Listen).u8(0).u8(0).u8(1);
    w.op(Listen).u8(1).u8(0).u8(1);
    w.op(Create).u8(0).u8(1);
    w.op(SetOption).u8(2).u8(2).u8(14);    // ACK_TIMEOUT
    w.op(SetOption).u8(2).u8(3).u8(0x23);  // IB_PATH before the address: EINVAL
    w.op(Connect).u8(2).u8(0).u8(0).u8(0x10).u8(0);
    w.op(SetOption).u8(2).u8(4).u8(0x20);  // ToS
    return w;
}

Writer active_rc() {
    Writer w;
    w.op(Create).u8(0).u8(1);
    w.op(Connect).u8(0).u8(0).u8(0).u8(0x10).u8(4);  // REQ: sent 0
    w.mad(Rep, 0, 0, 0x2000, 0x22, 7, 0, 1, 1);
    w.op(Establish).u8(0);   // RTU: sent 1
    w.op(Disconnect).u8(0);  // DREQ: sent 2
    w.mad(Drep, 2);
    w.op(Time).u8(50);
    return w;
}

// The application destroys its established ID (rping's client does so right
// after rdma_disconnect); the peer's DREQ crosses ours.
Writer crossing_dreq() {
    Writer w;
    w.op(Create).u8(0).u8(1);
    w.op(Connect).u8(0).u8(0).u8(0).u8(0x10).u8(0);
    w.mad(Rep, 0, 0, 0x3000, 0x33, 7, 0, 1, 1);
    w.op(Establish).u8(0);
    w.op(Destroy).u8(0);  // DREQ: sent 2, the ID an orphan
    w.mad(Dreq, 2);
    return w;
}

Writer passive_dreq_crossing() {
    Writer w;
    w.op(Create).u8(0).u8(0);
    w.op(Listen).u8(0).u8(1).u8(1);
    w.mad(Req, 0, kFlagWrongIds | kFlagOtherPort, 0x1001, 0x12, 0x53, 0, 2, 2);
    w.op(Accept).u8(1).u8(0x21).u8(1).u8(1).u8(0);
    w.mad(Rtu, 0);
    w.op(Disconnect).u8(1);  // DREQ: sent 1
    w.mad(Dreq, 1);
    w.mad(Drep, 1);
    w.op(DestroyChannel).u8(0);
    return w;
}

Writer sidr_passive() {
    Writer w;
    w.op(Create).u8(1).u8(2);
    w.op(Listen).u8(0).u8(0).u8(0);
    w.mad(SidrReq, 0, kFlagWrongIds | kFlagUdpPs, 0x4000);  // -> handle 1
    w.mad(SidrReq, 0, kFlagWrongIds | kFlagUdpPs, 0x4000);  // repeated
    w.op(Accept).u8(1).u8(0x44).u8(0).u8(0).u8(3);          // SIDR_REP: sent 0
    w.mad(SidrReq, 0, kFlagWrongIds | kFlagUdpPs, 0x4000);  // repeated: answered again
    w.op(Destroy).u8(1);
    return w;
}

Writer sidr_active() {
    Writer w;
    w.op(Create).u8(1).u8(0);
    w.op(Connect).u8(0).u8(0).u8(0).u8(1).u8(2);  // SIDR_REQ: sent 0
    w.mad(SidrRep, 0, 0, 0x5000, 0x55, 0, 1);
    w.op(Create).u8(1).u8(0);
    w.op(Connect).u8(1).u8(1).u8(1).u8(2).u8(0);
    w.mad(SidrRep, 1, 0, 0x5001, 0x56, 0, 0);  // the wrong Q_Key
    return w;
}

Writer rejects() {
    Writer w;
    w.op(Create).u8(0).u8(0);
    w.op(Connect).u8(0).u8(0).u8(0).u8(1).u8(0);  // REQ: sent 0
    w.mad(Rej, 0, 0, 0x6000, 0, 0, 28);           // the peer rejects our REQ
    w.op(Create).u8(0).u8(1);
    w.op(Listen).u8(1).u8(1).u8(0);
    w.mad(Req, 0, kFlagWrongIds | kFlagOtherPort, 0x6001, 0x61, 0x33);  // -> handle 2
    w.op(Reject).u8(2).u8(4);
    w.mad(Req, 0, kFlagWrongIds, 0x6002, 0x62, 0x33);  // no one listens on that port: REJ
    return w;
}

Writer timeouts() {
    Writer w;
    w.op(Create).u8(0).u8(0);
    w.op(Connect).u8(0).u8(0).u8(0).u8(1).u8(0);
    for (int i = 0; i < 6; ++i) w.op(Time).u8(20);
    w.op(Create).u8(1).u8(0);
    w.op(Connect).u8(1).u8(0).u8(0).u8(1).u8(0);
    for (int i = 0; i < 6; ++i) w.op(Time).u8(20);
    return w;
}

Writer others() {
    Writer w;
    w.op(Create).u8(0).u8(0);
    w.op(Connect).u8(0).u8(0).u8(0).u8(1).u8(0);
    w.mad(Mra, 0);
    w.mad(Lap, 0);
    w.mad(Apr, 0);
    w.mad(Unknown, 0, 0, 0, 0, 5);
    // A REP cut short after its header.
    w.op(Mad).u8(Rep).u8(0).u8(0).u8(0).u32(0x7000).u32(0x71).u8(0).u8(0).u8(0).u8(0).u8(0).u8(30);
    w.op(RemovePort).u8(0);
    w.op(Migrate).u8(0).u8(2);
    return w;
}

Writer raw() {
    Writer w;
    w.op(Create).u8(0).u8(0);
    w.op(Listen).u8(0).u8(0).u8(0);
    w.op(Mad).u8(Raw).u8(0).u8(0).u8(0).u32(0).u32(0).u8(0).u8(0).u8(0).u8(0);
    // A CM header (base version 1, class 7, version 2, SEND, attribute REQ).
    const std::uint8_t hdr[24] = {1, 7, 2, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0x10, 0, 0, 0, 0, 0, 0};
    for (int i = 0; i < 256; ++i) w.u8(i < 24 ? hdr[i] : std::uint8_t(i * 7));
    w.u8(0).u8(0);
    return w;
}

}  // namespace

int main(int argc, char** argv) {
    const std::vector<std::pair<const char*, Writer>> seeds = {
        {"passive_rc", passive_rc()},       {"active_rc", active_rc()}, {"crossing_dreq", crossing_dreq()},
        {"passive_dreq_crossing", passive_dreq_crossing()}, {"sidr_passive", sidr_passive()},
        {"sidr_active", sidr_active()},     {"rejects", rejects()},     {"timeouts", timeouts()},
        {"others", others()},               {"raw", raw()},             {"passive_notify", passive_notify()},
        {"options", options()}};
    return simnic::fuzz::write_seed_files(argc, argv, seeds);
}
