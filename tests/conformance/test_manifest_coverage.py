"""Every function with cases in the golden manifest has a conformance test here."""

from __future__ import annotations

from pathlib import Path

from .golden import load_golden

HERE = Path(__file__).resolve().parent


def test_every_manifest_function_is_replayed():
    manifest = load_golden("manifest")
    untested = []
    for entry in manifest["files"]:
        stem = entry["file"].removesuffix(".json")
        # A file's cases are replayed by the test modules that load it by name.
        readers = [
            p.read_text(encoding="utf-8")
            for p in HERE.glob("test_*.py")
            if f'"{entry["file"]}"' in p.read_text(encoding="utf-8")
            or f'"{stem}"' in p.read_text(encoding="utf-8")
        ]
        # golden_params("x.json") without a function filter replays every case.
        every_case = any(f'golden_params("{entry["file"]}")' in text for text in readers)
        for function in entry["perFunction"]:
            if not every_case and not any(f'"{function}"' in text for text in readers):
                untested.append(f"{entry['file']}: {function}")
    assert not untested, "golden functions without a conformance test: " + ", ".join(untested)
