"""docs/api.md documents every public name, and every public function and class has a docstring.

The public names of a module are its ``__all__``; a module without ``__all__`` exports the
functions and classes defined in it whose names do not start with an underscore. The API page
is cut into one section per module (a heading naming the module in backticks, up to the next
heading of the same or a higher level), and a name counts as documented in a section when it
opens an entry there: the first code span(s) of a list item before its " — ", a heading, or
one of the first two cells of a table row, written `` `name` `` or `` `name(...)` ``.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import pkgutil
import re
from pathlib import Path
from types import ModuleType

import pytest

import prelens

API = Path(__file__).resolve().parent.parent / "docs" / "api.md"

#: The modules whose public names docs/api.md documents, each in a section of its own.
DOCUMENTED = [
    "prelens",
    "prelens.nn",
    "prelens.train",
    "prelens.datasets",
    "prelens.testing",
    "prelens.optim",
    "prelens.learn",
    "prelens.io",
    "prelens.diagram",
    "prelens.bench",
    "prelens.datasets.sequences",
]

#: Public modules documented elsewhere: the command line (``python -m prelens --help``).
NOT_DOCUMENTED = ("prelens.__main__", "prelens.cli")

#: Methods that carry no docstring of their own on purpose: the TriProfunctor/Trimbara
#: protocol's methods, documented by the protocol classes' docstrings and by ``PreLens``'s
#: methods, and their instances on ``PLeft``/``PRight`` and the free module ``Program`` and its
#: readings (Haskell's instances, one line each).
PROTOCOL_METHODS = {"dimap_s", "dimap_p", "dimap_m", "alpha", "beta"}
PROTOCOL_CLASSES = {"TriProfunctor", "Trimbara", "PLeft", "PRight", "Program", "Shapes", "Cost"}


def public_names(module: ModuleType) -> list[str]:
    """``__all__``, or the functions and classes defined in ``module`` without a leading underscore."""
    if hasattr(module, "__all__"):
        return list(module.__all__)
    return sorted(
        name
        for name, value in vars(module).items()
        if not name.startswith("_")
        and (inspect.isfunction(value) or inspect.isclass(value))
        and value.__module__ == module.__name__
    )


# ---------------------------------------------------------------- the page

HEADING = re.compile(r"^(#+)\s+(.*)$")
CODE = re.compile(r"`([^`]+)`")
ENTRY = re.compile(r"^([A-Za-z_][\w.]*)(?:\(.*\))?$", re.S)


def sections(text: str) -> dict[str, str]:
    """Module name -> the text of its section (headings like ``## `prelens.nn` ``)."""
    lines = text.splitlines()
    heads = [(i, len(m[1]), m[2]) for i, line in enumerate(lines) if (m := HEADING.match(line))]
    out: dict[str, str] = {}
    for k, (i, level, title) in enumerate(heads):
        named = [c for c in CODE.findall(title) if c in DOCUMENTED]
        if not named:
            continue
        end = next((j for j, lv, _ in heads[k + 1 :] if lv <= level), len(lines))
        out[named[0]] = "\n".join(lines[i:end])
    return out


def _names(spans: list[str]) -> list[str]:
    return [m[1] for span in spans if (m := ENTRY.match(span.strip())) and span not in DOCUMENTED]


def entries(section: str) -> list[str]:
    """The names that open an entry in ``section`` (dotted for methods: ``PreLens.init``)."""
    found: list[str] = []
    for item in re.split(r"\n(?=\S)", section):  # list items and their continuation lines
        if item.startswith("- "):
            head = re.split(r"\s—\s", item[2:])[0]
            found += _names(CODE.findall(head))
        elif item.startswith("|"):
            for row in item.splitlines():
                cells = [c.strip() for c in row.strip("|").split("|")]
                found += _names([c[1:-1] for c in cells[:2] if c.startswith("`") and c.endswith("`")])
        elif item.startswith("#"):
            found += _names(CODE.findall(item.splitlines()[0]))
    return found


def missing(text: str) -> dict[str, list[str]]:
    """Module -> its public names without an entry in its section of ``text``."""
    secs = sections(text)
    out = {}
    for modname in DOCUMENTED:
        documented = {e.split(".")[0] for e in entries(secs.get(modname, ""))}
        lacking = [n for n in public_names(importlib.import_module(modname)) if n not in documented]
        if lacking:
            out[modname] = lacking
    return out


def _resolve(module: ModuleType, dotted: str) -> bool:
    obj: object = module
    for part in dotted.split("."):
        if not hasattr(obj, part):
            return False
        obj = getattr(obj, part)
    return True


# ---------------------------------------------------------------- the tests


def test_every_public_name_has_an_entry():
    assert missing(API.read_text()) == {}, (
        "public names missing from docs/api.md (add an entry in its module's section)"
    )


def test_every_entry_names_something_that_exists():
    secs = sections(API.read_text())
    stale = {
        modname: bad
        for modname in DOCUMENTED
        if (bad := [e for e in entries(secs[modname]) if not _resolve(importlib.import_module(modname), e)])
    }
    assert stale == {}, "docs/api.md documents names that do not exist (renamed or removed?)"


def test_every_module_has_a_section():
    assert set(sections(API.read_text())) == set(DOCUMENTED)


@pytest.mark.parametrize(
    ("modname", "name"),
    [
        ("prelens", "tree_sum"),
        ("prelens", "sym_l"),
        ("prelens.nn", "dense"),
        ("prelens.train", "fit"),
        ("prelens.testing", "check_vjp"),
        ("prelens.optim", "Adam"),
        ("prelens.datasets.sequences", "text_windows"),
        ("prelens.bench", "CASES"),
    ],
)
def test_the_check_notices_a_removed_entry(modname, name):
    """Removing one entry (a list item or a table row) makes the name missing again."""
    text = API.read_text()
    kept = [
        line
        for line in text.splitlines()
        if not (line.startswith((f"- `{name}`", f"- `{name}(", f"| `{name}", f"| `{name}(")) or f"| `{name}` |" in line)
    ]
    assert len(kept) < len(text.splitlines()), f"no entry for {name} to remove"
    assert name in missing("\n".join(kept)).get(modname, [])


def test_every_public_module_is_covered():
    """A new public module must be documented, or only re-export names that are."""
    documented = {n for m in DOCUMENTED for n in public_names(importlib.import_module(m))}
    uncovered = {}
    for info in pkgutil.walk_packages(prelens.__path__, "prelens."):
        name = info.name
        if any(part.startswith("_") for part in name.split(".")[1:]) or name in DOCUMENTED:
            continue
        if name.startswith(NOT_DOCUMENTED):
            continue
        lacking = [n for n in public_names(importlib.import_module(name)) if n not in documented]
        if lacking:
            uncovered[name] = lacking
    assert uncovered == {}, "public modules with names that docs/api.md does not cover"


# ------------------------------------------------------------- docstrings


def _auto_docs(cls: type) -> set[str]:
    """The docstrings Python writes for a class that has none (dataclass, named tuple)."""
    docs = set()
    if hasattr(cls, "_fields"):
        docs.add(f"{cls.__name__}({', '.join(cls._fields)})")
    try:
        docs.add(cls.__name__ + str(inspect.signature(cls)).replace(" -> None", ""))
    except (TypeError, ValueError):
        pass
    return docs


def _has_own_doc(obj: object) -> bool:
    doc = obj.__dict__.get("__doc__") if inspect.isclass(obj) else getattr(obj, "__doc__", None)
    return bool(doc and doc.strip()) and not (inspect.isclass(obj) and doc.strip() in _auto_docs(obj))


def _public_objects() -> list[tuple[str, object]]:
    seen: set[int] = set()
    out = []
    for modname in DOCUMENTED:
        module = importlib.import_module(modname)
        for name in public_names(module):
            value = getattr(module, name)
            if (inspect.isfunction(value) or inspect.isclass(value)) and id(value) not in seen:
                seen.add(id(value))
                out.append((f"{modname}.{name}", value))
    return out


def test_every_public_function_and_class_has_a_docstring():
    undocumented = [name for name, value in _public_objects() if not _has_own_doc(value)]
    assert undocumented == []


def test_every_public_method_has_a_docstring():
    undocumented = []
    for qualname, cls in _public_objects():
        if not inspect.isclass(cls) or not cls.__module__.startswith("prelens"):
            continue
        fields = {f.name for f in dataclasses.fields(cls)} if dataclasses.is_dataclass(cls) else set()
        for name, attr in vars(cls).items():
            if name.startswith("_") or name in fields:
                continue
            if cls.__name__ in PROTOCOL_CLASSES and name in PROTOCOL_METHODS:
                continue
            func = attr.fget if isinstance(attr, property) else getattr(attr, "__func__", attr)
            if inspect.isfunction(func) and not (func.__doc__ and func.__doc__.strip()):
                undocumented.append(f"{qualname}.{name}")
    assert undocumented == []


#: The functions of the post and of its Haskell code (BartoszMilewski/DeepLearning, PreLens/*.hs):
#: a ``Haskell::`` block may give only these, so that no signature is invented.
HASKELL = set(
    """
    preCompose prodLens idPreLens identityLens dimapS dimapP dimapM alpha beta toTamb fromTamb
    triCompose prodLensT vecLens batchN branch linearL linearT biasL biasT activL activT affine
    affineT neuronL neuronT neuron layer makeMlp initParaMlp initPara initParaBlock mkPara unPara
    lossL lossT loss1L loss1T sqDist loss fwd' bwd' lunit runit unLunit unRunit assoc unAssoc sym
    skipLeft skipRight accumulate first second sumN unitLens flatten
    """.split()
)


def test_every_public_function_has_a_doctest_and_no_invented_haskell():
    """The house style: an example that runs; a ``Haskell::`` block only for the post's own functions."""
    lacking = []
    for name, value in _public_objects():
        doc = inspect.getdoc(value) or ""
        if ">>>" not in doc:
            lacking.append(f"{name}: no doctest")
        blocks = re.findall(r"Haskell[^\n]*::\n((?:\n|    [^\n]*\n?)+)", doc)
        inline = re.findall(r"Haskell: ``([\w']+) ::", doc)
        for block in blocks:
            inline += re.findall(r"^\s*([\w']+)\s+::", block, re.M)
        if invented := [n for n in inline if n not in HASKELL]:
            lacking.append(f"{name}: Haskell signature of {invented}, which the post and its code do not have")
    assert lacking == []
