"""The scaling ladder of setree: build time per stage, store size, open time, query latency percentiles against flat
top-k, peak memory and the cost of the exact kNN, from 100 to 50,000 facts.

    python benchmarks/ladder.py --out-dir benchmarks            # the whole ladder (15-25 minutes; writes ladder.*)
    python benchmarks/ladder.py --sizes 100,1000 --out-dir /tmp/l

Each size runs in a fresh subprocess of this script (`--one N`) with BLAS pinned to one thread. The report
nbs/reports/10_bench.ipynb explains the method and shows the committed results; it imports this file.
"""

from __future__ import annotations
import argparse, csv, datetime, gc, json, os, platform, resource, subprocess, sys, tempfile, time
from itertools import islice
from pathlib import Path
import numpy as np


SIZES = (100, 1000, 5000, 10000, 50000)   # facts per rung of the ladder
BUDGETS = (512, 2048)                     # tokens per query
PROMPT_OFFSET = 60_000                    # prompts are corpus lines from here on: never in a knowledge base of <= 60,000 facts
KNN_LIMIT_S = 60.0                        # seconds: the exact kNN is "too slow" beyond this (an ANN index would be needed)
THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")

def corpus_lines(path:str|Path, # a UTF-8 text file, one sentence per line
                 n:int, # lines wanted
                 start:int=0, # first line, 0-based
                )->list[str]: # n lines without their newline
    "Lines `start..start+n-1` of a text file. Raises `ValueError` when the file has fewer lines or one of them is blank."
    if n < 0 or start < 0: raise ValueError(f"n and start must be >= 0, got n={n}, start={start}")
    with open(path, encoding="utf-8") as f: out = [l.rstrip("\n") for l in islice(f, start, start + n)]
    if len(out) < n: raise ValueError(f"{path} has {start + len(out)} lines; lines {start}..{start + n - 1} are needed")
    blank = [start + i for i, l in enumerate(out) if not l.strip()]
    if blank: raise ValueError(f"{path}: blank line(s) at {blank[:10]} (0-based)")
    return out

def default_corpus()->Path|None:
    "`shared/data/corpus/sentences.txt` if present (see `setree.datasets.shared_data`), else None."
    from setree.datasets import shared_data
    return shared_data("corpus", "sentences.txt")

def single_thread_env(base:dict|None=None # environment to copy (default `os.environ`)
                     )->dict: # a copy with OMP/OpenBLAS/MKL pinned to one thread
    "Environment for a benchmark child: numpy's BLAS on one thread (set before the child imports numpy). `OPENBLAS_CORETYPE` is left as it is."
    env = dict(os.environ if base is None else base)
    env.update({k: "1" for k in THREAD_VARS})
    return env

def percentiles(seconds, # latencies in seconds, any 1-d sequence, not empty
               )->dict: # {'p50', 'p95', 'p99'} in milliseconds
    "P50/P95/P99 in ms (numpy linear interpolation). Raises `ValueError` for no latencies or a negative one."
    a = np.asarray(seconds, np.float64).ravel()
    if a.size == 0: raise ValueError("no latencies to summarize")
    if not np.isfinite(a).all() or (a < 0).any(): raise ValueError("latencies must be finite and >= 0")
    return dict(zip(("p50", "p95", "p99"), (1000 * np.percentile(a, [50, 95, 99])).tolist()))

def flat_topk(tree, # a finalized tree (its facts' vectors tree.emb[:N] are the flat index)
              q:np.ndarray, # prompt embedding (d,), unit norm
              budget:int, # tokens
             )->list[int]: # fact node numbers taken, best first
    "Flat dense top-k to a token budget: <e_i, q> for all facts, argpartition the best min(N, budget), sort them, `fill_budget`."
    from setree.cover import fill_budget
    N = tree.n_facts
    if N == 0: return []
    s = tree.emb[:N] @ q
    k = min(N, int(budget))        # a rendered line costs >= 1 token: at most `budget` facts can fit
    top = np.argpartition(-s, k - 1)[:k] if k < N else np.arange(N)
    return fill_budget(tree, top[np.argsort(-s[top], kind="stable")], budget)

