#!/usr/bin/env python3
"""wire_check.py's rules on hand-built captures (ARP first, valid ICRCs,
rxe's source ports). IP identification, on UD SEND ONLY frames whose IDs
count up: a frame a few IDs behind the highest (overtaken by another QP's
frames, as kernel rxe's fq_codel and the model's pipeline do) passes; a
repeated ID, an ID below an earlier one of the same QP, and a flow starting
at 0 fail; two QPs' frames interleaved far from their IDs' order pass.
Acknowledgement, on an RC SEND and its ACK: AckReq on the last packet, and
inside a message only after more than 64 packets without; ACK syndrome
0x1F. One QP's ACK may reach the wire behind a request it built later
(rxe's requester and responder are two tasks); a request behind a later
request may not."""

import os
import struct
import subprocess
import sys
import tempfile
import zlib

HERE = os.path.dirname(os.path.realpath(__file__))
CHECK = os.path.join(HERE, "wire_check.py")
MAC_A, MAC_B = bytes.fromhex("020000000001"), bytes.fromhex("020000000002")
IP_A, IP_B = bytes([10, 0, 0, 1]), bytes([10, 0, 0, 2])
QPN = 0x11


def ud_sport(qpn):
    return 0xC000 + (((qpn * 0x61C88647) & 0xFFFFFFFF) >> 18)


def arp_reply(sha, spa, tha, tpa):
    return (tha + sha + b"\x08\x06" + struct.pack(">HHBBH", 1, 0x0800, 6, 4, 2)
            + sha + spa + tha + tpa)


def qpn_sport(a, b):
    v = a * b
    v ^= v >> 20
    v ^= v >> 40
    fl = v & 0xFFFFF
    return 0xC000 | ((fl & 0x3FFF) ^ ((fl & 0xFC000) >> 14))


def roce_ud(ipid, qpn=QPN):
    deth = struct.pack(">II", 0x11111111, qpn)
    return roce(0x64, 0x11, 7, False, ipid, deth + bytes(range(16)), ud_sport(qpn))


def roce(opcode, dqpn, psn, ack_req, ipid, rest, sport, a_to_b=True):
    """A RoCE v2 frame (BTH, then `rest`: extension headers and payload)."""
    src, dst = (IP_A, IP_B) if a_to_b else (IP_B, IP_A)
    smac, dmac = (MAC_A, MAC_B) if a_to_b else (MAC_B, MAC_A)
    bth = bytes([opcode, 0, 0xFF, 0xFF]) + struct.pack(">I", dqpn) + struct.pack(
        ">I", (0x80000000 if ack_req else 0) | psn)
    deth, payload = rest, b""
    l4_len = 8 + len(bth) + len(deth) + len(payload) + 4
    iph = bytearray(struct.pack(">BBHHHBBH4s4s", 0x45, 0, 20 + l4_len, ipid, 0x4000, 64, 17, 0,
                                src, dst))
    udp = struct.pack(">HHHH", sport, 4791, l4_len, 0)
    m_ip = bytearray(iph)
    m_ip[1] = m_ip[8] = m_ip[10] = m_ip[11] = 0xFF
    m_udp = bytearray(udp)
    m_udp[6] = m_udp[7] = 0xFF
    m_bth = bytearray(bth)
    m_bth[4] = 0xFF
    crc = zlib.crc32(b"\xff" * 8 + bytes(m_ip) + bytes(m_udp) + bytes(m_bth) + deth + payload)
    return dmac + smac + b"\x08\x00" + bytes(iph) + udp + bth + deth + payload + struct.pack("<I", crc)


def rc_exchange(send_ack_req=True, syndrome=0x1F, middle_ack_req_at=None, n_middle=0):
    """A SEND from QP 0x11 on A to QP 0x12 on B (FIRST, n_middle MIDDLEs,
    LAST, or ONLY), and B's ACK."""
    port = qpn_sport(0x11, 0x12)
    frames, psn = [], 100
    ops = [0x04] if not n_middle else [0x00] + [0x01] * n_middle + [0x02]
    for i, op in enumerate(ops):
        last = i == len(ops) - 1
        frames.append(roce(op, 0x12, psn, send_ack_req if last else i == middle_ack_req_at,
                           0x200 + i, bytes(16) if op != 0x01 else bytes(1024), port))
        psn += 1
    aeth = bytes([syndrome]) + (1).to_bytes(3, "big")
    frames.append(roce(0x11, 0x11, psn - 1, False, 0x300, aeth, port, a_to_b=False))
    return frames


