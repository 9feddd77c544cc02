"""Write README.md from nbs/index.ipynb (Quarto, and so `nbdev_readme`, is not available everywhere).

    python tools/make_readme.py          # write README.md
    python tools/make_readme.py --check  # exit 1 when README.md differs from what the notebook gives

Markdown cells are copied (links to notebooks made relative to the repository root); the first cell's `# title` and `> description` become the heading;
code cells (unless `#| hide`) become fenced Python blocks followed by their text output.
"""
import json, re, sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

_LINK = re.compile(r"\]\((?!https?:|#|/)([^)]+\.ipynb)\)")

def _links(md:str)->str:
    "Links to chapters are relative to nbs/ on the docs site; the README sits one folder up."
    return _LINK.sub(lambda m: f"](nbs/{m.group(1)})", md)

def render(nb_path=ROOT / "nbs" / "index.ipynb") -> str:
    nb = json.loads(Path(nb_path).read_text(encoding="utf-8"))
    out = ["<!-- Generated from nbs/index.ipynb by tools/make_readme.py: edit the notebook, not this file. -->", ""]
    for cell in nb["cells"]:
        src = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
        if cell["cell_type"] == "markdown":
            out += [_links(src.rstrip()), ""]
        elif cell["cell_type"] == "code":
            lines = src.splitlines()
            if any(l.strip().startswith("#| hide") for l in lines): continue
            code = "\n".join(l for l in lines if not l.startswith("#|")).strip()
            if code: out += ["```python", code, "```", ""]
            text = "".join("".join(o.get("text", "")) for o in cell.get("outputs", []) if o.get("output_type") == "stream")
            if text.strip(): out += ["```", text.rstrip(), "```", ""]
    return "\n".join(out).rstrip() + "\n"

if __name__ == "__main__":
    text, readme = render(), ROOT / "README.md"
    if "--check" in sys.argv:
        if not readme.exists() or readme.read_text(encoding="utf-8") != text:
            sys.exit("README.md is out of date: run python tools/make_readme.py")
    else:
        readme.write_text(text, encoding="utf-8")
