"""The MCP server end to end, as a client runs it: `python -m setree.server` as a child process, driven through the SDK's own
stdio client (`ClientSession` + `stdio_client`) and with raw JSON-RPC lines; cases C-12, C-15, C-16, C-18, C-20, C-22, C-25."""
import json, os, signal, subprocess, sys, time
from contextlib import asynccontextmanager
import anyio
import pytest

pytest.importorskip("mcp", reason="the MCP server tests need the SDK: pip install 'setree[mcp]'")
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError

FACTS = ["the user writes C++20", "the user prefers dark mode", "the user lives near a lake", "the user grows tomatoes",
         "the user has a cat named Miso", "the user builds with CMake"]
SERVE = [sys.executable, "-m", "setree.server"]
SETREE = [sys.executable, "-c", "import sys; from setree.cli import main; sys.exit(main(sys.argv[1:]))"]   # the `setree` command

def serve_args(db, *extra, embedder="hashing", quiet_ms=100):
    return ["--db", str(db), *(["--embedder", embedder] if embedder else []), "--quiet-ms", str(quiet_ms), "--poll-ms", "300", *map(str, extra)]

@asynccontextmanager
async def session(db, *extra, env=None, errlog=None, **kw):
    "An initialized SDK client session with a fresh `python -m setree.server` on `db`."
    p = StdioServerParameters(command=sys.executable, args=["-m", "setree.server", *serve_args(db, *extra, **kw)],
                              env={**os.environ, **(env or {})})
    with open(os.devnull, "w") if errlog is None else open(errlog, "w", encoding="utf-8") as err:
        async with stdio_client(p, errlog=err) as (r, w):
            async with ClientSession(r, w) as s:
                await s.initialize()
                yield s

def run(fn): return anyio.run(fn)

async def call(s, tool, **args):
    "Call a tool; return its structured content (the JSON-RPC error is raised as MCPError)."
    res = await s.call_tool(tool, args)
    assert not res.is_error, res.content[0].text
    return res.structured_content

async def refused(s, tool, **args)->str:
    "Call a tool that must be refused with invalid params (-32602); return the message."
    with pytest.raises(MCPError) as e: await s.call_tool(tool, args)
    assert e.value.code == -32602, (e.value.code, e.value.message)
    return e.value.message

async def visible(s, seq, timeout=120):
    "Wait until the change acknowledged with `seq` is applied; return the stats."
    t0 = time.monotonic()
    while True:
        st = await call(s, "stats")
        if st["applied_seq"] is not None and st["applied_seq"] >= seq: return await call(s, "stats")   # a fresh look after the commit
        assert time.monotonic() - t0 < timeout, f"seq {seq} not applied after {timeout} s: {st}"
        await anyio.sleep(0.05)

def texts(cover): return [i["text"] for i in cover["items"]]

# -- the whole tool set through the SDK client -----------------------------------------------------------------------

def test_session_through_the_sdk_client(tmp_path):
    db = tmp_path / "kb.db"
    async def go():
        async with session(db) as s:
            tools = {t.name: t for t in (await s.list_tools()).tools}
            assert sorted(tools) == ["build", "forget", "insert", "maintain", "reset", "retrieve", "stats", "update"]
            assert all(t.description and t.input_schema["type"] == "object" for t in tools.values())
            empty = await call(s, "retrieve", prompt="anything", budget=200)                      # C-01 through MCP
            assert empty["status"] == "empty" and empty["items"] == []
            ack = await call(s, "build", facts=FACTS)
            assert ack["op"] == "build" and len(ack["ids"]) == len(FACTS) and ack["seq"] >= 1
            st = await visible(s, ack["seq"])
            assert st["facts"] == len(FACTS) and st["pending"] == 0 and st["integrity"] == "ok"
            assert 'call build with "replace": true' in await refused(s, "build", facts=["x y z"])   # the KB holds facts: refused, in JSON words
            full = await call(s, "retrieve", prompt="what editor theme", budget=10**6)
            assert full["status"] == "ok" and sorted(texts(full)) == sorted(FACTS)
            ack = await call(s, "insert", facts=["the user drinks green tea", {"text": "the user plays chess", "meta": {"src": "t"}}])
            assert ack["op"] == "insert" and len(ack["ids"]) == 2
            await visible(s, ack["seq"])
            assert "the user plays chess" in texts(await call(s, "retrieve", prompt="chess", budget=10**6))
            gone = (await call(s, "retrieve", prompt="cat", budget=10**6))["items"]
            cat = next(i["fact_ids"][0] for i in gone if i["text"] == "the user has a cat named Miso")
            res = await s.call_tool("retrieve", {"prompt": "cat", "budget": 10**6})              # the text alone gives the stored ids
            ids = dict(kv.split("=", 1) for kv in res.content[0].text.rsplit("fact ids: ", 1)[1].split(", "))
            marker = next(i["marker"] for i in res.structured_content["items"] if i["text"] == "the user has a cat named Miso")
            assert ids[marker] == cat, (ids, marker, cat)
            ack = await call(s, "forget", ids=cat)
            st = await visible(s, ack["seq"])
            assert st["facts"] == len(FACTS) + 1
            r = await call(s, "retrieve", prompt="cat", budget=10**6)
            assert all("Miso" not in t for t in texts(r)) and "Miso" not in r["rendered"]
            cpp = next(i["fact_ids"][0] for i in r["items"] if i["text"] == "the user writes C++20")
            ack = await call(s, "update", id=cpp, text="the user moved to C++23")
            await visible(s, ack["seq"])
            r = await call(s, "retrieve", prompt="C++", budget=10**6)
            assert "the user moved to C++23" in texts(r) and "C++20" not in r["rendered"]
            assert 'call reset with "confirm": true' in await refused(s, "reset", confirm=False)
            assert "confirm" in await refused(s, "reset")
            ack = await call(s, "reset", confirm=True)
            st = await visible(s, ack["seq"])
            assert st["facts"] == 0 and st["nodes"] == 0
            assert (await call(s, "retrieve", prompt="anything"))["status"] == "empty"
            m = await call(s, "maintain", wait_seconds=10)
            assert m["done"] and m["pending"] == 0
    run(go)

