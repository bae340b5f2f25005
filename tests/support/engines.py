"""One small interface over three browser engines, so a check is written once.

- Chromium (Blink): Debian's ``chromium``, driven by Playwright; offline but for this
  machine's two sites (browser.CROSS_SITE_ARGS), partitioning storage as Chrome does.
- Firefox (Gecko): Debian's ``firefox-esr``, driven by npm's ``puppeteer-core``
  over WebDriver BiDi, through ``drivers/firefox.mjs`` (JSON lines on a pipe).
- WebKit (Safari's engine): Debian's WebKitGTK, its ``WebKitWebDriver`` under
  ``xvfb-run`` (it has no headless mode), driven by Selenium as a remote WebDriver.

No engine is downloaded: each is a Debian package (``bash tests/run`` installs
them). Every engine evaluates JavaScript *expressions* (strings); Bokeh and
Panel draw inside shadow roots, so ``DEEP_JS`` defines ``deep(selector)``,
which looks through them.
"""

import base64
import contextlib
import json
import os
import signal
import subprocess
import time
from pathlib import Path

from browser import CHROMIUM_ARGS, CROSS_SITE_ARGS, PARTITIONED_ARGS, free_port, wait_for_http

DRIVERS = Path(__file__).resolve().parent / "drivers"
ENGINES = ("chromium", "firefox", "webkit")
POLL = 0.1  # s between two evaluations of a condition
# s a page may take to boot in any engine (10 to 35 s here; WebKitGTK boots a course
# page's three embeds one after another: 57 to 60 s here, 99 s beside a busy core).
BOOT_SECONDS = 240
# The engines that can stand in for a phone (``open_engine(name, phone=True)``): an
# iPhone 13's viewport, 390 by 664 CSS px of 3 device pixels each, with a coarse
# pointer that taps.
# Chromium emulates an iPhone 13 whole (Playwright's descriptor: its mobile layout
# viewport and touch events too). Firefox ESR takes the size, the pixel ratio, a
# coarse pointer (its ui.*PointerCapabilities preferences) and taps (WebDriver's
# touch actions); its mobile viewport (dom.meta-viewport.enabled) closes the
# browser here. WebKitGTK has none of these: no phone in WebKit.
PHONES = ("chromium", "firefox")
# The engines that print a page to PDF (``Engine.pdf``): WebKitGTK's WebDriver has no
# Print command ("Unknown command"); WebKit prints by ``print_in_webkit``.
PRINTS = ("chromium", "firefox")
WEBKIT_PRINT = Path(__file__).parent / "drivers" / "webkit_print.py"
PHONE = {"width": 390, "height": 664, "deviceScaleFactor": 3}

# deep(selector): every element matching selector, in the document and every shadow root.
DEEP_JS = """((selector, root = document, found = []) => {
  const walk = (node) => {
    node.querySelectorAll(selector).forEach((el) => found.push(el));
    node.querySelectorAll('*').forEach((el) => el.shadowRoot && walk(el.shadowRoot));
  };
  walk(root);
  return found;
})"""


# The d_k slider's handle, by the accessible name the page gives it.
D_K_HANDLE_JS = (
    f"{DEEP_JS}('.noUi-handle').find((h) => h.getAttribute('aria-label') === 'd_k (key dimension)')"
)


# axe-core (npm, tests/support/drivers), as browsers' own accessibility audits run it, with WCAG
# 2.2's target size (24 px), which axe leaves out by default.
AXE = Path(__file__).parent / "drivers" / "node_modules" / "axe-core" / "axe.min.js"
AXE_RUN_JS = """axe.run(document, {rules: {'target-size': {enabled: true}}}).then((result) =>
  result.violations.map((v) => `${v.id}: ${v.nodes.map((n) => n.target.flat().join(' ')).join(
    ' | ')}`))"""
