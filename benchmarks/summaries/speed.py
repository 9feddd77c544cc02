"""Build-stage seconds with each summary style on real sentences (hashing embedder: the summarizer's cost, not the model's).

    nice python benchmarks/summaries/speed.py 2000 > benchmarks/summaries/speed_2000.txt"""
import sys
from setree.build import build_tree
from setree.embed import get_embedder
from setree.summarize import ExtractiveSummarizer
n = int(sys.argv[1])
lines = [l for l in open("/work/shared/data/corpus/sentences.txt", encoding="utf-8").read().splitlines() if l.strip()][:n]
H = get_embedder("hashing")
for style in ("facts", "keyphrases", "keyphrases+fact"):
    tm = {}
    t = build_tree(lines, embedder=H, summarizer=ExtractiveSummarizer(overview=style), progress=False, timings=tm)
    kinds = {k: t.summarizer[t.n_facts:].count(k) for k in sorted(set(t.summarizer[t.n_facts:]))}
    print(f"{n} facts {style:16} " + " ".join(f"{k} {v:.2f}s" for k, v in tm.items()) + f"  nodes {t.n_nodes}  {kinds}", flush=True)
