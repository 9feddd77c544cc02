"""What README.md states about the package, checked against the package and the data: the install path installs what the
tour and the library import, the MCP session shows the server's own acknowledgement, and the LoCoMo question count is the
number of questions the quoted scores average over (categories 1-4; skipped when ../shared/data is absent)."""
import ast, configparser, json, re, sys
from importlib.metadata import packages_distributions
from pathlib import Path
import pytest
from setree.datasets import shared_data

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
LOCOMO = shared_data("locomo", "locomo_dev.json")

def _imports(src:str)->set:
    "Top-level modules a Python source imports (absolute imports only)."
    mods = set()
    for node in ast.walk(ast.parse(src)):
        if isinstance(node, ast.Import): mods |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module: mods.add(node.module.split(".")[0])
    return mods

def _notebook_code(path:Path)->str:
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    return "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code" and not "".join(c["source"]).lstrip().startswith(("%", "!")))

def _requirement_names(key:str)->set:
    cfg = configparser.ConfigParser(delimiters=["="]); cfg.read(ROOT / "settings.ini", encoding="utf-8")
    return {re.split(r"[<>=!~\[; ]", r, maxsplit=1)[0].lower().replace("_", "-") for r in cfg["DEFAULT"].get(key, "").split()}

def test_plain_install_covers_the_tour_and_the_library():
    "`pip install -e .` (README's install) installs every third-party package the tour and setree/*.py import (mcp: its own extra)."
    runtime, dists = _requirement_names("requirements"), packages_distributions()
    mods = _imports(_notebook_code(ROOT / "nbs" / "tour.ipynb"))
    for f in (ROOT / "setree").glob("*.py"): mods |= _imports(f.read_text(encoding="utf-8"))
    third = {m for m in mods if m not in sys.stdlib_module_names and m not in ("setree", "__future__", "mcp", "pydantic", "anyio")}
    assert "matplotlib" in third                                          # the tour draws its tree
    missing = {m: dists.get(m) for m in third if not {d.lower().replace("_", "-") for d in dists.get(m, [m])} & runtime}
    assert not missing, f"imported but not in settings.ini requirements: {missing}"

def test_the_dev_extra_covers_the_chapters():
    "README: the chapters need `.[dev]` (fastcore.test, nbdev.showdoc, mcp); every third-party import of nbs/*.ipynb is in requirements + dev."
    assert '`pip install -e ".[dev]"` installs them all' in README and '`pip install -e ".[mcp]"`' in README
    assert "installs everything it and the chapters import" not in README
    have, dists = _requirement_names("requirements") | _requirement_names("dev_requirements") | _requirement_names("mcp_requirements"), packages_distributions()
    mods = set().union(*(_imports(_notebook_code(f)) for f in (ROOT / "nbs").glob("*.ipynb")))
    local = {f.stem for f in (ROOT / "tests").glob("*.py")}             # the chapters' test helpers (stub chat servers) live in tests/
    third = {m for m in mods if m not in sys.stdlib_module_names and m not in {"setree", "__future__", "anyio", "pydantic"} | local}   # mcp installs anyio, pydantic
    assert {"fastcore", "nbdev", "mcp"} <= third, third
    missing = {m: dists.get(m) for m in third if not {d.lower().replace("_", "-") for d in dists.get(m, [m])} & have}
    assert not missing, f"a chapter imports what neither requirements nor the dev extra installs: {missing}"

def test_mcp_session_shows_the_servers_acknowledgement():
    "The session's insert answer is what `setree serve` answers for it (each id once, then when it is visible)."
    from setree.maintain import Ack
    from setree.server import ack_text
    ids = re.search(r"← insert: 4 fact\(s\) ((?:f[0-9a-f]{12} ?){4})", README).group(1).split()
    want = ack_text(Ack(1, "insert", ids))
    block = README[README.index("→ insert {"):README.index("→ maintain {}")]
    got = "\n".join(l[2:] for l in block.splitlines()[1:])
    assert got.strip() == want, (got, want)

@pytest.mark.skipif(LOCOMO is None, reason="../shared/data/locomo/locomo_dev.json is absent")
def test_locomo_question_counts():
    "README's LoCoMo numbers average over the questions of categories 1-4: it names how many there are, and how many in all."
    convs = json.loads(LOCOMO.read_text(encoding="utf-8"))
    cats = [q["category"] for c in convs for q in c["qa"]]
    n14, n = sum(c in (1, 2, 3, 4) for c in cats), len(cats)
    assert f"{len(convs)} development conversations, the {n14:,} questions of categories 1–4 out of {n:,}" in README
    assert f"The {sum(c == 5 for c in cats):,} category-5 (adversarial) questions are scored too and reported apart" in README
