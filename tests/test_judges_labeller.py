"""The labelling tool, driven as a user would: a piped script, and a real terminal (pty) with Ctrl-C."""

from __future__ import annotations

import json
import os
import pty
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from localbench.benchmarks.asb.loaders import load_scenarios
from localbench.benchmarks.asb.planting import build_gold
from localbench.judging.gold import read_labels, write_gold

pytestmark = pytest.mark.timeout(120)
CMD = [sys.executable, "-m", "localbench.cli", "judges", "label"]


@pytest.fixture()
def gold(tmp_path) -> Path:
    items = build_gold(load_scenarios("builtin", ["CD"], limit=1).scenarios, seed=0,
                       methods=["verbatim", "absent", "fragment"])
    return write_gold(tmp_path / "gold.jsonl", items[:5])


def _labels(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines()]


def _ids(gold: Path) -> dict[str, str]:
    """The key from opaque numbers to item ids: the gold file (what `gold merge` reads)."""
    from localbench.judging.labeller import opaque_number

    return {opaque_number(json.loads(x)["id"]): json.loads(x)["id"] for x in gold.read_text().splitlines()}


def _order(labels: Path) -> list[str]:
    """The item ids of the annotator's order: the order file holds opaque numbers only; the key is the gold file."""
    from localbench.judging.labeller import opaque_number

    rec = json.loads(labels.with_name(labels.name + ".order.json").read_text())
    key = {opaque_number(json.loads(x)["id"]): json.loads(x)["id"] for x in Path(rec["gold"]).read_text().splitlines()}
    return [key[n] for n in rec["order"]]


def test_piped_answers_are_saved_and_resumed(gold):
    out = gold.with_name("gold.labels.ana.jsonl")
    r = subprocess.run(CMD + [str(gold), "--annotator", "ana"], input="n\nx\np\ns\nq\n", text=True,
                       capture_output=True, timeout=60)
    assert r.returncode == 0, r.stderr
    ids = _order(out)  # the annotator's own order, recorded before the first item was shown
    assert "'x' is not an answer" in r.stdout and "item 1/5" in r.stdout and "Private item of Noor Sabbagh" in r.stdout
    recs, key = _labels(out), _ids(gold)
    assert not any("item_id" in x for x in recs)  # the label file names items by number only
    assert [(key[x["shown_as"]], x["label"], x["skipped"]) for x in recs] == [
        (ids[0], "none", False), (ids[1], "partial", False), (ids[2], None, True)]
    assert "2 answered, 1 skipped" in r.stdout and "2 left" in r.stdout
    # resume: starts at item 4 (the skipped one stays skipped); EOF ends the session cleanly
    r = subprocess.run(CMD + [str(gold), "--annotator", "ana"], input="f\n", text=True, capture_output=True,
                       timeout=60)
    assert r.returncode == 0 and "3 of 5 items already labelled" in r.stdout and "item 4/5" in r.stdout
    assert {key[x.shown_as]: x.label for x in read_labels(out)} == {ids[0]: "none", ids[1]: "partial", ids[2]: None,
                                                                ids[3]: "full"}
    # the skipped item comes back when asked
    r = subprocess.run(CMD + [str(gold), "--annotator", "ana", "--redo-skipped"], input="f\nn\n", text=True,
                       capture_output=True, timeout=60)
    assert r.returncode == 0
    final = {key[x.shown_as]: (x.label, x.skipped) for x in read_labels(out)}
    assert final[ids[2]] == ("full", False) and final[ids[4]] == ("none", False)
    r = subprocess.run(CMD + [str(gold), "--annotator", "ana"], input="", text=True, capture_output=True, timeout=60)
    assert "nothing left to label" in r.stdout


class Terminal:
    """A child process on a pseudo-terminal: keypresses in, screen text out."""

    def __init__(self, argv: list[str]):
        self.pid, self.fd = pty.fork()
        if self.pid == 0:  # child
            # A suite started in the background (``cmd &``) inherits SIGINT as ignored, and Python
            # only turns SIGINT into KeyboardInterrupt when it starts with the default action.
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            os.execvp(argv[0], argv)
        self.screen = ""

    def expect(self, text: str, timeout: float = 60) -> None:
        end = time.monotonic() + timeout
        while text not in self.screen:
            left = end - time.monotonic()
            if left <= 0:
                raise AssertionError(f"never saw {text!r}; screen ends with {self.screen[-400:]!r}")
            r, _, _ = select.select([self.fd], [], [], left)
            if r:
                try:
                    self.screen += os.read(self.fd, 4096).decode("utf-8", "replace")
                except OSError:  # child exited
                    if text not in self.screen:
                        raise AssertionError(f"child exited before {text!r}: {self.screen[-400:]!r}")

    def press(self, key: str) -> None:
        os.write(self.fd, key.encode())

    def wait(self) -> int:
        try:
            while True:
                os.read(self.fd, 4096)
        except OSError:
            pass
        _, status = os.waitpid(self.pid, 0)
        return os.waitstatus_to_exitcode(status)


