"""`retrieve` latency through the MCP server (the SDK's stdio client, a `python -m setree.server` child process) against the
library call on the same store, and while a maintenance pass of 100 inserts runs. Used by nbs/reports/server.ipynb.

    python benchmarks/server_latency.py [--n 10000] [--queries 200] [--out benchmarks/server_latency.json]
"""
from __future__ import annotations
import argparse, datetime, json, os, platform, shutil, sys, time
from pathlib import Path
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("SETREE_SHARED_DATA", ROOT.parent / "shared" / "data"))
CORPUS = SHARED / "corpus" / "sentences.txt"
CHUNKS = Path(os.environ.get("SETREE_MAINT_CACHE", "/work/cache/maint"))   # MiniLM vectors of corpus lines, 2,000 per file
CACHE = Path(os.environ.get("SETREE_SERVER_CACHE", "/work/cache/server"))
PROMPTS_FROM, NEW_FROM = 60_000, 61_000   # corpus lines never in the store: prompts, and the facts a pass inserts


def corpus(n:int, start:int=0)->list[str]:
    with open(CORPUS, encoding="utf-8") as fh: return fh.read().split("\n")[start:start + n]


class CachedVectors:
    "The real MiniLM embedder, except that texts whose vectors are cached are looked up (the build of the store only)."
    def __init__(self, inner, texts, V): self.inner, self._vec = inner, dict(zip(texts, V))
    identity = property(lambda self: self.inner.identity)
    dim = property(lambda self: self.inner.dim)
    def embed_with_flags(self, texts):
        miss = list(dict.fromkeys(t for t in texts if t not in self._vec))   # summaries that are not a fact: embedded for real
        if miss: self._vec.update(zip(miss, self.inner.embed(miss)))
        return np.stack([self._vec[t] for t in texts]).astype(np.float32), np.zeros(len(texts), bool)
    def embed(self, texts): return self.embed_with_flags(texts)[0]
    def embed_query(self, text): return self.inner.embed_query(text)


def store(n:int)->Path:
    "A store of the first n corpus lines (built once from the cached vectors, kept under CACHE)."
    from setree.build import build_tree
    from setree.embed import get_embedder
    from setree.store import Store
    db = CACHE / f"kb_{n}.db"
    if db.exists(): return db
    CACHE.mkdir(parents=True, exist_ok=True)
    facts = corpus(n)
    files = [CHUNKS / f"chunk_{b:06d}.npy" for b in range(0, n, 2000)]
    V = np.concatenate([np.load(f) for f in files])[:n]
    t0 = time.perf_counter()
    tree = build_tree(facts, embedder=CachedVectors(get_embedder(), facts, V), progress=False)
    tmp = db.with_suffix(".tmp")
    with Store(tmp) as st: st.save(tree)
    os.replace(tmp, db)
    print(f"built {n} facts into {tree.n_nodes} nodes in {time.perf_counter() - t0:.1f} s -> {db}", file=sys.stderr)
    return db


def pct(xs)->dict:
    a = np.asarray(xs, float)
    return {"n": int(len(a)), "p50_ms": round(float(np.percentile(a, 50)), 2), "p99_ms": round(float(np.percentile(a, 99)), 2),
            "max_ms": round(float(a.max()), 2), "mean_ms": round(float(a.mean()), 2)} if len(a) else {"n": 0}


