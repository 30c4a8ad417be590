#!/usr/bin/env python3
"""wire_fuzz.py: hostile RoCE v2 frames into a device on a wire (issue 12,
section 2). A member of a `simnic wire` that borrows the peer's MAC and
address and sends the device frames built for its QPs and MRs (from
hostile_target's description), each then broken in one way: any header field
(IPv4, UDP, BTH, RETH, AETH, AtomicETH, DETH, ImmDt), the lengths (IP total
length, UDP length, pad count, payload longer or shorter than the opcode or
the MTU allows), truncation at any byte, a bad ICRC, an opcode that is not
RC/UC/UD's, random bit flips; RETH and AtomicETH aim at the MRs' edges (just
before, across and just after, with right and wrong rkeys). Most frames carry
a valid ICRC so that they pass the ICRC check and reach the transport. With
--mad, also CM MADs to QP1 (the golden rping captures' MADs, mutated).
Frames are built here byte by byte, apart from simnic's packet core.

  wire_fuzz.py PORT DESCRIPTION --mac MAC --src-mac MAC --src-ip A --dst-ip A
               [--frames N] [--seed S] [--mad GOLDEN.pcap...]

Prints what it sent by kind. Exit 0 (the checks are the caller's: the
device alive, hostile_target's canaries, counters).
"""

import argparse
import random
import socket
import struct
import sys
import time
import zlib

# opcodes: RC 0x00-0x14, UC 0x20-0x2b, UD 0x64/0x65
RC_SEND = [0x00, 0x01, 0x02, 0x03, 0x04, 0x05]
RC_WRITE = [0x06, 0x07, 0x08, 0x09, 0x0A, 0x0B]
RC_READ_REQ = 0x0C
RC_READ_RESP = [0x0D, 0x0E, 0x0F, 0x10]
RC_ACK, RC_ATOMIC_ACK, RC_CMP_SWAP, RC_FETCH_ADD = 0x11, 0x12, 0x13, 0x14
RC_SEND_INV = [0x16, 0x17]
UD_SEND = [0x64, 0x65]


