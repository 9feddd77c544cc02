"""A store on a read-only file system can be read (library and CLI) and is refused for writing with a message naming the
directory. Needs a read-only bind mount (root in a container that allows `mount`): skipped with a message otherwise."""
import subprocess
import fastcore.test as ft
import pytest
from conftest import run_setree
from setree.build import build_tree
from setree.embed import get_embedder
from setree.store import Store, StoreError

FACTS = ["the user writes C++20", "the user grows tomatoes", "the user prefers dark mode", "the user waters the tomatoes at dawn"]

@pytest.fixture
def ro_store(tmp_path):
    src, ro = tmp_path / "src", tmp_path / "ro"
    src.mkdir(); ro.mkdir()
    with Store(src / "kb.db") as s: s.save(build_tree(FACTS, embedder=get_embedder("hashing"), progress=False))
    assert not (src / "kb.db-wal").exists()   # the last connection's close checkpointed the log
    r = subprocess.run(["mount", "--bind", "-o", "ro", str(src), str(ro)], capture_output=True, text=True)
    if r.returncode: pytest.skip(f"no read-only bind mount here ({r.stderr.strip() or r.returncode}): needs root and mount rights")
    try: yield src, ro / "kb.db"
    finally: subprocess.run(["umount", str(ro)], check=True)

def test_read_on_read_only_fs(ro_store):
    src, path = ro_store
    with Store(path, readonly=True) as s: t = s.load()
    ft.test_eq(sorted(f.text for f in t.facts), sorted(FACTS))
    r = run_setree("retrieve", "tomatoes", "--db", path, "--budget", 60)
    ft.test_eq(r.returncode, 0); assert "tomatoes" in r.stdout, r.stdout
    r = run_setree("stats", "--db", path)
    ft.test_eq(r.returncode, 0)

def test_write_on_read_only_fs_refused(ro_store):
    _, path = ro_store
    with pytest.raises(StoreError, match="is not writable: a change needs write access to it"): Store(path)
    r = run_setree("insert", "-", "--db", path, "--embedder", "hashing", input="the user likes Rust\n")
    ft.test_eq(r.returncode, 2); assert "is not writable" in r.stderr and "Traceback" not in r.stderr, r.stderr

def test_pending_wal_on_read_only_fs(tmp_path):
    "A store whose -wal file holds changes: read as it is where SQLite's -shm file is there too, refused with advice where it is not."
    import shutil, sqlite3
    work, src, ro = tmp_path / "work", tmp_path / "src", tmp_path / "ro"
    for d in (work, src, ro): d.mkdir()
    with Store(work / "kb.db") as s: s.save(build_tree(FACTS, embedder=get_embedder("hashing"), progress=False))
    keep = sqlite3.connect(work / "kb.db"); keep.execute("PRAGMA wal_autocheckpoint = 0")
    keep.execute("CREATE TABLE scratch (x)"); keep.execute("INSERT INTO scratch VALUES (1)"); keep.commit()
    try:
        assert (work / "kb.db-wal").stat().st_size > 0
        for name in ("kb.db", "kb.db-wal"): shutil.copy(work / name, src / name)   # a copy without the -shm file
    finally: keep.close()
    r = subprocess.run(["mount", "--bind", "-o", "ro", str(src), str(ro)], capture_output=True, text=True)
    if r.returncode: pytest.skip(f"no read-only bind mount here ({r.stderr.strip() or r.returncode})")
    try:
        with pytest.raises(StoreError, match="-wal file holds changes"): Store(ro / "kb.db", readonly=True)
        r = run_setree("retrieve", "tomatoes", "--db", ro / "kb.db", "--budget", 60)
        ft.test_eq(r.returncode, 2); assert "-wal file holds changes" in r.stderr, r.stderr
    finally: subprocess.run(["umount", str(ro)], check=True)