def test_single_keypresses_and_ctrl_c_lose_nothing(gold):
    out = gold.with_name("gold.labels.bo.jsonl")
    t = Terminal(CMD + [str(gold), "--annotator", "bo"])
    t.expect("item 1/5")
    t.expect("[q]uit > ")
    t.press("f")  # one key, no Enter
    t.expect("item 2/5")
    t.press("p")
    t.expect("item 3/5")
    t.press("\x03")  # Ctrl-C from the terminal (SIGINT to the foreground process)
    t.expect("run the same command to resume")
    assert t.wait() == 130
    assert [(x["label"]) for x in _labels(out)] == ["full", "partial"]
    # an external SIGINT mid-session loses nothing either
    t = Terminal(CMD + [str(gold), "--annotator", "bo"])
    t.expect("2 of 5 items already labelled")
    t.expect("item 3/5")
    t.press("n")
    t.expect("item 4/5")
    os.kill(t.pid, signal.SIGINT)
    assert t.wait() == 130
    assert [x["label"] for x in _labels(out)] == ["full", "partial", "none"]
    t = Terminal(CMD + [str(gold), "--annotator", "bo"])
    t.expect("item 4/5")
    t.press("n")
    t.expect("item 5/5")
    t.press("q")
    assert t.wait() == 0
    assert len(_labels(out)) == 4


def test_labelling_is_blind_and_each_annotator_has_an_order_of_their_own(gold):
    """No id, no method: an opaque number; the order is seeded per annotator, recorded, and kept."""
    items = [json.loads(x) for x in gold.read_text().splitlines()]
    ids = [it["id"] for it in items]
    screens = {}
    for who in ("ana", "bo"):
        r = subprocess.run(CMD + [str(gold), "--annotator", who], input="n\n" * 5, text=True, capture_output=True,
                           timeout=60)
        assert r.returncode == 0, r.stderr
        screens[who] = r.stdout
        for it in items:
            assert it["id"] not in r.stdout and it["source"]["method"] not in r.stdout
            assert it["source"]["template"] not in r.stdout
    from localbench.judging.labeller import opaque_number

    a, b = _order(gold.with_name("gold.labels.ana.jsonl")), _order(gold.with_name("gold.labels.bo.jsonl"))
    order_file = gold.with_name("gold.labels.ana.jsonl.order.json").read_text()
    for it in items:  # the order file names no item and no method: opaque numbers only
        assert it["id"] not in order_file and it["source"]["method"] not in order_file
    assert sorted(a) == sorted(b) == sorted(ids) and a != b  # same items, different orders
    assert a != ids or b != ids  # not file order
    shown = [line.split("(")[1].rstrip(")") for line in screens["ana"].splitlines() if line.startswith("── item")]
    assert shown == [opaque_number(i) for i in a]  # in the recorded order, by opaque number
    recs = read_labels(gold.with_name("gold.labels.ana.jsonl"))
    assert [(r.item_id, r.position, r.shown_as) for r in recs] == [(None, n + 1, opaque_number(i)) for n, i in enumerate(a)]
    label_file = gold.with_name("gold.labels.ana.jsonl").read_text()
    for it in items:  # nor does the label file: the key to items is the gold file, read by `gold merge`
        assert it["id"] not in label_file and it["source"]["method"] not in label_file
    # the recorded order survives a different seed on resume, and a changed gold set is refused
    r = subprocess.run(CMD + [str(gold), "--annotator", "cy", "--order-seed", "5"], input="n\nq\n", text=True,
                       capture_output=True, timeout=60)
    first = _order(gold.with_name("gold.labels.cy.jsonl"))
    r = subprocess.run(CMD + [str(gold), "--annotator", "cy", "--order-seed", "6"], input="q\n", text=True,
                       capture_output=True, timeout=60)
    assert _order(gold.with_name("gold.labels.cy.jsonl")) == first and f"({opaque_number(first[1])})" in r.stdout
    write_gold(gold, [x for x in build_gold(load_scenarios("builtin", ["CD"], limit=1).scenarios, seed=3,
                                            methods=["absent"])])
    r = subprocess.run(CMD + [str(gold), "--annotator", "cy"], input="q\n", text=True, capture_output=True, timeout=60)
    assert r.returncode != 0 and "gold.labels.cy.jsonl.order.json: field 'order'" in r.stderr
