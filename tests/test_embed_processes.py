"""The MiniLM embedder gives the same vectors in two separate processes (determinism across processes)."""
import os, subprocess, sys
import numpy as np

TEXTS = ["the user writes C++20", "the user prefers dark mode", "用户喜欢喝绿茶", "🙂", "naïve café"]
CODE = f"""
import sys, numpy as np
from setree.embed import get_embedder
np.save(sys.argv[1], get_embedder().embed({TEXTS!r}))
"""

def _embed_in_subprocess(path, hashseed):
    env = {**os.environ, "PYTHONHASHSEED": str(hashseed)}
    subprocess.run([sys.executable, "-c", CODE, str(path)], check=True, env=env, timeout=300)
    return np.load(path)

def test_same_embedding_in_two_processes(tmp_path):
    a = _embed_in_subprocess(tmp_path / "a.npy", 1)
    b = _embed_in_subprocess(tmp_path / "b.npy", 2)
    assert a.shape == (len(TEXTS), 384)
    np.testing.assert_array_equal(a, b)

def test_hashing_embedder_is_process_independent(tmp_path):
    code = f"import sys, numpy as np; from setree.embed import HashingEmbedder; np.save(sys.argv[1], HashingEmbedder().embed({TEXTS!r}))"
    out = []
    for seed in (1, 2):
        p = tmp_path / f"h{seed}.npy"
        subprocess.run([sys.executable, "-c", code, str(p)], check=True, env={**os.environ, "PYTHONHASHSEED": str(seed)}, timeout=120)
        out.append(np.load(p))
    np.testing.assert_array_equal(out[0], out[1])