def request_and_response(second_is_ack=True):
    """QP 0x11 on A sends a SEND ONLY (ID 0x201) and, built a moment
    earlier by its responder, the ACK of B's SEND (ID 0x200), which reaches
    the wire after it: one port, two roles. With second_is_ack False both
    are requests, and the second one's ID is below the first's."""
    port = qpn_sport(0x11, 0x12)
    aeth = bytes([0x1F]) + (1).to_bytes(3, "big")
    frames = [roce(0x04, 0x11, 50, True, 0x500, bytes(16), port, a_to_b=False),
              roce(0x04, 0x12, 100, True, 0x201, bytes(16), port)]
    frames.append(roce(0x11, 0x12, 50, False, 0x200, aeth, port) if second_is_ack
                  else roce(0x04, 0x12, 101, True, 0x200, bytes(16), port))
    frames.append(roce(0x11, 0x11, 100 if second_is_ack else 101, False, 0x501, aeth, port, a_to_b=False))
    return frames


def check(ids=None, frames=None):
    frames = [arp_reply(MAC_B, IP_B, MAC_A, IP_A), arp_reply(MAC_A, IP_A, MAC_B, IP_B)] + (
        frames if frames is not None else [roce_ud(i) for i in ids])
    fd, path = tempfile.mkstemp(suffix=".pcap")
    with os.fdopen(fd, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
        for n, d in enumerate(frames):
            f.write(struct.pack("<IIII", 1000, 10 * n, len(d), len(d)) + d)
    r = subprocess.run([sys.executable, CHECK, path], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True)
    os.unlink(path)
    return r.returncode, r.stdout.strip()


def main():
    cases = [
        ("in order", list(range(0x100, 0x120)), 0, "0 overtaken"),
        ("across the 16-bit wrap, 0 included", list(range(0xFFF0, 0x10000)) + list(range(0, 0x20)), 0,
         "47/47 one apart"),
        ("a repeated ID", [0x100, 0x101, 0x102, 0x101, 0x103], 1, "repeats"),
        ("a frame 12 behind from the same QP", [0x100, 0x120, 0x10C], 1,
         "IP identification 0x010c after 0x0120 from the same source port"),
        # Two QPs whose frames interleave after their IDs were drawn in
        # bursts of 20 (fq_codel serving two flows in turn): far behind the
        # pair's highest, in order per QP.
        ("two QPs' bursts interleaved", [roce_ud(0x100 + i, 0x11) if k == 0 else roce_ud(0x114 + i, 0x12)
                                         for i in range(20) for k in (0, 1)], 0, "19 overtaken"),
        # A run's capture may begin where the 16-bit ID wraps; a device whose
        # IDs are all 0 (a UDP socket with DF) is not rxe.
        ("a capture starting at the wrap", [0, 1, 2], 0, "2/2 one apart"),
        ("every ID 0", [0, 0, 0], 1, "IP identification 0 again"),
        ("one frame, ID 0", [0], 1, "IP identification 0 on the only frame"),
    ]
    cases += [
        ("an RC SEND and its ACK", rc_exchange(), 0, "1 ACKs with syndrome 0x1F"),
        ("an RC SEND ONLY without AckReq", rc_exchange(send_ack_req=False), 1,
         "ends a message without AckReq"),
        ("an ACK with syndrome 0x00", rc_exchange(syndrome=0x00), 1, "ACK syndrome 0x00"),
        ("AckReq inside a message after 70 packets", rc_exchange(n_middle=80, middle_ack_req_at=70),
         0, "(1 inside messages)"),
        ("AckReq inside a message after 10 packets", rc_exchange(n_middle=80, middle_ack_req_at=10),
         1, "AckReq inside a message"),
        # rxe's requester and responder are two tasks: one QP's ACK may
        # reach the wire after a request built after it; two requests may not.
        ("a QP's ACK behind its own later request", request_and_response(), 0, "1 overtaken"),
        ("a QP's request behind its own later request", request_and_response(False), 1,
         "from the same source port 49"),
    ]
    bad = 0
    for what, ids, want_rc, want in cases:
        rc, out = check(frames=ids) if ids and isinstance(ids[0], bytes) else check(ids)
        ok = rc == want_rc and want in out
        bad += not ok
        print(f"{'ok  ' if ok else 'FAIL'} {what}: rc {rc}: {out}")
    if bad:
        sys.exit(f"{bad} cases failed")


if __name__ == "__main__":
    main()
