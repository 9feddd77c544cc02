"""The walk's work at 50,000 facts with the cheapest-fact bound computed over each node's own slice (the library) and as it
was (a reduceat over the unsorted starts alone): pops per walk (trace rows) and select_cover time, the two indexes
alternating prompt by prompt on one core, so the ratio is what counts on a shared machine. The tree is the one
benchmarks/cover/speed.py builds (pickled under SETREE_CACHE); prompts: corpus lines 60,000-60,049.

    nice taskset -c 0 python benchmarks/cover/minfact_pops.py   # writes benchmarks/cover/minfact_pops.json"""
import os
for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"): os.environ[k] = "1"
import json, pickle, subprocess, sys, time
from pathlib import Path
import numpy as np
sys.path.insert(0, str(Path(__file__).parent))
from speed import CACHE, corpus
from setree.cover import CoverParams, cover_index, select_cover
from setree.embed import get_embedder

def main():
    tree = pickle.loads((CACHE / "corpus_50000_tree.pkl").read_bytes())
    prompts = corpus()[60_000:60_050]
    emb = get_embedder(); Q = [emb.embed_query(p) for p in prompts]
    ix = cover_index(tree)
    new = ix.minfact.copy()
    old = np.minimum.reduceat(ix.body[np.asarray(tree.order)], np.asarray(tree.start, np.int64))
    res, p = {"wrong_nodes": int((old != new).sum()), "too_high": int((old > new).sum()), "nodes": int(tree.n_nodes)}, CoverParams()
    for b in (512, 2048):
        pops, ms, facts = {"old": [], "new": []}, {"old": [], "new": []}, {"old": [], "new": []}
        for q, text in zip(Q, prompts):
            for name, mf in (("old", old), ("new", new)):
                ix.minfact = mf
                tr = []; c = select_cover(tree, q, b, p, text, trace=tr); pops[name].append(len(tr))
                facts[name].append(sum(it.kind == "fact" for it in c.items))
                t0 = time.perf_counter(); select_cover(tree, q, b, p, text); ms[name].append(1000 * (time.perf_counter() - t0))
        ix.minfact = new
        res[b] = {k: {"pops_median": float(np.median(pops[k])), "ms_p50": round(float(np.median(ms[k])), 2), "facts_mean": float(np.mean(facts[k]))} for k in pops}
        res[b]["ms_ratio_new_over_old"] = round(float(np.median(np.array(ms["new"]) / np.array(ms["old"]))), 3)
        print(b, res[b], flush=True)
    res["commit"] = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=Path(__file__).parent).stdout.strip()
    res["load"] = os.getloadavg()
    (Path(__file__).parent / "minfact_pops.json").write_text(json.dumps(res, indent=1))
    print(res)

if __name__ == "__main__": main()