# Every control on screen whose target (a checkbox's or radio's: its label) is smaller
# than 44 by 44 CSS px, the size a finger needs (WCAG 2.5.5); a link within a sentence
# is exempt, as the criterion says.
SMALL_TARGETS_JS = f"""{DEEP_JS}('button, select, textarea, input:not([type=hidden]), a[href],'
  + ' [role=slider], [role=button]').map((el) => {{
    const target = el.closest('label') ?? el;
    const box = target.getBoundingClientRect();
    const inline = el.matches('a') && getComputedStyle(el).display === 'inline';
    const name = (el.getAttribute('aria-label') ?? target.textContent).trim().slice(0, 40);
    return box.width && box.height && !inline && (box.width < 44 || box.height < 44)
      ? `${{el.tagName}} "${{name}}" ${{Math.round(box.width)}} x ${{Math.round(box.height)}}` : '';
  }}).filter(Boolean)"""


def accessibility_violations(engine) -> list[str]:
    """What axe-core finds wrong with the page as it is now: each rule broken, with the
    elements that break it."""
    if engine.evaluate("typeof window.axe") != "object":
        engine.evaluate(f"(() => {{ {AXE.read_text()}\n; return typeof window.axe; }})()")
    return engine.evaluate(AXE_RUN_JS)


class Engine:
    """What a cross-engine check may do with a page."""

    name = ""
    min_width = 0  # CSS px: the narrowest viewport ``resize`` can make

    def goto(self, url: str): ...

    def evaluate(self, expression: str): ...

    @contextlib.contextmanager
    def frame(self, index: int):
        """Within the block, ``evaluate``, ``press`` and ``wait_for`` act in the page of
        the ``index``-th iframe of the page (of any origin), not the page itself."""
        self._enter_frame(index)
        try:
            yield self
        finally:
            self._enter_frame(None)

    def _enter_frame(self, index: int | None):
        """Act in the ``index``-th iframe's page from now on; None: the page itself."""

    def press(self, element_expression: str, key: str):
        """Focus the element the expression yields and press ``key`` (Playwright's names).
        In a frame, WebKit focuses it by a click: there, press only what a click leaves
        as it is, such as a slider's handle."""

    def tap(self, x: float, y: float):
        """Tap the screen at (``x``, ``y``) CSS px of the viewport (a phone, ``PHONES``)."""

    def screenshot(self, path: Path): ...

    def pdf(self) -> bytes:
        """The page printed to PDF, as the browser prints it (its print events fire in
        every frame). An engine in PRINTS only."""

    def resize(self, width: int, height: int):
        """Make the page's viewport ``width`` by ``height`` CSS pixels."""

    def errors(self) -> list[str]:
        """Console errors and uncaught exceptions since the last call."""

    def wait_for(self, expression: str, timeout: float = 30.0):
        """Evaluate ``expression`` until it is truthy; return its value."""
        deadline = time.monotonic() + timeout
        while True:
            value = self.evaluate(expression)
            if value:
                return value
            if time.monotonic() > deadline:
                raise TimeoutError(f"{self.name}: still false after {timeout} s: {expression}")
            time.sleep(POLL)


class Chromium(Engine):
    name = "chromium"

    def __init__(self, stack: contextlib.ExitStack, phone: bool = False):
        from browser import CHROMIUM
        from playwright.sync_api import sync_playwright

        playwright = stack.enter_context(sync_playwright())
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM, args=[*CHROMIUM_ARGS, *CROSS_SITE_ARGS, *PARTITIONED_ARGS]
        )
        stack.callback(browser.close)
        iphone = playwright.devices["iPhone 13"]
        assert [*iphone["viewport"].values(), iphone["device_scale_factor"]] == [*PHONE.values()]
        options = {k: v for k, v in iphone.items() if k != "default_browser_type"}
        self.page = browser.new_page(
            **(options if phone else {"viewport": {"width": 1280, "height": 900}})
        )
        self.target = self.page  # the page, or one of its frames (``frame``)
        self._errors = []
        self.page.on("console", lambda m: m.type == "error" and self._errors.append(m.text))
        self.page.on("pageerror", lambda e: self._errors.append(f"uncaught: {e}"))

    def goto(self, url):
        self.page.goto(url, wait_until="domcontentloaded")

    def evaluate(self, expression):
        return self.target.evaluate(expression)

    def _enter_frame(self, index):
        if index is None:
            self.target = self.page
        else:
            self.target = self.page.locator("iframe").nth(index).element_handle().content_frame()

    def press(self, element_expression, key):
        self.target.evaluate_handle(element_expression).as_element().press(key)

    def tap(self, x, y):
        self.page.touchscreen.tap(x, y)

    def screenshot(self, path):
        self.page.screenshot(path=path, full_page=True)

    def pdf(self):
        return self.page.pdf(format="A4")

    def resize(self, width, height):
        self.page.set_viewport_size({"width": width, "height": height})

    def errors(self):
        errors, self._errors = self._errors, []
        return errors


