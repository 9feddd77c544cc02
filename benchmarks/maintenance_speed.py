"""Single-fact insert + maintenance pass on a copy of a stored knowledge base, on one core: P50/P95 wall time (prompt embedding
included), summarizer calls and rows written per pass, and the time to load the store.

usage: python benchmarks/maintenance_speed.py N REPS STORE [--label L] [--batch B] [--sections]
  N      facts: the first N lines of the corpus (their vectors from the cached chunks, see EMB_CACHE)
  REPS   measured passes; 0: only build STORE (it must be missing) and print the build's time and shape
  STORE  a knowledge base of those N facts; built (once) when missing, then only copied: the measured passes run on the copy
         (build_s in the output: the wall seconds of that build, build + its pass, from the cached vectors; None when STORE existed)
  --batch B   facts inserted (in one call) before each pass; default 1
  --sections  also time the steps of a pass (wall seconds inside each of the functions in SECTIONS, summed over the measured passes;
              nested steps are also counted in their callers, so the shares do not add up to 100 %)
Prints one JSON line. Set PYTHONPATH to measure another checkout of setree (the report does, for the code before a change)."""
import argparse, functools, json, os, sqlite3, time
from pathlib import Path
import numpy as np

EMB_CACHE = Path(os.environ.get("SETREE_EMB_CACHE", "/work/cache/maint"))   # chunk_%06d.npy: 2,000 corpus vectors each
CORPUS = Path(os.environ.get("SETREE_SHARED_DATA", "/work/shared/data")) / "corpus" / "sentences.txt"
SECTIONS = {"setree.maintain": ["plan_mutations", "grow_levels", "_fact_members", "_one_level", "patch_knn", "relabel", "_degrees", "_next_members",
                                "assemble", "update_fidelity", "update_projections", "update_line_tokens", "_levels_in_numbers", "carry_terms"],
            "setree.build": ["summarize_tree", "run_summarizer"], "setree.fidelity": ["compute_order"], "setree.cluster": ["knn"],
            "setree.store": ["_check_tree", "_write_changes", "_write_derived"], "setree.store.Store": ["commit_pass"]}

def time_sections(T:dict):
    "Wrap the functions of SECTIONS so that each call adds its wall time to T[name] (module attributes are looked up at call time)."
    import importlib
    for mod, names in SECTIONS.items():
        obj = importlib.import_module(mod) if not mod.endswith(".Store") else importlib.import_module("setree.store").Store
        for nm in names:
            f = getattr(obj, nm, None)
            if f is None: continue
            def g(*a, _f=f, _nm=nm, **k):
                t0 = time.perf_counter()
                try: return _f(*a, **k)
                finally: T[_nm] = T.get(_nm, 0.0) + time.perf_counter() - t0
            setattr(obj, nm, functools.wraps(f)(g))

def shape(t)->dict:
    "Depth, members per clustering level, and the facts the first level left alone (carried up as their own parent)."
    return dict(depth=int(t.depth.max()), levels=[len(lv.members) for lv in t.levels],
                lone_facts=int((t.levels[0].parents < 0).sum()) if t.levels else 0)

