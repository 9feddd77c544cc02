"""Query latency of the tree cover at 50,000 facts on one core, prompt embedding included (the SPEC target: P50 <= 50 ms,
P99 <= 200 ms). The tree is built once from the first 50,000 corpus sentences, whose MiniLM vectors are cached on disk
(SETREE_CORPUS_VECTORS, default /work/cache/maint: corpus_minilm_50000.npy, made by the maintenance benchmark).

    nice python benchmarks/cover/speed.py build   # all cores: builds the tree from the cached vectors, pickles it
    nice python benchmarks/cover/speed.py query   # one core, one thread: 200 prompts x 2 budgets; writes speed.json / speed.md
"""
import os, sys
if sys.argv[1:] == ["query"]:
    for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"): os.environ[k] = "1"
import json, pickle, subprocess, time
from pathlib import Path
import numpy as np

CACHE = Path(os.environ.get("SETREE_CACHE", "/work/cache/minilm"))        # where the built tree is pickled
VECS = Path(os.environ.get("SETREE_CORPUS_VECTORS", "/work/cache/maint"))  # corpus_minilm_50000.npy / .identity
OUT = Path(__file__).parent
N = 50_000

def corpus():
    return (Path("/work/shared/data/corpus/sentences.txt") if Path("/work/shared/data/corpus/sentences.txt").exists()
            else Path(__file__).parents[2] / "../shared/data/corpus/sentences.txt").read_text(encoding="utf-8").splitlines()

def build():
    from setree.build import build_tree
    from setree.core import count_tokens
    from setree.embed import get_embedder
    from setree.evaluate import CachedEmbedder
    lines = corpus()[:N]
    emb = CachedEmbedder(get_embedder())
    V = np.load(VECS / "corpus_minilm_50000.npy")            # the first 50,000 corpus lines, embedded once (shared cache)
    assert (VECS / "corpus_minilm_50000.identity").read_text().strip() == emb.identity and len(V) == N
    F = count_tokens(lines) > 254                              # embedded from the first 256 tokens only (with [CLS]/[SEP])
    emb._vec.update(zip(lines, V)); emb._flag.update(zip(lines, F.tolist()))
    timings = {}
    t0 = time.perf_counter(); tree = build_tree(lines, embedder=emb, progress=False, timings=timings); dt = time.perf_counter() - t0
    print(f"built {tree.n_facts} facts, {tree.n_nodes} nodes, depth {tree.depth.max()} in {dt:.0f} s {timings}", flush=True)
    for a in ("_cover_index", "_lexical_index"): tree.__dict__.pop(a, None)
    (CACHE / "corpus_50000_tree.pkl").write_bytes(pickle.dumps(tree))

def query():
    from setree.cover import CoverParams, cover_index, fact_relevance, fill_budget, select_cover
    from setree.embed import get_embedder
    from setree.lexical import lexical_index
    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    tree = pickle.loads((CACHE / "corpus_50000_tree.pkl").read_bytes())
    t0 = time.perf_counter(); cover_index(tree); t_ix = time.perf_counter() - t0
    t0 = time.perf_counter(); lexical_index(tree); t_lex = time.perf_counter() - t0
    prompts = corpus()[60_000:60_200]
    e = get_embedder(); e.embed_query("warm up")
    params = CoverParams()
    res = {"facts": tree.n_facts, "nodes": tree.n_nodes, "depth": int(tree.depth.max()), "cover_index_s": round(t_ix, 3),
           "lexical_index_s": round(t_lex, 3), "params": params.to_dict(), "load": os.getloadavg(),
           "commit": subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=OUT).stdout.strip(), "budgets": {}}
    for budget in (512, 2048):
        emb_ms, rel_ms, cov_ms, tot_ms, flat_ms, pops = [], [], [], [], [], []
        for p in prompts:
            t0 = time.perf_counter(); q = e.embed_query(p); t1 = time.perf_counter()
            fact_relevance(tree, q, p, params.lexical_weight); t2 = time.perf_counter()
            trace = [] if len(pops) < 20 else None
            c = select_cover(tree, q, budget, params, p, trace=trace); t3 = time.perf_counter()
            assert c.total_tokens <= budget
            r = fact_relevance(tree, q, p, params.lexical_weight); top = np.argpartition(-r, budget)[:budget]
            fill_budget(tree, top[np.argsort(-r[top], kind="stable")], budget); t4 = time.perf_counter()
            emb_ms.append(1000 * (t1 - t0)); rel_ms.append(1000 * (t2 - t1)); cov_ms.append(1000 * (t3 - t2)); tot_ms.append(1000 * (t1 - t0 + t3 - t2))
            flat_ms.append(1000 * (t1 - t0 + t4 - t3))
            if trace is not None: pops.append(len(trace))
        pc = lambda x: {f"p{k}": round(float(np.percentile(x, k)), 2) for k in (50, 95, 99)}
        res["budgets"][budget] = {"embed_ms": pc(emb_ms), "relevance_ms": pc(rel_ms), "select_cover_ms": pc(cov_ms), "total_ms": pc(tot_ms),
                                  "flat_hybrid_total_ms": pc(flat_ms), "walk_steps_median": float(np.median(pops))}
        print(budget, res["budgets"][budget], flush=True)
    (OUT / "speed.json").write_text(json.dumps(res, indent=1))
    md = [f"# Query latency at {tree.n_facts:,} facts (one core, one thread, prompt embedding included)", "",
          f"Corpus tree: {tree.n_facts:,} facts, {tree.n_nodes:,} nodes, depth {res['depth']}; default parameters {params.to_dict()}; 200 prompts "
          f"(corpus lines 60,000-60,199, never in the knowledge base); commit {res['commit']}; load average at start {res['load']}.", "",
          f"Once per loaded tree: cover index {t_ix:.2f} s, BM25 index from `tree.terms` {t_lex:.2f} s.", "",
          "| budget | total P50 / P95 / P99 ms | embed P50 | relevance (dense + BM25) P50 | select_cover P50 / P99 | flat hybrid total P50 / P99 | walk steps (median) |",
          "|---:|---|---:|---:|---|---|---:|"]
    for b, r in res["budgets"].items():
        t, s, f = r["total_ms"], r["select_cover_ms"], r["flat_hybrid_total_ms"]
        md.append(f"| {b} | {t['p50']} / {t['p95']} / {t['p99']} | {r['embed_ms']['p50']} | {r['relevance_ms']['p50']} | {s['p50']} / {s['p99']} | {f['p50']} / {f['p99']} | {r['walk_steps_median']:.0f} |")
    md += ["", "Target: P50 <= 50 ms, P99 <= 200 ms."]
    (OUT / "speed.md").write_text("\n".join(md) + "\n")
    print("\n".join(md))

if __name__ == "__main__": {"build": build, "query": query}[sys.argv[1]]()
