"""The `setree` command end to end, as a user runs it, and the cases of shared/cases through the CLI. The commands run in
this process (`conftest.run_setree`); the knowledge base of the module is built by the console script's code in a fresh
process, so the process path is covered too."""
import json
import pytest
from conftest import damage_an_index_page, run_setree as run

def one_line_error(p):
    assert p.returncode != 0
    assert "Traceback" not in p.stderr, p.stderr
    lines = [l for l in p.stderr.splitlines() if l.strip()]
    assert len(lines) == 1 and lines[0].startswith("setree: error:") or "usage:" in p.stderr, p.stderr
    return p.stderr

@pytest.fixture(scope="module")
def kb(tmp_path_factory):
    d = tmp_path_factory.mktemp("kb")
    facts = d / "facts.txt"
    facts.write_text("\n".join(["the user writes C++20", "the user prefers dark mode", "the user lives near a lake",
                                "the user grows tomatoes", "the user has a cat named Miso", "the user builds with CMake",
                                "the user flew to Lisbon", "the user composts kitchen scraps", "the user runs 5 km",
                                "the user bakes sourdough bread"]) + "\n", encoding="utf-8")
    db = d / "kb.db"
    p = run("build", facts, "--db", db, "--embedder", "hashing", "--quiet", fresh=True)
    assert p.returncode == 0, p.stderr
    return d, db

def test_build_stats_inspect(kb):
    d, db = kb
    s = json.loads(run("stats", "--db", db, "--json").stdout)
    assert s["facts"] == 10 and s["nodes"] > 10
    out = run("inspect", "--db", db).stdout
    assert out.count("[fact ") == 10

def test_retrieve_within_budget_and_exit_codes(kb):
    from setree.core import count_tokens
    d, db = kb
    for budget in (60, 120, 1000):
        p = run("retrieve", "dark mode editor", "--db", db, "--budget", budget)
        assert p.returncode == 0, p.stderr
        assert count_tokens(p.stdout.rstrip("\n")) <= budget
    for huge in (10**6, 2**63, 10**30):                                          # C-16
        res = json.loads(run("retrieve", "anything", "--db", db, "--budget", huge, "--json").stdout)
        assert res["status"] == "ok" and [i["kind"] for i in res["items"]] == ["fact"] * 10
        assert len({i["text"] for i in res["items"]}) == 10
    small = run("retrieve", "dark mode", "--db", db, "--budget", 1, "--json")     # C-13
    assert small.returncode == 3 and json.loads(small.stdout)["status"] == "budget_too_small"
    assert json.loads(small.stdout)["min_budget"] > 1

@pytest.mark.parametrize("budget", ["0", "-5", "12.5", "nan", "true", "", "1e3"])
def test_bad_budgets_are_refused(kb, budget):                                      # C-15
    d, db = kb
    p = run("retrieve", "x", "--db", db, f"--budget={budget}")
    assert p.returncode == 2 and "positive integer" in p.stderr and "Traceback" not in p.stderr

def test_bad_input_is_one_line(tmp_path):
    assert "not found" in one_line_error(run("build", tmp_path / "missing.txt", "--db", tmp_path / "x.db"))
    empty = tmp_path / "empty.txt"; empty.write_text("\n\n")
    assert "no facts" in one_line_error(run("build", empty, "--db", tmp_path / "x.db"))
    assert "no setree store at" in one_line_error(run("stats", "--db", tmp_path / "nope.db"))   # (the library's words)
    junk = tmp_path / "junk.db"; junk.write_bytes(b"not a database at all" * 10)
    one_line_error(run("stats", "--db", junk))
    cfg = tmp_path / "cfg.json"; cfg.write_text('{"betta": 1}')
    facts = tmp_path / "f.txt"; facts.write_text("a fact\nanother fact\n")
    assert "betta" in one_line_error(run("build", facts, "--db", tmp_path / "y.db", "--config", cfg, "--embedder", "hashing"))
    assert "betta" in one_line_error(run("build", facts, "--db", tmp_path / "y.db", "--embedder", "hashing", env={"SETREE_CONFIG": str(cfg)}))

