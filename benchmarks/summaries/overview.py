"""Do summaries earn their tokens beside flat search? The flat hybrid search (setree's per-fact relevance, cosine + 0.2 x
BM25 / max), with a share of the budget first given to the summaries most related to the prompt (share 0 = the flat
hybrid search of the evaluation).

    nice python benchmarks/summaries/overview.py VARIANTS SHARE[:RANK],... TAG    e.g. facts,keyphrases 0,0.1:mu,0.1:s ov
RANK: 'mu' (cosine to the node's centroid, default), 's' (to the summary's embedding), 'topK' (mean of its K best facts)."""
import json, sys, time
import numpy as np
from variants import HERE, LOCOMO, tag as run_tag, embedder, save, summarizer, table_lines
from setree.build import build_tree
from setree.cover import CoverParams, cover_index, fact_relevance, fill_budget, render_nodes
from setree.evaluate import evaluate_locomo, summarize

class OverviewShare:
    "Summaries (two facts or more) by relatedness within share x budget (text + a 4-token marker), each text once; then facts by hybrid relevance."
    def __init__(self, emb, share:float, rank:str="mu"): self.emb, self.share, self.rank = emb, share, rank
    def scores(self, tree, q, nodes):
        if self.rank == "s": return tree.emb[nodes] @ q
        if self.rank == "mu": S = tree.leaf_sum[nodes]; return (S @ q) / np.linalg.norm(S, axis=1)
        k, fo = int(self.rank[3:]), (tree.emb[:tree.n_facts] @ q)[tree.order]
        return np.array([np.sort(fo[tree.start[v]:tree.stop[v]])[-k:].mean() for v in nodes])
    def __call__(self, tree, question, budget):
        q = self.emb.embed_query(question); N = tree.n_facts; ix = cover_index(tree)
        internal = np.arange(N, tree.n_nodes); internal = internal[(tree.stop[internal] - tree.start[internal]) >= 2]
        chosen, seen, room = [], set(), int(self.share * budget)
        if room and len(internal):
            for v in internal[np.argsort(-self.scores(tree, q, internal), kind="stable")].tolist():
                cost = int(ix.body[v]) + 4
                if cost <= room and tree.texts[v] not in seen:
                    chosen.append(v); room -= cost; seen.add(tree.texts[v])
                if room < 8: break
        rel = fact_relevance(tree, q, question, CoverParams().lexical_weight)
        facts = np.argsort(-rel, kind="stable").tolist()
        nodes = fill_budget(tree, chosen + facts, budget, True)   # quoted facts are shown by their summary, not again
        return render_nodes(tree, nodes, True), nodes

if __name__ == "__main__":
    names, specs, tag = sys.argv[1].split(","), sys.argv[2].split(","), sys.argv[3]
    emb, res = embedder(), {}
    for name in names:
        t0 = time.time()
        ms = {f"share{s}": OverviewShare(emb, float(s.split(":")[0]), *s.split(":")[1:]) for s in specs}
        rows = evaluate_locomo(LOCOMO, methods=ms, embedder=emb,
                               build=lambda facts, e: build_tree(facts, embedder=e, summarizer=summarizer(name), progress=False))
        res[name] = [{k: s[k] for k in ("method", "budget", "group", "n", "recall", "answer_recall", "tokens")} for s in summarize(rows)]
        save(emb); (HERE / f"{run_tag(tag)}.json").write_text(json.dumps(res, indent=0))
        print(f"{name}: {time.time() - t0:.0f} s", *table_lines(name, res[name]), sep="\n", flush=True)
