"""One behaviour, three surfaces: the library (`KnowledgeBase`), the command line (`setree`, in this process) and the MCP
server (`MemoryServer.call`, in this process, and one check through the stdio child) agree on what a user sees for the same
situation: changes that wait in the queue, a `--json` error, an update that changes nothing, the same bad input."""
import json
import pytest
from conftest import run_setree as run

FACTS = ["the user sails on weekends", "the user keeps bees", "the user reads sci-fi"]

@pytest.fixture
def store(tmp_path, hashing):
    "A built, applied store of FACTS (hashing embedder) and its path."
    from setree.maintain import KnowledgeBase
    db = tmp_path / "kb.db"
    with KnowledgeBase(db, embedder=hashing) as kb: kb.build(FACTS); assert not kb.maintain()["error"]
    return db

def server(db, hashing):
    "A started in-process MCP server on `db` whose writer never passes on its own (quiet window and poll: 10 minutes)."
    pytest.importorskip("mcp")
    from setree.maintain import KnowledgeBase
    from setree.server import MemoryServer
    return MemoryServer(KnowledgeBase(db, embedder=hashing), quiet_s=600, poll_s=600).start()

# -- changes waiting in the queue --------------------------------------------------------------------------------------------

def test_queued_changes_are_named_by_every_reader(store, hashing):
    from setree.maintain import KnowledgeBase
    p = run("insert", "-", "--db", store, "--defer", input="the user plans a trip to Kyoto\n")
    assert p.returncode == 0 and "queued; not applied yet" in p.stdout, p.stdout
    with KnowledgeBase(store, embedder=hashing) as kb:                     # the library: the count, and the old tree's answer
        q = kb.queue_state()
        assert (q["pending"], q["queued_seq"] - q["applied_seq"]) == (1, 1)
        assert "Kyoto" not in kb.retrieve("Kyoto trip", budget=10**6).render()
    r = run("retrieve", "Kyoto trip", "--db", store, "--budget", 10**6, "--json")
    cli = json.loads(r.stdout)
    assert r.returncode == 0 and cli["pending"] == 1 and "Kyoto" not in cli["rendered"]
    assert r.stderr == f"setree: note: {cli['pending_note']}\n" and f"`setree maintain --db {store}` applies it" in cli["pending_note"]
    s = json.loads(run("stats", "--db", store, "--json").stdout)
    assert (s["pending"], s["pending_note"]) == (1, cli["pending_note"])
    app = server(store, hashing)
    try:
        res = app.call("retrieve", {"prompt": "Kyoto trip", "budget": 10**6})
        mcp_stats = app.call("stats", {}).structured_content
        head = cli["pending_note"].split("; `setree maintain")[0]          # the same sentence; only the way to apply differs
        assert res.structured_content["pending"] == 1 and res.structured_content["pending_note"].startswith(head + "; the server's background pass")
        assert res.content[0].text.endswith("note: " + res.structured_content["pending_note"]) and mcp_stats["pending_note"] == res.structured_content["pending_note"]
        assert not app.call("maintain", {"wait_seconds": 60}).is_error
        res = app.call("retrieve", {"prompt": "Kyoto trip", "budget": 10**6})
        assert (res.structured_content["pending"], res.structured_content["pending_note"]) == (0, None) and "Kyoto" in res.content[0].text
    finally: app.close()
    r = run("retrieve", "Kyoto trip", "--db", store, "--budget", 10**6, "--json")
    assert (json.loads(r.stdout)["pending_note"], r.stderr) == (None, "")

