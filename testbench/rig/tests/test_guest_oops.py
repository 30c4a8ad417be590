#!/usr/bin/env python3
"""rig_tests.Report's second attempt after a guest kernel oops, against a
stand-in rig whose "VMs" are console files: which console text counts as an
oops, that only an oops which began during the failed check counts, that the
check then runs once more on freshly booted VMs and that attempt decides,
and that a fatal check, a group that did not boot with start_vms, or a
failure without an oops runs once. No VM, standard library only
(rig.lifecycle crashes a real VM for the same path)."""

import contextlib
import io
import os
import shutil
import sys
import tempfile
import types
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.realpath(__file__)), ".."))
import rig_tests  # noqa: E402
from rig_tests import Fail, Report  # noqa: E402

BOOT = "SIMNIC-RIG-READY vm0\n"
# The head of the oops CI saw (6.12.95 under TCG, the workload step).
OOPS_612 = """[   17.905100] BUG: kernel NULL pointer dereference, address: 0000000000000000
[   17.905400] #PF: supervisor instruction fetch in kernel mode
[   17.911000] Oops: 0010 [#1] PREEMPT SMP NOPTI
[   17.915869] Call Trace:
[   17.917140]  ? extract_entropy.constprop.0+0x127/0x200
[   17.918914]  ? send_common_ack.isra.0+0x48/0xb0 [rdma_rxe]
[   17.922610] ---[ end trace 0000000000000000 ]---
"""
WARNING = "[   9.1] WARNING: CPU: 0 PID: 77 at drivers/infiniband/sw/rxe/rxe_comp.c:1 x\n"


class FakeRig:
    """The rig as Report uses it: a state dir with vmN.console files, and
    cmd("stop") / cmd("start", ...) recorded; a start rewrites the consoles
    as QEMU's file chardev does."""

    def __init__(self, vms=2):
        self.state = tempfile.mkdtemp(prefix="fake-rig-")
        self.vms = vms
        self.calls = []
        self.boot()

    def boot(self):
        for i in range(self.vms):
            with open(os.path.join(self.state, f"vm{i}.console"), "w") as f:
                f.write(BOOT.replace("vm0", f"vm{i}"))

    def say(self, vm, text):
        with open(os.path.join(self.state, f"vm{vm}.console"), "a") as f:
            f.write(text)

    def cmd(self, *args, **_kw):
        self.calls.append(args)
        if args[0] == "start":
            self.boot()
        return types.SimpleNamespace(returncode=0, stdout="", stderr=f"booted {args[1:]}")

    def kill_stray(self):
        self.calls.append(("kill_stray",))

    def close(self):
        shutil.rmtree(self.state, ignore_errors=True)


