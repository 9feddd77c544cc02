"""A store in a directory this user cannot write (another user's, a package's data directory, one marked immutable) is read by
`stats`, `retrieve` and `inspect` when it was closed cleanly; the commands that write, and a read beside a `-wal` file, are refused
with a message naming the directory. As root the directory is made unwritable with `chattr +i` (skipped with the reason where that
is not available or not permitted), as another user with chmod; either is undone in a `finally`."""
import os, shutil, sqlite3, subprocess
import fastcore.test as ft
import pytest
from conftest import run_setree

FACTS = ["the user writes C++20", "the user grows tomatoes", "the user prefers dark mode", "the user waters the tomatoes at dawn"]

def lock(d):
    "Make directory `d` unwritable for this process; `pytest.skip` with the reason where this cannot be done."
    if os.geteuid() != 0: os.chmod(d, 0o555); return
    if not shutil.which("chattr"): pytest.skip("running as root and no chattr command: cannot make a directory unwritable for root")
    r = subprocess.run(["chattr", "+i", str(d)], capture_output=True, text=True)
    if r.returncode: pytest.skip(f"chattr +i not permitted here ({r.stderr.strip() or r.returncode}): needs root and a file system with the immutable flag")

def unlock(d):
    if os.geteuid() != 0: os.chmod(d, 0o755)
    else: subprocess.run(["chattr", "-i", str(d)], capture_output=True)

@pytest.fixture
def store(tmp_path):
    "A small store built by the CLI (hashing embedder), closed cleanly: no -wal file beside it."
    (tmp_path / "facts.txt").write_text("\n".join(FACTS) + "\n")
    d = tmp_path / "ro"; d.mkdir()
    r = run_setree("build", tmp_path / "facts.txt", "--db", d / "kb.db", "--embedder", "hashing", "--quiet")
    ft.test_eq(r.returncode, 0)
    for suffix in ("-wal", "-shm", "-lock"): (d / f"kb.db{suffix}").unlink(missing_ok=True)   # (the store as it is shipped: the file alone)
    return d / "kb.db"

def test_reads_in_unwritable_dir(store):
    lock(store.parent)
    try:
        assert not os.access(store.parent, os.W_OK)
        r = run_setree("stats", "--db", store, "--json")
        ft.test_eq(r.returncode, 0); assert '"facts": 4' in r.stdout, (r.stdout, r.stderr)
        r = run_setree("retrieve", "tomatoes", "--db", store, "--budget", 60)
        ft.test_eq(r.returncode, 0); assert "tomatoes" in r.stdout, (r.stdout, r.stderr)
        r = run_setree("inspect", "--db", store)
        ft.test_eq(r.returncode, 0); assert "the user writes C++20" in r.stdout, (r.stdout, r.stderr)
        ft.test_eq(sorted(f.name for f in store.parent.iterdir()), ["kb.db"])   # nothing was written beside it
    finally: unlock(store.parent)

def test_writes_in_unwritable_dir_refused(store):
    lock(store.parent)
    try:
        said = f"cannot write store {store}: its directory is not writable"
        for args, given in ((["insert", "-"], "the user likes Rust\n"), (["forget", "f2"], None), (["update", "f2", "-"], "the user grows peppers\n"),
                            (["maintain"], None), (["build", "-", "--replace"], "the user likes Rust\n")):
            r = run_setree(*args, "--db", store, "--embedder", "hashing", input=given)
            ft.test_eq(r.returncode, 2); assert said in r.stderr and "Traceback" not in r.stderr, (args, r.stderr)
    finally: unlock(store.parent)
    r = run_setree("stats", "--db", store, "--json")
    assert '"facts": 4' in r.stdout, r.stdout   # nothing changed

def test_wal_beside_store_in_unwritable_dir(store, tmp_path):
    "A copy of a store that was not closed cleanly (its -wal file beside it): refused, saying why and what to do."
    keep = sqlite3.connect(store); keep.execute("PRAGMA wal_autocheckpoint = 0")
    keep.execute("CREATE TABLE scratch (x)"); keep.execute("INSERT INTO scratch VALUES (1)"); keep.commit()
    d = tmp_path / "wal"; d.mkdir()
    try:
        for name in ("kb.db", "kb.db-wal"): shutil.copy(store.parent / name, d / name)   # (no -shm file: as copied, or shipped)
    finally: keep.close()
    lock(d)
    try:
        for args in (["stats"], ["retrieve", "tomatoes"], ["insert", "-", "--embedder", "hashing"]):
            r = run_setree(*args, "--db", d / "kb.db", input="the user likes Rust\n")
            ft.test_eq(r.returncode, 2)
            assert f"its directory {d} is not writable" in r.stderr and "the store was not closed cleanly" in r.stderr, (args, r.stderr)
            assert "copy the store and its -wal file to a writable directory" in r.stderr and "Traceback" not in r.stderr, r.stderr
    finally: unlock(d)
