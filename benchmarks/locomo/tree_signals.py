"""Experiment (not part of the library; measured, not adopted): can the tree raise setree above the flat hybrid held out,
in strict evidence recall and answer-token recall at every budget? Four query-time changes, each a principled use of the
tree or of the root's line, each measured with the leave-one-conversation-out protocol of calibrate.py on a tiny grid:

- `cluster bm25`: the per-fact relevance plus lambda * BM25 of the prompt against the fact's community (its parent: the
  concatenated texts of the facts it groups) / max, cluster-based smoothing in the manner of Liu & Croft (2004): a fact in
  a community that matches more of the prompt's words rises (lambda swept 0 / 0.05 / 0.1 per fold, 0 = the library);
- `parent summary`: the relevance plus lambda * <q, s_parent> (the cosine of the prompt with the fact's parent summary;
  lambda 0 / 0.05 per fold);
- `release`: the walk reserves the root's short line, and at the first fact that does not fit (the most relevant fact the
  cover leaves out) it gives that reservation up if the fact then fits: a fact shows its own words and can be evidence, the
  line only names phrases; the fitted line then has what the walk leaves (the marker alone when no phrase fits);
- `community glimpse`: the root's fitted line takes its phrases in turn per community of the facts it draws from
  (`keyphrases(groups=parent)`), so it names more distinct communities.

The library's walk (`library`) and every flat peer (own parameter swept as in calibrate.py) are measured alongside.
Grid: summary_tokens 30 (every fold's choice in calibrate.py), overview_share 0, tau 0.01, lexical_weight 0.2 / 0.3,
glimpse 15 / 60, crossed with each variant's lambda. Every context is checked against its budget.

    nice taskset -c 0 python benchmarks/locomo/tree_signals.py   # writes calibration/tree_signals.md and tree_signals.json"""
import sys, time
from pathlib import Path
import numpy as np
sys.path.insert(0, str(Path(__file__).parent))
import calibrate as C
import setree.cover as SC
from setree.core import count_tokens
from setree.cover import CoverParams
from setree.evaluate import BM25, DenseTopK, HybridTopK, SetreeCover
from setree.lexical import BM25Index, term_ids

ST = 30
BASE = [dict(lexical_weight=w, glimpse=g) for w in (0.2, 0.3) for g in (15, 60)]
VARIANTS = {"library": ("library", (0.0,)), "cluster bm25": ("cbm", (0.0, 0.05, 0.1)), "parent summary": ("psum", (0.0, 0.05)),
            "release": ("release", (1.0,)), "community glimpse": ("cglimpse", (1.0,))}
MODE = {"kind": None, "lam": 0.0}   # the variant the patched functions apply (None / lam 0: the library)
_relevance, _fact, _phrases = SC.fact_relevance, SC._Walk.fact, SC.prompt_phrases

def _community_bm25(tree):
    "(BM25 index over the communities' concatenated texts, community column of every fact), cached on the tree."
    c = getattr(tree, "_ts_cbm", None)
    if c is None:
        N = tree.n_facts; par = np.asarray(tree.parent)[:N]
        keys, col = np.unique(par, return_inverse=True)
        docs = [" ".join(tree.facts[i].text for i in np.flatnonzero(col == j).tolist()) for j in range(len(keys))]
        c = tree._ts_cbm = (BM25Index(term_ids(docs)), col)
    return c

def relevance(tree, q, prompt=None, lexical_weight=0.0):
    "The library's relevance, smoothed by the fact's community (`cbm`) or parent summary (`psum`) when that variant is on."
    r = _relevance(tree, q, prompt, lexical_weight)
    k, lam = MODE["kind"], MODE["lam"]
    if k == "cbm" and lam and prompt and tree.n_facts:
        idx, col = _community_bm25(tree); b = idx.scores(prompt); m = float(b.max())
        if m > 0: r = (r + np.float32(lam / m) * b[col]).astype(np.float32)
    elif k == "psum" and lam and tree.n_facts:
        r = (r + np.float32(lam) * (tree.emb[np.asarray(tree.parent)[:tree.n_facts]] @ q)).astype(np.float32)
    return r

