"""Experiment (not part of the library; measured, not adopted): the walk reserves a smaller root line than the root's fixed
short line (keyphrases within ROOT_LABEL_TOKENS), so the tokens saved can buy facts: `N facts` (variant `count`) or nothing
but the root's marker (variant `marker`); the line fitted to the prompt (`glimpse`) then fills what the walk leaves, falling
back to the fixed line, then to `N facts`, then (`marker` only) to the marker alone. Every context is checked against its budget.
Leave-one-conversation-out CV of both variants on a narrowed grid, paired bootstrap against the flat hybrid and against
each other, on the held-out rows.

    nice python benchmarks/locomo/root_reserve.py   # writes calibration/root_reserve.md and root_reserve.json"""
import sys, time
from pathlib import Path
import numpy as np
sys.path.insert(0, str(Path(__file__).parent))
import calibrate as C
import setree.cover as SC
from setree.core import count_tokens
from setree.cover import CoverParams
from setree.evaluate import HybridTopK, SetreeCover

GRID = [dict(summary_tokens=st, overview_share=0.0, lexical_weight=w, tau=0.01, glimpse=g) for st in (15, 30) for w in (0.2, 0.3) for g in (15, 60)]
RESERVE = {"mode": None}   # None: the library's walk; "count" / "marker": the variants
_init, _fit = SC._Walk.__init__, SC._fit_root_line

def _walk_init(self, tree, ix, rel_ord, q, budget, params, trace=None, full_root=True):
    "The library's walk state; with a RESERVE mode, a root shown as its short line reserves `N facts` or nothing during the walk."
    _init(self, tree, ix, rel_ord, q, budget, params, trace, full_root)
    if RESERVE["mode"] and params.glimpse and not full_root and tree.root >= ix.N:
        line = f"{ix.N} facts" if RESERVE["mode"] == "count" else ""; n = int(count_tokens(line)) if line else 0
        if n < self.rbody: self.rtext, self.rbody = line, n

def _fit_line(tree, ix, w, rel_ord, visible, eff):
    "The library's fitted line; when it leaves the reserved line, the fixed short line, else `N facts`, if it fits in what is left."
    before = w.rtext
    _fit(tree, ix, w, rel_ord, visible, eff)
    if not RESERVE["mode"] or w.rtext != before or before == ix.label: return
    for line in (ix.label, f"{ix.N} facts"):
        n = int(count_tokens(line))
        if line != before and n <= w.rbody + eff - w.used and (n > w.rbody or not before):
            w.used += n - w.rbody; w.rtext, w.rbody = line, n; return

SC._Walk.__init__, SC._fit_root_line = _walk_init, _fit_line

VARIANTS = ("fixed", "count", "marker")

class Checked:
    "A method whose every context is checked against its budget (the variants change what the walk charges)."
    def __init__(self, m): self.m = m
    def __call__(self, tree, prompt, budget):
        ctx, nodes = self.m(tree, prompt, budget)
        assert count_tokens(ctx) <= budget, (budget, ctx)
        return ctx, nodes

def main():
    convs, emb, qsets, trees = C.setup((15, 30))
    sids, R, t0 = [c.sample_id for c in convs], {}, time.perf_counter()
    run = C.runner(R, convs, trees, qsets)
    for w in C.HYBRID_W: run("hybrid", (("lexical_weight", w),), 15, lambda w=w: HybridTopK(emb, w))
    for variant in VARIANTS:
        RESERVE["mode"] = None if variant == "fixed" else variant
        for s in GRID:
            p = CoverParams(overview_share=s["overview_share"], lexical_weight=s["lexical_weight"], tau=s["tau"], glimpse=s["glimpse"])
            run(variant, tuple(sorted(s.items())), s["summary_tokens"], lambda p=p: Checked(SetreeCover(emb, p)))
        C.log(f"{variant} done, {time.perf_counter() - t0:.0f} s")
    RESERVE["mode"] = None
    held, chosen = {}, {}
    for m in ("hybrid", *VARIANTS):
        ss = list(dict.fromkeys(k[1] for k in R if k[0] == m))
        for sid in sids:
            best = max(ss, key=lambda s: C.objective(R, m, s, [x for x in sids if x != sid]))
            chosen.setdefault(m, {})[sid] = dict(best)
            for b in C.BUDGETS: held[m, sid, b] = R[m, best, sid, b]
    cats = np.concatenate([[q.category for q in qsets[sid]] for sid in sids])
    lines = ["# A smaller reservation for the root's line during the walk (measured, not adopted)", "",
             "Leave-one-conversation-out CV on the LoCoMo development split, categories 1-4, grid: summary_tokens 15/30, lexical_weight 0.2/0.3, "
             "glimpse 15/60, overview_share 0, tau 0.01 (the settings the full calibration chose); the hybrid's own lexical_weight swept as in calibrate.py. "
             "`fixed`: the library's walk (reserves the root's fixed short line); `count`: the walk reserves `N facts`; `marker`: only the root's marker. "
             "Mean difference in points, 95 % paired-bootstrap interval over questions (2,000 resamples, seed 0).", ""]
    comps = (("fixed", "hybrid"), ("count", "hybrid"), ("marker", "hybrid"), ("count", "fixed"), ("marker", "fixed"))
    tables, res = C.paired_tables(held, comps, sids, cats, np.random.default_rng(0), by_cat=((2, "temporal (cat 2) diff"),))
    C.finish("root_reserve", lines + tables + C.chosen_table(chosen, ("hybrid", *VARIANTS), sids), res, chosen, t0)

if __name__ == "__main__": main()