def fit_growth(n, # sizes (facts)
               t, # seconds at those sizes, > 0
               limit_s:float=KNN_LIMIT_S, # the time limit to solve for
               min_n:int=1000, # only sizes >= min_n enter the fit (need >= 2 of them)
              )->dict: # exponent b, coefficient c (seconds at n = 1), n_at_limit
    "Fit t = c n^b on a log-log scale and solve c n^b = limit_s. Raises `ValueError` with fewer than two usable points."
    n, t = np.asarray(n, np.float64), np.asarray(t, np.float64)
    use = (n >= min_n) & (t > 0)
    if use.sum() < 2: raise ValueError(f"need >= 2 sizes >= {min_n} with positive times to fit a growth law, got {int(use.sum())}")
    b, logc = np.polyfit(np.log(n[use]), np.log(t[use]), 1)
    return {"exponent": float(b), "coef": float(np.exp(logc)), "limit_s": float(limit_s), "min_n": int(min_n),
            "n_at_limit": float(np.exp((np.log(limit_s) - logc) / b)) if b > 0 else float("inf")}

def _rss_mib()->float:
    r = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss    # KiB on Linux, bytes on macOS
    return r / (1 << 20) if sys.platform == "darwin" else r / 1024

def _load()->float: return round(os.getloadavg()[0], 2)

class _KnnTimer:
    "Wrap `setree.cluster.knn` with a timer while in the `with` block: `calls` = [(n, seconds), ...] in call order."
    def __enter__(self):
        import setree.cluster as cl
        self._cl, self._orig, self.calls = cl, cl.knn, []
        def timed(X, k, *a, **kw):
            t0 = time.perf_counter(); out = self._orig(X, k, *a, **kw)
            self.calls.append((len(X), time.perf_counter() - t0)); return out
        cl.knn = timed
        return self
    def __exit__(self, *exc): self._cl.knn = self._orig

