"""README.md is the front door and docs/ the user guide: the README stays short with the two
commands near the top, no paragraph is written twice across them, and every relative link
leads to a file."""

import re
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
README_MAX_LINES = 250
COMMANDS_WITHIN_LINES = 40
# A paragraph shorter than this (a heading, a one-line pointer) may well repeat.
MIN_PARAGRAPH_CHARS = 120
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def documents() -> list[Path]:
    return [README, *sorted((ROOT / "docs").glob("*.md"))]


def paragraphs(text: str) -> list[str]:
    """Prose paragraphs and list items, whitespace-normalised; code blocks and tables
    left out (a command or a table row may rightly appear in two guides)."""
    text = re.sub(r"```.*?```", "", text, flags=re.S)
    found = []
    for block in re.split(r"\n\s*\n", text):
        lines = [line for line in block.splitlines() if not line.lstrip().startswith("|")]
        for item in re.split(r"\n(?=\s*- )", "\n".join(lines)):
            words = re.sub(r"^(- |\d+\. )", "", " ".join(item.split()))
            if len(words) >= MIN_PARAGRAPH_CHARS:
                found.append(words)
    return found


def repeated_paragraphs(texts: dict[str, str]) -> dict[str, list[str]]:
    where = defaultdict(list)
    for name, text in texts.items():
        for paragraph in paragraphs(text):
            where[paragraph].append(name)
    return {p: names for p, names in where.items() if len(names) > 1}


def broken_links(path: Path) -> list[str]:
    broken = []
    for target in LINK.findall(path.read_text()):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
            continue  # a URL, a mail address or an anchor in the same page
        file_part = target.split("#", 1)[0]
        if not (path.parent / file_part).exists():
            broken.append(target)
    return broken


def test_the_readme_is_short_and_gives_the_two_commands_near_the_top():
    lines = README.read_text().splitlines()
    assert len(lines) < README_MAX_LINES
    top = "\n".join(lines[:COMMANDS_WITHIN_LINES])
    assert re.search(r"^make run\b", top, re.M), "`make run` is not in the first 40 lines"
    assert re.search(r"^make test\b", top, re.M), "`make test` is not in the first 40 lines"


def test_no_paragraph_appears_twice_across_the_readme_and_the_docs():
    texts = {p.relative_to(ROOT).as_posix(): p.read_text() for p in documents()}
    repeated = repeated_paragraphs(texts)
    assert not repeated, "\n\n".join(f"{names}: {p[:160]}" for p, names in repeated.items())


def test_a_repeated_paragraph_is_found_even_rewrapped():
    paragraph = "A paragraph long enough to count, " * 5
    wrapped = paragraph.replace(" to ", "\nto ")
    texts = {"a.md": f"# A\n\n{paragraph}\n", "b.md": f"Intro.\n\n- {wrapped}\n- other\n"}
    assert list(repeated_paragraphs(texts).values()) == [["a.md", "b.md"]]
    assert repeated_paragraphs({"a.md": paragraph, "b.md": "```\n" + paragraph + "\n```"}) == {}


def test_every_relative_link_in_the_readme_and_the_docs_leads_to_a_file():
    broken = {p.name: broken_links(p) for p in documents()}
    assert {name: links for name, links in broken.items() if links} == {}


def test_a_link_to_a_missing_file_is_reported(tmp_path):
    (tmp_path / "there.md").write_text("x")
    page = tmp_path / "page.md"
    page.write_text("[ok](there.md#part) [web](https://example.com) [gone](gone.md) [top](#a)")
    assert broken_links(page) == ["gone.md"]
