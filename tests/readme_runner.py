"""Runs the examples of a Markdown page — the README, a page of docs/ — as a reader would
(issue 12 section 5; issue 33 for docs/).

A page is cut into its ``## `` sections (``tests/test_readme.py`` runs each README section on its
own; ``tests/test_docs.py`` runs a docs page's sections in order in one folder, as a tutorial is
read, with :meth:`Runner.run_page`). Each section runs in a fresh folder holding the
bundled example data (``census.csv``; sdcMicro's ``testdata`` and the table examples under
``tests/data/sdcmicro`` and ``tests/data/tabular``, as in a clone)
and every file the README declares (``<!-- file: NAME -->``), its code blocks in order:

* ``python`` blocks run in one interpreter per section (a later block sees an earlier one's
  names), as a notebook would;
* ``bash``, ``console`` (lines after ``$ ``) and unlabelled blocks run in ``bash -e`` with
  ``sdckit`` on the PATH (the code under test); a leading ``pip install ... &&`` is dropped (the
  package is installed);
* a block with ``<!-- file: NAME -->`` before it is written to NAME (e.g. a hierarchy CSV);
* ``toml`` blocks must parse; with ``<!-- file: NAME -->`` before them they are written to NAME,
  with ``<!-- fragment: NAME -->`` they are appended to the README's ``file: NAME`` block and
  written to NAME (a snippet shown "in a recipe" is run in one);
* ``<!-- output -->`` before a block: every line of it must appear in what the block before
  printed — so the figures the README quotes come from this run;
* ``<!-- not-run: REASON -->`` skips a block (the reason is required).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

import sdckit
from sdckit import datasets

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DIRECTIVE = re.compile(r"^<!--\s*(file|fragment|not-run|output)\s*:?\s*(.*?)\s*-->$")
SHELLS = {"bash", "sh", "console", "shell", ""}
SENTINEL = "@@sdckit-readme-block-done@@"

_WORKER = r"""
import sys, traceback
namespace = {"__name__": "__main__"}
while True:
    header = sys.stdin.readline()
    if not header:
        break
    code = sys.stdin.read(int(header))
    status = 0
    try:
        exec(compile(code, "<example>", "exec"), namespace)
    except BaseException:
        traceback.print_exc(file=sys.stdout)
        status = 1
    sys.stdout.write("\n" + SENTINEL + str(status) + "\n")
    sys.stdout.flush()
""".replace("SENTINEL", repr(SENTINEL))


@dataclass
class Block:
    lang: str
    text: str
    line: int
    directives: dict[str, str] = field(default_factory=dict)


@dataclass
class Section:
    title: str
    blocks: list[Block]


def parse(text: str) -> list[Section]:
    """The README's ``## `` sections, each with its fenced blocks and their directives."""
    sections: list[Section] = []
    pending: dict[str, str] = {}
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("## "):
            sections.append(Section(line[3:].strip(), []))
            pending = {}
        elif (m := DIRECTIVE.match(line.strip())) is not None:
            pending[m.group(1)] = m.group(2)
        elif line.startswith("```"):
            lang = line[3:].strip()
            start = i
            body = []
            i += 1
            while i < len(lines) and not lines[i].startswith("```"):
                body.append(lines[i])
                i += 1
            if sections:
                sections[-1].blocks.append(Block(lang, "\n".join(body) + "\n", start + 1, pending))
            pending = {}
        elif line.strip():
            pending = {}
        i += 1
    return sections


def runnable(section: Section) -> bool:
    return any(b.lang in SHELLS | {"python", "toml"} and "not-run" not in b.directives
               and "output" not in b.directives for b in section.blocks)


def files_declared(sections: list[Section]) -> dict[str, str]:
    return {b.directives["file"]: b.text for s in sections for b in s.blocks if "file" in b.directives}


def _shell_script(block: Block) -> str:
    if block.lang == "console":
        lines = [ln[2:] for ln in block.text.splitlines() if ln.startswith("$ ")]
    else:
        lines = block.text.splitlines()
    script = "\n".join(re.sub(r"^pip install [^&]*&&\s*", "", ln) for ln in lines)
    return script + "\n"


