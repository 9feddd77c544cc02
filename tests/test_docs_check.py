"""The docs check (`nbdev.serve.proc_nbs`) executes every notebook cell that imports something: such a cell must hold imports only, or
say why it runs (`#| exec_doc`), else the check warns (and running it may have side effects the docs do not want)."""
import warnings
from pathlib import Path
from execnb.nbio import read_nb
from nbdev.process import NBProcessor
from nbdev.config import get_config
from nbdev.processors import _do_eval, add_show_docs

NBS = Path(__file__).resolve().parents[1] / "nbs"

def notebooks()->list:
    "The notebooks the docs check reads: nbs/*.ipynb, and those in its subfolders when settings.ini says `recursive = True`."
    return sorted(NBS.rglob("*.ipynb") if get_config(path=NBS).recursive else NBS.glob("*.ipynb"))

def test_no_cell_mixes_imports_and_code():
    noisy = []
    for nb in notebooks():
        proc = NBProcessor(nb, add_show_docs, read_nb(nb)); proc.process()
        if not proc.nb.has_docs_: continue      # a notebook without docs entries (a report) is not executed by the check
        for cell in proc.nb.cells:
            with warnings.catch_warnings(record=True) as w:
                warnings.simplefilter("always")
                _do_eval(cell)
            if any("imports and other code" in str(x.message) for x in w): noisy.append(f"{nb.relative_to(NBS)}: {cell.source[:80]!r}")
    assert not noisy, noisy
