#!/usr/bin/env python3
"""The IPv4 TOS of a device capture's RoCE v2 packets (issue 11, ToS).

    check_tos.py PCAP TOS MIN_QPS [MIN_REQS]

Every RC packet (BTH opcode below 0x20) must carry TOS, and RC packets must
go to at least MIN_QPS destination QPs (both ways of each connection). With
MIN_REQS, at least that many CM REQs (QP1 UD SENDs of attribute 0x0010) must
be there, each with primary traffic class TOS (CM data byte 92, after the
24-byte MAD header), and every MAD of a connection (REQ, REP, RTU, DREQ,
DREP) must go with TOS in its own IP header, as ib_cm sends them on the
path's address vector. A device's capture holds each packet as it left and as
it arrived; the receive path rebuilds an arriving packet's TOS from what the
kernel delivered, so the arrived copies show what went on the link.
IPv4 (the TOS) and IPv6 (the traffic class). Classic pcap, Ethernet or raw IP.
"""
import struct
import sys


def main():
    path, tos, min_qps = sys.argv[1], int(sys.argv[2], 0), int(sys.argv[3])
    min_reqs = int(sys.argv[4]) if len(sys.argv) > 4 else None
    data = open(path, 'rb').read()
    end = '<' if data[:4] in (b'\xd4\xc3\xb2\xa1', b'\x4d\x3c\xb2\xa1') else '>'
    link = struct.unpack(end + 'I', data[20:24])[0]
    off, reqs, rc, bad, versions = 24, [], {}, [], {4: 0, 6: 0}
    mads, mad_bad = 0, []
    while off + 16 <= len(data):
        incl = struct.unpack(end + 'I', data[off + 8:off + 12])[0]
        f = data[off + 16:off + 16 + incl]
        off += 16 + incl
        ip = f[14:] if link == 1 else f
        if len(ip) >= 20 and ip[0] >> 4 == 4 and ip[9] == 17:
            tc, udp = ip[1], ip[(ip[0] & 15) * 4:]
        elif len(ip) >= 40 and ip[0] >> 4 == 6 and ip[6] == 17:
            tc, udp = (ip[0] & 15) << 4 | ip[1] >> 4, ip[40:]
        else:
            continue
        if struct.unpack('>H', udp[2:4])[0] != 4791:
            continue
        bth = udp[8:]
        opcode, dqpn = bth[0], int.from_bytes(bth[5:8], 'big')
        if dqpn == 1 and opcode == 0x64:
            mad = bth[12 + 8:]
            attr = struct.unpack('>H', mad[16:18])[0]
            if attr == 0x0010:
                reqs.append(mad[24 + 92])
            if attr in (0x0010, 0x0013, 0x0014, 0x0015, 0x0016):
                mads += 1
                if tc != tos:
                    mad_bad.append((hex(attr), hex(tc)))
        elif opcode < 0x20:
            rc[dqpn] = rc.get(dqpn, 0) + 1
            versions[ip[0] >> 4] += 1
            if tc != tos:
                bad.append((hex(opcode), hex(dqpn), hex(tc)))
    print('REQ traffic classes', [hex(r) for r in reqs], 'CM MADs of a connection', mads, 'RC packets by destination QP', rc,
          'IPv4 RC packets %d IPv6 RC packets %d' % (versions[4], versions[6]))
    ok = True
    if min_reqs is not None and (len(reqs) < min_reqs or any(r != tos for r in reqs)):
        print('fewer than %d REQs, or one without traffic class %#x' % (min_reqs, tos))
        ok = False
    if min_reqs is not None and mad_bad:
        print('%d of %d CM MADs without TOS %#x, e.g. (attribute, TOS / traffic class)' % (len(mad_bad), mads, tos),
              mad_bad[:5])
        ok = False
    if len(rc) < min_qps:
        print('RC packets to fewer than %d QPs' % min_qps)
        ok = False
    if bad:
        print('%d RC packets without TOS %#x, e.g. (opcode, QP, TOS / traffic class)' % (len(bad), tos), bad[:5])
        ok = False
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main())