class GuestOopsTest(unittest.TestCase):
    def setUp(self):
        self.rig = FakeRig()
        self.rep = Report(self.rig)
        self.out = io.StringIO()
        with contextlib.redirect_stdout(self.out):
            self.rep.run("boot", self.rep.start_vms, "--vms", 2, fatal=True)
        self.rig.calls.clear()

    def tearDown(self):
        self.rig.close()

    def run_check(self, name, fn, fatal=False):
        with contextlib.redirect_stdout(self.out):
            return self.rep.run(name, fn, fatal=fatal)

    def test_the_excerpt_starts_at_the_oops_and_only_past_the_mark(self):
        self.rig.say(1, "[ 1.0] early\n" + OOPS_612)
        marks = rig_tests.console_marks(self.rig.state)
        self.assertEqual(rig_tests.guest_oopses(self.rig.state, marks), {})
        self.rig.say(1, "[ 2.0] a\n[ 2.1] b\n[ 2.2] c\n" + OOPS_612)
        found = rig_tests.guest_oopses(self.rig.state, marks)
        self.assertEqual(list(found), ["vm1.console"])
        line, excerpt = found["vm1.console"]
        lines = excerpt.splitlines()
        self.assertEqual(lines[0], "[ 2.1] b")          # two lines of context
        self.assertIn("BUG: kernel NULL pointer dereference", lines[2])
        self.assertEqual(line, lines[2])
        self.assertIn("send_common_ack", excerpt)

    def test_a_console_started_again_during_the_check_is_read_whole(self):
        self.rig.say(0, "[ 1.0] " + "x" * 4000 + "\n")
        marks = rig_tests.console_marks(self.rig.state)
        self.rig.boot()                      # shorter than its mark now
        self.rig.say(0, OOPS_612)
        found = rig_tests.guest_oopses(self.rig.state, marks)
        self.assertEqual(list(found), ["vm0.console"])
        self.assertIn("Oops: 0010", found["vm0.console"][1])

    def test_what_counts_as_an_oops(self):
        for text in ("[1] Kernel panic - not syncing: sysrq triggered crash",
                     "[1] general protection fault, probably for non-canonical address",
                     "[1] kernel BUG at mm/slub.c:1!", "[1] Oops: 0002 [#1] SMP",
                     "[1] BUG: unable to handle page fault for address: 0"):
            self.assertTrue(rig_tests.GUEST_OOPS.search(text), text)
        for text in (WARNING, "[1] rdma_rxe: qp#17 moved to error state", BOOT,
                     "[1] systemd: BUGS are fixed"):
            self.assertFalse(rig_tests.GUEST_OOPS.search(text), text)

    def test_an_oops_during_a_failed_check_runs_it_again_on_fresh_vms(self):
        tries = []

        def check():
            with open(os.path.join(self.rig.state, "vm0.console")) as f:
                tries.append(f.read())
            if len(tries) == 1:
                self.rig.say(0, OOPS_612)
                raise Fail("the workload timed out")
        self.assertTrue(self.run_check("workload", check))
        self.assertEqual(len(tries), 2)
        self.assertEqual(tries[1], BOOT, "the second attempt must see a fresh console")
        self.assertEqual([c[0] for c in self.rig.calls], ["stop", "kill_stray", "start"])
        self.assertEqual(self.rig.calls[2][1:], ("--vms", 2), "fresh VMs with start_vms' options")
        self.assertEqual(self.rep.results[-1][1:2], (True,))
        self.assertEqual([(o[0], o[1], o[3]) for o in self.rep.oopses],
                         [("workload", "vm0.console", True)])
        self.assertIn("BUG: kernel NULL pointer dereference", self.rep.oopses[0][2])
        self.assertIn("send_common_ack", self.out.getvalue(), "the oops is printed")
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            self.rep.summary()
        self.assertIn("GUEST OOPS: workload: vm0.console: [   17.905100] BUG: kernel NULL "
                      "pointer dereference, address: 0000000000000000 (passed on fresh VMs)",
                      out.getvalue())

    def test_the_groups_set_up_is_redone_on_the_fresh_vms_before_the_check(self):
        order = []
        self.rep.setup = lambda: order.append(("setup", [c[0] for c in self.rig.calls]))

        def check():
            order.append(("check", [c[0] for c in self.rig.calls]))
            if len(order) == 1:
                self.rig.say(0, OOPS_612)
                raise Fail("first")
        self.assertTrue(self.run_check("matrix test", check))
        self.assertEqual(order, [("check", []), ("setup", ["stop", "kill_stray", "start"]),
                                 ("check", ["stop", "kill_stray", "start"])])

    def test_a_set_up_that_fails_on_the_fresh_vms_fails_the_check(self):
        def setup():
            raise Fail("rxe0 did not follow eth0 to MTU 9000")
        self.rep.setup = setup
        tries = []

        def check():
            tries.append(1)
            self.rig.say(0, OOPS_612)
            raise Fail("first")
        self.assertFalse(self.run_check("matrix test", check))
        self.assertEqual(len(tries), 1)
        self.assertIn("did not boot or set up: rxe0 did not follow", self.rep.results[-1][3])

    def test_a_new_boot_forgets_the_old_set_up(self):
        self.rep.setup = lambda: None
        with contextlib.redirect_stdout(self.out):
            self.rep.start_vms("--vms", 1)
        self.assertIsNone(self.rep.setup)

    def test_crash_once_crashes_vm0_at_the_first_matching_check_only(self):
        rep = Report(self.rig, crash_once="^MTU 4096")
        rep.boot = ("--vms", 1)
        crashed = []

        def crash_vm0():
            crashed.append(1)
            self.rig.say(0, "[ 5.7] Kernel panic - not syncing: sysrq triggered crash\n")
        rep.crash_vm0 = crash_vm0
        seen = []

        def check():
            seen.append(len(crashed))
            if len(seen) == 2 and crashed:
                raise Fail("the VM is gone")
        with contextlib.redirect_stdout(self.out):
            self.assertTrue(rep.run("MTU 1024: ib_send_bw", check))
            self.assertTrue(rep.run("MTU 4096: ib_send_bw", check))
            self.assertTrue(rep.run("MTU 4096: ib_write_bw", check))
        self.assertEqual(seen, [0, 1, 1, 1], "crashed once, before the 2nd check's first attempt")
        self.assertEqual([(o[0], o[3]) for o in rep.oopses], [("MTU 4096: ib_send_bw", True)])

    def test_an_oops_on_the_fresh_vms_too_fails_with_both_reasons(self):
        tries = []

        def check():
            tries.append(1)
            self.rig.say(1, OOPS_612)
            raise Fail(f"attempt {len(tries)}")
        self.assertFalse(self.run_check("workload", check))
        self.assertEqual(len(tries), 2)
        why = self.rep.results[-1][3]
        self.assertIn("attempt 1", why)
        self.assertIn("attempt 2", why)
        self.assertIn("the guest oopsed again", why)
        self.assertEqual(self.rep.oopses[0][3], False)

    def test_no_second_attempt_without_an_oops_during_the_check(self):
        self.rig.say(0, OOPS_612)   # before the check: not its doing
        tries = []

        def check():
            tries.append(1)
            self.rig.say(0, WARNING)
            raise Fail("an ordinary failure")
        self.assertFalse(self.run_check("plain", check))
        self.assertEqual((len(tries), self.rig.calls, self.rep.oopses), (1, [], []))

    def test_a_passing_check_is_not_looked_at(self):
        def check():
            self.rig.say(0, OOPS_612)
        self.assertTrue(self.run_check("passes", check))
        self.assertEqual((self.rig.calls, self.rep.oopses), ([], []))

    def test_a_fatal_check_is_not_retried(self):
        def check():
            self.rig.say(0, OOPS_612)
            raise Fail("boot")
        with self.assertRaises(Fail):
            self.run_check("boot again", check, fatal=True)
        self.assertEqual(self.rig.calls, [])
        self.assertIn("Oops: 0010", self.out.getvalue(), "the oops is still printed")

    def test_a_group_without_start_vms_prints_the_oops_and_does_not_retry(self):
        rep = Report(self.rig)   # booted some other way (the interop groups)
        tries = []

        def check():
            tries.append(1)
            self.rig.say(0, OOPS_612)
            raise Fail("matrix test")
        with contextlib.redirect_stdout(self.out):
            self.assertFalse(rep.run("matrix", check))
        self.assertEqual((len(tries), self.rig.calls), (1, []))
        self.assertIn("not retried", rep.results[-1][3])
        self.assertEqual([o[3] for o in rep.oopses], [None])

    def test_fresh_vms_that_do_not_boot_fail_the_check(self):
        def check():
            self.rig.say(0, OOPS_612)
            raise Fail("first")

        def no_boot(*args, **_kw):
            self.rig.calls.append(args)
            if args[0] == "start":
                raise Fail("vm0 did not boot within 120 s")
            return types.SimpleNamespace(returncode=0, stdout="", stderr="")
        self.rig.cmd = no_boot
        self.assertFalse(self.run_check("workload", check))
        self.assertIn("fresh VMs did not boot or set up: vm0 did not boot", self.rep.results[-1][3])
        self.assertEqual(self.rep.oopses[0][3], False)


if __name__ == "__main__":
    unittest.main()
