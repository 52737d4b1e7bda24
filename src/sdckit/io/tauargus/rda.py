"""tau-ARGUS metadata (``.rda``): the layout and roles of the variables of a job.

An ``.rda`` file lists the variables in file order. A variable line gives its name, then — for
fixed-width microdata — its start column and width, for free-format microdata its width, and
for tabular input nothing; up to two missing codes follow. Indented ``<KEYWORD> args`` lines
below it give its properties (role, total code, hierarchy, decimals, ...). A free-format file
starts with ``<SEPARATOR> ";"``. ``//`` starts a comment. Strings may be quoted with ``"``.

Sources: the tau-ARGUS user's manual (version 4.2, section 5.1 "Meta data files") and the
reader in sdcTools/tauargus (``src/tauargus/model/Metadata.java``, ``readMicroMetadata`` and
``readTableMetadata``), whose keyword meanings this module follows. Unknown keywords are kept
(``TauVariable.keywords``, ``TauMetadata.keywords``), never refused.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path, PureWindowsPath
from typing import Literal

from sdckit.core.errors import ParameterError
from sdckit.io.tauargus._text import fail, numbered_lines, read_text

#: Keywords that occur only in the metadata of tabular input (they decide ``kind="auto"``).
TABLE_KEYWORDS = frozenset({"<FREQUENCY>", "<MAXSCORE>", "<STATUS>", "<SAFE>", "<UNSAFE>", "<PROTECT>"})
#: Arguments of ``<NUMERIC>`` in tabular metadata -> the role they give.
NUMERIC_SUBROLES = {"<SHADOW>": "shadow", "<COST>": "cost", "<COSTVAR>": "cost",
                    "<LOWERPL>": "lower_pl", "<UPPERPL>": "upper_pl"}
#: Keywords that set a variable's role outright.
ROLE_KEYWORDS = {"<WEIGHT>": "weight", "<HOLDING>": "holding", "<REQUEST>": "request",
                 "<RECORDKEY>": "record_key", "<FREQUENCY>": "frequency", "<MAXSCORE>": "top",
                 "<STATUS>": "status"}
#: Roles whose values are numbers.
NUMERIC_ROLES = frozenset({"response", "shadow", "cost", "lower_pl", "upper_pl", "weight",
                           "frequency", "top"})
_GLOBAL = {"<SEPARATOR>", "<SAFE>", "<UNSAFE>", "<PROTECT>", "<SPSS>"}
_MAX_MISSING = 2
_MAX_DISTANCE = 5

Kind = Literal["fixed", "free", "table", "spss"]


@dataclass(frozen=True)
class Keyword:
    """One ``<KEYWORD> args`` line as written (keyword upper-cased), with its line number."""

    name: str
    args: tuple[str, ...]
    line: int


@dataclass(frozen=True)
class TauVariable:
    """One variable of an ``.rda`` file.

    Attributes
    ----------
    name : str
    line : int
        Line of the ``.rda`` file that declares it.
    start, length : int or None
        1-based start column and width in a fixed-width file (``start`` is None in free format;
        both None in tabular input unless ``<HIERLEVELS>`` implies the width).
    missing : tuple of str
        The missing codes (at most two), blanks stripped.
    role : str or None
        ``explanatory`` (``<RECODEABLE>``), ``response`` (``<NUMERIC>``), ``explanatory_response``
        (both), ``shadow``, ``cost``, ``lower_pl``, ``upper_pl`` (``<NUMERIC> <SHADOW>`` ...),
        ``weight``, ``holding``, ``request``, ``record_key``, ``frequency``, ``top``
        (``<MAXSCORE>``), ``status``; None when no keyword gives one. A later keyword
        overrides an earlier one, as in tau-ARGUS.
    totcode : str
        Code of the variable's total (``<TOTCODE>``; ``Total`` when not given).
    decimals : int or None
        ``<DECIMALS>``: digits after the decimal point, for display; values are read as written.
    hierarchy : {"file", "levels"} or None
        ``file``: ``<HIERARCHICAL>`` with ``<HIERCODELIST>``; ``levels``: ``<HIERLEVELS>``.
    hiercodelist, hierleadstring : str
        The ``.hrc`` file as written in the ``.rda`` and its indentation string (default ``@``).
    hierlevels : tuple of int
        Widths of the successive levels of the code (zeros dropped).
    codelist : str or None
        ``<CODELIST>`` file (code labels).
    distance : tuple of int
        ``<DISTANCE>``: five distances, missing ones repeated from the previous one.
    request : tuple of str
        ``<REQUEST>`` codes.
    keywords : tuple of Keyword
        Every keyword line of the variable as written, known or not.
    """

    name: str
    line: int
    start: int | None = None
    length: int | None = None
    missing: tuple[str, ...] = ()
    role: str | None = None
    totcode: str = "Total"
    decimals: int | None = None
    hierarchy: Literal["file", "levels"] | None = None
    hiercodelist: str | None = None
    hierleadstring: str = "@"
    hierlevels: tuple[int, ...] = ()
    codelist: str | None = None
    distance: tuple[int, ...] = ()
    request: tuple[str, ...] = ()
    keywords: tuple[Keyword, ...] = ()

    @property
    def is_explanatory(self) -> bool:
        """Whether the variable classifies (spans a table dimension)."""
        return self.role in ("explanatory", "explanatory_response")

    @property
    def is_numeric(self) -> bool:
        """Whether its values are read as numbers (an explanatory variable's are codes)."""
        return self.role in NUMERIC_ROLES

    def keyword(self, name: str) -> Keyword | None:
        """The last ``name`` keyword line of the variable (e.g. ``"<HIERCODELIST>"``), or None."""
        found = [k for k in self.keywords if k.name == name.upper()]
        return found[-1] if found else None


@dataclass(frozen=True)
class TauMetadata:
    """The content of an ``.rda`` file (see :func:`read_rda`).

    ``kind`` is ``fixed`` (fixed-width microdata, ``.asc``), ``free`` (microdata with a
    separator), ``table`` (tabular input, ``.tab``) or ``spss``. ``safe``, ``unsafe`` and
    ``protect`` are the status codes of tabular input (``S``, ``U``, ``P`` unless the ``.rda``
    says ``<SAFE>`` ...). ``keywords`` holds the global keyword lines.
    """

    path: Path
    kind: Kind
    variables: tuple[TauVariable, ...]
    separator: str = ";"
    safe: str = "S"
    unsafe: str = "U"
    protect: str = "P"
    keywords: tuple[Keyword, ...] = field(default=())

    @property
    def names(self) -> list[str]:
        return [v.name for v in self.variables]

    def variable(self, name: str) -> TauVariable:
        """The variable called ``name``; ParameterError naming the known ones otherwise."""
        for var in self.variables:
            if var.name == name:
                return var
        raise ParameterError(f"{str(self.path)!r} has no variable {name!r}; it has: "
                             f"{', '.join(self.names)}.")

    def _with_role(self, *roles: str) -> list[str]:
        return [v.name for v in self.variables if v.role in roles]

    @property
    def explanatory(self) -> list[str]:
        """Names of the explanatory (``<RECODEABLE>``) variables, in file order."""
        return [v.name for v in self.variables if v.is_explanatory]

    @property
    def response(self) -> list[str]:
        """Names of the numeric response variables (``<NUMERIC>`` without a sub-role)."""
        return self._with_role("response", "explanatory_response")

    @property
    def frequency(self) -> str | None:
        """The frequency column of tabular input, or None."""
        return next(iter(self._with_role("frequency")), None)

    @property
    def top(self) -> list[str]:
        """The ``<MAXSCORE>`` columns (largest contributions, largest first), in file order."""
        return self._with_role("top")

    @property
    def status(self) -> str | None:
        """The status column of tabular input, or None."""
        return next(iter(self._with_role("status")), None)

    @property
    def weight(self) -> str | None:
        return next(iter(self._with_role("weight")), None)

    @property
    def holding(self) -> str | None:
        return next(iter(self._with_role("holding")), None)

    def referenced_file(self, reference: str, line: int | None = None) -> Path:
        """The file an ``.rda`` entry names (``.hrc``, ``.cdl``): as written if it exists, else
        relative to the ``.rda``'s folder, else its base name in that folder (tau-ARGUS's rule,
        so that a job moved from another machine still finds its files)."""
        folder = self.path.parent
        written = Path(reference)
        candidates = [written] if written.is_absolute() else []
        for candidate in (*candidates, folder / written, folder / PureWindowsPath(reference).name):
            if candidate.is_file():
                return candidate
        raise fail(self.path, line, f"the file {reference!r} it refers to is neither where it "
                   "says nor beside the .rda; copy it beside the .rda")


# ============================================================================ tokenizer
def _tokens(path: Path, number: int, line: str) -> list[str]:
    """The tokens of one ``.rda`` line: quoted strings (quotes removed, may be empty) and
    blank-separated words; a keyword ``<...>`` is upper-cased; ``//`` ends the line."""
    out: list[str] = []
    rest = line.replace("\t", " ").strip()
    while rest:
        if rest.startswith("//"):
            break
        if rest.startswith('"'):
            end = rest.find('"', 1)
            if end < 0:
                raise fail(path, number, "a quoted string is not closed; add the closing \"")
            out.append(rest[1:end])
            rest = rest[end + 1:].strip()
            continue
        word, _, rest = rest.partition(" ")
        out.append(word.upper() if word.startswith("<") else word)
        rest = rest.strip()
    return out


# ============================================================================ reader
def read_rda(path: str | Path, kind: Literal["auto", "micro", "table"] = "auto") -> TauMetadata:
    """Read a tau-ARGUS metadata file.

    Parameters
    ----------
    path : str or Path
        The ``.rda`` file.
    kind : {"auto", "micro", "table"}
        ``micro``: it describes microdata (fixed-width, or free format when its first line is
        ``<SEPARATOR>``); ``table``: tabular input; ``auto``: tabular when a keyword only tabular
        input has (``<FREQUENCY>``, ``<MAXSCORE>``, ``<STATUS>``, ``<SAFE>`` ...) occurs,
        microdata otherwise.

    Returns
    -------
    TauMetadata
        Frozen; the variables in file order with their positions, missing codes, roles,
        total codes, hierarchy references and every keyword line.

    Raises
    ------
    DataError
        Missing or empty file, or a malformed line (named with its line number): a property
        before any variable, a start column or width that is not a positive whole number, a
        missing code wider than the variable, ``<HIERLEVELS>`` that do not add up to the
        width, a variable declared twice, an unclosed quote.
    """
    if kind not in ("auto", "micro", "table"):
        raise ParameterError(f"The 'kind' parameter of read_rda must be one of 'auto', 'micro', "
                             f"'table'. Got {kind!r} instead.")
    path, text = read_text(path, "tau-ARGUS metadata (.rda)")
    lines = [(n, _tokens(path, n, raw)) for n, raw in numbered_lines(text)]
    lines = [(n, toks) for n, toks in lines if toks]
    if not lines:
        raise fail(path, None, "holds no variable (only comments)")
    resolved = _kind(lines, kind)
    builders: list[_Builder] = []
    global_keywords: list[Keyword] = []
    for number, toks in lines:
        if not toks[0].startswith("<"):
            builders.append(_Builder.declare(path, number, resolved, toks))
            continue
        keyword = Keyword(toks[0], tuple(toks[1:]), number)
        if keyword.name in _GLOBAL or (not builders and keyword.name not in _VARIABLE_KEYWORDS):
            global_keywords.append(keyword)
        elif not builders:
            raise fail(path, number, f"{keyword.name} comes before any variable; declare the "
                       "variable on a line of its own first")
        else:
            builders[-1].add(keyword)
    if not builders:
        raise fail(path, None, "declares no variable")
    _refuse_duplicates(path, builders)
    return TauMetadata(path=path, kind=resolved, variables=tuple(b.build() for b in builders),
                       keywords=tuple(global_keywords), **_global_settings(path, global_keywords))


def _kind(lines: list[tuple[int, list[str]]], kind: str) -> Kind:
    first = lines[0][1][0]
    if first == "<SPSS>":
        return "spss"
    if kind == "table" or (kind == "auto" and any(
            t in TABLE_KEYWORDS or t in NUMERIC_SUBROLES for _, toks in lines for t in toks)):
        return "table"
    return "free" if first == "<SEPARATOR>" else "fixed"


def _global_settings(path: Path, keywords: list[Keyword]) -> dict[str, str]:
    names = {"<SEPARATOR>": "separator", "<SAFE>": "safe", "<UNSAFE>": "unsafe", "<PROTECT>": "protect"}
    settings: dict[str, str] = {}
    for kw in keywords:
        if kw.name in names:
            if len(kw.args) != 1 or kw.args[0] == "":
                raise fail(path, kw.line, f"{kw.name} needs one value, e.g. {kw.name} \";\"")
            settings[names[kw.name]] = kw.args[0]
    return settings


def _refuse_duplicates(path: Path, builders: list[_Builder]) -> None:
    first: dict[str, int] = {}
    for b in builders:  # tau-ARGUS compares names ignoring case
        if b.name.lower() in first:
            raise fail(path, b.line, f"variable {b.name!r} is declared twice (first at line "
                       f"{first[b.name.lower()]}); rename one")
        first[b.name.lower()] = b.line


def _positive(path: Path, line: int, text: str, what: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise fail(path, line, f"the {what} must be a positive whole number")
    return value


def _whole(path: Path, kw: Keyword, values: tuple[str, ...], minimum: int = 0) -> list[int]:
    try:
        out = [int(v) for v in values]
    except ValueError:
        out = [minimum - 1]
    if any(v < minimum for v in out):
        raise fail(path, kw.line, f"{kw.name} takes whole numbers >= {minimum}")
    return out


_VARIABLE_KEYWORDS = frozenset({
    "<RECODEABLE>", "<RECODABLE>", "<NUMERIC>", "<TOTCODE>", "<DISTANCE>", "<CODELIST>",
    "<HIERARCHICAL>", "<HIERLEVELS>", "<HIERLEADSTRING>", "<HIERCODELIST>", "<DECIMALS>",
    "<TRUNCABLE>", *ROLE_KEYWORDS})


class _Builder:
    """Accumulates one variable's declaration and keyword lines, then builds the frozen value."""

    def __init__(self, path: Path, line: int, kind: Kind, name: str) -> None:
        self.path, self.line, self.kind, self.name = path, line, kind, name
        self.start: int | None = None
        self.length: int | None = None
        self.missing: tuple[str, ...] = ()
        self.keywords: list[Keyword] = []

    @classmethod
    def declare(cls, path: Path, line: int, kind: Kind, toks: list[str]) -> _Builder:
        """A variable line: ``name [start] [width] [missing1 [missing2]]`` by ``kind``."""
        b = cls(path, line, kind, toks[0])
        rest = toks[1:]
        if kind in ("fixed", "spss", "free"):
            n_pos = 2 if kind != "free" else 1
            if len(rest) < n_pos:
                needs = "a start column and a width" if n_pos == 2 else "a width"
                raise fail(path, line, f"variable {b.name!r} needs {needs} after its name")
            if n_pos == 2:
                b.start = _positive(path, line, rest[0], f"start column of {b.name!r}")
            b.length = _positive(path, line, rest[n_pos - 1], f"width of {b.name!r}")
            rest = rest[n_pos:]
        codes = [r.strip() for r in rest]
        if len(codes) > _MAX_MISSING:
            raise fail(path, line, f"variable {b.name!r} has more than {_MAX_MISSING} missing "
                       "codes; tau-ARGUS allows two")
        if b.length is not None and any(len(c) > b.length for c in codes):
            raise fail(path, line, f"a missing code of {b.name!r} is wider than the variable")
        b.missing = tuple(c for c in codes if c)
        return b

    def add(self, keyword: Keyword) -> None:
        self.keywords.append(keyword)

    def build(self) -> TauVariable:
        fields: dict[str, object] = {}
        role: str | None = None
        hierarchy: str | None = None
        length = self.length
        for kw in self.keywords:
            name, args = kw.name, kw.args
            if name in ("<RECODEABLE>", "<RECODABLE>"):
                role = "explanatory_response" if role == "response" else "explanatory"
            elif name == "<NUMERIC>":
                sub = NUMERIC_SUBROLES.get(args[0].upper()) if args else None
                role = sub or ("explanatory_response" if role == "explanatory" else "response")
            elif name in ROLE_KEYWORDS:
                role = ROLE_KEYWORDS[name]
                if name == "<REQUEST>":
                    fields["request"] = tuple(a.strip() for a in args if a.strip())
            elif name == "<TOTCODE>":
                fields["totcode"] = self._one(kw).strip() or "Total"
            elif name == "<DECIMALS>":
                fields["decimals"] = _whole(self.path, kw, (self._one(kw),))[0]
            elif name == "<DISTANCE>":
                fields["distance"] = self._distance(kw)
            elif name == "<CODELIST>":
                fields["codelist"] = self._one(kw)
            elif name == "<HIERARCHICAL>":
                hierarchy = "file"
            elif name == "<HIERCODELIST>":
                fields["hiercodelist"] = self._one(kw)
            elif name == "<HIERLEADSTRING>":
                fields["hierleadstring"] = self._one(kw)
            elif name == "<HIERLEVELS>":
                hierarchy = "levels"
                levels = [v for v in _whole(self.path, kw, args) if v > 0]
                if not levels:
                    raise fail(self.path, kw.line, "<HIERLEVELS> needs the widths of the levels")
                if length is None:
                    length = sum(levels)
                if sum(levels) != length:
                    raise fail(self.path, kw.line, f"the <HIERLEVELS> of {self.name!r} add up to "
                               f"{sum(levels)}, not to its width {length}")
                fields["hierlevels"] = tuple(levels)
        return TauVariable(name=self.name, line=self.line, start=self.start, length=length,
                           missing=self.missing, role=role, hierarchy=hierarchy,  # type: ignore[arg-type]
                           keywords=tuple(self.keywords), **fields)  # type: ignore[arg-type]

    def _one(self, kw: Keyword) -> str:
        if not kw.args:
            raise fail(self.path, kw.line, f"{kw.name} needs a value")
        return kw.args[0]

    def _distance(self, kw: Keyword) -> tuple[int, ...]:
        given = _whole(self.path, kw, kw.args[:_MAX_DISTANCE], minimum=1)
        out = given or [1]
        while len(out) < _MAX_DISTANCE:
            out.append(out[-1])
        return tuple(out)