async def measure(db:Path, queries:int, budget:int, inserts:int)->dict:
    from mcp import ClientSession, StdioServerParameters, stdio_client
    from setree.embed import get_embedder
    from setree.maintain import KnowledgeBase
    prompts = corpus(queries, PROMPTS_FROM)
    lib = KnowledgeBase(db, embedder=get_embedder())
    p = StdioServerParameters(command=sys.executable, args=["-m", "setree.server", "--db", str(db)], env=dict(os.environ))
    out = {}
    with open(CACHE / "server_stderr.log", "w", encoding="utf-8") as err:
        async with stdio_client(p, errlog=err) as (r, w), ClientSession(r, w) as s:
            await s.initialize()
            for q in prompts[:10]:                      # warm both: caches, the tool's output schema, the tree
                lib.retrieve(q, budget); await s.call_tool("retrieve", {"prompt": q, "budget": budget})
            t_lib, t_mcp, t_ping, same, size = [], [], [], 0, []
            for q in prompts:                           # interleaved, so all three see the same machine load
                t0 = time.perf_counter(); c = lib.retrieve(q, budget); t_lib.append(1000 * (time.perf_counter() - t0))
                t0 = time.perf_counter(); res = await s.call_tool("retrieve", {"prompt": q, "budget": budget}); t_mcp.append(1000 * (time.perf_counter() - t0))
                t0 = time.perf_counter(); await s.send_ping(); t_ping.append(1000 * (time.perf_counter() - t0))
                same += res.structured_content["rendered"] == c.render()
                size.append(len(res.model_dump_json(by_alias=True, exclude_unset=True)))
            out["idle"] = {"library": pct(t_lib), "mcp": pct(t_mcp), "ping": pct(t_ping), "identical_contexts": same,
                           "response_bytes_median": int(np.median(size)),
                           "p50_overhead_ms": round(float(np.percentile(t_mcp, 50) - np.percentile(t_lib, 50)), 2),
                           "p99_overhead_ms": round(float(np.percentile(t_mcp, 99) - np.percentile(t_lib, 99)), 2)}
            # a pass of `inserts` new facts, queued in one call; retrieve in a loop until the pass is committed
            new = corpus(inserts, NEW_FROM)
            ack = (await s.call_tool("insert", {"facts": new})).structured_content
            calls, k, t_start = [], 0, time.time()
            while True:
                q = prompts[k % len(prompts)]; k += 1
                w0 = time.time(); t0 = time.perf_counter()
                await s.call_tool("retrieve", {"prompt": q, "budget": budget})
                calls.append((w0, 1000 * (time.perf_counter() - t0)))
                if k % 10 == 0:
                    st = (await s.call_tool("stats", {})).structured_content
                    if st["applied_seq"] is not None and st["applied_seq"] >= ack["seq"]: break
                if time.time() - t_start > 900: raise RuntimeError("the pass did not finish in 15 minutes")
            st = (await s.call_tool("stats", {})).structured_content      # a fresh look after the commit
            lp = st["last_pass"]
            p0 = datetime.datetime.fromisoformat(lp["started_at"]).timestamp()
            p1 = p0 + lp["seconds"]
            during = [ms for w0, ms in calls if p0 <= w0 <= p1]
            out["during_pass"] = {"inserts": inserts, "pass_seconds": round(lp["seconds"], 2), "calls_total": len(calls),
                                  "during": pct(during), "pass_report": lp, "facts_after": st["facts"]}
    lib.close()
    return out


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=10_000); ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--budget", type=int, default=1024); ap.add_argument("--inserts", type=int, default=100)
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "server_latency.json"))
    a = ap.parse_args(argv)
    import anyio
    base = store(a.n)
    db = CACHE / f"run_{a.n}.db"                         # a fresh copy: the measured pass changes it
    for suf in ("", "-wal", "-shm"):
        if Path(str(db) + suf).exists(): os.remove(str(db) + suf)
    shutil.copy(base, db)
    load0 = os.getloadavg()
    res = anyio.run(measure, db, a.queries, a.budget, a.inserts)
    res.update(n=a.n, budget=a.budget, queries=a.queries, when=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
               machine=f"{os.cpu_count()} cores; Python {platform.python_version()}; {platform.platform()}",
               load_average=[round(x, 2) for x in load0] + [round(x, 2) for x in os.getloadavg()])
    Path(a.out).write_text(json.dumps(res, indent=1) + "\n", encoding="utf-8")
    print(json.dumps({k: v for k, v in res.items() if k != "during_pass"} | {"during_pass": {k: v for k, v in res["during_pass"].items() if k != "pass_report"}}, indent=1))


if __name__ == "__main__": main()
