"""Ctrl-C (SIGINT), SIGTERM or SIGHUP during a change's maintenance pass, sent to a real `setree` process: the change is withdrawn, the
store is as it was (a store the command created is removed), and the exit code is 128 + the signal's number."""
import json, signal, subprocess, sys, time
import pytest

CLI = [sys.executable, "-c", "import sys; from setree.cli import main; sys.exit(main())"]

def setree(*args, **kw):
    return subprocess.run([*CLI, *map(str, args)], capture_output=True, text=True, **kw)

def interrupt_build(db, *args, sig=signal.SIGINT):
    "Start `setree build ARGS --db DB --embedder hashing`, SIGINT it once its change is queued (its pass then runs): (returncode, stderr, stdout)."
    from setree.store import Store, StoreError
    p = subprocess.Popen([*CLI, "build", *map(str, args), "--db", str(db), "--embedder", "hashing"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    t0, pending = time.monotonic(), 0
    while p.poll() is None and time.monotonic() - t0 < 120:
        if db.exists():
            try:
                with Store(db, create=False, readonly=True) as st: pending = st.queue_state()["pending"]
            except StoreError: pending = 0                             # a new file is still being set up
        if pending: break
        time.sleep(0.05)
    assert pending == 1 and p.poll() is None, "the build finished before it could be interrupted"
    time.sleep(0.5)
    p.send_signal(sig)
    out, err = p.communicate(timeout=120)
    return p.returncode, err, out

def big_file(path):
    path.write_text("".join(f"fact {i}: the user mentioned topic {i % 997} on day {i // 997}\n" for i in range(40000)), encoding="utf-8")
    return path

@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP], ids=["SIGINT", "SIGTERM", "SIGHUP"])
def test_ctrl_c_during_build_replace_leaves_the_store(tmp_path, sig):
    small, big, db = tmp_path / "small.txt", big_file(tmp_path / "big.txt"), tmp_path / "kb.db"
    small.write_text("".join(f"the user keeps note number {i} about cats\n" for i in range(12)), encoding="utf-8")
    assert setree("build", small, "--db", db, "--embedder", "hashing").returncode == 0
    code, err, out = interrupt_build(db, big, "--replace", sig=sig)
    assert code == 128 + sig, (code, err)                              # as a shell reports a process that signal stopped: 130, 143, 129
    assert "interrupted; the build was withdrawn" in err and out == "", (err, out)   # no ack line of the withdrawn build (before: `build: 40000 fact(s) … (seq 2)`)
    st = json.loads(setree("stats", "--db", db, "--json").stdout)
    assert (st["facts"], st["pending"]) == (12, 0), st
    r = setree("insert", "-", "--db", db, input="the user adds one small fact\n")   # the next command applies only its own change
    assert r.returncode == 0, r.stderr
    assert json.loads(setree("stats", "--db", db, "--json").stdout)["facts"] == 13

@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_ctrl_c_during_the_first_build_removes_the_store_it_created(tmp_path, sig):
    "Ctrl-C or SIGTERM during the pass of a build that created the store: the change is withdrawn and the files it created are gone."
    db = tmp_path / "kb.db"
    code, err, _ = interrupt_build(db, big_file(tmp_path / "big.txt"), sig=sig)
    assert code == 128 + sig, (code, err)
    assert f"the build was withdrawn (seq 1); the store it had created, {db.resolve()}, is removed" in err, err
    assert sorted(x.name for x in tmp_path.iterdir()) == ["big.txt"]

@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP], ids=["SIGINT", "SIGTERM", "SIGHUP"])
def test_a_signal_outside_a_pass_exits_128_plus_its_number(tmp_path, sig):
    "A signal while a command reads (no change to withdraw): the one line `setree: interrupted` and 128 + the signal's number."
    code = ("import os, signal, sys, setree.cli as cli\n"
            "def stopped(args): os.kill(os.getpid(), signal.%s); signal.pause()\n"      # the signal arrives while the command runs
            "cli.COMMANDS['stats'] = stopped\n"
            "sys.exit(cli.main(sys.argv[1:]))" % sig.name)
    r = subprocess.run([sys.executable, "-c", code, "stats", "--db", tmp_path / "kb.db"], capture_output=True, text=True, timeout=120)
    assert (r.returncode, r.stderr) == (128 + sig, "setree: interrupted\n"), (r.returncode, r.stderr)

