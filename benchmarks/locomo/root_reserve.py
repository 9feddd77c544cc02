"""Experiment (not part of the library; measured, not adopted): the walk reserves a smaller root line than the root's fixed
short line (keyphrases within ROOT_LABEL_TOKENS), so the tokens saved can buy facts: `N facts` (variant `count`) or nothing
but the root's marker (variant `marker`); the line fitted to the prompt (`glimpse`) then fills what the walk leaves, falling
back to the fixed line, then to `N facts`, then (`marker` only) to the marker alone. Every context is checked against its budget.
Leave-one-conversation-out CV of both variants on a narrowed grid, paired bootstrap against the flat hybrid and against
each other, on the held-out rows.

    nice python benchmarks/locomo/root_reserve.py   # writes calibration/root_reserve.md and root_reserve.json"""
import json, subprocess, sys, time
from pathlib import Path
import numpy as np
sys.path.insert(0, str(Path(__file__).parent))
import calibrate as C
import setree.cover as SC
from setree.build import Config, build_tree
from setree.core import count_tokens
from setree.cover import CoverParams
from setree.embed import get_embedder
from setree.datasets import shared_data
from setree.evaluate import CachedEmbedder, HybridTopK, SetreeCover, load_locomo

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

def boot(d, rng):
    b = np.array([d[rng.integers(0, len(d), len(d))].mean() for _ in range(2000)])
    return float(np.quantile(b, 0.025)), float(np.quantile(b, 0.975))

def main():
    convs = load_locomo(shared_data("locomo", "locomo_dev.json"))
    emb = CachedEmbedder(get_embedder()).load(C.CACHE)
    qsets = {c.sample_id: [q for q in c.questions if q.category in C.CATS and q.evidence] for c in convs}
    for c in convs: emb.prefetch_queries([q.question for q in qsets[c.sample_id]])
    trees = {(st, c.sample_id): build_tree(c.facts, embedder=emb, config=Config(summary_tokens=st), progress=False) for st in (15, 30) for c in convs}
    sids, R, t0 = [c.sample_id for c in convs], {}, time.perf_counter()
    def run(m, s, st, make):
        for c in convs:
            for b in C.BUDGETS: R[m, s, c.sample_id, b] = C.score(make(), trees[st, c.sample_id], c, qsets[c.sample_id], b)
    for w in C.HYBRID_W: run("hybrid", (("lexical_weight", w),), 15, lambda w=w: HybridTopK(emb, w))
    for variant in VARIANTS:
        RESERVE["mode"] = None if variant == "fixed" else variant
        for s in GRID:
            p = CoverParams(overview_share=s["overview_share"], lexical_weight=s["lexical_weight"], tau=s["tau"], glimpse=s["glimpse"])
            run(variant, tuple(sorted(s.items())), s["summary_tokens"], lambda p=p: Checked(SetreeCover(emb, p)))
        C.log(f"{variant} done, {time.perf_counter() - t0:.0f} s")
    RESERVE["mode"] = None
    def objective(m, s, train):
        return float(np.mean([(lambda a: (np.nanmean(a[:, 0]) + np.nanmean(a[:, 1])) / 2)(np.concatenate([R[m, s, x, b] for x in train])) for b in C.BUDGETS]))
    held, chosen = {}, {}
    for m in ("hybrid", *VARIANTS):
        ss = list(dict.fromkeys(k[1] for k in R if k[0] == m))
        for sid in sids:
            best = max(ss, key=lambda s: objective(m, s, [x for x in sids if x != sid]))
            chosen.setdefault(m, {})[sid] = dict(best)
            for b in C.BUDGETS: held[m, sid, b] = R[m, best, sid, b]
    cats = np.concatenate([[q.category for q in qsets[sid]] for sid in sids])
    rng, res = np.random.default_rng(0), {}
    lines = ["# A smaller reservation for the root's line during the walk (measured, not adopted)", "",
             "Leave-one-conversation-out CV on the LoCoMo development split, categories 1-4, grid: summary_tokens 15/30, lexical_weight 0.2/0.3, "
             "glimpse 15/60, overview_share 0, tau 0.01 (the settings the full calibration chose); the hybrid's own lexical_weight swept as in calibrate.py. "
             "`fixed`: the library's walk (reserves the root's fixed short line); `count`: the walk reserves `N facts`; `marker`: only the root's marker. "
             "Mean difference in points, 95 % paired-bootstrap interval over questions (2,000 resamples, seed 0).", ""]
    for col, title in ((0, "evidence recall"), (1, "answer-token recall")):
        lines += [f"## {title}", "", "| comparison | budget | a | b | diff | 95 % CI | a wins / losses | temporal (cat 2) diff |", "|---|---:|---:|---:|---:|---:|---:|---:|"]
        for a_, b_ in (("fixed", "hybrid"), ("count", "hybrid"), ("marker", "hybrid"), ("count", "fixed"), ("marker", "fixed")):
            for b in C.BUDGETS:
                A = np.concatenate([held[a_, s, b][:, col] for s in sids]); B = np.concatenate([held[b_, s, b][:, col] for s in sids])
                ok = ~np.isnan(A) & ~np.isnan(B); d = (A - B)[ok]; lo, hi = boot(d, rng); d2 = d[cats[ok] == 2]
                res.setdefault(title, {}).setdefault(f"{a_} - {b_}", {})[b] = {"a": float(A[ok].mean()), "b": float(B[ok].mean()), "diff": float(d.mean()), "ci": [lo, hi],
                                                                              "wins": int((d > 0).sum()), "losses": int((d < 0).sum()), "diff_cat2": float(d2.mean())}
                lines.append(f"| {a_} - {b_} | {b} | {A[ok].mean():.3f} | {B[ok].mean():.3f} | {100 * d.mean():+.2f} | [{100 * lo:+.2f}, {100 * hi:+.2f}] | "
                             f"{(d > 0).sum()} / {(d < 0).sum()} | {100 * d2.mean():+.2f} |")
        lines.append("")
    lines += ["## Settings chosen per fold", "", "| variant | " + " | ".join(sids) + " |", "|---|" + "---|" * len(sids)]
    for m in ("hybrid", *VARIANTS): lines.append(f"| {m} | " + " | ".join(json.dumps(chosen[m][s]) for s in sids) + " |")
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=Path(__file__).parent).stdout.strip()
    lines += ["", f"Measured on commit {commit} (working tree as run), {time.perf_counter() - t0:.0f} s."]
    (C.OUT / "root_reserve.md").write_text("\n".join(lines) + "\n")
    (C.OUT / "root_reserve.json").write_text(json.dumps({"results": res, "chosen": chosen, "commit": commit}, indent=1))
    print("\n".join(lines))

if __name__ == "__main__": main()
