"Integration checks of the chat summarizer against the stub endpoint in tests/stubchat.py (case C-18)."
import time
import numpy as np
import fastcore.test as ft
from setree.core import count_tokens
from setree.embed import get_embedder
from setree.summarize import ExtractiveSummarizer, SummaryRequest
from setree.chat import ChatSummarizer
from stubchat import StubChatServer, refused_url

FAST = dict(connect_timeout=0.5, read_timeout=0.5, deadline=2.0, timeout=5.0, retries=2, backoff=0.05, max_backoff=0.2,
            breaker_seconds=0, embedder=get_embedder("hashing"), min_faithfulness=30)

def _request():
    texts = ["the user writes C++20", "the user builds with CMake", "the user debugs with gdb"]
    E = get_embedder("hashing").embed(texts)
    mu = E.sum(0) / np.linalg.norm(E.sum(0))
    ct = count_tokens(texts)
    return SummaryRequest(3, texts, ct, np.arange(3), texts, E, mu.astype(np.float32), 30, int(ct.sum()))

def test_c18_rate_limit_then_success():
    with StubChatServer("rate_limit") as srv:
        t0 = time.monotonic(); s = ChatSummarizer(srv.url, "m", **FAST).summarize(_request()); dt = time.monotonic() - t0
    ft.test_eq((s.summarizer, srv.calls), ("chat", 3))
    assert 1.9 <= dt < 8, dt

def test_c18_failures_fall_back_in_bounded_time():
    ext = ExtractiveSummarizer().summarize(_request())
    reasons = {"error": "error", "hang": "timeout", "empty": "empty", "think": "reasoning", None: "error"}
    for mode, reason in reasons.items():
        srv = StubChatServer(mode) if mode else None
        try:
            t0 = time.monotonic()
            s = ChatSummarizer(srv.url if srv else refused_url(), "m", **FAST).summarize(_request())
            dt = time.monotonic() - t0
        finally:
            if srv: srv.close()
        ft.test_eq((s.summarizer, s.text), (f"extractive-fallback:{reason}", ext.text))
        assert s.error and dt < 6, (mode, s.error, dt)
