#!/usr/bin/env python3
"""The rig's recognisers of kernel rxe's faults (rig_tests.py:
rxe_read_replay_only, rxe_requester_faults;
interop.rxe_requester_stall) and of a DREQ the wire's
faults dropped (interop.Capture.lost_dreq) and of a pingpong's last ACK
they dropped (rig_tests.pingpong_lost_last_ack) on hand-made captures, and of
rping's teardown race (interop.Matrix.rping_teardown_race) on its output, and
of rxe's completer warning in a matrix run's kernel log (interop.Matrix.run_one): each
recognises its case only when the wire shows it, so that a simnic bug is never
recorded as rxe's difference or as the wire's loss. No VM, standard library
only."""

import os
import shutil
import socket
import struct
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.realpath(__file__)), ".."))
import interop  # noqa: E402
import rig_tests  # noqa: E402

RXE, DEV = "10.0.0.1", "10.0.0.130"
READ_REQ, READ_FIRST, READ_ONLY, ACK, CAS = 0x0C, 0x0D, 0x10, 0x11, 0x13


def frame(src, dst, op, psn, syn=None, rlen=None):
    """An Ethernet/IPv4/UDP 4791 frame with a BTH, then an AETH (syndrome) or
    a RETH (length), padded; only the fields the recognisers read."""
    bth = bytes([op, 0, 0xFF, 0xFF]) + struct.pack(">II", 0x11, psn & 0xFFFFFF)
    ext = b""
    if syn is not None:
        ext = bytes([syn]) + b"\0\0\1"
    elif rlen is not None:
        ext = struct.pack(">QII", 0x1000, 0x201, rlen)
    payload = bth + ext + b"\0" * 16
    udp = struct.pack(">HHHH", 0xC000, 4791, 8 + len(payload), 0) + payload
    ip = (bytes([0x45, 0]) + struct.pack(">H", 20 + len(udp)) + b"\0\0\x40\0\x40\x11\0\0"
          + socket.inet_aton(src) + socket.inet_aton(dst))
    return (b"", b"\x02" * 6 + b"\x04" * 6 + b"\x08\x00" + ip + udp)


READ_FAIL = ("seed 1: FAIL: ...\n  seed 1 QP 1: message 0 (read 2048 B, 3 SGEs) completed with remote "
             "access error (vendor error 0x4); the responder: ...\n  rerun: simnic-workload ...\n")
STUCK_FAIL = "seed 1: FAIL: ...\n  seed 1 QP 0: stuck: 13 of 18 messages completed (18 posted), none for 20 s\n"
CAS_FAIL = ("seed 1: FAIL: ...\n  seed 1 QP 1: message 4 (cas) returned 0xc98c240143d78b32, want "
            "0x0136f6ff26cd2db5: the buffer's old content: nothing was written\n")


def resent(burst, times=4, every=6.0):
    """`burst` sent `times` times, `every` seconds apart (a requester's
    resends after its timer), as timed pcap records."""
    return [timed(k * every, d) for k in range(times) for _, d in burst]


