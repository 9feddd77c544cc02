"""List every public function and method of the library that has no entry in the processed docs (`_proc/`).

    python -c "from nbdev.serve import proc_nbs; proc_nbs()"     # first: process the docs sources into _proc/
    python tools/doc_coverage.py                                  # every module: list what is missing
    python tools/doc_coverage.py core embed cluster               # only these modules
    python tools/doc_coverage.py --strict                         # every module; exit 1 when something is missing (CI)

An entry is a `show_doc(...)` call in a processed notebook (nbdev adds one for every exported function and class, and for
every method attached with `setree.core.patch`; a notebook may also call `show_doc(Cls.method)` itself). Public means: a
module-level function or class defined in that module whose name does not start with `_`, and every function in such a
class's namespace whose name does not start with `_` (methods, classmethods and staticmethods; properties are attributes
and are documented with their class).
"""
import importlib, inspect, json, pkgutil, re, sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHOW = re.compile(r"show_doc\(\s*([A-Za-z_][\w.]*)")

def documented(proc=ROOT / "_proc")->set[str]:
    "Names (`f`, `Cls`, `Cls.method`) that some processed notebook passes to `show_doc`."
    if not proc.is_dir(): sys.exit(f"{proc} is missing: run `python -c \"from nbdev.serve import proc_nbs; proc_nbs()\"` first")
    names = set()
    for nb in proc.rglob("*.ipynb"):
        for c in json.loads(nb.read_text(encoding="utf-8"))["cells"]:
            if c["cell_type"] == "code":
                src = "".join(c["source"]) if isinstance(c["source"], list) else c["source"]
                names.update(SHOW.findall(src))
    return names

def public_api(modname:str)->list[tuple[str, object]]:
    "(qualified name, object) of every public function, class and method defined in `setree.<modname>`."
    mod = importlib.import_module(f"setree.{modname}")
    out = []
    for name, obj in vars(mod).items():
        if name.startswith("_") or getattr(obj, "__module__", None) != mod.__name__: continue
        if inspect.isfunction(obj):
            if "." not in obj.__qualname__: out.append((name, obj))   # a method attached with `patch` is listed with its class
        elif inspect.isclass(obj):
            out.append((name, obj))
            for m, raw in vars(obj).items():
                f = raw.__func__ if isinstance(raw, (classmethod, staticmethod)) else raw
                if not m.startswith("_") and inspect.isfunction(f): out.append((f"{name}.{m}", f))
    return out

def missing(modname:str, names:set[str])->list[str]:
    "Public names of the module without a docs entry (a method patched onto several classes counts once, under its qualname)."
    out = []
    for qual, obj in public_api(modname):
        if qual in names: continue
        if inspect.isfunction(obj) and obj.__qualname__ in names: continue
        out.append(qual)
    return out

if __name__ == "__main__":
    strict = "--strict" in sys.argv
    args = [a for a in sys.argv[1:] if a != "--strict"]
    mods = args or sorted(m.name for m in pkgutil.iter_modules([str(ROOT / "setree")]) if not m.name.startswith("_"))
    names, bad = documented(), 0
    for m in mods:
        miss = missing(m, names)
        total = len(public_api(m))
        print(f"setree.{m}: {total - len(miss)}/{total} documented" + (f"; missing: {', '.join(miss)}" if miss else ""))
        bad += len(miss)
    sys.exit(1 if bad and (strict or args) else 0)
