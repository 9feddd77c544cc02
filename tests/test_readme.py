"Every relative link of README.md and of nbs/index.ipynb (its source) names a file that exists, and README.md is the notebook's current rendering."
import json, re, sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
_LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")   # [text](target) and ![alt](target)

def relative_links(md:str)->list[str]:
    "The link targets of a markdown text that point into the repository (no scheme, no pure #anchor), without their #anchor."
    return [t.split("#", 1)[0] for t in _LINK.findall(md) if not re.match(r"[a-z][a-z0-9+.-]*:|#", t)]

def missing(md:str, base:Path)->list[str]: return [t for t in relative_links(md) if not (base / t).exists()]

def test_relative_links_are_found_by_the_regex():
    md = "[a](nbs/x.ipynb) [b](https://e.org/y) [c](#sec) ![d](img.png) [e](nbs/y.ipynb#part) `[f1]`"
    assert relative_links(md) == ["nbs/x.ipynb", "img.png", "nbs/y.ipynb"]
    assert missing("[gone](nbs/nbs/reports/09_eval.ipynb)", ROOT) == ["nbs/nbs/reports/09_eval.ipynb"]

def test_readme_links_exist():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(relative_links(readme)) > 10
    assert missing(readme, ROOT) == []

def test_index_notebook_links_exist_relative_to_nbs():
    nb = json.loads((ROOT / "nbs" / "index.ipynb").read_text(encoding="utf-8"))
    md = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")
    assert missing(md, ROOT / "nbs") == []

def test_readme_is_the_notebooks_rendering():
    sys.path.insert(0, str(ROOT / "tools"))
    try: import make_readme
    finally: sys.path.pop(0)
    assert make_readme.render() == (ROOT / "README.md").read_text(encoding="utf-8"), "README.md is out of date: run python tools/make_readme.py"
