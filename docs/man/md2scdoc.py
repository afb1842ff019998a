#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# md2scdoc.py IN.md OUT.scd: the subset of Markdown docs/prealloc.1.md is
# written in (## sections, ``` blocks, `code`, "term" + ": text" definition
# lists, | tables |) as scdoc source, so that prealloc(1) has one source.
import re
import sys

src, dst = sys.argv[1:3]
lines = open(src).read().splitlines()
out = []


def inline(text):
    text = text.replace('\\', '\\\\').replace('*', '\\*')
    return re.sub(r'`([^`]+)`', lambda m: '*' + m.group(1) + '*', text)


title = re.match(r'#\s+(\S+\(\d\))', lines[0])
if not title:
    sys.exit('%s: the first line must be "# name(section)"' % src)
out.append('%s "prealloc" "prealloc manual"' % title.group(1))
i, in_code, in_def = 1, False, False
while i < len(lines):
    line = lines[i]
    i += 1
    if line.startswith('```'):
        in_code = not in_code
        out.append('```')
        continue
    if in_code:
        out.append(line)
        continue
    if line.startswith('## '):
        in_def = False
        out.append('# ' + line[3:].upper())
        continue
    if line.startswith('|'):
        cells = [c.strip() for c in line.strip('|').split('|')]
        if all(re.fullmatch(r'-+', c) for c in cells):
            continue
        if i < len(lines) and re.match(r'\|\s*-', lines[i]):
            continue  # the header row
        out.append('*%s*' % inline(cells[0]).replace('*', ''))
        out.append('\t' + inline(' | '.join(cells[1:])))
        out.append('')
        continue
    if line.startswith(': '):
        in_def = True
        out.append('\t' + inline(line[2:]))
        continue
    if in_def and line.startswith('  ') and line.strip():
        out.append('\t' + inline(line.strip()))
        continue
    if not line.strip():
        in_def = False
        out.append('')
        continue
    if re.fullmatch(r'`[^`]+`', line) and i < len(lines) and lines[i].startswith(': '):
        out.append('*%s*' % line.strip('`').replace('\\', '\\\\').replace('*', '\\*'))
        continue
    out.append(inline(line))
open(dst, 'w').write('\n'.join(out) + '\n')