class ReadReplay(unittest.TestCase):
    def test_refused_replay_of_a_served_read(self):
        frames = [frame(DEV, RXE, READ_REQ, 183, rlen=2048), frame(RXE, DEV, READ_FIRST, 183, syn=0x1F),
                  frame(DEV, RXE, READ_REQ, 183, rlen=2048), frame(RXE, DEV, ACK, 183, syn=0x62)]
        self.assertIn("refused", rig_tests.rxe_read_replay_only(READ_FAIL, frames, RXE, DEV))

    def test_a_nak_for_a_read_never_served_is_not_rxes_fault(self):
        frames = [frame(DEV, RXE, READ_REQ, 183, rlen=2048), frame(RXE, DEV, ACK, 183, syn=0x62)]
        self.assertEqual(rig_tests.rxe_read_replay_only(READ_FAIL, frames, RXE, DEV), "")

    def test_ignored_empty_read(self):
        frames = resent([frame(DEV, RXE, READ_REQ, 630, rlen=0), frame(DEV, RXE, READ_REQ, 631, rlen=1),
                         frame(RXE, DEV, READ_ONLY, 631, syn=0x1F)])
        self.assertIn("unanswered through 4 or more resends", rig_tests.rxe_read_replay_only(STUCK_FAIL, frames, RXE, DEV))

    def test_two_stuck_qps_need_two_ignored_reads(self):
        frames = resent([frame(DEV, RXE, READ_REQ, 630, rlen=0), frame(DEV, RXE, READ_REQ, 631, rlen=1),
                         frame(RXE, DEV, READ_ONLY, 631, syn=0x1F)])
        two = STUCK_FAIL + STUCK_FAIL.replace("seed 1", "seed 2")
        self.assertEqual(rig_tests.rxe_read_replay_only(two, frames, RXE, DEV), "")

    def test_resends_answered_within_seconds_are_no_fault(self):
        # Seen in a real run: eight resends in 30 ms, then the answer; the
        # same PSN had been a SEND of an earlier case (PSNs repeat across
        # simnic-workload's cases).
        frames = resent([frame(DEV, RXE, READ_REQ, 630, rlen=0), frame(DEV, RXE, READ_REQ, 631, rlen=1),
                         frame(RXE, DEV, READ_ONLY, 631, syn=0x1F)], times=8, every=0.004)
        frames.append(timed(0.04, frame(RXE, DEV, READ_ONLY, 630, syn=0x1F)[1]))
        self.assertEqual(rig_tests.rxe_read_replay_only(STUCK_FAIL, frames, RXE, DEV), "")

    def test_a_stuck_qp_behind_a_refused_replay(self):
        # rxe's NAK moves its QP to the error state; the READ before the
        # refused one is then resent for ever.
        frames = resent([frame(DEV, RXE, READ_REQ, 182, rlen=0), frame(DEV, RXE, READ_REQ, 183, rlen=2048),
                         frame(RXE, DEV, READ_FIRST, 183, syn=0x1F), frame(DEV, RXE, READ_REQ, 183, rlen=2048),
                         frame(RXE, DEV, ACK, 183, syn=0x62)], times=1)
        self.assertIn("refused", rig_tests.rxe_read_replay_only(STUCK_FAIL, frames, RXE, DEV))
        two = STUCK_FAIL + STUCK_FAIL.replace("seed 1", "seed 2")
        self.assertEqual(rig_tests.rxe_read_replay_only(two, frames, RXE, DEV), "")

    def test_an_answered_empty_read_does_not_explain_a_stuck_qp(self):
        frames = resent([frame(DEV, RXE, READ_REQ, 630, rlen=0), frame(RXE, DEV, READ_ONLY, 630, syn=0x1F),
                         frame(DEV, RXE, READ_REQ, 631, rlen=1), frame(RXE, DEV, READ_ONLY, 631, syn=0x1F)])
        self.assertEqual(rig_tests.rxe_read_replay_only(STUCK_FAIL, frames, RXE, DEV), "")

    def test_any_other_error_makes_it_a_failure(self):
        frames = [frame(DEV, RXE, READ_REQ, 183, rlen=2048), frame(RXE, DEV, READ_FIRST, 183, syn=0x1F),
                  frame(RXE, DEV, ACK, 183, syn=0x62)]
        out = READ_FAIL + "  seed 2 QP 0: message 3 (send 8 B, 1 SGEs): payload differs at byte 2\n"
        self.assertEqual(rig_tests.rxe_read_replay_only(out, frames, RXE, DEV), "")
        self.assertEqual(rig_tests.rxe_read_replay_only("simnic-workload: FAIL\n", frames, RXE, DEV), "")


