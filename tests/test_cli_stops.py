"""A stop signal, or a failure, at the moments a sweep of timed Ctrl-Cs found: a build whose own pass does not complete is withdrawn
(the store is as it was), a failure that follows a stop signal is reported as the interruption, and a store the command created is not
left behind. Each moment is made deterministic by a patch that sends the signal to the process itself, in a real `setree` process."""
import json, signal, subprocess, sys, tempfile
import pytest

PRELUDE = """
import os, signal, sys, time
import setree.cli as cli, setree.maintain as m
from setree.store import StoreError
def stop(sig=signal.SIGINT):
    "The stop signal arrives now; its KeyboardInterrupt, raised inside an extension module's import, comes out as an ImportError."
    try: os.kill(os.getpid(), sig); time.sleep(0.5)
    except KeyboardInterrupt: raise ImportError("initialization failed") from None
"""
RUN = "\nsys.exit(cli.main(sys.argv[1:]))\n"

def setree(*args, patch="", input=None):
    "`setree ARGS` in a fresh process, after the Python lines `patch` (which may use `stop`)."
    return subprocess.run([sys.executable, "-c", PRELUDE + patch + RUN, *map(str, args)], capture_output=True, text=True, input=input, timeout=300,
                          cwd=tempfile.gettempdir())   # (not a folder holding a `setree` package: the installed one is imported)

def stats(db):
    r = setree("stats", "--db", db, "--json"); assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)

@pytest.fixture
def kb(tmp_path):
    "A store of 12 facts (hashing embedder) and a file of 40 other facts."
    small, other, db = tmp_path / "small.txt", tmp_path / "other.txt", tmp_path / "kb.db"
    small.write_text("".join(f"the user keeps note number {i} about cats\n" for i in range(12)), encoding="utf-8")
    other.write_text("".join(f"the user planted tree number {i} in the garden\n" for i in range(40)), encoding="utf-8")
    r = setree("build", small, "--db", db, "--embedder", "hashing", "--quiet"); assert r.returncode == 0, r.stderr
    return db, other

IMPORT_CUT = """
real = m.KnowledgeBase._run_pass
def cut(self, *a, **kw): stop(signal.%s); return real(self, *a, **kw)
m.KnowledgeBase._run_pass = cut
"""

@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_that_surfaces_as_the_pass_error_withdraws_the_build(kb, sig):
    "Before: `maintenance pass failed: ImportError: initialization failed; the build is queued (seq 2)`, exit 1, and the next insert replaced the store."
    db, other = kb
    r = setree("build", other, "--db", db, "--replace", "--quiet", patch=IMPORT_CUT % sig.name)
    assert (r.returncode, r.stderr) == (128 + sig, "setree: interrupted; the build was withdrawn (seq 2); the store is as it was\n"), (r.returncode, r.stderr)
    assert r.stdout == "", r.stdout                                        # before: `build: 40 fact(s) … (seq 2)`, an ack of a change no pass applies
    assert (stats(db)["facts"], stats(db)["pending"]) == (12, 0)
    r = setree("insert", "-", "--db", db, input="the user adds one small fact\n"); assert r.returncode == 0, r.stderr
    assert stats(db)["facts"] == 13                                        # the insert applied itself only

def test_a_signal_that_surfaces_as_an_insert_pass_error_is_an_interruption(kb):
    "An insert: the same interruption as a Ctrl-C at any other moment of its pass (withdrawn), not `ImportError` exit 1."
    db, _ = kb
    r = setree("insert", "-", "--db", db, patch=IMPORT_CUT % "SIGINT", input="the user adds one small fact\n")
    assert r.returncode == 130 and r.stderr.endswith("setree: interrupted; the insert was withdrawn (seq 2); the store is as it was\n"), r.stderr
    assert (stats(db)["facts"], stats(db)["pending"]) == (12, 0)

