"""Measurements of setree's living knowledge base (`setree.maintain.KnowledgeBase`): cost of incremental passes
against full rebuilds, quality of a grown tree against a full build on LoCoMo, kill -9 fault injection, and three processes
inserting, maintaining and retrieving on one store at once.

Harness code only (not part of the `setree` package). Run from the repository root:

    python benchmarks/maintenance.py cost --sizes 1000 10000 50000 --out benchmarks/maintenance_cost.json
    python benchmarks/maintenance.py quality --out benchmarks/maintenance_quality.json
    python benchmarks/maintenance.py faults --kills 100 --out benchmarks/maintenance_faults.json
    python benchmarks/maintenance.py concurrency --runs 3 --out benchmarks/maintenance_concurrency.json

The cost run is meant to be started under `taskset -c 0` with OMP/OPENBLAS/MKL_NUM_THREADS=1 (one core)."""
from __future__ import annotations
import argparse, json, os, platform, random, signal, sqlite3, subprocess, sys, tempfile, time
from pathlib import Path
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("SETREE_SHARED_DATA", ROOT.parent / "shared" / "data"))
CORPUS = SHARED / "corpus" / "sentences.txt"
LOCOMO = SHARED / "locomo" / "locomo_dev.json"
CACHE = Path(os.environ.get("SETREE_MAINT_CACHE", "/work/cache/maint"))
NEW_FACTS_FROM = 60_000   # corpus lines used as new facts (never part of a measured knowledge base)


def corpus_lines(n:int, start:int=0)->list[str]:
    "Lines start..start+n of the scaling corpus."
    with open(CORPUS, encoding="utf-8") as fh: lines = fh.read().split("\n")
    return lines[start:start + n]


class CorpusEmbedder:
    """Serves cached MiniLM vectors for corpus lines already embedded (`/work/cache/maint/corpus_minilm_50000.npy`)
    and embeds every other text with the real model; counts what it embedded for real."""
    def __init__(self, inner, cache_file:Path|None=None, n:int=50_000):
        self.inner, self._vec = inner, {}
        cache_file = cache_file or CACHE / f"corpus_minilm_{n}.npy"
        if cache_file.exists():
            ident = (cache_file.with_suffix(".identity")).read_text().strip()
            if ident != inner.identity: raise ValueError(f"cache {cache_file} was made by {ident}, not {inner.identity}")
            V = np.load(cache_file)
        else:   # the cache is still being written: its finished 2,000-line chunks, in order
            chunks = []
            for b in range(0, n, 2000):
                f = cache_file.parent / f"chunk_{b:06d}.npy"
                if not f.exists(): break
                chunks.append(np.load(f))
            V = np.concatenate(chunks) if chunks else np.zeros((0, 384), np.float32)
        self._vec = dict(zip(corpus_lines(len(V)), V))
        self.embedded, self.embed_s = 0, 0.0
    def __getattr__(self, name): return getattr(self.inner, name)
    @property
    def identity(self): return self.inner.identity
    @property
    def dim(self): return self.inner.dim
    def embed_with_flags(self, texts):
        texts = list(texts)
        new = list(dict.fromkeys(t for t in texts if t not in self._vec))
        fresh = {}
        if new:
            t0 = time.perf_counter(); v, f = self.inner.embed_with_flags(new); self.embed_s += time.perf_counter() - t0
            self.embedded += len(new); fresh = {t: (x, bool(fl)) for t, x, fl in zip(new, v, f)}
        if not texts: return self.inner.embed_with_flags([])
        vecs = np.stack([fresh[t][0] if t in fresh else self._vec[t] for t in texts]).astype(np.float32)
        return vecs, np.array([fresh[t][1] if t in fresh else False for t in texts], bool)
    def embed(self, texts): return self.embed_with_flags(texts)[0]
    def embed_query(self, text):
        t0 = time.perf_counter(); q = self.inner.embed_query(text); self.embed_s += time.perf_counter() - t0
        self.embedded += 1
        return q


# ---------------------------------------------------------------- write accounting
def _connections(obj, depth=0, seen=None):
    "sqlite3 connections reachable from a KnowledgeBase's attributes (for `total_changes`)."
    seen = set() if seen is None else seen
    if id(obj) in seen or depth > 3: return []
    seen.add(id(obj))
    if isinstance(obj, sqlite3.Connection): return [obj]
    out = []
    d = getattr(obj, "__dict__", None)
    if isinstance(d, dict):
        for v in list(d.values()):
            if isinstance(v, (sqlite3.Connection,)) or hasattr(v, "__dict__"):
                out += _connections(v, depth + 1, seen)
    return out


def total_changes(kb)->int|None:
    "Sum of `total_changes` over the KnowledgeBase's own connections (rows inserted/updated/deleted), None if none found."
    cons = _connections(kb)
    tc = 0
    for c in cons:
        try: tc += c.total_changes
        except sqlite3.ProgrammingError: pass   # closed
    return tc if cons else None


