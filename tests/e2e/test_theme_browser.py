"""The theme in headless Chromium: the dark theme is dark with readable text, the choice
is the user's (it follows them to another browser), a reload paints it from the first
byte (the server renders <html data-theme>, so nothing flashes), and "system" follows the
browser's prefers-color-scheme. The charts take their colours from the tokens."""

import pytest

from tests.support.tree_data import import_branched

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser]

# The page's background and text colours, and their WCAG contrast, as the browser draws them.
COLOURS = """() => {
  function rgb(s) { return s.match(/[\\d.]+/g).slice(0, 3).map(Number); }
  function lum(c) {
    var l = c.map(function (v) { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); });
    return 0.2126 * l[0] + 0.7152 * l[1] + 0.0722 * l[2];
  }
  var style = getComputedStyle(document.body);
  var bg = lum(rgb(style.backgroundColor)), fg = lum(rgb(style.color));
  var hi = Math.max(bg, fg), lo = Math.min(bg, fg);
  return { theme: document.documentElement.dataset.theme, bg: bg, contrast: (hi + 0.05) / (lo + 0.05) };
}"""


def colours(page):
    return page.evaluate(COLOURS)


def test_the_dark_choice_is_dark_survives_a_reload_and_follows_the_user(page_for, make_user):
    user = make_user("theme-user")
    page = page_for(user)
    page.emulate_media(color_scheme="light")
    page.goto("/")
    light = colours(page)
    assert light["theme"] == "system" and light["bg"] > 0.8 and light["contrast"] >= 4.5
    page.click(".theme-menu summary")
    with page.expect_response(lambda r: r.url.endswith("/preferences/theme/")) as stored:
        page.click(".theme-menu button[value=dark]")
    assert stored.value.status == 204
    dark = colours(page)  # at once, before any reload
    assert dark["theme"] == "dark" and dark["bg"] < 0.03 and dark["contrast"] >= 4.5
    # A reload: the server's HTML already says dark, so the first paint is dark.
    response = page.reload()
    assert '<html lang="en" data-theme="dark">' in response.text()
    assert colours(page)["bg"] < 0.03
    # Another browser of the same user, whose system is light: still dark.
    other = page_for(user)
    other.emulate_media(color_scheme="light")
    other.goto("/usage/")
    assert colours(other)["bg"] < 0.03


def test_system_follows_the_browser_and_light_overrides_it(page_for, make_user):
    user = make_user("theme-system")
    page = page_for(user)
    page.emulate_media(color_scheme="dark")
    page.goto("/models/")
    assert colours(page)["bg"] < 0.03
    page.emulate_media(color_scheme="light")
    assert colours(page)["bg"] > 0.8
    page.emulate_media(color_scheme="dark")
    page.click(".theme-menu summary")
    with page.expect_response(lambda r: r.url.endswith("/preferences/theme/")):
        page.click(".theme-menu button[value=light]")
    page.reload()
    assert colours(page)["theme"] == "light" and colours(page)["bg"] > 0.8


def test_the_context_chart_takes_its_colours_from_the_theme(page_for, make_user, workspace):
    owner = make_user("theme-chart")
    session = import_branched(owner, str(workspace))
    page = page_for(owner)
    page.emulate_media(color_scheme="light")
    page.goto(f"/s/{session.pi_id}/")
    page.click("#context-gauge")
    chart = '[data-usage-chart="context"][data-ready]'
    page.wait_for_selector(chart)
    stroke = "el => el._uplot.series[1]._stroke || el._uplot.series[1].stroke()"
    token = "() => getComputedStyle(document.documentElement).getPropertyValue('--chart-1').trim()"
    light_stroke = page.eval_on_selector(chart, stroke)
    assert light_stroke == page.evaluate(token)
    page.emulate_media(color_scheme="dark")  # the system flips: the chart is drawn again
    page.wait_for_function(
        f"() => {{ var el = document.querySelector('{chart}'); return el && el._uplot && "
        f"(el._uplot.series[1]._stroke || '') !== '{light_stroke}'; }}"
    )
    assert page.eval_on_selector(chart, stroke) == page.evaluate(token)
