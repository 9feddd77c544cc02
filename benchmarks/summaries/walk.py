"""Summary variants x overview_share, read by setree's tree cover (setree.cover.retrieve, its other parameters at their defaults).

    nice python benchmarks/summaries/walk.py VARIANTS SHARES TAG      e.g. facts,keyphrases 0,0.1,0.2 walk
Writes benchmarks/summaries/TAG_idf<P>.json (rows of setree.evaluate.summarize per variant) and prints the tables."""
import json, sys, time
from variants import HERE, LOCOMO, tag as run_tag, embedder, save, summarizer, table_lines
from setree.build import build_tree
from setree.cover import CoverParams
from setree.evaluate import HybridTopK, SetreeCover, evaluate_locomo, summarize

names, shares, tag = sys.argv[1].split(","), [float(x) for x in sys.argv[2].split(",")], sys.argv[3]
emb, res = embedder(), {}
for name in names:
    t0 = time.time()
    ms = {f"setree_s{s:g}": SetreeCover(emb, CoverParams(overview_share=s)) for s in shares}
    if name == names[0]: ms["hybrid"] = HybridTopK(emb, CoverParams().lexical_weight, True)   # the flat peer, for reference
    rows = evaluate_locomo(LOCOMO, methods=ms, embedder=emb,
                           build=lambda facts, e: build_tree(facts, embedder=e, summarizer=summarizer(name), progress=False))
    res[name] = [{k: s[k] for k in ("method", "budget", "group", "n", "recall", "answer_recall", "tokens")} for s in summarize(rows)]
    save(emb); (HERE / f"{run_tag(tag)}.json").write_text(json.dumps(res, indent=0))
    print(f"{name}: {time.time() - t0:.0f} s", *table_lines(name, res[name]), sep="\n", flush=True)