class WriteMeter:
    """Bytes a store operation appends to the WAL. A reader connection holds a snapshot open during the operation,
    so no checkpoint can restart the WAL: the WAL size afterwards counts every page frame written."""
    def __init__(self, path):
        self.path, self.wal = Path(path), Path(str(path) + "-wal")
    def __enter__(self):
        c = sqlite3.connect(self.path, isolation_level=None)
        c.execute("PRAGMA wal_checkpoint(TRUNCATE)"); c.close()
        self.page = sqlite3.connect(self.path).execute("PRAGMA page_size").fetchone()[0]
        self.r = sqlite3.connect(self.path, isolation_level=None)
        self.r.execute("BEGIN"); self.r.execute("SELECT count(*) FROM meta").fetchone()
        self.wal0 = self.wal.stat().st_size if self.wal.exists() else 0
        self.file0 = self.path.stat().st_size
        return self
    def __exit__(self, *exc):
        self.wal_bytes = (self.wal.stat().st_size if self.wal.exists() else 0) - self.wal0
        self.frames = max(0, (self.wal_bytes - 32) // (self.page + 24)) if self.wal_bytes else 0
        self.r.execute("COMMIT"); self.r.close()
        self.file_delta = self.path.stat().st_size - self.file0
        return False


def fingerprints(tree)->tuple[np.ndarray, np.ndarray]:
    """(internal node numbers, fingerprint of the fact set under each). The fingerprint is the wrap-around sum of a 64-bit hash
    of every fact id below the node (one cumulative sum over the depth-first fact order: O(N + M))."""
    v = np.arange(tree.n_facts, tree.n_nodes)
    if not len(v): return v, np.zeros(0, np.uint64)
    h = np.array([hash(f.id) & 0xFFFFFFFFFFFFFFFF for f in tree.facts], np.uint64)[np.asarray(tree.order)]
    cs = np.concatenate([np.zeros(1, np.uint64), np.cumsum(h, dtype=np.uint64)])
    return v, cs[np.asarray(tree.stop)[v]] - cs[np.asarray(tree.start)[v]]


def fact_sets(tree)->dict:
    "Fingerprint of the fact set under each internal node -> its summary text (see `fingerprints`)."
    v, fp = fingerprints(tree)
    return {int(x): tree.texts[i] for x, i in zip(fp, v)}


def pct(xs, q): return float(np.percentile(np.asarray(xs, float), q)) if len(xs) else float("nan")


# ---------------------------------------------------------------- cost
def _kb(path, embedder, summarizer, config=None):
    from setree.maintain import KnowledgeBase
    return KnowledgeBase(path, embedder=embedder, summarizer=summarizer, config=config)


def measure_op(kb, path, stub, op, compare_trees=True):
    "Run op(kb) (mutation) then kb.maintain(); wall time of both, pass report, summarizer calls, rows and bytes written."
    before = fact_sets(kb.tree()) if compare_trees else None
    c0, tc0 = stub.calls if stub else 0, total_changes(kb)
    with WriteMeter(path) as wm:
        p0, h0 = time.process_time(), time.thread_time()
        t0 = time.perf_counter(); op(kb); t1 = time.perf_counter(); rep = kb.maintain(); t2 = time.perf_counter()
        p1, h1 = time.process_time(), time.thread_time()
    tc1 = total_changes(kb)
    row = {"seconds": t2 - t0, "mutation_s": t1 - t0, "pass_s": t2 - t1, "cpu_s": p1 - p0, "thread_cpu_s": h1 - h0,
           "stub_calls": (stub.calls - c0) if stub else None,
           "rows_changed": None if tc0 is None or tc1 is None else tc1 - tc0, "wal_bytes": wm.wal_bytes, "wal_frames": wm.frames,
           "file_delta": wm.file_delta, "report": rep}
    if compare_trees:
        tree = kb.tree()
        after = fact_sets(tree)
        changed = [s for s in after if s not in before]
        kept_resummarized = sum(1 for s, t in after.items() if s in before and before[s] != t)
        row.update(changed_communities=len(changed), unchanged_communities=len(after) - len(changed),
                   unchanged_with_new_text=kept_resummarized)
        if stub is not None: row.update(request_targets(tree, stub, c0, set(before)))
    return row


def request_targets(tree, stub, c0:int, before_fps:set)->dict:
    """Which communities the summarizer requests since request number `c0` were for: each request's items (the children's
    texts) are matched to the internal node of the new tree with those children; a node whose fact set already existed
    before the pass is an unchanged community."""
    v, fps = fingerprints(tree)
    by_children = {tuple(sorted(tree.texts[c] for c in tree.children[u])): int(fp) for u, fp in zip(v, fps)}
    out = {"calls_unchanged_communities": 0, "calls_changed_communities": 0, "calls_unmatched": 0}
    for req in stub.requests[c0:]:
        fp = by_children.get(tuple(sorted(stub.items(req))))
        key = "calls_unmatched" if fp is None else "calls_unchanged_communities" if fp in before_fps else "calls_changed_communities"
        out[key] += 1
    return out


def _summ(rows, key):
    xs = [r[key] for r in rows if r.get(key) is not None]
    return {"p50": pct(xs, 50), "p95": pct(xs, 95), "mean": float(np.mean(xs)) if xs else float("nan"), "n": len(xs)}


def stub_reply(items:list[str])->str:
    "The local stub's summary: the first eight words of the first item (short enough that no reply is cut or retried)."
    return " ".join(items[0].split()[:8]) if items else "nothing to summarize"


def cost_one(n:int, trials1:int, trials100:int, trials_forget:int, rebuilds:int, workdir:Path, log=print,
             partial=None,   # partial(out): called after every phase with the results so far
             summarizer:str="chat")->dict:   # "chat" (against the local stub) or "extractive" (no HTTP; calls counted by the pass report)
    from setree.embed import get_embedder
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))   # the stub chat server lives with the tests
    from stubchat import StubChatServer
    from setree.chat import ChatSummarizer
    inner = get_embedder(threads=1)
    emb = CorpusEmbedder(inner)
    facts = corpus_lines(n)
    missing = sum(t not in emb._vec for t in facts)
    new_pool = iter(corpus_lines(trials1 + 100 * trials100 + 10, NEW_FACTS_FROM))
    path = workdir / f"kb_{n}.db"
    for p in (path, Path(str(path) + "-wal"), Path(str(path) + "-shm")):
        if p.exists(): p.unlink()
    out = {"n": n, "facts_not_cached": missing, "summarizer": summarizer, "prompt_embedded": True}
    from contextlib import nullcontext
    from setree.summarize import ExtractiveSummarizer
    with (StubChatServer(reply=stub_reply) if summarizer == "chat" else nullcontext()) as stub:
        summ = ChatSummarizer(base_url=stub.url, model="stub") if stub else ExtractiveSummarizer()
        kb = _kb(path, emb, summ)
        # full build (from cached embeddings) through the KnowledgeBase
        out["build"] = measure_op(kb, path, stub, lambda k: k.build(facts), compare_trees=False)
        out["build"]["stats"] = kb.stats()
        log(f"N={n}: build {out['build']['seconds']:.1f}s wall, {out['build']['cpu_s']:.1f}s CPU, {out['build']['stub_calls']} stub calls")
        # embedding time, measured separately on up to 200 texts (batch session, 1 thread) and scaled to N
        sample = facts[:min(n, 200)]
        t0 = time.perf_counter(); p0 = time.process_time(); inner.embed(sample); es = time.perf_counter() - t0
        ec = time.process_time() - p0
        out["embed_sample"] = {"texts": len(sample), "seconds": es, "cpu_s": ec, "extrapolated_s_for_n": es / len(sample) * n,
                               "extrapolated_cpu_s_for_n": ec / len(sample) * n}
        # every mutation trial embeds one prompt (the turn that brought the change) inside its timed window: the targets' pass includes it
        def turn(k, text, change): inner.embed_query(text); return change(k)
        def insert(k, texts): return turn(k, texts if isinstance(texts, str) else texts[0], lambda k: k.insert(texts))
        warm = measure_op(kb, path, stub, lambda k: insert(k, next(new_pool)), compare_trees=False)   # first pass after build: warm caches
        out["warmup_insert"] = warm
        if partial: partial(out)
        ins1 = [measure_op(kb, path, stub, lambda k: insert(k, next(new_pool))) for _ in range(trials1)]
        if partial: partial({**out, "insert1_rows": ins1})
        log(f"N={n}: insert 1 P50 {pct([r['seconds'] for r in ins1], 50)*1000:.1f} ms wall, {pct([r['cpu_s'] for r in ins1], 50)*1000:.1f} ms CPU")
        ins100 = [measure_op(kb, path, stub, lambda k: insert(k, [next(new_pool) for _ in range(100)])) for _ in range(trials100)]
        if partial: partial({**out, "insert1_rows": ins1, "insert100_rows": ins100})
        log(f"N={n}: insert 100 P50 {pct([r['seconds'] for r in ins100], 50)*1000:.1f} ms")
        rng = random.Random(n)
        ids = [f.id for f in kb.tree().facts]
        victims = rng.sample(ids, trials_forget)
        text_of = {f.id: f.text for f in kb.tree().facts}
        fg = [measure_op(kb, path, stub, lambda k, v=v: turn(k, "forget that " + text_of[v], lambda k: k.forget(v))) for v in victims]
        log(f"N={n}: forget 1 P50 {pct([r['seconds'] for r in fg], 50)*1000:.1f} ms")
        # full rebuild of the same facts the store now holds
        now = [{"id": f.id, "text": f.text, "meta": f.meta} for f in kb.tree().facts]
        rb = [] if rebuilds else [out["build"]]   # 0 rebuilds: the first build stands for the rebuild
        for _ in range(rebuilds):
            rb.append(measure_op(kb, path, stub, lambda k: k.build(now, replace=True), compare_trees=False))
            log(f"N={n}: rebuild {rb[-1]['seconds']:.1f}s")
        out["stats_end"] = kb.stats()
        kb.close()
        if stub: summ.close()
    for name, rows in (("insert1", ins1), ("insert100", ins100), ("forget1", fg), ("rebuild", rb)):
        out[name] = {"rows": rows, **{k: _summ(rows, k) for k in ("seconds", "mutation_s", "pass_s", "cpu_s", "thread_cpu_s", "stub_calls", "rows_changed",
                                                                     "wal_bytes", "wal_frames", "changed_communities",
                                                                     "unchanged_with_new_text", "calls_unchanged_communities",
                                                                     "calls_changed_communities", "calls_unmatched")}}
        out[name]["full_rebuild_passes"] = sum(bool(r["report"].get("full_rebuild")) for r in rows)
        out[name]["summarizer_calls_reported"] = _summ([{"x": r["report"].get("summarizer_calls")} for r in rows], "x")
    out["real_embeddings"] = emb.embedded
    return out