class AtomicPlainAck(unittest.TestCase):
    def test_plain_ack_at_the_atomics_psn(self):
        frames = [frame(RXE, DEV, CAS, 191), frame(DEV, RXE, ACK, 191, syn=0x1F)]
        reason, note = rig_tests.rxe_requester_faults(CAS_FAIL, frames, RXE, DEV, "")
        self.assertEqual(reason, rig_tests.RXE_ATOMIC_ACK)
        self.assertIn("without their ATOMIC ACKNOWLEDGE", note)

    def test_no_such_ack_on_the_wire(self):
        frames = [frame(RXE, DEV, CAS, 191), frame(DEV, RXE, ACK, 190, syn=0x1F),
                  frame(DEV, RXE, ACK, 191, syn=0x60)]  # a NAK at its PSN is no ACK
        self.assertEqual(rig_tests.rxe_requester_faults(CAS_FAIL, frames, RXE, DEV, ""), ("", ""))

    def test_a_wrong_atomic_result_is_a_failure(self):
        frames = [frame(RXE, DEV, CAS, 191), frame(DEV, RXE, ACK, 191, syn=0x1F)]
        out = CAS_FAIL.replace("the buffer's old content: nothing was written", "another message's")
        self.assertEqual(rig_tests.rxe_requester_faults(out, frames, RXE, DEV, ""), ("", ""))


FLUSH_FAIL = ("seed 2: FAIL: ...\n  seed 2 QP 0: message 4 (write 73 B, 2 SGEs) completed with Work Request "
              "Flushed Error (vendor error 0x0); the responder: seed 2 QP 0: 0 of 6 receives completed 10 s "
              "after the requester finished\n  rerun: simnic-workload ...\n")
KERNEL_WARN = """[   60.285100] WARNING: CPU: 0 PID: 184 at drivers/infiniband/sw/rxe/rxe_comp.c:827 rxe_completer+0xbd7/0xe30 [rdma_rxe]
[   60.287014] Workqueue: rxe_wq do_work [rdma_rxe]
[   60.289370] ---[ end trace 0000000000000000 ]---
"""


class CompleterWarn(unittest.TestCase):
    """rxe's completer in its error state with a successful WQE (seen in
    rig.interop_faults612: the VM's kernel warned, the QP's work flushed)."""

    def test_flush_after_the_warning(self):
        reason, note = rig_tests.rxe_requester_faults(FLUSH_FAIL, [], RXE, DEV, KERNEL_WARN)
        self.assertEqual(reason, rig_tests.RXE_COMPLETER_WARN)
        self.assertIn("rxe_comp.c:827", note)

    def test_no_warning_no_excuse(self):
        self.assertEqual(rig_tests.rxe_requester_faults(FLUSH_FAIL, [], RXE, DEV, "[ 1.0] rdma_rxe: loaded\n"),
                         ("", ""))

    def test_any_other_error_is_a_failure(self):
        other = FLUSH_FAIL.replace("Work Request Flushed Error", "remote access error")
        self.assertEqual(rig_tests.rxe_requester_faults(other, [], RXE, DEV, KERNEL_WARN), ("", ""))

    def test_the_warning_once_per_run_covers_every_flushed_qp(self):
        # The kernel warns once until the rig re-arms it, before each run.
        two = FLUSH_FAIL + FLUSH_FAIL.replace("seed 2", "seed 1")
        self.assertEqual(rig_tests.rxe_requester_faults(two, [], RXE, DEV, KERNEL_WARN)[0],
                         rig_tests.RXE_COMPLETER_WARN)
        self.assertEqual(rig_tests.rxe_requester_faults(two, [], RXE, DEV, ""), ("", ""))


INVREQ_FAIL = ("seed 12: FAIL: ...\n  seed 12 QP 1: message 90 (write 4096 B, 1 SGEs) completed with remote "
               "invalid request error (vendor error 0x0); the responder: seed 12 QP 1: receive 38 completed "
               "with Work Request Flushed Error (vendor error 0x0)\n")
SEND_ONLY, WRITE_FIRST, WRITE_LAST = 0x04, 0x06, 0x08


