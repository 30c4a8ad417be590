#!/usr/bin/env python3
"""wire_check.py [--cm] [--arp-for A.B.C.D] PCAP: checks a capture of a wire (`simnic wire --pcap`)
against kernel rxe's wire rules (docs/rxe-wire-rules.md), independently of
simnic's packet core (Python's zlib for the ICRC):

  - every RoCE v2 frame (IPv4, UDP 4791) has a valid ICRC, DF set, TTL 64,
    TOS 0 and UDP checksum 0;
  - per source and destination the IP identification counts up from a
    non-zero start and never repeats (so never 0 twice: a 16-bit field of a
    wider counter passes 0 now and then); per UDP source port (per QP) it
    only goes up (the frames of several QPs overtake each other between the
    ID and the wire); exactly 1 between consecutive frames of one source
    port less than a millisecond apart in at least 90% of cases
    (the kernel's rule: one per packet, a jump below the jiffies of a pause);
  - before a device's first RoCE frame to a peer, an ARP frame on the wire
    has told the peer's MAC for its address (ARP precedes RoCE); with
    --arp-for, only for flows to or from that address (the rig's VMs know
    each other from static neighbour entries and never ARP for each other);
  - AckReq on the last packet of every RC request message, inside one only
    after more than 64 packets without (rxe's RXE_MAX_PKT_PER_ACK), never on
    UC packets or responses (UD SENDs on QP1 carry it); ACK syndrome 0x1F;
  - UDP source ports: RC/UC frames from the fold of the QPN product (rxe's
    rule for a QP given an address vector without a flow label), UD frames
    (and QP1's) from 0xC000 + hash_32(own QPN, 14). With --cm (rdma_cm
    connections) the RC ports are cm_pcap_check's business and not checked.

Prints a summary; exits 1 with the first broken rule."""

import struct
import sys
import zlib


# RC request opcodes that end a message (SEND/WRITE LAST and ONLY, with
# immediate or invalidate, READ request, both atomics, 6.12's FLUSH and
# ATOMIC WRITE), the other RC requests, and the opcodes with an AETH.
RC_LAST = {0x02, 0x03, 0x04, 0x05, 0x08, 0x09, 0x0A, 0x0B, 0x0C, 0x13, 0x14, 0x16, 0x17, 0x1C, 0x1D}
RC_NOT_LAST = {0x00, 0x01, 0x06, 0x07}
AETH_OPCODES = {0x0D, 0x0F, 0x10, 0x11, 0x12}
# What an RC responder sends: READ RESPONSE FIRST/MIDDLE/LAST/ONLY, ACK,
# ATOMIC ACKNOWLEDGE.
RESPONSE_OPCODES = {0x0D, 0x0E, 0x0F, 0x10, 0x11, 0x12}
# rxe asks for an ACK inside a long message too, once more than this many
# packets went without (RXE_MAX_PKT_PER_ACK; simnic's kMaxPktsPerAck).
MAX_PKTS_PER_ACK = 64

def frames(path):
    with open(path, "rb") as f:
        hdr = f.read(24)
        if len(hdr) < 24 or struct.unpack("<I", hdr[:4])[0] != 0xA1B2C3D4:
            sys.exit(f"FAIL: {path} is not a microsecond pcap")
        while True:
            h = f.read(16)
            if len(h) < 16:
                return
            ts, us, n, _ = struct.unpack("<IIII", h)
            yield ts * 1_000_000 + us, f.read(n)


def icrc_ok(d, l3, l4, end):
    """CRC-32 over 8 bytes of 0xFF, the IPv4 header with TOS, TTL and checksum
    masked, the UDP header with its checksum masked, the BTH with byte 4
    masked, and the rest up to the ICRC (little-endian on the wire)."""
    ip = bytearray(d[l3:l4])
    ip[1] = 0xFF
    ip[8] = 0xFF
    ip[10] = ip[11] = 0xFF
    udp = bytearray(d[l4:l4 + 8])
    udp[6] = udp[7] = 0xFF
    bth = bytearray(d[l4 + 8:l4 + 20])
    bth[4] = 0xFF
    crc = zlib.crc32(b"\xff" * 8 + bytes(ip) + bytes(udp) + bytes(bth) + d[l4 + 20:end - 4])
    return crc == struct.unpack("<I", d[end - 4:end])[0]