def test_forgotten_text_leaves_the_files_when_the_session_ends(tmp_path):
    "After a clean end of the session the store is one complete file: no -wal left holding acknowledged or forgotten text."
    db, secret = tmp_path / "kb.db", "Mara secret: her PIN is 4711."
    async def go():
        async with session(db) as s:
            await visible(s, (await call(s, "build", facts=FACTS))["seq"])
            ack = await call(s, "insert", facts=[secret]); await visible(s, ack["seq"])
            await visible(s, (await call(s, "forget", ids=ack["ids"]))["seq"])
            assert (await call(s, "maintain", wait_seconds=60))["done"]     # the forget's pass has ended (the log is emptied after its commit)
            on_disk = [p for p in tmp_path.iterdir() if p.name.startswith("kb.db") and b"PIN is 4711" in p.read_bytes()]
            assert not on_disk, on_disk                                    # gone from the files while the server runs, too
            await visible(s, (await call(s, "insert", facts=["the user drinks green tea"]))["seq"])
    run(go)
    left = sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("kb.db"))
    assert "kb.db-wal" not in left, left
    assert all(b"PIN is 4711" not in (tmp_path / n).read_bytes() for n in left), left
    import shutil, sqlite3
    shutil.copy(db, tmp_path / "copy.db")                                  # the one file alone holds every applied change
    with sqlite3.connect(tmp_path / "copy.db") as c: n = c.execute("SELECT count(*) FROM facts").fetchone()[0]
    assert n == len(FACTS) + 1, n

def test_bad_arguments_and_huge_budgets(tmp_path):                                   # C-15, C-16, C-09
    from setree.cover import check_budget
    from setree.server import in_json
    db = tmp_path / "kb.db"
    def lib_message(b):
        try: check_budget(b)
        except (TypeError, ValueError) as e: return str(e)
    async def go():
        async with session(db) as s:
            await visible(s, (await call(s, "build", facts=FACTS[:3]))["seq"])
            for b in [0, -5, 12.5, "300", True, None, 1e308]:
                assert await refused(s, "retrieve", prompt="x", budget=b) == in_json(lib_message(b))   # the library's message, in JSON terms
            assert "prompt is blank" in await refused(s, "retrieve", prompt="   ")
            assert "prompt must be a string" in await refused(s, "retrieve", prompt=3)
            for bad in (["ok", ""], ["   "], ["\t\n"], ["\u200b"], ["\u0000"]):
                assert "blank fact" in await refused(s, "insert", facts=bad)
            assert "expected a string" in await refused(s, "insert", facts=[3])
            assert "facts must be a text" in await refused(s, "insert", facts=3)
            assert 'unknown argument(s) ["budgets"]' in await refused(s, "retrieve", prompt="x", budgets=3)
            assert "unknown tool" in await refused(s, "remember", facts=["x"])
            assert "replace must be true or false" in await refused(s, "build", facts=["a"], replace="yes")
            assert "unknown" in (await refused(s, "forget", ids=["nope"])).lower()
            # JSON terms, never Python's: null, true, arrays in double quotes
            assert "got null (null)" in await refused(s, "retrieve", prompt="x", budget=None)
            assert "got true (true/false)" in await refused(s, "retrieve", prompt="x", budget=True)
            msgs = [await refused(s, "insert", facts=[None]), await refused(s, "insert", facts=[{"text": "x", "meta": ["a"]}]),
                    await refused(s, "forget", ids=["nope"]), await refused(s, "insert", facts=[{"text": "x", "id": 5}])]
            for m in msgs: assert not any(w in m for w in ("NoneType", "(bool)", "(int)", "tuple", "['", "(dict)")), m
            assert 'unknown fact id(s): ["nope"]' in msgs[2]
            assert "fact id is blank" in await refused(s, "forget", ids="")
            assert "fact id is blank" in await refused(s, "forget", ids=["a", "  "])
            assert "id holds a control character or line break (U+000A)" in await refused(s, "insert", facts=[{"text": "x", "id": "a\nb"}])
            assert "meta is nested too deeply" in await refused(s, "insert", facts=[{"text": "x", "meta": json.loads('{"a":' * 101 + "1" + "}" * 101)}])
            st = await call(s, "stats")
            for _ in range(100):                # the build's pass may still be closing (its commit is visible before the worker reports back)
                if st["writer"]["running_since"] is None: break
                await anyio.sleep(0.1); st = await call(s, "stats")
            assert st["facts"] == 3 and st["pending"] == 0                              # nothing was queued by a refusal
            assert st["writer"]["running_since"] is None and "last_error_at" in st["writer"]
            for huge in (10**9, 2**63, 10**30):
                c = await call(s, "retrieve", prompt="x", budget=huge)
                assert c["status"] == "ok" and sorted(texts(c)) == sorted(FACTS[:3]) and c["budget"] == huge
                assert [i["kind"] for i in c["items"]] == ["fact"] * 3
            tiny = await call(s, "retrieve", prompt="dark mode", budget=1)                # C-13
            assert tiny["status"] == "budget_too_small" and tiny["min_budget"] > 1 and tiny["items"] == []
    run(go)

# -- raw JSON-RPC lines on stdin: every stdout line is a protocol message -------------------------------------------

def rpc(i, method, params=None):
    return json.dumps({"jsonrpc": "2.0", "id": i, "method": method, **({"params": params} if params is not None else {})}, ensure_ascii=False)

def tool(i, name, args): return rpc(i, "tools/call", {"name": name, "arguments": args})

INIT = [rpc(0, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}),
        json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"})]
C12 = ["the user's cat is named 小虎 → likes ★ toys ×3", "пользователь любит чай", "المستخدم يحب القهوة", "cafe\u0301 naïve ﬁle", "🍣🍣🍣"]