class RetryShift(unittest.TestCase):
    """rxe resending a different request at a PSN it had used (seen in the
    6.1 fault matrix at 10%: a zero-length SEND ONLY at the PSN of a WRITE
    FIRST, every later request one PSN late, then NAK invalid request)."""

    def test_a_psn_that_carried_two_requests(self):
        frames = [frame(RXE, DEV, WRITE_FIRST, 490, rlen=816), frame(RXE, DEV, WRITE_LAST, 491),
                  frame(RXE, DEV, SEND_ONLY, 490), frame(RXE, DEV, WRITE_FIRST, 491, rlen=816),
                  frame(DEV, RXE, ACK, 500, syn=0x61)]
        self.assertEqual(rig_tests.shifted_resends(frames, RXE, DEV), [(0x11, 490), (0x11, 491)])
        reason, note = rig_tests.rxe_requester_faults(INVREQ_FAIL, frames, RXE, DEV, "")
        self.assertEqual(reason, rig_tests.RXE_RETRY_SHIFT)
        self.assertIn("one PSN late", note)

    def test_plain_resends_are_no_shift(self):
        frames = [frame(RXE, DEV, WRITE_FIRST, 490, rlen=816), frame(RXE, DEV, WRITE_LAST, 491),
                  frame(RXE, DEV, WRITE_FIRST, 490, rlen=816), frame(RXE, DEV, WRITE_LAST, 491),
                  frame(DEV, RXE, ACK, 491, syn=0x1F), frame(DEV, RXE, ACK, 491, syn=0x1F)]
        self.assertEqual(rig_tests.shifted_resends(frames, RXE, DEV), [])
        self.assertEqual(rig_tests.rxe_requester_faults(INVREQ_FAIL, frames, RXE, DEV, ""), ("", ""))

    def test_faults_together_one_per_failed_qp(self):
        frames = [frame(RXE, DEV, WRITE_FIRST, 490, rlen=816), frame(RXE, DEV, SEND_ONLY, 490),
                  frame(RXE, DEV, CAS, 191), frame(DEV, RXE, ACK, 191, syn=0x1F)]
        reason, note = rig_tests.rxe_requester_faults(INVREQ_FAIL + CAS_FAIL, frames, RXE, DEV, "")
        self.assertEqual(reason, rig_tests.RXE_RETRY_SHIFT)
        self.assertIn("ATOMIC ACKNOWLEDGE", note)
        # Two invalid requests, one QP shown shifted: not explained.
        self.assertEqual(rig_tests.rxe_requester_faults(INVREQ_FAIL * 2, frames, RXE, DEV, ""), ("", ""))


def cm_frame(src, dst, attr, klass=0x07, qpn=1):
    """A CM MAD (UD SEND ONLY to QP1, DETH, MAD header) of attribute `attr`."""
    bth = bytes([0x64, 0, 0xFF, 0xFF, 0]) + qpn.to_bytes(3, "big") + struct.pack(">I", 5)
    deth = struct.pack(">II", 0x80010000, 1)
    mad = bytes([1, klass, 2, 3]) + b"\0" * 12 + struct.pack(">H", attr) + b"\0" * 238
    payload = bth + deth + mad
    udp = struct.pack(">HHHH", 0xC000, 4791, 8 + len(payload), 0) + payload
    ip = (bytes([0x45, 0]) + struct.pack(">H", 20 + len(udp)) + b"\0\0\x40\0\x40\x11\0\0"
          + socket.inet_aton(src) + socket.inet_aton(dst))
    return b"\x02" * 6 + b"\x04" * 6 + b"\x08\x00" + ip + udp


def write_pcap(path, frames):
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
        for d in frames:
            f.write(struct.pack("<IIII", 0, 0, len(d), len(d)) + d)