def measure_size(n:int, # facts: the first n lines of the corpus
                 corpus:str|Path, # the corpus file (one fact per line)
                 prompts:int=200, # prompts timed per budget
                 budgets=BUDGETS, # token budgets
                 embedder:str="minilm", # "minilm" or "hashing" (fast tests)
                 prompt_offset:int=PROMPT_OFFSET, # first prompt line (0-based); must be >= n
                 workdir:str|Path|None=None, # where the temporary store lives (default: the system temp dir)
                )->dict: # one row: see the notebook text for every field
    "Build, save, open and query a knowledge base of `n` corpus lines in this process; time everything. Raises `ValueError` for bad sizes."
    from setree.build import build_tree, tree_shape
    from setree.cover import check_budget, retrieve
    from setree.embed import get_embedder
    from setree.store import Store
    from setree.summarize import ExtractiveSummarizer
    if n < 1 or prompts < 1: raise ValueError(f"n and prompts must be >= 1, got n={n}, prompts={prompts}")
    if prompt_offset < n: raise ValueError(f"prompt_offset={prompt_offset} < n={n}: the prompts would be facts of the knowledge base")
    budgets = [check_budget(b) for b in budgets]
    if not budgets: raise ValueError("no budgets given")
    facts, qs = corpus_lines(corpus, n), corpus_lines(corpus, prompts, prompt_offset)
    emb = get_embedder(embedder)
    row = {"n": n, "prompts": prompts, "embedder": embedder, "load_start": _load()}
    # 1. build
    timings = {}
    with _KnnTimer() as kt:
        t0 = time.perf_counter()
        tree = build_tree(facts, emb, ExtractiveSummarizer(), None, progress=False, timings=timings)
        row["build_wall_s"] = time.perf_counter() - t0
    shape = tree_shape(tree)
    row.update(nodes=shape["nodes"], depth=shape["depth"])
    for st in ("embed", "cluster", "summarize", "fidelity"): row[f"{st}_s"] = timings.get(st, 0.0)
    row["build_s"] = sum(row[f"{st}_s"] for st in ("embed", "cluster", "summarize", "fidelity"))
    row["knn_s"] = kt.calls[0][1] if kt.calls and kt.calls[0][0] == n else 0.0
    row["knn_all_s"] = sum(s for _, s in kt.calls)
    with tempfile.TemporaryDirectory(dir=workdir, prefix="setree-bench-") as d:
        path = Path(d) / "kb.setree"
        # 2. save
        t0 = time.perf_counter()
        st = Store(path); st.save(tree); st.close()
        row["save_s"] = time.perf_counter() - t0
        del tree; gc.collect()
        # 3. open
        t0 = time.perf_counter()
        st = Store(path); tree = st.load()
        row["open_s"] = time.perf_counter() - t0
        # 4. first query
        t0 = time.perf_counter(); retrieve(tree, qs[0], budgets[0], embedder=emb)
        row["first_query_ms"] = 1000 * (time.perf_counter() - t0)
        row["store_bytes"] = st.stats()["size_bytes"]
        st.close()
        # 5. latency: the prompt embedding alone, then SETree and flat interleaved
        el = []
        for p in qs:
            t0 = time.perf_counter(); emb.embed_query(p); el.append(time.perf_counter() - t0)
        row["embed_p50_ms"] = percentiles(el)["p50"]
        for b in budgets:
            ls, lf, used = [], [], []
            for p in qs:
                t0 = time.perf_counter(); cov = retrieve(tree, p, b, embedder=emb); t1 = time.perf_counter()
                flat_topk(tree, emb.embed_query(p), b); t2 = time.perf_counter()
                ls.append(t1 - t0); lf.append(t2 - t1); used.append(cov.total_tokens)
                if cov.status != "ok": raise RuntimeError(f"n={n}, budget={b}: retrieve returned status {cov.status!r}")
            for name, lat in (("setree", ls), ("flat", lf)):
                for k, v in percentiles(lat).items(): row[f"{name}_{k}_ms_b{b}"] = v
            row[f"ratio_p50_b{b}"] = row[f"setree_p50_ms_b{b}"] / row[f"flat_p50_ms_b{b}"]
            row[f"cover_tokens_b{b}"] = float(np.mean(used))
    row["peak_rss_mib"] = _rss_mib()
    row["load_end"] = _load()
    return row

