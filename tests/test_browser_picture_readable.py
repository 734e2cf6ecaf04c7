"""The picture as a student reads it in Chromium, after a wrong answer on the hard cases (the linear
layer, multiple paths, non-scalar and a 7-op sigmoid neuron), at 1280 and 390 px: no label on the
rendered SVG gives the part away under the default disclosure, its smallest text is measured as
rendered (at least 11 px on a desktop), it fits a phone's width, the viewer opens with every node on
screen; and axe-core finds no serious or critical violation on the student pages."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command

from chainrule import Value, parse_numeric
from tests.test_browser import OUTPUT, log_in
from tests.test_browser_picture import browser, open_page, picture_of, svg_texts  # noqa: F401  (browser: fixture)
from tests.test_picture_disclosure import Picture, analysis_of, same, stated_numbers

ROOT = Path(__file__).resolve().parent.parent
AXE = ROOT / "static/vendor/axe-core/axe.min.js"
SIGMOID = ROOT / "tests/catalog_extra/sigmoid-neuron.toml"
# (assignment, part, a typical wrong answer, the part's expected value)
WRONG: list[tuple[str, str, str, Value]] = [
    ("linear-layer", "w.grad", "[0.5, -0.3]", [1.0, 2.0]),  # w used for ∂(w·x)/∂w
    ("multiple-paths", "x.grad", "4", 7.0),  # x·x counted once
    ("non-scalar", "x.grad", "[1, 2, 3]", [2.0, 4.0, 6.0]),  # x used for ∂(x²)/∂x
    ("extra-sigmoid-neuron", "w1.grad", "-0.1776883", -0.3553765),  # the square's 2 dropped
]
MIN_DESKTOP_TEXT_PX = 11

# The picture's SVG drawn inline over the image, at the image's rendered size, so each text's font size
# can be measured as Chromium renders it: computed font size times the scale on screen.
MEASURE = """async img => {
  const text = await (await fetch(img.src)).text();
  const box = img.getBoundingClientRect();
  const holder = document.createElement('div');
  holder.style.cssText = `position:absolute;left:${box.left + scrollX + img.clientLeft}px;` +
                         `top:${box.top + scrollY + img.clientTop}px;pointer-events:none`;
  holder.innerHTML = text;
  const svg = holder.querySelector('svg');
  svg.setAttribute('width', img.clientWidth);
  svg.setAttribute('height', img.clientHeight);
  document.body.appendChild(holder);
  const sizes = [...svg.querySelectorAll('text')].map(t => [
    parseFloat(getComputedStyle(t).fontSize) * t.getScreenCTM().a, t.textContent]);
  holder.remove();
  sizes.sort((a, b) => a[0] - b[0]);
  return sizes;
}"""


@pytest.fixture(scope="module")
def sigmoid_neuron(django_db_setup: None, django_db_blocker: Any) -> None:
    with django_db_blocker.unblock():
        call_command("load_assignments", str(SIGMOID), stdout=io.StringIO())


def answer_wrong(page: Any, base: str, slug: str, part: str, answer: str) -> None:
    page.goto(f"{base}/assignments/{slug}/")
    page.get_by_label(part).fill(answer)
    page.get_by_role("button", name="Submit answers").click()
    page.wait_for_function(
        "([part, typed]) => document.querySelector('#status-region [data-status=graded]') !== null && "
        "document.querySelector(`#status-region .part-result[data-part=\"${part}\"] .answer`)?.textContent === typed",
        arg=[part, answer])


def giveaways(svg: str, slug: str, part: str) -> list[str]:
    """The labels stating the part's answer or giving it in one step (the leaves' data aside), as the
    unit test over every catalog judges them."""
    path = SIGMOID if slug == "extra-sigmoid-neuron" else ROOT / "assignments/catalog" / f"{slug}.toml"
    return Picture(svg).giveaways(analysis=analysis_of(path), key=part, exempt=set())


@pytest.mark.browser
@pytest.mark.integration
@pytest.mark.parametrize("width", [1280, 390])
def test_wrong_answers_on_the_hard_cases_give_nothing_away_and_can_be_read(
    worker: Any, web_server: str, student: Any, sigmoid_neuron: None, browser: Any, width: int  # noqa: F811
) -> None:
    page = open_page(browser, width)
    log_in(page, web_server, student)
    smallest: dict[str, float] = {}
    for slug, part, answer, expected in WRONG:
        answer_wrong(page, web_server, slug, part, answer)
        image, svg = picture_of(page, part)
        assert not giveaways(svg, slug, part), (slug, giveaways(svg, slug, part))
        assert same(parse_numeric(answer), expected) is False
        if slug == "multiple-paths":  # the picture tells the choice part's story: two factors that add
            shown = svg_texts(svg)
            assert "first factor: ∂(x·x)/∂x = x" in shown and "missing: second factor: ∂(x·x)/∂x = x" in shown
        image.scroll_into_view_if_needed()
        sizes = page.evaluate(MEASURE, image.element_handle())
        smallest[slug] = sizes[0][0]
        box = image.bounding_box()
        assert box["x"] >= 0 and box["x"] + box["width"] <= width, (slug, box)  # the whole picture on screen
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth"), slug
        if width >= 1280:
            assert sizes[0][0] >= MIN_DESKTOP_TEXT_PX, (slug, sizes[:3])
        words = page.locator(f'#status-region .part-result[data-part="{part}"] details.graph-words')
        words.locator("summary").click()
        assert "Nodes in the order" in words.inner_text()
        said = [line.partition("; gradient:")[2] if "(input" in line else line  # the inputs' data aside
                for line in words.locator("li").all_inner_texts()]
        assert not [line for line in said if any(same(number, expected) for number in stated_numbers(line))], said
        image.scroll_into_view_if_needed()
        page.screenshot(path=str(OUTPUT / f"picture-{width}-{slug}-wrong.png"), full_page=True)
        image.screenshot(path=str(OUTPUT / f"picture-{width}-{slug}-wrong-close.png"))
    (OUTPUT / f"picture-{width}-smallest-text.json").write_text(json.dumps(smallest, indent=1))


@pytest.mark.browser
@pytest.mark.integration
@pytest.mark.parametrize("width", [1280, 390])
def test_the_viewer_opens_with_every_node_on_screen_and_zooms_in_to_read(
    worker: Any, web_server: str, student: Any, sigmoid_neuron: None, browser: Any, width: int  # noqa: F811
) -> None:
    page = open_page(browser, width)
    log_in(page, web_server, student)
    answer_wrong(page, web_server, "extra-sigmoid-neuron", "w1.grad", "-0.1776883")
    image, _ = picture_of(page, "w1.grad")
    image.click()
    page.wait_for_function("() => { const i = document.querySelector('dialog.graph-viewer img');"
                           " return i && i.naturalWidth > 0 && i.style.width !== ''; }")
    scroller = page.locator(".graph-viewer-scroll")
    fitted = page.evaluate("el => [el.scrollWidth <= el.clientWidth, el.scrollHeight <= el.clientHeight]",
                           scroller.element_handle())
    assert fitted == [True, True]  # fitted: every node in view
    page.screenshot(path=str(OUTPUT / f"picture-{width}-viewer-fitted.png"))
    zoom_in = page.get_by_role("button", name="Zoom in")
    for _ in range(4):
        zoom_in.click()
    assert page.evaluate("el => el.scrollWidth > el.clientWidth || el.scrollHeight > el.clientHeight",
                         scroller.element_handle())
    # Scrolled to its far corner, the zoomed picture's last node is reachable.
    page.evaluate("el => el.scrollTo(el.scrollWidth, el.scrollHeight)", scroller.element_handle())
    corner = page.evaluate("el => { const i = el.querySelector('img').getBoundingClientRect(),"
                           " s = el.getBoundingClientRect();"
                           " return [i.right <= s.right + 1, i.bottom <= s.bottom + 1]; }", scroller.element_handle())
    assert corner == [True, True]  # the picture's far corner scrolled into view
    page.screenshot(path=str(OUTPUT / f"picture-{width}-viewer-zoomed-corner.png"))
    page.get_by_role("button", name="Fit the picture to the screen").click()
    assert page.evaluate("el => el.scrollWidth <= el.clientWidth", scroller.element_handle())
    page.get_by_role("button", name="Close the picture").click()


def serious_violations(page: Any, base: str) -> list[dict[str, Any]]:
    """axe-core's serious and critical findings on the page; the script is the vendored static file,
    loaded from the app's own origin as the page's Content-Security-Policy allows."""
    assert AXE.exists()
    page.add_script_tag(url=f"{base}/static/vendor/axe-core/axe.min.js")
    found = page.evaluate("async () => (await axe.run(document, {resultTypes: ['violations']})).violations"
                          ".filter(v => ['serious', 'critical'].includes(v.impact))"
                          ".map(v => ({id: v.id, impact: v.impact, nodes: v.nodes.map(n => n.target.join(' '))}))")
    return list(found)


@pytest.mark.browser
@pytest.mark.integration
@pytest.mark.parametrize("width", [1280, 390])
def test_axe_finds_no_serious_or_critical_violation_on_the_student_pages(
    live_db: None, worker: Any, web_server: str, student: Any, browser: Any, width: int  # noqa: F811
) -> None:
    page = open_page(browser, width)
    log_in(page, web_server, student)
    found = {"home": serious_violations(page, web_server)}
    page.goto(f"{web_server}/assignments/linear-layer/")
    found["assignment"] = serious_violations(page, web_server)
    answer_wrong(page, web_server, "linear-layer", "w.grad", "[0.5, -0.3]")
    picture_of(page, "w.grad")
    page.locator('#status-region .part-result[data-part="w.grad"] details.graph-words summary').click()
    found["result with picture"] = serious_violations(page, web_server)
    page.goto(f"{web_server}/assignments/linear-layer/submissions/")
    found["history"] = serious_violations(page, web_server)
    page.goto(web_server + page.locator("main a[href*=\"/submissions/\"]").first.get_attribute("href"))
    found["submission"] = serious_violations(page, web_server)
    assert not {name: items for name, items in found.items() if items}, found
    page.evaluate("document.querySelector('main').insertAdjacentHTML('beforeend', '<img src=\"/static/x.png\">')")
    assert [item["id"] for item in serious_violations(page, web_server)] == ["image-alt"]  # the check can fail