def machine()->dict:
    return {"python": platform.python_version(), "platform": platform.platform(), "cpus": os.cpu_count(),
            "affinity": sorted(os.sched_getaffinity(0)), "load_start": os.getloadavg(),
            "threads_env": {k: os.environ.get(k) for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")},
            "utc": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "library": library_version()}


def library_version()->dict:
    "The last commit that changed `setree/` and whether the working tree's `setree/` differs from it (the code measured)."
    git = lambda *a: subprocess.run(["git", "-C", str(ROOT), *a], capture_output=True, text=True).stdout.strip()
    return {"setree_commit": git("log", "-1", "--format=%h", "--", "setree"), "setree_dirty": bool(git("status", "--porcelain", "--", "setree"))}


def cmd_cost(a):
    workdir = Path(a.workdir); workdir.mkdir(parents=True, exist_ok=True)
    res = {"machine": machine(), "sizes": {}}
    outp = Path(a.out)
    for n in a.sizes:
        part = outp.with_name(outp.stem + f"_partial_{n}.json")
        res["sizes"][str(n)] = cost_one(n, a.trials1, a.trials100, a.trials_forget, a.rebuilds, workdir,
                                        log=lambda s: print(s, flush=True),
                                        partial=lambda o: part.write_text(json.dumps(o, indent=1, default=str)), summarizer=a.summarizer)
        res["machine"]["load_end"] = os.getloadavg()
        outp.write_text(json.dumps(res, indent=1, default=str))   # after every size: partial results survive
    return 0


# ---------------------------------------------------------------- quality
def _recall(tree, conv, facts, budgets, emb):
    "Mean evidence recall (categories 1-4) per budget of setree's cover on `tree`, with the evaluation's metric helpers."
    from setree.evaluate import SetreeCover, context_metrics
    meth = SetreeCover(emb)
    idx = {}
    for i, f in enumerate(facts):
        for d in f.meta.get("dia_ids", []): idx.setdefault(d, []).append(i)
    qs = [q for q in conv.questions if q.category != 5 and q.evidence]
    out = {}
    for b in budgets:
        rs = []
        for q in qs:
            ctx, _nodes = meth(tree, q.question, b)            # (rendered context, visible nodes); only recall is used here
            rs.append(context_metrics(ctx, q, facts, 0, idx)["recall"])
        out[b] = float(np.nanmean(rs)) if rs else float("nan")
    return out


def _shape(tree):
    from setree.build import tree_shape as tree_summary
    s = tree_summary(tree)
    internal = np.arange(tree.n_facts, tree.n_nodes)
    ar = [len(tree.children[v]) for v in internal]
    return {"facts": s["facts"], "nodes": s["nodes"], "depth": s["depth"], "arity_mean": float(np.mean(ar)) if ar else 0.0,
            "arity_median": s["arity_median"], "arity_max": s["arity_max"],
            "faithfulness_mean": float(np.mean(tree.faithfulness[internal])) if len(internal) else float("nan")}


def cmd_quality(a):
    from setree.evaluate import load_locomo, CachedEmbedder
    from setree.embed import get_embedder
    from setree.build import build_tree
    from setree.maintain import KnowledgeBase
    import dataclasses
    emb = CachedEmbedder(get_embedder())
    convs = load_locomo(LOCOMO)
    if a.conversations: convs = [c for c in convs if c.sample_id in a.conversations]
    budgets = (256, 512, 1024, 2048)
    res = {"machine": machine(), "budgets": budgets, "forget_share": 0.2, "seed": a.seed, "conversations": {}}
    for conv in convs:
        t0 = time.time()
        emb.prefetch_queries([q.question for q in conv.questions])
        with tempfile.TemporaryDirectory() as d:
            kb = KnowledgeBase(Path(d) / "kb.db", embedder=emb)
            sessions = sorted({f.meta["session"] for f in conv.facts})
            passes = []
            for s in sessions:
                kb.insert([{"id": f.id, "text": f.text, "meta": f.meta} for f in conv.facts if f.meta["session"] == s])
                passes.append(kb.maintain())
            grown = kb.tree()
            full = build_tree(conv.facts, embedder=emb, progress=False)
            row = {"facts": len(conv.facts), "sessions": len(sessions),
                   "full_rebuild_passes": sum(bool(p.get("full_rebuild")) for p in passes),
                   "pass_errors": [p.get("error") for p in passes if p.get("error")],
                   "grown": {"recall": _recall(grown, conv, conv.facts, budgets, emb), **_shape(grown)},
                   "full": {"recall": _recall(full, conv, conv.facts, budgets, emb), **_shape(full)}}
            rng = random.Random(a.seed)
            ids = [f.id for f in conv.facts]
            gone = set(rng.sample(ids, round(0.2 * len(ids))))
            kb.forget(sorted(gone)); rep = kb.maintain()
            left = [f for f in conv.facts if f.id not in gone]
            grown_f = kb.tree()
            full_f = build_tree(left, embedder=emb, progress=False)
            conv_f = dataclasses.replace(conv, facts=left)
            row["forget"] = {"forgotten": len(gone), "pass_error": rep.get("error"), "full_rebuild": bool(rep.get("full_rebuild")),
                             "grown": {"recall": _recall(grown_f, conv_f, left, budgets, emb), **_shape(grown_f)},
                             "full": {"recall": _recall(full_f, conv_f, left, budgets, emb), **_shape(full_f)}}
            kb.close()
        row["seconds"] = time.time() - t0
        res["conversations"][conv.sample_id] = row
        print(conv.sample_id, json.dumps({k: row[k]["recall"] for k in ("grown", "full")}), flush=True)
        Path(a.out).write_text(json.dumps(res, indent=1, default=str))
    return 0


# ---------------------------------------------------------------- faults (kill -9)
CHILD = r"""
import json, os, sys, time
from setree.embed import get_embedder
from setree.maintain import KnowledgeBase
import scipy.sparse, leidenalg, setree.build, setree.cluster, setree.cover, setree.fidelity, setree.summarize  # noqa: F401 (warm imports: a pass's time is its work)
db, log, start = sys.argv[1], sys.argv[2], int(sys.argv[3])
kb = KnowledgeBase(db, embedder=get_embedder("hashing"))
kb.tree()
i = start
with open(log, "a", buffering=1) as fh:
    while True:
        texts = [f"fault fact {i + j}: the user noted item {(i + j) * 7919 % 1000} in topic {(i + j) % 13}" for j in range(3)]
        i += 3
        ack = kb.insert(texts)
        fh.write(json.dumps({"acked": texts, "seq": ack.seq}) + "\n"); os.fsync(fh.fileno())
        st = kb.stats()
        fh.write(json.dumps({"pass_start": True, "applied_seq": st["applied_seq"], "queued_seq": st["queued_seq"]}) + "\n"); os.fsync(fh.fileno())
        rep = kb.maintain()
        fh.write(json.dumps({"pass_done": rep.get("applied_seq"), "seconds": rep.get("seconds"), "error": rep.get("error")}) + "\n"); os.fsync(fh.fileno())
"""


def check_store(db:Path, acked:dict, log_rows:list, prior_applied:int)->dict:
    """Open the store after a kill: integrity ok, a valid tree whose facts are exactly the inserts with seq <= applied_seq,
    applied_seq the value before or after the interrupted pass, every acknowledged insert stored or queued."""
    from setree.embed import get_embedder
    from setree.maintain import KnowledgeBase
    from setree.core import check_tree
    with KnowledgeBase(db, embedder=get_embedder("hashing")) as kb:
        st = kb.stats()
        assert st["integrity"] == "ok", st
        tree = kb.tree()
        if tree.n_nodes: check_tree(tree)
        have = {f.text for f in tree.facts}
        applied = st["applied_seq"]
        expect = {t for t, s in acked.items() if s <= applied}
        assert expect <= have, f"applied inserts missing from the tree: {sorted(expect - have)[:3]}"
        extra = have - set(acked)   # inserts whose ack the child did not log before it was killed
        assert all(t.startswith("fault fact ") or t.startswith("seed fact ") for t in extra), extra
        early = {t for t, s in acked.items() if s > applied} & have
        assert not early, f"facts queued after the committed pass are in the tree (half-applied pass): {sorted(early)[:3]}"
        states = {prior_applied} | {r[k] for r in log_rows if "pass_start" in r for k in ("applied_seq", "queued_seq")} \
                 | {r["pass_done"] for r in log_rows if "pass_done" in r}
        assert applied in states, f"applied_seq {applied} is neither the old nor the new tree's ({sorted(states)})"
        rep = kb.maintain()
        assert rep.get("error") is None, rep
        have2 = {f.text for f in kb.tree().facts}
        assert set(acked) <= have2, f"acknowledged inserts lost: {sorted(set(acked) - have2)[:3]}"
        return {"applied_seq": applied, "facts": len(have2), "pending_before": st["pending"],
                "applied_after": kb.stats()["applied_seq"]}


def run_faults(db:Path, kills:int, seed:int=0, pass_s:float|None=None, log=print)->dict:
    "Start a child that inserts and maintains in a loop; kill -9 it at a random point of a pass, `kills` times; check after each."
    from setree.embed import get_embedder
    from setree.maintain import KnowledgeBase
    rng = random.Random(seed)
    with KnowledgeBase(db, embedder=get_embedder("hashing")) as kb:
        kb.insert([f"seed fact {i}: the user likes thing {i}" for i in range(40)]); kb.maintain()
        prior = kb.stats()["applied_seq"]
    logf = db.with_suffix(".log")
    acked, results, start = {}, [], 0
    for k in range(kills):
        logf.write_text("")
        p = subprocess.Popen([sys.executable, "-c", CHILD, str(db), str(logf), str(start)], stderr=subprocess.PIPE)
        start += 300
        # wait for the first pass to start, then kill somewhere inside it (or just after it)
        t_end = time.time() + 60
        while time.time() < t_end and '"pass_start"' not in logf.read_text(): time.sleep(0.005)
        if pass_s is None:   # calibration: let the first child finish one pass to learn how long a pass takes
            while time.time() < t_end and '"pass_done"' not in logf.read_text(): time.sleep(0.005)
            delay = 0.0
        else:
            delay = rng.uniform(0, 1.2 * pass_s)
            time.sleep(delay)
        p.send_signal(signal.SIGKILL); p.wait()
        rows = [json.loads(l) for l in logf.read_text().splitlines() if l.strip().endswith("}")]
        for r in rows:
            if "acked" in r: acked.update({t: r["seq"] for t in r["acked"]})
        done = [r for r in rows if "pass_done" in r]
        if pass_s is None and done and done[0].get("seconds"): pass_s = float(done[0]["seconds"])
        elif pass_s is None: pass_s = 1.0
        res = check_store(db, acked, rows, prior)
        prior = res["applied_after"]
        res.update(kill=k, delay_s=delay, passes_completed=len(done), pass_s=pass_s,
                   in_pass=bool(rows) and "pass_start" in rows[-1])   # killed after a pass started and before it logged its end
        results.append(res)
        log(json.dumps(res))
    return {"kills": kills, "acked": len(acked), "results": results, "pass_s": pass_s}


def cmd_faults(a):
    m = machine()
    with tempfile.TemporaryDirectory() as d:
        res = run_faults(Path(d) / "kb.db", a.kills, a.seed)
    res["machine"] = {**m, "load_end": os.getloadavg()}
    Path(a.out).write_text(json.dumps(res, indent=1, default=str))
    print(faults_summary(res))
    return 0


# ---------------------------------------------------------------- concurrency (three processes)
def _concurrency_scenario():
    "The three-process scenario of `tests/test_maintain_concurrency.py` (its child scripts and CLI helper), imported, not copied."
    import importlib.util
    spec = importlib.util.spec_from_file_location("maint_concurrency_test", ROOT / "tests" / "test_maintain_concurrency.py")
    m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)
    return m


