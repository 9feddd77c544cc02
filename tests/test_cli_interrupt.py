"Ctrl-C (SIGINT) during a change's maintenance pass, sent to a real `setree` process: the change is withdrawn, the store is as it was."
import json, signal, subprocess, sys, time

CLI = [sys.executable, "-c", "import sys; from setree.cli import main; sys.exit(main())"]

def setree(*args, **kw):
    return subprocess.run([*CLI, *map(str, args)], capture_output=True, text=True, **kw)

def test_ctrl_c_during_build_replace_leaves_the_store(tmp_path):
    from setree.store import Store
    small, big, db = tmp_path / "small.txt", tmp_path / "big.txt", tmp_path / "kb.db"
    small.write_text("".join(f"the user keeps note number {i} about cats\n" for i in range(12)), encoding="utf-8")
    big.write_text("".join(f"fact {i}: the user mentioned topic {i % 997} on day {i // 997}\n" for i in range(40000)), encoding="utf-8")
    assert setree("build", small, "--db", db, "--embedder", "hashing").returncode == 0
    p = subprocess.Popen([*CLI, "build", str(big), "--db", str(db), "--replace", "--embedder", "hashing"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    t0 = time.monotonic()
    while True:                                                       # wait until the replace is queued (its pass then runs)
        with Store(db, create=False, readonly=True) as st: pending = st.queue_state()["pending"]
        if pending or p.poll() is not None or time.monotonic() - t0 > 120: break
        time.sleep(0.05)
    assert pending == 1 and p.poll() is None, "the build finished before it could be interrupted"
    time.sleep(0.5)
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=120)
    assert p.returncode == 130, (p.returncode, err)
    assert "interrupted; the build was withdrawn" in err, err
    st = json.loads(setree("stats", "--db", db, "--json").stdout)
    assert (st["facts"], st["pending"]) == (12, 0), st
    r = setree("insert", "-", "--db", db, input="the user adds one small fact\n")   # the next command applies only its own change
    assert r.returncode == 0, r.stderr
    assert json.loads(setree("stats", "--db", db, "--json").stdout)["facts"] == 13