def test_a_withdrawn_build_has_no_ack_in_its_json(kb):
    "--json: the interruption's object says `withdrawn`; before, it carried the build's `ack` as if it were queued."
    db, other = kb
    r = setree("build", other, "--db", db, "--replace", "--quiet", "--json", patch=IMPORT_CUT % "SIGINT")
    j = json.loads(r.stdout)
    assert (r.returncode, j["kind"], j["withdrawn"], "ack" in j) == (130, "interrupted", True, False), j
    assert j["error"] == "interrupted; the build was withdrawn (seq 2); the store is as it was", j

MAINTAIN_CUT = """
real = m.KnowledgeBase._run_pass
def cut(self, *a, **kw): os.kill(os.getpid(), signal.SIGINT); time.sleep(0.5); return real(self, *a, **kw)
m.KnowledgeBase._run_pass = cut
"""

@pytest.mark.parametrize("patch", [MAINTAIN_CUT, IMPORT_CUT % "SIGINT"], ids=["keyboard-interrupt", "as-the-pass-error"])
def test_a_stopped_maintain_says_what_it_left(kb, patch):
    "Before: `setree: interrupted` alone. The pass commits all or nothing: the tree and the queue are as they were, and the next maintain applies them."
    db, _ = kb
    for text in ("the user adds one small fact", "the user adds another small fact"):
        assert setree("insert", "-", "--db", db, "--defer", input=text + "\n").returncode == 0
    r = setree("maintain", "--db", db, "--json", patch=patch)
    assert r.returncode == 130 and r.stderr == ("setree: interrupted; the maintenance pass was stopped: the last applied tree and the queue are intact "
                                                f"(2 changes still queued); `setree maintain --db {db}` applies them\n"), r.stderr
    assert json.loads(r.stdout)["error"] == r.stderr.removeprefix("setree: ").strip()
    assert (stats(db)["facts"], stats(db)["pending"]) == (12, 2)
    assert setree("maintain", "--db", db).returncode == 0 and (stats(db)["facts"], stats(db)["pending"]) == (14, 0)

AFTER_QUEUE = """
real = m.KnowledgeBase.build
def queued_then_stopped(self, *a, **kw):
    ack = real(self, *a, **kw)                   # committed: durable in the store
    os.kill(os.getpid(), signal.SIGINT); time.sleep(0.3)   # Ctrl-C before the command has the ack in hand
    return ack
m.KnowledgeBase.build = queued_then_stopped
"""

def test_a_signal_right_after_the_build_is_queued_withdraws_it(kb):
    "Before: a plain `setree: interrupted`, exit 130, with the build left queued (`pending: 1`)."
    db, other = kb
    r = setree("build", other, "--db", db, "--replace", "--quiet", patch=AFTER_QUEUE)
    assert (r.returncode, r.stderr) == (130, "setree: interrupted; the build was withdrawn (seq 2); the store is as it was\n"), (r.returncode, r.stderr)
    assert (stats(db)["facts"], stats(db)["pending"]) == (12, 0)

FAILS = """
def fails(self, *a, **kw): raise RuntimeError("the summarizer is down")
m.KnowledgeBase._run_pass = fails
"""

def test_a_failed_build_pass_withdraws_the_build_and_an_insert_stays_queued(kb):
    "No signal: a build whose pass fails is withdrawn (before: it stayed queued for the next command to apply); an insert stays queued."
    db, other = kb
    r = setree("build", other, "--db", db, "--replace", "--quiet", "--json", patch=FAILS)
    assert r.returncode == 1 and r.stderr == ("setree: error: maintenance pass failed: RuntimeError: the summarizer is down; "
                                              "the build was withdrawn (seq 2); the store is as it was\n"), r.stderr
    j = json.loads(r.stdout); assert (j["kind"], j["withdrawn"], j["ack"]["seq"]) == ("pass_failed", True, 2), j
    assert (stats(db)["facts"], stats(db)["pending"]) == (12, 0)
    r = setree("insert", "-", "--db", db, patch=FAILS, input="the user adds one small fact\n")
    assert r.returncode == 1 and r.stderr.endswith(f"the insert is queued (seq 3): `setree maintain --db {db}` retries it\n"), r.stderr
    assert stats(db)["pending"] == 1
    assert setree("maintain", "--db", db).returncode == 0 and (stats(db)["facts"], stats(db)["pending"]) == (13, 0)

