"""Labels in real headless Chromium (issues 19 and 32), on a wide and a narrow window: tubes
with long, similar names get labels that tell them apart, the code's text is printed under
the bars with the date and the owner's initials, a scanned barcode is accepted, and the roll
format prints each label on a 50 × 25 mm page of its own — all under the strict CSP and
without a horizontal scroll bar.

What the printer gets is checked too: the page is printed to PDF by Chromium (as its Print
button does), the PDF rasterised at a thermal label printer's 203 dpi (pypdfium2) and each
label's cell of the sheet read by two decoders, zxing-cpp and zbar's ``zbarimg`` (which read
none of the Micro QR codes labels used to carry): every QR code and Code 128 barcode must
decode to its own label's code, and the names the PDF prints must differ."""
from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from urllib.error import HTTPError

import pypdfium2
import pytest
import zxingcpp
from PIL.Image import Image
from playwright.sync_api import Page, expect

from tests.browser.axe import assert_no_serious_violations
from tests.browser.conftest import BROWSER_MARKS, create_entities, log_in

pytestmark = BROWSER_MARKS

WIDTHS = [1366, 768]
CLONE_7 = "pLentiCRISPRv2-sgRNA-BRCA1-clone7"
CLONE_8 = "pLentiCRISPRv2-sgRNA-BRCA1-clone8"
PT_PER_MM = 72 / 25.4
DPI = 203  # a thermal label printer's; office printers print sheets at 300 or 600
# The A4 sheet as app.css prints it (L7160): page margins, label size and column gap, in mm.
SHEET_LEFT, SHEET_TOP, LABEL_WIDTH, LABEL_HEIGHT, COLUMN_GAP = 7, 15, 63.5, 38.1, 2.5
COLUMNS = 3
# Names a label must survive: alike up to their end, control characters and a right-to-left
# override, right-to-left script, emoji (one joined, one with a skin tone), wide letters.
COHORT_17 = "Cohort-Alpha plasma P-0017"
COHORT_18 = "Cohort-Alpha plasma P-0018"
HOSTILE_NAMES = [
    "Tube\x01\x07 7\tA\u202eevil end",
    "عينة الدم رقم ١٧ من المجموعة ألفا، الزيارة الثالثة",
    "🧪 plasma 👩‍🔬👍🏽 " * 6 + "tube 9",
    "W" * 30 + "-1",  # as wide as a sheet label takes, more than a font prints in two lines
    "x" * 254 + "Z",
]
UNCODABLE = "Ü-17 🧪"  # a barcode Code 128 cannot carry


# Whether each name's text lies within its box (none clipped), and whether its end does (the
# lines kept are the last ones).
NAMES_SHOWN_WHOLE = """all => all.every(name => {
    const box = name.getBoundingClientRect(), text = name.firstElementChild.getBoundingClientRect();
    return text.top >= box.top - 0.5 && text.bottom <= box.bottom + 0.5;
})"""
NAME_ENDS_SHOWN = """all => all.every(name => Math.abs(
    name.firstElementChild.getBoundingClientRect().bottom - name.getBoundingClientRect().bottom
) < 0.5)"""
# The parts of each label that lie outside it, or a name over the line below it.
LABEL_SPILLS = """labels => labels.flatMap(label => {
    const outer = label.getBoundingClientRect(), spills = [];
    for (const part of label.querySelectorAll(
            ".label-qr, .label-name, .label-meta, .label-barcode, .label-code")) {
        const box = part.getBoundingClientRect();
        if (box.left < outer.left - 0.5 || box.right > outer.right + 0.5
                || box.top < outer.top - 0.5 || box.bottom > outer.bottom + 0.5) {
            spills.push(label.dataset.label + " " + part.className);
        }
    }
    const name = label.querySelector(".label-name").getBoundingClientRect();
    if (name.bottom > label.querySelector(".label-meta").getBoundingClientRect().top + 0.5) {
        spills.push(label.dataset.label + " name over meta");
    }
    return spills;
})"""


def open_at(page: Page, base_url: str, width: int) -> None:
    page.set_viewport_size({"width": width, "height": 900})
    log_in(page, base_url)


def no_horizontal_scroll(page: Page) -> bool:
    return page.evaluate("document.documentElement.scrollWidth"
                         " <= document.documentElement.clientWidth")