def run_concurrency(workdir:Path, n_start:int=30, max_s:float=300.0)->dict:
    """One run of the three processes: the test's inserter (200 facts, one `setree insert --defer` each), its retriever (a
    read-only KnowledgeBase retrieving in a loop) and `setree maintain` in fresh processes every 0.5 s from here; then one
    last pass. Counts what was lost, every error any of them saw, and the time each part took."""
    from setree.embed import get_embedder
    from setree.maintain import KnowledgeBase
    from setree.core import check_tree
    sc = _concurrency_scenario()
    db, stop = workdir / "kb.db", workdir / "stop"
    with KnowledgeBase(db, embedder=get_embedder("hashing")) as kb:
        kb.insert([f"start fact {i}: the user owns item {i}" for i in range(n_start)]); kb.maintain(); n0 = kb.stats()["facts"]
    t0 = time.perf_counter()
    ins = subprocess.Popen([sys.executable, "-c", sc.INSERTER, str(db), str(workdir / "ins.json")])
    ret = subprocess.Popen([sys.executable, "-c", sc.RETRIEVER, str(db), str(workdir / "ret.json"), str(stop)])
    maint = []   # (seconds, returncode, stderr) of every `setree maintain` process
    while ins.poll() is None and time.perf_counter() - t0 < max_s:
        t1 = time.perf_counter(); p = sc.cli("maintain", "--db", db, "--embedder", "hashing")
        maint.append((time.perf_counter() - t1, p.returncode, p.stderr))
        time.sleep(0.5)
    ins_rc = ins.wait(timeout=120); ins_s = time.perf_counter() - t0
    t1 = time.perf_counter(); p = sc.cli("maintain", "--db", db, "--embedder", "hashing")   # drain the last queued inserts
    last = (time.perf_counter() - t1, p.returncode, p.stderr)
    stop.write_text(""); ret_rc = ret.wait(timeout=120); total_s = time.perf_counter() - t0
    fails = json.loads((workdir / "ins.json").read_text())["fails"] if (workdir / "ins.json").exists() else None
    rr = json.loads((workdir / "ret.json").read_text()) if (workdir / "ret.json").exists() else {"calls": 0, "errors": ["no output"]}
    expected = {f"concurrent fact {i}: the user visited place {i * 31 % 97} on day {i}" for i in range(200)}
    with KnowledgeBase(db, embedder=get_embedder("hashing")) as kb:
        st = kb.stats(); tree = kb.tree(); texts = {f.text for f in tree.facts}
        try: check_tree(tree); tree_ok = True
        except Exception as e: tree_ok = repr(e)
    errors = [e for _, rc, e in maint + [last] if rc != 0] + [f[2] for f in (fails or [])] + rr["errors"]
    ms = [s for s, _, _ in maint]
    return {"start_facts": n0, "final_facts": st["facts"], "expected_final": n0 + 200, "pending_after": st["pending"],
            "integrity": st["integrity"], "tree_valid": tree_ok, "lost_facts": len(expected - texts),
            "inserter_rc": ins_rc, "insert_failures": len(fails) if fails is not None else None,
            "maintain_processes": len(maint) + 1, "maintain_failures": sum(rc != 0 for _, rc, _ in maint + [last]),
            "retriever_rc": ret_rc, "retrieve_calls": rr["calls"], "retrieve_errors": len(rr["errors"]),
            "lock_errors": sum("locked" in e.lower() for e in errors), "errors": errors[:10],
            "inserter_s": ins_s, "total_s": total_s, "maintain_s": {"p50": pct(ms, 50), "p95": pct(ms, 95), "max": max(ms, default=float("nan"))},
            "last_maintain_s": last[0], "retrieves_per_s": rr["calls"] / total_s}


