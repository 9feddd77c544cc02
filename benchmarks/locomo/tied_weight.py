"""Experiment (not part of the library; a protocol variant): setree's lexical weight tied to the flat hybrid's. The
per-fact relevance is one function, cosine + w * BM25 / max BM25, shared by the walk and the flat hybrid; calibrate.py
sweeps w for each separately, and in some folds setree's choice differs from the hybrid's on near-ties of the objective
(losses.md: `relevance weight`). Here each fold's w is the hybrid's (chosen on the other five conversations, as in
calibrate.py), and setree's other parameters are swept as in calibrate.py with that w. Paired bootstrap of the held-out
rows against every flat peer and against setree as calibrated (calibration/cv_rows.csv).

    nice taskset -c 0 python benchmarks/locomo/tied_weight.py   # writes calibration/tied_weight.md and tied_weight.json"""
import csv, sys, time
from pathlib import Path
import numpy as np
sys.path.insert(0, str(Path(__file__).parent))
import calibrate as C
from setree.cover import CoverParams
from setree.evaluate import BM25, DenseTopK, HybridTopK, SetreeCover

def main():
    convs, emb, qsets, trees = C.setup(C.ST)
    sids, R, t0 = [c.sample_id for c in convs], {}, time.perf_counter()
    run = C.runner(R, convs, trees, qsets)
    objective = lambda m, s, train: C.objective(R, m, s, train)
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
    lines = ["# setree's lexical weight tied to the flat hybrid's (a protocol variant, held out)", "",
             "Leave-one-conversation-out CV on the LoCoMo development split, categories 1-4: each fold's lexical weight is the flat hybrid's choice on the "
             "other five conversations; setree's other parameters are swept as in calibrate.py with that weight. `setree (calibrated)`: the held-out rows of "
             "calibrate.py (calibration/cv_rows.csv). Mean difference in points, 95 % paired-bootstrap interval over questions (2,000 resamples, seed 0).", ""]
    comps = [("tied", p) for p in ("hybrid", "dense", "bm25", "setree (calibrated)")]
    tables, res = C.paired_tables(held, comps, sids, cats, np.random.default_rng(0))
    C.finish("tied_weight", lines + tables + C.chosen_table(chosen, ("hybrid", "tied"), sids, label="method"), res, chosen, t0)

if __name__ == "__main__": main()
