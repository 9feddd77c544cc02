"""setree.store across processes: a tree saved by one process loads equal in another; a reader process sees the last
committed tree while a writer process holds an open write transaction (WAL)."""
import os, pickle, subprocess, sys, textwrap
from pathlib import Path
import numpy as np
import fastcore.test as ft
from setree.core import Tree, ClusterLevel, as_facts, count_tokens
from setree.embed import get_embedder
from setree.fidelity import finalize
import setree.store as store

TEXTS = ["the user writes C++20", "the user prefers dark mode", "用户喜欢喝绿茶", "ユーザーは猫を飼っている", "🍣🍣🍣",
         "المستخدم يحب القهوة", "naïve café ﬁle", "cafe\u0301 with a combining accent", "the user lives near a lake",
         "the user's sister works at Acme"]

def make_tree(texts=TEXTS, arity=3):
    "Facts in groups of `arity` under summaries (the first child's text), those under one root; hashing embeddings; finalize."
    emb_ = get_embedder("hashing")
    facts = as_facts([{"text": t, "meta": {"i": i, "src": "测试"}} for i, t in enumerate(texts)])
    N = len(facts); groups = [np.arange(s, min(s + arity, N)) for s in range(0, N, arity)]
    G = len(groups); M = N + G + 1
    parent = np.full(M, -1); children = [np.zeros(0, np.int64)] * N
    for g, kids in enumerate(groups): parent[kids] = N + g; children.append(kids)
    parent[N:N + G] = M - 1; children.append(np.arange(N, N + G))
    sums = [texts[k[0]] for k in groups]; all_texts = list(texts) + sums + [sums[0]]
    t = Tree(facts=facts, texts=all_texts, parent=parent, children=children, level=np.r_[np.zeros(N, np.int64), np.ones(G, np.int64), 2],
             tokens=count_tokens(all_texts), emb=emb_.embed(all_texts), summarizer=["fact"] * N + ["extractive"] * (G + 1),
             quotes=[np.array([v]) for v in range(N)] + [k[:1] for k in groups] + [groups[0][:1]],
             truncated=np.zeros(N, bool), config={"seed": 42, "k_max": 2}, embedder_id=emb_.identity)
    finalize(t)
    mem = np.arange(N)
    t.levels = [ClusterLevel(members=mem, centroids=t.emb[:N].copy(), parents=parent[:N], community=parent[:N] - N,
                             knn_idx=np.tile(np.arange(2), (N, 1)), knn_sim=np.full((N, 2), 0.5, np.float32))]
    return t

def run_py(code, env_extra=None, **kw):
    env = {**os.environ, **(env_extra or {})}
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, env=env, timeout=120, **kw)

def test_save_in_one_process_load_in_another(tmp_path):
    t = make_tree()
    (tmp_path / "tree.pkl").write_bytes(pickle.dumps(t))
    db, out = tmp_path / "kb.db", tmp_path / "loaded.pkl"
    r = run_py(f"""
        import pickle; from setree.store import Store
        with Store({str(db)!r}) as s: s.save(pickle.load(open({str(tmp_path / 'tree.pkl')!r}, 'rb')))
        """, {"PYTHONHASHSEED": "1"})
    assert r.returncode == 0, r.stderr
    r = run_py(f"""
        import pickle; from setree.store import Store
        with Store({str(db)!r}, readonly=True) as s: pickle.dump(s.load(), open({str(out)!r}, 'wb')); print(s.stats()['seed'])
        """, {"PYTHONHASHSEED": "2"})
    assert r.returncode == 0, r.stderr
    ft.test_eq(r.stdout.strip(), "42")
    u = pickle.loads(out.read_bytes())
    ft.test_eq(store.tree_diff(t, u), [])
    ft.test_eq([x.encode("utf-8") for x in u.texts], [x.encode("utf-8") for x in t.texts])
    # and this process reads the same tree
    with store.Store(db) as s: ft.test_eq(store.tree_diff(s.load(), t), [])

def test_reader_process_sees_old_tree_during_write(tmp_path):
    db = tmp_path / "kb.db"
    old, new = make_tree(), make_tree(TEXTS[::-1] + ["one more fact"])
    with store.Store(db) as s: s.save(old)
    (tmp_path / "new.pkl").write_bytes(pickle.dumps(new))
    writer = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import pickle, sys; import numpy as np; from setree.store import Store, _write_all, _write_meta
        t = pickle.load(open({str(tmp_path / 'new.pkl')!r}, 'rb'))
        s = Store({str(db)!r}); con = s.con
        con.execute("BEGIN IMMEDIATE"); _write_all(con, t, np.arange(t.n_nodes))
        print("in-transaction", flush=True); sys.stdin.readline()
        _write_meta(con, t, np.arange(t.n_nodes)); con.execute("COMMIT")
        print("committed", flush=True); s.close()
        """)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        ft.test_eq(writer.stdout.readline().strip(), "in-transaction")
        with store.Store(db, readonly=True) as r: ft.test_eq(store.tree_diff(r.load(), old), [])   # old tree, no waiting
        with store.Store(db, timeout_s=0.2) as w2:                                                   # a second writer gets a clear, retryable error
            ft.test_fail(lambda: w2.save(old), contains="retry")
        writer.stdin.write("go\n"); writer.stdin.flush()
        ft.test_eq(writer.stdout.readline().strip(), "committed")
        assert writer.wait(60) == 0, writer.stderr.read()
    finally:
        if writer.poll() is None: writer.kill()
    with store.Store(db) as r: ft.test_eq(store.tree_diff(r.load(), new), [])

def test_killed_writer_leaves_previous_tree(tmp_path):
    "C-19: a writer process that dies inside its transaction leaves the previous tree whole."
    db = tmp_path / "kb.db"
    old = make_tree()
    with store.Store(db) as s: s.save(old)
    (tmp_path / "new.pkl").write_bytes(pickle.dumps(make_tree(TEXTS[:4])))
    r = run_py(f"""
        import os, pickle; import setree.store as st; from setree.store import Store
        t = pickle.load(open({str(tmp_path / 'new.pkl')!r}, 'rb'))
        s = Store({str(db)!r})
        def die(con, tree): os._exit(9)   # the process vanishes mid-save (rows written, meta not), no rollback, no cleanup
        st._write_derived = die
        s.save(t)
        """)
    ft.test_eq(r.returncode, 9)
    with store.Store(db) as s:
        ft.test_eq(store.tree_diff(s.load(), old), [])
        ft.test_eq(s.stats()["facts"], len(TEXTS))