class LostDreq(unittest.TestCase):
    """A DREQ that the wire carried toward the device and its faults dropped
    is the one case in which an rping server may be stopped after a good run."""

    def capture(self, sent, delivered, before=()):
        d = tempfile.mkdtemp(prefix="lost-dreq-")
        self.addCleanup(shutil.rmtree, d)
        c = interop.Capture(os.path.join(d, "wire.pcap"), "", os.path.join(d, "delivered.pcap"))
        write_pcap(c.pcap, list(before))
        write_pcap(c.delivered, list(before))
        c.mark()  # what came before belongs to an earlier run
        write_pcap(c.pcap, list(before) + sent)
        write_pcap(c.delivered, list(before) + delivered)
        return c

    def test_dropped_dreq(self):
        dreq = cm_frame(RXE, DEV, interop.CM_ATTR_DREQ)
        self.assertTrue(self.capture([dreq], [], before=[dreq]).lost_dreq(DEV))

    def test_delivered_dreq_is_no_excuse(self):
        dreq = cm_frame(RXE, DEV, interop.CM_ATTR_DREQ)
        # Sent twice (a duplicate), one copy dropped: the device had it.
        self.assertFalse(self.capture([dreq, dreq], [dreq]).lost_dreq(DEV))

    def test_no_dreq_on_the_wire(self):
        drep = cm_frame(RXE, DEV, 0x0016)
        not_cm = cm_frame(RXE, DEV, interop.CM_ATTR_DREQ, klass=0x01)
        not_qp1 = cm_frame(RXE, DEV, interop.CM_ATTR_DREQ, qpn=0x11)
        other = cm_frame(RXE, "10.0.0.99", interop.CM_ATTR_DREQ)
        self.assertFalse(self.capture([drep, not_cm, not_qp1, other], []).lost_dreq(DEV))

    def test_without_a_delivered_capture(self):
        c = self.capture([cm_frame(RXE, DEV, interop.CM_ATTR_DREQ)], [])
        c.delivered = None
        self.assertFalse(c.lost_dreq(DEV))


def timed(t, d):
    """A pcap record (header with time t seconds, frame d)."""
    return (struct.pack("<IIII", int(t), int((t % 1) * 1e6), len(d), len(d)), d)


SEND_FIRST, SEND_MIDDLE, SEND_LAST = 0x00, 0x01, 0x02


class RequesterStall(unittest.TestCase):
    """rxe's requester stopping mid-message with all it sent acknowledged
    (seen once in rig.interop61: ibv_rc_pingpong 1 MiB, 736 of 1024 packets)."""

    def run_of(self, last_op=SEND_MIDDLE, ack_psn=102, syn=0x1F, t_last=100.0):
        return [timed(99.0, frame(RXE, DEV, SEND_FIRST, 100)[1]),
                timed(99.5, frame(RXE, DEV, SEND_MIDDLE, 101)[1]),
                timed(t_last, frame(RXE, DEV, last_op, 102)[1]),
                timed(t_last + 0.01, frame(DEV, RXE, ACK, ack_psn, syn=syn)[1])]

    def test_stopped_mid_message(self):
        note = interop.rxe_requester_stall(self.run_of(), RXE, DEV, now=200.0)
        self.assertIn("in the middle of a message", note)
        self.assertIn("PSN 102", note)

    def test_a_finished_message_is_no_stall(self):
        self.assertEqual(interop.rxe_requester_stall(self.run_of(last_op=SEND_LAST), RXE, DEV, 200.0), "")

    def test_unacknowledged_psns_are_simnics_to_answer(self):
        self.assertEqual(interop.rxe_requester_stall(self.run_of(ack_psn=101), RXE, DEV, 200.0), "")
        self.assertEqual(interop.rxe_requester_stall(self.run_of(syn=0x60), RXE, DEV, 200.0), "")

    def test_not_quiet_long_enough(self):
        self.assertEqual(interop.rxe_requester_stall(self.run_of(), RXE, DEV, now=110.0), "")


