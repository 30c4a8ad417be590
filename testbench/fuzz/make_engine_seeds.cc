// Writes the receive-path fuzzer's seed corpus into DIR (engine_input.h):
// the exchanges a peer really has with the device's QPs, one file each, so
// that the fuzzing engine starts from frames every check of the receive
// path accepts: SENDs, WRITEs, READs and atomics to an RC QP at its expected
// PSN, a message of three packets, the ACKs, READ responses, atomic ACKs and
// NAKs for the requests outstanding on QP slot 0, UC and UD traffic (on the
// SRQ too), frames for QPs in RTR, INIT, ERR and RESET and for no QP, keys
// without the right, a deregistered MR, a QP destroyed while its frames
// arrive, timers, a corrupted ICRC, raw bytes.
#include <vector>

#include "engine_input.h"
#include "simnic/roce/opcode.h"

using namespace simnic::fuzz::engine_input;
namespace op = simnic::roce::op;
using F = Writer::F;

namespace {

// Keys: MR << 3 | kind (kind 0..5: the MR's key; 6 raw; 7 zero). MRs: 0 A
// (every right), 1 B (REMOTE_READ), 2 C (LOCAL_WRITE), 3 E (REMOTE_WRITE),
// 4 R (LOCAL_WRITE, unused), 5 D (deregistered).
constexpr std::uint8_t key(std::uint8_t mr) { return static_cast<std::uint8_t>(mr << 3 | mr); }

F to(std::uint8_t slot, std::uint8_t opcode, std::uint16_t len = 0) {
    F f;
    f.slot = slot;
    f.opcode = opcode;
    f.len = len;
    f.f2 = kF2SameTransport;
    f.f1 = kF1AckReq;
    return f;
}

Writer rc_requests() {
    Writer w;
    w.frame(to(1, op::RC_SEND_ONLY, 100));
    F wr = to(1, op::RC_RDMA_WRITE_ONLY, 100);
    wr.key = key(0);
    wr.dma_len = 100;
    w.frame(wr);
    F rd = to(1, op::RC_RDMA_READ_REQUEST);
    rd.key = key(1);
    rd.dma_len = 2048;
    w.frame(rd);
    F cs = to(1, op::RC_COMPARE_SWAP);
    cs.key = key(0);
    cs.va_off = 128;
    w.frame(cs);
    F fa = to(1, op::RC_FETCH_ADD);
    fa.key = key(0);
    fa.va_off = 136;
    w.frame(fa);
    F imm = to(1, op::RC_SEND_ONLY_WITH_IMMEDIATE, 8);
    imm.x = 0xdeadbeef;
    w.frame(imm);
    F dup = to(1, op::RC_SEND_ONLY, 100);  // a duplicate: ACKed again
    dup.psn_delta = -1;
    w.frame(dup);
    return w;
}

Writer rc_message() {
    Writer w;
    for (std::uint8_t o : {op::RC_SEND_FIRST, op::RC_SEND_MIDDLE, op::RC_SEND_LAST}) {
        w.frame(to(1, o, 1024));
    }
    F wf = to(3, op::RC_RDMA_WRITE_FIRST, 1024);
    wf.key = key(3);
    wf.dma_len = 1500;
    w.frame(wf);
    w.frame(to(3, op::RC_RDMA_WRITE_LAST_WITH_IMMEDIATE, 476));
    return w;
}

Writer rc_responses() {
    Writer w;
    // Slot 0's requests: SEND (1 PSN), READ of 512 (1), CMP_AND_SWP (1),
    // SEND of 2000 (2), FETCH_AND_ADD (1), from its initial send PSN.
    F ack = to(0, op::RC_ACKNOWLEDGE);
    ack.psn_mode = 2;
    ack.syndrome = 0x1f;
    w.frame(ack);
    F rr = to(0, op::RC_RDMA_READ_RESPONSE_ONLY, 512);
    rr.psn_mode = 2;
    rr.psn_delta = 1;
    w.frame(rr);
    F aa = to(0, op::RC_ATOMIC_ACKNOWLEDGE);
    aa.psn_mode = 2;
    aa.psn_delta = 2;
    aa.compare = 0x1234;
    w.frame(aa);
    F rnr = to(0, op::RC_ACKNOWLEDGE);
    rnr.psn_mode = 2;
    rnr.psn_delta = 3;
    rnr.syndrome = 0x20 | 12;  // RNR NAK
    w.frame(rnr);
    w.op(Timers);
    F nak = to(0, op::RC_ACKNOWLEDGE);
    nak.psn_mode = 2;
    nak.psn_delta = 3;
    nak.syndrome = 0x60;  // NAK: PSN sequence error
    w.frame(nak);
    F last = to(0, op::RC_ACKNOWLEDGE);
    last.psn_mode = 2;
    last.psn_delta = 5;
    w.frame(last);
    return w;
}

Writer rc_naks() {
    Writer w;
    F ra = to(0, op::RC_ACKNOWLEDGE);
    ra.psn_mode = 2;
    ra.syndrome = 0x62;  // remote access error
    w.frame(ra);
    F inv = to(1, op::RC_ACKNOWLEDGE);
    inv.psn_mode = 2;
    inv.syndrome = 0x61;
    w.frame(inv);
    w.op(Timers).op(Timers);
    return w;
}

Writer rights() {
    Writer w;
    F wb = to(1, op::RC_RDMA_WRITE_ONLY, 64);  // B has no REMOTE_WRITE
    wb.key = key(1);
    wb.dma_len = 64;
    w.frame(wb);
    F rc = to(2, op::RC_RDMA_READ_REQUEST);  // C has no REMOTE_READ
    rc.key = key(2);
    rc.dma_len = 64;
    w.frame(rc);
    F wd = to(3, op::RC_RDMA_WRITE_ONLY, 64);  // D is deregistered
    wd.key = key(5);
    wd.dma_len = 64;
    w.frame(wd);
    F ae = to(1, op::RC_COMPARE_SWAP);  // E has no REMOTE_ATOMIC
    ae.key = key(3);
    w.frame(ae);
    F past = to(1, op::RC_RDMA_WRITE_ONLY, 64);  // past A's end
    past.key = key(0);
    past.va_off = 8192 + 32;
    past.dma_len = 64;
    w.frame(past);
    F big = to(4, op::UC_RDMA_WRITE_ONLY, 64);  // a length larger than the MR
    big.key = key(3);
    big.dma_len = 0xFFFFFFF0u;
    big.f2 |= kF2RawLen;
    w.frame(big);
    return w;
}

Writer uc_ud() {
    Writer w;
    w.frame(to(4, op::UC_SEND_ONLY, 200));
    F wr = to(4, op::UC_RDMA_WRITE_ONLY, 64);
    wr.key = key(3);
    wr.dma_len = 64;
    w.frame(wr);
    w.frame(to(5, op::UC_SEND_FIRST, 1024));
    w.frame(to(6, op::UD_SEND_ONLY, 64));
    F udv6 = to(7, op::UD_SEND_ONLY_WITH_IMMEDIATE, 300);
    udv6.f1 = kF1Ipv6;
    w.frame(udv6);
    F badq = to(6, op::UD_SEND_ONLY, 64);
    badq.f2 |= kF2RawQkey;
    badq.x = 0x22222222;
    w.frame(badq);
    F ip = to(6, op::UD_SEND_ONLY, 64);
    ip.f1 = kF1AsIp;
    w.frame(ip);
    return w;
}

Writer states() {
    Writer w;
    for (std::uint8_t s : {2, 8, 9, 10, 11}) w.frame(to(s, op::RC_SEND_ONLY, 10));
    F none = to(kSlotRawQpn, op::RC_SEND_ONLY, 10);
    none.x = 0x123456;
    w.frame(none);
    w.frame(to(kSlotGsi, op::UD_SEND_ONLY, 256));
    return w;
}

Writer destroyed() {
    Writer w;
    w.frame(to(1, op::RC_SEND_FIRST, 1024));
    w.op(Destroy).u8(1);
    w.frame(to(1, op::RC_SEND_LAST, 10));
    w.op(ToErr).u8(4);
    w.frame(to(4, op::UC_SEND_ONLY, 10));
    w.op(Send).u8(3).u8(2);
    w.op(PostRecv).u8(3).op(PostRecv).u8(0xFF);
    w.op(Timers);
    return w;
}

Writer corrupt() {
    Writer w;
    // A SEND with one byte of its payload changed: a bad ICRC.
    F f = to(1, op::RC_SEND_ONLY, 100);
    w.op(Frame).u8(f.slot).u8(f.opcode).u8(0).u8(0).u8(0).u8(kF2SameTransport);
    w.u16(100).u8(0).u16(64).u32(0).u8(0).u32(0).u64(0).u64(0);
    w.u8(1).u16(80).u8(0xEE);
    // The same with its ICRC made valid again, and its BTH pad count changed.
    w.op(Frame).u8(f.slot).u8(f.opcode).u8(0).u8(0).u8(kF1FixIcrc).u8(kF2SameTransport);
    w.u16(100).u8(0).u16(64).u32(0).u8(0).u32(0).u64(0).u64(0);
    w.u8(1).u16(43).u8(0x30);
    // Raw bytes.
    w.op(Raw).u8(1).u16(80);
    for (int i = 0; i < 80; ++i) w.u8(static_cast<std::uint8_t>(i * 13));
    // Runts: an empty frame, a lone Ethernet header, a header and one byte
    // (each counted once as a bad header, on a soft and a model device alike).
    w.op(Raw).u8(0).u16(0);
    w.op(Raw).u8(0).u16(14);
    for (int i = 0; i < 14; ++i) w.u8(0);
    w.op(Raw).u8(0).u16(15);
    for (int i = 0; i < 15; ++i) w.u8(0x45);
    return w;
}

}  // namespace

int main(int argc, char** argv) {
    const std::vector<std::pair<const char*, Writer>> seeds = {
        {"rc_requests", rc_requests()}, {"rc_message", rc_message()}, {"rc_responses", rc_responses()},
        {"rc_naks", rc_naks()},         {"rights", rights()},         {"uc_ud", uc_ud()},
        {"states", states()},           {"destroyed", destroyed()},   {"corrupt", corrupt()}};
    return simnic::fuzz::write_seed_files(argc, argv, seeds);
}