def test_jsonl_and_stdin(tmp_path):
    f = tmp_path / "f.jsonl"
    f.write_text('{"id": "a", "text": "the user writes C++20", "meta": {"src": "x"}}\n{"text": "用户喜欢喝绿茶 🍣"}\n', encoding="utf-8")
    db = tmp_path / "j.db"
    assert run("build", f, "--db", db, "--embedder", "hashing", "--quiet").returncode == 0
    res = json.loads(run("retrieve", "tea", "--db", db, "--budget", 1000, "--json").stdout)
    texts = {i["text"] for i in res["items"] if i["kind"] == "fact"}
    assert texts == {"the user writes C++20", "用户喜欢喝绿茶 🍣"}                      # C-11: byte for byte
    p = run("build", "-", "--db", tmp_path / "s.db", "--embedder", "hashing", "--quiet", input="one fact\ntwo facts\n")
    assert p.returncode == 0, p.stderr
    bad = tmp_path / "bad.jsonl"; bad.write_text('{"text": "ok"}\n{"txt": "typo"}\n')
    assert "unknown key" in one_line_error(run("build", bad, "--db", tmp_path / "b.db", "--embedder", "hashing"))

def test_empty_and_tiny_knowledge_bases(tmp_path):                                 # C-01, C-02
    for n in (1, 2, 3):
        f = tmp_path / f"f{n}.txt"
        f.write_text("\n".join(["the user writes C++20", "the user prefers dark mode", "the user lives near a lake"][:n]))
        db = tmp_path / f"t{n}.db"
        assert run("build", f, "--db", db, "--embedder", "hashing", "--quiet").returncode == 0
        res = json.loads(run("retrieve", "editor theme", "--db", db, "--budget", 1000, "--json").stdout)
        assert sorted(i["text"] for i in res["items"]) == sorted(f.read_text().splitlines())

def test_demo_runs_offline():
    p = run("demo")
    assert p.returncode == 0, p.stderr
    assert p.stdout.count("===") == 3
    niche = p.stdout.split("===")[-1]
    assert "Mara's sourdough starter is called Bob." in niche      # the niche detail reaches the context

def test_txt_lines_quiet_build_and_queue_in_stats(tmp_path):
    # only \n (or \r\n) ends a fact in a .txt file: a form feed or U+2028 inside a fact keeps it one fact (rendered on one line)
    f = tmp_path / "f.txt"; f.write_text("first part\u2028second part\r\nthird fact\x0cformfeed\nthe user likes tea\n", encoding="utf-8")
    db = tmp_path / "kb.db"
    p = run("build", f, "--db", db, "--embedder", "hashing", "--quiet", "--json", fresh=True)
    assert p.returncode == 0 and p.stderr == "", p.stderr            # --quiet: nothing on stderr
    assert json.loads(p.stdout)["facts"] == 3
    ctx = run("retrieve", "first part", "--db", db, "--budget", 200).stdout
    assert any("first part second part" in l for l in ctx.splitlines()), ctx
    # stats shows the queue: a deferred insert is pending until a pass applies it
    assert run("insert", "-", "--db", db, "--defer", input="the user owns a red kayak\n").returncode == 0
    s = json.loads(run("stats", "--db", db, "--json").stdout)
    assert (s["pending"], s["applied_seq"] < s["queued_seq"]) == (1, True), s
    assert run("maintain", "--db", db).returncode == 0
    s = json.loads(run("stats", "--db", db, "--json").stdout)
    assert (s["pending"], s["facts"], s["applied_seq"]) == (0, 4, s["queued_seq"]), s

NO_MCP = "import sys; sys.modules['mcp'] = None; from setree.cli import main; sys.exit(main(sys.argv[1:]))"   # as if the mcp extra were absent

