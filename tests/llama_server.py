"""Start llama.cpp's OpenAI-compatible server (`python -m llama_cpp.server`, from llama-cpp-python[server]) on a free
loopback port, for the real-LLM tests and the measurement in the chat chapter (not part of the library)."""
from __future__ import annotations
import importlib.util, os, socket, subprocess, sys, tempfile, time
from pathlib import Path

__all__ = ["LlamaServer", "model_for_tests"]

def model_for_tests()->str|None:
    "The GGUF file named by $SETREE_LLM_TEST_MODEL when it exists and llama_cpp is installed, else None."
    m = os.environ.get("SETREE_LLM_TEST_MODEL", "")
    if importlib.util.find_spec("llama_cpp") is None: return None
    return m if m and Path(m).is_file() else None

class LlamaServer:
    "Context manager: the server on 127.0.0.1 at a free port (niced), `url` its base URL; stopped on exit."
    def __init__(self, model:str, n_ctx:int=4096, startup_seconds:float=180.0):
        self.model, self.n_ctx, self.startup_seconds = model, n_ctx, startup_seconds
        self.log = Path(tempfile.mkdtemp(prefix="setree-llama-")) / "server.log"
    def __enter__(self):
        import httpx
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0)); port = s.getsockname()[1]
        with open(self.log, "w") as out:
            self.proc = subprocess.Popen(["nice", "-n", "10", sys.executable, "-m", "llama_cpp.server", "--model", self.model,
                                          "--host", "127.0.0.1", "--port", str(port), "--chat_format", "chatml",
                                          "--n_ctx", str(self.n_ctx), "--verbose", "False"], stdout=out, stderr=subprocess.STDOUT)
        self.url = f"http://127.0.0.1:{port}/v1"
        t_end = time.monotonic() + self.startup_seconds
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"llama server exited ({self.proc.returncode}): {self.log.read_text()[-2000:]}")
            try:
                if httpx.get(self.url + "/models", timeout=2).status_code == 200: return self
            except httpx.HTTPError: pass
            if time.monotonic() > t_end:
                self.__exit__(); raise RuntimeError(f"llama server did not answer within {self.startup_seconds:g} s")
            time.sleep(0.5)
    def __exit__(self, *a):
        self.proc.terminate()
        try: self.proc.wait(20)
        except subprocess.TimeoutExpired: self.proc.kill(); self.proc.wait()