@pytest.mark.parametrize("cmd", ["insert"])
def test_the_ack_line_arrives_through_a_pipe_before_the_pass_ends(tmp_path, cmd):
    """Piped stdout: `insert: … (seq N)` is flushed once the change is durable, while the pass still runs. (A build's line waits for its
    pass: a build stopped in its pass is withdrawn and prints no ack, `test_ctrl_c_during_build_replace_leaves_the_store`.)"""
    db, big = tmp_path / "kb.db", big_file(tmp_path / "big.txt")
    if cmd == "insert": assert setree("insert", "-", "--db", db, "--embedder", "hashing", input="the user keeps one note about cats\n").returncode == 0
    p = subprocess.Popen([*CLI, cmd, big, "--db", db, "--embedder", "hashing"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = p.stdout.readline()                                         # blocks until the line is flushed (before the fix: at exit)
    time.sleep(0.5); running = p.poll() is None                        # a line printed only at exit: the process is gone by now
    p.send_signal(signal.SIGINT); p.communicate(timeout=120)
    assert line.startswith(f"{cmd}: 40000 fact(s) ") and line.rstrip().endswith(f"(seq {1 + (cmd == 'insert')})"), line
    assert running, "the pass had finished before the ack line arrived"

@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP], ids=["SIGINT", "SIGTERM", "SIGHUP"])
def test_a_signal_after_the_command_finished_changes_nothing(tmp_path, sig):
    """A stop signal once the command is done (its output printed, its change applied), e.g. while Python shuts down: the exit code is the
    command's, and nothing more is printed (before: the process died of the signal, exit 128 + its number, with no word, after an applied insert)."""
    code = ("import os, signal, sys\nfrom setree.cli import main\n"
            "code = main()\n"
            "os.kill(os.getpid(), signal.%s); sys.stdout.flush()\n"        # the signal arrives after `main` returned
            "sys.exit(code)" % sig.name)
    r = subprocess.run([sys.executable, "-c", code, "insert", "-", "--db", tmp_path / "kb.db", "--embedder", "hashing"],
                       input="the user keeps one note about cats\n", capture_output=True, text=True, timeout=120)
    assert (r.returncode, r.stderr) == (0, f"setree: created a new store at {(tmp_path / 'kb.db').resolve()}\n"), (r.returncode, r.stderr)
    assert r.stdout.startswith("insert: 1 fact(s)") and "\npass: full rebuild (1 inserted" in r.stdout, r.stdout
    assert json.loads(setree("stats", "--db", tmp_path / "kb.db", "--json").stdout)["facts"] == 1

def test_a_build_killed_outright_is_withdrawn_by_the_next_pass(tmp_path):
    """kill -9 during a `build --replace` (nothing can withdraw it then): the next command's pass withdraws the build, which its command held,
    and says so (before: the build stayed queued with no line printed, and the next unrelated insert replaced the 12 facts with it)."""
    small, big, db = tmp_path / "small.txt", big_file(tmp_path / "big.txt"), tmp_path / "kb.db"
    small.write_text("".join(f"the user keeps note number {i} about cats\n" for i in range(12)), encoding="utf-8")
    assert setree("build", small, "--db", db, "--embedder", "hashing").returncode == 0
    code, err, out = interrupt_build(db, big, "--replace", sig=signal.SIGKILL)
    assert code == -signal.SIGKILL and out == "", (code, err, out)
    r = setree("stats", "--db", db)
    assert "it is a build that replaces all facts with 40000 facts (seq 2), queued by a command that ended before its pass (killed?): the next pass withdraws it" in r.stderr, r.stderr
    assert f"`setree maintain --db {db}` withdraws it" in r.stderr and "applies it" not in r.stderr, r.stderr   # (before: "... withdraws it; `setree maintain` applies it")
    r = setree("insert", "-", "--db", db, input="the user adds one small fact\n")
    assert r.returncode == 0, r.stderr
    assert "note: the build queued as seq 2 (40000 facts) was withdrawn, not applied: the command that queued it ended before its pass" in r.stdout, r.stdout
    st = json.loads(setree("stats", "--db", db, "--json").stdout)
    assert (st["facts"], st["pending"]) == (13, 0), st