class Raw:
    "A server child process spoken to in raw JSON-RPC lines; every stdout line is checked to be one JSON-RPC message."
    def __init__(self, db, *extra, env=None, **kw):
        self.p = subprocess.Popen(SERVE + serve_args(db, *extra, **kw), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, env={**os.environ, **(env or {})})
        self.raw_lines = []
    def send(self, line:str|bytes):
        self.p.stdin.write(line if isinstance(line, bytes) else line.encode("utf-8")); self.p.stdin.write(b"\n"); self.p.stdin.flush()
    def recv(self, want_id, timeout=120):
        "Read lines until the response with `want_id` (every line read must be JSON-RPC)."
        t0 = time.monotonic()
        while time.monotonic() - t0 < timeout:
            b = self.p.stdout.readline()
            assert b, f"server closed stdout; stderr: {self.p.stderr.read().decode(errors='replace')[-2000:]}"
            self.raw_lines.append(b)
            assert b[:1] == b"{", b[:200]                                             # C-20: first byte is '{'
            msg = json.loads(b.decode("utf-8"))
            assert msg.get("jsonrpc") == "2.0", msg
            if msg.get("id") == want_id: return msg
        raise AssertionError(f"no response {want_id}")
    def ask(self, i, line):
        self.send(line); return self.recv(i)
    def close(self):
        self.p.stdin.close()
        rest = self.p.stdout.read()
        self.p.wait(timeout=30)
        for b in rest.splitlines():
            assert b[:1] == b"{" and json.loads(b)["jsonrpc"] == "2.0", b[:200]
        return self.p.returncode, self.p.stderr.read().decode("utf-8", "replace")

def wait_applied(r, seq, start_id):
    i = start_id
    while True:
        st = r.ask(i, tool(i, "stats", {}))["result"]["structuredContent"]
        if st["applied_seq"] is not None and st["applied_seq"] >= seq:
            return r.ask(i + 1, tool(i + 1, "stats", {}))["result"]["structuredContent"], i + 2   # a fresh look after the commit
        i += 1; time.sleep(0.05)

@pytest.mark.parametrize("lang", ["C", "C.UTF-8"])
def test_raw_jsonrpc_non_ascii_and_refusals(tmp_path, lang):                         # C-12, C-15 (NaN), C-20
    env = {"LANG": lang, "LC_ALL": lang, "PYTHONIOENCODING": ""}
    r = Raw(tmp_path / "kb.db", "--log-level", "debug", env=env)
    for line in INIT[:1]: assert "result" in r.ask(0, line)
    r.send(INIT[1])
    tools = r.ask(1, rpc(1, "tools/list"))["result"]["tools"]
    assert {t["name"] for t in tools} >= {"retrieve", "insert", "stats"}
    ack = r.ask(2, tool(2, "insert", {"facts": C12}))["result"]["structuredContent"]
    # lone surrogates: as a JSON escape (ensure_ascii keeps it an escape) and as raw bytes that are not UTF-8
    bad = r.ask(3, json.dumps({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "insert", "arguments": {"facts": ["ok", "\ud83d"]}}}))
    assert bad["error"]["code"] == -32602 and "lone surrogate" in bad["error"]["message"], bad
    bad = r.ask(4, b'{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"insert","arguments":{"facts":["caf\xe9"]}}}')
    assert bad["error"]["code"] == -32602 and "facts[0] is not UTF-8 text (the byte 0xE9 at character 4" in bad["error"]["message"], bad   # not "lone surrogate"
    nan = r.ask(5, '{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"retrieve","arguments":{"prompt":"x","budget":NaN}}}')
    assert nan["error"]["code"] == -32602 and nan["error"]["message"].endswith("got NaN (a number)"), nan   # as JSON writes it
    r.send("garbage, not JSON"); r.send(b"\xff\xfe not JSON either")               # JSON-RPC: -32700 with a null id, then go on
    assert "result" in r.ask(1000, rpc(1000, "ping"))
    parse = [json.loads(b) for b in r.raw_lines if b'"code":-32700' in b.replace(b" ", b"")]
    assert len(parse) == 2 and all(m["id"] is None for m in parse), parse
    st, i = wait_applied(r, ack["seq"], 6)
    assert st["facts"] == len(C12)
    res = r.ask(i, tool(i, "retrieve", {"prompt": "cat toys", "budget": 100000}))["result"]
    for f in C12:
        assert f in res["content"][0]["text"] and f in [it["text"] for it in res["structuredContent"]["items"]]
    line = r.raw_lines[-1]
    for f in C12: assert f.encode("utf-8") in line                                    # verbatim on the wire: no \u escapes
    code, err = r.close()
    assert code == 0, err
    assert "serving MCP on stdio" in err and "Traceback" not in err

def test_every_json_line_gets_an_answer(tmp_path):
    "JSON that is not a valid request, nested too deeply, or a tool call with bad params: each answered (-32600/-32602, its id), and the server goes on."
    r = Raw(tmp_path / "kb.db")
    assert "result" in r.ask(0, INIT[0]); r.send(INIT[1])
    deep = lambda n, i: ('{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"insert","arguments":{"facts":[{"text":"x","meta":' % i
                         + '{"a":' * n + "1" + "}" * n + "}]}}}")
    cases = [(4, '{"jsonrpc":"2.0","id":4,"method":"tools/call","params":5}', -32600, '"params" must be an object'),
             (7, '{"id":7,"method":"ping"}', -32600, '"jsonrpc" must be "2.0"'),
             (8, '{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"stats","arguments":"notadict"}}', -32602, "arguments must be an object"),
             (9, '{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"arguments":{}}}', -32602, "params.name"),
             (10, deep(300, 10), -32602, "meta is nested too deeply"), (11, deep(100_000, 11), -32600, "nested too deeply"),
             (12, '{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"update","arguments":{"id":"\\udfff","text":"x"}}}', -32602, "lone surrogate"),
             (13, '{"jsonrpc":"2.0","id":13,"method":"tools/call","params":{"name":"retrieve","arguments":{"prompt":' + "[" * 400 + "]" * 400 + "}}}",
              -32602, "prompt must be a string, got an array"),
             (14, '{"jsonrpc":"2.0","id":14,"method":"tools/call","params":{"name":"retrieve","arguments":{"prompt":"tea","budget":50,"budget":500}}}',
              -32602, 'retrieve: "budget" given twice: give each key once'),                 # JSON would keep the last value silently
             (15, tool(15, "build", {"facts": [], "replace": True}), -32602, "build: facts is empty"),   # (before: every fact deleted, without reset's confirm)
             (16, tool(16, "build", {"facts": "notalist", "replace": True}), -32602, "build: facts must be a list of facts")]
    for i, line, code, want in cases:
        m = r.ask(i, line)
        assert m["error"]["code"] == code and want in m["error"]["message"], (i, m)
    r.send("[1,2,3]"); r.send("[]"); r.send("7")                                     # no id to answer with: null
    assert "result" in r.ask(100, rpc(100, "ping"))                                  # still serving
    nulls = [json.loads(b) for b in r.raw_lines if b'"id":null' in b.replace(b" ", b"")]
    assert len(nulls) == 3 and all(m["error"]["code"] == -32600 for m in nulls), nulls
    assert "batches are not supported" in nulls[0]["error"]["message"]
    empty = r.ask(101, tool(101, "retrieve", {"prompt": "x"}))["result"]["content"][0]["text"]
    from setree.cli import EMPTY_KB
    assert empty == EMPTY_KB                                                          # the command's wording
    code, err = r.close()
    assert code == 0 and "Traceback" not in err, err