def concurrency_summary(c:dict)->str:
    "One paragraph of numbers from the three-process runs."
    rs = c["runs"]; s = lambda k: sum(r[k] or 0 for r in rs)
    each = lambda f, d=2: ", ".join(f"{f(r):.{d}f}" for r in rs)
    ok = all(r["final_facts"] == r["expected_final"] and r["lost_facts"] == 0 and r["lock_errors"] == 0 for r in rs)
    return "\n".join([f"runs: {len(rs)}; every run ended with final count = start + 200: {ok}",
                      f"final facts per run: {[r['final_facts'] for r in rs]} (start {[r['start_facts'] for r in rs]}); facts lost: {s('lost_facts')}",
                      f"lock errors reaching a user: {s('lock_errors')}; insert failures: {s('insert_failures')}, maintain failures: {s('maintain_failures')}, "
                      f"retrieve errors: {s('retrieve_errors')}",
                      f"integrity: {sorted({r['integrity'] for r in rs})}, trees valid: {all(r['tree_valid'] is True for r in rs)}, pending after the last pass: {s('pending_after')}",
                      f"`setree maintain` processes per run (the last one drains the queue): {[r['maintain_processes'] for r in rs]}; "
                      f"each one's wall time (a fresh process: imports, open, pass) P50 {each(lambda r: r['maintain_s']['p50'])} s, "
                      f"P95 {each(lambda r: r['maintain_s']['p95'])} s",
                      f"200 inserts took {each(lambda r: r['inserter_s'], 1)} s; retrieve calls {[r['retrieve_calls'] for r in rs]} "
                      f"({each(lambda r: r['retrieves_per_s'], 1)} per s)"])


