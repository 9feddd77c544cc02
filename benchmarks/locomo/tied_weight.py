"""Experiment (not part of the library; a protocol variant): setree's lexical weight tied to the flat hybrid's. The
per-fact relevance is one function, cosine + w * BM25 / max BM25, shared by the walk and the flat hybrid; calibrate.py
sweeps w for each separately, and in some folds setree's choice differs from the hybrid's on near-ties of the objective
(losses.md: `relevance weight`). Here each fold's w is the hybrid's (chosen on the other five conversations, as in
calibrate.py), and setree's other parameters are swept as in calibrate.py with that w. Paired bootstrap of the held-out
rows against every flat peer and against setree as calibrated (calibration/cv_rows.csv).

    nice taskset -c 0 python benchmarks/locomo/tied_weight.py   # writes calibration/tied_weight.md and tied_weight.json"""
import csv, json, subprocess, sys, time
from pathlib import Path
import numpy as np
sys.path.insert(0, str(Path(__file__).parent))
import calibrate as C
from setree.build import Config, build_tree
from setree.cover import CoverParams
from setree.embed import get_embedder
from setree.datasets import shared_data
from setree.evaluate import BM25, CachedEmbedder, DenseTopK, HybridTopK, SetreeCover, load_locomo

def boot(d, rng):
    b = np.array([d[rng.integers(0, len(d), len(d))].mean() for _ in range(2000)])
    return float(np.quantile(b, 0.025)), float(np.quantile(b, 0.975))

def main():
    convs = load_locomo(shared_data("locomo", "locomo_dev.json"))
    emb = CachedEmbedder(get_embedder()).load(C.CACHE)
    qsets = {c.sample_id: [q for q in c.questions if q.category in C.CATS and q.evidence] for c in convs}
    for c in convs: emb.prefetch_queries([q.question for q in qsets[c.sample_id]])
    trees = {(st, c.sample_id): build_tree(c.facts, embedder=emb, config=Config(summary_tokens=st), progress=False) for st in C.ST for c in convs}
    sids, R, t0 = [c.sample_id for c in convs], {}, time.perf_counter()
    def run(m, s, st, make):
        for c in convs:
            for b in C.BUDGETS: R[m, s, c.sample_id, b] = C.score(make(), trees[st, c.sample_id], c, qsets[c.sample_id], b)
    def objective(m, s, train):
        return float(np.mean([(lambda a: (np.nanmean(a[:, 0]) + np.nanmean(a[:, 1])) / 2)(np.concatenate([R[m, s, x, b] for x in train])) for b in C.BUDGETS]))
    run("dense", (), 15, lambda: DenseTopK(emb)); run("bm25", (), 15, lambda: BM25())
    for w in C.HYBRID_W: run("hybrid", (("lexical_weight", w),), 15, lambda w=w: HybridTopK(emb, w))
    hs = [k for k in dict.fromkeys(k[1] for k in R if k[0] == "hybrid")]
    wh = {sid: dict(max(hs, key=lambda s: objective("hybrid", s, [x for x in sids if x != sid])))["lexical_weight"] for sid in sids}
    grid = [s for s in C.SETREE_GRID if s["lexical_weight"] in set(wh.values())]
    for s in grid:
        p = CoverParams(overview_share=s["overview_share"], lexical_weight=s["lexical_weight"], tau=s["tau"], glimpse=s["glimpse"])
        run("tied", tuple(sorted(s.items())), s["summary_tokens"], lambda p=p: SetreeCover(emb, p))
    C.log(f"tied grid ({len(grid)} settings) done, {time.perf_counter() - t0:.0f} s")
    held, chosen = {}, {}
    for m in ("dense", "bm25", "hybrid", "tied"):
        ss = [k for k in dict.fromkeys(k[1] for k in R if k[0] == m)]
        for sid in sids:
            cand = [s for s in ss if m != "tied" or dict(s)["lexical_weight"] == wh[sid]]
            best = max(cand, key=lambda s: objective(m, s, [x for x in sids if x != sid]))
            chosen.setdefault(m, {})[sid] = dict(best)
            for b in C.BUDGETS: held[m, sid, b] = R[m, best, sid, b]
    cal = {}
    with (C.OUT / "cv_rows.csv").open() as f:
        for r in csv.DictReader(f):
            if r["method"] == "setree": cal.setdefault((r["sample_id"], int(r["budget"])), []).append((float(r["recall"]), float(r["answer_recall"])))
    for (sid, b), v in cal.items(): held["setree (calibrated)", sid, b] = np.array(v)
    cats = np.concatenate([[q.category for q in qsets[sid]] for sid in sids])
    rng, res = np.random.default_rng(0), {}
    lines = ["# setree's lexical weight tied to the flat hybrid's (a protocol variant, held out)", "",
             "Leave-one-conversation-out CV on the LoCoMo development split, categories 1-4: each fold's lexical weight is the flat hybrid's choice on the "
             "other five conversations; setree's other parameters are swept as in calibrate.py with that weight. `setree (calibrated)`: the held-out rows of "
             "calibrate.py (calibration/cv_rows.csv). Mean difference in points, 95 % paired-bootstrap interval over questions (2,000 resamples, seed 0).", ""]
    comps = [("tied", p) for p in ("hybrid", "dense", "bm25", "setree (calibrated)")]
    for col, title in ((0, "evidence recall"), (1, "answer-token recall")):
        lines += [f"## {title}", "", "| comparison | budget | a | b | diff | 95 % CI | a wins / losses | cat 1 diff | cat 2 diff |", "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
        for a_, b_ in comps:
            for b in C.BUDGETS:
                A = np.concatenate([held[a_, s, b][:, col] for s in sids]); B = np.concatenate([held[b_, s, b][:, col] for s in sids])
                ok = ~np.isnan(A) & ~np.isnan(B); d = (A - B)[ok]; lo, hi = boot(d, rng); d1, d2 = d[cats[ok] == 1], d[cats[ok] == 2]
                res.setdefault(title, {}).setdefault(f"{a_} - {b_}", {})[b] = {"a": float(A[ok].mean()), "b": float(B[ok].mean()), "diff": float(d.mean()), "ci": [lo, hi],
                                                                              "wins": int((d > 0).sum()), "losses": int((d < 0).sum()), "diff_cat1": float(d1.mean()), "diff_cat2": float(d2.mean())}
                lines.append(f"| {a_} - {b_} | {b} | {A[ok].mean():.3f} | {B[ok].mean():.3f} | {100 * d.mean():+.2f} | [{100 * lo:+.2f}, {100 * hi:+.2f}] | "
                             f"{(d > 0).sum()} / {(d < 0).sum()} | {100 * d1.mean():+.2f} | {100 * d2.mean():+.2f} |")
        lines.append("")
    lines += ["## Settings chosen per fold", "", "| method | " + " | ".join(sids) + " |", "|---|" + "---|" * len(sids)]
    for m in ("hybrid", "tied"): lines.append(f"| {m} | " + " | ".join(json.dumps(chosen[m][s]) for s in sids) + " |")
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=Path(__file__).parent).stdout.strip()
    lines += ["", f"Measured on commit {commit} (working tree as run), {time.perf_counter() - t0:.0f} s."]
    (C.OUT / "tied_weight.md").write_text("\n".join(lines) + "\n")
    (C.OUT / "tied_weight.json").write_text(json.dumps({"results": res, "chosen": chosen, "commit": commit}, indent=1))
    print("\n".join(lines))

if __name__ == "__main__": main()
