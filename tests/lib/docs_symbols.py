#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""tests/lib/docs_symbols.py: every name the docs put in backticks exists.

    docs_symbols.py [ROOT]        (run by tests/integ/docs_symbols.sh)

Reads README.md, docs/*.md and bench/README.md (outside fenced code blocks)
and checks each inline code span that names something of ours:

  - a file: a span that starts with one of the tree's top folders
    (`ipc/ring.h`, `supervisor/`) or is a bare file name with a source
    extension (`fq.c`): the path, or a tracked file of that name, exists;
    `build/...` outputs must be named in a *.ninja file or ./configure;
  - a function: `name()` or `name(args...)`: the name is a word of some
    tracked file that is not markdown;
  - a symbol: a word with an underscore (`fib_reader_reset`, `tx_held`,
    `IPC_HEADROOM`, `FWD_SECONDS`), or a prefix ending in `_*`: the same;
  - a type: `struct name`: the name, as a symbol;
  - a program: `rr-NAME`: a build rule makes build/bin/rr-NAME;
  - a manifest key: the first column of a table headed `key`, the left side
    of a `key = value` span, `[type] key`, or a section header `[type ...]`:
    known to supervisor/manifest_schema.c.

Words that are not ours (kernel, libxdp, DPDK, sysctl names) are listed in
tests/lib/docs_symbols.allow. A span with a blank that is none of the
above (a command line), an option (`-c`), a number, a span with a
placeholder in capitals inside a path (`RUN_DIR/napi.PORT`) or an absolute
path is not checked: those name no symbol of the tree.

It also keeps the docs reference, not a lab notebook: bench/README.md and
docs/drivers.md at most 600 lines, no table line over 500 characters, and
no dated section of runs ("Runs of 2026-...": those go to bench/results/).

Each failure prints `FILE:LINE: `SPAN`: WHY`; exit 1 if any, else 0.
"""
import os
import re
import subprocess
import sys

ROOT = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), '..', '..'))
ALLOW = os.path.join(ROOT, 'tests', 'lib', 'docs_symbols.allow')

TOP = ('ipc/', 'tables/', 'supervisor/', 'drivers/', 'services/', 'tests/', 'bench/',
       'docs/', 'tools/', 'dist/', 'build/')
SRC_EXT = ('.c', '.h', '.sh', '.py', '.ini', '.ninja', '.md', '.service', '.allow')
WORD = re.compile(r'[A-Za-z_][A-Za-z0-9_]*')
IDENT = re.compile(r'^[A-Za-z_][A-Za-z0-9_]*$')
CALL = re.compile(r'^([A-Za-z_][A-Za-z0-9_]*)\((.*)\)$')
KEYVAL = re.compile(r'^([a-z][a-z0-9_]*) = \S')
SECTION = re.compile(r'^\[([a-z]+)( [^\]]*)?\]$')
SECTION_KEY = re.compile(r'^\[([a-z]+)( [A-Z][A-Z ]*)?\] ([a-z][a-z0-9_]*)$')
PROGRAM = re.compile(r'^rr-[a-z0-9-]+$')
STRUCT = re.compile(r'^(?:struct|union|enum) ([A-Za-z_][A-Za-z0-9_]*)$')
PLACEHOLDER = re.compile(r'(^|[/._-])[A-Z][A-Z0-9]*([/._-]|$)')


def git_files():
    out = subprocess.run(['git', '-C', ROOT, 'ls-files', '-z'], check=True, capture_output=True).stdout
    return [f for f in out.decode().split('\0') if f]


def load_words(files):
    """Every word of every tracked file but the docs themselves, and their text."""
    words = set()
    texts = []
    for f in files:
        if f.endswith('.md') or f.endswith('.allow'):
            continue
        try:
            with open(os.path.join(ROOT, f), 'rb') as fh:
                data = fh.read()
        except OSError:
            continue
        if b'\0' in data[:4096]:
            continue
        text = data.decode('utf-8', 'replace')
        texts.append(text)
        words.update(WORD.findall(text))
    return words, '\n'.join(texts)


def load_schema():
    with open(os.path.join(ROOT, 'supervisor', 'manifest_schema.c')) as fh:
        text = fh.read()
    keys = set(re.findall(r'=\s*\{"([a-z][a-z0-9_]*)",\s*sup_p_', text))
    sections = set(re.findall(r'\{"([a-z]+)",\s*\d+,\s*"\[', text))
    return keys, sections


def load_allow():
    allow = set()
    with open(ALLOW) as fh:
        for line in fh:
            line = line.split('#', 1)[0].strip()
            if line:
                allow.add(line)
    return allow


def load_build_text():
    parts = []
    for dirpath, _, names in os.walk(ROOT):
        if '/.git' in dirpath or dirpath.startswith(os.path.join(ROOT, 'build')):
            continue
        for n in names:
            if n.endswith('.ninja') or n in ('configure', 'run', 'run.sh'):
                with open(os.path.join(dirpath, n), errors='replace') as fh:
                    parts.append(fh.read())
    return '\n'.join(parts)


def spans(path):
    """(line number, span, in the first cell of a `key` table?) outside fenced blocks."""
    fenced = False
    key_table = False
    with open(path, errors='replace') as fh:
        for no, line in enumerate(fh, 1):
            if line.lstrip().startswith('```'):
                fenced = not fenced
                continue
            if fenced:
                continue
            first_end = -1
            if line.startswith('|'):
                cells = [c.strip() for c in line.strip().strip('|').split('|')]
                if re.fullmatch(r'[-: |]+', line.strip()):
                    continue
                if cells[0] == 'key':
                    key_table = True
                    continue
                if key_table:
                    first_end = line.find('|', 1)
            else:
                key_table = False
            for m in re.finditer(r'(`+)(.+?)\1', line):
                yield no, m.group(2).strip(), m.start() < first_end


class Check:
    def __init__(self):
        self.files = git_files()
        self.fileset = set(self.files)
        self.dirs = {os.path.dirname(f) + '/' for f in self.files}
        for f in self.files:
            p = os.path.dirname(f)
            while p:
                self.dirs.add(p + '/')
                p = os.path.dirname(p)
        self.basenames = {os.path.basename(f) for f in self.files}
        self.words, self.text = load_words(self.files)
        self.keys, self.sections = load_schema()
        self.allow = load_allow()
        self.build = load_build_text()

    def known(self, w):
        return w in self.words or w in self.allow

    def path(self, s, doc):
        """None when the path exists, else why not."""
        if any(c in s for c in '*<>{}$ ') or PLACEHOLDER.search(s.split('#')[0]):
            return None
        p = s.split('#')[0].split(':')[0].rstrip('.,')
        if p.startswith('build/'):
            base = os.path.basename(p.rstrip('/'))
            if not p.rstrip('/') or p == 'build/' or base in self.build or p.rstrip('/') in self.build:
                return None
            return 'no build rule makes it'
        if p in self.fileset or p in self.dirs or p.rstrip('/') + '/' in self.dirs:
            return None
        if any(p + ext in self.fileset for ext in ('.c', '.sh', '.py')):
            return None  # a program: bench/faultflow, tests/unit/test_sandbox
        rel = os.path.normpath(os.path.join(os.path.dirname(doc), p))
        if rel in self.fileset or rel + '/' in self.dirs:
            return None
        if '/' not in p and p in self.basenames:
            return None
        if p in self.allow or re.search(r'(^|[^\w.-])' + re.escape(p) + r'($|[^\w.-])', self.build):
            return None  # made by ./configure or a build rule: config.ninja
        return 'no such file in the tree'

    def span(self, s, doc, first_key_cell):
        if not s or s[0] in '-+0123456789.:/~"\'' or s.startswith('--'):
            return None
        m = SECTION_KEY.match(s)
        if m:
            if m.group(1) not in self.sections:
                return 'no such manifest section type'
            return None if m.group(3) in self.keys else 'no such manifest key (supervisor/manifest_schema.c)'
        m = SECTION.match(s)
        if m:
            return None if m.group(1) in self.sections or s in self.allow else 'no such manifest section type'
        if first_key_cell and IDENT.match(s):
            return None if s in self.keys or s in self.allow else 'no such manifest key (supervisor/manifest_schema.c)'
        m = KEYVAL.match(s)
        if m and ('_' in m.group(1) or m.group(1) in self.keys):
            k = m.group(1)  # a manifest key, else another key = value of ours (config.ninja, a sysctl a test sets)
            return None if k in self.keys or self.known(k) else 'no such manifest key (supervisor/manifest_schema.c)'
        if s.startswith(TOP) and ' ' not in s:
            return self.path(s, doc)
        if ' ' not in s and '/' not in s and s.endswith(SRC_EXT) and IDENT.match(s.split('.')[0]):
            return self.path(s, doc)
        if PROGRAM.match(s):  # a program we build (rr-tap), or a name a test or the code uses (rr-demo-a)
            found = re.search(r'(^|[^\w-])' + re.escape(s) + r'($|[^\w-])', self.text, re.M)
            return None if found or s in self.allow else 'no such program or name in the tree'
        m = STRUCT.match(s)
        if m:
            return None if self.known(m.group(1)) else 'no such type in the tree'
        m = CALL.match(s)
        if m:
            name = m.group(1)
            return None if self.known(name) else 'no such function in the tree'
        if s.endswith('_*') and IDENT.match(s[:-1] + 'x'):
            pre = s[:-1]
            return None if any(w.startswith(pre) for w in self.words) or s in self.allow else 'no symbol has this prefix'
        if IDENT.match(s) and '_' in s.strip('_'):
            return None if self.known(s) else 'no such symbol in the tree'
        return None


MAX_LINES = {'bench/README.md': 600, 'docs/drivers.md': 600}
MAX_TABLE_LINE = 500
DATED = re.compile(r'Runs of 20[0-9][0-9]-|^#+ .*\b20[0-9][0-9]-[01][0-9]-[0-3][0-9]\b')


def shape(doc, path):
    """Why each line of @doc breaks the reference rules."""
    with open(path, errors='replace') as fh:
        lines = fh.read().split('\n')
    if lines and lines[-1] == '':
        lines.pop()
    bad = []
    if doc in MAX_LINES and len(lines) > MAX_LINES[doc]:
        bad.append((len(lines), f'{len(lines)} lines, more than {MAX_LINES[doc]}: move dated runs to bench/results/'))
    for no, line in enumerate(lines, 1):
        if line.startswith('|') and len(line) > MAX_TABLE_LINE:
            bad.append((no, f'a table line of {len(line)} characters (at most {MAX_TABLE_LINE}): '
                            'cut the cell, the rest as a list below the table'))
        if DATED.search(line):
            bad.append((no, 'a dated run: it goes to bench/results/DATE-NAME.md'))
    return bad


def main():
    c = Check()
    docs = ['README.md', 'bench/README.md'] + sorted(f for f in c.files if re.fullmatch(r'docs/[^/]+\.md', f))
    bad = 0
    for d in docs:
        path = os.path.join(ROOT, d)
        if not os.path.exists(path):
            continue
        for no, s, first in spans(path):
            why = c.span(s, d, first)
            if why:
                print(f'{d}:{no}: `{s}`: {why}')
                bad += 1
        for no, why in shape(d, path):
            print(f'{d}:{no}: {why}')
            bad += 1
    if bad:
        print(f'docs_symbols: {bad} problem(s) in the docs (a name not found: fix the doc, or list a name that is '
              'not ours in tests/lib/docs_symbols.allow)')
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
