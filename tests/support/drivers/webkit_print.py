"""Prints a course page to PDF in WebKitGTK, for tests/support/engines.py (``print_in_webkit``).

WebKitGTK's WebDriver has no Print command, so this drives WebKitGTK itself, through
GObject introspection (Debian's gir1.2-webkit2-4.1 and python3-gi: run it with the
system's Python, under xvfb-run). It opens the course page, scrolls to each embed in
turn and waits until it says it is ready (STATES_JS, an expression of the course page:
the JSON of each embed's state, as the page heard it), then prints the page as WebKit
prints it (no dialog) and says, as JSON on its last line, what each embed said and
how many seconds after the start each was ready (so a timeout says which was slow).

    xvfb-run -a /usr/bin/python3 tests/support/drivers/webkit_print.py URL OUT.pdf EMBEDS \
        TIMEOUT_S STATES_JS
"""

import json
import sys
import time

import gi

gi.require_version("Gtk", "3.0")
gi.require_version("WebKit2", "4.1")
from gi.repository import GLib, Gtk, WebKit2  # noqa: E402

POLL_MS = 100


def main(url: str, out: str, embeds: int, timeout_s: float, states_js: str) -> int:
    window = Gtk.OffscreenWindow()
    view = WebKit2.WebView(is_ephemeral=True)  # a fresh profile, kept in memory
    view.set_size_request(1280, 900)
    window.add(view)
    window.show_all()
    outcome = {"error": None, "states": None, "ready_after_s": []}
    start = time.monotonic()

    def evaluate(script, then):
        """Run ``script`` in the page; ``then`` its value as text (None: it threw)."""

        def done(view, result):
            try:
                value = view.evaluate_javascript_finish(result).to_string()
            except GLib.Error:
                value = None
            then(value)

        view.evaluate_javascript(script, -1, None, None, None, done)

    def stop(error=None):
        outcome["error"] = outcome["error"] or error
        Gtk.main_quit()

    def wait_for(index):
        if index == embeds:
            return print_page()
        scroll = f"document.querySelectorAll('iframe')[{index}].scrollIntoView(); 'ok'"
        evaluate(scroll, lambda _: poll(index))

    def poll(index):
        def read(states):  # (None: the page has no embedStates() yet)
            outcome["states"] = json.loads(states) if states else None
            if outcome["states"] and outcome["states"][index] in ("ready", "busy", "failed"):
                outcome["ready_after_s"].append(round(time.monotonic() - start, 1))
                return wait_for(index + 1)
            GLib.timeout_add(POLL_MS, lambda: poll(index))  # (None: once)

        evaluate(states_js, read)

    def print_page():
        settings = Gtk.PrintSettings()
        settings.set_printer("Print to File")
        settings.set(Gtk.PRINT_SETTINGS_OUTPUT_FILE_FORMAT, "pdf")
        settings.set(Gtk.PRINT_SETTINGS_OUTPUT_URI, GLib.filename_to_uri(out))
        operation = WebKit2.PrintOperation.new(view)
        operation.set_print_settings(settings)
        operation.connect("finished", lambda _: stop())
        operation.connect("failed", lambda _, error: stop(f"printing failed: {error}"))
        operation.print_()

    def loaded(view, event):
        if event == WebKit2.LoadEvent.FINISHED:
            wait_for(0)

    view.connect("load-changed", loaded)
    view.load_uri(url)
    GLib.timeout_add(int(timeout_s * 1000), lambda: stop(f"not printed in {timeout_s} s"))
    Gtk.main()
    print(json.dumps(outcome))
    return 0 if outcome["error"] is None else 1


if __name__ == "__main__":
    url, out, embeds, timeout_s, states_js = sys.argv[1:]
    sys.exit(main(url, out, int(embeds), float(timeout_s), states_js))
