"""The root's line fitted to the prompt (`CoverParams.glimpse`) on real data: LoCoMo conv-26, every question at 256 and
1,024 tokens. The fitted line must leave the walk alone (the same nodes as the fixed line), repeat no word the rest of the
context shows, keep the context within budget and exactly counted, and be used for most questions. The hashing embedder
builds the tree (the mechanism, not the model, is tested). Skips when ../shared/data is absent."""
import pytest
from setree.datasets import shared_data

LOCOMO = shared_data("locomo", "locomo_dev.json")
pytestmark = pytest.mark.skipif(LOCOMO is None, reason="../shared/data/locomo/locomo_dev.json is absent")

def test_fitted_root_line_on_conv26():
    from setree.build import build_tree
    from setree.core import count_tokens
    from setree.cover import CoverParams, select_cover, shown_words
    from setree.embed import get_embedder
    from setree.evaluate import load_locomo
    conv = next(c for c in load_locomo(LOCOMO) if c.sample_id == "conv-26")
    emb = get_embedder("hashing")
    tree = build_tree(conv.facts, embedder=emb, progress=False)
    questions = [q.question for q in conv.questions]
    Q = emb.embed(questions)
    fitted = 0
    for budget in (256, 1024):
        for q, p in zip(Q, questions):
            c0, c = (select_cover(tree, q, budget, CoverParams(glimpse=g), p) for g in (0, 60))
            assert [it.node for it in c.items] == [it.node for it in c0.items]          # the walk is unchanged
            assert c.total_tokens <= budget and count_tokens(c.render()) == c.total_tokens
            root = [it for it in c.items if it.node == tree.root]
            if not root: continue                                                     # the root was carried
            others = [it.text for it in c.items if it.node != tree.root] + [it.date for it in c.items if it.date]
            assert not shown_words([root[0].text]) & shown_words(others), (p, root[0].text)
            assert root[0].tokens == count_tokens(root[0].text)
            fitted += root[0].text != c0.items[[it.node for it in c0.items].index(tree.root)].text
    assert fitted > len(questions), fitted                                            # used for most of the 2 x 199 covers