def pdf_pages_mm(page: Page) -> list[tuple[float, float]]:
    """The size of each page Chromium prints, in millimetres (from the PDF's MediaBoxes)."""
    pdf = page.pdf(prefer_css_page_size=True)
    boxes = re.findall(rb"/MediaBox\s*\[\s*0 0 ([\d.]+) ([\d.]+)\s*\]", pdf)
    return [(round(float(w) / PT_PER_MM), round(float(h) / PT_PER_MM)) for w, h in boxes]


Box = tuple[float, float, float, float]  # left, top, right, bottom in mm from the top left


@dataclass(frozen=True)
class PrintedLabel:
    """One label as printed: the codes zxing-cpp read in its cell (format, text), the texts
    zbar read there, and the text the PDF prints in it, without white space."""

    zxing: list[tuple[str, str]]
    zbar: list[str]
    text: str


def compact(text: str) -> str:
    return "".join(text.split())


def sheet_cell(index: int) -> tuple[int, Box]:
    """The page of the ``index``-th label of an A4 sheet and its cell on that page."""
    page_number, place = divmod(index, COLUMNS * 7)
    row, column = divmod(place, COLUMNS)
    left, top = SHEET_LEFT + column * (LABEL_WIDTH + COLUMN_GAP), SHEET_TOP + row * LABEL_HEIGHT
    return page_number, (left, top, left + LABEL_WIDTH, top + LABEL_HEIGHT)


def zbar_read(image: Image, folder: Path) -> list[str]:
    """The texts ``zbarimg`` reads in ``image``, sorted."""
    zbarimg = shutil.which("zbarimg")
    assert zbarimg is not None, "zbarimg is missing (apt-get install -y zbar-tools)"
    picture = folder / "cell.png"
    image.save(picture)
    result = subprocess.run([zbarimg, "--quiet", "--raw", str(picture)], capture_output=True,
                            text=True, timeout=60, check=False)
    assert result.returncode in (0, 4), result.stderr  # 4: no code found
    return sorted(result.stdout.splitlines())


def read_printed(pdf: bytes, cells: list[tuple[int, Box | None]],
                 folder: Path) -> list[PrintedLabel]:
    """What each cell of the PDF holds (a page and a box on it; None for the whole page),
    rasterised at :data:`DPI` as a printer would."""
    document = pypdfium2.PdfDocument(pdf)
    try:
        printed = []
        for page_number, cell in cells:
            pdf_page = document[page_number]
            width, height = pdf_page.get_size()
            left, top, right, bottom = cell or (0, 0, width / PT_PER_MM, height / PT_PER_MM)
            image = pdf_page.render(scale=DPI / 72).to_pil()
            pixels = DPI / 25.4
            image = image.crop((round(left * pixels), round(top * pixels),
                                round(right * pixels), round(bottom * pixels)))
            words = pdf_page.get_textpage()
            text = words.get_text_bounded(left * PT_PER_MM, height - bottom * PT_PER_MM,
                                          right * PT_PER_MM, height - top * PT_PER_MM)
            words.close()
            pdf_page.close()
            printed.append(PrintedLabel(
                sorted((code.format.name, code.text) for code in zxingcpp.read_barcodes(image)),
                zbar_read(image, folder), compact(text)))
        return printed
    finally:
        document.close()


def create_hostile_labels(base_url: str) -> list[dict[str, str]]:
    """Samples named :data:`HOSTILE_NAMES`, then one whose barcode Code 128 cannot carry;
    the API refuses a name of 10,000 characters."""
    with pytest.raises(HTTPError, match="400"):
        create_entities(base_url, {"eClass": "Sample", "name": "x" * 10_000})
    return create_entities(base_url,
                           *({"eClass": "Sample", "name": name} for name in HOSTILE_NAMES),
                           {"eClass": "Sample", "name": "Tube Ü", "barcode": UNCODABLE})


def codes_expected(code: str) -> list[tuple[str, str]]:
    """What a sheet label carrying ``code`` must decode to: a standard QR code and, when it
    can carry the code, Code 128."""
    if code == UNCODABLE:
        return [("QRCode", code)]
    return [("Code128", code), ("QRCode", code)]


