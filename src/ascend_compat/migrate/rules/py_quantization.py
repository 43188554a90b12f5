"""Quantization (AC508): a quantization method chosen in code (``GPTQConfig``, ``load_in_4bit=True``,
``LLM(quantization="awq")``), judged by the table ``ascend-compat quant`` uses
(``ecosystem/data/quantization.json``)."""

from __future__ import annotations

import ast
from typing import Optional

from ascend_compat.migrate.rules.base import PyRuleFamily, RuleDef

# transformers quantization configs whose class alone names the method (BitsAndBytesConfig says 4 or 8 bit only
# through its load_in_* keyword, which is judged on its own).
_QUANT_CONFIGS = {"GPTQConfig": "gptq", "AwqConfig": "awq", "FineGrainedFP8Config": "fp8", "GgufConfig": "gguf"}
_QUANT_LEVEL = {"yes": "note", "partial": "warning", "no": "error"}
_USABLE = {"yes": "runs on Ascend", "partial": "runs on Ascend only in part", "no": "does not run on Ascend"}


class QuantizationRules(PyRuleFamily):
    TITLE = "quantization methods"
    RULES = (
        RuleDef(
            code="AC508", name="quantization-method", category="dependency", level="warning",
            message=(
                "quantization method chosen in code (message, level and alternative come from the quantization table)"
            ),
            alternative="see `ascend-compat quant`: methods vllm-ascend / msModelSlim serve on Ascend",
            shim_handles=False, fixable=False, difficulty="medium", effort_days=1.0,
            source="ecosystem/data/quantization.json (a source per quantization method)",
        ),
    )

    def quantization(self, section: dict[str, object], node: ast.AST, api: str) -> None:
        from ascend_compat.ecosystem import quantization

        method = quantization.lookup(section)
        if method is None or method.id == "none":
            return
        self.add("AC508", node, f"{method.name} quantization {_USABLE[method.ascend]}", api,
                 alternative=method.alternative or "; ".join(method.through), level=_QUANT_LEVEL[method.ascend])

    def visit_call(self, node: ast.Call, q: Optional[str], fname: str) -> None:
        for kw in node.keywords:
            if kw.arg in ("load_in_8bit", "load_in_4bit") and isinstance(kw.value, ast.Constant) \
                    and kw.value.value is True:
                self.quantization({"quant_method": "bitsandbytes", kw.arg: True}, kw.value, kw.arg)

    def on_module(self, q: str, head: str, node: ast.AST, call: Optional[ast.Call]) -> bool:
        if call is None:
            return False
        if head == "transformers" and q.rsplit(".", 1)[-1] in _QUANT_CONFIGS:
            self.quantization({"quant_method": _QUANT_CONFIGS[q.rsplit(".", 1)[-1]]}, node, q)
        elif head == "vllm":
            for kw in call.keywords:
                if kw.arg == "quantization" and isinstance(kw.value, ast.Constant) and isinstance(kw.value.value, str):
                    self.quantization({"quant_method": kw.value.value}, kw.value, f"{q}(quantization=...)")
        else:
            return False
        return True
