"""The notebooks of the book clean up after themselves: each, tested by `nbdev_test` with a fresh temporary folder (`$TMPDIR`, which
`tempfile` and every child process use), leaves that folder empty. The ones checked here are the quick ones."""
import os, subprocess, sys
from pathlib import Path
import pytest

NBS = Path(__file__).resolve().parents[1] / "nbs"
NBDEV_TEST = Path(sys.executable).with_name("nbdev_test")

@pytest.mark.parametrize("nb", ["00_core.ipynb", "05_build.ipynb", "08_cli.ipynb", "08b_server.ipynb", "index.ipynb", "reports/09_eval.ipynb"])
def test_notebook_leaves_no_temporary_files(nb, tmp_path):
    fresh = tmp_path / "tmp"; fresh.mkdir()
    p = subprocess.run([str(NBDEV_TEST), "--path", str(NBS / nb)], cwd=tmp_path, capture_output=True, text=True, timeout=900,
                       env={**os.environ, "TMPDIR": str(fresh)})
    assert p.returncode == 0, p.stderr[-3000:]
    left = sorted(p.name for p in fresh.iterdir() if p.name.startswith("tmp"))   # what `tempfile` made (not a library's fixed-name file)
    assert left == [], f"{nb} left {left} in the temporary folder"