def test_every_code_of_a_printed_sheet_reads_back_as_its_own_label(
        page: Page, live_server: str, tmp_path: Path) -> None:
    cohort = create_entities(live_server,
                             {"eClass": "Sample", "name": COHORT_17, "barcode": "MB0240017"},
                             {"eClass": "Sample", "name": COHORT_18},
                             {"eClass": "Plate", "name": "Plate 1"},
                             {"eClass": "Location", "name": "Box 12"})
    hostile = create_hostile_labels(live_server)
    entities = cohort + hostile
    log_in(page, live_server)
    page.goto("/storage/labels?ids=" + "+".join(entity["id"] for entity in entities))
    expect(page.locator(".label")).to_have_count(len(entities))
    codes = page.locator(".label-code").all_text_contents()
    names = page.locator(".label-name").all_text_contents()
    assert codes[:2] == ["MB0240017", cohort[1]["id"]] and codes[-1] == UNCODABLE

    labels = read_printed(page.pdf(prefer_css_page_size=True),
                          [sheet_cell(index) for index in range(len(entities))], tmp_path)
    for entity, code, label in zip(entities, codes, labels, strict=True):
        assert label.zxing == codes_expected(code), entity["name"]
        assert label.zbar == sorted(text for _, text in codes_expected(code)), entity["name"]
        # The meta line prints whole: no name runs over it.
        assert compact(f"{entity['eClass']} {entity['id']}") in label.text, entity["name"]
    # The names alike up to their end print whole, and differently.
    assert [labels[0].text.find(compact(COHORT_17)), labels[1].text.find(compact(COHORT_18))] \
        == [0, 0]
    # Hostile names: the end of the name prints (left-to-right ones; the PDF's text of a
    # right-to-left or emoji name is not in reading order), control characters do not.
    for name, label in zip(names[4:], labels[4:], strict=False):
        if name.isascii():
            assert compact(name)[-4:] in label.text and "\x01" not in label.text, name


def test_a_printed_roll_carries_one_readable_code_per_page(page: Page, live_server: str,
                                                           tmp_path: Path) -> None:
    entities = create_entities(live_server,
                               {"eClass": "Sample", "name": COHORT_17, "barcode": "MB0240017"},
                               {"eClass": "Sample", "name": COHORT_18},
                               {"eClass": "Sample", "name": HOSTILE_NAMES[3]})
    log_in(page, live_server)
    page.goto("/storage/labels?format=roll&ids="
              + "+".join(entity["id"] for entity in entities))
    expect(page.locator(".label")).to_have_count(3)
    names = page.locator(".label-name").all_text_contents()
    pdf = page.pdf(prefer_css_page_size=True)
    labels = read_printed(pdf, [(number, None) for number in range(3)], tmp_path)
    for entity, name, label in zip(entities, names, labels, strict=True):
        code = entity.get("barcode") or entity["id"]
        assert label.zxing == [("Code128", code)] and label.zbar == [code]
        assert compact(name)[-6:] in label.text
        assert compact(f"Sample {entity['id']}") in label.text
    assert "P-0017" in labels[0].text and "P-0018" in labels[1].text


@pytest.mark.parametrize("width", WIDTHS)
def test_similar_long_names_get_labels_that_tell_them_apart(page: Page, live_server: str,
                                                            width: int) -> None:
    seven, eight = create_entities(live_server,
                                   {"eClass": "Sample", "name": CLONE_7, "barcode": "MB0240007"},
                                   {"eClass": "Sample", "name": CLONE_8})
    open_at(page, live_server, width)
    page.goto(f"/storage/labels?ids={seven['id']}+{eight['id']}")
    names = page.locator(".label-name")
    expect(names).to_have_text(["pLentiCRISPRv2-…RNA-BRCA1-clone7",
                                "pLentiCRISPRv2-…RNA-BRCA1-clone8"])
    # The shortened names fit their two lines: the browser cuts nothing off.
    assert names.evaluate_all(NAMES_SHOWN_WHOLE)
    today = datetime.now(UTC).date().isoformat()
    for entity, code in ((seven, "MB0240007"), (eight, eight["id"])):
        label = page.locator(f'[data-label="{entity["id"]}"]')
        expect(label.locator("svg")).to_have_count(2)
        bars = label.locator(".label-barcode svg").bounding_box()
        text = label.locator(".label-code")
        expect(text).to_be_visible()
        expect(text).to_have_text(code)
        under = text.bounding_box()
        assert bars["y"] + bars["height"] - 1 <= under["y"] <= bars["y"] + bars["height"] + 4
        assert abs((under["x"] + under["width"] / 2) - (bars["x"] + bars["width"] / 2)) < 2
        meta = label.locator(".label-meta").bounding_box()
        for part, expected in ((".label-date", today), (".label-owner", "CC")):
            expect(label.locator(part)).to_have_text(expected)
            box = label.locator(part).bounding_box()
            assert box["y"] + box["height"] <= meta["y"] + meta["height"] + 0.5, part
    assert no_horizontal_scroll(page)
    assert pdf_pages_mm(page) == [(210, 297)]