def fact(self, c, score):
    "The library's fact step; with `release`, the first fact that does not fit may take the root's reserved short line."
    if MODE["kind"] != "release" or getattr(self, "_ts_missed", False) or self.t.root < self.ix.N or not self.rbody or not self.p.glimpse \
            or self.rtext != self.ix.label:
        return _fact(self, c, score)
    was = bool(self.selected[c]); _fact(self, c, score)
    if self.selected[c] and not was: return
    self._ts_missed = True
    n, text = self.rbody, self.rtext
    self.used -= n; self.summ_body -= n; self.rbody, self.rtext = 0, ""
    _fact(self, c, score)
    if not self.selected[c]: self.used += n; self.summ_body += n; self.rbody, self.rtext = n, text

def prompt_phrases(tree, rel, shown, words, cap, k=60):
    "The library's fitted line; with `cglimpse`, its phrases taken in turn per community (parent) of the facts it draws from."
    if MODE["kind"] != "cglimpse": return _phrases(tree, rel, shown, words, cap, k)
    from setree.summarize import keyphrases
    cand = np.flatnonzero(~np.asarray(shown, bool))
    if not len(cand) or cap < 1 or k < 1: return ""
    if len(cand) > k: cand = cand[np.argpartition(-rel[cand], k - 1)[:k]]
    cand = cand[np.lexsort((cand, -rel[cand]))]
    return keyphrases([tree.facts[i].text for i in cand.tolist()], cap, None, words, np.asarray(tree.parent)[cand])

SC.fact_relevance, SC._Walk.fact, SC.prompt_phrases = relevance, fact, prompt_phrases

class Variant:
    "setree's cover with a variant switched on for the call; every context checked against its budget."
    def __init__(self, emb, p, kind, lam): self.m, self.kind, self.lam = SetreeCover(emb, p), kind, lam
    def __call__(self, tree, prompt, budget):
        MODE.update(kind=self.kind, lam=self.lam)
        try: ctx, nodes = self.m(tree, prompt, budget)
        finally: MODE.update(kind=None, lam=0.0)
        assert count_tokens(ctx) <= budget, (budget, ctx)
        return ctx, nodes

def signs(held, a, b, sids, col, budget)->str:
    "Per held-out conversation, the sign of a's mean minus b's ('+', '-', '0')."
    out = ""
    for s in sids:
        d = np.nanmean(held[a, s, budget][:, col]) - np.nanmean(held[b, s, budget][:, col])
        out += "+" if d > 1e-9 else "-" if d < -1e-9 else "0"
    return out