def test_a_failed_first_build_removes_the_store_it_created(tmp_path):
    "A failed pass of a build that created the store: withdrawn, and the store it created removed (as before)."
    (tmp_path / "f.txt").write_text("one fact about cats\nanother fact about dogs\n", encoding="utf-8")
    r = setree("build", tmp_path / "f.txt", "--db", tmp_path / "n.db", "--embedder", "hashing", "--quiet", patch=FAILS)
    assert r.returncode == 1 and "the store it had created" in r.stderr and "is removed" in r.stderr, r.stderr
    assert sorted(x.name for x in tmp_path.iterdir()) == ["f.txt"]

OPEN_CUT = """
real = m.KnowledgeBase.__init__
def opened_then_cut(self, *a, **kw):
    real(self, *a, **kw)                         # the file is created
    try: os.kill(os.getpid(), signal.SIGINT); time.sleep(0.5)
    except KeyboardInterrupt: raise StoreError(f"store {self.path}: cannot rollback - no transaction is active") from None
m.KnowledgeBase.__init__ = opened_then_cut
"""

@pytest.mark.parametrize("patch", [OPEN_CUT, IMPORT_CUT % "SIGINT"], ids=["while-opening", "in-the-pass"])
def test_a_signal_during_the_first_build_leaves_no_file(tmp_path, patch):
    "Before: `... is not a usable setree store: cannot rollback ...` exit 2 or `the build failed: ImportError` exit 1, and n.db left behind."
    (tmp_path / "f.txt").write_text("one fact about cats\nanother fact about dogs\n", encoding="utf-8")
    r = setree("build", tmp_path / "f.txt", "--db", tmp_path / "n.db", "--embedder", "hashing", "--quiet", patch=patch)
    removed = f"the store it had created, {(tmp_path / 'n.db').resolve()}, is removed"
    assert r.returncode == 130 and r.stderr.startswith("setree: interrupted") and r.stderr.rstrip().endswith(removed), (r.returncode, r.stderr)
    assert sorted(x.name for x in tmp_path.iterdir()) == ["f.txt"]

def test_a_signal_while_opening_an_existing_store_keeps_it(kb):
    "A store that was there before the command is never removed, even when the command is stopped before it queued anything."
    db, other = kb
    r = setree("insert", other, "--db", db, patch=OPEN_CUT)
    assert (r.returncode, r.stderr) == (130, "setree: interrupted\n"), (r.returncode, r.stderr)
    assert (stats(db)["facts"], stats(db)["pending"]) == (12, 0)

def test_a_build_reports_the_facts_its_pass_replaced(kb, monkeypatch, capsys):
    "An insert acknowledged between the build's count and its pass is replaced too: before, `replaced the 12 facts` while the pass replaced 13."
    import setree.cli as cli
    from setree.maintain import KnowledgeBase
    db, other = kb
    real = cli._count_facts
    def count_then_insert(path):
        n = real(path)
        with KnowledgeBase(path) as other_kb: other_kb.insert("a fact another process added meanwhile"); other_kb.maintain()
        return n
    monkeypatch.setattr(cli, "_count_facts", count_then_insert)
    assert cli.main(["build", str(other), "--db", str(db), "--replace", "--quiet", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["replaced_facts"] == 13
    assert cli.main(["build", str(other), "--db", str(db), "--replace", "--quiet"]) == 0   # (this one's count: 40 + 1, the pass's too)
    assert "replaced the 41 facts the store held" in capsys.readouterr().out
