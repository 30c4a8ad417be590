#!/usr/bin/env python3
"""wire_probe.py: a member of a wire (`simnic wire`) that asks questions, for
the wire tests. Frames are built here byte by byte (Python's struct), apart
from simnic's packet core, so that a device's answers are checked against
RFC 826 and RFC 4861 as written, not against simnic's own codec.

  wire_probe.py ask PORT [--arp A.B.C.D]... [--ns X::Y]... [--wait S]
      Joins the wire on 127.0.0.1:PORT as MAC 02:00:00:00:00:99, IPv4
      10.0.0.99 and fe80::ff:fe00:99, sends an ARP request for each --arp
      address and a neighbour solicitation (to the solicited-node group,
      with a source link-layer option) for each --ns address, and prints one
      line per question: "arp ADDR MAC" or "arp ADDR none", "ns ADDR MAC
      FLAGS" or "ns ADDR none" (FLAGS: S, O as the advertisement set them).
      Exits 1 if an answer is malformed (bad checksum, wrong fields).

  wire_probe.py peer TCPPORT GID
      A fake ibv_rc_pingpong server on 127.0.0.1:TCPPORT that answers the
      client's exchange with QPN 0x11 and GID (an address nobody has), so
      that the client's QP needs a neighbour that never answers.
"""

import ipaddress
import select
import socket
import struct
import sys
import time

MY_MAC = bytes.fromhex("020000000099")
MY_IP = ipaddress.IPv4Address("10.0.0.99").packed
MY_LL = ipaddress.IPv6Address("fe80::ff:fe00:99").packed


def checksum(data):
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack(f">{len(data) // 2}H", data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return (~s) & 0xFFFF


def icmpv6_sum(src, dst, msg):
    return checksum(src + dst + struct.pack(">I", len(msg)) + b"\0\0\0\x3a" + msg)


def arp_request(target):
    return (b"\xff" * 6 + MY_MAC + b"\x08\x06" + struct.pack(">HHBBH", 1, 0x0800, 6, 4, 1) + MY_MAC + MY_IP +
            b"\0" * 6 + target).ljust(60, b"\0")


def ns(target):
    group = bytes.fromhex("ff0200000000000000000001ff") + target[13:]
    msg = bytearray(struct.pack(">BBHI", 135, 0, 0, 0) + target + bytes([1, 1]) + MY_MAC)
    struct.pack_into(">H", msg, 2, icmpv6_sum(MY_LL, group, bytes(msg)))
    ip6 = struct.pack(">IHBB", 6 << 28, len(msg), 58, 255) + MY_LL + group
    return b"\x33\x33" + group[12:] + MY_MAC + b"\x86\xdd" + ip6 + bytes(msg)


def ask(port, arps, nss, wait):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("127.0.0.1", 0))
    s.connect(("127.0.0.1", port))
    s.send(b"")
    for a in arps:
        s.send(arp_request(ipaddress.IPv4Address(a).packed))
    for a in nss:
        s.send(ns(ipaddress.IPv6Address(a).packed))
    got_arp, got_ns, bad = {}, {}, []
    end = time.monotonic() + wait
    while time.monotonic() < end:
        r, _, _ = select.select([s], [], [], max(0, end - time.monotonic()))
        if not r:
            break
        d = s.recv(65536)
        if len(d) < 14 or d[0:6] != MY_MAC:
            continue  # not to us (a hub floods)
        if d[12:14] == b"\x08\x06":
            htype, ptype, hlen, plen, op = struct.unpack(">HHBBH", d[14:22])
            sha, spa, tha, tpa = d[22:28], d[28:32], d[32:38], d[38:42]
            if (htype, ptype, hlen, plen, op) != (1, 0x0800, 6, 4, 2) or tha != MY_MAC or tpa != MY_IP or \
                    d[6:12] != sha:
                bad.append(f"bad ARP reply {d[:42].hex()}")
            got_arp[str(ipaddress.IPv4Address(spa))] = sha
        elif d[12:14] == b"\x86\xdd" and len(d) >= 14 + 40 + 24 and d[20] == 58 and d[54] == 136:
            ip6, msg = d[14:54], d[54:14 + 40 + struct.unpack(">H", d[18:20])[0]]
            src, dst = ip6[8:24], ip6[24:40]
            target = msg[8:24]
            flags = ("S" if msg[4] & 0x40 else "") + ("O" if msg[4] & 0x20 else "")
            mac = None
            opt = msg[24:]
            while len(opt) >= 8 and opt[1]:
                if opt[0] == 2:
                    mac = opt[2:8]
                opt = opt[opt[1] * 8:]
            if icmpv6_sum(src, dst, msg) != 0 or ip6[7] != 255 or msg[1] != 0 or dst != MY_LL or \
                    src != target or (mac and mac != d[6:12]):
                bad.append(f"bad advertisement {d.hex()}")
            got_ns[str(ipaddress.IPv6Address(target))] = (mac or d[6:12], flags)
    for a in arps:
        m = got_arp.get(str(ipaddress.IPv4Address(a)))
        print(f"arp {a} {m.hex(':') if m else 'none'}")
    for a in nss:
        m = got_ns.get(str(ipaddress.IPv6Address(a)))
        print(f"ns {a} {m[0].hex(':') + ' ' + (m[1] or '-') if m else 'none'}")
    for b in bad:
        print(b)
    return 1 if bad else 0


def peer(tcp_port, gid):
    wire = ipaddress.IPv6Address(gid).packed.hex()
    msg = f"0000:000011:000000:{wire}".encode() + b"\0"
    srv = socket.create_server(("127.0.0.1", tcp_port), reuse_port=False)
    srv.settimeout(60)
    c, _ = srv.accept()
    c.settimeout(60)
    got = b""
    while len(got) < len(msg):
        chunk = c.recv(len(msg) - len(got))
        if not chunk:
            return 1
        got += chunk
    c.sendall(msg)
    try:
        c.recv(16)  # the client's "done", or its close
    except OSError:
        pass
    c.close()
    return 0


def main():
    a = sys.argv[1:]
    if len(a) >= 2 and a[0] == "ask":
        port, arps, nss, wait, i = int(a[1]), [], [], 1.0, 2
        while i < len(a):
            if a[i] == "--arp":
                arps.append(a[i + 1])
            elif a[i] == "--ns":
                nss.append(a[i + 1])
            elif a[i] == "--wait":
                wait = float(a[i + 1])
            else:
                sys.exit(__doc__)
            i += 2
        return ask(port, arps, nss, wait)
    if len(a) == 3 and a[0] == "peer":
        return peer(int(a[1]), a[2])
    sys.exit(__doc__)


if __name__ == "__main__":
    sys.exit(main())
