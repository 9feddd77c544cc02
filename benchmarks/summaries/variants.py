"""Shared by the summary measurements: the summary variants, an on-disk embedding cache, and an experimental IDF power.

IDF_POWER (environment, default 1): keyphrase weight p_v(t) * log(N/df)^IDF_POWER instead of the library's power 1.
OVERVIEW_TOKENS (environment, default 0 = the build's summary_tokens): target length of the overview nodes' summaries.
Only for the measurement of those alternatives; the library is not changed by them."""
import math, os, pickle
from pathlib import Path
import setree.summarize as SM
from setree.evaluate import CachedEmbedder
from setree.embed import get_embedder
from setree.datasets import shared_data

LOCOMO = shared_data("locomo", "locomo_dev.json")
CACHE = Path(os.environ.get("SETREE_CACHE", "/work/cache")) / "summaries" / "minilm.pkl"
IDF_POWER = float(os.environ.get("IDF_POWER", "1"))
OVERVIEW_TOKENS = int(os.environ.get("OVERVIEW_TOKENS", "0"))
HERE = Path(__file__).parent

def embedder()->CachedEmbedder:
    "MiniLM, with facts, summaries and questions cached on disk across runs."
    emb = CachedEmbedder(get_embedder())
    if CACHE.exists():
        d = pickle.loads(CACHE.read_bytes()); emb._vec, emb._flag, emb._q = d["vec"], d["flag"], d["q"]
    return emb

def save(emb:CachedEmbedder):
    CACHE.parent.mkdir(parents=True, exist_ok=True)
    tmp = CACHE.with_suffix(".tmp"); tmp.write_bytes(pickle.dumps({"vec": emb._vec, "flag": emb._flag, "q": emb._q})); tmp.replace(CACHE)

if IDF_POWER != 1:
    _weights = SM.phrase_weights
    def _phrase_weights(texts, background=None):
        n = len(texts); out = _weights(texts, background)
        bg = background or SM.term_stats(texts); N = max(bg.n, n)
        first = {}
        for i, t in enumerate(texts):
            for k, _ in SM.fact_phrases(t): first.setdefault(k, i * 1000 + len(first))
        def w(k, f):
            df = max(bg.df.get(k, 0), len(f)); return round(len(f) / n * math.log(max(N, df) / df) ** IDF_POWER, 12)
        return sorted([(w(k, f), k, s, f) for _, k, s, f in out], key=lambda x: (-x[0], first[x[1]]))
    SM.phrase_weights = _phrase_weights

if OVERVIEW_TOKENS:
    _overview = SM.ExtractiveSummarizer.overview_text
    def _overview_text(self, r, order, tok, cap, shown):
        return _overview(self, r, order, tok, min(OVERVIEW_TOKENS, int(r.max_tokens)), shown)
    SM.ExtractiveSummarizer.overview_text = _overview_text

def summarizer(name:str)->SM.ExtractiveSummarizer:
    "The variant by overview style: 'facts', 'keyphrases' or 'keyphrases+fact'."
    return SM.ExtractiveSummarizer(overview=name)

def tag(t:str)->str: return f"{t}_idf{IDF_POWER:g}" + (f"_ov{OVERVIEW_TOKENS}" if OVERVIEW_TOKENS else "")

def table_lines(name, ss):
    out = []
    for g in ("1", "1-4"):
        for m in dict.fromkeys(s["method"] for s in ss):
            r = [s for s in ss if s["method"] == m and s["group"] == g]
            out.append(f"{name:16} {m:12} cat {g:3} evid " + " ".join(f"{x['recall']:.3f}" for x in r)
                       + "  ans " + " ".join(f"{x['answer_recall']:.3f}" for x in r))
    return out