def test_serve_help_without_the_mcp_sdk(tmp_path):
    import subprocess, sys
    p = subprocess.run([sys.executable, "-c", NO_MCP, "serve", "--help"], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0 and "--db" in p.stdout and "--quiet-ms" in p.stdout, p.stderr
    p = subprocess.run([sys.executable, "-c", NO_MCP, "serve", "--db", str(tmp_path / "kb.db")], capture_output=True, text=True, timeout=120)
    assert p.returncode == 2 and "MCP server is not available" in p.stderr and "Traceback" not in p.stderr, p.stderr
    assert not (tmp_path / "kb.db").exists()

def test_stdin_text_starting_with_a_brace(tmp_path):
    db = tmp_path / "kb.db"
    p = run("insert", "-", "--db", db, "--embedder", "hashing", input="{curly} is the user's nickname\n")
    assert p.returncode == 0, p.stderr
    assert "{curly} is the user's nickname" in run("retrieve", "nickname", "--db", db, "--budget", 100).stdout
    p = run("insert", "-", "--db", db, input='{"text": "the user likes tea"}\n{"text": 3}\n')
    assert "stdin: line 2" in one_line_error(p)

def test_deep_json_and_bad_ids_in_a_fact_file(tmp_path):
    f = tmp_path / "deep.jsonl"
    f.write_text('{"text": "ok"}\n{"text": "x", "meta": ' + '[' * 100_000 + ']' * 100_000 + '}\n', encoding="utf-8")
    p = run("build", f, "--db", tmp_path / "kb.db", "--embedder", "hashing", fresh=True)
    assert p.returncode == 2 and "deep.jsonl: line 2 is nested too deeply" in one_line_error(p)
    f.write_text(json.dumps({"id": "two\nlines", "text": "the user likes tea"}) + "\n", encoding="utf-8")
    assert "line 1: id holds a control character or line break (U+000A)" in one_line_error(run("build", f, "--db", tmp_path / "kb.db"))
    assert not (tmp_path / "kb.db").exists()

def test_a_change_queued_while_another_pass_holds_the_store(tmp_path):
    "The newcomer's case: `setree maintain` running in another process holds the pass lock; an insert queues, waits 30 s, and says so (exit 0)."
    import fcntl, os, re
    f = tmp_path / "f.txt"; f.write_text("the user writes C++20\nthe user likes tea\n")
    db = tmp_path / "kb.db"
    assert run("build", f, "--db", db, "--embedder", "hashing", "--quiet").returncode == 0
    fd = os.open(f"{db}-lock", os.O_RDWR | os.O_CREAT, 0o644)      # what a running pass of another process holds
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        p = run("insert", "-", "--db", db, input="the user owns a kayak\n", fresh=True)
        r = run("stats", "--db", db)   # a read while that pass runs says so (before: "`setree maintain --db ...` applies it", which would wait for it)
        assert "a maintenance pass of another process is running now: it, or the next one, applies it" in r.stderr, r.stderr
    finally: os.close(fd)
    assert p.returncode == 0 and "Traceback" not in p.stderr and "StoreBusy" not in p.stdout + p.stderr, p
    assert "not applied yet: another maintenance pass holds the store, and that pass or the next applies it" in p.stdout, p.stdout
    seq = int(re.search(r"queued as seq (\d+)", p.stdout).group(1))
    s = json.loads(run("stats", "--db", db, "--json").stdout)
    assert (s["pending"], s["queued_seq"]) == (1, seq), s
    assert "insert: nothing new" in run("insert", "-", "--db", db, "--defer", input="the user owns a kayak\n").stdout   # it is queued already
    assert run("maintain", "--db", db).returncode == 0
    s = json.loads(run("stats", "--db", db, "--json").stdout)
    assert (s["pending"], s["facts"], s["applied_seq"] >= seq) == (0, 3, True), s

def test_glimpse_option_and_refusals(kb, tmp_path):
    "--glimpse reaches the walk (0 = the fixed short line, as a config file's glimpse does); bad values are refused naming the flag or the key, as the library words them."
    from setree.build import Config
    d, db = kb
    ask = lambda *a: json.loads(run("retrieve", "garden vegetables", "--db", db, "--budget", 40, "--json", *a).stdout)
    cfg = tmp_path / "g0.json"; cfg.write_text('{"glimpse": 0}')
    fixed, fitted = ask("--glimpse", 0), ask("--glimpse", 60)
    assert fixed["params"]["glimpse"] == 0 and fitted["params"]["glimpse"] == 60 and ask()["params"]["glimpse"] == Config().glimpse
    assert ask("--config", cfg)["items"] == fixed["items"]
    assert fixed["items"][0]["text"] != fitted["items"][0]["text"]                  # the root's line: fixed keyphrases vs fitted to the prompt
    with pytest.raises(ValueError) as lib: Config(glimpse=-1)
    p = run("retrieve", "x", "--db", db, "--glimpse", -1)                            # the flag is checked as `setree build`'s are
    assert p.returncode == 2 and str(lib.value).replace("glimpse=", "--glimpse=") in one_line_error(p)
    p = run("retrieve", "x", "--db", db, "--glimpse", "1.5")
    assert p.returncode == 2 and "--glimpse: must be an integer (ASCII digits 0-9), got '1.5'" in p.stderr
    with pytest.raises(ValueError) as lib: Config(glimpse=-1)
    bad = tmp_path / "bad.json"; bad.write_text('{"glimpse": -1}')
    for cmd in (("retrieve", "x", "--db", db), ("build", d / "facts.txt", "--db", tmp_path / "g.db", "--embedder", "hashing")):
        p = run(*cmd, "--config", bad)
        assert p.returncode == 2 and str(lib.value) in one_line_error(p), p.stderr
    assert not (tmp_path / "g.db").exists()                                          # refused before anything is built

def test_a_damaged_store_exits_1_for_reads_and_writes_alike(tmp_path):
    "A store that opens but whose contents are damaged is a store failure: exit 1 (not 2, bad usage), whatever the command."
    facts = tmp_path / "facts.txt"; facts.write_text("the user writes C++20\nthe user likes tea\nthe user lives in Lyon\n", encoding="utf-8")
    db = tmp_path / "kb.db"
    assert run("build", facts, "--db", db, "--embedder", "hashing", "--quiet").returncode == 0
    damage_an_index_page(db)
    for argv in (("stats",), ("retrieve", "tea"), ("inspect",), ("insert", facts), ("maintain",)):
        p = run(*argv, "--db", db)
        assert p.returncode == 1, (argv, p.returncode, p.stderr)
        one_line_error(p)                                   # SQLite's integrity report spans lines: joined into one
        assert "damaged" in p.stderr or "malformed" in p.stderr, (argv, p.stderr)

def test_eval_force_writes_into_a_used_folder(tmp_path):
    "`eval locomo --force` passes the override to the library, which refuses a used folder on its own (`check_out_dir`)."
    conv = {"sample_id": "conv-t", "conversation": {"speaker_a": "Ann", "speaker_b": "Bo", "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [{"speaker": "Ann", "dia_id": "D1:1", "text": "I adopted a cat named Miso."},
                          {"speaker": "Bo", "dia_id": "D1:2", "text": "I ran a marathon in Boston."}]},
            "qa": [{"question": "What is the name of Ann's cat?", "answer": "Miso", "evidence": ["D1:1"], "category": 4}]}
    data, out = tmp_path / "tiny.json", tmp_path / "ev"
    data.write_text(json.dumps([conv]), encoding="utf-8")
    out.mkdir(); (out / "summary.md").write_text("an earlier run", encoding="utf-8")
    p = run("eval", "locomo", "--data", data, "--out", out, "--budgets", "200", "--mode", "turns", "--quiet")
    assert p.returncode == 2 and "add --force to overwrite it" in one_line_error(p), p.stderr
    assert (out / "summary.md").read_text(encoding="utf-8") == "an earlier run"
    p = run("eval", "locomo", "--data", data, "--out", out, "--budgets", "200", "--mode", "turns", "--quiet", "--force")
    assert p.returncode == 0, p.stderr
    assert "| setree | 200 |" in (out / "summary.md").read_text(encoding="utf-8")
    assert len(json.loads((out / "rows.json").read_text(encoding="utf-8"))) == 6   # six methods x one budget x one question

