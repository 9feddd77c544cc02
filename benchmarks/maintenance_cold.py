"""A single-fact `setree insert` as a new process (the CLI: imports, store load, the pass, the commit) on a copy of a stored knowledge
base, on one core: what a user of the command line waits for. Checkouts are measured interleaved in one run, each on its own copy.

usage: python benchmarks/maintenance_cold.py STORE ROUNDS LABEL=CHECKOUT [LABEL=CHECKOUT ...] [--out FILE]
  STORE     a knowledge base (e.g. the 50,000-fact store of maintenance_speed.py); only copied
  ROUNDS    measured rounds; one more round first, not counted (it may write what later rounds read, e.g. the stored phrase counts)
  CHECKOUT  a directory put first on PYTHONPATH (a checkout of setree)
Prints and (with --out) writes one JSON object: per label the wall and CPU seconds (user + system, of the child process) of every
round, their P50, and the pass seconds the command reported."""
import argparse, json, os, re, resource, sqlite3, subprocess, sys, tempfile, time
from pathlib import Path
import numpy as np

def copy_store(src:Path, dst:Path):
    "A consistent copy of a store (SQLite's backup: the -wal content included)."
    s0, d0 = sqlite3.connect(f"file:{src}?mode=ro", uri=True), sqlite3.connect(dst); s0.backup(d0); s0.close(); d0.close()

def one_insert(checkout:str, db:Path, text:str)->dict:
    "Run `setree insert - --db DB` with `text` on stdin in a new process pinned to one core; its wall and CPU seconds."
    env = {**os.environ, "PYTHONPATH": checkout, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    cmd = ["taskset", "-c", "1", sys.executable, "-c", "import sys; from setree.cli import main; sys.exit(main())", "insert", "-", "--db", str(db)]
    r0, t0 = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
    p = subprocess.run(cmd, input=text + "\n", capture_output=True, text=True, env=env)
    wall, r1 = time.perf_counter() - t0, resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode: raise SystemExit(f"{checkout}: insert failed ({p.returncode}): {p.stderr[-500:]}")
    m = re.search(r"in ([0-9.]+) s", p.stdout + p.stderr)
    return dict(wall_s=round(wall, 3), cpu_s=round(r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime, 3), pass_s=float(m.group(1)) if m else None)

def main():
    ap = argparse.ArgumentParser(); ap.add_argument("store"); ap.add_argument("rounds", type=int); ap.add_argument("checkouts", nargs="+")
    ap.add_argument("--out"); a = ap.parse_args()
    runs = dict(c.split("=", 1) for c in a.checkouts)
    work = Path(tempfile.mkdtemp(prefix="setree-cold-"))
    dbs = {k: work / f"{k}.db" for k in runs}
    for k in runs: copy_store(Path(a.store), dbs[k])
    res = {k: [] for k in runs}
    for i in range(a.rounds + 1):
        for k, c in runs.items():
            r = one_insert(c, dbs[k], f"the user bought a red bicycle, number {i}, in the {k} run")
            if i: res[k].append(r)
    out = dict(store=a.store, rounds=a.rounds, load=os.getloadavg(), utc=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
               runs={k: dict(checkout=runs[k], rows=v, **{f"{m}_p50": float(np.median([r[m] for r in v])) for m in ("wall_s", "cpu_s", "pass_s")})
                     for k, v in res.items()})
    print(json.dumps(out, indent=1))
    if a.out: Path(a.out).write_text(json.dumps(out, indent=1))
    for p in work.iterdir(): p.unlink()
    work.rmdir()

if __name__ == "__main__": main()
