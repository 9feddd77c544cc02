"""Cases about a changing knowledge base, through the library (`setree.maintain.KnowledgeBase`) and the `setree`
command: empty input followed by an insert (C-01 d), an updated fact (C-07), a deleted fact with a process restart
(C-08). The concurrent-writers case (C-22) is in test_maintain_concurrency.py."""
import json, subprocess, sys
import numpy as np
import pytest

pytest.importorskip("setree.maintain")
from setree.embed import get_embedder
from setree.maintain import KnowledgeBase

H = get_embedder("hashing")

def run(*args, input=None, timeout=300):
    code = "import sys; from setree.cli import main; sys.exit(main(sys.argv[1:]))"
    return subprocess.run([sys.executable, "-c", code, *map(str, args)], input=input, capture_output=True, text=True,
                          timeout=timeout, encoding="utf-8")

def all_texts(tree): return "\n".join(tree.texts)

# ---- C-01 d: empty knowledge base, then one insert
def test_c01d_library(tmp_path):
    with KnowledgeBase(tmp_path / "kb.db", embedder=H) as kb:
        kb.build([]); kb.maintain()
        st = kb.stats(); assert (st["facts"], st["nodes"]) == (0, 0)
        c = kb.retrieve("anything", budget=200)
        assert c.items == [] and c.status != "ok"               # an explicit empty signal, not a crash
        kb.insert("the user writes C++20"); rep = kb.maintain()
        assert rep["error"] is None and rep["inserted"] == 1
        assert kb.stats()["facts"] == 1
        c = kb.retrieve("anything", budget=200)
        assert [i.text for i in c.items] == ["the user writes C++20"]

def test_c01d_cli(tmp_path):
    db, empty = tmp_path / "kb.db", tmp_path / "empty.txt"
    empty.write_text("", encoding="utf-8")
    p = run("build", empty, "--db", db, "--embedder", "hashing", "--quiet")   # refused or built: never a traceback
    assert "Traceback" not in p.stderr and (p.returncode == 0 or "no facts" in p.stderr), p.stderr
    with KnowledgeBase(db, embedder=H) as kb: kb.build([]); kb.maintain()      # an empty knowledge base
    s = json.loads(run("stats", "--db", db, "--json").stdout); assert (s["facts"], s["nodes"]) == (0, 0)
    r = run("retrieve", "anything", "--db", db, "--budget", 200, "--json")
    assert "Traceback" not in r.stderr and json.loads(r.stdout)["items"] == []
    assert json.loads(r.stdout)["status"] == "empty"
    p = run("insert", "-", "--db", db, "--embedder", "hashing", input="the user writes C++20\n")
    assert p.returncode == 0, p.stderr
    r = json.loads(run("retrieve", "anything", "--db", db, "--budget", 200, "--json").stdout)
    assert r["status"] == "ok" and [i["text"] for i in r["items"]] == ["the user writes C++20"]

# ---- C-07: a newer, contradicting fact; and the update call
OLD, NEW = "the user writes C++17", "the user has moved to C++20 and no longer uses C++17"
OTHERS = ["the user prefers dark mode", "the user lives near a lake", "the user grows tomatoes", "the user builds with CMake"]

def test_c07_insert_keeps_both_and_shows_newer(tmp_path):
    with KnowledgeBase(tmp_path / "kb.db", embedder=H) as kb:
        kb.insert([OLD] + OTHERS); kb.maintain()
        ack = kb.insert(NEW); kb.maintain()
        assert ack.op == "insert" and len(ack.ids) == 1
        texts = {f.text for f in kb.tree().facts}
        assert OLD in texts and NEW in texts                    # an insert never silently deletes anything
        assert NEW in kb.retrieve("which C++ standard", budget=300).render()

def test_c07_update_replaces_everywhere(tmp_path):
    with KnowledgeBase(tmp_path / "kb.db", embedder=H) as kb:
        kb.insert([OLD] + OTHERS); kb.maintain()
        fid = next(f.id for f in kb.tree().facts if f.text == OLD)
        up = kb.update(fid, "the user writes C++20"); rep = kb.maintain()
        assert up.op == "update" and up.ids == [fid] and rep["error"] is None and rep["updated"] == 1
        t = kb.tree()
        assert OLD not in all_texts(t)                          # not in the leaf, not quoted in any ancestor summary
        f = next(f for f in t.facts if f.id == fid)
        assert f.text == "the user writes C++20"               # the id is kept
        assert len(t.facts) == 5
        assert "the user writes C++20" in kb.retrieve("which C++ standard", budget=300).render()

