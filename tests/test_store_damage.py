"""A damaged store, a full disk and a directory this user cannot write, through the library, the command line and the MCP server:
one message and one exit code for each, nothing queued on a damaged store, no store left behind by a first build that failed."""
import json, os, sqlite3, subprocess, sys
from pathlib import Path
import pytest
from conftest import run_setree as run

FACTS = ["the sky is blue", "grass is green", "snow is white", "coal is black", "the sea is salty", "fire is hot", "ice is cold"]

def lines(p): return [l for l in p.stderr.splitlines() if l.strip()]

@pytest.fixture
def damaged(tmp_path):
    "A built store with one node row deleted by hand (the newcomer's recipe), its expected message, and a file of one new fact."
    (tmp_path / "facts.txt").write_text("\n".join(FACTS) + "\n"); (tmp_path / "more.txt").write_text("milk is white\n")
    db = tmp_path / "dmg.db"
    assert run("build", tmp_path / "facts.txt", "--db", db, "--embedder", "hashing", "--quiet").returncode == 0
    n = json.loads(run("stats", "--db", db, "--json").stdout)["nodes"]
    c = sqlite3.connect(db); c.execute("delete from nodes where rowid=(select max(rowid) from nodes)"); c.commit(); c.close()
    return db, f"store {db.resolve()} is damaged: {len(FACTS)} facts / {n - 1} nodes, meta says {len(FACTS)} / {n}"

NEXT = "; next step: restore a copy of the store, or rebuild it from its facts: `setree export --db PATH --out facts.jsonl` reads them without the tree, then `setree build facts.jsonl --db PATH --replace`"

def pending(db):
    from setree.store import Store
    with Store(db, readonly=True) as s: return s.queue_state()["pending"]

def test_damaged_store_refuses_changes_before_queuing(damaged):           # before: the insert was queued, then its pass failed
    db, msg = damaged
    for args in (("insert", db.parent / "more.txt"), ("forget", "f1"), ("update", "f1", "new text"), ("build", db.parent / "more.txt")):
        p = run(*args, "--db", db)
        assert p.returncode == 1 and len(lines(p)) == 1 and lines(p)[0].startswith(f"setree: error: {msg}"), (args, p.stderr)
        assert p.stdout == "" and "Error:" not in p.stderr, p                 # no acknowledgement, no class name
    assert pending(db) == 0
    p = run("insert", db.parent / "more.txt", "--db", db)
    assert "the insert is refused: nothing was queued" in p.stderr, p.stderr

def test_stats_reports_what_the_loader_finds(damaged):                     # before: `integrity: ok`
    db, msg = damaged
    for args in (("stats",), ("stats", "--json"), ("retrieve", "sky"), ("inspect",), ("maintain",)):
        p = run(*args, "--db", db)
        assert p.returncode == 1 and lines(p) == [f"setree: error: {msg}{NEXT}"], (args, p.stderr)
    from setree.maintain import KnowledgeBase
    from setree.store import Store, StoreDamaged
    with Store(db, readonly=True) as s:
        for f in (s.load, s.stats):
            with pytest.raises(StoreDamaged) as e: f()
            assert str(e.value) == msg + NEXT and e.value.detail == msg
    with KnowledgeBase(db) as kb:
        with pytest.raises(StoreDamaged, match="is damaged"): kb.stats()

