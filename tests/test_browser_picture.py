"""The backward-flow picture as a student sees it in headless Chromium, on a desktop and on a
phone: after a wrong answer (the wrong edge marked, nothing that gives the answer away) and
after a right one ("how autograd got it", with the gradient flowing back)."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from typing import Any

import pytest

from assignments.models import Assignment
from chainrule.picture.graph import MISSING, WRONG
from grading.variants import params_for_student, variant_get
from tests.test_browser import CHROMIUM, CHROMIUM_ARGS, OUTPUT, log_in

SVG = "{http://www.w3.org/2000/svg}"
# The walkthrough's local slopes (∂a/∂x = y = 3, …) as the course notes draw them on its edges.
SLOPES = [("x", "mul", "y", 3.0), ("y", "mul", "x", 2.0), ("x", "pow", "2·x", 4.0), ("mul", "add", "1", 1.0),
          ("pow", "add", "1", 1.0)]


def _scalar(value: Any) -> Any:
    while isinstance(value, list) and len(value) == 1:
        value = value[0]
    return value


@pytest.fixture
def walkthrough_slopes(live_db: None) -> dict[str, str]:
    """Node ids by name of the walkthrough's variant, whose stored analysis carries the engine's
    local derivatives: the slopes the picture draws, the right factor on a wrong edge among them."""
    assignment = Assignment.objects.get(slug="visual-walkthrough")
    variant = variant_get(assignment=assignment, params=params_for_student(assignment=assignment, student_id=None))
    analysis = variant.analysis_data()
    ids = {node["name"]: node["id"] for node in analysis["graph"]["nodes"] if node["kind"] != "output"}
    stated = {(item["source"], item["target"]): (item["formula"], _scalar(item["value"]))
              for item in analysis.get("local_derivatives") or []}
    assert {(s, t): stated.get((ids[s], ids[t])) for s, t, _, _ in SLOPES} == {
        (s, t): (formula, value) for s, t, formula, value in SLOPES}
    return ids


@pytest.fixture
def browser() -> Iterator[Any]:
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield launched
        launched.close()


def open_page(browser: Any, width: int) -> Any:
    context = browser.new_context(viewport={"width": width, "height": 900 if width > 600 else 844},
                                  is_mobile=width <= 600, has_touch=width <= 600)
    page = context.new_page()
    page.set_default_timeout(30_000)
    return page


def submit(page: Any, answers: dict[str, str]) -> None:
    for part, answer in answers.items():
        page.get_by_label(part).fill(answer)
    page.get_by_role("button", name="Submit answers").click()
    typed = answers["x.grad"]
    page.wait_for_function("() => document.querySelector('#status-region [data-status=graded]') !== null "
                           "&& document.querySelector('#status-region .part-result[data-part=\"x.grad\"] .answer')"
                           f"?.textContent === {typed!r}")


def picture_of(page: Any, part: str) -> tuple[Any, str]:
    """The part's picture once loaded, and the SVG it shows (fetched with the student's session)."""
    image = page.locator(f'#status-region .part-result[data-part="{part}"] img.graph')
    page.wait_for_function("img => img.complete && img.naturalWidth > 0", arg=image.element_handle())
    svg = page.evaluate("url => fetch(url).then(r => r.text())", image.get_attribute("src"))
    return image, svg


def svg_texts(svg: str) -> list[str]:
    return ["".join(element.itertext()).strip() for element in ET.fromstring(svg).iter(f"{SVG}text")]


def edge_strokes(svg: str, source: str, target: str) -> set[str]:
    for group in ET.fromstring(svg).iter(f"{SVG}g"):
        title = "".join(next(group.iter(f"{SVG}title")).itertext()) if group.get("class") == "edge" else ""
        if title == f"{source}->{target}":
            return {path.get("stroke", "") for path in group.iter(f"{SVG}path")}
    return set()


def no_horizontal_overflow(page: Any) -> bool:
    return bool(page.evaluate("document.documentElement.scrollWidth <= window.innerWidth"))


def go_to_walkthrough(page: Any, base: str, person: Any) -> None:
    log_in(page, base, person)
    page.goto(f"{base}/assignments/visual-walkthrough/")


def assert_teaches_the_walkthrough(svg: str) -> None:
    """After a right answer: forward values, slopes, the red flow and the merge 3 + 4 = 7 at x."""
    shown = svg_texts(svg)
    for label in ["x = 2", "y = 3", "a = x·y = 6", "b = x² = 4", "∂a/∂x = y = 3", "∂b/∂x = 2·x = 4", "← 3",
                  "← 4", "y.grad = 2", "∂z/∂z = 1"]:
        assert label in shown, (label, shown)
    assert [text for text in shown if re.fullmatch(r"x\.grad = (3 \+ 4) = 7", text)], shown


@pytest.mark.browser
@pytest.mark.integration
def test_on_a_desktop_the_wrong_edge_is_marked_and_a_right_answer_shows_how_autograd_got_it(
    worker: Any, web_server: str, student: Any, walkthrough_slopes: dict[str, str], browser: Any
) -> None:
    ids = walkthrough_slopes
    page = open_page(browser, 1280)
    go_to_walkthrough(page, web_server, student)

    # d(x²)/dx taken as x: 3 + 2 = 5 instead of 3 + 4.
    submit(page, {"x.grad": "5", "y.grad": "2"})
    image, svg = picture_of(page, "x.grad")
    assert WRONG in edge_strokes(svg, ids["x"], ids["pow"])
    assert WRONG not in edge_strokes(svg, ids["x"], ids["mul"])
    shown = svg_texts(svg)
    assert "x = 2" in shown and "b = x² = 4" in shown and "∂a/∂x = y" in shown  # on x's paths: rules, no numbers
    # The right factor on the edge, as its rule: its number with x.grad's flow would give 7 away.
    assert [text for text in shown if text.startswith("✗") and text.endswith("2·x")], shown
    assert "y.grad = 2" in shown  # answered right, so the student may see it
    assert not [text for text in shown if "7" in text or text.startswith("x.grad")]  # x.grad is not given away
    assert "the edge you got wrong" in " ".join(shown)
    image.scroll_into_view_if_needed()
    page.screenshot(path=str(OUTPUT / "picture-desktop-wrong.png"), full_page=True)
    image.screenshot(path=str(OUTPUT / "picture-desktop-wrong-close.png"))

    submit(page, {"x.grad": "7", "y.grad": "2"})
    details = page.locator('#status-region .part-result[data-part="x.grad"] details.graph-details')
    assert "How autograd got it" in details.inner_text()
    image, svg = picture_of(page, "x.grad")
    assert_teaches_the_walkthrough(svg)
    assert not [paths for paths in (edge_strokes(svg, ids["x"], ids["pow"]),) if WRONG in paths]
    page.screenshot(path=str(OUTPUT / "picture-desktop-correct.png"), full_page=True)

    image.click()  # opens the full-size viewer
    viewer = page.locator("dialog.graph-viewer")
    viewer.wait_for(state="visible")
    page.wait_for_function("() => document.querySelector('dialog.graph-viewer img').naturalWidth > 0")
    page.screenshot(path=str(OUTPUT / "picture-desktop-viewer.png"))
    viewer.get_by_role("button", name="Close the picture").click()
    viewer.wait_for(state="hidden")


@pytest.mark.browser
@pytest.mark.integration
def test_on_a_phone_the_picture_fits_the_page_and_a_tap_opens_it_full_size(
    worker: Any, web_server: str, student: Any, walkthrough_slopes: dict[str, str], browser: Any
) -> None:
    ids = walkthrough_slopes
    page = open_page(browser, 390)
    go_to_walkthrough(page, web_server, student)

    submit(page, {"x.grad": "4", "y.grad": "2"})  # the path x → mul → add left out
    image, svg = picture_of(page, "x.grad")
    assert MISSING in edge_strokes(svg, ids["x"], ids["mul"]) and MISSING in edge_strokes(svg, ids["mul"], ids["add"])
    assert "x = 2" in svg_texts(svg) and "∂b/∂x = 2·x" in svg_texts(svg)
    assert no_horizontal_overflow(page)
    box = image.bounding_box()
    assert box["x"] >= 0 and box["x"] + box["width"] <= 390  # the whole picture fits the phone's width
    image.scroll_into_view_if_needed()
    page.screenshot(path=str(OUTPUT / "picture-phone-wrong.png"), full_page=True)
    page.locator('#status-region .part-result[data-part="x.grad"]').screenshot(
        path=str(OUTPUT / "picture-phone-wrong-part.png"))

    image.tap()
    page.wait_for_function("() => document.querySelector('dialog.graph-viewer img')?.naturalWidth > 0")
    scroller = page.locator(".graph-viewer-scroll")
    page.wait_for_function("() => document.querySelector('dialog.graph-viewer img').style.width !== ''")
    assert page.evaluate("el => el.scrollWidth <= el.clientWidth", scroller.element_handle())  # opens fitted
    page.get_by_role("button", name="Zoom in").tap()
    page.get_by_role("button", name="Zoom in").tap()
    assert page.evaluate("el => el.scrollWidth > el.clientWidth", scroller.element_handle())  # zoomed: pan it
    page.screenshot(path=str(OUTPUT / "picture-phone-viewer.png"))
    page.get_by_role("button", name="Close the picture").tap()

    submit(page, {"x.grad": "7", "y.grad": "2"})
    image, svg = picture_of(page, "x.grad")
    assert_teaches_the_walkthrough(svg)
    assert no_horizontal_overflow(page)
    image.scroll_into_view_if_needed()
    page.screenshot(path=str(OUTPUT / "picture-phone-correct.png"), full_page=True)
