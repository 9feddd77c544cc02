"""Input nits a new user meets, checked the same way on the library, the `setree` command and the MCP server: repeated texts
are stored once (also by `build_tree`), a fact id must be a string (a number is refused, never read as its digits), a
.jsonl line whose text is not a string is named with its line, a re-inserted fact is reported as already stored, and the
outline of `setree inspect` says what its fields mean."""
import json, sys
import anyio
import pytest
from conftest import run_setree as run

FACTS = ["the user writes C++20", "the user prefers dark mode", "the user grows tomatoes", "the user has a cat named Miso"]

def kb_with(path, facts=FACTS):
    from setree.embed import get_embedder
    from setree.maintain import KnowledgeBase
    kb = KnowledgeBase(path, embedder=get_embedder("hashing")); kb.progress = False
    kb.build(facts); kb.maintain()
    return kb

def test_build_tree_keeps_a_repeated_text_once(hashing):
    from setree.build import build_tree
    from setree.maintain import unique_facts as from_maintain      # still importable where it was
    from setree.build import unique_facts
    assert from_maintain is unique_facts
    t = build_tree(FACTS + ["the user  writes C++20 ", FACTS[1]], embedder=hashing, progress=False)
    assert [f.text for f in t.facts] == FACTS
    assert t.texts[:t.n_facts] == build_tree(FACTS, embedder=hashing, progress=False).texts[:len(FACTS)]

def test_build_tree_library_and_command_agree_on_repeats(tmp_path, hashing):
    from setree.build import build_tree
    from setree.store import Store
    texts = FACTS + [FACTS[0], " " + FACTS[2]]
    (tmp_path / "f.txt").write_text("\n".join(texts) + "\n", encoding="utf-8")
    p = run("build", tmp_path / "f.txt", "--db", tmp_path / "c.db", "--embedder", "hashing", "--quiet", "--json")
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["duplicates_dropped"] == 2
    with Store(tmp_path / "c.db", readonly=True) as st: ids_cli = [f.id for f in st.load().facts]
    kb = kb_with(tmp_path / "k.db", texts); ids_kb = [f.id for f in kb.tree().facts]; kb.close()
    ids_lib = [f.id for f in build_tree(texts, embedder=hashing, progress=False).facts]
    assert sorted(ids_lib) == sorted(ids_kb) == sorted(ids_cli) and len(ids_lib) == len(FACTS)

def test_forget_and_update_refuse_ids_that_are_not_strings(tmp_path):
    kb = kb_with(tmp_path / "kb.db")
    q0 = kb.stats()["queued_seq"]
    for bad, shown in [(5, "5 (int)"), ([5], "5 (int)"), (["x", 2.5], "2.5 (float)"), (True, "True (bool)"), (None, "None (NoneType)")]:
        with pytest.raises(TypeError, match="fact ids must be strings") as e: kb.forget(bad)
        assert shown in str(e.value), (bad, str(e.value))
    with pytest.raises(TypeError, match=r"fact ids must be strings; got 5 \(int\)"): kb.update(5, "the user writes Rust")
    assert kb.stats()["queued_seq"] == q0                                           # nothing was queued
    with pytest.raises(ValueError, match=r"unknown fact id\(s\): \['5'\]"): kb.forget("5")   # the string is an id like any
    kb.close()

def test_already_stored_is_said_by_the_library_and_the_command(tmp_path):
    kb = kb_with(tmp_path / "kb.db")
    stored = {f.text: f.id for f in kb.tree().facts}
    ack = kb.insert([FACTS[0], "the user plays chess", " the user  prefers dark mode"])
    assert ack.already_stored == [stored[FACTS[0]], stored[FACTS[1]]]
    assert ack.to_dict()["already_stored"] == ack.already_stored
    assert kb.insert("the user plays chess").already_stored == [ack.ids[1]]          # queued, not applied yet: known too
    assert kb.build(FACTS, replace=True).already_stored == []                        # only insert reports it
    kb.maintain(); kb.close()
    (tmp_path / "again.txt").write_text(FACTS[2] + "\n", encoding="utf-8")
    p = run("insert", tmp_path / "again.txt", "--db", tmp_path / "kb.db")
    assert p.returncode == 0, p.stderr
    assert f"already stored, not added again: 1 fact(s) {stored[FACTS[2]]}" in p.stdout and "pass:" not in p.stdout, p.stdout   # nothing queued: no pass
    j = json.loads(run("insert", tmp_path / "again.txt", "--db", tmp_path / "kb.db", "--json").stdout)
    assert j["ack"]["already_stored"] == [stored[FACTS[2]]]

def test_jsonl_text_that_is_not_a_string_names_its_line(tmp_path):
    f = tmp_path / "f.jsonl"
    f.write_text('{"text": "the user writes C++20"}\n\n{"text": 5}\n', encoding="utf-8")
    p = run("build", f, "--db", tmp_path / "x.db", "--embedder", "hashing")
    assert p.returncode == 2 and p.stderr == f'setree: error: {f}: line 3: "text" must be a string, got 5 (a number)\n', p.stderr
    assert not (tmp_path / "x.db").exists()
    from setree.core import as_facts                                               # the library names the value and the index
    with pytest.raises(TypeError, match=r"fact text must be a string; got 5 \(int\) at index \[1\]"): as_facts(["ok", {"text": 5}])

