"""Every example of the two seed READMEs runs, as written, on the simulated NPU.

The seeds (``../shared/seeds`` beside the checkout) are the project's original READMEs: the ascend-compat one
(English and Chinese halves) and the cuda-morph one. Each Python block and each CLI line runs in its own interpreter
in its own folder, two at a time, with ``ASCEND_COMPAT_SIMULATE=npu`` and no network (``HF_HUB_OFFLINE=1``; hub ids
are tiny models built here). What a reader would fill in (``model``, ``train.py``...) is in ``ADAPT``, one reason
each; what cannot run by nature is in ``EXCLUDED``, one reason each. A block that is in neither fails the test.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.conftest import _clean_env, run_python
from tests.seeds.seed_blocks import Snippet, collect

SEEDS = Path(__file__).resolve().parents[2] / ".." / "shared" / "seeds"
SEED_FILES = ("000_4f74b73d3d69839a.txt", "002_758b1472310f2e95.txt")
BIN = Path(sys.executable).parent
TIMEOUT = 240

# Every Python snippet starts here: the simulated NPU stands in for torch_npu on an Ascend machine.
HEADER = "from ascend_compat import simulate\nsimulate.install()\n"

# Placeholder files a snippet names; a snippet gets the ones its ADAPT entry lists.
CUDA_TRAIN = """\
import argparse
import torch
parser = argparse.ArgumentParser()
parser.add_argument("--epochs", type=int, default=1)
args = parser.parse_args()
model = torch.nn.Linear(8, 1).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(16, 8, device="cuda"), torch.randn(16, 1, device="cuda")
for epoch in range(args.epochs):
    loss = torch.nn.functional.mse_loss(model(x), y)
    opt.zero_grad(); loss.backward(); opt.step()
