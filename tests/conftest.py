"""Shared fixtures of the integration tests: one way to run the `setree` command, in this process or in a fresh one.

In-process runs call `setree.cli.main` with stdin, stdout, stderr and the environment swapped for the call: they test the
same code, the same exit codes and the same one-line errors without paying for a new interpreter, a new import of the
library and a new load of the embedding model each time. Tests whose point is the process boundary (hash seeds,
determinism across processes, the console script itself) pass `fresh=True`.
"""
import contextlib, io, os, signal, subprocess, sys, traceback
import pytest

# A shell starts a background job (`cmd &`, `nohup cmd &`) with SIGINT ignored, and every process it starts inherits that: the setree
# processes these tests stop with Ctrl-C would never see it. An ignored signal stays ignored across exec, a handled one is reset to its
# default, so this process handles SIGINT again (Python's own handler) and every child it starts begins with SIGINT at its default.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN: signal.signal(signal.SIGINT, signal.default_int_handler)

CODE = "import sys; from setree.cli import main; sys.exit(main(sys.argv[1:]))"

def _in_process(args, input=None, env=None):
    from setree.cli import main
    out, err = io.StringIO(), io.StringIO()
    saved_env, saved_in = dict(os.environ), sys.stdin
    os.environ.update(env or {})
    sys.stdin = io.StringIO(input or "")
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try: code = main(list(args))
            except SystemExit as e: code = e.code if isinstance(e.code, int) else (0 if e.code is None else 2)
            except BaseException: traceback.print_exc(); code = 1     # escapes `main`: the test sees "Traceback"
    finally:
        sys.stdin = saved_in
        os.environ.clear(); os.environ.update(saved_env)
    return subprocess.CompletedProcess(["setree", *args], code, out.getvalue(), err.getvalue())

def run_setree(*args, input=None, env=None, fresh=False, timeout=600):
    "Run `setree ARGS`: in this process, or with `fresh=True` in a new Python process. Returns a CompletedProcess (text)."
    args = [str(a) for a in args]
    if not fresh: return _in_process(args, input=input, env=env)
    return subprocess.run([sys.executable, "-c", CODE, *args], input=input, capture_output=True, text=True, encoding="utf-8",
                          env={**os.environ, **(env or {})}, timeout=timeout)

@pytest.fixture(scope="session")
def setree_cli():
    "The `run_setree` function: `setree_cli('stats', '--db', path, '--json')`."
    return run_setree

@pytest.fixture(scope="session")
def minilm():
    "The process-wide MiniLM embedder, loaded once per test session."
    from setree.embed import get_embedder
    return get_embedder()

@pytest.fixture(scope="session")
def hashing():
    "The hashing embedder: for tests where the model is not the point."
    from setree.embed import get_embedder
    return get_embedder("hashing")

def damage_an_index_page(db):
    "Overwrite the first bytes of one index page (the members table's): the store still opens, its contents are damaged."
    import sqlite3
    con = sqlite3.connect(db)
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    page_size = con.execute("PRAGMA page_size").fetchone()[0]
    (root,) = con.execute("SELECT rootpage FROM sqlite_master WHERE name = 'sqlite_autoindex_members_1'").fetchone()
    con.close()
    with open(db, "r+b") as f: f.seek((root - 1) * page_size); f.write(b"\x0d" + b"\xff" * 20)