def fold(fl):
    return 0xC000 | ((fl & 0x3FFF) ^ ((fl & 0xFC000) >> 14))


def qpn_sport(a, b):
    v = a * b
    v ^= v >> 20
    v ^= v >> 40
    return fold(v & 0xFFFFF)


def ud_sport(qpn):
    return 0xC000 + (((qpn * 0x61C88647) & 0xFFFFFFFF) >> 18)


def ip(b):
    return ".".join(str(x) for x in b)


def main():
    args = sys.argv[1:]
    cm = "--cm" in args
    args = [a for a in args if a != "--cm"]
    arp_for = None
    if "--arp-for" in args:
        i = args.index("--arp-for")
        if i + 1 >= len(args):
            sys.exit(__doc__)
        arp_for = bytes(int(x) for x in args[i + 1].split("."))
        del args[i:i + 2]
    if len(args) != 1:
        sys.exit(__doc__)
    roce = []   # (n, ts, src, dst, smac, dmac, id, sport, opcode, dqpn, deth_src_qp)
    arp = []    # (n, spa, sha)
    n = 0
    for ts, d in frames(args[0]):
        n += 1
        if len(d) < 14:
            continue
        et = d[12:14]
        if et == b"\x08\x06" and len(d) >= 42:
            arp.append((n, d[28:32], d[22:28]))
            continue
        if et != b"\x08\x00" or len(d) < 34 or d[23] != 17:
            continue
        l3 = 14
        ihl = (d[l3] & 15) * 4
        l4 = l3 + ihl
        if len(d) < l4 + 8 or struct.unpack(">H", d[l4 + 2:l4 + 4])[0] != 4791:
            continue
        total = struct.unpack(">H", d[l3 + 2:l3 + 4])[0]
        end = l3 + total
        what = f"frame {n}"
        if ihl != 20 or end > len(d) or end < l4 + 8 + 12 + 4:
            sys.exit(f"FAIL: {what}: malformed")
        if not icrc_ok(d, l3, l4, end):
            sys.exit(f"FAIL: {what}: bad ICRC")
        ipid, frag = struct.unpack(">HH", d[l3 + 4:l3 + 8])
        if frag != 0x4000:
            sys.exit(f"FAIL: {what}: flags/fragment 0x{frag:04x}, not DF")
        if d[l3 + 8] != 64 or d[l3 + 1] != 0:
            sys.exit(f"FAIL: {what}: TTL {d[l3 + 8]}, TOS {d[l3 + 1]} (rxe with the tools' defaults: 64, 0)")
        if d[l4 + 6:l4 + 8] != b"\x00\x00":
            sys.exit(f"FAIL: {what}: UDP checksum not 0")
        bth = l4 + 8
        opcode = d[bth]
        dqpn = struct.unpack(">I", b"\x00" + d[bth + 5:bth + 8])[0]
        src_qp = struct.unpack(">I", b"\x00" + d[bth + 17:bth + 20])[0] if opcode >> 5 == 3 else None
        psn = struct.unpack(">I", d[bth + 8:bth + 12])[0] & 0xFFFFFF
        ack_req = bool(d[bth + 8] & 0x80)
        syndrome = d[bth + 12] if opcode in AETH_OPCODES and end >= bth + 16 + 4 else None
        roce.append((n, ts, d[l3 + 12:l3 + 16], d[l3 + 16:l3 + 20], d[6:12], d[0:6], ipid,
                     struct.unpack(">H", d[l4:l4 + 2])[0], opcode, dqpn, src_qp, psn, ack_req,
                     syndrome))
    if not roce:
        sys.exit("FAIL: no RoCE frames")

    # IP identification, per source and destination. The sender draws the ID
    # when it builds a packet, from one counter per source and destination;
    # packets of different QPs (different UDP source ports) can then overtake
    # each other on the way to the wire (kernel rxe: the netdev's fq_codel
    # queues each UDP flow on its own and serves them in turn), by as many
    # frames as a QP had queued. One QP's requests and its responses (ACKs,
    # READ and atomic responses) leave from the same port but are built by
    # two tasks (rxe_requester, rxe_responder) that may run at once on two
    # CPUs: between them too a frame can overtake (seen: kernel 6.1's rping
    # between the rig's two VMs, 0xabac after 0xabad). So: never a repeat
    # per source and destination, strictly increasing per source port and
    # role; and exactly one apart in most close pairs of consecutive frames
    # from one port.
    high, recent, last, steps, close, close_ones, behind = {}, {}, {}, 0, 0, 0, 0
    for f in roce:
        key, qkey = (f[2], f[3]), (f[2], f[3], f[7], f[8] in RESPONSE_OPCODES)
        # The counter is 32 bits wide and the field 16: it passes 0 once in
        # 65536 packets (the kernel does not skip it for IPv4), and a run's
        # capture, cut from a device's longer life, may begin just there
        # (seen: rig.interop612, a soft device's IDs 0, 1, 2, ...). What 0
        # tells apart is a device sending through a UDP socket with DF, whose
        # IDs are all 0: a second 0 within the repeat window, or a pair with
        # one frame whose ID is 0 (below).
        if f[6] == 0 and 0 in recent.get(key, ()):
            sys.exit(f"FAIL: frame {f[0]}: IP identification 0 again ({ip(f[2])} -> {ip(f[3])}): "
                     f"the kernel's ID for a DF packet from an unconnected UDP socket, not rxe's")
        if f[6] in recent.get(key, ()):
            sys.exit(f"FAIL: frame {f[0]}: IP identification 0x{f[6]:04x} repeats within "
                     f"{len(recent[key])} frames ({ip(f[2])} -> {ip(f[3])})")
        recent[key] = (recent.get(key, []) + [f[6]])[-1024:]
        if key in high:
            if (f[6] - high[key][6]) & 0xFFFF >= 0x8000:
                behind += 1
            else:
                high[key] = f
        else:
            high[key] = f
        # One apart: between consecutive frames of the pair from one port.
        p = last.get(key)
        if p is not None and p[7] == f[7] and (f[6] - p[6]) & 0xFFFF < 0x8000:
            steps += 1
            if f[1] - p[1] < 1000:
                close += 1
                close_ones += (f[6] - p[6]) & 0xFFFF == 1
        last[key] = f
        if qkey in high:
            p = high[qkey]
            if (f[6] - p[6]) & 0xFFFF >= 0x8000:
                sys.exit(f"FAIL: frame {f[0]}: IP identification 0x{f[6]:04x} after 0x{p[6]:04x} "
                         f"from the same source port {f[7]}, both {'responses' if qkey[3] else 'requests'} "
                         f"({ip(f[2])} -> {ip(f[3])})")
        high[qkey] = f
    for key, ids in recent.items():
        if ids == [0]:
            sys.exit(f"FAIL: IP identification 0 on the only frame from {ip(key[0])} to {ip(key[1])}")
    # (a rule about most frames: a handful of close pairs says nothing)
    if close >= 10 and close_ones < 0.9 * close:
        sys.exit(f"FAIL: only {close_ones} of {close} frames under 1 ms apart are one ID apart")

    # Acknowledgement (docs/rxe-wire-rules.md, "Acknowledgement"): AckReq on
    # the last packet of every RC request message; inside a message only
    # after more than MAX_PKTS_PER_ACK packets without it (counted per flow,
    # and not checked again after a resend until the next AckReq); never on
    # UC or on responses; a positive ACK's syndrome is 0x1F.
    last_ack, acks_inside, syndromes = {}, 0, 0
    for f in roce:
        op, flow = f[8], (f[2], f[3], f[9])
        if op in RC_LAST or op in RC_NOT_LAST:
            # A flow's first packet starts the count (a QP's life begins
            # with the capture's run); a resend makes it unknown.
            prev = last_ack.get(flow, ((f[11] - 1) & 0xFFFFFF, f[11]))
            if prev is not None and ((f[11] - prev[1]) & 0xFFFFFF) >= 0x800000:
                last_ack[flow] = prev = None  # a resend: the count starts over unknown
            if op in RC_LAST and not f[12]:
                sys.exit(f"FAIL: frame {f[0]}: RC opcode 0x{op:02x} ends a message without AckReq")
            if op in RC_NOT_LAST and f[12]:
                since = None if prev is None else (f[11] - prev[0]) & 0xFFFFFF
                if since is not None and since <= MAX_PKTS_PER_ACK:
                    sys.exit(f"FAIL: frame {f[0]}: AckReq inside a message {since} packets after the "
                             f"last (PSN {f[11]:#x}); rxe asks after more than {MAX_PKTS_PER_ACK}")
                acks_inside += 1
            if f[12]:
                last_ack[flow] = (f[11], f[11])
            elif prev is not None:
                last_ack[flow] = (prev[0], f[11])
            else:
                last_ack[flow] = None
        elif f[12] and not (op >> 5 == 3 and f[10] == 1):
            sys.exit(f"FAIL: frame {f[0]}: opcode 0x{op:02x} with AckReq")
        if op == 0x11 and f[13] is not None and f[13] >> 5 == 0:
            syndromes += 1
            if f[13] != 0x1F:
                sys.exit(f"FAIL: frame {f[0]}: ACK syndrome 0x{f[13]:02x}, rxe sends 0x1F")

    # ARP before RoCE: the sender knew its peer's MAC from an earlier ARP frame.
    seen = set()
    for f in roce:
        key = (f[2], f[3], f[5])
        if key in seen or (arp_for is not None and arp_for not in (f[2], f[3])):
            continue
        seen.add(key)
        if not any(a[0] < f[0] and a[1] == f[3] and a[2] == f[5] for a in arp):
            sys.exit(f"FAIL: frame {f[0]}: first RoCE frame {ip(f[2])} -> {ip(f[3])} with no earlier ARP "
                     f"telling {ip(f[3])} is at {f[5].hex(':')}")

    # UDP source ports.
    checked = 0
    dqpns = {}
    for f in roce:
        dqpns.setdefault((f[2], f[3]), set()).add(f[9])
    for f in roce:
        op = f[8]
        if op >> 5 == 3:  # UD
            if f[7] != ud_sport(f[10]):
                sys.exit(f"FAIL: frame {f[0]}: UD source port 0x{f[7]:04x}, not 0x{ud_sport(f[10]):04x}")
            checked += 1
        elif op >> 5 in (0, 1) and not cm:  # RC, UC
            back = dqpns.get((f[3], f[2]), set())
            if not any(f[7] == qpn_sport(lq, f[9]) for lq in back):
                sys.exit(f"FAIL: frame {f[0]}: source port 0x{f[7]:04x} is not rxe's for QPN {f[9]:#x} "
                         f"and any of {sorted(back)}")
            checked += 1
    print(f"ok: {n} frames, {len(roce)} RoCE with valid ICRCs, DF, TTL 64; IP IDs count up per flow "
          f"({steps} steps, {close_ones}/{close} one apart within 1 ms, {behind} overtaken); AckReq as rxe "
          f"({acks_inside} inside messages), {syndromes} ACKs with syndrome 0x1F; {len(arp)} ARP frames, each peer "
          f"told before its first RoCE frame; {checked} source ports by rxe's rules")


if __name__ == "__main__":
    main()