def test_c07_cli(tmp_path):
    db, facts = tmp_path / "kb.db", tmp_path / "f.txt"
    facts.write_text("\n".join([OLD] + OTHERS) + "\n", encoding="utf-8")
    assert run("build", facts, "--db", db, "--embedder", "hashing", "--quiet").returncode == 0
    p = run("insert", "-", "--db", db, "--embedder", "hashing", input=NEW + "\n"); assert p.returncode == 0, p.stderr
    out = run("retrieve", "which C++ standard", "--db", db, "--budget", 300).stdout
    assert NEW in out
    s = json.loads(run("stats", "--db", db, "--json").stdout); assert s["facts"] == 6
    with KnowledgeBase(db, embedder=H) as kb: oid = next(f.id for f in kb.tree().facts if f.text == OLD)
    p = run("update", oid, "the user writes C++20", "--db", db, "--embedder", "hashing"); assert p.returncode == 0, p.stderr
    assert OLD not in run("inspect", "--db", db).stdout and OLD not in run("retrieve", "C++", "--db", db, "--budget", 10000).stdout
    assert json.loads(run("stats", "--db", db, "--json").stdout)["facts"] == 6

# ---- C-08: a deleted fact, gone after a restart too
ACME = "the user's previous employer was Acme"
FIVE = [ACME, "the user prefers dark mode", "the user lives near a lake", "the user writes C++20", "the user has a cat named Miso"]

CHECK_AFTER_RESTART = r"""
import json, sys
from setree.embed import get_embedder
from setree.maintain import KnowledgeBase
with KnowledgeBase(sys.argv[1], embedder=get_embedder("hashing")) as kb:
    t = kb.tree()
    print(json.dumps({"out": kb.retrieve("employer", budget=10000).render(), "texts": t.texts, "facts": kb.stats()["facts"],
                      "nodes": kb.stats()["nodes"], "emb_rows": int(t.emb.shape[0])}))
"""

def test_c08_library_with_restart(tmp_path):
    db = tmp_path / "kb.db"
    with KnowledgeBase(db, embedder=H) as kb:
        kb.insert(FIVE); kb.maintain()
        before = kb.stats()
        aid = next(f.id for f in kb.tree().facts if f.text == ACME)
        assert "Acme" in kb.retrieve("employer", budget=10000).render()
        kb.forget(aid); rep = kb.maintain()
        assert rep["error"] is None and rep["forgotten"] == 1
        t = kb.tree()
        assert "Acme" not in kb.retrieve("employer", budget=10000).render() and "Acme" not in all_texts(t)
        assert kb.stats()["facts"] == before["facts"] - 1
        v = H.embed([ACME])[0]
        assert not np.any(np.all(np.isclose(t.emb, v), axis=1))        # its vector is gone
        others = sorted(f.text for f in t.facts); assert others == sorted(FIVE[1:])
        with pytest.raises(ValueError, match=aid):
            kb.forget(aid)                                             # unknown now: named in the error
    p = subprocess.run([sys.executable, "-c", CHECK_AFTER_RESTART, str(db)], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    r = json.loads(p.stdout)
    assert "Acme" not in r["out"] and not any("Acme" in x for x in r["texts"])
    assert r["facts"] == before["facts"] - 1 and r["nodes"] < before["nodes"]

def test_c08_cli_with_restart(tmp_path):
    db, facts = tmp_path / "kb.db", tmp_path / "f.txt"
    facts.write_text("\n".join(FIVE) + "\n", encoding="utf-8")
    assert run("build", facts, "--db", db, "--embedder", "hashing", "--quiet").returncode == 0
    n0 = json.loads(run("stats", "--db", db, "--json").stdout)["facts"]
    with KnowledgeBase(db, embedder=H) as kb: aid = next(f.id for f in kb.tree().facts if f.text == ACME)
    p = run("forget", aid, "--db", db, "--embedder", "hashing"); assert p.returncode == 0, p.stderr
    for _ in range(2):                                                  # each call is a fresh process: a restart
        out = run("retrieve", "employer", "--db", db, "--budget", 10000).stdout
        assert "Acme" not in out and out.count("the user") == 4
        assert "Acme" not in run("inspect", "--db", db).stdout
        assert json.loads(run("stats", "--db", db, "--json").stdout)["facts"] == n0 - 1
    p = run("forget", aid, "--db", db, "--embedder", "hashing")
    assert p.returncode != 0 and aid in p.stderr and "Traceback" not in p.stderr

def test_c08_forgotten_text_leaves_the_files(tmp_path):
    "After forget + pass + close, the forgotten text is in neither the store file nor its write-ahead log."
    from pathlib import Path
    db = tmp_path / "kb.db"
    with KnowledgeBase(db, embedder=H) as kb:
        kb.insert(FIVE); kb.maintain()
        kb.forget(next(f.id for f in kb.tree().facts if f.text == ACME)); kb.maintain()
    files = [p for p in (db, Path(str(db) + "-wal")) if p.exists()]
    assert not any(b"Acme" in p.read_bytes() for p in files), [p.name for p in files if b"Acme" in p.read_bytes()]
