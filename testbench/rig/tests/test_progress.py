#!/usr/bin/env python3
"""simnic-rig's progress line (issue 16: long operations show progress on a
terminal and stay quiet in scripts): one line rewritten in place and erased
at the end when the stream is a terminal, nothing otherwise or with
SIMNIC_NO_PROGRESS set, and log lines never glued to it. No VM."""

import importlib.machinery
import importlib.util
import io
import os
import sys
import unittest

HERE = os.path.dirname(os.path.realpath(__file__))
_loader = importlib.machinery.SourceFileLoader("simnic_rig", os.path.join(HERE, "..", "simnic-rig"))
rig = importlib.util.module_from_spec(importlib.util.spec_from_loader("simnic_rig", _loader))
_loader.exec_module(rig)


class Tty(io.StringIO):
    def __init__(self, tty=True):
        super().__init__()
        self.tty = tty

    def isatty(self):
        return self.tty


class ProgressLine(unittest.TestCase):
    def setUp(self):
        os.environ.pop("SIMNIC_NO_PROGRESS", None)

    def test_rewritten_in_place_and_erased(self):
        t = Tty()
        p = rig.Progress("simnic-rig: setup 6.1", stream=t)
        p.show("[1/4] the kernel package", force=True)
        p.show("[2/4] extracting", force=True)
        p.done()
        self.assertEqual(t.getvalue(), "\r\x1b[Ksimnic-rig: setup 6.1: [1/4] the kernel package"
                                       "\r\x1b[Ksimnic-rig: setup 6.1: [2/4] extracting\r\x1b[K")

    def test_at_most_ten_a_second_unless_forced(self):
        t = Tty()
        p = rig.Progress("x", stream=t)
        for n in range(100):
            p.show(f"{n} files")
        self.assertEqual(t.getvalue().count("\r\x1b[K"), 1)
        p.show("compressing", force=True)
        self.assertTrue(t.getvalue().endswith("x: compressing"))

    def test_quiet_when_not_a_terminal(self):
        t = Tty(tty=False)
        p = rig.Progress("x", stream=t)
        p.show("step", force=True)
        p.done()
        self.assertEqual(t.getvalue(), "")

    def test_quiet_with_simnic_no_progress(self):
        os.environ["SIMNIC_NO_PROGRESS"] = "1"
        try:
            t = Tty()
            p = rig.Progress("x", stream=t)
            p.show("step", force=True)
            self.assertEqual(t.getvalue(), "")
        finally:
            del os.environ["SIMNIC_NO_PROGRESS"]

    def test_a_log_line_erases_the_progress_first(self):
        t = Tty()
        p = rig.Progress("x", stream=t)
        p.show("step", force=True)
        old = sys.stderr
        sys.stderr = t
        try:
            rig.log("downloading linux-image")
        finally:
            sys.stderr = old
            p.done()
        self.assertIn("x: step\r\x1b[Ksimnic-rig: downloading linux-image\n", t.getvalue())


if __name__ == "__main__":
    unittest.main()
