#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# embed.py NAME IN OUT: IN's bytes as `static const char NAME[]` in the C file OUT.
import sys

name, src, dst = sys.argv[1:4]
data = open(src, 'rb').read()
with open(dst, 'w') as f:
    f.write('/* Generated from %s by embed.py: do not edit. */\n' % src.split('/')[-1])
    f.write('static const char %s[] =\n' % name)
    for line in data.decode().splitlines(keepends=True):
        esc = line.replace('\\', '\\\\').replace('"', '\\"').replace('\n', '\\n')
        f.write('\t"%s"\n' % esc)
    f.write(';\n')