def machine_info()->dict:
    "Cores, CPU model (/proc/cpuinfo), memory, Python/numpy/onnxruntime versions, OS, UTC date, load average."
    cpu, mem = platform.processor() or "unknown", None
    try:
        cpu = next(l.split(":", 1)[1].strip() for l in Path("/proc/cpuinfo").read_text().splitlines() if l.startswith("model name"))
        mem = int(next(l.split()[1] for l in Path("/proc/meminfo").read_text().splitlines() if l.startswith("MemTotal"))) // 1024
    except (OSError, StopIteration): pass
    try: import onnxruntime; ort = onnxruntime.__version__
    except ImportError: ort = "absent"
    return {"cores": os.cpu_count(), "cpu": cpu, "mem_mib": mem, "python": platform.python_version(), "numpy": np.__version__,
            "onnxruntime": ort, "os": platform.platform(), "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "loadavg": [round(x, 2) for x in os.getloadavg()]}

def run_size(n:int, # facts
             corpus:str|Path, # corpus file
             prompts:int=200, budgets=BUDGETS, embedder:str="minilm", prompt_offset:int=PROMPT_OFFSET,
             timeout_s:float|None=None, # kill the child after this many seconds (None: no limit)
            )->dict: # the row measured by the child
    "`measure_size` in a fresh subprocess (`python benchmarks/ladder.py --one n`) with BLAS pinned to one thread. Raises `RuntimeError` if it fails."
    with tempfile.TemporaryDirectory(prefix="setree-bench-") as d:
        out = Path(d) / "row.json"
        cmd = [sys.executable, str(Path(__file__).resolve()), "--one", str(n), "--corpus", str(corpus), "--prompts", str(prompts),
               "--budgets", *map(str, budgets), "--embedder", embedder, "--prompt-offset", str(prompt_offset), "--row-json", str(out)]
        r = subprocess.run(cmd, env=single_thread_env(), capture_output=True, text=True, timeout=timeout_s)
        if r.returncode != 0 or not out.exists():
            raise RuntimeError(f"benchmark child for n={n} failed (exit {r.returncode}): {r.stderr.strip()[-2000:]}")
        return json.loads(out.read_text())

def run_ladder(sizes=SIZES, # facts per rung, increasing
               corpus:str|Path|None=None, # corpus file; default `shared/data/corpus/sentences.txt`
               out_dir:str|Path|None="benchmarks", # where ladder.{csv,json,md,png} go; None: write nothing
               prompts:int=200, # prompts timed per budget and size
               budgets=BUDGETS, # token budgets
               embedder:str="minilm", # "minilm" or "hashing"
               prompt_offset:int=PROMPT_OFFSET, # first prompt line (0-based), >= max(sizes)
               knn_limit_s:float=KNN_LIMIT_S, # time limit for the kNN extrapolation
               log=sys.stderr, # progress lines go here (None: silent)
              )->list[dict]: # one row per size
    "Run the scaling ladder, one subprocess per size, and write the results after each size. Returns [] (with a message) without a corpus."
    sizes = [int(s) for s in sizes]
    if not sizes or any(s < 1 for s in sizes): raise ValueError(f"sizes must be positive integers, got {sizes}")
    if max(sizes) > prompt_offset: raise ValueError(f"the largest size {max(sizes)} exceeds prompt_offset={prompt_offset}: prompts would be facts")
    corpus = corpus or default_corpus()
    if corpus is None or not Path(corpus).is_file():
        print(f"ladder: skipped, the scaling corpus is absent ({corpus or 'shared/data/corpus/sentences.txt'})", file=log or sys.stderr)
        return []
    corpus_lines(corpus, prompts, prompt_offset)   # fail now, not after an hour, if the corpus is too short
    machine, rows = machine_info(), []
    for n in sizes:
        if log: print(f"ladder: n={n} … (load {_load()})", file=log, flush=True)
        rows.append(run_size(n, corpus, prompts, budgets, embedder, prompt_offset))
        r = rows[-1]
        if log: print(f"ladder: n={n}: build {r['build_s']:.1f} s, P50/P99 at {budgets[-1]} tokens "
                      f"{r[f'setree_p50_ms_b{budgets[-1]}']:.1f}/{r[f'setree_p99_ms_b{budgets[-1]}']:.1f} ms, peak {r['peak_rss_mib']:.0f} MiB", file=log, flush=True)
        if out_dir is not None: write_results(rows, out_dir, machine, budgets, knn_limit_s)
    return rows

def time_knn(sizes=(5000, 10000, 20000, 50000), # numbers of vectors
             dim:int=384, # dimension d
             k:int|None=None, # neighbours (default `setree.cluster.K_MAX`)
             seed:int=0, # seed of the random unit vectors
            )->list[dict]: # [{'n', 'knn_s', 'load'}] in this process (pin BLAS yourself, or use `run_knn`)
    "Seconds of one exact `setree.cluster.knn` call on n random unit vectors of dimension `dim`, per size."
    from setree.cluster import K_MAX, knn
    rng, out = np.random.default_rng(seed), []
    for n in sizes:
        X = rng.standard_normal((int(n), dim), dtype=np.float32); X /= np.linalg.norm(X, axis=1, keepdims=True)
        t0 = time.perf_counter(); knn(X, k or K_MAX); dt = time.perf_counter() - t0
        out.append({"n": int(n), "knn_s": dt, "load": _load()}); del X
    return out

def run_knn(sizes=(5000, 10000, 20000, 50000), # numbers of vectors
            out_dir:str|Path|None="benchmarks", # if it holds ladder.json: stored there as 'knn_random', report re-rendered
           )->list[dict]:
    "`time_knn` in a fresh subprocess with BLAS on one thread."
    cmd = [sys.executable, str(Path(__file__).resolve()), "--knn", *map(str, sizes)]
    r = subprocess.run(cmd, env=single_thread_env(), capture_output=True, text=True)
    if r.returncode != 0: raise RuntimeError(f"kNN timing child failed (exit {r.returncode}): {r.stderr.strip()[-2000:]}")
    rows = json.loads(r.stdout.strip().splitlines()[-1])
    if out_dir is not None and (Path(out_dir) / "ladder.json").exists():
        d = json.loads((Path(out_dir) / "ladder.json").read_text()); d["knn_random"] = rows
        (Path(out_dir) / "ladder.json").write_text(json.dumps(d, indent=1) + "\n")
        rewrite_results(out_dir)
    return rows

TARGET_P50_MS, TARGET_P99_MS = 50.0, 200.0   # query-time targets: per call at 50,000 facts, one core, embedding included

def quadratic_limit(n:int, t:float, limit_s:float=KNN_LIMIT_S)->float:
    "Size at which an O(n^2) step that took `t` s at `n` takes `limit_s`: n sqrt(limit_s / t)."
    return float(n * np.sqrt(limit_s / t))

def local_exponent(rows:list[dict], key:str="knn_s")->float:
    "log-log slope between the two largest sizes of `rows`."
    a, b = sorted(rows, key=lambda r: r["n"])[-2:]
    return float(np.log(b[key] / a[key]) / np.log(b["n"] / a["n"]))

def knn_verdict(rows:list[dict], limit_s:float=KNN_LIMIT_S)->dict|None:
    "The kNN growth fit over the rows (None with fewer than two sizes >= 1,000)."
    try: return fit_growth([r["n"] for r in rows], [r["knn_s"] for r in rows], limit_s)
    except ValueError: return None

def _fmt(x, d=1): return f"{x:,.{d}f}"

def ladder_markdown(rows:list[dict], machine:dict, budgets=BUDGETS, knn_limit_s:float=KNN_LIMIT_S, knn_random:list[dict]|None=None)->str:
    "The results as markdown: machine, build table, query table, kNN fit, the verdicts."
    m = machine
    L = ["# SETree scaling ladder", "",
         f"Machine: {m['cores']} cores, {m['cpu']}, {m.get('mem_mib') or '?'} MiB RAM; Python {m['python']}, numpy {m['numpy']}, "
         f"onnxruntime {m['onnxruntime']}; {m['os']}; {m['date']}; load average at start {m['loadavg']} (shared machine).", "",
         "Facts: the first N lines of `shared/data/corpus/sentences.txt`; prompts: lines 60,000+ (never in a knowledge base). "
         f"Embedder {rows[0]['embedder'] if rows else '?'}, extractive summarizer, default config. One subprocess per size; "
         "BLAS pinned to 1 thread (OMP/OPENBLAS/MKL_NUM_THREADS=1), onnxruntime query session 1 thread, batch session all cores.", "",
         "## Build and store", "",
         "| N | nodes | depth | embed s | cluster s | (exact kNN s) | summarize s | fidelity s | build s | cluster+summ+fid / embed | save s | store MiB | open s | first query ms | peak RSS MiB | load start→end |",
         "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for r in rows:
        rest = r["cluster_s"] + r["summarize_s"] + r["fidelity_s"]
        L.append(f"| {r['n']:,} | {r['nodes']:,} | {r['depth']} | {_fmt(r['embed_s'], 2)} | {_fmt(r['cluster_s'], 2)} | {_fmt(r['knn_s'], 2)} | "
                 f"{_fmt(r['summarize_s'], 2)} | {_fmt(r['fidelity_s'], 2)} | {_fmt(r['build_s'], 2)} | {rest / r['embed_s']:.2f} | {_fmt(r['save_s'], 2)} | "
                 f"{r['store_bytes'] / 2**20:,.2f} | {_fmt(r['open_s'], 2)} | {_fmt(r['first_query_ms'])} | {_fmt(r['peak_rss_mib'], 0)} | {r['load_start']}→{r['load_end']} |")
    L += ["", f"## Query latency (ms, {rows[0]['prompts'] if rows else '?'} prompts per budget, prompt embedding included, one core)", "",
          "| N | embed P50 | " + " | ".join(f"SETree P50/P95/P99 @{b} | flat P50/P95/P99 @{b} | ratio P50 @{b}" for b in budgets) + " |",
          "|---:|---:|" + "---:|---:|---:|" * len(budgets)]
    for r in rows:
        cells = []
        for b in budgets:
            for name in ("setree", "flat"): cells.append("/".join(_fmt(r[f"{name}_{k}_ms_b{b}"]) for k in ("p50", "p95", "p99")))
            cells.append(f"{r[f'ratio_p50_b{b}']:.2f}")
        L.append(f"| {r['n']:,} | {_fmt(r['embed_p50_ms'])} | " + " | ".join(cells) + " |")
    fit = knn_verdict(rows, knn_limit_s)
    L += ["", "## Exact kNN (first clustering level, one BLAS thread)", ""]
    if fit:
        top = max(rows, key=lambda r: r["n"])
        L.append(f"Measured inside the builds (shared machine, see load): fit over N ≥ {fit['min_n']:,}: t ≈ {fit['coef']:.3g} · N^{fit['exponent']:.2f} s, "
                 f"which passes {fit['limit_s']:.0f} s at N ≈ {fit['n_at_limit']:,.0f} facts; the quadratic extrapolation from the largest size "
                 f"(N = {top['n']:,}: {top['knn_s']:.1f} s; t ∝ N² asymptotically) passes it at N ≈ {quadratic_limit(top['n'], top['knn_s'], knn_limit_s):,.0f}. "
                 "Beyond that an approximate (ANN) kNN index would be needed.")
    else: L.append("Too few sizes ≥ 1,000 to fit a growth law.")
    if knn_random:
        fr = fit_growth([r["n"] for r in knn_random], [r["knn_s"] for r in knn_random], knn_limit_s)
        L += ["", "The kNN alone on random unit vectors (d = 384, k = 10; `time_knn`, one BLAS thread, quieter machine): "
              + ", ".join(f"N = {r['n']:,}: {r['knn_s']:.2f} s (load {r['load']})" for r in knn_random) + ".",
              f"Fit over N ≥ {fr['min_n']:,}: t ≈ {fr['coef']:.3g} · N^{fr['exponent']:.2f} s; it passes {fr['limit_s']:.0f} s at "
              f"N ≈ {fr['n_at_limit']:,.0f} facts; the local exponent between the two largest sizes is {local_exponent(knn_random):.2f} "
              f"and the quadratic extrapolation from N = {knn_random[-1]['n']:,} passes {knn_limit_s:.0f} s at N ≈ "
              f"{quadratic_limit(knn_random[-1]['n'], knn_random[-1]['knn_s'], knn_limit_s):,.0f} (the conservative estimate: the fixed and "
              "linear parts that flatten the fit over small sizes fade as N grows). The first clustering level dominates: the higher levels have far fewer members."]
    big = [r for r in rows if r["n"] == 50000]
    L += ["", "## Targets at 50,000 facts", ""]
    if big:
        r = big[0]
        for b in budgets:
            p50, p99 = r[f"setree_p50_ms_b{b}"], r[f"setree_p99_ms_b{b}"]
            L.append(f"- budget {b}: P50 {p50:.1f} ms (target ≤ {TARGET_P50_MS:.0f}: {'met' if p50 <= TARGET_P50_MS else 'NOT met'}), "
                     f"P99 {p99:.1f} ms (target ≤ {TARGET_P99_MS:.0f}: {'met' if p99 <= TARGET_P99_MS else 'NOT met'})")
        rest = r["cluster_s"] + r["summarize_s"] + r["fidelity_s"]
        L.append(f"- build: cluster + summarize + fidelity = {rest:.1f} s vs embed {r['embed_s']:.1f} s "
                 f"(ratio {rest / r['embed_s']:.2f}; target: clearly less, read as <= 0.5): {'met' if rest <= 0.5 * r['embed_s'] else 'NOT met'}")
    else: L.append("- not measured (the ladder did not reach 50,000 facts).")
    return "\n".join(L) + "\n"

def ladder_plot(rows:list[dict], budgets=BUDGETS, path:str|Path|None=None, knn_random:list[dict]|None=None):
    "Two log-log panels: build seconds per stage vs N; query P50/P99 vs N with the targets. Saved to `path` if given; returns the figure."
    import matplotlib.pyplot as plt
    n = np.array([r["n"] for r in rows])
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(13, 4.6), gridspec_kw={"width_ratios": [1, 1.25]})
    for key, style in (("embed_s", "o-"), ("cluster_s", "s-"), ("knn_s", "s:"), ("summarize_s", "^-"), ("fidelity_s", "v-"), ("build_s", "k--")):
        y = np.array([max(r[key], 1e-4) for r in rows])
        a1.loglog(n, y, style, label=key[:-2].replace("knn", "exact kNN (in cluster)").replace("build", "total"))
    if knn_random: a1.loglog([r["n"] for r in knn_random], [r["knn_s"] for r in knn_random], "x:", color="gray", label="exact kNN alone (random vectors)")
    a1.set_xlabel("facts N"); a1.set_ylabel("seconds"); a1.set_title("build time per stage"); a1.legend(fontsize=8); a1.grid(True, which="both", alpha=.3)
    for i, b in enumerate(budgets):
        c = f"C{i}"
        a2.loglog(n, [r[f"setree_p50_ms_b{b}"] for r in rows], "o-", color=c, label=f"SETree P50 @{b}")
        a2.loglog(n, [r[f"setree_p99_ms_b{b}"] for r in rows], "o--", color=c, label=f"SETree P99 @{b}")
        a2.loglog(n, [r[f"flat_p50_ms_b{b}"] for r in rows], "x:", color=c, label=f"flat P50 @{b}")
    a2.loglog(n, [r["embed_p50_ms"] for r in rows], "k.-", alpha=.5, label="prompt embedding P50")
    a2.axhline(TARGET_P50_MS, color="g", lw=.8); a2.axhline(TARGET_P99_MS, color="r", lw=.8)
    a2.text(n[-1], TARGET_P50_MS * 1.05, "P50 target", color="g", fontsize=8, ha="right"); a2.text(n[-1], TARGET_P99_MS * 1.05, "P99 target", color="r", fontsize=8, ha="right")
    a2.set_xlabel("facts N"); a2.set_ylabel("ms per query (1 core, embedding incl.)"); a2.set_title("query latency (shared machine: see load)")
    a2.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1)); a2.grid(True, which="both", alpha=.3)
    fig.tight_layout()
    if path is not None: fig.savefig(path, dpi=110)
    return fig