def main():
    ap = argparse.ArgumentParser(); ap.add_argument("n", type=int); ap.add_argument("reps", type=int); ap.add_argument("store")
    ap.add_argument("--label", default=""); ap.add_argument("--batch", type=int, default=1); ap.add_argument("--sections", action="store_true")
    a = ap.parse_args()
    T = {}
    if a.sections: time_sections(T)
    import setree
    from setree.embed import get_embedder
    from setree.maintain import KnowledgeBase
    from setree.store import Store
    lines = CORPUS.read_text(encoding="utf-8").split("\n")
    V = np.concatenate([np.load(EMB_CACHE / f"chunk_{b:06d}.npy") for b in range(0, a.n, 2000)])[:a.n]
    inner = get_embedder()
    class Cached:   # the model's vectors of the corpus lines, from disk; any other text (the inserted facts) embedded by the model
        def __init__(s): s.vec, s.dim, s.identity = dict(zip(lines[:a.n], V)), inner.dim, inner.identity
        def embed_with_flags(s, texts):
            miss = [t for t in texts if t not in s.vec]
            if miss: s.vec.update(zip(miss, inner.embed_with_flags(miss)[0]))
            return (np.stack([s.vec[t] for t in texts]) if texts else np.zeros((0, s.dim), np.float32)), np.zeros(len(texts), bool)
        def embed(s, texts): return s.embed_with_flags(texts)[0]
        def embed_query(s, t): return inner.embed_query(t)
    E, src, build_s = Cached(), Path(a.store), None
    if a.reps == 0 and src.exists(): raise SystemExit(f"{src} exists: REPS 0 only builds a new store")
    if not src.exists():
        t0 = time.perf_counter()
        with KnowledgeBase(src, embedder=E) as kb: kb.build(list(dict.fromkeys(x for x in lines[:a.n] if x.strip()))); kb.maintain()
        build_s = time.perf_counter() - t0
    if a.reps == 0:
        with Store(src, readonly=True) as s: t = s.load()
        print(json.dumps(dict(label=a.label, n=a.n, build_s=round(build_s, 2), **shape(t), setree=setree.__file__))); return
    work = src.with_name(f"{src.stem}.work{os.getpid()}.db")
    s0, d0 = sqlite3.connect(f"file:{src}?mode=ro", uri=True), sqlite3.connect(work); s0.backup(d0); s0.close(); d0.close()
    try:
        loads = []
        for _ in range(2):
            t0 = time.perf_counter()
            with Store(work, readonly=True) as s: s.load()
            loads.append(time.perf_counter() - t0)
        kb = KnowledgeBase(work, embedder=E); kb.tree(); inner.embed_query("warm up")
        walls, cpus, calls, rows = [], [], [], []
        for i in range(a.reps):
            if i == 1: T.clear()   # (the first pass is left out, as below)
            texts = [x for x in lines[60000 + i * a.batch:60000 + (i + 1) * a.batch] if x.strip()]   # beyond the stored facts
            c0, t0 = time.process_time(), time.perf_counter(); kb.insert(texts); r = kb.maintain(); inner.embed_query(texts[0])
            walls.append(time.perf_counter() - t0); cpus.append(time.process_time() - c0)
            if r["error"] or r["full_rebuild"]: raise SystemExit(f"pass {i} failed or rebuilt: {r}")
            calls.append(r["summarizer_calls"]); rows.append(r["rows"])
        t = kb.tree(); kb.close()
        t0 = time.perf_counter()
        with Store(work, readonly=True) as s: s.load()
        loads.append(time.perf_counter() - t0)
        w, c = walls[1:] or walls, cpus[1:] or cpus   # the first pass also fills caches (the facts' normalized texts)
        print(json.dumps(dict(label=a.label, n=a.n, reps=a.reps, batch=a.batch, p50_s=float(np.percentile(w, 50)), p95_s=float(np.percentile(w, 95)),
                              cpu_p50_s=float(np.percentile(c, 50)), cpu_p95_s=float(np.percentile(c, 95)),   # CPU seconds of this process (all its threads)
                              walls=[round(x, 4) for x in walls], cpus=[round(x, 4) for x in cpus], calls=calls, rows=rows, load_s=[round(x, 3) for x in loads],
                              build_s=build_s, **shape(t), setree=setree.__file__,
                              sections={k: round(v / len(w), 4) for k, v in sorted(T.items(), key=lambda x: -x[1])} if a.sections else None)))
    finally:
        for ext in ("", "-wal", "-shm", "-lock"):   # (-lock: the pass lock file next to the store)
            if Path(str(work) + ext).exists(): Path(str(work) + ext).unlink()

if __name__ == "__main__": main()
