"""Two processes asking for the same GGUF at once: the second waits for the first one's conversion."""

import threading
import time

from llm_adapt.models import gguf


def test_a_second_caller_waits_for_the_first_conversion_instead_of_repeating_it(tmp_path, monkeypatch):
    monkeypatch.setenv("LLM_ADAPT_HOME", str(tmp_path / "home"))
    model = tmp_path / "m.gguf"
    model.write_bytes(gguf.GGUF_MAGIC + b"\0" * 64)
    conversions = []

    def slow_convert(_path, out):
        conversions.append(out)
        time.sleep(0.5)  # long enough for the second caller to arrive while the first converts
        out.mkdir(parents=True)
        (out / gguf.MARKER).write_text("{}")

    monkeypatch.setattr(gguf, "_convert", slow_convert)
    results = []
    threads = [threading.Thread(target=lambda: results.append(gguf.ensure_converted(model))) for _ in range(2)]
    for thread in threads:
        thread.start()
        time.sleep(0.1)
    for thread in threads:
        thread.join()
    assert len(conversions) == 1 and results[0] == results[1] and (results[0] / gguf.MARKER).is_file()
