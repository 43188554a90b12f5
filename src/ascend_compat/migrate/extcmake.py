"""Compiled Python extensions a ``CMakeLists.txt`` declares: ``pybind11_add_module``, ``Python_add_library``,
``cuda_add_library`` and ``add_library(... MODULE|SHARED ...)``, with their sources resolved the way CMake would
for the common cases: ``set(VAR ...)``, ``list(APPEND VAR ...)``, ``file(GLOB[_RECURSE] VAR ...)``,
``aux_source_directory(dir VAR)``, ``target_sources(target ...)`` and the ``CMAKE_*_SOURCE_DIR`` variables.

Commands are read in file order without running anything; ``if()``/``foreach()`` bodies are read as if taken,
and a variable that cannot be resolved (set by a cache entry or a parent file) contributes nothing.
"""

from __future__ import annotations

import glob
import os
import re
from collections.abc import Iterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ascend_compat.migrate.extbuild import Declared

SOURCE_SUFFIXES = (".cu", ".cuh", ".cpp", ".cc", ".cxx", ".c")
_COMMAND = re.compile(r"\b([A-Za-z_]\w*)\s*\(")
_TARGETS = frozenset({"pybind11_add_module", "python_add_library", "python3_add_library", "cuda_add_library",
                      "add_library"})
_KEYWORDS = frozenset({"MODULE", "SHARED", "STATIC", "OBJECT", "WITH_SOABI", "EXCLUDE_FROM_ALL", "THIN_LTO",
                       "NO_EXTRAS", "OPT_SIZE", "SYSTEM", "PRIVATE", "PUBLIC", "INTERFACE", "CONFIGURE_DEPENDS",
                       "LIST_DIRECTORIES", "true", "false", "TRUE", "FALSE", "FOLLOW_SYMLINKS", "PARENT_SCOPE",
                       "CACHE", "STRING", "INTERNAL", "FORCE", "PATH", "FILEPATH"})
_VAR = re.compile(r"\$\{([A-Za-z_0-9.+-]+)\}")
_COMMENT = re.compile(r'#\[\[.*?\]\]|"(?:\\.|[^"\\])*"|#[^\n]*', re.S)
_WORD = re.compile(r'"((?:\\.|[^"\\])*)"|([^\s"]+)')


def _blank_comments(text: str) -> str:
    """Comments replaced by spaces (line numbers and offsets kept); quoted strings left as they are."""
    return _COMMENT.sub(lambda m: m.group(0) if m.group(0).startswith('"') else re.sub(r"[^\n]", " ", m.group(0)),
                        text)


def commands(text: str) -> Iterator[tuple[str, list[str], int]]:
    """(lower-case command name, argument words, 1-based line) of each command, in file order."""
    clean = _blank_comments(text)
    pos = 0
    while True:
        m = _COMMAND.search(clean, pos)
        if m is None:
            return
        depth, i = 1, m.end()
        while i < len(clean) and depth:
            if clean[i] == '"':  # a quoted argument may hold parentheses
                end = clean.find('"', i + 1)
                i = end if end >= 0 else len(clean)
            elif clean[i] == "(":
                depth += 1
            elif clean[i] == ")":
                depth -= 1
            i += 1
        body = clean[m.end():i - 1]
        words = [bare or quoted for quoted, bare in _WORD.findall(body)]
        yield m.group(1).lower(), words, clean.count("\n", 0, m.start()) + 1
        pos = i


