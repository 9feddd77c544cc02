"""The committed LoCoMo evaluation: every method with its parameters chosen on all six development conversations
(benchmarks/locomo/calibration/cv.json, written by calibrate.py), rendered by the same code, plus the date-rendering
comparison (the same methods with dates off).

    nice python benchmarks/locomo/final.py   # writes benchmarks/locomo/{rows,summary}.{csv,json}, summary.md, meta.json"""
import json, subprocess
from pathlib import Path
from setree.build import Config
from setree.cover import CoverParams
from setree.embed import get_embedder
from setree.datasets import shared_data
from setree.evaluate import (CachedEmbedder, BM25, CollapsedTree, DenseTopK, HierarchicalRelevanceSearch, HybridTopK, SetreeCover,
                             evaluate_locomo, write_results)

HERE = Path(__file__).parent
CACHE = Path("/work/cache/minilm/locomo_dev_vectors.npz")

def main():
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=HERE).stdout.strip()   # the code imported above
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], capture_output=True, text=True, cwd=HERE).stdout.strip()
    cv = json.loads((HERE / "calibration" / "cv.json").read_text())
    s = cv["final"]["setree"]["setting"]
    w_h = cv["final"]["hybrid"]["setting"]["lexical_weight"]
    st_c = cv["final"]["collapsed"]["setting"]["summary_tokens"]
    chosen = {k: s[k] for k in ("overview_share", "lexical_weight", "tau", "glimpse") if k in s}
    p, pn = CoverParams(**chosen), CoverParams(**chosen, dates=False)
    emb = CachedEmbedder(get_embedder()).load(CACHE)
    path = shared_data("locomo", "locomo_dev.json")
    ms = {"setree": SetreeCover(emb, p), "dense": DenseTopK(emb), "bm25": BM25(), "hybrid": HybridTopK(emb, w_h), "hrs": HierarchicalRelevanceSearch(emb),
          "setree-nodates": SetreeCover(emb, pn), "dense-nodates": DenseTopK(emb, False), "hybrid-nodates": HybridTopK(emb, w_h, False)}
    trees = {}
    rows = evaluate_locomo(path, methods=ms, embedder=emb, build_config=Config(summary_tokens=s["summary_tokens"]), trees=trees, log=print)
    ctrees = trees if st_c == s["summary_tokens"] else {}
    rows += evaluate_locomo(path, methods={"collapsed": CollapsedTree(emb)}, embedder=emb, build_config=Config(summary_tokens=st_c), trees=ctrees, log=print)
    emb.save(CACHE)
    meta = {"commit": commit, "working_tree_modified": dirty.splitlines(), "setree": p.to_dict(), "setree_summary_tokens": s["summary_tokens"],
            "hybrid_lexical_weight": w_h, "collapsed_summary_tokens": st_c, "embedder": emb.identity,
            "over_budget": sum(r["tokens"] > r["budget"] for r in rows), "parameters_from": "calibration/cv.json (chosen on all six conversations)"}
    write_results(rows, HERE, meta)
    print((HERE / "summary.md").read_text())

if __name__ == "__main__": main()