class PingpongLostLastAck(unittest.TestCase):
    """rig.faults' ibv_rc_pingpong: a server that resends its last SEND for
    ever after the wire dropped the exited client's ACK of it."""
    SERVER, CLIENT = "10.0.0.1", "10.0.0.2"

    def ending(self, ack_syn=0x1F, ack_psn=12, resends=3, delivered_ack=False):
        """The client's last SEND (PSN 20-22) and its ACK, then the server's
        last (PSN 10-12), the client's ACK of it, and the server's resends:
        (sent, delivered)."""
        s, c = self.SERVER, self.CLIENT
        last = [frame(s, c, SEND_FIRST, 10), frame(s, c, SEND_MIDDLE, 11), frame(s, c, SEND_LAST, 12)]
        before = [frame(c, s, SEND_FIRST, 20), frame(c, s, SEND_MIDDLE, 21),
                  frame(c, s, SEND_LAST, 22), frame(s, c, ACK, 22, syn=0x1F)] + last
        ack = frame(c, s, ACK, ack_psn, syn=ack_syn)
        sent = before + [ack] + last * resends
        delivered = before + ([ack] if delivered_ack else []) + last * resends
        return sent, delivered

    def why(self, sent, delivered):
        return rig_tests.pingpong_lost_last_ack(sent, delivered, self.SERVER, self.CLIENT)

    def test_dropped_last_ack_then_resends(self):
        why = self.why(*self.ending())
        self.assertIn("PSN 0xc", why)
        self.assertIn("resent that PSN 3 times", why)
        self.assertIn(rig_tests.PINGPONG_LAST_ACK, why)

    def test_a_delivered_ack_is_no_excuse(self):
        self.assertEqual(self.why(*self.ending(delivered_ack=True)), "")

    def test_a_client_that_never_acknowledged_is_no_excuse(self):
        sent, delivered = self.ending()
        ack = frame(self.CLIENT, self.SERVER, ACK, 12, syn=0x1F)
        self.assertEqual(self.why([f for f in sent if f != ack], delivered), "")

    def test_a_nak_or_an_earlier_psn_is_no_ack_of_the_last(self):
        self.assertEqual(self.why(*self.ending(ack_syn=0x60)), "")
        self.assertEqual(self.why(*self.ending(ack_psn=11)), "")

    def test_a_server_that_did_not_resend(self):
        self.assertEqual(self.why(*self.ending(resends=0)), "")

    def test_no_request_from_the_server(self):
        self.assertEqual(self.why([], []), "")


class RpingTeardownRace(unittest.TestCase):
    """rping's client exiting 255 in its own teardown after all its pings
    (seen once in rig.interop_faults612): only that exact shape is excused."""

    PINGS = "".join(f"ping data: rdma-ping-{i}: ABCDEF\n" for i in range(10))

    def race(self, rc, text):
        return interop.Matrix.rping_teardown_race(rc, text)

    def test_all_pings_then_the_closed_channel(self):
        self.assertTrue(self.race(255, self.PINGS + "rdma_get_cm_event: Bad file descriptor\n"))

    def test_a_missing_ping_is_a_failure(self):
        nine = "".join(self.PINGS.splitlines(True)[:9])
        self.assertFalse(self.race(255, nine + "rdma_get_cm_event: Bad file descriptor\n"))

    def test_another_error_or_exit_status_is_a_failure(self):
        self.assertFalse(self.race(255, self.PINGS + "cq completion failed status 5\n"))
        self.assertFalse(self.race(1, self.PINGS + "rdma_get_cm_event: Bad file descriptor\n"))
        # The error in the middle, pings after it: not the teardown.
        self.assertFalse(self.race(255, "rdma_get_cm_event: Bad file descriptor\n" + self.PINGS))

    def test_the_matrix_excuses_only_rping_clients(self):
        m = interop.Matrix.__new__(interop.Matrix)
        bad = self.PINGS + "rdma_get_cm_event: Bad file descriptor\n"
        out = {"client": (255, bad), "server": (0, "")}
        m.note_rping_race(out, "udaddy -s 10.0.0.1")
        self.assertEqual(out["client"][0], 255)
        m.note_rping_race(out, "rping -C 10 -V -S 3172 -v -c -a 10.0.0.1 -p 7180")
        self.assertIsNone(out["client"][0])
        self.assertIn("rping's own teardown", out["note"])
        self.assertEqual(interop.Matrix.verdict(interop.Test("rping -C 10 -V", "rping", kind="rping"), out), [])


