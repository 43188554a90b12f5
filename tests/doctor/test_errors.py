"""Error translation: lookups, whole-log explanations (realistic torch_npu failures), and the two commands."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ascend_compat.doctor import errors

FIXTURES = Path(__file__).parent / "fixtures"


def _log(name: str) -> str:
    return (FIXTURES / name).read_text(encoding="utf-8")


def _cli(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "ascend_compat", *args], capture_output=True, text=True,
                          input=stdin, timeout=120, env={**os.environ, "NO_COLOR": "1"})


# ---------------------------------------------------------------------------------------------------------- lookup

@pytest.mark.parametrize("spelling", ["507035", " 507035 ", "0507035", "ACL_ERROR_RT_VECTOR_CORE_EXCEPTION",
                                      "acl_error_rt_vector_core_exception"])
def test_lookup_accepts_the_spellings_users_paste(spelling: str) -> None:
    exp = errors.lookup(spelling)
    assert exp is not None and exp.code == "507035"
    assert exp.family == "acl_internal" and exp.component == "Runtime (RTS)"
    assert "Vector Core" in exp.meaning and "ASCEND_LAUNCH_BLOCKING" in exp.fix


def test_lookup_of_each_family() -> None:
    assert errors.lookup("ez9999").family == "cann_message"  # type: ignore[union-attr]
    assert errors.lookup("161002").family == "aclnn"  # type: ignore[union-attr]
    hccl = errors.lookup("7")
    assert hccl is not None and hccl.family == "hccl" and hccl.name == "HCCL_E_UNAVAIL"
    err = errors.lookup("ERR01002")
    assert err is not None and (err.module, err.type) == ("OPS", "invalid type")
    oom = errors.lookup("EL0004")
    assert oom is not None and oom.component == "Driver" and "OutOfMemoryError" in (oom.torch_npu or "")
    assert errors.lookup("0").family == "success"  # type: ignore[union-attr]
    # A generated (not hand-written) entry still says something specific, from its structured fields.
    gen = errors.lookup("507047")
    assert gen is not None and not gen.curated and "event sync time out" in gen.meaning.lower()


def test_generated_ecode_text_keeps_the_printed_template() -> None:
    exp = errors.lookup("EI0005")
    assert exp is not None and exp.family == "cann_message" and exp.component == "HCCL"
    assert exp.template and "%s" in exp.template


@pytest.mark.parametrize(("code", "family", "component"), [
    ("EE8888", "cann_message", "Runtime (RTS)"),
    ("EI0020", "cann_message", "HCCL"),
    ("507999", "acl_internal", None),
    ("161999", "aclnn", None),
    ("107999", "acl_parameter", None),
    ("42", "hccl", None),
    ("ERR00777", "torch_npu", "torch_npu PTA"),
    ("ERR07100", "torch_npu", None),
])
def test_unknown_codes_get_a_family_from_range_or_prefix(code: str, family: str, component: str | None) -> None:
    assert errors.lookup(code) is None
    assert errors.family(code) == family
    assert errors.component(code) == component


# Other scripts' digits are not codes: "²".isdigit() is True but int("²") raises, int("١٢٣") is 123.
@pytest.mark.parametrize("text", ["hello", "0x7020010", "E12", "", "12.5", "²", "١٢٣", "٥٠٧٠٣٥", "EZ١٠٠١",
                                  "ERR٠٠١٠٠"])
def test_things_that_are_not_codes(text: str) -> None:
    assert errors.normalize(text) is None and errors.family(text) is None and errors.lookup(text) is None


def test_numbers_outside_every_range_have_no_family() -> None:
    assert errors.normalize("999999") == "999999" and errors.family("999999") is None


# --------------------------------------------------------------------------------------------------- whole logs

@pytest.mark.parametrize(("fixture", "expected"), [
    # the failing aclnn call first, then its inner-error detail, the ERR00100 wrapper last
    ("aclnn_561103.log", ["561103", "EZ9999", "ERR00100"]),
    ("vector_core_507035.log", ["507035", "EE9999", "ERR00100"]),
    # the E-code that names the bad argument comes before the aclnn status it explains
    ("param_161002.log", ["EZ1001", "161002", "ERR00100"]),
    # driver OOM first; the runtime code is read from "runtime result = N" on a failure line
    ("oom_el0004.log", ["EL0004", "207001", "ERR00006"]),
    # HCCL: the E-code message, then the HCCL result (7 only counts as a code on the HCCL line), then the wrapper
    ("hccl_port_in_use.log", ["EJ0003", "7", "ERR02200"]),
    # hardware fault before the HCCL timeout it caused; torch_npu's FORCE STOP / UCE ERROR map to their codes
    ("device_fault.log", ["507053", "EI0002", "107022", "ERR00100"]),
])
def test_explain_finds_every_code_root_cause_first(fixture: str, expected: list[str]) -> None:
    findings = errors.explain_text(_log(fixture))
    assert [f.code for f in findings] == expected
    assert all(f.known for f in findings)


def test_explain_reports_the_failing_call_line_and_repeats() -> None:
    first, inner, wrapper = errors.explain_text(_log("aclnn_561103.log"))
    assert first.api == "aclnnIndexSelect" and first.how == "npu-call" and first.line == 10
    assert "error code is 561103" in first.text
    assert inner.count == 2 and inner.lines == [12, 13]
    assert wrapper.explanation is not None and "wrapper" in wrapper.explanation.meaning
    device = errors.explain_text(_log("device_fault.log"))
    assert {f.code: f.count for f in device}["507053"] == 2  # the number and torch_npu's "UCE ERROR"


def test_explain_ignores_timestamps_pids_addresses_and_line_numbers() -> None:
    assert errors.explain_text(_log("noise.log")) == []


@pytest.mark.parametrize("line", [
    "open failed, errno: 2",  # a POSIX errno, not an HCCL result
    "NPU function error: call aclnnAdd failed, error code is 7",  # small numbers are codes only for HCCL
    "error code is 0",
    "[ERROR] 2026-03-02-10:15:44 (PID:507035, Device:0, RankID:-1) worker failed",
    "failed to load /ckpt/EE1001.bin and /run/step_561103",
    # errno on an HCCL line is the OS errno (11 = EAGAIN), not HCCL result 11
    "[ERROR] HCCL(3522,python):2024-05-12-10:32:11.123.456 [socket.cc:123] connect to peer failed, errno: 11",
    "[INFO] torch_npu: FORCE STOPPED flag cleared, no error",  # only the whole words FORCE STOP
    "2024-05-12 10:32:11,507035 ERROR worker crashed",  # a fraction of a second, not 507035
    "[ERROR] Training failed after EP1024 expert shards",  # EP = expert parallelism, not an unknown Dump code
    "training failed at loss 507035.25",  # a decimal, even when the integer part is a known code
    "aclnnAdd failed, error code is ٥٠٧٠٣٥",  # only ASCII digits
])
def test_no_false_positives(line: str) -> None:
    assert errors.explain_text(line) == []


@pytest.mark.parametrize(("line", "code"), [
    ("aclnnMatmul failed, errno:561000", "561000"),
    ("rtStreamSynchronize execute failed, ret=507035", "507035"),
    ("HcclAllReduce returned code: 9 (hccl)", "9"),
    ("ErrCode 207018 while allocating", "207018"),
    ("AclNN_Parameter_Error(EZ1001): Tensor self not implemented for DT_INT8", "EZ1001"),
    ("EZ9999[PID: 1176] Op Pack does not has any binary.", "EZ9999"),
    # a code that ends a sentence
    ("aclrtSynchronizeDevice failed, error code is 507035.", "507035"),
    ("aclnnMatmul failed, errno:561000.", "561000"),
    ("rtStreamSynchronize failed: 507035. Aborting", "507035"),
    # an HCCL result is still read from "error code is N" on an HCCL line, and from the printed form of an
    # unknown E-code of a known module
    ("[ERROR] HCCL(3522,python) connect failed, error code is 11", "11"),
    ("EP1024: [PID: 1] dump failed", "EP1024"),
    ("FORCE STOP: task aborted", "107022"),
    # JSON-escaped / repr() logs: a literal backslash-n before the code is a line break, not a word character
    ('{"msg": "RuntimeError: boom\\nEZ1001: Tensor self not implemented"}', "EZ1001"),
    ("'worker died\\n507035 aclrtSynchronizeDevice failed\\n'", "507035"),
])
def test_codes_in_other_torch_npu_and_cann_formats(line: str, code: str) -> None:
    assert [f.code for f in errors.explain_text(line)] == [code]


def test_unknown_codes_in_a_log_are_reported_with_their_family() -> None:
    findings = errors.explain_text(_log("unknown_codes.log"))
    by_code = {f.code: f for f in findings}
    assert not by_code["EE8888"].known and by_code["EE8888"].family == "cann_message"
    assert not by_code["507999"].known and by_code["507999"].family == "acl_internal"
    assert by_code["ERR00100"].known


def test_report_json_shape() -> None:
    doc = errors.report(errors.explain_text(_log("param_161002.log")), "param.log")
    assert doc["schema_version"] == errors.SCHEMA_VERSION and doc["root_cause"] == "EZ1001"
    assert doc["unknown"] == [] and doc["count"] == 3
    json.dumps(doc)


# ------------------------------------------------------------------------------------------------------------ CLI

def test_cli_error_known_codes() -> None:
    r = _cli("error", "507035", "EZ1001", "7")
    assert r.returncode == 0, r.stderr
    assert "ACL_ERROR_RT_VECTOR_CORE_EXCEPTION" in r.stdout and "HCCL_E_UNAVAIL" in r.stdout
    assert "\033[" not in r.stdout


def test_cli_error_unknown_code_exits_1_with_family() -> None:
    r = _cli("error", "507035", "EE8888")
    assert r.returncode == 1
    assert "EE8888  unknown code [cann_message, Runtime (RTS)]" in r.stdout


def test_cli_error_json_and_usage_error() -> None:
    r = _cli("error", "--json", "161002", "ERR07100", "hello")
    assert r.returncode == 2
    doc = json.loads(r.stdout)
    assert doc["schema_version"] == 1 and doc["unknown"] == ["ERR07100"] and doc["invalid"] == ["hello"]
    assert doc["codes"][0]["explanation"]["name"] == "ACLNN_ERR_PARAM_INVALID"


def test_cli_explain_file_orders_root_cause_first() -> None:
    r = _cli("explain", str(FIXTURES / "param_161002.log"))
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert out.index("1. EZ1001") < out.index("2. 161002") < out.index("3. ERR00100")
    assert "failing call: aclnnQuantMatmulWeightNz" in out


def test_cli_explain_stdin_json() -> None:
    r = _cli("explain", "--json", stdin=_log("oom_el0004.log"))
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["source"] == "<stdin>" and doc["root_cause"] == "EL0004"
    assert [f["code"] for f in doc["findings"]] == ["EL0004", "207001", "ERR00006"]


def test_cli_explain_no_code_unknown_code_and_missing_file() -> None:
    none = _cli("explain", "-", stdin=_log("noise.log"))
    assert none.returncode == 1 and "No CANN / torch_npu error code found" in none.stdout
    unknown = _cli("explain", str(FIXTURES / "unknown_codes.log"))
    assert unknown.returncode == 1 and "not in ascend-compat's table: EE8888, 507999" in unknown.stdout
    missing = _cli("explain", str(FIXTURES / "does_not_exist.log"))
    assert missing.returncode == 2 and "cannot read" in missing.stderr


def test_importing_the_translator_does_not_import_torch() -> None:
    code = ("import sys\nfrom ascend_compat.doctor import errors\nerrors.explain_text('error code is 507035')\n"
            "assert 'torch' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


def test_cli_explain_tolerates_undecodable_bytes_and_crlf() -> None:
    raw = b"\xff\xfe garbage \x80\r\nRuntimeError: NPU function error: call aclnnCast failed, error code is 561103\r\n"
    r = subprocess.run([sys.executable, "-m", "ascend_compat", "explain", "--json"], input=raw, capture_output=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["root_cause"] == "561103" and doc["findings"][0]["api"] == "aclnnCast"
    assert doc["findings"][0]["line"] == 2


def test_explain_json_escaped_log_finds_codes_after_literal_newline_escapes() -> None:
    log = ('{"level":"error","msg":"RuntimeError: NPU function error: call aclnnAdd failed, error code is 161002'
           '\\n[ERROR] ERR00100 PTA call acl api failed\\nEZ1001: [PID: 1] Tensor self not implemented for '
           'DT_DOUBLE\\nEL0004: Failed to allocate memory requested by xx module.\\nFORCE STOP"}')
    assert [f.code for f in errors.explain_text(log)] == ["EL0004", "EZ1001", "161002", "107022", "ERR00100"]


def test_explain_counts_lone_cr_and_crlf_as_line_ends() -> None:
    # tqdm-style progress output ends lines with a lone \r; the reported line and quote are the code's own line
    lines = [f"step {i} loss 0.5" for i in range(6)]
    lines[2] = "RuntimeError: NPU function error: call aclnnAdd failed, error code is 161002"
    lines[4] = "EZ1001: [PID: 1] Tensor self not implemented"
    text = "\r".join(lines[:3]) + "\r\n" + lines[3] + "\n" + "\r".join(lines[4:]) + "\r"
    by_code = {f.code: f for f in errors.explain_text(text)}
    assert (by_code["161002"].line, by_code["161002"].text) == (3, lines[2])
    assert (by_code["EZ1001"].line, by_code["EZ1001"].text) == (5, lines[4])
    assert [ln.strip() for ln in text.splitlines()][4] == lines[4]  # same numbering as str.splitlines


def test_explain_cr_only_log_with_many_hits_reports_each_line() -> None:
    # 40k \r-joined lines (3 MB), a code on each: quoting the "whole line" used to copy the whole text per hit
    # (hours); line numbers come from the real line ends.
    n = 40_000
    text = "\r".join(f"[ERROR] {i:06d} rtKernelLaunch failed, error code is 507035 {'x' * 40}" for i in range(n))
    (f,) = errors.explain_text(text)
    assert f.code == "507035" and f.count == n and f.lines == list(range(1, 21))
    assert f.text.startswith("[ERROR] 000000 rtKernelLaunch") and len(f.text) < 120


def test_explain_quotes_a_long_line_around_the_code() -> None:
    text = "noise " * 20_000 + "NPU function error: call aclnnAdd failed, error code is 161002 " + "tail " * 20_000
    (f,) = errors.explain_text(text)
    assert f.line == 1 and "error code is 161002" in f.text and len(f.text) <= 300
    assert f.text.startswith("...") and f.text.endswith("...")


@pytest.mark.parametrize("arg", ["²", "١٢٣"])
def test_cli_error_non_ascii_digits_are_a_usage_error(arg: str) -> None:
    r = _cli("error", arg)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "not an error code" in r.stderr and r.stdout == ""  # a usage error goes to stderr
