"""A course page's embeds printed, for the tests of print: what each embed prints
(``PRINTED_EMBEDS``), how many figures its print hook drew, and the checks of a PDF
(each embed's scenario in words, each figure an image of more than one colour).
"""

import subprocess
from pathlib import Path

from PIL import Image

PRINTED_FIGURES_JS = "() => Number(document.documentElement.dataset.labPrinted)"


# A course page of two embeds, and what each prints: its figures, its scenario's words.
PRINTED_EMBEDS = {
    "?views=histogram&d_k=16": (1, ["d_k = 16", "scaling ÷ √d_k"]),
    "?views=heatmap,entropy&d_k=512&scaling=linear": (2, ["d_k = 512", "scaling ÷ d_k,"]),
}


def assert_printed_words(pdf: Path, embeds: dict = PRINTED_EMBEDS):
    """The PDF of a course page of ``embeds`` ({link: (figures, words)}) holds each
    embed's scenario in words."""
    text = subprocess.run(["pdftotext", pdf, "-"], capture_output=True, text=True, check=True)
    for _, words in embeds.values():
        for word in words:
            assert word in text.stdout, (word, text.stdout)


def assert_printed_pdf(pdf: Path, folder: Path, embeds: dict = PRINTED_EMBEDS):
    """The PDF of a course page of ``embeds`` ({link: (figures, words)}) holds each
    embed's scenario in words and each of its figures as an
    image, not of one colour (WebKit printed a canvas made for the print black);
    ``folder`` takes its images. (A figure may lie across two sheets: a frame taller
    than the sheet is cut where the sheet ends, WebKit keeping one image on both and
    Firefox making it two.)"""
    assert_printed_words(pdf, embeds)
    listed = subprocess.run(["pdfimages", "-list", pdf], capture_output=True, text=True, check=True)
    images = [line.split() for line in listed.stdout.splitlines()[2:]]
    drawn = {}  # each image's number in the list, by its object (not its alpha, "smask")
    for _, number, kind, *_, object_id, _, _, _, _, _ in images:
        if kind == "image":
            drawn.setdefault(object_id, int(number))
    assert len(drawn) >= sum(figures for figures, _ in embeds.values()), listed.stdout
    subprocess.run(["pdfimages", "-png", pdf, folder / "image"], check=True)
    for number in drawn.values():
        colours = Image.open(folder / f"image-{number:03d}.png").convert("RGB").getcolors(2)
        assert colours is None, (number, colours)  # (None: more than two colours)