class MatrixKernelLog(unittest.TestCase):
    """A fault group's matrix run starts with the VM's kernel log emptied; a
    failed run shows the log's rxe lines, and is recorded as rxe's
    completer fault only when this run's log has the warning and the wire
    shows no fault of simnic's (seen in rig.interop_faults612: rping with a
    model device as client hung after 8 pings, the VM's server waiting)."""

    class Capture:
        def __init__(self, ok_wire):
            self.ok_wire = ok_wire

        def mark(self):
            pass

        def check(self, addr, cm):
            fd, pcap = tempfile.mkstemp(suffix=".pcap")
            os.close(fd)
            frames = [timed(1.0, frame(RXE, addr, 0x04, 1)[1]), timed(1.1, frame(addr, RXE, ACK, 1, syn=0)[1])]
            return self.ok_wire, "ok" if self.ok_wire else "an ID overtaken", frames, pcap

    def run_matrix(self, kernel_log, pings=8, ok_wire=True, server=(124, "command timed out after 90 s")):
        calls = []
        m = interop.Matrix(None, None, self.Capture(ok_wire), "6.12.95", "6.12",
                           {"model": ("m0", DEV, None)},
                           vm_log=(lambda: calls.append("reset"), lambda: calls.append("read") or kernel_log))
        text = "".join(f"ping data: rdma-ping-{i}: ABC\n" for i in range(pings))
        m.run_rping = lambda *a: (calls.append("run") or
                                  {"client": (0, text), "server": server})
        errors, detail, out = m.run_one(interop.Test("rping -C 10 -V", "rping", kind="rping"), "model",
                                        1024, "simnic-client")
        return calls, errors, out

    def setUp(self):
        self.dir = tempfile.mkdtemp()
        os.environ["SIMNIC_COVERIFY_RESULTS"] = self.dir

    def tearDown(self):
        shutil.rmtree(self.dir)

    def test_the_warning_of_a_failed_run(self):
        calls, errors, out = self.run_matrix("[ 1.0] rdma_rxe: loaded\n" + KERNEL_WARN)
        self.assertEqual(calls, ["reset", "run", "read"])
        self.assertTrue(any("8 verified pings" in e for e in errors))
        self.assertEqual(out["differs"][0], interop.RXE_COMPLETER_WARN)
        self.assertIn("rxe_comp.c:827", out["differs"][1])
        self.assertIn("end trace", out["kernel_log"][-1])

    def test_no_warning_is_a_failure(self):
        calls, errors, out = self.run_matrix("[ 1.0] rdma_rxe: loaded\n[ 2.0] other: line\n")
        self.assertEqual(calls, ["reset", "run", "read"])
        self.assertNotIn("differs", out)
        self.assertEqual(out["kernel_log"], ["[ 1.0] rdma_rxe: loaded"])

    def test_a_wire_fault_of_simnics_is_a_failure_despite_the_warning(self):
        _, errors, out = self.run_matrix(KERNEL_WARN, ok_wire=False)
        self.assertNotIn("differs", out)
        self.assertTrue(any(e.startswith("wire: ") for e in errors))

    def test_a_passing_run_does_not_read_the_log(self):
        calls, errors, out = self.run_matrix(KERNEL_WARN, pings=10, server=(0, ""))
        self.assertEqual(calls, ["reset", "run"])
        self.assertEqual(errors, [])
        self.assertNotIn("differs", out)


if __name__ == "__main__":
    unittest.main()