def main():
    convs, emb, qsets, trees = C.setup((ST,))
    sids, R, t0 = [c.sample_id for c in convs], {}, time.perf_counter()
    run = C.runner(R, convs, trees, qsets)
    run("dense", (), ST, lambda: DenseTopK(emb)); run("bm25", (), ST, lambda: BM25())
    for w in C.HYBRID_W: run("hybrid", (("lexical_weight", w),), ST, lambda w=w: HybridTopK(emb, w))
    C.log(f"peers done, {time.perf_counter() - t0:.0f} s")
    for name, (kind, lams) in VARIANTS.items():
        for lam in lams:
            for s in BASE:
                p = CoverParams(overview_share=0.0, tau=0.01, **s)
                key = tuple(sorted({**s, "lam": lam}.items()))
                src = "library" if lam == 0 else kind
                if (src, key, sids[0], C.BUDGETS[0]) in R: continue
                run(src, key, ST, lambda p=p, k=kind, l=lam: Variant(emb, p, None if l == 0 else k, l))
        C.log(f"{name} done, {time.perf_counter() - t0:.0f} s")
    held, chosen = {}, {}
    cands = {m: (m, list(dict.fromkeys(k[1] for k in R if k[0] == m))) for m in ("dense", "bm25", "hybrid")}
    for name, (kind, lams) in VARIANTS.items():
        cands[name] = [(("library" if lam == 0 else kind), tuple(sorted({**s, "lam": lam}.items()))) for lam in lams for s in BASE]
    for m, spec in cands.items():
        pairs = [(spec[0], s) for s in spec[1]] if isinstance(spec, tuple) else spec
        for sid in sids:
            src, best = max(pairs, key=lambda ps: C.objective(R, ps[0], ps[1], [x for x in sids if x != sid]))
            chosen.setdefault(m, {})[sid] = dict(best)
            for b in C.BUDGETS: held[m, sid, b] = R[src, best, sid, b]
    cats = np.concatenate([[q.category for q in qsets[sid]] for sid in sids])
    methods = list(cands)
    def pooled(m, b, col, cat=None):
        a = np.concatenate([held[m, s, b][:, col] for s in sids]); return float(np.nanmean(a if cat is None else a[cats == cat]))
    lines = ["# Tree signals and the root's line at the edge: four query-time changes held out (measured, not adopted)", "",
             "Leave-one-conversation-out CV on the LoCoMo development split, categories 1-4 (benchmarks/locomo/tree_signals.py; the variants are described "
             "in its docstring). Grid: summary_tokens 30, overview_share 0, tau 0.01, lexical_weight 0.2 / 0.3, glimpse 15 / 60, crossed with each variant's "
             "lambda (0 = the library's walk, so a variant can only be chosen when it wins on the other five conversations); every flat peer's own parameter "
             "swept as in calibrate.py. Each conversation's numbers come from the setting chosen on the other five.", ""]
    for col, title in ((0, "Strict evidence recall"), (1, "Answer-token recall")):
        lines += [f"## {title} (held out)", "", "| method | " + " | ".join(f"{b}" for b in C.BUDGETS) + " | " + " | ".join(f"cat 1 @ {b}" for b in C.BUDGETS) + " |",
                  "|---|" + "---:|" * (2 * len(C.BUDGETS))]
        for m in methods:
            lines.append(f"| {m} | " + " | ".join(f"{pooled(m, b, col):.3f}" for b in C.BUDGETS) + " | " + " | ".join(f"{pooled(m, b, col, 1):.3f}" for b in C.BUDGETS) + " |")
        lines.append("")
    comps = [(v, "hybrid") for v in VARIANTS] + [(v, "library") for v in VARIANTS if v != "library"]
    lines += ["## Signs per held-out conversation", "", "The sign of the difference of means on each held-out conversation (" + ", ".join(sids) + "), per budget.", "",
              "| comparison | metric | " + " | ".join(str(b) for b in C.BUDGETS) + " |", "|---|---|" + "---|" * len(C.BUDGETS)]
    for a, b in comps:
        for col, title in ((0, "evidence"), (1, "answer tokens")):
            lines.append(f"| {a} - {b} | {title} | " + " | ".join(f"`{signs(held, a, b, sids, col, bud)}`" for bud in C.BUDGETS) + " |")
    lines.append("")
    tables, res = C.paired_tables(held, comps, sids, cats, np.random.default_rng(0), by_cat=((1, "multi-hop (cat 1) diff"), (2, "temporal (cat 2) diff")))
    res["pooled"] = {m: {b: {"recall": pooled(m, b, 0), "answer_recall": pooled(m, b, 1), "recall_cat1": pooled(m, b, 0, 1),
                             "answer_recall_cat1": pooled(m, b, 1, 1)} for b in C.BUDGETS} for m in methods}
    res["signs"] = {f"{a} - {b}": {t: {bud: signs(held, a, b, sids, col, bud) for bud in C.BUDGETS} for col, t in ((0, "evidence"), (1, "answer"))} for a, b in comps}
    C.finish("tree_signals", lines + tables + C.chosen_table(chosen, methods, sids), res, chosen, t0)

if __name__ == "__main__": main()