def test_a_queued_replace_is_named_by_every_reader_and_by_the_pass_that_applies_it(store, hashing):
    """A build queued and not applied (a library caller's or the MCP server's, not held by its process: `setree build`'s, killed, is withdrawn
    instead): a durable change, applied by the next pass, whoever runs it.
    Before: the note said only `1 change is queued`, and the next `setree insert` replaced every fact without a word in `--json`."""
    from setree.maintain import KnowledgeBase
    new = ["the user moved to Lisbon", "the user learns Portuguese"]
    with KnowledgeBase(store, embedder=hashing) as kb:                     # queued, never applied
        seq = kb.build(new, replace=True).seq
        assert kb.queue_state()["replaces"] == {"seq": seq, "op": "build", "facts": 2, "held_by": None}
    clause = f"; it is a build that replaces all facts with 2 facts (seq {seq}); "
    r = run("retrieve", "sails", "--db", store, "--json")
    cli = json.loads(r.stdout)
    assert clause in cli["pending_note"] and r.stderr == f"setree: note: {cli['pending_note']}\n", cli["pending_note"]
    assert json.loads(run("stats", "--db", store, "--json").stdout)["pending_note"] == cli["pending_note"]
    app = server(store, hashing)
    try:
        res, st = app.call("retrieve", {"prompt": "sails"}).structured_content, app.call("stats", {}).structured_content
        head = cli["pending_note"].split("; `setree maintain")[0]           # the same sentence; only the way to apply differs
        assert res["pending_note"].startswith(head + "; the server's background pass") and st["pending_note"] == res["pending_note"], res["pending_note"]
    finally: app.close(drain_s=0)                                          # (not applied on the way out: the next command's pass applies it)
    p = run("insert", "-", "--db", store, "--json", input="the user plants tomatoes\n")
    j = json.loads(p.stdout)
    assert p.returncode == 0 and j["replace_note"] == f"this pass applied the build queued as seq {seq} before this insert, which replaced the 3 facts the store held", j
    assert json.loads(run("stats", "--db", store, "--json").stdout)["facts"] == 3   # (the build's 2, and the insert's)
    with KnowledgeBase(store, embedder=hashing) as kb: seq = kb.reset(confirm=True).seq
    p = run("maintain", "--db", store)
    assert p.returncode == 0 and p.stdout.endswith(f"\nnote: this pass applied the reset queued as seq {seq}, which deleted the 3 facts the store held\n"), p.stdout
    p = run("insert", "-", "--db", store, input="the user plants basil\n")  # its own pass applies nothing queued by others: no note
    assert p.returncode == 0 and "note:" not in p.stdout, p.stdout

def test_an_insert_of_stored_texts_queues_nothing_anywhere(store, hashing):
    "Before: an insert whose every text was stored took a seq of its own and ran an empty pass; now it queues nothing, as an update to the same text."
    from setree.maintain import KnowledgeBase
    fid = _id(store, FACTS[2])
    with KnowledgeBase(store, embedder=hashing) as kb:
        q0 = kb.queue_state()
        ack = kb.insert([FACTS[2], " the user  reads sci-fi"])
        assert (ack.seq, ack.ids, ack.already_stored, kb.queue_state()) == (q0["queued_seq"], [fid, fid], [fid], q0)
    p = run("insert", "-", "--db", store, input=FACTS[2] + "\n")
    assert (p.returncode, p.stdout, p.stderr) == (0, f"insert: nothing new\nalready stored, not added again: 1 fact(s) {fid}\n", ""), p.stdout
    j = json.loads(run("insert", "-", "--db", store, "--json", "--defer", input=FACTS[2] + "\n" + FACTS[2] + "\n").stdout)
    assert (j["unchanged"], j["pass"], j["ack"]["already_stored"], j["ack"]["seq"], j["repeated"]) == (True, None, [fid], q0["queued_seq"], {fid: 2}), j
    app = server(store, hashing)
    try:
        r = app.call("insert", {"facts": [FACTS[2]]})
        assert r.structured_content["queued"] is False and r.structured_content["already_stored"] == [fid], r.structured_content
        assert r.content[0].text.startswith(p.stdout) and r.content[0].text.endswith("nothing to wait for: every text is stored and visible already."), r.content[0].text
        assert app.call("stats", {}).structured_content["queued_seq"] == q0["queued_seq"]
    finally: app.close()
    with KnowledgeBase(store, embedder=hashing) as kb: assert kb.queue_state() == q0

