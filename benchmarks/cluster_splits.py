"""How many oversize communities the build splits (`setree.cluster.split_group` calls, recursive ones included) on the six LoCoMo
development conversations (observations), at the summary lengths the committed evaluation builds with (15 tokens for setree,
30 for the collapsed tree) and the default window. No split means the trees do not depend on how a split runs.

    nice python benchmarks/cluster_splits.py   # prints one line per build and the total; writes benchmarks/cluster_splits.json"""
import json, subprocess
from pathlib import Path
import setree.cluster as cl
from setree.build import Config, unique_facts
from setree.core import count_tokens
from setree.datasets import shared_data
from setree.embed import get_embedder
from setree.evaluate import CachedEmbedder, load_locomo

HERE = Path(__file__).parent
CACHE = Path("/work/cache/minilm/locomo_dev_vectors.npz")   # the evaluation's cached fact vectors (embedded when absent)

def main():
    emb = CachedEmbedder(get_embedder())
    if CACHE.exists(): emb.load(CACHE)
    sizes, orig = [], cl.split_group
    def counted(g, pos, *a, **k): sizes.append(len(pos)); return orig(g, pos, *a, **k)
    cl.split_group = counted   # split_oversize looks it up in the module at each call
    rows = []
    try:
        for c in load_locomo(shared_data("locomo", "locomo_dev.json")):
            texts = [f.text for f in unique_facts(c.facts)[0]]; E, tok = emb.embed(texts), count_tokens(texts)
            for st in (15, 30):
                cfg = Config(summary_tokens=st); sizes.clear()
                h = cl.cluster_hierarchy(E, tok, k_max=cfg.k_max, resolution=cfg.resolution, seed=cfg.seed, summary_tokens=st,
                                         window_tokens=cfg.window_tokens)
                rows.append(dict(conversation=c.sample_id, facts=len(texts), fact_tokens=int(tok.sum()), summary_tokens=st,
                                 window_tokens=cfg.window_tokens, levels=len(h.levels), splits=len(sizes), split_sizes=list(sizes)))
                print(rows[-1], flush=True)
    finally: cl.split_group = orig
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=HERE).stdout.strip()
    (HERE / "cluster_splits.json").write_text(json.dumps(dict(commit=commit, total_splits=sum(r["splits"] for r in rows), builds=rows), indent=1) + "\n")
    print("total splits:", sum(r["splits"] for r in rows))

if __name__ == "__main__": main()