@pytest.mark.parametrize("width", WIDTHS)
def test_a_scanned_barcode_prints_on_the_roll(page: Page, live_server: str,
                                              width: int) -> None:
    tube, plate = create_entities(live_server,
                                  {"eClass": "Sample", "name": CLONE_7, "barcode": "MB0240002"},
                                  {"eClass": "Plate", "name": "Plate 1"})
    open_at(page, live_server, width)
    page.goto("/storage/labels")
    page.fill("#label-ids", f"MB0240002\n{plate['id']}\n")
    page.select_option("#label-format", "roll")
    page.click("#labels-form button[type=submit]")
    page.wait_for_url(re.compile(r"format=roll"))
    expect(page.locator("#labels-skipped")).to_have_count(0)
    expect(page.locator(".label")).to_have_count(2)
    label = page.locator(f'[data-label="{tube["id"]}"]')
    expect(label.locator(".label-code")).to_have_text("MB0240002")
    expect(label.locator(".label-qr")).to_have_count(0)
    expect(page.locator("#label-format")).to_have_value("roll")
    box = label.bounding_box()
    assert (round(box["width"] * 25.4 / 96), round(box["height"] * 25.4 / 96)) == (50, 25)
    assert no_horizontal_scroll(page)
    assert pdf_pages_mm(page) == [(50, 25), (50, 25)]


@pytest.mark.parametrize("width", WIDTHS)
def test_an_unknown_format_says_which_formats_exist(page: Page, live_server: str,
                                                    width: int) -> None:
    open_at(page, live_server, width)
    response = page.goto("/storage/labels?format=a5&ids=X")
    assert response is not None and response.status == 400
    expect(page.locator(".problem-detail")).to_have_text(
        "Unknown label format 'a5': choose 'sheet' or 'roll'.")
    assert no_horizontal_scroll(page)


@pytest.mark.parametrize("width", WIDTHS)
def test_hostile_names_keep_every_label_in_its_box(page: Page, live_server: str,
                                                   width: int) -> None:
    entities = create_hostile_labels(live_server)
    open_at(page, live_server, width)
    page.goto("/storage/labels?ids=" + "+".join(entity["id"] for entity in entities))
    labels = page.locator(".label")
    expect(labels).to_have_count(len(entities))
    names = page.locator(".label-name")
    expect(names.first).to_have_text("Tube 7 Aevil end")  # controls dropped, no override
    expect(names.nth(1).locator("span")).to_have_attribute("dir", "auto")
    expect(page.locator(".label-qr svg")).to_have_count(len(entities))
    expect(page.locator(".label-barcode svg")).to_have_count(len(entities) - 1)
    expect(labels.last.locator(".label-code")).to_have_text(UNCODABLE)
    for media in ("screen", "print"):
        page.emulate_media(media=media)
        assert labels.evaluate_all(LABEL_SPILLS) == [], media
        assert names.evaluate_all(NAME_ENDS_SHOWN), media
        sizes = labels.evaluate_all("all => all.map(label => [label.offsetWidth, "
                                    "label.offsetHeight])")
        assert {(round(w * 25.4 / 96, 1), round(h * 25.4 / 96, 1)) for w, h in sizes} == {
            (LABEL_WIDTH, LABEL_HEIGHT)}, media
    page.emulate_media(media="screen")
    assert no_horizontal_scroll(page)
    assert_no_serious_violations(page)