def test_serve_refuses_a_damaged_store(damaged):                           # before: it served, every retrieve failed, the writer retried
    pytest.importorskip("mcp", reason="the MCP server tests need the SDK: pip install 'setree[mcp]'")
    db, msg = damaged
    p = subprocess.run([sys.executable, "-m", "setree.server", "--db", str(db), "--embedder", "hashing"], stdin=subprocess.DEVNULL,
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 1 and lines(p) == [f"setree serve: error: {msg}{NEXT}"], (p.returncode, p.stderr)
    assert p.stdout == ""

def full_disk(monkeypatch, pages:int):
    "Every connection setree opens sees a disk that is full once the store file holds `pages` pages (`PRAGMA max_page_count`)."
    import setree.store as st
    real = st._connect
    def connect(p, readonly, timeout_s):
        c = real(p, readonly, timeout_s)
        if not readonly: c.execute(f"PRAGMA max_page_count = {pages}")
        return c
    monkeypatch.setattr(st, "_connect", connect)

def big(tmp_path, n=1500):
    f = tmp_path / "big.txt"
    f.write_text("\n".join(f"fact {i}: the user noted item number {i * 7919 % 10007} on day {i % 365}" for i in range(n)) + "\n")
    return f

def test_full_disk_first_build_removes_the_store_it_created(tmp_path, monkeypatch):   # before: `RuntimeError: ... StoreError: ...`, store left
    full_disk(monkeypatch, 150)
    for cmd in ("build", "insert"):
        db = tmp_path / f"new-{cmd}.db"
        p = run(cmd, big(tmp_path), "--db", db, "--embedder", "hashing", *(["--quiet"] if cmd == "build" else []))
        err = lines(p)[-1]
        assert p.returncode == 1 and "Traceback" not in p.stderr and "Error" not in p.stderr, p.stderr
        assert err == f"setree: error: the {cmd} failed: store {db.resolve()}: database or disk is full; the store it had created, {db.resolve()}, is removed", err
        assert sorted(x.name for x in tmp_path.glob(f"new-{cmd}.db*")) == []

def test_full_disk_leaves_an_existing_store_intact(tmp_path, monkeypatch):
    from setree.store import Store, tree_diff
    (tmp_path / "facts.txt").write_text("\n".join(FACTS) + "\n")
    db = tmp_path / "kb.db"
    assert run("build", tmp_path / "facts.txt", "--db", db, "--embedder", "hashing", "--quiet").returncode == 0
    with Store(db, readonly=True) as s: before = s.load()
    with Store(db) as s: used = s.con.execute("PRAGMA page_count").fetchone()[0]
    full_disk(monkeypatch, used + 40)
    p = run("build", big(tmp_path), "--db", db, "--replace", "--quiet")
    assert p.returncode == 1 and "Error" not in p.stderr and len(lines(p)) == 1, p.stderr
    assert lines(p)[0].startswith(f"setree: error: maintenance pass failed: store {db.resolve()}: database or disk is full; the build was withdrawn (seq 2); the store is as it was"), p.stderr
    monkeypatch.undo()
    assert db.exists()
    with Store(db, readonly=True) as s: assert tree_diff(s.load(), before) == [] and s.stats()["integrity"] == "ok"

def test_new_store_in_a_directory_this_user_cannot_write(tmp_path, monkeypatch):   # before: `unable to open database file`
    ro = tmp_path / "ro"; ro.mkdir()
    (tmp_path / "facts.txt").write_text("\n".join(FACTS) + "\n")
    real = os.access
    monkeypatch.setattr(os, "access", lambda p, m, **kw: False if (m & os.W_OK and Path(p) == ro) else real(p, m, **kw))
    for cmd in ("build", "insert"):
        p = run(cmd, tmp_path / "facts.txt", "--db", ro / "new.db", "--embedder", "hashing")
        assert p.returncode == 2 and lines(p) == [f"setree: error: cannot create store {ro / 'new.db'}: directory {ro} is not writable"], p.stderr
    from setree.maintain import KnowledgeBase
    from setree.store import StoreError
    with pytest.raises(StoreError, match="is not writable"): KnowledgeBase(ro / "new.db")
    assert list(ro.iterdir()) == []

@pytest.fixture
def tmpfs(tmp_path):
    "A 2 MB tmpfs (root only, where mounting is allowed); skipped elsewhere."
    d = tmp_path / "tiny"; d.mkdir()
    if os.geteuid() != 0 or subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(d)], capture_output=True).returncode:
        pytest.skip("a real full disk needs a tmpfs mount (root, mount allowed); the simulated ones above still run")
    try: yield d
    finally: subprocess.run(["umount", "-l", str(d)], capture_output=True)

def test_a_real_full_disk(tmp_path, tmpfs):
    p = run("build", big(tmp_path, 3000), "--db", tmpfs / "full.db", "--embedder", "hashing", "--quiet", fresh=True)
    assert p.returncode == 1 and lines(p) == [f"setree: error: the build failed: store {tmpfs / 'full.db'}: database or disk is full; "
                                              f"the store it had created, {tmpfs / 'full.db'}, is removed"], p.stderr
    assert list(tmpfs.iterdir()) == []