def test_control_characters_show_as_spaces_in_text_output(tmp_path):
    "A tab, a C1 control or a line separator in a fact is a space in `retrieve`'s context and `inspect`'s outline; the JSON keeps the stored text."
    texts = ["the user\tlikes green tea", "the user\x9bwrites C++20", "the user lives\u2028near a lake", "the user grows tomatoes"]
    facts = tmp_path / "facts.jsonl"
    facts.write_text("".join(json.dumps({"text": t}) + "\n" for t in texts), encoding="utf-8")
    db = tmp_path / "kb.db"
    assert run("build", facts, "--db", db, "--embedder", "hashing", "--quiet").returncode == 0
    ctx = run("retrieve", "green tea", "--db", db, "--budget", 1000)
    assert ctx.returncode == 0, ctx.stderr
    for out in (ctx.stdout, run("inspect", "--db", db).stdout):
        assert not any(ch in out for ch in "\t\x9b\u2028"), repr(out)
        for shown in ("the user likes green tea", "the user writes C++20", "the user lives near a lake"): assert shown in out, out
    assert run("inspect", "--db", db).stdout.count("[fact ") == 4       # one line per fact
    got = json.loads(run("retrieve", "green tea", "--db", db, "--budget", 1000, "--json").stdout)
    assert "the user\tlikes green tea" in [it["text"] for it in got["items"]]   # stored as given
    def texts_in(node): return [node["text"]] + [t for c in node.get("children", []) for t in texts_in(c)]
    assert set(texts) <= set(texts_in(json.loads(run("inspect", "--db", db, "--json").stdout)))

