"""The reader-visible content of an exported report page: headings, prose, lists and tables, figures as a marker.

Wrapper markup (nbconvert's cell divs, anchors, styles, scripts) and image bytes are dropped, so a page that says the
same things in the same order reads the same whether its prose comes from a markdown cell or a section's output."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

KEEP = {"h1", "h2", "h3", "h4", "p", "li", "ul", "ol", "table", "thead", "tbody", "tr", "th", "td", "em", "strong",
        "code", "pre", "a", "blockquote"}
BLOCK = {"h1", "h2", "h3", "h4", "p", "li", "ul", "ol", "table", "thead", "tbody", "tr", "pre", "blockquote"}
# the build time is the one thing that differs between two renderings of the same results
BUILT = re.compile(r"Built \d{4}-\d\d-\d\d \d\d:\d\d UTC")


class _Content(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.out: list[str] = []
        self.hidden = 0  # depth inside <style>, <script> or a heading's anchor link
        self.body = False

    def handle_starttag(self, tag: str, attrs) -> None:
        a = dict(attrs)
        if tag == "body":
            self.body = True
        if tag in ("style", "script") or (tag == "a" and "anchor-link" in (a.get("class") or "")):
            self.hidden += 1
        elif tag == "img":
            self.out.append("[figure]\n")
        elif tag in KEEP and not self.hidden:
            href = f' href="{a["href"]}"' if tag == "a" and a.get("href") else ""
            self.out.append(("\n" if tag in BLOCK else "") + f"<{tag}{href}>")

    def handle_endtag(self, tag: str) -> None:
        if self.hidden and tag in ("style", "script", "a"):
            self.hidden -= 1
        elif tag in KEEP and not self.hidden:
            self.out.append(f"</{tag}>")

    def handle_data(self, data: str) -> None:
        if self.body and not self.hidden and (text := " ".join(data.split())):
            self.out.append(text)


def page_content(html: Path) -> str:
    parser = _Content()
    parser.feed(html.read_text())
    text = "\n".join(line for line in "".join(parser.out).splitlines() if line.strip()) + "\n"
    return BUILT.sub("Built <time> UTC", text)
