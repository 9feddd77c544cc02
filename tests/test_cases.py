"""The cases of ../shared/cases that this version covers, through the library and the CLI (see also tests/test_cli.py)."""
import json
import numpy as np
import pytest
from setree.build import build_tree
from setree.cover import retrieve
from setree.core import check_tree, count_tokens
from setree.embed import get_embedder
from setree.store import Store, tree_diff

from conftest import run_setree as cli

C03 = ["the user compiles C++ with clang", "the user configures builds with CMake", "the user profiles code with perf",
       "the user grows tomatoes in raised beds", "the user prunes the roses in March", "the user composts garden waste",
       "the user's lucky number is 7"]

def all_facts_once(cover, facts):
    shown = [it.text for it in cover.items if it.kind == "fact"]
    return sorted(shown) == sorted(facts)

def test_c01_empty_knowledge_base(tmp_path):
    tree = build_tree([], embedder=get_embedder("hashing"))
    with Store(tmp_path / "e.db") as st:
        st.save(tree); s = st.stats(); t = st.load()
    assert (s["facts"], s["nodes"]) == (0, 0)
    c = retrieve(t, "anything", budget=200)
    assert c.status == "empty" and c.items == [] and c.render() == ""
    r = cli("retrieve", "anything", "--db", tmp_path / "e.db", "--budget", 200, "--json")
    assert r.returncode == 0 and json.loads(r.stdout)["status"] == "empty"
    assert json.loads(cli("stats", "--db", tmp_path / "e.db", "--json").stdout)["facts"] == 0
    blank = tmp_path / "blank.txt"; blank.write_text("   \n\t\n")
    b = cli("build", blank, "--db", tmp_path / "b.db")
    assert b.returncode == 2 and "no facts" in b.stderr and "Traceback" not in b.stderr
    with pytest.raises(ValueError, match="blank"): build_tree(["", "  "], embedder=get_embedder("hashing"))

@pytest.mark.parametrize("n", [1, 2, 3])
def test_c02_tiny_knowledge_bases(n):
    facts = ["the user writes C++20", "the user prefers dark mode", "the user lives near a lake"][:n]
    for emb in (get_embedder("hashing"), get_embedder()):
        tree = build_tree(facts, embedder=emb, progress=False); check_tree(tree)
        c = retrieve(tree, "editor theme", budget=1000, embedder=emb)
        assert c.status == "ok" and all_facts_once(c, facts)

def test_c03_disconnected_graph(tmp_path):
    from setree.build import Config
    emb = get_embedder()
    for cfg in (Config(), Config(k_max=1)):          # k=1 leaves components that share no edge
        tree = build_tree(C03, embedder=emb, config=cfg, progress=False); check_tree(tree)
        assert tree.n_facts == 7 and tree.count[tree.root] == 7
        assert all_facts_once(retrieve(tree, "lucky number", budget=10**6), C03)
    # a graph with no edges at all: orthogonal vectors (every similarity 0)
    from setree.cluster import cluster_hierarchy
    h = cluster_hierarchy(np.eye(7, 16, dtype=np.float32), count_tokens(C03))
    assert h.parent[-1] == -1 and (h.parent[:7] >= 7).all()
    f = tmp_path / "c03.txt"; f.write_text("\n".join(C03) + "\n")
    assert cli("build", f, "--db", tmp_path / "c03.db", "--quiet").returncode == 0
    res = json.loads(cli("retrieve", "lucky number", "--db", tmp_path / "c03.db", "--budget", 100000, "--json").stdout)
    assert sorted(i["text"] for i in res["items"] if i["kind"] == "fact") == sorted(C03)

def test_c05_deterministic_across_processes(tmp_path):
    rng = np.random.default_rng(5)
    topics = ["writes C++ code", "grows vegetables", "travels by train", "plays the piano", "bakes bread"]
    facts = [f"the user {t} (note {i})" for i, t in enumerate(rng.choice(topics, 40))]
    f = tmp_path / "f.txt"; f.write_text("\n".join(facts) + "\n")
    outs = []
    for k, seed in enumerate(("1", "12345")):
        db = tmp_path / f"k{k}.db"
        assert cli("build", f, "--db", db, "--quiet", "--embedder", "hashing", env={"PYTHONHASHSEED": seed}, fresh=True).returncode == 0
        outs.append(cli("retrieve", "what language does the user write", "--db", db, "--budget", 150, env={"PYTHONHASHSEED": seed}, fresh=True).stdout)
    assert outs[0] == outs[1] and outs[0].strip()
    with Store(tmp_path / "k0.db") as a, Store(tmp_path / "k1.db") as b:
        assert tree_diff(a.load(), b.load()) == []
        assert a.stats()["seed"] == 0
    assert "seed: 0" in cli("stats", "--db", tmp_path / "k0.db").stdout

def test_c13_c15_c16_through_library():
    from setree.cover import check_budget
    facts = ["the user writes C++20", "the user prefers dark mode", "the user lives near a lake"]
    tree = build_tree(facts, embedder=get_embedder("hashing"))
    small = retrieve(tree, "dark mode", budget=1)
    assert small.status == "budget_too_small" and small.items == [] and small.min_budget > 1
    assert retrieve(tree, "dark mode", budget=small.min_budget).status == "ok"
    assert retrieve(tree, "dark mode", budget=small.min_budget - 1).status == "budget_too_small"
    for bad in (0, -5, 12.5, "300", True, None, float("nan"), 300.0):
        with pytest.raises((TypeError, ValueError)): check_budget(bad)
    for huge in (10**9, 2**63, 10**30):
        c = retrieve(tree, "x", budget=huge)
        assert c.status == "ok" and all_facts_once(c, facts) and all(i.kind == "fact" for i in c.items)
        assert count_tokens(c.render()) == c.total_tokens