def test_a_store_that_cannot_even_be_created_leaves_no_file(tmp_path, tmpfs):
    (tmp_path / "facts.txt").write_text("\n".join(FACTS) + "\n")
    with open(tmpfs / "filler", "wb") as f:   # fill the disk
        try:
            while True: f.write(b"\0" * 65536); f.flush()
        except OSError: pass
    p = run("insert", tmp_path / "facts.txt", "--db", tmpfs / "new.db", "--embedder", "hashing")
    assert p.returncode == 2 and lines(p) == [f"setree: error: cannot create store {tmpfs / 'new.db'}: database or disk is full"], p.stderr
    assert sorted(x.name for x in tmpfs.iterdir()) == ["filler"]

def test_a_damaged_page_is_the_same_damage_everywhere(tmp_path):
    "SQLite's own 'malformed' (a page overwritten): `StoreDamaged` from load and stats, exit 1 for a change, nothing queued."
    from conftest import damage_an_index_page
    from setree.store import Store, StoreDamaged
    (tmp_path / "facts.txt").write_text("\n".join(FACTS) + "\n"); (tmp_path / "more.txt").write_text("milk is white\n")
    db = tmp_path / "kb.db"
    assert run("build", tmp_path / "facts.txt", "--db", db, "--embedder", "hashing", "--quiet").returncode == 0
    damage_an_index_page(db)
    with Store(db, readonly=True) as s:
        for f in (s.load, s.stats):
            with pytest.raises(StoreDamaged, match="damaged"): f()
    for args in (("insert", tmp_path / "more.txt"), ("stats",), ("retrieve", "sky")):
        p = run(*args, "--db", db)
        assert p.returncode == 1 and len(lines(p)) == 1 and "damaged" in p.stderr and "Error" not in p.stderr, (args, p.stderr)
    c = sqlite3.connect(db); assert c.execute("SELECT count(*) FROM queue").fetchone()[0] == 0; c.close()


def test_replace_is_the_way_out_of_a_damaged_store(damaged):                # before: `build --replace` was refused as damaged too
    db, msg = damaged
    p = run("build", db.parent / "more.txt", "--db", db, "--replace", "--embedder", "hashing", "--quiet")
    assert p.returncode == 0, p.stderr
    assert json.loads(run("stats", "--db", db, "--json").stdout)["facts"] == 1

def test_a_truncated_file_is_damaged_exit_1(tmp_path):                      # before: "not a usable setree store: ... malformed", exit 2
    (tmp_path / "f.txt").write_text("\n".join(f"fact number {i} about things" for i in range(300)) + "\n")
    db = tmp_path / "t.db"
    assert run("build", tmp_path / "f.txt", "--db", db, "--embedder", "hashing", "--quiet").returncode == 0
    os.truncate(db, 40000)
    for args in (("stats",), ("retrieve", "fact")):
        p = run(*args, "--db", db)
        assert p.returncode == 1 and len(lines(p)) == 1 and "is damaged: database disk image is malformed" in p.stderr, (args, p.stderr)
        assert p.stderr.rstrip().endswith("move the file aside (with its -wal file, if there is one; keep them: they may still hold facts) and build anew with `setree build facts.jsonl --db PATH`"), p.stderr
    # the advice names export, which gives back the fact rows SQLite can still read (before: the advice left it out); of a file SQLite cannot
    # read at all (this one: its schema is cut off), export says so in one line, with a way out that does not send the user back to export
    p = run("export", "--db", db, "--out", tmp_path / "saved.jsonl")
    assert p.returncode == 1 and len(lines(p)) == 1 and "export cannot read its fact rows either; next step: restore a copy" in p.stderr, p.stderr
    assert "setree export" not in p.stderr and not (tmp_path / "saved.jsonl").exists(), p.stderr
    # the advice works (before: it said `--replace`, which SQLite cannot do on a file it cannot read, and failed with the same message)
    p = run("build", tmp_path / "f.txt", "--db", db, "--replace", "--embedder", "hashing", "--quiet")
    assert p.returncode == 1 and "move the file aside" in p.stderr, p.stderr
    for ext in ("", "-wal"):
        if Path(f"{db}{ext}").exists(): os.replace(f"{db}{ext}", f"{db}{ext}.damaged")
    assert run("build", tmp_path / "f.txt", "--db", db, "--embedder", "hashing", "--quiet").returncode == 0
    assert json.loads(run("stats", "--db", db, "--json").stdout)["facts"] == 300

