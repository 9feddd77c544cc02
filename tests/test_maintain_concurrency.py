"""Three processes on one store (the concurrent-writers case, C-22): one inserts 200 facts one by one through the
`setree insert --defer` command (its `main`, in a loop inside one process), one runs `setree maintain` every 0.5 s
(fresh processes), one retrieves in a loop through the library. No fact is lost, no lock error reaches a user, and the
final count is the start count + 200."""
import json, subprocess, sys, time
import pytest

INSERTER = r"""
import io, json, sys, contextlib, time
from setree.cli import main
db, out = sys.argv[1], sys.argv[2]
fails = []
for i in range(200):
    f = out + ".fact.txt"
    with open(f, "w", encoding="utf-8") as fh: fh.write(f"concurrent fact {i}: the user visited place {i * 31 % 97} on day {i}\n")
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        rc = main(["insert", f, "--db", db, "--defer", "--embedder", "hashing"])
    if rc != 0: fails.append((i, rc, err.getvalue()))
    time.sleep(0.02)   # spread the inserts over several passes
json.dump({"fails": fails}, open(out, "w"))
"""

RETRIEVER = r"""
import json, sys, time
from setree.embed import get_embedder
from setree.maintain import KnowledgeBase
db, out, stop = sys.argv[1], sys.argv[2], sys.argv[3]
import os
n, errors = 0, []
with KnowledgeBase(db, embedder=get_embedder("hashing"), readonly=True) as kb:
    while not os.path.exists(stop):
        try:
            c = kb.retrieve("which place did the user visit", budget=200); n += 1
        except Exception as e: errors.append(repr(e))
json.dump({"calls": n, "errors": errors}, open(out, "w"))
"""

def cli(*args, timeout=120):
    code = "import sys; from setree.cli import main; sys.exit(main(sys.argv[1:]))"
    return subprocess.run([sys.executable, "-c", code, *map(str, args)], capture_output=True, text=True, timeout=timeout,
                          encoding="utf-8")

def test_three_processes(tmp_path):
    pytest.importorskip("setree.maintain")
    from setree.embed import get_embedder
    from setree.maintain import KnowledgeBase
    db = tmp_path / "kb.db"
    start = [f"start fact {i}: the user owns item {i}" for i in range(30)]
    with KnowledgeBase(db, embedder=get_embedder("hashing")) as kb:
        kb.insert(start); kb.maintain(); n0 = kb.stats()["facts"]
    assert n0 == 30
    stop = tmp_path / "stop"
    ins = subprocess.Popen([sys.executable, "-c", INSERTER, str(db), str(tmp_path / "ins.json")])
    ret = subprocess.Popen([sys.executable, "-c", RETRIEVER, str(db), str(tmp_path / "ret.json"), str(stop)])
    maint_errors, passes, t0 = [], 0, time.time()
    while ins.poll() is None and time.time() - t0 < 90:
        p = cli("maintain", "--db", db, "--embedder", "hashing")
        passes += 1
        if p.returncode != 0: maint_errors.append(p.stderr)
        time.sleep(0.5)
    assert ins.wait(timeout=60) == 0
    p = cli("maintain", "--db", db, "--embedder", "hashing")            # drain what the last insert queued
    assert p.returncode == 0, p.stderr
    stop.write_text("")
    assert ret.wait(timeout=60) == 0
    fails = json.loads((tmp_path / "ins.json").read_text())["fails"]
    rr = json.loads((tmp_path / "ret.json").read_text())
    assert fails == [], fails[:3]
    assert maint_errors == [], maint_errors[:3]
    assert rr["errors"] == [] and rr["calls"] > 0, rr["errors"][:3]
    assert not any("locked" in e for e in maint_errors + [f[2] for f in fails] + rr["errors"])
    assert passes >= 1
    with KnowledgeBase(db, embedder=get_embedder("hashing")) as kb:
        st = kb.stats(); texts = {f.text for f in kb.tree().facts}
        assert st["pending"] == 0 and st["integrity"] == "ok"
        assert st["facts"] == n0 + 200
        assert all(f"concurrent fact {i}: the user visited place {i * 31 % 97} on day {i}" in texts for i in range(200))
        from setree.core import check_tree
        check_tree(kb.tree())

def test_one_object_many_threads(tmp_path):
    "The server's pattern: one KnowledgeBase, a writer thread running passes, reader threads, inserts from the main thread."
    import threading
    pytest.importorskip("setree.maintain")
    from setree.embed import get_embedder
    from setree.maintain import KnowledgeBase
    errors, stop = [], threading.Event()
    with KnowledgeBase(tmp_path / "kb.db", embedder=get_embedder("hashing")) as kb:
        kb.insert([f"start fact {i}: the user owns item {i}" for i in range(20)]); kb.maintain()
        def loop(fn):
            while not stop.is_set():
                try: fn()
                except Exception as e: errors.append(repr(e))
        threads = [threading.Thread(target=loop, args=(f,)) for f in
                   (lambda: (kb.maintain(), time.sleep(0.05)), lambda: kb.retrieve("which item", budget=150), lambda: kb.stats())]
        for t in threads: t.start()
        for i in range(60): kb.insert(f"thread fact {i}: the user met friend {i} at cafe {i % 7}")
        stop.set()
        for t in threads: t.join(timeout=60)
        kb.maintain()
        assert errors == [], errors[:3]
        st = kb.stats()
        assert st["facts"] == 80 and st["pending"] == 0
        assert {f"thread fact {i}: the user met friend {i} at cafe {i % 7}" for i in range(60)} <= {f.text for f in kb.tree().facts}

CLOSER = r"""
import sys
from setree.embed import get_embedder
from setree.maintain import KnowledgeBase
with KnowledgeBase(sys.argv[1], embedder=get_embedder("hashing")) as kb:
    kb.insert(sys.argv[2]); kb.maintain()
"""

def test_open_store_keeps_its_wal_when_another_process_closes(tmp_path):
    """While one process holds a KnowledgeBase open, another process that opens, writes and closes the same store must not
    think it is the last connection: deleting the WAL and shared-memory files under a live connection loses commits and
    corrupts the store. (Closing any descriptor of the database file, e.g. a header check with open()/close() while another
    connection of the process is open, releases all of that process's POSIX locks on the file.)"""
    pytest.importorskip("setree.maintain")
    from setree.embed import get_embedder
    from setree.maintain import KnowledgeBase
    db = tmp_path / "kb.db"; wal, shm = tmp_path / "kb.db-wal", tmp_path / "kb.db-shm"
    with KnowledgeBase(db, embedder=get_embedder("hashing")) as kb:
        kb.insert(["the user likes tea", "the user likes maps", "the user has a cat"]); kb.maintain()
    with KnowledgeBase(db, embedder=get_embedder("hashing")) as held:
        held.stats()
        subprocess.run([sys.executable, "-c", CLOSER, str(db), "the user runs on fridays"], check=True, timeout=120)
        assert wal.exists() and shm.exists(), "another process deleted the WAL/shm of a store this process holds open"
        assert held.stats()["facts"] == 4 and held.stats()["integrity"] == "ok"