def test_inspect_outline_has_a_legend(tmp_path):
    from setree.cli import OUTLINE_LEGEND
    kb_with(tmp_path / "kb.db").close()
    out = run("inspect", "--db", tmp_path / "kb.db").stdout.splitlines()
    assert out[0] == OUTLINE_LEGEND and "f = faithfulness" in out[0] and "n = facts under it" in out[0]
    assert sum(l.lstrip().startswith("[fact ") for l in out) == len(FACTS)
    assert run("inspect", "--db", tmp_path / "kb.db", "--depth", 0).stdout.count("\n") == 2   # the legend and the root

def test_mcp_server_refuses_the_same_way(tmp_path):
    pytest.importorskip("mcp", reason="the MCP server tests need the SDK: pip install 'setree[mcp]'")
    from mcp import ClientSession, StdioServerParameters, stdio_client
    from mcp.shared.exceptions import MCPError
    kb_with(tmp_path / "kb.db").close()
    p = StdioServerParameters(command=sys.executable, args=["-m", "setree.server", "--db", str(tmp_path / "kb.db"), "--embedder", "hashing",
                                                            "--quiet-ms", "100", "--poll-ms", "300"])
    async def refused(s, tool, **args):
        with pytest.raises(MCPError) as e: await s.call_tool(tool, args)
        assert e.value.code == -32602, (e.value.code, e.value.message)
        return e.value.message
    async def go():
        import os
        with open(os.devnull, "w") as err:
            async with stdio_client(p, errlog=err) as (r, w):
                async with ClientSession(r, w) as s:
                    await s.initialize()
                    for ids, shown in [(5, "5 (a number)"), ([5, "x"], "5 (a number)"), (2.5, "2.5 (a number)")]:   # the library's words, in JSON terms
                        assert "fact ids must be strings; got " + shown in await refused(s, "forget", ids=ids)
                    assert "fact ids must be strings; got 5 (a number)" in await refused(s, "update", id=5, text="the user writes Rust")
                    assert "fact text must be a string; got 5 (a number)" in await refused(s, "insert", facts=[{"text": 5}])
                    res = await s.call_tool("insert", {"facts": [FACTS[0]]})
                    assert not res.is_error and res.structured_content["already_stored"] == res.structured_content["ids"]
                    assert res.content[0].text.startswith("insert: nothing new\nalready stored, not added again: 1 fact(s)"), res.content[0].text
                    st = (await s.call_tool("stats", {})).structured_content
                    assert st["facts"] == len(FACTS)
    anyio.run(go)

def _cli_bytes(args, data:bytes):
    "`setree ARGS` in a fresh process with raw bytes on stdin (the in-process runner takes text only)."
    import subprocess
    from conftest import CODE
    return subprocess.run([sys.executable, "-c", CODE, *map(str, args)], input=data, capture_output=True, timeout=300)

def test_stdin_and_file_say_the_same_about_bad_bytes(tmp_path):
    bad = b"caf\xe9 bad\n"
    (tmp_path / "bad.txt").write_bytes(bad)
    f = run("insert", tmp_path / "bad.txt", "--db", tmp_path / "a.db", "--embedder", "hashing")
    s = _cli_bytes(["insert", "-", "--db", tmp_path / "b.db", "--embedder", "hashing"], bad)
    assert f.returncode == s.returncode == 2, (f, s)
    want = "not UTF-8 text (invalid continuation byte at byte 3)"
    assert want in f.stderr and want in s.stderr.decode(), (f.stderr, s.stderr)
    (tmp_path / "p.txt").write_bytes(b"which \xff editor?\n")
    kb_with(tmp_path / "k.db").close()
    r = run("retrieve", "--prompts-file", tmp_path / "p.txt", "--db", tmp_path / "k.db")
    assert r.returncode == 2 and "p.txt: not UTF-8 text (invalid start byte at byte 6)" in r.stderr, r.stderr

def test_stdin_json_array_is_refused_not_stored(tmp_path):
    r = run("insert", "-", "--db", tmp_path / "q.db", "--embedder", "hashing", input='[{"text": "a"}]')
    assert r.returncode == 2 and "one JSON array" in r.stderr, r.stderr
    assert not (tmp_path / "q.db").exists()
    r = run("insert", "-", "--db", tmp_path / "q.db", "--embedder", "hashing", input="[draft] the user writes C++20\n")
    assert r.returncode == 0, r.stderr   # a text line that only starts with a bracket is a fact

def test_library_refusals_name_the_problem(tmp_path):
    kb = kb_with(tmp_path / "k.db")
    with pytest.raises(TypeError, match="facts must be a text, a fact, or a list of them; got int"): kb.insert(5)
    with pytest.raises(ValueError, match="fact 0: meta cannot be stored as JSON"): kb.insert([{"text": "x", "meta": {"x": float("nan")}}])
    with pytest.raises(TypeError, match="id must be a string, got 5 \\(int\\)"): kb.insert({"text": "x", "id": 5})
    kb.close()

def test_cli_names_its_own_flags(tmp_path):
    (tmp_path / "f.txt").write_text("\n".join(FACTS) + "\n", encoding="utf-8")
    r = run("build", tmp_path / "f.txt", "--db", tmp_path / "c.db", "--embedder", "hashing", "--summarizer", "chat", "--quiet",
            env={"SETREE_LLM_BASE_URL": "", "SETREE_LLM_MODEL": ""})
    assert r.returncode == 2 and "--llm-base-url URL" in r.stderr and "ValueError" not in r.stderr, r.stderr
    (tmp_path / "c2.json").write_text("{oops", encoding="utf-8")
    r = run("build", tmp_path / "f.txt", "--db", tmp_path / "d.db", "--embedder", "hashing", "--config", tmp_path / "c2.json")
    assert r.returncode == 2 and r.stderr.count("c2.json") == 1, r.stderr