def test_an_insert_of_texts_another_process_queued_returns_once_they_are_applied(store, tmp_path):
    """Before: while another process's change of the same texts waited for its pass (running, the pass lock held), `setree insert` said
    `nothing new` / `already stored` at once and exited 0, the facts not applied yet. Now it says they are queued, queues them again (its ack must not depend on the other change, which its command may withdraw),
    waits for the pass and returns once they are applied."""
    import fcntl, os, subprocess, sys, time
    from conftest import CODE
    texts = "the user restores old radios\nthe user collects vinyl records\n"
    first = json.loads(run("insert", "-", "--db", store, "--defer", "--json", input=texts).stdout)["ack"]   # the other process's change, queued
    fd = os.open(f"{store}-lock", os.O_RDWR | os.O_CREAT, 0o644)      # ... and its pass, running
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        (tmp_path / "two.txt").write_text(texts, encoding="utf-8")
        p = subprocess.Popen([sys.executable, "-c", CODE, "insert", str(tmp_path / "two.txt"), "--db", str(store), "--json"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(3.0)
        assert p.poll() is None, ("returned while the pass lock was held", p.stdout.read())
    finally: os.close(fd)
    out, err = p.communicate(timeout=120)
    j = json.loads(out)
    assert (p.returncode, j.get("unchanged", False), j["ack"]["already_queued"], j["pass"]["inserted"]) == (0, False, dict.fromkeys(first["ids"], first["seq"]), 2), (out, err)
    s = json.loads(run("stats", "--db", store, "--json").stdout)   # (it queued the texts again, so that its ack does not depend on the other change)
    assert (s["facts"], s["pending"], s["applied_seq"]) == (len(FACTS) + 2, 0, j["ack"]["seq"]) and j["ack"]["seq"] > first["seq"], s
    p = run("insert", "-", "--db", store, input=texts)                  # now stored: said so, and no pass
    assert p.stdout == f"insert: nothing new\nalready stored, not added again: 2 fact(s) {' '.join(first['ids'])}\n", p.stdout

def test_a_store_without_its_schema_version_names_the_way_out(store):
    "Before: `damaged setree store, schema_version = None`, exit 2, and no next step."
    import sqlite3
    from setree.store import CORRUPT_NEXT, StoreDamaged
    from setree.maintain import KnowledgeBase
    c = sqlite3.connect(store); c.execute("DELETE FROM meta WHERE key = 'schema_version'"); c.commit(); c.close()
    with pytest.raises(StoreDamaged) as e: KnowledgeBase(store)
    assert "its meta table has no schema_version row" in str(e.value) and str(e.value).endswith(CORRUPT_NEXT), str(e.value)
    for argv in (["stats"], ["retrieve", "x"], ["insert", "-"]):
        p = run(*argv, "--db", store, "--json", input="a new fact\n")
        j = json.loads(p.stdout)
        assert (p.returncode, j["kind"], j["error"]) == (1, "damaged", str(e.value)) and p.stderr == f"setree: error: {j['error']}\n", (argv, p.stderr)

def test_a_failed_pass_is_named_in_the_note(store, hashing, monkeypatch):
    from setree.maintain import KnowledgeBase
    assert run("forget", _id(store, FACTS[0]), "--db", store, "--defer").returncode == 0
    monkeypatch.setattr(KnowledgeBase, "_run_pass", lambda *a: (_ for _ in ()).throw(RuntimeError("summarizer endpoint down")))
    p = run("maintain", "--db", store)
    assert p.returncode == 1 and "nothing was lost" in p.stderr, p.stderr
    monkeypatch.undo()
    p = run("stats", "--db", store)
    assert "the last pass failed: RuntimeError: summarizer endpoint down; `setree maintain" in p.stderr and "pending: 1" in p.stdout, (p.stdout, p.stderr)

def _id(db, text):
    from setree.store import Store
    with Store(db, readonly=True) as st: return next(f.id for f in st.load().facts if f.text == text)

def test_the_stdio_server_says_so_too(store, tmp_path):
    "Through the real child process: the insert is acknowledged, and a retrieve before its pass carries the note."
    pytest.importorskip("mcp")
    import anyio
    from test_server import session
    async def go():
        async with session(store, quiet_ms=60000) as s:
            await s.call_tool("insert", {"facts": "the user plans a trip to Kyoto"})
            res = await s.call_tool("retrieve", {"prompt": "Kyoto", "budget": 200})
            return res.structured_content, res.content[0].text
    data, text = anyio.run(go)
    assert data["pending"] == 1 and data["pending_note"].startswith("1 change is queued and not applied yet") and text.endswith(data["pending_note"])

# -- --json errors ---------------------------------------------------------------------------------------------------------

def test_json_errors_in_a_fresh_process(store, tmp_path):
    "The console script with --json: stdout is one JSON object for the error, stderr its one line, the exit code unchanged."
    from conftest import damage_an_index_page
    p = run("update", "no-such-id", "new text", "--db", store, "--json", fresh=True)
    j = json.loads(p.stdout)
    assert (p.returncode, j["kind"], j["exit_code"], j["retryable"]) == (2, "usage", 2, False) and p.stderr == f"setree: error: {j['error']}\n"
    assert j["error"] == 'unknown fact id(s): ["no-such-id"]', j
    p = run("retrieve", "x", "--db", store, "--budget", "lots", "--json", fresh=True)          # argparse's own refusal
    j = json.loads(p.stdout)
    assert (p.returncode, j["kind"]) == (2, "usage") and p.stderr.startswith("usage: setree retrieve") and j["error"] in p.stderr, p.stderr
    bad = tmp_path / "bad.db"; bad.write_bytes(store.read_bytes()); damage_an_index_page(bad)
    for argv in (["stats"], ["retrieve", "x"], ["insert", "-"]):
        p = run(*argv, "--db", bad, "--json", input="a new fact\n", fresh=argv[0] == "stats")
        j = json.loads(p.stdout)
        assert (p.returncode, j["kind"], j["exit_code"]) == (1, "damaged", 1) and p.stderr == f"setree: error: {j['error']}\n", (argv, p.stdout, p.stderr)

# -- an update that changes nothing ----------------------------------------------------------------------------------------

def test_an_update_to_the_same_text_queues_nothing_anywhere(store, hashing):
    from setree.maintain import KnowledgeBase
    fid = _id(store, FACTS[1])
    with KnowledgeBase(store, embedder=hashing) as kb:
        q0 = kb.queue_state()
        for text in (FACTS[1], "  the user  keeps bees\t"):                 # exactly, and after normalizing whitespace
            ack = kb.update(fid, text)
            assert (ack.op, ack.ids, ack.already_stored, ack.seq) == ("update", [fid], [fid], q0["queued_seq"])
        assert kb.queue_state() == q0
    p = run("update", fid, "the user keeps  bees", "--db", store)
    assert (p.returncode, p.stdout, p.stderr) == (0, f"update: nothing to change: fact {fid} already has this text (nothing was queued)\n", "")
    j = json.loads(run("update", fid, "the user keeps bees", "--db", store, "--json").stdout)
    assert (j["unchanged"], j["pass"], j["ack"]["already_stored"]) == (True, None, [fid])
    app = server(store, hashing)
    try:
        r = app.call("update", {"id": fid, "text": "the user keeps bees "})
        assert not r.is_error and r.structured_content["queued"] is False and r.content[0].text.startswith(p.stdout), r.content[0].text
        assert app.call("stats", {}).structured_content["queued_seq"] == q0["queued_seq"]
        r = app.call("update", {"id": fid, "text": "the user keeps two hives of bees"})      # a real change is still queued
        assert r.structured_content["queued"] is True and r.structured_content["seq"] == q0["queued_seq"] + 1
    finally: app.close()
    with KnowledgeBase(store, embedder=hashing) as kb:   # a text queued, not applied yet: updating to it again queues it again (the ack must not
        seq = kb.update(fid, "the user keeps three hives of bees").seq   # depend on the first change, whose command may still withdraw it)
        ack = kb.update(fid, "the user keeps three hives of bees")
        assert (ack.already_stored, ack.seq, kb.queue_state()["pending"]) == ([], seq + 1, 2)
        kb.withdraw(seq); kb.maintain()
        assert {f.id: f.text for f in kb.tree().facts}[fid] == "the user keeps three hives of bees"

# -- the server's maintain tool on a store found damaged ---------------------------------------------------------------------

def test_maintain_on_a_damaged_store_reads_the_queue_through_the_library(store, hashing):
    "The tool's answer comes from `KnowledgeBase.queue_state` (no tree check), so it still says how far the queue got."
    import sqlite3
    app = server(store, hashing)
    try:
        q = app.kb.queue_state()
        c = sqlite3.connect(store); c.execute("DELETE FROM nodes WHERE k = (SELECT max(k) FROM nodes WHERE level = 1)"); c.commit(); c.close()
        r = app.call("maintain", {"wait_seconds": 30})
        d = r.structured_content
        assert r.is_error and d["failed"] and "is damaged" in r.content[0].text, r.content[0].text
        assert (d["applied_seq"], d["queued_seq"], d["pending"]) == (q["applied_seq"], q["queued_seq"], 0)
    finally: app.close()

# -- the same bad input, the same words ------------------------------------------------------------------------------------

def test_the_same_bad_input_reads_the_same_on_all_three(store, hashing):
    """The library's message is the one text: the CLI's line carries it after `setree: error: ` (a fact file's line as `stdin: line 1: `
    in place of the item's index; a budget after argparse's `argument --budget: `), the server's invalid-params message as it is (JSON
    words for values, `in_json`: a list of ids, a type; the CLI reading a JSON line says them so too). The way out of a build that would delete facts names each surface's own knob."""
    from setree.cli import in_json
    from setree.maintain import KnowledgeBase
    from setree.server import InvalidParams
    fid, other = _id(store, FACTS[0]), _id(store, FACTS[1])
    cases = [   # (library call, CLI argv (stdin), server call, the CLI's prefix or None for 'setree: error: ')
        (lambda kb: kb.retrieve("x", budget=0), (["retrieve", "x", "--budget", "0"], None), ("retrieve", {"prompt": "x", "budget": 0}), "budget"),
        (lambda kb: kb.retrieve("x", budget=-5), (["retrieve", "x", "--budget=-5"], None), ("retrieve", {"prompt": "x", "budget": -5}), "budget"),
        (lambda kb: kb.retrieve(" \u200b ", budget=50), (["retrieve", " \u200b ", "--budget", "50"], None), ("retrieve", {"prompt": " \u200b ", "budget": 50}), None),
        (lambda kb: kb.update(fid, "  "), (["update", fid, "  "], None), ("update", {"id": fid, "text": "  "}), None),
        (lambda kb: kb.update("nope-x", "a new text"), (["update", "nope-x", "a new text"], None), ("update", {"id": "nope-x", "text": "a new text"}), None),
        (lambda kb: kb.update(fid, FACTS[1]), (["update", fid, FACTS[1]], None), ("update", {"id": fid, "text": FACTS[1]}), None),
        (lambda kb: kb.forget(["  "]), (["forget", "  "], None), ("forget", {"ids": ["  "]}), None),
        (lambda kb: kb.forget([other, "nope-y"]), (["forget", other, "nope-y"], None), ("forget", {"ids": [other, "nope-y"]}), None),
        (lambda kb: kb.insert(["a\x00b"]), (["insert", "-"], "a\x00b\n"), ("insert", {"facts": ["a\x00b"]}), "line"),
        (lambda kb: kb.insert([{"text": "a fact", "id": "a\tb"}]), (["insert", "-"], '{"text": "a fact", "id": "a\\tb"}\n'), ("insert", {"facts": [{"text": "a fact", "id": "a\tb"}]}), "line"),
        (lambda kb: kb.insert([{"text": "a fact", "meta": 5}]), (["insert", "-"], '{"text": "a fact", "meta": 5}\n'), ("insert", {"facts": [{"text": "a fact", "meta": 5}]}), "line"),
        (lambda kb: kb.insert([{"text": "a fact", "id": 5}]), (["insert", "-"], '{"text": "a fact", "id": 5}\n'), ("insert", {"facts": [{"text": "a fact", "id": 5}]}), "line"),
    ]
    app = server(store, hashing)
    try:
        for lib_call, (argv, stdin), (tool, args), prefix in cases:
            with KnowledgeBase(store, embedder=hashing) as kb:
                with pytest.raises((ValueError, TypeError)) as e: lib_call(kb)
            lib = in_json(str(e.value))                                        # (Python's words for values, JSON's on the other two: a list of ids, a type)
            with pytest.raises(InvalidParams) as s: app.call(tool, args)
            p = run(*argv, "--db", store, input=stdin)
            line = p.stderr.strip().splitlines()[-1]
            assert str(s.value) == lib, (argv, str(s.value), lib)
            if prefix == "budget": assert line == "setree retrieve: error: argument --budget: " + lib.removeprefix("budget "), (line, lib)
            elif prefix == "line": assert line == "setree: error: stdin: line 1: " + lib.removeprefix("fact 0: ").removesuffix(" at index [0]"), (line, lib)
            else: assert line == "setree: error: " + lib, (line, lib)
            assert p.returncode == 2
        with KnowledgeBase(store, embedder=hashing) as kb:                    # the way out names each surface's knob, the rest is the same
            with pytest.raises(ValueError) as e: kb.build(["x y z"])
        with pytest.raises(InvalidParams) as s: app.call("build", {"facts": ["x y z"]})
        line = run("build", "-", "--db", store, input="x y z\n").stderr
        held = "already holds 3 facts"
        assert held in str(e.value) and held in str(s.value) and held in line
        assert "build with replace=True" in str(e.value) and 'call build with "replace": true' in str(s.value) and "use --replace" in line
    finally: app.close()