SEEN = ("import sys; from setree.cli import main; rc = main(); import igraph.drawing.matplotlib.graph as g; import matplotlib.pyplot as plt; "
        "print('igraph' in sys.modules, g.Artist.__name__, type(plt.figure()).__name__); sys.exit(rc)")

def test_a_clustering_command_imports_igraph_without_matplotlib(tmp_path):
    "The `setree` process imports igraph with matplotlib hidden (its drawing is unused); matplotlib still works afterwards, in-process callers keep theirs."
    import subprocess, sys
    facts = tmp_path / "facts.txt"; facts.write_text("\n".join(f"the user likes colour number {i}" for i in range(40)) + "\n")
    db = tmp_path / "kb.db"
    for cmd in (["build", facts, "--db", db, "--embedder", "hashing", "--quiet"], ["insert", "-", "--db", db]):
        p = subprocess.run([sys.executable, "-c", SEEN, *map(str, cmd)], input="the user owns a red kayak\n", capture_output=True, text=True, timeout=300)
        assert p.returncode == 0, p.stderr
        assert p.stdout.splitlines()[-1] == "True FakeModule Figure", p.stdout   # igraph's drawing placeholder; pyplot itself works
    p = run("stats", "--db", db, "--json")   # main(argv) in this process: igraph as the caller imports it
    assert p.returncode == 0 and json.loads(p.stdout)["facts"] == 41
    import igraph.drawing.matplotlib.graph as g
    assert g.Artist.__name__ == "Artist"

def test_repeated_texts_in_one_insert_agree_in_json_and_text(tmp_path):
    "A text given twice in one insert: `ids` one per given item (its id twice), `repeated` names that id, and the text says the same."
    db, facts = tmp_path / "kb.db", "zeta fact\nzeta fact\nthe user writes C++20\n"
    j = run("insert", "-", "--db", db, "--embedder", "hashing", "--json", input=facts)
    assert j.returncode == 0, j.stderr
    d = json.loads(j.stdout); ids = d["ack"]["ids"]
    assert len(ids) == 3 and ids[0] == ids[1] != ids[2], ids
    assert (d["repeated"], d["ack"]["merged"]) == ({ids[0]: 2}, {}), d
    t = run("insert", "-", "--db", tmp_path / "kb2.db", "--embedder", "hashing", input=facts)
    assert t.returncode == 0, t.stderr
    assert f"note: 1 repeated fact(s) in the input stored once ({ids[0]} given 2 times)" in t.stdout, t.stdout

def test_fact_ids_that_would_not_read_as_typed_are_refused(tmp_path):
    "Zero-width and bidi characters, whitespace and a leading '-' in a new fact's id: one line naming the id; duplicate ids listed as JSON."
    for fid, why in [("a\u200bb", "invisible format character (U+200B)"), ("\u202eabc", "invisible format character (U+202E)"),
                     ("my id", "whitespace (U+0020)"), ("-rf", "starts with '-'")]:
        p = run("insert", "-", "--db", tmp_path / "kb.db", "--embedder", "hashing", input=json.dumps({"id": fid, "text": "a fact"}) + "\n")
        err = one_line_error(p)
        assert f"id {fid!r}" in err and why in err, err
    p = run("insert", "-", "--db", tmp_path / "kb.db", "--embedder", "hashing", input='{"id": "x1", "text": "a"}\n{"id": "x1", "text": "b"}\n')
    assert 'duplicate fact id(s): ["x1"]' in one_line_error(p)
    assert not (tmp_path / "kb.db").exists()