def test_refused_at_start(tmp_path):
    "A zero-byte store file, --llm-timeout 0 and chat flags without --summarizer chat: refused before serving, exit 2, the file untouched."
    zero = tmp_path / "zero.db"; zero.write_bytes(b"")
    for extra, want in [((), "is not a setree store: an empty file"), (("--summarizer", "chat", "--llm-timeout", "0"), "must be a positive number of seconds"),
                        (("--llm-model", "m"), "--llm-model only applies with --summarizer chat")]:
        p = subprocess.run(SERVE + serve_args(zero, *extra), capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
        assert p.returncode == 2 and want in p.stderr and "Traceback" not in p.stderr, (extra, p.returncode, p.stderr)
    assert zero.stat().st_size == 0
    env = {k: v for k, v in os.environ.items() if k not in ("SETREE_LLM_BASE_URL", "SETREE_LLM_MODEL")}   # --summarizer chat without a URL: said in flags
    p = subprocess.run(SERVE + serve_args(tmp_path / "c.db", "--summarizer", "chat"), capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL, env=env)
    assert p.returncode == 2 and "pass --llm-base-url URL or set SETREE_LLM_BASE_URL" in p.stderr and "base_url=" not in p.stderr, p.stderr

def test_a_damaged_store_exits_1_as_on_the_command_line(tmp_path):
    "A store that opens but whose contents are damaged: one line naming the damage, exit 1 (a store failure), as every `setree` command exits on it."
    from conftest import damage_an_index_page
    from setree.build import build_tree
    from setree.embed import get_embedder
    from setree.store import Store
    db = tmp_path / "kb.db"
    with Store(db) as st: st.save(build_tree(FACTS, embedder=get_embedder("hashing"), progress=False))
    damage_an_index_page(db)
    p = subprocess.run(SERVE + serve_args(db), capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    lines = [l for l in p.stderr.splitlines() if l.strip()]
    assert p.returncode == 1 and len(lines) == 1 and lines[0].startswith("setree serve: error:") and "damaged" in lines[0], (p.returncode, p.stderr)

@pytest.mark.parametrize("first", ["maintain", "insert", "stats"])
def test_damage_found_while_serving_stops_the_server(tmp_path, first):          # before: insert queued, "pass finished", the server kept serving
    "A store damaged by hand while served: the change is refused, `maintain` says its pass failed, then the server ends with the one damaged-store line, exit 1."
    import sqlite3
    from setree.build import build_tree
    from setree.embed import get_embedder
    from setree.store import Store
    db = tmp_path / "m4.db"
    with Store(db) as st: st.save(build_tree(FACTS[:5], embedder=get_embedder("hashing"), progress=False))
    r = Raw(db)
    for line in INIT[:1]: r.ask(0, line)
    r.send(INIT[1])
    assert not r.ask(1, tool(1, "stats", {}))["result"]["isError"]
    c = sqlite3.connect(db); c.execute("delete from nodes where k=(select max(k) from nodes where level=1)"); c.commit(); c.close()
    res = r.ask(2, tool(2, first, {"facts": "a new fact"} if first == "insert" else {}))["result"]
    text = res["content"][0]["text"]
    assert res["isError"] and "is damaged" in text and "next step: restore a copy" in text, res
    want = {"maintain": "pass failed: ", "insert": "store error: ", "stats": "store error: "}[first]
    assert text.startswith(want) and (first != "insert" or "nothing was queued" in text), text
    assert r.p.wait(timeout=30) == 1
    code, err = r.close()
    lines = [l for l in err.splitlines() if l.strip() and not l.startswith("setree serve: knowledge base") and " WARNING " not in l]
    assert code == 1 and len(lines) == 1 and lines[0].startswith("setree serve: error: store ") and "is damaged" in lines[0], (code, err)
    with Store(db, readonly=True) as st: assert st.queue_state()["pending"] == 0

def test_real_minilm_end_to_end(tmp_path):                                           # C-20 with the model loading, real embedder
    r = Raw(tmp_path / "kb.db", "--log-level", "info", embedder=None, env={"LANG": "C", "LC_ALL": "C"})
    r.ask(0, INIT[0]); r.send(INIT[1])
    ack = r.ask(1, tool(1, "build", {"facts": FACTS}))["result"]["structuredContent"]
    st, i = wait_applied(r, ack["seq"], 2)
    assert "MiniLM" in st["embedder_id"] and st["facts"] == len(FACTS)
    res = r.ask(i, tool(i, "retrieve", {"prompt": "which programming language standard", "budget": 60}))["result"]["structuredContent"]
    assert res["status"] == "ok" and "the user writes C++20" in res["rendered"]
    code, err = r.close()
    assert code == 0, err

# -- the store is fixed at start (C-25) -----------------------------------------------------------------------------

def test_store_fixed_at_start_and_canonical(tmp_path):
    data = tmp_path / "data"; data.mkdir(); (tmp_path / "outside").mkdir()
    link = data / "link"; link.symlink_to(tmp_path / "outside")
    given = data / "sub" / ".." / "link" / "kb.db"
    (data / "sub").mkdir()
    errlog = tmp_path / "stderr.txt"
    async def go():
        async with session(given, errlog=errlog) as s:
            tools = (await s.list_tools()).tools
            names = {k for t in tools for k in t.input_schema["properties"]}
            assert not names & {"path", "db", "store", "file", "database", "name", "kb"}
            assert all(t.input_schema.get("additionalProperties") is False for t in tools)
            for evil in ["../../escape.db", "..%2F..%2Fescape.db", "x\x00y.db", str(tmp_path / "abs.db"), str(link / "e.db")]:
                for t, a in [("retrieve", {"prompt": "x", "db": evil}), ("stats", {"path": evil}), ("insert", {"facts": ["a"], "store": evil})]:
                    assert "unknown argument" in await refused(s, t, **a)
            st = await call(s, "stats")
            assert st["path"] == str((tmp_path / "outside" / "kb.db").resolve())
    run(go)
    assert not list(tmp_path.rglob("escape.db")) and not (tmp_path / "abs.db").exists()
    assert str((tmp_path / "outside" / "kb.db").resolve()) in errlog.read_text(encoding="utf-8")
    other = tmp_path / "h64.db"                                         # a store of another embedder: refused at start, as on the command line
    from setree.maintain import KnowledgeBase
    from setree.embed import get_embedder
    with KnowledgeBase(other, embedder=get_embedder("hashing", dim=64)) as kb: kb.insert(["the user likes tea", "the user owns a kayak"]); kb.maintain()
    p = subprocess.run([sys.executable, "-c", f"import sys; from setree.server import main; sys.exit(main(['--db', {str(other)!r}, '--embedder', 'hashing']))"],
                       input=b"", capture_output=True, timeout=120)
    assert p.returncode == 2 and b"holds vectors of hashing-v1:64, not hashing-v1:384" in p.stderr and b"Traceback" not in p.stderr, p.stderr
    for db in [str(tmp_path / "nope" / "kb.db"), "a\x00b.db"]:       # a missing directory; a NUL byte (only in-process: argv cannot hold one)
        code = f"import sys; from setree.server import main; sys.exit(main(['--db', {db!r}, '--embedder', 'hashing']))"
        p = subprocess.run([sys.executable, "-c", code], input=b"", capture_output=True, timeout=120)
        assert p.returncode == 2 and b"setree serve: error:" in p.stderr and b"Traceback" not in p.stderr, p.stderr

# -- reads never wait for a pass; a hanging or failing summarizer (C-18) ---------------------------------------------

MANY = [f"the user {v} {o}" for v in ("likes", "owns", "fixed", "sold", "painted", "lost")
        for o in ("a red bike", "an old piano", "the garden fence", "a blue kayak", "two cats", "a tent", "the roof", "a laptop")]

@pytest.mark.parametrize("mode", ["hang", "rate_limit", "error", "refused"])
def test_summarizer_endpoint_failures_do_not_stall_reads(tmp_path, mode):
    from stubchat import StubChatServer as Stub, refused_url   # tests/stubchat.py
    db = tmp_path / "kb.db"
    stub = Stub("ok" if mode == "refused" else mode)
    url = refused_url() if mode == "refused" else stub.url
    extra = ["--summarizer", "chat", "--llm-base-url", url, "--llm-model", "stub", "--llm-timeout", "2"]
    async def go():
        async with session(db, *extra) as s:
            ack = await call(s, "build", facts=MANY)
            slowest, t_end, reads_during_pass = 0.0, time.monotonic() + 240, 0
            while True:
                t0 = time.monotonic()
                st = await call(s, "stats")
                await call(s, "retrieve", prompt="bike", budget=200)
                slowest = max(slowest, time.monotonic() - t0)
                reads_during_pass += st["writer"]["pass_running"]
                if st["applied_seq"] is not None and st["applied_seq"] >= ack["seq"]: break
                if st["last_pass"] and st["last_pass"].get("error"): break
                assert time.monotonic() < t_end, st
                await anyio.sleep(0.2)
            assert slowest < 5.0, slowest                                            # reads never waited for the pass
            lp = st["last_pass"]
            if mode == "hang": assert reads_during_pass >= 3 and lp["seconds"] > 2 * slowest, (reads_during_pass, lp, slowest)
            if lp.get("error") is None:
                assert st["facts"] == len(MANY)
                if mode == "rate_limit":                                             # the 429s were waited out: no endpoint failure
                    assert lp["summarizer_calls"] > 0 and st["summarizers"].get("chat", 0) > 0, st["summarizers"]
                    assert not any(k.endswith((":error", ":timeout")) for k in st["summarizers"]), st["summarizers"]
                else: assert lp["fallbacks"] > 0, lp                                 # said so in stats
            else: assert st["writer"]["last_error"] and st["pending"] > 0
    try: run(go)
    finally: stub.close()

def test_reads_answer_while_a_pass_runs(tmp_path):
    "Many concurrent retrieve/stats calls while passes run: no errors, each answers from a committed tree."
    db = tmp_path / "kb.db"
    async def go():
        async with session(db, quiet_ms=0) as s:
            await visible(s, (await call(s, "build", facts=MANY))["seq"])
            errors, n = [], [0]
            async def reader():
                for _ in range(15):
                    try:
                        c = await call(s, "retrieve", prompt="kayak", budget=120)
                        assert c["status"] == "ok"; n[0] += 1
                    except Exception as e: errors.append(e)
            async with anyio.create_task_group() as tg:
                for _ in range(4): tg.start_soon(reader)
                for k in range(10):
                    await call(s, "insert", facts=[f"the user visited city number {k}"])
                    await anyio.sleep(0.05)
            assert not errors and n[0] == 60
            last = await call(s, "maintain", wait_seconds=60)
            assert last["done"] and last["pending"] == 0
            assert (await call(s, "stats"))["facts"] == len(MANY) + 10
    run(go)

# -- another process writes to the same store (C-22) -----------------------------------------------------------------

WRITER = """
import sys, time
from setree.maintain import KnowledgeBase
from setree.embed import get_embedder
from setree.store import StoreBusy
db, n = sys.argv[1], int(sys.argv[2])
with KnowledgeBase(db, embedder=get_embedder("hashing")) as kb:
    for i in range(n):
        while True:
            try: kb.insert(f"fact number {i} written by another process"); break
            except StoreBusy: time.sleep(0.05)
print("ok", flush=True)
"""
MAINTAINER = """
import sys, time
from setree.maintain import KnowledgeBase
from setree.embed import get_embedder
with KnowledgeBase(sys.argv[1], embedder=get_embedder("hashing")) as kb:
    for _ in range(int(sys.argv[2])): kb.maintain(); time.sleep(2)
print("ok", flush=True)
"""

def test_another_process_writes_the_same_store(tmp_path):
    db = tmp_path / "kb.db"
    async def go():
        async with session(db) as s:
            await visible(s, (await call(s, "build", facts=FACTS))["seq"])
            w = subprocess.Popen([sys.executable, "-c", WRITER, str(db), "200"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            m = subprocess.Popen([sys.executable, "-c", MAINTAINER, str(db), "3"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            calls = 0
            while w.poll() is None or calls < 50:
                c = await call(s, "retrieve", prompt="fact number", budget=300)
                assert c["status"] in ("ok", "empty"); calls += 1
            out, err = w.communicate(timeout=300)
            assert w.returncode == 0 and out.strip() == "ok", err
            out, err = m.communicate(timeout=300)
            assert m.returncode == 0 and "locked" not in err, err
            t0 = time.monotonic()
            while True:                                   # the server's writer applies what the other process queued
                st = await call(s, "stats")
                if st["facts"] == len(FACTS) + 200 and st["pending"] == 0: break
                assert time.monotonic() - t0 < 180, st
                await anyio.sleep(0.2)
            c = await call(s, "retrieve", prompt="fact number 199 written by another process", budget=10**6)
            assert "fact number 199 written by another process" in texts(c)
    run(go)

def test_setree_serve_through_the_cli(tmp_path):
    "`setree serve` (the CLI's subcommand) starts the same server."
    db = tmp_path / "kb.db"
    code = "import sys; from setree.cli import main; sys.exit(main(sys.argv[1:]))"
    p = StdioServerParameters(command=sys.executable, args=["-c", code, "serve", *serve_args(db)], env=dict(os.environ))
    async def go():
        with open(os.devnull, "w") as err:
            async with stdio_client(p, errlog=err) as (r, w), ClientSession(r, w) as s:
                await s.initialize()
                ack = await call(s, "insert", facts="the user writes C++20")
                st = await visible(s, ack["seq"])
                assert st["facts"] == 1 and st["path"] == str(db.resolve())
    run(go)

def test_a_dead_pass_worker_is_replaced(tmp_path):
    "The pass worker process killed: the pass is reported as failed, nothing queued is lost, a new worker applies it."
    import signal
    db = tmp_path / "kb.db"
    async def go():
        async with session(db) as s:
            await visible(s, (await call(s, "build", facts=FACTS))["seq"])
            st = await call(s, "stats")
            assert st["writer"]["passes_in"] == "process" and st["writer"]["worker_pid"]
            old = st["writer"]["worker_pid"]
            os.kill(old, signal.SIGKILL)
            ack = await call(s, "insert", facts=["the user learned to juggle"])
            st = await visible(s, ack["seq"])
            assert st["facts"] == len(FACTS) + 1 and st["writer"]["worker_pid"] not in (None, old)
            assert "the user learned to juggle" in texts(await call(s, "retrieve", prompt="juggle", budget=10**6))
    run(go)

def test_all_fact_ids(tmp_path):
    db = tmp_path / "kb.db"
    many = [f"the user owns item number {i}" for i in range(60)]
    async def go():
        async with session(db) as s:
            await visible(s, (await call(s, "build", facts=many))["seq"])
            least = (await call(s, "retrieve", prompt="item", budget=1))["min_budget"]      # the root alone
            root = (await call(s, "retrieve", prompt="item", budget=least))["items"][0]
            assert root["kind"] == "summary" and root["n_facts"] == 60 and len(root["fact_ids"]) == 20 and not root["fact_ids_complete"]
            full = (await call(s, "retrieve", prompt="item", budget=least, all_fact_ids=True))["items"][0]
            assert len(full["fact_ids"]) == 60 and full["fact_ids_complete"] and full["fact_ids"][:20] == root["fact_ids"]
    run(go)

def test_bad_cover_config_refused_at_start(tmp_path):
    "A config file with a bad cover parameter (glimpse) is refused before serving, in the library's words (as `setree retrieve --config` says it), exit 2."
    from setree.build import Config
    with pytest.raises(ValueError) as lib: Config(glimpse=-1)
    bad = tmp_path / "bad.json"; bad.write_text('{"glimpse": -1}')
    p = subprocess.run(SERVE + serve_args(tmp_path / "kb.db", "--config", bad), capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert p.returncode == 2 and str(lib.value) in p.stderr and "Traceback" not in p.stderr, (p.returncode, p.stderr)
    assert not (tmp_path / "kb.db").exists()

def _ctrl_c(args, after, tmp_path, sig=signal.SIGINT, group=True, module=False):
    """Start `setree serve ARGS` in its own process group, stdin open; after `after(proc, stderr_path)` is true, `sig` to the whole group
    (SIGINT: a terminal's Ctrl-C) or, `group=False`, to the server only (`kill PID`). `module`: run `python -m setree.server ARGS` instead."""
    errpath = tmp_path / "serve.err"
    code = "import sys; from setree.cli import main; sys.exit(main(sys.argv[1:]))"
    with open(errpath, "w", encoding="utf-8") as err:
        p = subprocess.Popen([*SERVE, *args] if module else [sys.executable, "-c", code, "serve", *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err,
                             start_new_session=True)
        t0 = time.monotonic()
        while not after(p, errpath) and p.poll() is None and time.monotonic() - t0 < 120: time.sleep(0.05)
        assert p.poll() is None, errpath.read_text(encoding="utf-8")
        os.killpg(p.pid, sig) if group else os.kill(p.pid, sig)
        try: p.wait(60)
        finally: p.stdin.close(); p.stdout.close()
    return p.returncode, errpath.read_text(encoding="utf-8")

def test_ctrl_c_while_serving_is_one_line_and_exit_130(tmp_path):
    "Ctrl-C reaches the server and its pass worker (one process group): no traceback of the worker, no 'worker died' warning, exit 130."
    db = tmp_path / "kb.db"
    code, err = _ctrl_c(serve_args(db), lambda p, e: "serving MCP on stdio" in e.read_text(encoding="utf-8"), tmp_path)
    assert code == 130, (code, err)
    lines = err.strip().splitlines()
    assert lines[-1] == "setree serve: interrupted" and len(lines) == 2, err           # the start line, then the one line
    assert "Traceback" not in err and "KeyboardInterrupt" not in err and "died" not in err, err

def test_ctrl_c_while_starting_is_exit_130_too(tmp_path):
    "Ctrl-C while the server starts (the pass worker spawned, not ready yet): the same one line and exit code as while serving."
    db = tmp_path / "kb.db"
    def worker_spawned(p, e):   # the server has a child process: the pass worker is starting
        r = subprocess.run(["pgrep", "-P", str(p.pid)], capture_output=True, text=True)
        return bool(r.stdout.strip())
    code, err = _ctrl_c(serve_args(db), worker_spawned, tmp_path)
    assert code == 130, (code, err)
    assert err.strip().splitlines()[-1] == "setree serve: interrupted", err
    assert "Traceback" not in err and "died" not in err, err

def serving(p, e): return "serving MCP on stdio" in e.read_text(encoding="utf-8")

@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
def test_a_stop_signal_while_serving_exits_128_plus_its_number(tmp_path, sig):
    "`kill PID` (SIGTERM) or a closed terminal (SIGHUP) stops the server as Ctrl-C does, with the code a shell gives that signal: 143, 129."
    code, err = _ctrl_c(serve_args(tmp_path / "kb.db"), serving, tmp_path, sig=sig, group=False)
    assert code == 128 + sig, (code, err)
    lines = err.strip().splitlines()
    assert lines[-1] == "setree serve: interrupted" and len(lines) == 2 and "Traceback" not in err, err

@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_stopped_before_the_server_module_is_loaded_says_setree_serve(tmp_path, sig):
    "A signal in the first moments of `setree serve` (its module still loading) gives the server's one line too, and 128 + the signal's number."
    code = ("import os, signal, sys, setree.cli as cli\n"
            "real = cli._serve_module\n"
            "def early(): os.kill(os.getpid(), signal.%s); return real()\n"     # the signal arrives just before `setree.server` is imported
            "cli._serve_module = early\n"
            "sys.exit(cli.main(sys.argv[1:]))" % sig.name)
    r = subprocess.run([sys.executable, "-c", code, "serve", *serve_args(tmp_path / "kb.db")], capture_output=True, text=True, timeout=120,
                       stdin=subprocess.DEVNULL)
    assert (r.returncode, r.stderr) == (128 + sig, "setree serve: interrupted\n"), (r.returncode, r.stderr)

@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_stop_signal_inside_an_event_loop_task_is_the_one_line_too(tmp_path, sig):
    "A signal that arrives while one of the server's tasks runs (here: as the reader connects the read pipe) is no asyncio error report."
    code = ("import os, signal, sys, setree.server as s, setree.cli as cli\n"
            "real = s.WireIn._readline\n"
            "async def early(self): os.kill(os.getpid(), signal.%s); return await real(self)\n"   # inside the reader task's first step
            "s.WireIn._readline = early\n"
            "sys.exit(cli.main(sys.argv[1:]))" % sig.name)
    p = subprocess.Popen([sys.executable, "-c", code, "serve", *serve_args(tmp_path / "kb.db")], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    out, err = p.communicate(timeout=120)   # (stdin closes at once; the signal, sent before the first read, comes first)
    lines = err.strip().splitlines()
    assert (p.returncode, lines[-1], len(lines), out) == (128 + sig, "setree serve: interrupted", 2, ""), (p.returncode, err)

def test_sigterm_stops_python_m_setree_server_too(tmp_path):
    "`python -m setree.server` (what MCP clients are often configured to start) takes SIGTERM as `setree serve` does."
    code, err = _ctrl_c(serve_args(tmp_path / "kb.db"), serving, tmp_path, sig=signal.SIGTERM, group=False, module=True)
    assert (code, err.strip().splitlines()[-1]) == (143, "setree serve: interrupted"), (code, err)

def test_repeated_texts_stored_ids_and_refused_ids_agree_with_the_cli(tmp_path):
    "MCP insert of a repeated text: ids one per item, `repeated` and the text name it; stored texts only: no wait once applied; bad ids refused as the CLI does."
    async def go():
        async with session(tmp_path / "kb.db") as s:
            res = await s.call_tool("insert", {"facts": ["zeta fact", "zeta fact", "the user writes C++20"]})
            d, text = res.structured_content, res.content[0].text
            ids = d["ids"]
            assert len(ids) == 3 and ids[0] == ids[1] != ids[2] and (d["repeated"], d["merged"]) == ({ids[0]: 2}, {}), d
            assert f"note: 1 repeated fact(s) in the input stored once ({ids[0]} given 2 times)" in text, text
            await visible(s, d["seq"])
            again = await s.call_tool("insert", {"facts": ["zeta fact"]})
            assert again.content[0].text.endswith("nothing to wait for: every text is stored and visible already."), again.content[0].text
            for fid, why in [("a\u200bb", "U+200B"), ("\u202eabc", "U+202E"), ("-rf", "starts with '-'"), ("my id", "whitespace")]:
                msg = await refused(s, "insert", facts=[{"id": fid, "text": "another fact"}])
                assert f"id {fid!r}" in msg and why in msg, msg
            msg = await refused(s, "insert", facts=[{"id": "x1", "text": "a"}, {"id": "x1", "text": "b"}])
            assert 'duplicate fact id(s): ["x1"]' in msg, msg
    run(go)

def test_a_stop_says_how_many_changes_stay_queued(tmp_path):
    "SIGTERM while another process's change waits for the server's next pass: the one line says it stays queued, and the next start applies it."
    db = tmp_path / "kb.db"
    subprocess.run([*SETREE, "build", "-", "--db", str(db), "--embedder", "hashing"], input="\n".join(FACTS), text=True, check=True, capture_output=True)
    state = {}
    def queued(p, e):   # serving: queue one fact from another process, not applied (the server waits a minute of quiet before its pass)
        if not serving(p, e): return False
        if not state:
            state["r"] = subprocess.run([*SETREE, "insert", "-", "--db", str(db), "--defer"], input="the user keeps bees\n",
                                        text=True, capture_output=True, timeout=120)
        return True
    # (--poll-ms 60000 too: a server that notices another process's change gives its pass a moment to apply it when stopped, and then nothing stays queued)
    code, err = _ctrl_c(serve_args(db, "--poll-ms", 60_000, quiet_ms=60_000), queued, tmp_path, sig=signal.SIGTERM, group=False)
    assert state["r"].returncode == 0, state["r"].stderr
    assert (code, err.strip().splitlines()[-1]) == (143, "setree serve: interrupted; 1 queued change not applied yet stays queued: the next start "
                                                    f"(or `setree maintain --db {db}`) applies it"), (code, err)
    r = subprocess.run([*SETREE, "maintain", "--db", str(db)], text=True, capture_output=True, timeout=120)
    assert r.returncode == 0, r.stderr
    r = subprocess.run([*SETREE, "stats", "--db", str(db), "--json"], text=True, capture_output=True, timeout=120)
    assert (json.loads(r.stdout)["facts"], json.loads(r.stdout)["pending"]) == (len(FACTS) + 1, 0), r.stdout

def test_read_only_server_serves_reads_and_never_writes(tmp_path):
    "`setree serve --read-only`: only retrieve and stats listed and run, every change refused as invalid params, the store's bytes unchanged; refused on a missing store."
    db = tmp_path / "kb.db"
    b = subprocess.run(SETREE + ["build", "-", "--db", str(db), "--embedder", "hashing"], input="the user keeps bees\nthe user sails on weekends\n",
                       capture_output=True, text=True, timeout=120)
    assert b.returncode == 0, b.stderr
    before = db.read_bytes()
    async def go():
        async with session(db, "--read-only", embedder=None) as s:
            assert [t.name for t in (await s.list_tools()).tools] == ["retrieve", "stats"]
            got = await call(s, "retrieve", prompt="bees", budget=60)
            assert "the user keeps bees" in texts(got), got
            st = await call(s, "stats")
            assert (st["read_only"], st["facts"]) == (True, 2), st
            for tool, args in [("insert", {"facts": "the user owns a kayak"}), ("forget", {"ids": ["x"]}), ("maintain", {}), ("reset", {"confirm": True})]:
                assert "this server is read-only (started with --read-only): its tools are retrieve, stats" in await refused(s, tool, **args)
    run(go)
    assert db.read_bytes() == before
    p = subprocess.run(SERVE + serve_args(tmp_path / "none.db", "--read-only"), capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert p.returncode == 2 and "no setree store at" in p.stderr and not (tmp_path / "none.db").exists(), (p.returncode, p.stderr)
    p = subprocess.run(SERVE + serve_args(db, "--read-only", "--summarizer", "chat"), capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert p.returncode == 2 and "--read-only runs no maintenance pass" in p.stderr, (p.returncode, p.stderr)

def test_serve_with_a_config_file(tmp_path):
    "`--config` (and $SETREE_CONFIG) with passes in the worker process: the server starts and its passes run (before: AttributeError at start, exit 1)."
    db, cfg = tmp_path / "kb.db", tmp_path / "cfg.json"
    cfg.write_text('{"default_budget": 40}', encoding="utf-8")
    async def go(*extra, env=None):
        async with session(db, *extra, env=env) as s:
            ack = await call(s, "insert", facts=["the user keeps bees", "the user sails on weekends", "the user reads maps"])
            await visible(s, ack["seq"])
            got = await call(s, "retrieve", prompt="bees")
            assert got["budget"] == 40 and got["status"] == "ok", got
    run(lambda: go("--config", cfg))
    run(lambda: go(env={"SETREE_CONFIG": str(cfg)}))

def test_requests_written_before_stdin_closes_are_answered(tmp_path):
    """A client that writes its requests and closes stdin at once (a pipe: `printf ... | setree serve`) gets every answer before the
    server exits (before: stdin's end, read while the tool calls ran, cancelled them: -32000 "Connection closed", nothing queued)."""
    p = subprocess.Popen(SERVE + serve_args(tmp_path / "kb.db"), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    lines = INIT + [tool(1, "insert", {"facts": ["the user likes tea", "the user rows"]}), tool(2, "stats", {}), tool(3, "retrieve", {"prompt": "tea"})]
    out, err = p.communicate(("\n".join(lines) + "\n").encode("utf-8"), timeout=120)
    got = {m.get("id"): m for m in map(json.loads, out.splitlines())}
    assert all("result" in got.get(i, {}) for i in (1, 2, 3)), (got, err[-2000:])
    assert got[1]["result"]["structuredContent"]["seq"] == 1 and p.returncode == 0, err[-2000:]
    from setree.store import Store
    with Store(tmp_path / "kb.db", create=False, readonly=True) as st: assert st.stats()["facts"] == 2   # and applied before the exit
