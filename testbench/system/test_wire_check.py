#!/usr/bin/env python3
"""wire_check.py's IP identification rule on hand-built captures: UD SEND
ONLY frames from one device to another (ARP first, valid ICRCs, rxe's UD
source port), whose IDs count up; a frame a few IDs behind the highest
(overtaken by another QP's frames, as kernel rxe's fq_codel and the model's
pipeline do) passes; a repeated ID, one too far behind, and a flow starting
at 0 fail."""

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


def roce_ud(ipid):
    bth = bytes([0x64, 0, 0xFF, 0xFF]) + struct.pack(">I", 0x11) + struct.pack(">I", 7)
    deth = struct.pack(">II", 0x11111111, QPN)
    payload = bytes(range(16))
    l4_len = 8 + len(bth) + len(deth) + len(payload) + 4
    iph = bytearray(struct.pack(">BBHHHBBH4s4s", 0x45, 0, 20 + l4_len, ipid, 0x4000, 64, 17, 0,
                                IP_A, IP_B))
    udp = struct.pack(">HHHH", ud_sport(QPN), 4791, l4_len, 0)
    m_ip = bytearray(iph)
    m_ip[1] = m_ip[8] = m_ip[10] = m_ip[11] = 0xFF
    m_udp = bytearray(udp)
    m_udp[6] = m_udp[7] = 0xFF
    m_bth = bytearray(bth)
    m_bth[4] = 0xFF
    crc = zlib.crc32(b"\xff" * 8 + bytes(m_ip) + bytes(m_udp) + bytes(m_bth) + deth + payload)
    return MAC_B + MAC_A + b"\x08\x00" + bytes(iph) + udp + bth + deth + payload + struct.pack("<I", crc)


def check(ids):
    frames = [arp_reply(MAC_B, IP_B, MAC_A, IP_A)] + [roce_ud(i) for i in ids]
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
        # (a long run in order after, as most of a real flow is)
        ("frames 1-3 behind (overtaken)", [0x100, 0x101, 0x105, 0x102, 0x103, 0x104]
         + list(range(0x106, 0x140)), 0, "3 overtaken"),
        ("across the 16-bit wrap", list(range(0xFFF0, 0x10000)) + [0x0001, 0x0000]
         + list(range(2, 0x20)), 0, "1 overtaken"),
        ("a repeated ID", [0x100, 0x101, 0x102, 0x101, 0x103], 1, "repeats"),
        ("a frame 20 behind", [0x100, 0x120, 0x10C], 1, "IP identification 0x010c after 0x0120"),
        ("a flow starting at 0", [0, 1, 2], 1, "IP identification 0 "),
    ]
    bad = 0
    for what, ids, want_rc, want in cases:
        rc, out = check(ids)
        ok = rc == want_rc and want in out
        bad += not ok
        print(f"{'ok  ' if ok else 'FAIL'} {what}: rc {rc}: {out}")
    if bad:
        sys.exit(f"{bad} cases failed")


if __name__ == "__main__":
    main()