def test_unknown_ids_are_listed_as_json(tmp_path):
    "The library's `unknown fact id(s): ['x']` reaches stderr as the MCP server says it: a JSON list."
    db = tmp_path / "kb.db"
    assert run("insert", "-", "--db", db, "--embedder", "hashing", input="a fact\n").returncode == 0
    err = one_line_error(run("forget", "nope-1", "--db", db))
    assert 'unknown fact id(s): ["nope-1"]' in err, err

def test_unknown_ids_are_json_on_the_cli_and_the_server(kb, tmp_path):
    "An unknown id is named in JSON (`[\"it's\", \"x\\\\y\"]`, not Python's `[\"it's\", 'x\\\\y']`) by `setree forget` and by the MCP server alike: one converter."
    pytest.importorskip("mcp")
    import shutil
    from setree.embed import get_embedder
    from setree.maintain import KnowledgeBase
    from setree.server import in_json
    d, db = kb
    db2 = tmp_path / "kb.db"; shutil.copy(db, db2)
    p = run("forget", "it's", "x\\y", "--db", db2)
    with KnowledgeBase(db2, embedder=get_embedder("hashing")) as k:
        with pytest.raises(ValueError) as lib: k.forget(["it's", "x\\y"])
    assert "'x\\\\y'" in str(lib.value)                                  # the library writes Python's list
    want = 'unknown fact id(s): ["it\'s", "x\\\\y"]'
    assert p.returncode == 2 and want in one_line_error(p) and want in in_json(str(lib.value)), (p.stderr, in_json(str(lib.value)))

def test_a_cover_parameter_only_the_cover_refuses_is_named_as_an_option(kb, tmp_path):
    "A cover value out of range in a --config file (overview_share above 1) is refused when the file is read, named by the file and key (it named an --overview-share flag that does not exist; a build stored it)."
    d, db = kb
    cfg = tmp_path / "os.json"; cfg.write_text('{"overview_share": 2}')
    p = run("retrieve", "x", "--db", db, "--config", cfg)
    assert p.returncode == 2 and f"{cfg}: config value(s) out of range: overview_share=2 (allowed: a share from 0 to 1)" in one_line_error(p), p.stderr
    p = run("build", d / "facts.txt", "--db", d / "other.db", "--config", cfg)   # a build refuses it too, before any store is made
    assert p.returncode == 2 and "overview_share=2 (allowed" in one_line_error(p) and not (d / "other.db").exists(), p.stderr
    p = run("retrieve", "x", "--db", db, "--tau", "-1")                 # a flag: checked once, by Config, named by the flag
    assert p.returncode == 2 and "config value(s) out of range: --tau=-1.0 (allowed: a number >= 0)" in one_line_error(p), p.stderr

def test_maintain_on_a_store_this_user_may_only_read(tmp_path, monkeypatch):
    "Nothing queued: `maintain` says so and exits 0 (before: refused for want of write access); with a change queued, the refusal names the read-only commands."
    import os
    f = tmp_path / "f.txt"; f.write_text("the user writes C++20\nthe user likes tea\n")
    db = tmp_path / "kb.db"
    assert run("build", f, "--db", db, "--embedder", "hashing", "--quiet").returncode == 0
    real = os.access
    monkeypatch.setattr(os, "access", lambda p, mode, **kw: False if str(p) == str(db) and mode & os.W_OK else real(p, mode, **kw))   # (as another user sees a 0444 file: root may write any)
    p = run("maintain", "--db", db)
    assert (p.returncode, p.stdout.strip()) == (0, "nothing queued: the tree is current"), p
    monkeypatch.setattr(os, "access", real)
    assert run("insert", "-", "--db", db, "--defer", input="the user owns a kayak\n").returncode == 0
    monkeypatch.setattr(os, "access", lambda p, mode, **kw: False if str(p) == str(db) and mode & os.W_OK else real(p, mode, **kw))
    p = run("maintain", "--db", db)
    assert p.returncode != 0 and "retrieve, stats, inspect or export on the command line" in p.stderr, p
