"""Images from MCP servers drawn in the terminal as coloured half cells, decoded by Pillow.

Each character cell shows two pixels, one above the other (``▀`` with the upper pixel as foreground and
the lower as background), so an image works in any terminal with colour, tmux included, and needs no
terminal query at start-up. Pillow is imported on the first image only. The bytes are untrusted: only the
raster formats below are decoded, a header claiming more than ``MAX_PIXELS`` pixels is refused before any
pixel is decoded, and a file that fails to decode is described instead of drawn.
"""

from __future__ import annotations

import io
import warnings

from rich.style import Style
from rich.text import Text

FORMATS = ("PNG", "JPEG", "GIF", "WEBP", "BMP")
"""The image formats decoded; any other bytes are described, never handed to another decoder."""

MAX_PIXELS = 16_000_000
"""The largest image (width × height, as its header says) that is decoded at all."""

MAX_COLUMNS, MAX_ROWS = 64, 24
"""The largest drawing, in character cells; a bigger image is scaled down to fit, keeping its shape."""

MIN_COLUMNS = 32
"""A smaller image (an icon) is drawn this wide at least, each pixel as a block of cells."""

_UPPER, _LOWER = "▀", "▄"
_OPAQUE = 128


def image_cells(data: bytes, columns: int = MAX_COLUMNS, rows: int = MAX_ROWS) -> Text | str:
    """``data`` drawn in at most ``columns`` × ``rows`` cells, or why it cannot be drawn (a string)."""
    try:
        from PIL import Image, ImageFile, UnidentifiedImageError
    except ImportError:  # pragma: no cover - Pillow is a dependency; a broken install says so
        return "images cannot be drawn: Pillow is not installed"
    # Draw what a browser would: a bad checksum on an ancillary chunk (the reference server's own logo
    # has one on its colour profile) or a cut-off end is not a reason to show nothing. Only this
    # process decodes images, and only to draw them.
    ImageFile.LOAD_TRUNCATED_IMAGES = True
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            with Image.open(io.BytesIO(data), formats=FORMATS) as image:
                width, height = image.size
                if width * height > MAX_PIXELS:
                    return f"not drawn: {width:,} × {height:,} pixels is over {MAX_PIXELS:,}"
                image.draft("RGB", (columns, rows * 2))
                pixels = image.convert("RGBA")
    except (Image.DecompressionBombError, Image.DecompressionBombWarning):
        return f"not drawn: the image claims more than {MAX_PIXELS:,} pixels"
    except UnidentifiedImageError:
        return "not drawn: the bytes are not an image of a known kind (PNG, JPEG, GIF, WebP, BMP)"
    except (OSError, ValueError, SyntaxError, EOFError):
        return "not drawn: the image data is damaged"
    pixels.thumbnail((columns, rows * 2))
    width, height = pixels.size
    factor = min(-(-MIN_COLUMNS // max(1, width)), columns // max(1, width), rows * 2 // max(1, height))
    if factor > 1:
        pixels = pixels.resize((width * factor, height * factor), Image.Resampling.NEAREST)
    return _half_cells(pixels)


def picture(data: bytes | None) -> Text:
    """``data`` drawn (:func:`image_cells`), or why it is not, in words; ``None`` is data that could not be
    decoded (not base64, or over the size bound)."""
    if data is None:
        return Text("not drawn: the data is not valid base64 or too big", style="yellow")
    drawn = image_cells(data)
    return drawn if isinstance(drawn, Text) else Text(drawn, style="yellow")


def _half_cells(image: object) -> Text:
    from PIL import Image

    assert isinstance(image, Image.Image)
    width, height = image.size
    data = image.load()
    assert data is not None
    text = Text(no_wrap=True, overflow="crop")
    for top in range(0, height, 2):
        if top:
            text.append("\n")
        for x in range(width):
            upper = data[x, top]
            lower = data[x, top + 1] if top + 1 < height else (0, 0, 0, 0)
            text.append(*_cell(upper, lower))  # type: ignore[arg-type]
    return text


def _colour(pixel: tuple[int, int, int, int]) -> str | None:
    red, green, blue, alpha = pixel
    return f"rgb({red},{green},{blue})" if alpha >= _OPAQUE else None


def _cell(upper: tuple[int, int, int, int], lower: tuple[int, int, int, int]) -> tuple[str, Style]:
    """One cell of two pixels; a transparent pixel leaves the terminal's own background."""
    top, bottom = _colour(upper), _colour(lower)
    if top is None and bottom is None:
        return " ", Style()
    if top is None:
        return _LOWER, Style(color=bottom)
    return _UPPER, Style(color=top, bgcolor=bottom)