class Firefox(Engine):
    name = "firefox"

    def __init__(self, stack: contextlib.ExitStack, phone: bool = False):
        self.process = subprocess.Popen(
            [
                "node",
                str(DRIVERS / "firefox.mjs"),
                *(["--phone", json.dumps(PHONE)] if phone else []),
            ],
            cwd=DRIVERS,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        stack.callback(self._stop)
        self.version = self._answer()

    def _answer(self):
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError("the Firefox driver exited; see its output above")
        answer = json.loads(line)
        if not answer["ok"]:
            raise RuntimeError(f"firefox: {answer['error']}")
        return answer["value"]

    def _call(self, op, **fields):
        self.process.stdin.write(json.dumps({"op": op, **fields}) + "\n")
        self.process.stdin.flush()
        return self._answer()

    def _stop(self):
        with contextlib.suppress(OSError, RuntimeError, ValueError):
            self._call("close")
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGTERM)
        self.process.wait(timeout=30)
        self.process.stdin.close()
        self.process.stdout.close()

    def goto(self, url):
        self._call("goto", url=url)

    def evaluate(self, expression):
        return self._call("evaluate", expression=expression)

    def _enter_frame(self, index):
        self._call("frame", index=index)

    def press(self, element_expression, key):
        self._call("press", expression=element_expression, key=key)

    def tap(self, x, y):
        self._call("tap", x=x, y=y)

    def screenshot(self, path):
        self._call("screenshot", path=str(path))

    def pdf(self):
        return base64.b64decode(self._call("pdf"))

    def resize(self, width, height):
        self._call("viewport", width=width, height=height)

    def errors(self):
        return self._call("errors")


# Installed into every page WebKit loads, as soon as it can be (WebDriver has no
# init scripts): collects errors the page reports, for ``WebKit.errors``.
WEBKIT_HOOK_JS = """
if (!window.__labErrors) {
  window.__labErrors = [];
  window.addEventListener('error', (e) => window.__labErrors.push(String(e.message)));
  window.addEventListener('unhandledrejection', (e) => window.__labErrors.push(
    `unhandled: ${e.reason}`));
  const original = console.error.bind(console);
  console.error = (...args) => { window.__labErrors.push(args.map(String).join(' '));
    original(...args); };
}
return true;
"""


