"""Case C-05: the clustering is the same in two processes with different PYTHONHASHSEED (and a given input order)."""
import hashlib, os, subprocess, sys
import numpy as np
import fastcore.test as ft
from setree import cluster
from setree.embed import get_embedder
from setree.core import count_tokens

TEXTS = [f"the user {v} {o}" for v in ("writes", "reads", "likes", "avoids", "plans")
         for o in ("C++20 code", "garden tomatoes", "night trains", "dark mode", "green tea", "jazz records", "mountain hikes", "board games")]

SCRIPT = r"""
import hashlib, sys, numpy as np
sys.path.insert(0, %r)
from test_cluster_determinism import digest
print(digest())
"""

def digest()->str:
    "SHA-256 over every array of the hierarchy of the 40 facts (hashing embedder) and of 1,000 random vectors (small window: splits)."
    emb = get_embedder("hashing")
    rng = np.random.default_rng(1)
    X = rng.normal(size=(1000, 48)).astype(np.float32); X /= np.linalg.norm(X, axis=1, keepdims=True)
    h = hashlib.sha256()
    for E, tok, kw in [(emb.embed(TEXTS), count_tokens(TEXTS), {}), (X, np.full(1000, 20), dict(window_tokens=200))]:
        hy = cluster.cluster_hierarchy(E, tok, seed=3, **kw)
        for a in [hy.parent, hy.level, *hy.children]: h.update(np.ascontiguousarray(a).tobytes())
        for lv in hy.levels:
            for a in (lv.members, lv.centroids, lv.parents, lv.community, lv.knn_idx, lv.knn_sim): h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()

def _run(hashseed):
    env = dict(os.environ, PYTHONHASHSEED=str(hashseed))
    out = subprocess.run([sys.executable, "-c", SCRIPT % os.path.dirname(os.path.abspath(__file__))],
                         env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip().splitlines()[-1]

def test_same_across_processes():
    a, b = _run(1), _run(2024)
    ft.test_eq(len(a), 64)
    ft.test_eq(a, b)
    ft.test_eq(a, digest())      # and the same as in this process

def test_seed_changes_partition_only_through_leiden():
    E = get_embedder("hashing").embed(TEXTS)
    h1 = cluster.cluster_hierarchy(E, count_tokens(TEXTS), seed=0)
    h2 = cluster.cluster_hierarchy(E, count_tokens(TEXTS), seed=0)
    ft.test_eq(h1.parent, h2.parent)
    ft.test_eq(h1.levels[0].knn_idx, h2.levels[0].knn_idx)   # the kNN graph does not depend on the seed at all
    h3 = cluster.cluster_hierarchy(E, count_tokens(TEXTS), seed=5)
    ft.test_eq(h3.levels[0].knn_idx, h1.levels[0].knn_idx)

def test_reversed_order_is_reproducible():
    E = get_embedder("hashing").embed(TEXTS[::-1]); tok = count_tokens(TEXTS[::-1])
    a, b = cluster.cluster_hierarchy(E, tok), cluster.cluster_hierarchy(E, tok)
    ft.test_eq(a.parent, b.parent)
    ft.test_eq(len(a.parent) > len(TEXTS), True)
