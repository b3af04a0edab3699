#!/usr/bin/env python3
"""Check every relative link and anchor of the book and the README.

- The built book (docs/book/*.html, after `mdbook build docs`): every
  relative href/src resolves to a file, and every #fragment to an id in the
  target page. Links that leave the book point into the repository (e.g.
  ../../examples/...) and must name a file or directory there; mdbook
  turns every `.md` link into `.html`, so one whose `.md` exists is fine.
- The Markdown sources (README.md and docs/src/**/*.md), as GitHub shows
  them: every relative link resolves to a file or directory, and every
  #fragment into a Markdown file to one of its headings.

Exit 1 listing every broken link; no network is used (http(s) links are
not checked).

Usage: scripts/check-book-links.py [REPO_ROOT]
"""

import html.parser
import os
import re
import sys
import urllib.parse

ROOT = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), ".."))
BOOK_HTML = os.path.join(ROOT, "docs", "book")
BOOK_SRC = os.path.join(ROOT, "docs", "src")

errors = []


def is_external(url):
    return bool(re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", url)) or url.startswith("//")


# --- the built HTML ---------------------------------------------------------

class Page(html.parser.HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.ids = set()
        self.links = []
        self.in_code = 0

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if "id" in attrs:
            self.ids.add(attrs["id"])
        if tag == "a" and "name" in attrs:
            self.ids.add(attrs["name"])
        for name in ("href", "src"):
            if name in attrs and attrs[name] is not None:
                self.links.append((tag, attrs[name]))


_pages = {}


def page(path):
    if path not in _pages:
        parser = Page()
        with open(path, encoding="utf-8") as file:
            parser.feed(file.read())
        _pages[path] = parser
    return _pages[path]


def check_html():
    if not os.path.isdir(BOOK_HTML):
        errors.append(f"{BOOK_HTML} does not exist: run `mdbook build docs` first")
        return 0
    count = 0
    for directory, _, files in os.walk(BOOK_HTML):
        for name in files:
            # print.html repeats every chapter; 404.html is served from the site root.
            if not name.endswith(".html") or name in ("print.html", "404.html", "toc.html"):
                continue
            path = os.path.join(directory, name)
            relative_page = os.path.relpath(path, ROOT)
            for tag, url in page(path).links:
                if is_external(url) or url.startswith("javascript:"):
                    continue
                count += 1
                target, _, fragment = url.partition("#")
                target = urllib.parse.unquote(target.split("?")[0])
                fragment = urllib.parse.unquote(fragment)
                resolved = path if target == "" else os.path.normpath(os.path.join(directory, target))
                inside = resolved == BOOK_HTML or resolved.startswith(BOOK_HTML + os.sep)
                if inside:
                    if os.path.isdir(resolved):
                        resolved = os.path.join(resolved, "index.html")
                    if not os.path.exists(resolved):
                        errors.append(f"{relative_page}: <{tag}> {url}: no such page in the book")
                        continue
                    if fragment and resolved.endswith(".html") and fragment not in page(resolved).ids:
                        errors.append(f"{relative_page}: <{tag}> {url}: no id `{fragment}` in {os.path.relpath(resolved, ROOT)}")
                else:
                    # Out of the book: a file of the repository (docs/book sits
                    # where docs/src does, two levels below the root).
                    if not (resolved == ROOT or resolved.startswith(ROOT + os.sep)):
                        errors.append(f"{relative_page}: <{tag}> {url}: leaves the repository")
                        continue
                    exists = os.path.exists(resolved) or (
                        resolved.endswith(".html") and os.path.exists(resolved[: -len(".html")] + ".md")
                    )
                    if not exists:
                        errors.append(f"{relative_page}: <{tag}> {url}: no such file in the repository")
    return count


# --- the Markdown sources ---------------------------------------------------

def slug(heading):
    """The anchor GitHub (and mdBook) give a heading."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # links: their text
    text = re.sub(r"<[^>]+>", "", text)  # inline HTML
    text = text.strip().lower()
    text = "".join(c for c in text if c.isalnum() or c in " -_")
    return text.replace(" ", "-")


def anchors(path):
    result = set()
    seen = {}
    fence = False
    with open(path, encoding="utf-8") as file:
        for line in file:
            if line.lstrip().startswith("```"):
                fence = not fence
                continue
            if fence:
                continue
            match = re.match(r"^(#{1,6})\s+(.*?)\s*#*\s*$", line)
            if match:
                base = slug(match.group(2))
                n = seen.get(base, 0)
                seen[base] = n + 1
                result.add(base if n == 0 else f"{base}-{n}")
            for explicit in re.findall(r'<a\s+(?:name|id)="([^"]+)"', line):
                result.add(explicit)
    return result


LINK = re.compile(r"!?\[(?:[^\]\[]|\[[^\]]*\])*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")


def markdown_links(path):
    fence = False
    with open(path, encoding="utf-8") as file:
        for number, line in enumerate(file, 1):
            if line.lstrip().startswith("```"):
                fence = not fence
                continue
            if fence:
                continue
            # Inline code spans are not links.
            line = re.sub(r"`[^`]*`", "``", line)
            for match in LINK.finditer(line):
                yield number, match.group(1)


def check_markdown():
    sources = [os.path.join(ROOT, "README.md")]
    for directory, _, files in os.walk(BOOK_SRC):
        sources += [os.path.join(directory, name) for name in files if name.endswith(".md")]
    count = 0
    for source in sorted(sources):
        name = os.path.relpath(source, ROOT)
        for number, url in markdown_links(source):
            if is_external(url):
                continue
            count += 1
            target, _, fragment = url.partition("#")
            target = urllib.parse.unquote(target)
            resolved = source if target == "" else os.path.normpath(os.path.join(os.path.dirname(source), target))
            if not (resolved == ROOT or resolved.startswith(ROOT + os.sep)):
                errors.append(f"{name}:{number}: {url}: leaves the repository")
                continue
            if not os.path.exists(resolved):
                errors.append(f"{name}:{number}: {url}: no such file")
                continue
            if fragment and resolved.endswith(".md") and fragment not in anchors(resolved):
                errors.append(f"{name}:{number}: {url}: no heading `#{fragment}` in {os.path.relpath(resolved, ROOT)}")
    return count


html_links = check_html()
markdown = check_markdown()
if errors:
    print(f"{len(errors)} broken links:", file=sys.stderr)
    for error in errors:
        print(f"  {error}", file=sys.stderr)
    sys.exit(1)
print(f"links: {html_links} in the built book and {markdown} in the Markdown sources, all resolve")