class Runner:
    """Runs one section (or a page) in ``folder``; raises AssertionError naming the line at fault
    in ``source`` (the page's name in messages)."""

    def __init__(self, folder: Path, files: dict[str, str], timeout: float = 600.0,
                 source: str = "README.md") -> None:
        self.folder = folder
        self.source = source
        self.files = files
        self.timeout = timeout
        self.last_output = ""
        self.python: subprocess.Popen[str] | None = None
        bin_dir = folder / ".bin"
        bin_dir.mkdir(parents=True)
        shim = bin_dir / "sdckit"
        shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m sdckit "$@"\n')
        shim.chmod(0o755)
        source = str(Path(sdckit.__file__).resolve().parents[1])
        self.env = dict(os.environ, PATH=f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
                        PYTHONPATH=os.pathsep.join(filter(None, [source, os.environ.get("PYTHONPATH")])),
                        MPLBACKEND="Agg", COLUMNS="200", NO_COLOR="1")
        shutil.copy(datasets.path("census.csv"), folder / "census.csv")
        for name, text in files.items():          # files the README asks the reader to write
            (folder / name).parent.mkdir(parents=True, exist_ok=True)
            (folder / name).write_text(text)
        (folder / "tests" / "data" / "sdcmicro").mkdir(parents=True)
        shutil.copy(ROOT / "tests" / "data" / "sdcmicro" / "testdata.csv.gz", folder / "tests" / "data" / "sdcmicro")
        shutil.copytree(ROOT / "tests" / "data" / "tabular", folder / "tests" / "data" / "tabular")

    def close(self) -> None:
        if self.python is not None:
            self.python.stdin.close()
            self.python.wait(timeout=60)

    def run(self, section: Section) -> None:
        self.run_page([section])

    def run_page(self, sections: list[Section]) -> None:
        """Every block of ``sections`` in order, in one folder and one Python interpreter."""
        try:
            for section in sections:
                for block in section.blocks:
                    self._run_block(block)
        finally:
            self.close()

    def _run_block(self, block: Block) -> None:
        d = block.directives
        where = f"{self.source} line {block.line}"
        if "not-run" in d:
            assert d["not-run"], f"{where}: a not-run block must say why"
            return
        if "output" in d:
            missing = [ln.strip() for ln in block.text.splitlines()
                       if ln.strip() and " ".join(ln.split()) not in " ".join(self.last_output.split())]
            assert not missing, f"{where}: the block before did not print {missing[0]!r}; it printed:\n{self.last_output}"
            return
        if "file" in d and block.lang != "toml":
            (self.folder / d["file"]).parent.mkdir(parents=True, exist_ok=True)
            (self.folder / d["file"]).write_text(block.text)
            return
        if block.lang == "toml":
            text = block.text
            if "fragment" in d:
                name = d["fragment"]
                assert name in self.files, f"{where}: no '<!-- file: {name} -->' block to append to"
                text = self.files[name] + "\n" + text
                (self.folder / name).write_text(text)
            elif "file" in d:
                (self.folder / d["file"]).write_text(text)
            try:
                tomllib.loads(text)
            except tomllib.TOMLDecodeError as exc:
                raise AssertionError(f"{where}: not valid TOML: {exc}") from None
            return
        if block.lang == "python":
            self.last_output = self._python(block.text, where)
            return
        if block.lang in SHELLS:
            done = subprocess.run(["bash", "-e", "-c", _shell_script(block)], cwd=self.folder, env=self.env,
                                  capture_output=True, text=True, timeout=self.timeout)
            self.last_output = done.stdout + done.stderr
            assert done.returncode == 0, f"{where}: exit {done.returncode}:\n{self.last_output}"

    def _python(self, code: str, where: str) -> str:
        if self.python is None:
            self.python = subprocess.Popen([sys.executable, "-u", "-c", _WORKER], cwd=self.folder, env=self.env,
                                           stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                           text=True)
        self.python.stdin.write(f"{len(code)}\n{code}")
        self.python.stdin.flush()
        out = []
        for line in self.python.stdout:
            if line.startswith(SENTINEL):
                status = line[len(SENTINEL):].strip()
                text = "".join(out)
                assert status == "0", f"{where}: the Python block failed:\n{text}"
                return text
            out.append(line)
        raise AssertionError(f"{where}: the Python interpreter ended:\n{''.join(out)}")
