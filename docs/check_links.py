#!/usr/bin/env python3
"""Checks every relative link of README.md and docs/*.md: the file it names
exists (relative to the page), and a #fragment names a heading of the .md
file it points into. Links in code blocks and inline code are not links.
Prints each broken link as FILE:LINE: TARGET (why) and exits 1 if any.
Run from anywhere: python3 docs/check_links.py"""
import glob
import os
import re
import sys


def slug(heading):
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces as -."""
    text = re.sub(r'[^\w\- ]', '', heading.strip().lower())
    return text.replace(' ', '-')


def prose_lines(path):
    """(line number, text) of the lines outside fenced and indented code blocks."""
    fence = False
    with open(path, encoding='utf-8') as f:
        for number, line in enumerate(f, 1):
            if line.startswith('```'):
                fence = not fence
                continue
            if not fence and not line.startswith('    '):
                yield number, line


def anchors(path):
    return {slug(line.lstrip('#')) for _, line in prose_lines(path) if line.startswith('#')}


def main():
    os.chdir(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
    pages = ['README.md'] + sorted(glob.glob('docs/*.md'))
    broken, checked = [], 0
    for page in pages:
        for number, line in prose_lines(page):
            for target in re.findall(r'\]\(([^)\s]+)\)', re.sub(r'`[^`]*`', '', line)):
                if re.match(r'[a-z]+:', target):
                    continue  # http:, https:, mailto:
                checked += 1
                path, _, fragment = target.partition('#')
                resolved = os.path.normpath(os.path.join(os.path.dirname(page), path)) if path else page
                if not os.path.exists(resolved):
                    broken.append(f'{page}:{number}: {target} (no file {resolved})')
                elif fragment and resolved.endswith('.md') and fragment not in anchors(resolved):
                    broken.append(f'{page}:{number}: {target} (no heading #{fragment} in {resolved})')
    print(f'{checked} relative links in {len(pages)} pages checked, {len(broken)} broken')
    for line in broken:
        print(line)
    return 1 if broken else 0


if __name__ == '__main__':
    sys.exit(main())