def cmd_concurrency(a):
    m = machine(); runs = []
    for k in range(a.runs):
        with tempfile.TemporaryDirectory() as d:
            runs.append(run_concurrency(Path(d)))
        print(json.dumps(runs[-1], default=str), flush=True)
    res = {"machine": {**m, "load_end": os.getloadavg()}, "runs": runs}
    Path(a.out).write_text(json.dumps(res, indent=1, default=str))
    print(concurrency_summary(res))
    return 0 if all(r["lost_facts"] == 0 and r["lock_errors"] == 0 and r["final_facts"] == r["expected_final"] for r in runs) else 1


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("cost"); c.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000])
    c.add_argument("--trials1", type=int, default=20); c.add_argument("--trials100", type=int, default=5)
    c.add_argument("--trials-forget", type=int, default=20); c.add_argument("--rebuilds", type=int, default=2)
    c.add_argument("--workdir", default=str(CACHE / "stores")); c.add_argument("--out", default="benchmarks/maintenance_cost.json")
    c.add_argument("--summarizer", choices=("chat", "extractive"), default="chat")
    q = sub.add_parser("quality"); q.add_argument("--out", default="benchmarks/maintenance_quality.json")
    q.add_argument("--seed", type=int, default=0); q.add_argument("--conversations", nargs="*")
    f = sub.add_parser("faults"); f.add_argument("--kills", type=int, default=100); f.add_argument("--seed", type=int, default=0)
    f.add_argument("--out", default="benchmarks/maintenance_faults.json")
    k = sub.add_parser("concurrency"); k.add_argument("--runs", type=int, default=3)
    k.add_argument("--out", default="benchmarks/maintenance_concurrency.json")
    a = ap.parse_args(argv)
    return {"cost": cmd_cost, "quality": cmd_quality, "faults": cmd_faults, "concurrency": cmd_concurrency}[a.cmd](a)




