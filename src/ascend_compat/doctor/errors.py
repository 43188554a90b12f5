"""CANN / torch_npu error translation: one code (``lookup``) or a whole log (``explain_text``).

The table and the one-code queries (``lookup``, ``family``, ``component``, ``describe``) live in
:mod:`ascend_compat.doctor.error_codes` and are re-exported here; that module lists the code families.

What ``explain_text`` accepts as a code, to avoid false positives (PIDs, timestamps, addresses, line numbers):

- a number only in a code context: ``NPU function error: <call>, error code is N``, ``HCCL function error: ...,
  error code is N`` (N < 100 there is an HCCL result), ``error code is/=/: N``, ``ErrCode N``, ``errno:N``,
  ``ret=N`` / ``retCode=N``, ``return code N``, ``aclnnXxx failed ... N``; outside HCCL context only 6-digit codes;
- a bare 6-digit number only when it is a known code, on a line that talks about an error, and not right after
  ``PID``/``device``/``rank``/``line``/``port``/``size``/``id``;
- an ``E``/``W`` code anywhere when it is in the table; an unknown one only in the form CANN prints
  (``EE8888: msg``, ``EZ9999[PID ...]``, ``Error(EZ1001)``) and with a known CANN module letter, so that words
  such as ``EP1024`` (expert parallelism) are not codes; ``ERR`` + 5 digits;
- torch_npu's own messages for some codes, as whole words (``UCE ERROR`` = 507053, ``FORCE STOP`` = 107022, ...).

Not codes: a small number after ``errno`` (an OS errno such as EAGAIN, also on HCCL lines), a number glued to a
time (``10:32:11,507035`` is a fraction of a second). Only ASCII digits count. Lines end at LF, CR LF or a lone
CR (tqdm-style logs), and a literal backslash-n/r/t escape (JSON or repr() logs) separates words.

Ordering (most likely root cause first). Each finding gets a tier, then the first appearance in the log breaks
ties (earlier lines are closer to the origin):

0. driver and hardware faults (EL codes, the device-memory/ECC/link codes 50705x, the driver's 507899);
1. specific CANN E-codes (EZ1001, EI0002, ...): they carry the message that names the argument or peer;
2. specific numeric codes: ACL return codes, aclnn statuses, HCCL results;
3. generic "inner error" codes that only name a layer: ``xx9999``, 500000-500005, 507000, 561000, HCCL 4; and
   107022/107035, the task abort (FORCE STOP) that follows another failure;
4. torch_npu ERR codes; 5. torch_npu wrappers ``ERRmm100/200/300`` ("call acl/hccl/ge api failed"), which only
   say that the lower-level call above failed.

Nothing here imports torch.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Optional, TypedDict

from ascend_compat.doctor.error_codes import (
    Explanation,
    ExplanationDict,
    _table,
    all_codes,
    component,
    describe,
    families,
    family,
    lookup,
    normalize,
)

__all__ = ["MAX_UNKNOWN", "SCHEMA_VERSION", "Explanation", "Finding", "Omitted", "all_codes", "component", "describe",
           "explain_log", "explain_text", "families", "family", "lookup", "normalize", "report"]

SCHEMA_VERSION = 1


@dataclass
class Finding:
    """One distinct code found in a log."""

    code: str
    family: Optional[str]
    component: Optional[str]
    explanation: Optional[Explanation]
    line: int  # first line it appears on (1-based)
    text: str  # that line, trimmed
    # how it was recognised: npu-call, hccl-call, code-context, e-code, err-code, torch_npu-message, known-number
    how: str
    tier: int
    count: int = 1
    api: Optional[str] = None  # the failing call, when the log names it
    lines: list[int] = field(default_factory=list)

    @property
    def known(self) -> bool:
        return self.explanation is not None

    def to_dict(self) -> FindingDict:
        return {
            "code": self.code, "known": self.known, "family": self.family, "component": self.component,
            "line": self.line, "lines": self.lines, "count": self.count, "text": self.text, "how": self.how,
            "tier": self.tier,
            "api": self.api, "explanation": self.explanation.to_dict() if self.explanation else None,
        }


class FindingDict(TypedDict):
    """:meth:`Finding.to_dict`."""

    code: str
    known: bool
    family: Optional[str]
    component: Optional[str]
    line: int
    lines: list[int]
    count: int
    text: str
    how: str
    tier: int
    api: Optional[str]
    explanation: Optional[ExplanationDict]


# ---------------------------------------------------------------------------------------------------------------
# Whole logs

# Regexes start with a literal or a small class so that `re` can skip ahead quickly; the context around a
# candidate is then checked on a short window (a 30 MB log takes seconds, not minutes).
_FUNC_ERR = re.compile(
    r"(?P<kind>NPU|HCCL) function error:[ \t]*(?P<call>[^\r\n]{0,300}?),[ \t]*error code is[ \t]*"
    r"(?P<code>[0-9]{1,12})(?![0-9])")
# Whole numbers of code length only: HCCL results have 1-2 digits, ACL/aclnn codes 6 (not inside words/decimals;
# a full stop that ends a sentence is fine). A literal "\n" escape before the number separates it (JSON logs).
_NUMBER = re.compile(r"(?:(?<![\w.])|(?<=\\[nrt]))(?:[0-9]{6}|[0-9]{1,2})(?![\w]|\.[0-9])")
_CTX_BEFORE = re.compile(
    r"(?:error[ _]?code(?:\s+is|\s*[:=])|\berr_?code\s*[:=]?|\berrno\s*[:=]|\bret(?:_?code)?\s*[:=]"
    r"|\breturn(?:ed)?(?: code)?(?:\s+is|\s*[:=])|\baclnn\w+\s+failed\D{0,30}?)\s*$",
    re.IGNORECASE)
_E_IN_TEXT = re.compile(r"[EW][A-Z0-9][0-9]{4}")
_ERR_IN_TEXT = re.compile(r"ERR[0-9]{5}")
_TIME_FRACTION = re.compile(r"[0-9]:[0-9]{2}[,.]$")  # 10:32:11,507035: the number is a fraction of a second
_PRINTED_AFTER = re.compile(r"[ \t]*[:\[]")
_LINE_END = re.compile(r"\r\n?|\n")  # like str.splitlines for these three (tqdm logs end lines with a lone \r)
_MAX_QUOTE = 300
_ERRORISH = re.compile(r"error|fail|exception|abnormal|abort", re.IGNORECASE)
_NOT_CODE_BEFORE = re.compile(r"(pid|tid|device|dev|rank|line|port|size|id|len|step|epoch|iter)\W{0,3}$",
                              re.IGNORECASE)
_CALL_NAME = re.compile(r"call (\w+) failed")
_HCCL = re.compile(r"hccl", re.IGNORECASE)

_GENERIC = {"500000", "500001", "500002", "500003", "500004", "500005", "507000", "561000", "4"}
_CONSEQUENCE = {"107022", "107035"}  # tasks aborted on purpose after another failure (torch_npu: FORCE STOP)
_HARDWARE = {"507053", "507054", "507055", "507056", "507057", "507899", "507914"}
_WRAPPER_TYPES = ("100", "200", "300")


@lru_cache(maxsize=1)
def _torch_npu_phrases() -> dict[str, str]:
    """Upper-case messages torch_npu prints for some codes (from the data's ``torch_npu`` field) -> code."""
    out = {}
    for code, entry in _table()["codes"].items():
        for part in re.split(r"\s*/\s*", entry.get("torch_npu") or ""):
            part = re.sub(r"\s*\(.*\)$", "", part).strip()
            if re.fullmatch(r"[A-Z][A-Z ]+[A-Z]", part) and " " in part:
                out[part] = code
    return out


def _tier(code: str, fam: Optional[str]) -> int:
    if fam == "torch_npu":
        return 5 if code[-3:] in _WRAPPER_TYPES else 4
    if fam == "cann_message":
        if code.endswith("9999"):
            return 3
        return 0 if code.startswith("EL") else 1
    if code in _HARDWARE:
        return 0
    if code in _GENERIC or code in _CONSEQUENCE:
        return 3
    return 2


#: Distinct codes a log reports in full beyond the known ones (the table bounds those): the rest are counted only,
#: so a log with a million distinct numbers costs neither a million findings nor their output.
MAX_UNKNOWN = 200
_MAX_COUNTED = 100_000  # distinct omitted codes counted exactly; past it the count is a lower bound


@dataclass
class Omitted:
    """What a log held beyond :data:`MAX_UNKNOWN` distinct unknown codes (counted, not listed)."""

    codes: int = 0  # distinct codes (a lower bound when ``exact`` is False)
    occurrences: int = 0
    exact: bool = True

    def to_dict(self) -> OmittedDict:
        return {"codes": self.codes, "occurrences": self.occurrences, "exact": self.exact}


class OmittedDict(TypedDict):
    """:meth:`Omitted.to_dict`."""

    codes: int
    occurrences: int
    exact: bool


class _Collector:
    def __init__(self, text: str) -> None:
        self.text = text
        self.unknown = 0
        self.omitted = Omitted()
        self._omitted_codes: set[str] = set()
        self.starts = [0] + [m.end() for m in _LINE_END.finditer(text)]
        self.found: dict[str, Finding] = {}
        self.starts_taken: set[int] = set()  # where already-recognised codes start
        self.errorish: dict[int, bool] = {}
        self.hccl: dict[int, bool] = {}

    def _bounds(self, pos: int) -> tuple[int, int, int]:
        """(0-based line index, line start, line end incl. its terminator) of ``pos``, without copying text."""
        i = bisect.bisect_right(self.starts, pos) - 1
        return i, self.starts[i], self.starts[i + 1] if i + 1 < len(self.starts) else len(self.text)

    def lineno(self, pos: int) -> int:
        return self._bounds(pos)[0] + 1

    def line_of(self, pos: int) -> tuple[int, str]:
        """(1-based line number, the line trimmed); a long line is quoted around ``pos`` only, so the cost is
        bounded by the quote, not by the line (a log with no line ends is one huge line)."""
        i, start, end = self._bounds(pos)
        if end - start <= _MAX_QUOTE:
            return i + 1, self.text[start:end].strip()
        lo = max(start, pos - _MAX_QUOTE // 2)
        hi = min(end, lo + _MAX_QUOTE - 6)
        line = self.text[lo:hi].strip()
        return i + 1, ("..." if lo > start else "") + line + ("..." if self.text[hi:end].strip() else "")

    def _line_has(self, cache: dict[int, bool], pattern: re.Pattern[str], pos: int) -> bool:
        i, start, end = self._bounds(pos)
        if i not in cache:
            cache[i] = bool(pattern.search(self.text, start, end))
        return cache[i]

    def errorish_line(self, pos: int) -> bool:
        """Whether the line holding ``pos`` talks about an error (cached per line)."""
        return self._line_has(self.errorish, _ERRORISH, pos)

    def hccl_line(self, pos: int) -> bool:
        """Whether the line holding ``pos`` mentions HCCL (cached per line)."""
        return self._line_has(self.hccl, _HCCL, pos)

    def taken(self, start: int) -> bool:
        return start in self.starts_taken

    def add(self, code: str, pos: int, span: tuple[int, int], how: str, api: Optional[str] = None) -> None:
        self.starts_taken.add(span[0])
        lineno = self.lineno(pos)
        if code in self.found:
            f = self.found[code]
            f.count += 1
            if len(f.lines) < 20 and lineno not in f.lines:  # a sample is enough; keeps big logs linear
                f.lines.append(lineno)
            if f.api is None and api:
                f.api = api
            return
        exp = lookup(code)
        if exp is None:
            if self.unknown >= MAX_UNKNOWN:
                self._omit(code)
                return
            self.unknown += 1
        fam = family(code)
        self.found[code] = Finding(code=code, family=fam, component=component(code), explanation=exp, line=lineno,
                                   text=self.line_of(pos)[1], how=how, tier=_tier(code, fam), api=api,
                                   lines=[lineno])


    def _omit(self, code: str) -> None:
        self.omitted.occurrences += 1
        if code in self._omitted_codes:
            return
        if len(self._omitted_codes) < _MAX_COUNTED:
            self._omitted_codes.add(code)
            self.omitted.codes += 1
        else:
            self.omitted.exact = False


def _word(text: str, i: int, extra: str) -> bool:
    """Whether text[i] is a word character or one of ``extra`` (False outside the text, and for the letter of a
    literal ``\\n``/``\\r``/``\\t`` escape: in JSON-escaped or repr() logs that is a line break, not a word)."""
    if i < 0 or i >= len(text):
        return False
    ch = text[i]
    if ch in "nrt" and i > 0 and text[i - 1] == "\\":
        return False
    return ch.isalnum() or ch == "_" or ch in extra


def _api_of(call: str) -> str:
    m = _CALL_NAME.search(call)
    return m.group(1) if m else call.strip()[:120]


def explain_text(text: str) -> list[Finding]:
    """Every distinct error code in a traceback or log, most likely root cause first (see the module doc); past
    :data:`MAX_UNKNOWN` distinct unknown codes, see :func:`explain_log`."""
    return explain_log(text)[0]


def explain_log(text: str) -> tuple[list[Finding], Omitted]:
    """:func:`explain_text` and what it left out: every known code is listed, unknown ones up to
    :data:`MAX_UNKNOWN` (in the order they appear), the rest only counted."""
    c = _Collector(text)
    for m in _FUNC_ERR.finditer(text):
        n = int(m.group("code"))
        if n == 0:
            continue
        if m.group("kind") == "HCCL" and n < 100:
            code, how = str(n), "hccl-call"
        elif n >= 100000:
            code, how = str(n), "npu-call"
        else:
            continue
        c.add(code, m.start(), m.span("code"), how, _api_of(m.group("call")))
    modules = set(_table()["e_modules"])
    table = _table()["codes"]
    for m in _NUMBER.finditer(text):
        start, end = m.span()
        if c.taken(start):
            continue
        digits = m.group()
        n = int(digits)
        window = text[max(0, start - 60): start]
        if _TIME_FRACTION.search(window):
            continue
        lowered = window.lower()
        ctx = _CTX_BEFORE.search(window) if ("code" in lowered or "ret" in lowered or "errno" in lowered
                                             or "aclnn" in lowered) else None  # substring tests: a cheap pre-check
        if ctx:
            # A small number after errno is an OS errno (11 = EAGAIN), even on an HCCL line.
            small_ok = 0 < n < 100 and "errno" not in ctx.group().lower() and c.hccl_line(start)
            if 100000 <= n < 1000000 or small_ok:
                c.add(str(n), start, (start, end), "code-context")
        elif len(digits) == 6 and digits[0] in "12345" and not _word(text, start - 1, ":/#-") \
                and not _word(text, end, ":") and digits in table:
            if c.errorish_line(start) and not _NOT_CODE_BEFORE.search(window[-12:]):
                c.add(digits, start, (start, end), "known-number")
    for m in _E_IN_TEXT.finditer(text):
        code, start, end = m.group(), m.start(), m.end()
        # Not inside paths or identifiers: step_507035/EE1001, EE1001.bin, my-EE1001 are not codes.
        if _word(text, start - 1, "/.-") or _word(text, end, "/") or \
                (text[end:end + 1] == "." and _word(text, end + 1, "")):
            continue
        # An unknown code counts only in the form CANN prints it: "EE8888: ...", "EZ9999[PID ...]", "(EZ1001)".
        printed = _PRINTED_AFTER.match(text, end) is not None or (text[start - 1:start] == "(" and
                                                                   text[end:end + 1] == ")")
        if code in table or (code[0] == "E" and code[:2] in modules and printed):
            c.add(code, start, (start, end), "e-code")
    for m in _ERR_IN_TEXT.finditer(text):
        if _word(text, m.start() - 1, "") or text[m.end():m.end() + 1].isdigit():
            continue
        c.add(m.group(), m.start(), m.span(), "err-code")
    for phrase, code in _torch_npu_phrases().items():
        for m in re.finditer(re.escape(phrase), text):
            if _word(text, m.start() - 1, "") or _word(text, m.end(), ""):  # FORCE STOPPED is not FORCE STOP
                continue
            c.add(code, m.start(), m.span(), "torch_npu-message")
    return sorted(c.found.values(), key=lambda f: (f.tier, f.line)), c.omitted


class LogReport(TypedDict):
    """:func:`report`, the ``explain --json`` document."""

    schema_version: int
    source: str
    count: int
    unknown: list[str]
    root_cause: Optional[str]
    findings: list[FindingDict]
    omitted: OmittedDict


def report(findings: list[Finding], source: str = "<stdin>", omitted: Optional[Omitted] = None) -> LogReport:
    """The JSON document of ``ascend-compat explain --json``."""
    unknown = [f.code for f in findings if not f.known]
    return {
        "schema_version": SCHEMA_VERSION,
        "source": source,
        "count": len(findings),
        "unknown": unknown,
        "root_cause": findings[0].code if findings else None,
        "findings": [f.to_dict() for f in findings],
        "omitted": (omitted or Omitted()).to_dict(),  # unknown codes past MAX_UNKNOWN: counted, not listed
    }
