#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""One `man 3 NAME` per exported function: for every function of the
version script (MAP) that is not itself a page of section 3, print
"NAME PAGE": the page (a *.3.scd given after MAP) whose SYNOPSIS declares
it. docs/man/meson.build installs NAME.3 as a link to PAGE.3; a function
in no SYNOPSIS is test-man-headers.sh's to report."""
import os
import re
import sys


def exported(path):
    names = []
    for line in open(path):
        m = re.match(r'\s*(prealloc_[a-z0-9_]+);', line)
        if m and m.group(1) not in names:
            names.append(m.group(1))
    return names


def synopsis_functions(path):
    found, syn = [], False
    for line in open(path):
        if line.startswith('# '):
            syn = line.strip() == '# SYNOPSIS'
            continue
        m = re.search(r'[ *](prealloc_[a-z0-9_]+)\(', line) if syn and line[:1].isalpha() else None
        if m and not line.startswith('typedef'):
            found.append(m.group(1))
    return found


def main():
    pages = {}
    for scd in sys.argv[2:]:
        page = os.path.basename(scd)[:-len('.3.scd')]
        for name in synopsis_functions(scd):
            pages.setdefault(name, page)
    page_names = {os.path.basename(s)[:-len('.3.scd')] for s in sys.argv[2:]}
    for name in exported(sys.argv[1]):
        if name not in page_names and name in pages:
            print(name, pages[name])


main()