class WebKit(Engine):
    name = "webkit"
    min_width = 447  # CSS px: WebKitGTK's window is no narrower (measured under Xvfb)

    def __init__(self, stack: contextlib.ExitStack, phone: bool = False):
        if phone:
            raise ValueError("webkit: WebKitGTK cannot stand in for a phone (see PHONES)")
        from selenium import webdriver
        from selenium.webdriver.remote.client_config import ClientConfig
        from selenium.webdriver.remote.remote_connection import RemoteConnection
        from selenium.webdriver.webkitgtk.options import Options

        port = free_port()
        server = subprocess.Popen(
            ["xvfb-run", "-a", "-s", "-screen 0 1920x1200x24", "WebKitWebDriver", f"--port={port}"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        stack.callback(self._stop_server, server)
        wait_for_http(f"http://127.0.0.1:{port}/status", timeout=60)
        options = Options()
        options.page_load_strategy = "none"  # return at once, to install the error hook early
        connection = RemoteConnection(
            client_config=ClientConfig(remote_server_addr=f"http://127.0.0.1:{port}")
        )
        self.driver = webdriver.Remote(command_executor=connection, options=options)
        stack.callback(self.driver.quit)
        self.driver.set_window_rect(width=1280, height=900)
        self._seen = 0
        self._in_frame = False

    @staticmethod
    def _stop_server(server):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=30)

    def goto(self, url):
        from selenium.common.exceptions import WebDriverException

        if self.driver.current_url.startswith("http"):
            self.driver.execute_script("window.__labLeaving = true")
        self.driver.get(url)  # returns at once (page_load_strategy "none")
        self._seen = 0
        deadline = time.monotonic() + 60
        while True:  # until the new page has a body; the old one may unload under us
            with contextlib.suppress(WebDriverException):
                if self.evaluate(
                    "location.href.startsWith('http') && !window.__labLeaving"
                    " && document.body !== null"
                ):
                    break
            if time.monotonic() > deadline:
                raise TimeoutError(f"webkit: {url} did not load")
            time.sleep(POLL)
        self.driver.execute_script(WEBKIT_HOOK_JS)

    def evaluate(self, expression):
        return self.driver.execute_script(f"return ({expression});")

    def _enter_frame(self, index):
        from selenium.webdriver.common.by import By

        self._in_frame = index is not None
        if index is None:
            self.driver.switch_to.default_content()
        else:
            self.driver.switch_to.frame(self.driver.find_elements(By.TAG_NAME, "iframe")[index])

    def press(self, element_expression, key):
        from selenium.webdriver.common.action_chains import ActionChains
        from selenium.webdriver.common.keys import Keys

        element = self.driver.execute_script(f"return ({element_expression});")
        self.driver.execute_script("arguments[0].focus()", element)
        if self._in_frame:  # WebKitGTK keys the top page's focus; a click moves it here
            ActionChains(self.driver).click(element).perform()
        ActionChains(self.driver).send_keys(getattr(Keys, _selenium_key(key))).perform()

    def screenshot(self, path):
        self.driver.get_screenshot_as_file(str(path))

    def resize(self, width, height):
        # The window is the viewport plus whatever frame WebKitGTK draws: measure it.
        if width < self.min_width:
            raise ValueError(f"webkit: WebKitGTK's window is at least {self.min_width} px wide")
        self.driver.set_window_rect(width=width, height=height)
        inner = self.evaluate("[innerWidth, innerHeight]")
        self.driver.set_window_rect(width=2 * width - inner[0], height=2 * height - inner[1])

    def errors(self):
        errors = self.evaluate("window.__labErrors || []")
        new, self._seen = errors[self._seen :], len(errors)
        return new


def _selenium_key(key: str) -> str:
    """Selenium's name of a Playwright key name: ArrowRight -> ARROW_RIGHT."""
    return "".join(f"_{c}" if c.isupper() and i else c for i, c in enumerate(key)).upper()


# Each embed's state, as a course page of tests/support/fixtures/course_page.html heard it
# ("fitting" until its frame is as high as it said its content is).
EMBED_STATES_JS = """JSON.stringify(embedStates().map((said, index) => said && (Math.abs(
  document.querySelectorAll('iframe')[index].getBoundingClientRect().height - said.height) <= 1
  ? said.state : 'fitting')))"""


def print_in_webkit(
    url: str, embeds: int, pdf: Path, states_js: str = EMBED_STATES_JS, timeout=BOOT_SECONDS
) -> list:
    """Print the course page at ``url`` to ``pdf`` in WebKitGTK, once each of its
    ``embeds`` embeds, scrolled to in turn, said it is ready (``states_js``: the JSON
    of each one's state, as the course page heard it, once its frame fits it); return
    what each said. WebKitGTK itself, through GObject introspection
    (tests/support/drivers/webkit_print.py): its WebDriver does not print. Its fresh WebKit
    boots the embeds one after another (past 120 s in CI beside the other worker's
    browsers); the ``timeout`` is every engine's boot allowance."""
    command = ["xvfb-run", "-a", "/usr/bin/python3", str(WEBKIT_PRINT), url, str(pdf)]
    run = subprocess.run(
        [*command, str(embeds), str(timeout), states_js],
        capture_output=True,
        text=True,
        timeout=timeout + 60,
    )
    outcome = json.loads(run.stdout.strip().splitlines()[-1]) if run.stdout.strip() else {}
    assert run.returncode == 0, (outcome, run.stderr[-2000:])
    return outcome["states"]


@contextlib.contextmanager
def open_engine(name: str, phone: bool = False):
    """A browser of the named engine (see ``ENGINES``), closed on exit; with ``phone``,
    standing in for a phone (``PHONES``)."""
    with contextlib.ExitStack() as stack:
        yield {"chromium": Chromium, "firefox": Firefox, "webkit": WebKit}[name](stack, phone)
