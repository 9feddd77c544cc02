"""BM25 terms: WordPiece ids (what setree.lexical uses) against whole words, as flat BM25 retrieval on the LoCoMo development
split (categories 1-4, strict evidence recall). Facts are taken best first while `[fK] text` lines fit the budget (no dates).

    nice python benchmarks/locomo/bm25_terms.py   # writes benchmarks/locomo/bm25_terms.md"""
import re
from pathlib import Path
import numpy as np
from setree.core import count_tokens
from setree.datasets import shared_data
from setree.evaluate import STOPWORDS, evidence_found, load_locomo
from setree.lexical import BM25Index, term_ids

BUDGETS = (256, 512, 1024, 2048)
WORD = re.compile(r"[a-z0-9]+")

def words(texts, vocab):
    out = []
    for t in texts:
        ws = [w for w in WORD.findall(t.lower()) if w not in STOPWORDS]
        out.append(np.array([vocab.setdefault(w, len(vocab)) for w in ws], np.int32))
    return out

def main():
    convs = load_locomo(shared_data("locomo", "locomo_dev.json"))
    res = {k: {b: [] for b in BUDGETS} for k in ("wordpiece", "words")}
    for c in convs:
        texts = [f.text for f in c.facts]
        cost = count_tokens(texts) + 4
        idx = c.dia_index()
        vocab = {}
        W = words(texts, vocab)
        ix = {"wordpiece": BM25Index(term_ids(texts))}
        import setree.lexical as L
        orig = L.vocab_size
        L.vocab_size = lambda: 10**6   # a word vocabulary instead of the WordPiece one
        try: ix["words"] = BM25Index(W)
        finally: L.vocab_size = orig
        for q in c.questions:
            if q.category == 5 or not q.evidence: continue
            for kind in ix:
                if kind == "wordpiece": s = ix[kind].scores(q.question)
                else:
                    qt = np.unique([vocab[w] for w in WORD.findall(q.question.lower()) if w not in STOPWORDS and w in vocab]).astype(np.int64)
                    s = np.asarray(ix[kind].W[qt].sum(axis=0)).ravel() if len(qt) else np.zeros(len(texts))
                order = np.argsort(-s, kind="stable"); order = order[s[order] > 0]
                for b in BUDGETS:
                    room, shown = b - 12, []
                    for i in order:
                        if cost[i] <= room: shown.append(texts[i]); room -= cost[i]
                    res[kind][b].append(evidence_found("\n".join(shown), q.evidence, c.facts, idx).mean())
    md = ["# BM25 terms: WordPiece ids or whole words (flat BM25, LoCoMo development split, categories 1-4, strict evidence recall)", "",
          "| terms | " + " | ".join(str(b) for b in BUDGETS) + " |", "|---|" + "---:|" * len(BUDGETS)]
    for kind, r in res.items(): md.append(f"| {kind} | " + " | ".join(f"{np.mean(r[b]):.3f}" for b in BUDGETS) + " |")
    (Path(__file__).parent / "bm25_terms.md").write_text("\n".join(md) + "\n"); print("\n".join(md))

if __name__ == "__main__": main()