class _Scope:
    """The variables of one CMakeLists.txt, and how its words become project-relative paths."""

    def __init__(self, path: str, root: str) -> None:
        self.base = os.path.dirname(os.path.abspath(path))
        self.root = root
        self.vars: dict[str, list[str]] = {
            "CMAKE_CURRENT_SOURCE_DIR": [self.base], "CMAKE_CURRENT_LIST_DIR": [self.base],
            "CMAKE_SOURCE_DIR": [root], "PROJECT_SOURCE_DIR": [root],
        }

    def expand(self, words: list[str]) -> list[str]:
        out: list[str] = []
        for w in words:
            out.extend(self._expand_word(w, 0))
        return out

    def _expand_word(self, word: str, depth: int) -> list[str]:
        m = _VAR.search(word)
        if m is None:
            return [word]
        if depth > 8:  # a variable defined through itself
            return []
        values = self.vars.get(m.group(1))
        if values is None:
            return []
        if m.group(0) == word:  # ${SRCS}: a list splices in
            return [x for v in values for x in self._expand_word(v, depth + 1)]
        joined = ";".join(values)
        return self._expand_word(word[:m.start()] + joined + word[m.end():], depth + 1)

    def absolute(self, word: str) -> str:
        return os.path.normpath(word if os.path.isabs(word) else os.path.join(self.base, word))

    def rel(self, path: str) -> str:
        return os.path.relpath(path, self.root).replace(os.sep, "/")

    def sources(self, words: list[str]) -> list[str]:
        out = []
        for w in self.expand(words):
            for part in w.split(";"):  # "a.cu;b.cu" is a CMake list too
                if part and part not in _KEYWORDS and part.endswith(SOURCE_SUFFIXES) and "$" not in part:
                    out.append(self.rel(self.absolute(part)))
        return out

    def glob(self, words: list[str], recurse: bool) -> list[str]:
        relative = None
        if "RELATIVE" in words:
            i = words.index("RELATIVE")
            relative = self.absolute(self.expand(words[i + 1:i + 2])[0]) if len(words) > i + 1 else None
            words = words[:i] + words[i + 2:]
        found: list[str] = []
        for pattern in self.expand([w for w in words if w not in _KEYWORDS]):
            full = self.absolute(pattern)
            if recurse:  # GLOB_RECURSE matches the file-name pattern in every directory below
                full = os.path.join(os.path.dirname(full), "**", os.path.basename(full))
            found.extend(sorted(glob.glob(full, recursive=recurse)))
        if relative is not None:
            return [os.path.relpath(p, relative) for p in found]
        return found

    def apply(self, cmd: str, args: list[str]) -> None:
        """Variable-setting commands; anything else is left alone."""
        if cmd == "set" and args:
            self.vars[args[0]] = self.expand([a for a in args[1:] if a not in _KEYWORDS])
        elif cmd == "list" and len(args) >= 2 and args[0].upper() in ("APPEND", "PREPEND"):
            values = self.expand(args[2:])
            old = self.vars.get(args[1], [])
            self.vars[args[1]] = old + values if args[0].upper() == "APPEND" else values + old
        elif cmd == "file" and len(args) >= 2 and args[0].upper() in ("GLOB", "GLOB_RECURSE"):
            self.vars[args[1]] = self.glob(args[2:], args[0].upper() == "GLOB_RECURSE")
        elif cmd == "aux_source_directory" and len(args) == 2:
            folder = self.absolute(self.expand(args[:1])[0]) if self.expand(args[:1]) else self.base
            self.vars[args[1]] = sorted(os.path.join(folder, f) for f in os.listdir(folder)
                                        if f.endswith(SOURCE_SUFFIXES)) if os.path.isdir(folder) else []


def from_cmake(path: str, text: str, root: str) -> list[Declared]:
    """Library and Python-module targets with C/C++/CUDA sources in a CMakeLists.txt."""
    from ascend_compat.migrate.extbuild import Declared

    scope = _Scope(path, root)
    rel = scope.rel(os.path.abspath(path))
    targets: dict[str, Declared] = {}
    for cmd, args, line in commands(text):
        if cmd in _TARGETS and args:
            rest = scope.expand(args[1:])
            if cmd == "add_library" and not ({"MODULE", "SHARED"} & set(rest)):
                continue  # static and object libraries are linked into something else
            targets[args[0]] = Declared(args[0], args[0], "cmake", rel, line, scope.sources(args[1:]))
        elif cmd == "target_sources" and args and args[0] in targets:
            known = targets[args[0]].sources
            known.extend(s for s in scope.sources(args[1:]) if s not in known)
        elif cmd == "set_target_properties" and "OUTPUT_NAME" in args:
            # The module Python imports is the output name (two targets may build one module for two archs).
            value = scope.expand(args[args.index("OUTPUT_NAME") + 1:args.index("OUTPUT_NAME") + 2])
            for t in args[:args.index("PROPERTIES")] if "PROPERTIES" in args else []:
                if t in targets and value:
                    targets[t].name = targets[t].qualified = value[0]
        else:
            scope.apply(cmd, args)
    return [d for d in targets.values() if d.sources]


__all__ = ["SOURCE_SUFFIXES", "commands", "from_cmake"]
