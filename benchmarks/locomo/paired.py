"""Noise level of the cross-validated comparison: setree minus each flat peer, paired per question, on the held-out rows
that calibrate.py wrote (calibration/cv_rows.csv). A paired bootstrap over questions (2,000 resamples, seed 0) gives a 95 %
interval; the per-conversation differences show the spread across conversations; a last table splits the comparison with the hybrid by category.

    python benchmarks/locomo/paired.py   # writes calibration/paired.md and calibration/paired.json"""
import csv, json
from pathlib import Path
import numpy as np

OUT = Path(__file__).parent / "calibration"
PEERS = ("hybrid", "dense", "bm25", "collapsed")
METRICS = (("recall", "evidence recall"), ("answer_recall", "answer-token recall"))

def load():
    rows = {}
    with (OUT / "cv_rows.csv").open() as f:
        for r in csv.DictReader(f):
            rows[r["method"], r["sample_id"], int(r["budget"]), int(r["q"])] = (int(r["category"]), float(r["recall"]), float(r["answer_recall"]))
    return rows

def main():
    rows, rng = load(), np.random.default_rng(0)
    keys = sorted({k[1:] for k in rows if k[0] == "setree"})
    budgets, sids = sorted({k[1] for k in keys}), sorted({k[0] for k in keys})
    res, lines = {}, ["# setree minus each flat peer, paired per question (held-out conversations)", "",
                      "Mean difference in points, 95 % paired-bootstrap interval over questions, and the range of the six per-conversation differences.", ""]
    for col, (m, title) in enumerate(METRICS):
        lines += [f"## {title}", "", "| peer | budget | setree | peer | diff | 95 % CI | per-conversation min / max | setree wins / losses |", "|---|---:|---:|---:|---:|---:|---:|---:|"]
        for peer in PEERS:
            for b in budgets:
                ks = [k for k in keys if k[1] == b and (peer, *k) in rows]
                s = np.array([rows["setree", *k][col + 1] for k in ks]); p = np.array([rows[peer, *k][col + 1] for k in ks])
                ok = ~np.isnan(s) & ~np.isnan(p); d = (s - p)[ok]; sid = np.array([k[0] for k in ks])[ok]
                boot = np.array([d[rng.integers(0, len(d), len(d))].mean() for _ in range(2000)])
                per = [float(d[sid == x].mean()) for x in sids]
                r = {"setree": float(s[ok].mean()), "peer": float(p[ok].mean()), "diff": float(d.mean()), "ci": [float(np.quantile(boot, 0.025)), float(np.quantile(boot, 0.975))],
                     "per_conversation": dict(zip(sids, per)), "wins": int((d > 0).sum()), "losses": int((d < 0).sum())}
                res.setdefault(m, {}).setdefault(peer, {})[b] = r
                lines.append(f"| {peer} | {b} | {r['setree']:.3f} | {r['peer']:.3f} | {100 * r['diff']:+.1f} | [{100 * r['ci'][0]:+.1f}, {100 * r['ci'][1]:+.1f}] | "
                             f"{100 * min(per):+.1f} / {100 * max(per):+.1f} | {r['wins']} / {r['losses']} |")
        lines.append("")
    lines += ["## By category, against the flat hybrid", "", "Categories: 1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop. Mean difference in points, 95 % paired-bootstrap interval.", "",
              "| metric | budget | category | n | setree | hybrid | diff | 95 % CI |", "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for col, (m, title) in enumerate(METRICS):
        for b in budgets:
            for cat in (1, 2, 3, 4):
                ks = [k for k in keys if k[1] == b and rows["setree", *k][0] == cat and ("hybrid", *k) in rows]
                s = np.array([rows["setree", *k][col + 1] for k in ks]); p = np.array([rows["hybrid", *k][col + 1] for k in ks])
                ok = ~np.isnan(s) & ~np.isnan(p); d = (s - p)[ok]
                boot = np.array([d[rng.integers(0, len(d), len(d))].mean() for _ in range(2000)])
                r = {"n": int(ok.sum()), "setree": float(s[ok].mean()), "hybrid": float(p[ok].mean()), "diff": float(d.mean()),
                     "ci": [float(np.quantile(boot, 0.025)), float(np.quantile(boot, 0.975))]}
                res.setdefault("by_category", {}).setdefault(m, {}).setdefault(str(b), {})[str(cat)] = r
                lines.append(f"| {title} | {b} | {cat} | {r['n']} | {r['setree']:.3f} | {r['hybrid']:.3f} | {100 * r['diff']:+.1f} | [{100 * r['ci'][0]:+.1f}, {100 * r['ci'][1]:+.1f}] |")
    lines.append("")
    (OUT / "paired.md").write_text("\n".join(lines) + "\n"); (OUT / "paired.json").write_text(json.dumps(res, indent=1))
    print("\n".join(lines))

if __name__ == "__main__": main()