def csum(data):
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack(f">{len(data) // 2}H", data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return (~s) & 0xFFFF


def icrc(ip, udp, rest):
    """rxe's ICRC over the masked IPv4 and UDP headers, BTH and the rest."""
    ipm = bytearray(ip)
    ipm[1] = 0xFF
    ipm[8] = 0xFF
    ipm[10] = ipm[11] = 0xFF
    udpm = bytearray(udp)
    udpm[6] = udpm[7] = 0xFF
    b = bytearray(rest)
    b[4] = 0xFF
    return struct.pack("<I", zlib.crc32(b"\xff" * 8 + bytes(ipm) + bytes(udpm) + bytes(b)))


class Target:
    def __init__(self, path):
        self.qps, self.mrs = [], []
        for line in open(path):
            f = line.split()
            if f[0] == "qp":
                self.qps.append((int(f[1]), f[2], f[3], int(f[4])))
            elif f[0] == "mr":
                self.mrs.append((int(f[1]), int(f[2]), int(f[3]), int(f[4])))


class Fuzzer:
    def __init__(self, a, tgt):
        self.r = random.Random(a.seed)
        self.a, self.t = a, tgt
        self.dmac = bytes.fromhex(a.mac.replace(":", ""))
        self.smac = bytes.fromhex(a.src_mac.replace(":", ""))
        self.sip = socket.inet_aton(a.src_ip)
        self.dip = socket.inet_aton(a.dst_ip)
        self.ipid = 0
        self.counts = {}

    def note(self, k):
        self.counts[k] = self.counts.get(k, 0) + 1

    def addr(self):
        """An address near an MR's edges, or anywhere."""
        r = self.r
        va, ln, rkey, _ = r.choice(self.t.mrs)
        pick = r.random()
        if pick < 0.3:
            return va + r.choice([-4096, -64, -8, -1, 0, 8, ln - 64, ln - 8, ln - 1, ln, ln + 8, ln + 4096]), rkey
        if pick < 0.5:
            return va + r.randrange(0, ln), r.choice([rkey, rkey ^ 1, rkey + 0x100, 0, 0xFFFFFFFF])
        if pick < 0.6:
            return r.getrandbits(64), rkey
        return va + r.randrange(0, ln), rkey

    def transport(self):
        """A well-formed BTH and extension headers and payload for one of the
        target's QPs, which mutate() then breaks."""
        r = self.r
        qpn, typ, _, psn0 = r.choice(self.t.qps) if r.random() < 0.9 else (r.choice([1, 0, 0xFFFFFF, r.getrandbits(24)]), "RC", "", 0)
        if r.random() < 0.05 and self.a.mad_payloads:
            return self.mad()
        psn = (psn0 + r.choice([0, 0, 1, -1, 2, 100, -100, 1 << 23])) & 0xFFFFFF
        ext, payload = b"", b""
        if typ == "UD":
            op = r.choice(UD_SEND)
            ext = struct.pack(">II", r.choice([0x11111111, 0x11111111, 0x80010000, 0]), r.getrandbits(24))
            if op == 0x65:
                ext += struct.pack(">I", r.getrandbits(32))
            payload = bytes(r.getrandbits(8) for _ in range(r.choice([0, 1, 64, 1024, 1100])))
        else:
            ops = RC_SEND + RC_WRITE + [RC_READ_REQ] + RC_READ_RESP + [RC_ACK, RC_ATOMIC_ACK, RC_CMP_SWAP, RC_FETCH_ADD] + RC_SEND_INV
            op = r.choice(ops)
            if typ == "UC":
                op = 0x20 | (op & 0x1F) if op <= 0x0B else r.choice([0x20, 0x23, 0x24, 0x26, 0x29, 0x2A, 0x2B])
            low = op & 0x1F
            if low in (0x06, 0x0A, 0x0B, 0x0C):  # RETH: WRITE FIRST/ONLY(/IMM), READ request
                va, rkey = self.addr()
                ext = struct.pack(">QII", va & (2 ** 64 - 1), rkey, r.choice([0, 1, 8, 64, 1024, 4096, 4097, 65536, 2 ** 31]))
            if low in (0x13, 0x14) and typ == "RC":  # AtomicETH
                va, rkey = self.addr()
                ext = struct.pack(">QIQQ", va & (2 ** 64 - 1), rkey, r.getrandbits(64), r.getrandbits(64))
            if low in (0x0D, 0x0F, 0x10, 0x11, 0x12):  # AETH
                ext = struct.pack(">I", r.getrandbits(32))
            if low == 0x12:
                ext += struct.pack(">Q", r.getrandbits(64))
            if low in (0x03, 0x05, 0x09, 0x0B):  # ImmDt
                ext += struct.pack(">I", r.getrandbits(32))
            if low in (0x16, 0x17):  # IETH
                ext += struct.pack(">I", r.choice([self.t.mrs[0][2], r.getrandbits(32)]))
            if low not in (0x0C, 0x11, 0x13, 0x14):
                payload = bytes(r.getrandbits(8) for _ in range(r.choice([0, 1, 4, 64, 1023, 1024, 1025, 4096])))
        pad = (-len(payload)) & 3
        bth = struct.pack(">BBHII", op, pad << 4, 0xFFFF, qpn & 0xFFFFFF, (r.choice([0, 1]) << 31) | psn)
        return bth + ext + payload + b"\0" * pad

    def mad(self):
        """A CM MAD to QP1 (SEND_ONLY with DETH, GSI Q_Key) from the golden
        captures, mutated in one of its fields."""
        r = self.r
        m = bytearray(r.choice(self.a.mad_payloads))
        for _ in range(r.choice([0, 1, 1, 2, 8])):
            i = r.randrange(len(m))
            m[i] = r.getrandbits(8)
        if r.random() < 0.2:
            m = m[: r.randrange(len(m) + 1)]
        self.note("cm_mad")
        bth = struct.pack(">BBHII", 0x64, 0, 0xFFFF, 1, r.getrandbits(24))
        deth = struct.pack(">II", r.choice([0x80010000, 0x80010000, 0x11111111]), r.choice([1, r.getrandbits(24)]))
        pad = (-len(m)) & 3
        return bth + deth + bytes(m) + b"\0" * pad

    def frame(self):
        r = self.r
        rest = bytearray(self.transport())
        kind = r.choice(["valid", "field", "field", "field", "length", "truncate", "icrc", "opcode", "flips"])
        if kind == "field" and len(rest) > 12:
            i = r.randrange(len(rest) - (0 if r.random() < 0.5 else max(0, len(rest) - 40)))
            rest[i] = r.getrandbits(8)
        elif kind == "opcode":
            rest[0] = r.choice([0x15, 0x18, 0x1F, 0x2C, 0x40, 0x63, 0x66, 0x80, 0xFF, r.getrandbits(8)])
        elif kind == "length":
            if r.random() < 0.5 and len(rest) > 12:
                del rest[12 + r.randrange(len(rest) - 11):]
            else:
                rest += bytes(r.getrandbits(8) for _ in range(r.choice([1, 3, 4, 1500, 4200])))
            rest[1] = (rest[1] & 0xCF) | (r.getrandbits(2) << 4)  # pad count
        udp_len = 8 + len(rest) + 4
        ip_len = 20 + udp_len
        sport = 0xC000 | r.getrandbits(14)
        dport = 4791 if r.random() < 0.97 else r.choice([4790, 4792, 0])
        if kind == "length" and r.random() < 0.5:
            if r.random() < 0.5:
                udp_len = r.choice([0, 7, 8, udp_len - 1, udp_len + 1, 0xFFFF])
            else:
                ip_len = r.choice([0, 19, 20, ip_len - 1, ip_len + 1, 0xFFFF])
        self.ipid = (self.ipid + 1) & 0xFFFF
        ip = bytearray(struct.pack(">BBHHHBBH4s4s", 0x45, 0, ip_len & 0xFFFF, self.ipid, 0x4000, 64, 17, 0, self.sip, self.dip))
        if kind == "field" and r.random() < 0.2:  # an IPv4 field: version/IHL, flags, TTL, protocol
            i = r.choice([0, 6, 8, 9])
            ip[i] = r.getrandbits(8)
        ip[10:12] = struct.pack(">H", csum(bytes(ip)))
        udp = struct.pack(">HHHH", sport, dport, udp_len & 0xFFFF, 0)
        crc = icrc(bytes(ip), udp, bytes(rest)) if len(rest) >= 12 else b"\0\0\0\0"
        if kind == "icrc":
            crc = bytes(b ^ 0xFF for b in crc)
        f = bytearray(self.dmac + self.smac + b"\x08\x00" + bytes(ip) + udp + bytes(rest) + crc)
        if kind == "truncate":
            del f[r.randrange(14, len(f)):]
        elif kind == "flips":
            for _ in range(r.choice([1, 2, 8])):
                i = r.randrange(14, len(f))
                f[i] ^= 1 << r.randrange(8)
        self.note(kind)
        return bytes(f)


def golden_mads(paths):
    """UDP payloads of the CM MADs (QP1 SEND_ONLY, 0x64, DETH) in captures:
    what follows BTH and DETH, up to the ICRC."""
    out = []
    for p in paths:
        with open(p, "rb") as f:
            f.read(24)
            while True:
                h = f.read(16)
                if len(h) < 16:
                    break
                d = f.read(struct.unpack("<IIII", h)[2])
                if d[12:14] != b"\x08\x00" or d[23] != 17:
                    continue
                l4 = 14 + (d[14] & 0xF) * 4
                if struct.unpack(">H", d[l4 + 2:l4 + 4])[0] != 4791:
                    continue
                bth = d[l4 + 8:l4 + 20]
                if bth[0] == 0x64 and struct.unpack(">I", bth[4:8])[0] & 0xFFFFFF == 1:
                    out.append(d[l4 + 28:len(d) - 4])
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("port", type=int)
    ap.add_argument("description")
    ap.add_argument("--mac", required=True)
    ap.add_argument("--src-mac", required=True)
    ap.add_argument("--src-ip", required=True)
    ap.add_argument("--dst-ip", required=True)
    ap.add_argument("--frames", type=int, default=20000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--mad", nargs="*", default=[])
    a = ap.parse_args()
    a.mad_payloads = golden_mads(a.mad)
    fz = Fuzzer(a, Target(a.description))
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 16)
    s.bind(("127.0.0.1", 0))
    dst = ("127.0.0.1", a.port)
    s.sendto(b"", dst)  # join
    t0 = time.time()
    for i in range(a.frames):
        s.sendto(fz.frame(), dst)
        if i % 64 == 63:
            time.sleep(0.002)  # the hub and the device keep up: frames are meant to arrive
    took = time.time() - t0
    print(f"wire_fuzz: {a.frames} frames in {took:.1f} s (seed {a.seed}, {len(a.mad_payloads)} golden MADs): "
          + ", ".join(f"{k} {v}" for k, v in sorted(fz.counts.items())))


if __name__ == "__main__":
    main()
