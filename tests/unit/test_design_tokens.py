"""The design tokens (static/piweb/tokens.css) hold every colour: no colour literal in any
other stylesheet, template, script or Python module of the app, and the tokens' text and
background pairs pass WCAG AA contrast (4.5:1) in both themes."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TOKENS = ROOT / "static" / "piweb" / "tokens.css"

# The CSS named colours (transparent, currentcolor and inherit are not colours of ours).
NAMED = """aliceblue antiquewhite aqua aquamarine azure beige bisque black blanchedalmond blue
blueviolet brown burlywood cadetblue chartreuse chocolate coral cornflowerblue cornsilk crimson
cyan darkblue darkcyan darkgoldenrod darkgray darkgreen darkgrey darkkhaki darkmagenta
darkolivegreen darkorange darkorchid darkred darksalmon darkseagreen darkslateblue darkslategray
darkslategrey darkturquoise darkviolet deeppink deepskyblue dimgray dimgrey dodgerblue firebrick
floralwhite forestgreen fuchsia gainsboro ghostwhite gold goldenrod gray green greenyellow grey
honeydew hotpink indianred indigo ivory khaki lavender lavenderblush lawngreen lemonchiffon
lightblue lightcoral lightcyan lightgoldenrodyellow lightgray lightgreen lightgrey lightpink
lightsalmon lightseagreen lightskyblue lightslategray lightslategrey lightsteelblue lightyellow
lime limegreen linen magenta maroon mediumaquamarine mediumblue mediumorchid mediumpurple
mediumseagreen mediumslateblue mediumspringgreen mediumturquoise mediumvioletred midnightblue
mintcream mistyrose moccasin navajowhite navy oldlace olive olivedrab orange orangered orchid
palegoldenrod palegreen paleturquoise palevioletred papayawhip peachpuff peru pink plum
powderblue purple rebeccapurple red rosybrown royalblue saddlebrown salmon sandybrown seagreen
seashell sienna silver skyblue slateblue slategray slategrey snow springgreen steelblue tan teal
thistle tomato turquoise violet wheat white whitesmoke yellow yellowgreen""".split()

FUNCTION = r"\b(?:rgba?|hsla?|hwb|lab|lch|oklab|oklch|color-mix)\("
HEX = r"#[0-9a-fA-F]{3,8}\b"
CSS_LITERAL = re.compile(rf"{HEX}|{FUNCTION}", re.I)
NAMED_WORD = re.compile(rf"(?<![\w-])(?:{'|'.join(NAMED)})(?![\w-])", re.I)
DECLARATION = re.compile(r"([-\w]+)\s*:\s*([^;{}]+)")
# In JavaScript: a hex colour in a string, or a colour function anywhere.
JS_LITERAL = re.compile(rf"[\"'`]{HEX}[\"'`]|{FUNCTION}", re.I)
# In templates and Python: a colour in a style attribute or a <style> block, or a colour
# value given to a colour property anywhere in a string.
STYLE_BLOCK = re.compile(r"<style[^>]*>(.*?)</style>|style=\"([^\"]*)\"", re.S | re.I)
PROPERTY_VALUE = re.compile(
    rf"(?:color|background|fill|stroke|border|outline|shadow)[-\w]*\s*:\s*[^;\"'<>]*?(?:{HEX}|{FUNCTION})",
    re.I,
)
COMMENT = re.compile(r"/\*.*?\*/", re.S)
JS_COMMENT = re.compile(r"(?<![:\"'])//[^\n]*|/\*.*?\*/", re.S)


def css_literals(text: str) -> list[str]:
    text = COMMENT.sub("", text)
    found = CSS_LITERAL.findall(text)
    for _prop, value in DECLARATION.findall(text):
        found += NAMED_WORD.findall(value)
    return found


def literals_in(path: Path) -> list[str]:
    text = path.read_text(errors="replace")
    if path.suffix == ".css":
        return css_literals(text)
    if path.suffix == ".js":
        return JS_LITERAL.findall(JS_COMMENT.sub("", text))
    found = PROPERTY_VALUE.findall(text)
    for block, attribute in STYLE_BLOCK.findall(text):
        found += css_literals(block or attribute)
    return found


def scanned_files() -> list[Path]:
    files = [
        p
        for p in (ROOT / "static").rglob("*")
        if p.suffix in (".css", ".js", ".html", ".svg")
        and "vendor" not in p.relative_to(ROOT / "static").parts
        and p != TOKENS
    ]
    files += [p for p in (ROOT / "templates").rglob("*.html")]
    files += [p for p in (ROOT / "sessions_app").rglob("*") if p.suffix in (".py", ".html", ".js")]
    return sorted(files)


def test_no_colour_literal_outside_the_tokens():
    offenders = {
        str(p.relative_to(ROOT)): sorted(set(found))
        for p in scanned_files()
        if (found := literals_in(p))
    }
    assert not offenders, f"colour literals outside static/piweb/tokens.css: {offenders}"


@pytest.mark.parametrize(
    ("text", "suffix", "flagged"),
    [
        (".a { color: #fff; }", ".css", True),
        (".a { background: rgb(1 2 3); }", ".css", True),
        (".a { border: 1px solid red; white-space: nowrap; }", ".css", True),
        (".a { color: var(--text); white-space: pre; }", ".css", False),
        ('var c = "#3b5bdb";', ".js", True),
        ('el.querySelector("#add");', ".js", True),  # a hex-looking id: named so
        ('<a href="#fed">', ".html", False),
        ('<p style="color: #c00">', ".html", True),
        ('<p style="color: blue">', ".html", True),
        ("html = \"<b style='background: hsl(1 2% 3%)'>\"", ".py", True),
    ],
)
def test_the_scanner_finds_literals(tmp_path, text, suffix, flagged):
    path = tmp_path / f"sample{suffix}"
    path.write_text(text)
    assert bool(literals_in(path)) is flagged


# --- contrast of the tokens in both themes


def theme_values(dark: bool) -> dict[str, str]:
    """The custom properties in force in one theme (light: the plain :root blocks; dark:
    those plus the explicit data-theme="dark" block)."""
    text = COMMENT.sub("", TOKENS.read_text())
    values: dict[str, str] = {}
    for selector, body in re.findall(r"(:root[^{]*)\{([^{}]*)\}", text):
        selector = selector.strip()
        if "dark" in selector and not dark:
            continue
        if selector.startswith(":root:not"):  # the system-preference copy of the dark block
            continue
        values.update(re.findall(r"(--[\w-]+)\s*:\s*([^;]+);", body))
    return values


def resolve(values: dict[str, str], name: str) -> str:
    value = values[name].strip()
    while m := re.fullmatch(r"var\((--[\w-]+)\)", value):
        value = values[m.group(1)].strip()
    return value


def luminance(colour: str) -> float:
    digits = colour.lstrip("#")
    channels = [int(digits[i : i + 2], 16) / 255 for i in (0, 2, 4)]
    linear = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def contrast(a: str, b: str) -> float:
    high, low = sorted((luminance(a), luminance(b)), reverse=True)
    return (high + 0.05) / (low + 0.05)


FAMILIES = ("accent", "success", "warning", "danger", "orange", "violet", "teal", "pink")
ROLES = ("user", "assistant", "tool", "bash", "summary", "compaction", "custom")
SURFACES = ("surface", "bg", "surface-2", "surface-3")
PAIRS = (
    [(t, b) for t in ("text", "text-soft", "text-muted", "text-faint") for b in SURFACES]
    + [(f"{f}-fg", f"{f}-bg") for f in FAMILIES]
    + [(f"{f}-fg", s) for f in FAMILIES for s in SURFACES]
    + [(f, s) for f in FAMILIES for s in ("surface", "bg")]  # links, error text
    + [("text-on-solid", f) for f in FAMILIES]  # filled buttons and badges
    + [("text-on-solid", f"role-{r}") for r in ROLES]  # the tree's role glyphs
    + [("text", "highlight"), ("text", "accent-bg"), ("text-muted", "accent-bg")]
)


@pytest.mark.parametrize("dark", [False, True], ids=["light", "dark"])
def test_token_pairs_pass_contrast(dark):
    values = theme_values(dark)
    failing = [
        f"{fg} on {bg}: {ratio:.2f}"
        for fg, bg in PAIRS
        if (ratio := contrast(resolve(values, f"--{fg}"), resolve(values, f"--{bg}"))) < 4.5
    ]
    assert not failing, failing


def test_the_dark_theme_is_dark_and_both_dark_blocks_agree():
    assert luminance(resolve(theme_values(True), "--bg")) < 0.02
    assert luminance(resolve(theme_values(False), "--bg")) > 0.85
    text = COMMENT.sub("", TOKENS.read_text())
    blocks = dict(
        re.findall(
            r"(:root:not\(\[data-theme=\"light\"\]\)|:root\[data-theme=\"dark\"\])\s*\{([^{}]*)\}",
            text,
        )
    )
    system, chosen = (dict(re.findall(r"(--[\w-]+)\s*:\s*([^;]+);", b)) for b in blocks.values())
    assert system == chosen, "the system-preference dark block and data-theme=dark differ"