def test_damage_found_while_serving(tmp_path):                              # before: insert queued, maintain said "pass finished", stats "ok"
    from setree.embed import get_embedder
    from setree.maintain import KnowledgeBase
    from setree.server import MemoryServer
    (tmp_path / "f.txt").write_text("a b\nc d\ne f\ng h\ni j\n"); db = tmp_path / "m4.db"
    assert run("build", tmp_path / "f.txt", "--db", db, "--embedder", "hashing", "--quiet").returncode == 0
    app = MemoryServer(KnowledgeBase(db, embedder=get_embedder("hashing")), quiet_s=0.05, poll_s=0.1).start()
    try:
        assert not app.call("stats", {}).is_error
        c = sqlite3.connect(db); c.execute("delete from nodes where k=(select max(k) from nodes where level=1)"); c.commit(); c.close()
        r = app.call("insert", {"facts": "a new fact"})
        assert r.is_error and "is damaged" in r.content[0].text and "nothing was queued" in r.content[0].text, r
        assert app.writer.damaged is not None and pending(db) == 0
        r = app.call("maintain", {})
        assert r.is_error and r.content[0].text.startswith("pass failed: ") and "is damaged" in r.content[0].text, r
        assert app.call("stats", {}).is_error
    finally: app.close()

# Damage no count of facts and nodes shows (member rows of a clustering level, a fact's row of a per-fact array, meta rows and values a
# pass relies on); before, reads passed and then every pass failed (retryable, forever) or the tree changed silently.
HIDDEN = [("DELETE FROM members WHERE l = 1", "its clustering level 1 has 0 member rows, not "),
          ("DELETE FROM members WHERE l = 0 AND k = 0", "its clustering level 0 has 39 member rows, not 40 (one per node it clusters)"),
          ("DELETE FROM fact_arrays WHERE k = 0", "its terms rows (a per-fact array) are missing for 1 of its 40 facts (first: fact "),
          ("DELETE FROM meta WHERE key = 'next_key'", "its meta row next_key is missing"),
          ("DELETE FROM meta WHERE key = 'generation'", "its meta row generation is missing"),
          ("DELETE FROM meta WHERE key = 'applied_seq'", "its meta row applied_seq is missing"),
          ("UPDATE meta SET value = value + 1 WHERE key = 'n_levels'", "its meta value n_levels = "),
          ("UPDATE meta SET value = value + 1 WHERE key = 'depth'", "its meta value depth = ")]

@pytest.mark.parametrize("sql,said", HIDDEN, ids=[s for s, _ in HIDDEN])
def test_damage_the_counts_do_not_show(tmp_path, sql, said):
    from setree.store import Store, StoreDamaged
    (tmp_path / "f.txt").write_text("\n".join(f"fact {i}: the user noted item {i * 7919 % 10007} on day {i % 365}" for i in range(40)) + "\n")
    (tmp_path / "more.txt").write_text("milk is white\n")
    db = tmp_path / "kb.db"
    assert run("build", tmp_path / "f.txt", "--db", db, "--embedder", "hashing", "--quiet").returncode == 0
    with Store(db, readonly=True) as s: assert s.stats()["facts"] == 40 and s.stats()["levels"] >= 2   # (sound, with a level 1)
    from setree.maintain import KnowledgeBase
    with KnowledgeBase(db) as kb: kb.insert("the sea is salty")        # queued while the store was sound, not applied: the pass below must refuse it
    c = sqlite3.connect(db); c.execute(sql); c.commit(); c.close()
    head = f"setree: error: store {db.resolve()} is damaged: "
    for args in (("stats",), ("retrieve", "item"), ("insert", tmp_path / "more.txt"), ("maintain",)):
        p = run(*args, "--db", db)
        assert p.returncode == 1 and len(lines(p)) == 1 and "Traceback" not in p.stderr and "Error:" not in p.stderr, (args, p.stderr)
        assert lines(p)[0].startswith(head) and said in lines(p)[0], (args, p.stderr)
        assert lines(p)[0].endswith(NEXT if args[0] != "insert" else f"; the insert is refused: nothing was queued{NEXT}"), (args, p.stderr)
    assert pending(db) == 1                                                 # the one queued before the damage; nothing since
    with Store(db, readonly=True) as s:
        for f in (s.load, s.stats):
            with pytest.raises(StoreDamaged) as e: f()
            assert e.value.detail.startswith(head[len("setree: error: "):]) and said in e.value.detail, e.value.detail
    assert run("build", tmp_path / "f.txt", "--db", db, "--replace", "--embedder", "hashing", "--quiet").returncode == 0   # the way out
    with Store(db, readonly=True) as s: assert s.stats()["facts"] == 40
