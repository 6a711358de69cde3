"""A tiny HTML element finder for the UI tests (stdlib html.parser): elements by tag and attributes, with text."""

from __future__ import annotations

from dataclasses import dataclass, field
from html.parser import HTMLParser

_VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}


@dataclass
class Element:
    tag: str
    attrs: dict[str, str]
    children: list[Element] = field(default_factory=list)
    parts: list[str] = field(default_factory=list)

    @property
    def text(self) -> str:
        """All text inside, whitespace-collapsed."""
        out: list[str] = []

        def walk(e: Element) -> None:
            out.extend(e.parts)
            for c in e.children:
                walk(c)

        walk(self)
        return " ".join(" ".join(out).split())

    def find_all(self, tag: str | None = None, **attrs: str) -> list[Element]:
        """Descendants with this tag (any if None) whose attributes contain ``attrs`` (``class_`` -> a class)."""
        found: list[Element] = []
        for c in self.children:
            if (tag is None or c.tag == tag) and _matches(c, attrs):
                found.append(c)
            found.extend(c.find_all(tag, **attrs))
        return found

    def find(self, tag: str | None = None, **attrs: str) -> Element:
        """The first match; AssertionError if none."""
        hits = self.find_all(tag, **attrs)
        assert hits, f"no <{tag or '*'}> with {attrs}"
        return hits[0]


def _matches(e: Element, attrs: dict[str, str]) -> bool:
    for k, v in attrs.items():
        if k == "class_":
            if v not in e.attrs.get("class", "").split():
                return False
        elif e.attrs.get(k.replace("_", "-")) != v:
            return False
    return True


class _Builder(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Element("#root", {})
        self.stack = [self.root]

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        e = Element(tag, {k: v or "" for k, v in attrs})
        self.stack[-1].children.append(e)
        if tag not in _VOID:
            self.stack.append(e)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.stack[-1].children.append(Element(tag, {k: v or "" for k, v in attrs}))

    def handle_endtag(self, tag: str) -> None:
        for i in range(len(self.stack) - 1, 0, -1):
            if self.stack[i].tag == tag:
                del self.stack[i:]
                return

    def handle_data(self, data: str) -> None:
        self.stack[-1].parts.append(data)


def parse(html: str) -> Element:
    """The document as an :class:`Element` tree."""
    b = _Builder()
    b.feed(html)
    b.close()
    return b.root


def num(value: str) -> float | None:
    """A ``data-value`` attribute as a float (``None`` for '' or 'None')."""
    return None if value in ("", "None") else float(value)
