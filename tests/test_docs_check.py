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

def mixed_cells(with_docs_only:bool)->list:
    "Cells that mix an import with other code (the check's warning), as 'NOTEBOOK: source…'."
    noisy = []
    for nb in notebooks():
        proc = NBProcessor(nb, add_show_docs, read_nb(nb)); proc.process()
        if with_docs_only and not proc.nb.has_docs_: continue
        for cell in proc.nb.cells:
            with warnings.catch_warnings(record=True) as w:
                warnings.simplefilter("always")
                _do_eval(cell)
            if any("imports and other code" in str(x.message) for x in w): noisy.append(f"{nb.relative_to(NBS)}: {cell.source[:80]!r}")
    return noisy

def test_no_cell_mixes_imports_and_code():
    noisy = mixed_cells(with_docs_only=True)   # the check executes these notebooks' import cells: it would warn
    assert not noisy, noisy

def test_reports_keep_imports_apart_too():
    "A report has no docs entries, so the check does not execute it; its imports still stand in cells of their own (one house style)."
    noisy = mixed_cells(with_docs_only=False)
    assert not noisy, noisy