# ---------------------------------------------------------------- tables
def _ms(x): return "–" if x is None or x != x else f"{1000 * x:,.1f}"
def _n(x, d=1): return "–" if x is None or x != x else f"{x:,.{d}f}"

def cost_table(cost:dict)->str:
    "Markdown table of a cost run: one row per size and operation (times in ms; CPU = the process's CPU time on its one core)."
    head = ("| N | summarizer | operation | trials | wall P50 | wall P95 | CPU P50 | CPU P95 | main-thread CPU P50 | summarizer calls/pass (mean) "
            "| of which for unchanged communities (max) | changed communities (mean) "
            "| rows changed (mean) | WAL KiB written (mean) | full-rebuild passes | rebuild / op (CPU P50) |")
    lines = [head, "|---:|---|---|" + "---:|" * 13]
    for n, r in cost["sizes"].items():
        rb = r["rebuild"]["cpu_s"]["p50"]
        for op in ("insert1", "insert100", "forget1", "rebuild"):
            o = r[op]
            ratio = rb / o["cpu_s"]["p50"] if op != "rebuild" and o["cpu_s"]["p50"] else float("nan")
            calls = o["stub_calls"]["mean"] if o["stub_calls"]["n"] else o["summarizer_calls_reported"]["mean"]
            lines.append(f"| {int(n):,} | {r.get('summarizer', 'chat')} | {op} | {o['seconds']['n']} | {_ms(o['seconds']['p50'])} | {_ms(o['seconds']['p95'])} "
                         f"| {_ms(o['cpu_s']['p50'])} | {_ms(o['cpu_s']['p95'])} | {_ms(o['thread_cpu_s']['p50'])} | {_n(calls)} "
                         f"| {_n(max((row.get('calls_unchanged_communities', float('nan')) for row in o['rows']), default=float('nan')), 0)} "
                         f"| {_n(o['changed_communities']['mean'])} "
                         f"| {_n(o['rows_changed']['mean'], 0)} | {_n(o['wal_bytes']['mean'] / 1024)} | {o['full_rebuild_passes']} "
                         f"| {_n(ratio, 0) if op != 'rebuild' else ''} |")
    return "\n".join(lines)

