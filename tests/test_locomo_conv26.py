"""Issue acceptance on real data: LoCoMo conv-26 through `setree import locomo` + `setree build`, then every question
retrieved at budgets 256, 512, 1024 and 2048: every result within budget, recounted independently with a fresh
tokenizer, and status ok; at 2048 through `setree retrieve --prompts-file`, with the same covers as the library. The hashing embedder
builds the tree: the model is not what this test is about (the MiniLM path is tested in test_cases.py and test_evaluate_locomo.py). The commands run in this process (`conftest.run_setree`), so the model is loaded
once. Skips when ../shared/data is absent."""
import json
import numpy as np
import pytest
from setree.datasets import shared_data
from conftest import run_setree

LOCOMO = shared_data("locomo", "locomo_dev.json")
pytestmark = pytest.mark.skipif(LOCOMO is None, reason="../shared/data/locomo/locomo_dev.json is absent")

def setree(*args):
    p = run_setree(*args)
    assert p.returncode == 0, p.stderr
    return p.stdout

def test_conv26_every_question_within_budget(tmp_path):
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers
    from setree.core import default_vocab_path
    facts, db, prompts = tmp_path / "conv26.jsonl", tmp_path / "conv26.db", tmp_path / "questions.txt"
    setree("import", "locomo", LOCOMO, "--conversation", "conv-26", "--out", facts)
    rows = [json.loads(l) for l in facts.read_text(encoding="utf-8").splitlines()]
    assert len(rows) == 184 and all(r["meta"]["dia_ids"] for r in rows)          # README: 184 observations
    setree("build", facts, "--db", db, "--quiet", "--embedder", "hashing")   # the budget is the point, not the model
    qa = next(c for c in json.loads(LOCOMO.read_text()) if c["sample_id"] == "conv-26")["qa"]
    questions = [q["question"].replace("\n", " ") for q in qa]
    prompts.write_text("\n".join(questions) + "\n", encoding="utf-8")
    # an independent recount: a tokenizer built here from the vocabulary, not the library's counter
    tok = Tokenizer(models.WordPiece.from_file(str(default_vocab_path()), unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(clean_text=True, handle_chinese_chars=True, strip_accents=False, lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    # the command line answers every question at the largest budget; the library answers all four budgets from one batch of
    # prompt embeddings (the walk is the same code; embedding 199 prompts four times over would test nothing more)
    cli = [json.loads(l) for l in setree("retrieve", "--prompts-file", prompts, "--db", db, "--budget", 2048).splitlines()]
    assert len(cli) == len(questions) == 199
    from setree.cover import CoverParams, select_cover
    from setree.embed import get_embedder
    from setree.store import Store
    with Store(db, readonly=True) as st: tree = st.load()
    Q, params = get_embedder("hashing").embed(questions), CoverParams.from_config(tree.config)
    report = []
    for budget in (256, 512, 1024, 2048):
        res = [select_cover(tree, q, budget, params, prompt=p) for q, p in zip(Q, questions)]
        assert all(r.status == "ok" for r in res)
        used = np.array([len(tok.encode(r.render(), add_special_tokens=False).ids) for r in res])
        assert (used <= budget).all(), (budget, used.max())
        assert (used == [r.total_tokens for r in res]).all()
        report.append(f"budget {budget}: tokens used median {np.median(used):.0f} max {used.max()}")
    assert all(c["status"] == "ok" for c in cli)
    assert [c["rendered"] for c in cli] == [r.render() for r in res]            # the command line gives the library's covers
    lat = np.array([c["latency_ms"] for c in cli])
    report.append(f"command line, budget 2048: latency P50 {np.percentile(lat, 50):.1f} ms P99 {np.percentile(lat, 99):.1f} ms")
    print("\n".join(report))