torch.cuda.synchronize()
print(f"trained {args.epochs} epochs on {x.device}")
"""
CUDA_SCRIPT = 'import torch\nx = torch.ones(2, device="cuda")\nprint("tensor on", x.device)\n'
CUDA_MODEL = """\
import torch
model = torch.nn.Linear(4, 4).cuda()
x = torch.randn(2, 4).cuda()
torch.cuda.synchronize()
"""


@dataclass(frozen=True)
class Adapt:
    reason: str
    prelude: str = ""  # Python run before the snippet (after HEADER)
    subs: tuple[tuple[str, str], ...] = ()  # (text in the seed, replacement); "{models}" is the tiny models' folder
    files: dict[str, str] = field(default_factory=dict)  # written into the snippet's folder first
    check: str = ""  # Python run after the snippet: what the user sees, asserted
    lang: str = ""  # run a shell group as "python"
    rc: int = 0  # the documented exit status
    expect: str = ""  # text the output must contain


_TRAIN_PY = Adapt("train.py is the reader's CUDA training script", files={"train.py": CUDA_TRAIN},
                  expect="10 epochs on npu:0")
_CHECK_PY = Adapt("model.py is the reader's CUDA model file", files={"model.py": CUDA_MODEL}, expect="AC101")
_PORT_PY = Adapt("model.py is the reader's CUDA model file", files={"model.py": CUDA_MODEL},
                 expect="+x = torch.randn(2, 4).npu()")
_NO_CANN = Adapt("exit 1: no torch_npu, CANN toolkit or driver here (the simulator is none of them), and the report "
                 "says so", rc=1, expect="no CANN toolkit")

ADAPT: dict[str, Adapt] = {
    "python:84f80e19": Adapt(  # import ascend_compat; activate(); ... MyModel().cuda()
        "MyModel is the reader's model class",
        prelude="import torch\nclass MyModel(torch.nn.Linear):\n"
        "    def __init__(self):\n        super().__init__(3, 3)\n",
        check="assert device.type == 'npu' and x.device.type == 'npu' and model.weight.device.type == 'npu'",
    ),
    "python:4b2ba440": Adapt(  # transformers_patch.apply(); from_pretrained("meta-llama/Llama-3-8B", flash_attention_2)
        "meta-llama/Llama-3-8B is a hub id: a tiny local Llama",
        subs=(('"meta-llama/Llama-3-8B"', '"{models}/llama"'),),
        check="assert model.device.type == 'npu' and model.config._attn_implementation == 'flash_attention_2'",
    ),
    "python:63f2accb": Adapt(  # torch.compile(model, backend=get_compile_backend()); bucketer.pad(input_tensor, dim=1)
        "model and input_tensor are the reader's; the snippet uses torch without importing it",
        prelude="import torch\nmodel = torch.nn.Linear(16, 4)\ninput_tensor = torch.randn(2, 200, 16)\n",
        check="assert padded_input.shape == (2, 256, 16) and model(padded_input).shape == (2, 256, 4)",
    ),
    "python:4caafd0c": Adapt(  # torch.npu.is_available(); ascend_compat.has_npu()
        "two expressions out of context: torch and ascend_compat are imported",
        prelude="import torch\nimport ascend_compat\n",
        check="assert torch.npu.is_available() is True and ascend_compat.has_npu() is True",
    ),
    "python:2011dabe": Adapt(  # Chinese quick start: torch.device("cuda"); x.cuda(); model.cuda()
        "x and model are the reader's; the snippet uses torch without importing it",
        prelude="import torch\nx = torch.randn(3, 3)\nmodel = torch.nn.Linear(3, 3)\n",
        check="assert device.type == 'npu' and x.device.type == 'npu' and model.weight.device.type == 'npu'",
    ),
    "python:34f43ee0": Adapt(  # cuda-morph: from_pretrained("gpt2").cuda(); model.generate(**inputs)
        "gpt2 is a hub id (a tiny local GPT-2); inputs are the reader's tokenizer output, moved to the device",
        prelude="import torch\nfrom transformers import AutoModelForCausalLM\n"
        "inputs = {'input_ids': torch.tensor([[1, 2, 3]], device='npu'), 'attention_mask': torch.ones(1, 3, "
        "dtype=torch.long, device='npu')}\n",
        subs=(('"gpt2"', '"{models}/gpt2"'),),
        check="assert output.device.type == 'npu' and output.shape[1] > 3",
    ),
    "python:f6a13796": Adapt(  # class MyVendorBackend(BackendInfo)
        "the seed's next step, registering the class, is checked",
        check="from ascend_compat.backends import register\nregister(MyVendorBackend)\n"
        "assert MyVendorBackend.is_available() is False",
    ),
    "shell:b564948a": Adapt("Python pasted into a bash fence: run as Python", lang="python"),
    "shell:070809cf": Adapt("Python pasted into a bash fence: run as Python", lang="python", expect="matmul"),
    "shell:aa2c3f10": Adapt(  # export ASCEND_COMPAT_AUTO_ACTIVATE=1; python train.py
        "train.py is the reader's CUDA script; auto-activation needs it to import ascend_compat",
        files={"train.py": "import ascend_compat\n" + CUDA_TRAIN},
        expect="on npu:0",
    ),
    "cli:ascend-compat run script.py": Adapt(
        "script.py is the reader's CUDA script", files={"script.py": CUDA_SCRIPT}, expect="tensor on npu:0"
    ),
    "cli:ascend-compat run train.py --epochs 10": _TRAIN_PY,
    "cli:cuda-morph run train.py --epochs 10": _TRAIN_PY,
    "cli:ascend-compat check model.py": _CHECK_PY,
    "cli:cuda-morph check model.py": _CHECK_PY,
    "cli:ascend-compat port model.py": _PORT_PY,
    "cli:cuda-morph port model.py": _PORT_PY,
    "cli:ascend-compat doctor": _NO_CANN,
    "cli:cuda-morph doctor": _NO_CANN,
    "cli:ascend-compat doctor --full": _NO_CANN,
    "cli:cuda-morph doctor --full": _NO_CANN,
    "cli:ascend-compat quant meta-llama/Llama-3-8B-GPTQ": Adapt(
        "the hub id resolves from a local HF cache holding a tiny GPTQ config; exit 1: GPTQ does not run on Ascend",
        rc=1, expect="read from the Hugging Face cache",
    ),
    "cli:ascend-compat vllm": Adapt("exit 1: vllm and vllm-ascend are not installed, and the report says so", rc=1,
                                    expect="vllm"),
}

EXCLUDED: dict[str, str] = {
    "text:6d943b31": "a diagram of the four layers",
    "text:253b073f": "a directory tree of the original project",
    "text:c991b4f8": "the error text CUDA code prints without the shim",
    "text:239144f0": "a diagram of the interception",
    "shell:f627aefa": "pip install ascend-compat: installs from the network",
    "shell:0f24d77a": "pip install cuda-morph: installs from the network",
    "shell:7076742c": "git clone + pip install + pytest: clones over the network and runs the whole suite",
    "shell:903f5122": "git clone + pip install + pytest: clones over the network and runs the whole suite",
    "shell:beb544e1": "pip install + git clone of the cuda-morph repository and its demo: network",
}

BUILD_MODELS = """
import json
from pathlib import Path
from transformers import GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM
root = Path(__ROOT__)
llama = LlamaConfig(vocab_size=128, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                    num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64)
LlamaForCausalLM(llama).save_pretrained(root / "models" / "llama")
gpt2 = GPT2Config(vocab_size=128, n_embd=64, n_layer=2, n_head=4, n_positions=64)
GPT2LMHeadModel(gpt2).save_pretrained(root / "models" / "gpt2")
# what the hub id meta-llama/Llama-3-8B-GPTQ leaves in the HF cache: its config.json with a GPTQ section
repo = root / "hf" / "hub" / "models--meta-llama--Llama-3-8B-GPTQ"
commit = "0" * 40
(repo / "snapshots" / commit).mkdir(parents=True)
(repo / "refs").mkdir()
(repo / "refs" / "main").write_text(commit)
config = {**llama.to_dict(), "quantization_config": {"quant_method": "gptq", "bits": 4, "group_size": 128}}
(repo / "snapshots" / commit / "config.json").write_text(json.dumps(config))
"""


MISSING = f"seed READMEs not found: {SEEDS.resolve()} (../shared/seeds beside the checkout) is absent"


def _seed_paths() -> list[Path]:
    if not SEEDS.is_dir():
        pytest.skip(MISSING)
    return [SEEDS / name for name in SEED_FILES]


SNIPPETS: dict[str, Snippet] = collect(_seed_paths()) if SEEDS.is_dir() else {}
RUN_IDS = [i for i in SNIPPETS if i not in EXCLUDED] or [pytest.param("-", marks=pytest.mark.skip(reason=MISSING))]


def _environment(root: Path) -> dict[str, str]:
    env = _clean_env()
    env.update({
        "ASCEND_COMPAT_SIMULATE": "npu",
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "HF_HOME": str(root / "hf"),
        "PATH": str(BIN) + os.pathsep + env.get("PATH", ""),
        "OMP_NUM_THREADS": "1",
    })
    env.pop("HF_HUB_CACHE", None)
    env.pop("HUGGINGFACE_HUB_CACHE", None)
    return env


def _command(snippet: Snippet, adapt: Adapt, folder: Path, models: Path) -> list[str]:
    code = snippet.code
    for old, new in adapt.subs:
        assert old in code, f"{snippet.id}: substitution target {old!r} is no longer in the seed"
        code = code.replace(old, new.format(models=models))
    if snippet.kind == "cli":
        argv = shlex.split(code)
        if argv[0] in ("ascend-compat", "cuda-morph"):
            return [str(BIN / argv[0]) if (BIN / argv[0]).exists() else shutil.which(argv[0]) or argv[0], *argv[1:]]
        return [sys.executable, *argv[1:]]  # python -m ascend_compat ...
    if snippet.kind == "python" or adapt.lang == "python":
        source = HEADER + adapt.prelude + code + "\n" + adapt.check + "\n"
        (folder / "snippet.py").write_text(source, encoding="utf-8")
        return [sys.executable, "snippet.py"]
    return ["bash", "-e", "-c", code]


def _run(snippet: Snippet, root: Path, models: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    adapt = ADAPT.get(snippet.id, Adapt(""))
    folder = root / "runs" / "".join(c if c.isalnum() else "_" for c in snippet.id)
    folder.mkdir(parents=True)
    for name, text in adapt.files.items():
        (folder / name).write_text(text, encoding="utf-8")
    argv = _command(snippet, adapt, folder, models)
    start = time.perf_counter()
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=folder, timeout=TIMEOUT)
    except subprocess.TimeoutExpired as exc:
        proc = subprocess.CompletedProcess(argv, -1, str(exc.stdout or ""), f"timed out after {TIMEOUT}s")
    proc.seconds = time.perf_counter() - start  # shown when the snippet fails
    return proc


@pytest.fixture(scope="module")
def results(request, tmp_path_factory) -> dict[str, subprocess.CompletedProcess]:
    """Run the selected snippets, two at a time, each in its own folder and interpreter, after building the tiny
    models (``models/``) and the HF cache (``hf/``) they use."""
    root = tmp_path_factory.mktemp("seeds")
    models = root / "models"
    built = run_python(BUILD_MODELS.replace("__ROOT__", repr(str(root))), env={"HF_HUB_OFFLINE": "1"})
    assert built.returncode == 0, built.stderr
    wanted = {item.callspec.params["snippet_id"] for item in request.session.items
              if hasattr(item, "callspec") and "snippet_id" in item.callspec.params}
    # The benchmarks (about 35 s each) time themselves: one after the other in one slot, started first.
    serial = [i for i in wanted if "bench overhead" in i]
    units = [serial] + [[i] for i in wanted if i not in serial]
    env = _environment(root)

    def run_unit(ids: list[str]) -> dict[str, subprocess.CompletedProcess]:
        return {i: _run(SNIPPETS[i], root, models, env) for i in ids}

    with ThreadPoolExecutor(max_workers=2) as pool:
        done = [f.result() for f in [pool.submit(run_unit, unit) for unit in units if unit]]
    return {i: proc for part in done for i, proc in part.items()}


def test_every_seed_block_is_run_or_excluded():
    _seed_paths()
    both = sorted(set(ADAPT) & set(EXCLUDED))
    assert not both, f"both adapted and excluded: {both}"
    stale = sorted((set(ADAPT) | set(EXCLUDED)) - set(SNIPPETS))
    assert not stale, f"entries for blocks no longer in the seeds: {stale}"
    unhandled = [s for s in SNIPPETS.values() if s.kind == "text" and s.id not in EXCLUDED]
    unhandled += [s for s in SNIPPETS.values() if s.kind == "shell" and s.id not in EXCLUDED and s.id not in ADAPT]
    assert not unhandled, "new seed blocks, neither run nor excluded (add to ADAPT or EXCLUDED):\n" + "\n".join(
        f"{s.id} at {', '.join(s.where)}:\n{s.code}" for s in unhandled
    )
    assert all(reason.strip() for reason in EXCLUDED.values())
    assert all(a.reason.strip() for a in ADAPT.values())


@pytest.mark.slow
@pytest.mark.parametrize("snippet_id", RUN_IDS)
def test_seed_example_runs(snippet_id, results):
    snippet, adapt = SNIPPETS[snippet_id], ADAPT.get(snippet_id, Adapt(""))
    proc = results[snippet_id]
    output = proc.stdout + proc.stderr
    shown = (f"{snippet_id} ({', '.join(snippet.where)}; {proc.seconds:.1f} s):\n{snippet.code}\n"
             f"--- stdout\n{proc.stdout[-3000:]}\n--- stderr\n{proc.stderr[-3000:]}")
    assert proc.returncode == adapt.rc, shown
    assert "Traceback (most recent call last)" not in output, shown
    assert adapt.expect.lower() in output.lower(), shown