def build_table(cost:dict)->str:
    "Markdown table of the first full build per size, with the embedding time measured separately."
    lines = ["| N | summarizer | nodes | depth | build wall s | build CPU s | summarizer calls | rows written | WAL MiB written | store MiB "
             "| embed CPU s/1000 texts (measured) | embed CPU s for N (extrapolated) |",
             "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for n, r in cost["sizes"].items():
        b, e = r["build"], r["embed_sample"]
        calls = b["stub_calls"] if b.get("stub_calls") is not None else b["report"].get("summarizer_calls")
        lines.append(f"| {int(n):,} | {r.get('summarizer', 'chat')} | {b['stats']['nodes']:,} | {b['stats']['depth']} | {b['seconds']:.1f} | {b['cpu_s']:.1f} | {_n(calls, 0)} "
                     f"| {_n(b['rows_changed'], 0)} | {b['wal_bytes'] / 2**20:.1f} | {b['stats']['size_bytes'] / 2**20:.1f} "
                     f"| {e['cpu_s'] / e['texts'] * 1000:.2f} | {e['extrapolated_cpu_s_for_n']:.1f} |")
    return "\n".join(lines)

def quality_table(q:dict, forget:bool=False)->str:
    "Markdown table: evidence recall (categories 1-4) of the grown tree and the full build per budget, and their shapes."
    bs = [str(b) for b in q["budgets"]]
    lines = ["| conversation | facts | tree | " + " | ".join(f"recall@{b}" for b in bs) + " | depth | arity mean | arity max | faithfulness mean |",
             "|---|---:|---|" + "---:|" * (len(bs) + 4)]
    for sid, row in q["conversations"].items():
        r = row["forget"] if forget else row
        for kind in ("grown", "full"):
            t = r[kind]
            lines.append(f"| {sid} | {t['facts']} | {kind} | " + " | ".join(f"{t['recall'][b]:.3f}" for b in bs)
                         + f" | {t['depth']} | {t['arity_mean']:.2f} | {t['arity_max']} | {t['faithfulness_mean']:.1f} |")
    mean = lambda kind, b: np.mean([(row["forget"] if forget else row)[kind]["recall"][b] for row in q["conversations"].values()])
    for kind in ("grown", "full"):
        lines.append(f"| **mean** | | {kind} | " + " | ".join(f"{mean(kind, b):.3f}" for b in bs) + " | | | | |")
    lines.append("| **grown − full (points)** | | | " + " | ".join(f"{100 * (mean('grown', b) - mean('full', b)):+.1f}" for b in bs) + " | | | | |")
    return "\n".join(lines)


PROMPT_S = 0.0074   # CPU seconds of one prompt's embedding on this machine (a 19-token sentence, one thread; measured 2026-12-04, see the maintenance speed report)

def targets(cost:dict)->str:
    "The targets at every size measured, each with its measured value (CPU time of the one core; wall time under the machine's load)."
    return "\n\n".join(_targets(n, r) for n, r in cost["sizes"].items())


def _targets(n:str, r:dict)->str:
    c50, w50 = r["insert1"]["cpu_s"]["p50"], r["insert1"]["seconds"]["p50"]
    rb = r["rebuild"]["cpu_s"]["p50"]
    extra = [row["calls_unchanged_communities"] for row in r["insert1"]["rows"] if "calls_unchanged_communities" in row]
    kept = [row["unchanged_with_new_text"] for row in r["insert1"]["rows"] if "unchanged_with_new_text" in row]
    ok = lambda b: "met" if b else "NOT met"
    return "\n".join([
        f"N = {int(n):,} facts, {r.get('summarizer', 'chat')} summarizer (one core):",
        f"- single-fact insert + pass: CPU P50 {1000 * c50:.1f} ms, P95 {1000 * r['insert1']['cpu_s']['p95']:.1f} ms (target <= 100 ms: {ok(c50 <= 0.1)}); "
        f"main thread alone (no summarizer HTTP, no stub server) CPU P50 {1000 * r['insert1']['thread_cpu_s']['p50']:.1f} ms; "
        f"wall P50 {1000 * w50:.1f} ms, P95 {1000 * r['insert1']['seconds']['p95']:.1f} ms on the loaded machine",
        f"- full rebuild CPU {rb:.1f} s = {rb / c50:,.0f} x the single insert's CPU P50 (target >= 1000 x: {ok(rb / c50 >= 1000)}); "
        f"wall ratio {r['rebuild']['seconds']['p50'] / w50:,.0f} x",
        ("- every trial embeds one prompt inside its timed window, as the targets ask" if r.get("prompt_embedded") else
         f"- (a trial here embeds no prompt, which the targets' pass includes: with one of {1000 * PROMPT_S:.1f} ms, the insert would cost "
         f"{1000 * (c50 + PROMPT_S):.1f} ms and the rebuild {rb / (c50 + PROMPT_S):,.0f} x it)"),
        f"- summarizer calls for communities whose fact set did not change, per single-insert pass: max {max(extra) if extra else 'n/a (no stub to count requests)'}"
        + (f" (target 0: {ok(max(extra) <= 0)})" if extra else "") + f"; unchanged communities whose summary text changed: max {max(kept) if kept else 'n/a'}",
        f"- passes that fell back to a full rebuild: {r['insert1']['full_rebuild_passes']} of {r['insert1']['seconds']['n']} single inserts, "
        f"{r['insert100']['full_rebuild_passes']} of {r['insert100']['seconds']['n']} 100-fact inserts, "
        f"{r['forget1']['full_rebuild_passes']} of {r['forget1']['seconds']['n']} forgets"])


def faults_summary(f:dict)->str:
    "One paragraph of numbers from a kill -9 run."
    rs = f["results"]
    return "\n".join([f"kills: {f['kills']}, every store opened, passed integrity_check and held a valid tree: {len(rs)} of {f['kills']}",
                      f"acknowledged inserts: {f['acked']}, lost: 0 (checked after every kill)",
                      f"reopened with the interrupted pass's facts still queued (the old tree): {sum(r['pending_before'] > 0 for r in rs)}; "
                      f"with them applied (the new tree): {sum(r['pending_before'] == 0 for r in rs)}",
                      f"passes completed by the children before their kill: {sum(r['passes_completed'] for r in rs)}",
                      f"kills that landed inside a pass (after its start, before its end was logged): {sum(bool(r.get('in_pass')) for r in rs)}",
                      f"kill delays after the pass start: {min(r['delay_s'] for r in rs):.3f}-{max(r['delay_s'] for r in rs):.3f} s",
                      f"typical pass length used for the kill delays: {f['pass_s']:.3f} s",
                      f"final facts in the store: {rs[-1]['facts'] if rs else 0}"])


def merged_cost(bench_dir:Path)->dict|None:
    "The cost results of every `maintenance_cost*.json` run in one object (sizes ascending; each run keeps its machine record)."
    runs = [json.loads(p.read_text()) for p in sorted(Path(bench_dir).glob("maintenance_cost*.json")) if "_partial_" not in p.name]
    if not runs: return None
    sizes = {n: {**r, "machine": run["machine"]} for run in runs for n, r in run["sizes"].items()}   # each size keeps its run's record
    return {"machines": [run["machine"] for run in runs], "machine": runs[0]["machine"],
            "sizes": {n: sizes[n] for n in sorted(sizes, key=int)}}


def write_summary(bench_dir:Path):
    "Write maintenance.md (the tables) and maintenance.json (cost, quality, fault and concurrency results in one object)."
    bench_dir = Path(bench_dir)
    load = lambda n: json.loads((bench_dir / n).read_text()) if (bench_dir / n).exists() else None
    cost, quality, faults = merged_cost(bench_dir), load("maintenance_quality.json"), load("maintenance_faults.json")
    conc = load("maintenance_concurrency.json")
    md = ["# Maintenance measurements", "", "Produced by `benchmarks/maintenance.py` (see the maintenance report notebook for the method)."]
    if cost:
        md += ["", "## Cost", ""] + [f"Run: setree {m.get('library', {}).get('setree_commit', '?')}, {m['cpus']} cores, affinity {m['affinity']}, Python {m['python']}, {m['utc']}, "
               f"load {[round(x, 2) for x in m['load_start']]} → {[round(x, 2) for x in m.get('load_end', [])]} (shared machine)."
               for m in cost["machines"]] + ["",
               build_table(cost), "", cost_table(cost), "", targets(cost)]
    if quality:
        md += ["", "## Quality (LoCoMo dev, evidence recall, categories 1-4)", "", quality_table(quality), "",
               "After forgetting 20 % of the facts (seed 0):", "", quality_table(quality, forget=True)]
    if faults: md += ["", "## kill -9 during passes", "", f"setree code measured: {faults.get('machine', {}).get('library', 'see the report')}", "",
                      faults_summary(faults)]
    if conc: md += ["", "## Three processes at once", "", f"setree code measured: {conc['machine'].get('library')}", "", concurrency_summary(conc)]
    (bench_dir / "maintenance.md").write_text("\n".join(md) + "\n", encoding="utf-8")
    (bench_dir / "maintenance.json").write_text(json.dumps({"cost": cost, "quality": quality, "faults": faults, "concurrency": conc}, indent=1, default=str))


if __name__ == "__main__":
    sys.exit(main())
