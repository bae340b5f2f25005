"""A link to the built site: its scenario, question and step, said before the page is
live and kept when the reader comes back from the theory; a bad link gets a notice.
"""

from browser import (
    AHEAD_READY_JS,
    SECTION_SOURCES,
    Console,
    http_server,
    open_section,
    slider_handle,
    wait_for_source,
    write_course_page,
)
from playwright.sync_api import expect
from site_pages import (
    DEFAULT,
    MODELS_JS,
    ON_SCREEN_JS,
    PRERENDERED_SLIDERS_DISABLED,
    assert_shows_weights_of,
    wait_until_ready,
)

from app.captions import section_title
from app.options import (
    FIRST_SECTION,
)
from app.page import TITLE
from app.questions import question
from app.simulation import Settings


def test_a_link_to_a_question_opens_its_step_with_its_view_in_sight(open_lab, site_url):
    """?question=skip-scaling&step=2: that step's scenario, its view scrolled into sight,
    the answer hidden, and no prediction prompt (step 1's, which later steps repeated);
    a step past the last shows the last."""
    page = open_lab("?question=skip-scaling&step=2")
    step = question("skip-scaling").steps[1]
    page.wait_for_function(
        f"() => {{ const [m] = ({MODELS_JS})('Column').filter((m) => m.name"
        f" === 'view:training_sweep' && ({ON_SCREEN_JS})(m));"
        " const box = m && Bokeh.index.find_one(m).el.getBoundingClientRect();"
        " return box && box.top >= -1 && box.top < innerHeight / 2; }"
    )
    assert "d_k=512" in page.url and "scaling=none" in page.url
    assert "section=learning" in page.url  # the section of its view opened
    assert page.locator(".lab-answer").is_hidden()
    asked = " ".join(page.locator(".lab-question p").all_text_contents())
    assert "(step 2 of 2)" in asked
    assert question("skip-scaling").predict not in asked  # asked at step 1 only
    assert step.view == "training_sweep"
    page.goto(site_url + "?question=skip-scaling&step=9")
    wait_until_ready(page)
    page.wait_for_url("**question=skip-scaling&step=2")


def test_back_to_the_lab_from_the_theory_page_keeps_the_scenario_and_step(open_lab):
    """The theory page's "Back to the lab" returns to the lab's link, its scenario, open
    question and step (it went to ./, the default scenario, with no question)."""
    page = open_lab("?d_k=256&variance=0.5&question=one-learning-rate&step=2")
    page.wait_for_url("**step=2**")
    lab = page.url
    page.get_by_role("link", name="The theory behind the plots").click()
    page.wait_for_url("**/theory.html")
    page.get_by_role("link", name="Back to the lab").click()
    page.wait_for_url(lab)
    wait_until_ready(page)
    assert "question=one-learning-rate" in page.url and "step=2" in page.url
    assert "variance=0.5" in page.url


def test_a_link_says_what_is_on_screen_until_its_scenario_is_live(offline, site_url):
    """While loading, the status names the prerendered and the asked-for scenario;
    the controls are disabled; "ready" comes only once the link's scenario is plotted."""
    page = offline.new_page()
    console = Console(page)
    page.goto(site_url + "?d_k=256&scaling=none&section=saturation")
    wait_for_source(page, "histogram:raw", "(d) => d.left.length > 0", timeout=10_000)
    status = page.locator("#lab-status").inner_text()
    assert "default scenario" in status and "d_k=256, scaling=none" in status, status
    assert page.evaluate(PRERENDERED_SLIDERS_DISABLED)
    wait_until_ready(page)
    # At the moment it says ready, the plots already show the link's scenario and section.
    assert_shows_weights_of(page, Settings(d_k=256, scaling="none", seed=0, **DEFAULT))
    assert "link's scenario" in page.locator("#lab-status").inner_text()
    assert console.errors == []