def write_results(rows:list[dict], # rows of `measure_size`
                  out_dir:str|Path, # created if missing
                  machine:dict|None=None, # `machine_info()` (default: now)
                  budgets=BUDGETS, knn_limit_s:float=KNN_LIMIT_S,
                  knn_random:list[dict]|None=None, # rows of `time_knn`, kept in ladder.json
                 )->Path: # out_dir
    "Write ladder.csv, ladder.json, ladder.md and ladder.png into `out_dir`. Raises `ValueError` for no rows."
    if not rows: raise ValueError("no rows to write")
    out = Path(out_dir); out.mkdir(parents=True, exist_ok=True)
    machine = machine or machine_info()
    cols = list(dict.fromkeys(k for r in rows for k in r))
    with open(out / "ladder.csv", "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, cols); w.writeheader(); w.writerows(rows)
    doc = {"machine": machine, "knn_fit": knn_verdict(rows, knn_limit_s), "rows": rows}
    if knn_random: doc["knn_random"] = knn_random
    (out / "ladder.json").write_text(json.dumps(doc, indent=1) + "\n")
    (out / "ladder.md").write_text(ladder_markdown(rows, machine, budgets, knn_limit_s, knn_random), encoding="utf-8")
    import matplotlib.pyplot as plt
    plt.close(ladder_plot(rows, budgets, out / "ladder.png", knn_random))
    return out

def rewrite_results(out_dir:str|Path="benchmarks", # a folder holding ladder.json
                    budgets=BUDGETS, knn_limit_s:float=KNN_LIMIT_S)->Path:
    "Re-render ladder.csv/.md/.png from `ladder.json` (same rows and machine), e.g. after the report format changed."
    d = json.loads((Path(out_dir) / "ladder.json").read_text())
    return write_results(d["rows"], out_dir, d["machine"], budgets, knn_limit_s, d.get("knn_random"))

def read_results(out_dir:str|Path="benchmarks")->list[dict]:
    "Rows of a committed `ladder.csv`, numbers parsed (int where integral in the file, else float; text stays text)."
    def num(s):
        for t in (int, float):
            try: return t(s)
            except ValueError: pass
        return s
    with open(Path(out_dir) / "ladder.csv", newline="", encoding="utf-8") as f: return [{k: num(v) for k, v in r.items()} for r in csv.DictReader(f)]

def add_bench_args(p:argparse.ArgumentParser # parser (or subcommand parser) to extend
                  )->argparse.ArgumentParser:
    "Define the benchmark's arguments on `p`."
    p.add_argument("--sizes", type=int, nargs="+", default=list(SIZES), help="facts per rung (default: %(default)s)")
    p.add_argument("--corpus", default=None, help="one fact per line (default: shared/data/corpus/sentences.txt)")
    p.add_argument("--out-dir", default="benchmarks", help="where ladder.csv/.json/.md/.png go (default: %(default)s)")
    p.add_argument("--prompts", type=int, default=200, help="prompts timed per budget (default: %(default)s)")
    p.add_argument("--budgets", type=int, nargs="+", default=list(BUDGETS), help="token budgets (default: %(default)s)")
    p.add_argument("--embedder", choices=["minilm", "hashing"], default="minilm")
    p.add_argument("--prompt-offset", type=int, default=PROMPT_OFFSET, help="first prompt line, 0-based (default: %(default)s)")
    p.add_argument("--one", type=int, default=None, help=argparse.SUPPRESS)        # child mode: measure one size in this process
    p.add_argument("--row-json", default=None, help=argparse.SUPPRESS)
    p.add_argument("--knn", type=int, nargs="+", default=None, help=argparse.SUPPRESS)   # child mode: `time_knn` on these sizes
    return p

def cmd_bench(args:argparse.Namespace # parsed by a parser set up with `add_bench_args`
             )->int: # exit code: 0 ok (also when skipped for lack of a corpus), 1 failure
    "Run the ladder (or, with `--one`, one size in this process) from parsed arguments."
    if args.knn is not None: print(json.dumps(time_knn(args.knn))); return 0
    if args.one is not None:
        corpus = args.corpus or default_corpus()
        if corpus is None: print("ladder: the scaling corpus is absent", file=sys.stderr); return 1
        row = measure_size(args.one, corpus, args.prompts, args.budgets, args.embedder, args.prompt_offset)
        text = json.dumps(row)
        if args.row_json: Path(args.row_json).write_text(text)
        else: print(text)
        return 0
    rows = run_ladder(args.sizes, args.corpus, args.out_dir, args.prompts, args.budgets, args.embedder, args.prompt_offset)
    if rows: print(f"wrote {args.out_dir}/ladder.csv, ladder.json, ladder.md, ladder.png ({len(rows)} sizes)")
    return 0

def main(argv:list[str]|None=None # arguments (default: sys.argv[1:])
        )->int:
    "Entry point of `python benchmarks/ladder.py`."
    p = add_bench_args(argparse.ArgumentParser(prog="python benchmarks/ladder.py", description="SETree scaling benchmark"))
    return cmd_bench(p.parse_args(argv))

if __name__ == "__main__":
    sys.exit(main())
