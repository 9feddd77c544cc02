"""Small notebook helpers for authoring (Quarto and Jupyter are not available on every machine).

    python tools/nb.py from-py SRC.py DST.ipynb   # percent-format script -> notebook
    python tools/nb.py run NB.ipynb [NB ...]       # execute in place, keep outputs (execnb)
    python tools/nb.py run-fast NB.ipynb [NB ...]  # the same, but `#| slow` cells keep their saved outputs unexecuted
    python tools/nb.py to-py NB.ipynb DST.py       # notebook -> percent-format script
    python tools/nb.py sync SRC.py NB.ipynb        # like from-py, but cells whose source is unchanged keep their ids and outputs

Percent format: a line `# %%` starts a code cell, `# %% [markdown]` a markdown cell
whose lines carry a leading `# ` that is stripped.
"""
import json, sys
from pathlib import Path

def _cell(kind, lines):
    while lines and not lines[-1].strip(): lines.pop()
    while lines and not lines[0].strip(): lines.pop(0)
    src = "\n".join(lines).splitlines(keepends=True)   # a list of lines, as Jupyter writes it
    if kind == "markdown":
        return {"cell_type": "markdown", "metadata": {}, "source": src}
    return {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [], "source": src}

def from_py(src, dst):
    cells, kind, buf = [], None, []
    for line in Path(src).read_text().splitlines():
        if line.startswith("# %%"):
            if kind is not None and any(l.strip() for l in buf): cells.append(_cell(kind, buf))
            kind, buf = ("markdown" if "[markdown]" in line else "code"), []
            continue
        if kind == "markdown":
            line = line[2:] if line.startswith("# ") else line.lstrip("#")
        buf.append(line)
    if kind is not None and any(l.strip() for l in buf): cells.append(_cell(kind, buf))
    nb = {"cells": cells, "metadata": {"kernelspec": {"display_name": "python3", "language": "python", "name": "python3"}},
          "nbformat": 4, "nbformat_minor": 5}
    Path(dst).write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n")

def sync(src, dst):
    old = json.loads(Path(dst).read_text()) if Path(dst).exists() else {"cells": []}
    src_of = lambda c: "".join(c["source"]) if isinstance(c["source"], list) else c["source"]
    kept = {(c["cell_type"], src_of(c)): c for c in old["cells"]}
    from_py(src, dst)
    nb = json.loads(Path(dst).read_text())
    for c in nb["cells"]:
        o = kept.get((c["cell_type"], src_of(c)))
        if o is None: continue
        if "id" in o: c["id"] = o["id"]
        if c["cell_type"] == "code": c["outputs"], c["execution_count"] = o.get("outputs", []), o.get("execution_count")
    Path(dst).write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n")

def to_py(src, dst):
    nb = json.loads(Path(src).read_text())
    out = []
    for c in nb["cells"]:
        s = "".join(c["source"]) if isinstance(c["source"], list) else c["source"]
        if c["cell_type"] == "markdown":
            out.append("# %% [markdown]"); out += [("# " + l) if l else "#" for l in s.splitlines()]
        else:
            out.append("# %%"); out += s.splitlines()
        out.append("")
    Path(dst).write_text("\n".join(out))

def run(path, skip_slow=False):
    import os
    from execnb.nbio import read_nb, write_nb
    from execnb.shell import CaptureShell
    path = Path(path).resolve()
    os.chdir(path.parent)
    nb = read_nb(path)
    slow = lambda cell: skip_slow and "#| slow" in cell.source   # True: the cell is not run (execnb keeps its outputs)
    CaptureShell(path=path.parent).run_all(nb, exc_stop=True, preproc=slow)
    write_nb(nb, path)

if __name__ == "__main__":
    cmd, *args = sys.argv[1:]
    if cmd == "from-py": from_py(*args)
    elif cmd == "to-py": to_py(*args)
    elif cmd == "sync": sync(*args)
    elif cmd in ("run", "run-fast"):
        for a in [Path(a).resolve() for a in args]: run(a, skip_slow=cmd == "run-fast")
    else: sys.exit(__doc__)