def test_the_page_s_words_need_no_script_and_give_way_to_the_drawn_page(
    offline, site_url, tmp_path
):
    """The title, what the page is for and the first section's introduction are in the
    page's HTML, so they are painted before any script has run (on a slow link, before
    the 0.8 MB of BokehJS and Panel arrive). Without JavaScript they are what shows, with
    a notice on why nothing moves that fills the frame (an embed's too: not 1,300 px of
    white), and not the first section's introduction, which an embed of other views does
    not show; with it, they give way to the drawn page, which says the same once (one
    title, one introduction)."""

    intro = section_title(FIRST_SECTION)
    still = offline.browser.new_context(java_script_enabled=False)
    page = still.new_page()
    page.goto(site_url + "?d_k=256&scaling=none")
    expect(page.locator("#lab-first-text h1")).to_have_text(TITLE)
    expect(page.locator("#lab-first-text h2")).to_have_text(intro)
    expect(page.locator("#lab-first-text h2")).to_be_hidden()
    expect(page.locator("#lab-first-text .lab-no-script")).to_be_visible()
    expect(page.locator("#lab-first-text .lab-no-script")).to_contain_text("needs JavaScript")
    assert page.locator("#lab-first-text a[href='theory.html']").count() == 2
    # An embed on a course page, scripts off there too: the notice fills its frame.
    write_course_page(tmp_path, site_url, ["?views=heatmap"], [100])
    with http_server(tmp_path) as course_url:
        page.goto(course_url)
        frame = page.frame_locator("iframe")
        expect(frame.locator(".lab-no-script")).to_be_visible()
        filled = frame.locator("#lab-first-text").bounding_box()["height"]
        assert filled >= page.locator("iframe").bounding_box()["height"] - 1
    still.close()

    page = offline.new_page()
    console = Console(page)
    page.goto(site_url + "?d_k=256&scaling=none")
    wait_for_source(page, SECTION_SOURCES[FIRST_SECTION], "(d) => d.left.length > 0")
    expect(page.locator("#lab-first-text")).to_have_count(0)
    expect(page.locator("h1 >> visible=true")).to_have_count(1)
    expect(page.locator("h2", has_text=intro)).to_have_count(1)
    wait_until_ready(page)
    assert console.errors == []


# Drops the page's own location message to the worker (Panel's, posted once the page has
# drawn the document), and counts it.
DROP_LOCATION_JS = """
window.__droppedLocations = 0;
const post = Worker.prototype.postMessage;
Worker.prototype.postMessage = function (message, ...rest) {
  if (message?.type === 'location') { window.__droppedLocations += 1; return; }
  return post.call(this, message, ...rest);
};
"""


def test_a_link_is_computed_while_the_page_draws_the_document(offline, site_url):
    """Restored from its snapshot, the worker has the page's location from the word that
    starts it, and applies the link's scenario while the page draws the document: the
    page's own location message, dropped here, is not needed, and the moves after it are
    drawn ahead and answered."""
    page = offline.new_page()
    page.add_init_script(DROP_LOCATION_JS)
    console = Console(page)
    page.goto(site_url + "?d_k=256&scaling=none&section=saturation")
    wait_until_ready(page)
    assert page.evaluate("window.__droppedLocations") == 1
    assert_shows_weights_of(page, Settings(d_k=256, scaling="none", seed=0, **DEFAULT))
    page.wait_for_function(AHEAD_READY_JS, timeout=30_000)  # the look-ahead runs
    slider_handle(page, "d_k").press("ArrowLeft")
    page.wait_for_url("**d_k=128**", timeout=30_000)
    assert_shows_weights_of(page, Settings(d_k=128, scaling="none", seed=0, **DEFAULT))
    assert console.errors == []


def test_a_bad_link_shows_its_notice_on_the_site(open_lab):
    page = open_lab("?d_k=300&seed=abc")
    notice = page.locator("text=d_k=300 is not on the slider")
    notice.wait_for(timeout=10_000)
    assert "showing d_k=256" in notice.inner_text()
    assert page.locator("text=seed='abc' was ignored").is_visible()
    page.wait_for_url("**d_k=256**", timeout=10_000)  # the URL holds the corrected scenario
    assert "abc" not in page.url
    open_section(page, "saturation")
    assert_shows_weights_of(page, Settings(d_k=256, scaling="sqrt", seed=0, **DEFAULT))
    assert page.locator("text=d_k=300 is not on the slider").is_visible()  # it stays
