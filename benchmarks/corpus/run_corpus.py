"""Run a corpus of unedited public CUDA PyTorch scripts three ways and tabulate pass/fail.

    python benchmarks/corpus/run_corpus.py --print-fetch /tmp/corpus_checkout | sh    # fetch (git), once
    python benchmarks/corpus/run_corpus.py --checkout /tmp/corpus_checkout           # run everything
    python benchmarks/corpus/run_corpus.py --checkout DIR --only nanogpt-sample --modes sim --json

Modes, each in a fresh temporary copy of the script's work directory, after the manifest's setup steps made the
synthetic data it reads:

- ``cpu``: ``python -m ascend_compat run SCRIPT`` (the shim, activated by ``run``), CPU fallback;
- ``sim``: the same with ``--simulate npu``;
- ``native``: ``ascend-compat port --mode native --write`` over the copy, then ``python SCRIPT`` without the shim,
  on the simulated NPU (ASCEND_COMPAT_SIMULATE=npu; a ``sitecustomize`` on PYTHONPATH calls
  ``simulate.install_from_env()`` in every Python process, torchrun workers and spawned children included).

torchrun scripts run as ``python -m torch.distributed.run --standalone --nproc_per_node N`` with ``-m ascend_compat
run SCRIPT`` in the shim modes. The runner never fetches or downloads anything; a missing checkout is reported.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Optional

HERE = Path(__file__).resolve().parent
MODES = ("cpu", "sim", "native")

# --- setup steps: synthetic data, made in the work directory by a plain CPU Python (no shim) --------------------

SETUP: dict[str, str] = {
    "nanogpt_data": r"""
import os, pickle, numpy as np
os.makedirs('data/synth', exist_ok=True)
chars = ['\n'] + [chr(c) for c in range(32, 32 + 64)]  # sample.py starts from '\n'
rng = np.random.default_rng(0)
for split, n in (('train', 20000), ('val', 4000)):
    rng.integers(0, 65, n, dtype=np.uint16).tofile(f'data/synth/{split}.bin')
with open('data/synth/meta.pkl', 'wb') as f:
    pickle.dump({'vocab_size': 65, 'itos': dict(enumerate(chars)), 'stoi': {c: i for i, c in enumerate(chars)}}, f)
""",
    "nanogpt_ckpt": r"""
import os, torch
from model import GPT, GPTConfig
args = dict(n_layer=2, n_head=2, n_embd=32, block_size=32, bias=False, vocab_size=65, dropout=0.0)
torch.manual_seed(0)
m = GPT(GPTConfig(**args))
os.makedirs('out', exist_ok=True)
torch.save({'model': m.state_dict(), 'model_args': args, 'iter_num': 0, 'best_val_loss': 1e9,
            'config': {'dataset': 'synth'}}, 'out/ckpt.pt')
""",
    "char_text": r"""
import random
random.seed(0)
words = [''.join(random.choice('abcdefghijklmnopqrstuvwxyz') for _ in range(random.randint(2, 7))) for _ in range(200)]
with open('input.txt', 'w') as f:
    for _ in range(400):
        f.write(' '.join(random.choice(words) for _ in range(10)).capitalize() + '.\n')
    f.write('O God, O God!\n')  # chargpt's sampling callback encodes this context at iteration 0
""",
    "wlm_data": r"""
import os, random
random.seed(0)
os.makedirs('data/synth', exist_ok=True)
words = ['w%d' % i for i in range(60)]
for split, n in (('train', 300), ('valid', 60), ('test', 60)):
    with open(f'data/synth/{split}.txt', 'w') as f:
        for _ in range(n):
            f.write(' ' + ' '.join(random.choice(words) for _ in range(10)) + ' \n')
""",
    "wlm_ckpt": r"""
import subprocess, sys
subprocess.run([sys.executable, 'main.py', '--data', './data/synth', '--model', 'LSTM', '--emsize', '16',
                '--nhid', '16', '--nlayers', '1', '--bptt', '8', '--batch_size', '4', '--epochs', '1',
                '--log-interval', '1000', '--save', 'model.pt'], check=True, stdout=subprocess.DEVNULL)
""",
    "llama_ckpt": r"""
import json, os, random, torch, sentencepiece as spm
random.seed(0)
alphabet = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.,;:!?\'"()-'
with open('spm_train.txt', 'w') as f:
    for _ in range(3000):
        words = (''.join(random.choice(alphabet) for _ in range(random.randint(1, 8))) for _ in range(12))
        f.write(' '.join(words) + '\n')
spm.SentencePieceTrainer.train(input='spm_train.txt', model_prefix='tokenizer', vocab_size=128, model_type='bpe',
                               character_coverage=1.0, unk_id=0, bos_id=1, eos_id=2, pad_id=-1,
                               hard_vocab_limit=False, minloglevel=2)
V = spm.SentencePieceProcessor(model_file='tokenizer.model').vocab_size()
dim, layers, hidden = 64, 2, 192  # llama's FeedForward: multiple_of * ceil(int(2 * 4 * dim / 3) / multiple_of)
os.makedirs('ckpt', exist_ok=True)
with open('ckpt/params.json', 'w') as f:
    json.dump({'dim': dim, 'n_layers': layers, 'n_heads': 4, 'multiple_of': 32, 'norm_eps': 1e-5,
               'vocab_size': -1}, f)
g = torch.Generator().manual_seed(0)
r = lambda *s: (torch.randn(*s, generator=g) * 0.02).half()
sd = {'tok_embeddings.weight': r(V, dim), 'norm.weight': torch.ones(dim).half(), 'output.weight': r(V, dim)}
for i in range(layers):
    p = f'layers.{i}.'
    for w in ('wq', 'wk', 'wv', 'wo'):
        sd[p + f'attention.{w}.weight'] = r(dim, dim)
    sd[p + 'feed_forward.w1.weight'] = r(hidden, dim)
    sd[p + 'feed_forward.w3.weight'] = r(hidden, dim)
    sd[p + 'feed_forward.w2.weight'] = r(dim, hidden)
    sd[p + 'attention_norm.weight'] = torch.ones(dim).half()
    sd[p + 'ffn_norm.weight'] = torch.ones(dim).half()
torch.save(sd, 'ckpt/consolidated.00.pth')
""",
    "tiny_llama_hf": r"""
import random, sentencepiece as spm
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast
random.seed(0)
with open('spm_train.txt', 'w') as f:
    for _ in range(2000):
        f.write(' '.join(''.join(random.choice('abcdefghijklmnopqrstuvwxyz') for _ in range(random.randint(1, 8)))
                         for _ in range(12)) + '.\n')
from tokenizers import Tokenizer, models, pre_tokenizers, trainers
tok = Tokenizer(models.BPE(unk_token='<unk>'))
tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
tok.train(['spm_train.txt'], trainers.BpeTrainer(vocab_size=300, special_tokens=['<unk>', '<s>', '</s>']))
fast = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token='<unk>', bos_token='<s>', eos_token='</s>')
fast.save_pretrained('tiny-llama')
cfg = LlamaConfig(vocab_size=len(fast), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                  num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=128,
                  bos_token_id=1, eos_token_id=2)
LlamaForCausalLM(cfg).save_pretrained('tiny-llama')
""",
    "dit_data": r"""
# Four 256x256 images in an ImageFolder, and a tiny random AutoencoderKL (8x downsampling, 4 latent channels, as
# the VAE DiT loads) placed in a local Hugging Face cache under the id train.py asks for; HF_HUB_OFFLINE=1 reads it.
import os, numpy as np, torch
from PIL import Image
from diffusers.models import AutoencoderKL
rng = np.random.default_rng(0)
for i in range(4):
    os.makedirs(f'data/class{i % 2}', exist_ok=True)
    Image.fromarray(rng.integers(0, 255, (256, 256, 3), dtype=np.uint8)).save(f'data/class{i % 2}/{i}.png')
torch.manual_seed(0)
vae = AutoencoderKL(block_out_channels=(8, 8, 8, 8), layers_per_block=1, latent_channels=4, norm_num_groups=4,
                    down_block_types=('DownEncoderBlock2D',) * 4, up_block_types=('UpDecoderBlock2D',) * 4,
                    sample_size=256)
snap = 'hf/hub/models--stabilityai--sd-vae-ft-ema/snapshots/0000000000000000000000000000000000000000'
vae.save_pretrained(snap)
os.makedirs('hf/hub/models--stabilityai--sd-vae-ft-ema/refs', exist_ok=True)
with open('hf/hub/models--stabilityai--sd-vae-ft-ema/refs/main', 'w') as f:
    f.write('0' * 40)
""",
    "alpaca_data": r"""
import json, random
random.seed(0)
w = lambda n: ' '.join(random.choice(['alpha', 'beta', 'gamma', 'delta', 'tree', 'stone']) for _ in range(n))
json.dump([{'instruction': w(6), 'input': w(3) if i % 2 else '', 'output': w(8)} for i in range(16)],
          open('alpaca_tiny.json', 'w'))
""",
}

SITECUSTOMIZE = """\
import os
if os.environ.get("ASCEND_COMPAT_SIMULATE"):
    from ascend_compat import simulate
    simulate.install_from_env()
"""

_EXC = re.compile(r"^(?:[\w.]+\.)?[A-Z]\w*(?:Error|Exception|Exit|Interrupt|Failure|Warning)\b(?::|$)")
_RANK_PREFIX = re.compile(r"^\[(?:rank|default)\d+\]:\s?")


def first_error(output: str) -> str:
    """The first exception line with a message (``Name: message``), else the first bare one, else the last line.

    A bare wrapper such as mp.spawn's ``ProcessRaisedException:`` is skipped for the child's error that follows it.
    """
    lines = [_RANK_PREFIX.sub("", ln).rstrip() for ln in output.splitlines()]
    found = [ln for ln in lines if _EXC.match(ln) and "Warning" not in ln.split(":", 1)[0]]
    for ln in found:
        if ln.split(":", 1)[-1].strip() and ":" in ln:
            return ln[:300]
    if found:
        return found[0][:300]
    rest = [ln for ln in lines if ln.strip()]
    return rest[-1][:300] if rest else ""


def clean_env(extra: dict[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ASCEND_COMPAT_")}
    env.update({
        "PYTHONUNBUFFERED": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false",
        "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "WANDB_MODE": "disabled",
        "HF_HUB_DISABLE_TELEMETRY": "1", "PYTHONDONTWRITEBYTECODE": "1",
    })
    env.update(extra)
    return env


def run_proc(cmd: list[str], cwd: Path, env: dict[str, str], timeout: float) -> tuple[Optional[int], str, float]:
    """Run in its own process group; on timeout kill the group. Returns (rc or None on timeout, output, seconds)."""
    t0 = time.monotonic()
    with tempfile.TemporaryFile() as out:
        p = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            rc: Optional[int] = p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            rc = None
        finally:
            try:
                os.killpg(p.pid, signal.SIGKILL)  # the group this runner started: stray workers too
            except ProcessLookupError:
                pass
            p.wait()
        out.seek(0)
        text = out.read().decode("utf-8", "replace")
    return rc, text, time.monotonic() - t0


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def build_cmd(script: dict, mode: str) -> list[str]:
    py = sys.executable
    if script.get("launcher", "python") == "torchrun":
        launch = [py, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={script.get('nproc', 1)}"]
    else:
        launch = [py]
    if mode == "native":
        return [*launch, script["path"], *script.get("args", [])]
    shim = ["-m", "ascend_compat", "run", *(["--simulate", "npu"] if mode == "sim" else [])]
    return [*launch, *shim, script["path"], *script.get("args", [])]


def run_one(script: dict, mode: str, root: Path, timeout: float, keep: bool) -> dict[str, Any]:
    res: dict[str, Any] = {"script": script["name"], "mode": mode}
    src = root / script.get("workdir", ".")
    tmp = Path(tempfile.mkdtemp(prefix=f"corpus-{script['name']}-{mode}-"))
    try:
        work = tmp / "work"
        shutil.copytree(src, work, ignore=shutil.ignore_patterns(".git"), symlinks=True)
        boot = tmp / "boot"
        boot.mkdir()
        pythonpath = [str((work / p).resolve()) for p in script.get("pythonpath", [])]
        if script.get("overlay"):  # the library versions the script was written for, before the installed ones
            overlay = overlay_dir(root, script)
            if not overlay.is_dir():
                return {**res, "status": "setup-failed", "rc": None, "seconds": 0.0, "output_tail": "",
                        "error": f"overlay {script['overlay']!r} missing: {overlay} (see --print-fetch)"}
            pythonpath.append(str(overlay))
        port = str(free_port())  # "{port}" in args/env: a TCP port of its own, as cells run in parallel
        script = {**script, "args": [a.replace("{port}", port) for a in script.get("args", [])]}
        extra = {k: v.replace("{port}", port) for k, v in script.get("env", {}).items()}
        base_pp = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
        setup_env = clean_env({**extra, "PYTHONPATH": os.pathsep.join(pythonpath + base_pp)})
        for step in script.get("setup", []):
            rc, out, _ = run_proc([sys.executable, "-c", SETUP[step]], work, setup_env, 300)
            if rc != 0:
                return {**res, "status": "setup-failed", "error": f"setup {step}: {first_error(out)}", "rc": rc,
                        "seconds": 0.0, "output_tail": out[-4000:]}
        if mode == "native":
            rc, out, _ = run_proc([sys.executable, "-m", "ascend_compat", "port", "--mode", "native", "--write", "."],
                                  work, setup_env, 300)
            res["port_rc"] = rc
            if rc not in (0, 1, 3):
                return {**res, "status": "port-failed", "error": f"port: {first_error(out)}", "rc": rc,
                        "seconds": 0.0, "output_tail": out[-4000:]}
            (boot / "sitecustomize.py").write_text(SITECUSTOMIZE)
            pythonpath.insert(0, str(boot))
            extra["ASCEND_COMPAT_SIMULATE"] = "npu"
        else:
            # The shim modes run under `ascend-compat run` with ASCEND_COMPAT_AUTO_ACTIVATE=1 exported, as users do.
            extra["ASCEND_COMPAT_AUTO_ACTIVATE"] = "1"
        env = clean_env({**extra, "PYTHONPATH": os.pathsep.join(pythonpath + base_pp)})
        limit = float(script.get("timeout", timeout))
        rc, out, secs = run_proc(build_cmd(script, mode), work, env, limit)
        res.update(rc=rc, seconds=round(secs, 1), output_tail=out[-4000:])
        if rc is None and script.get("stop_after") and re.search(script["stop_after"], out):
            # An epoch far longer than a smoke test (ImageNet's 1.28 M dummy images): the first steps ran.
            res.update(status="pass", error="", note=f"stopped at the time limit after {script['stop_after']!r}")
        elif rc is None:
            res.update(status="timeout", error=f"timeout after {limit:.0f} s; last line: {first_error(out)}")
        elif rc != 0:
            res.update(status="fail", error=first_error(out))
        elif script.get("expect") and not re.search(script["expect"], out):
            res.update(status="fail", error=f"exit 0 but {script['expect']!r} not in the output: {first_error(out)}")
        else:
            res.update(status="pass", error="")
        return res
    finally:
        if keep:
            res["workdir"] = str(tmp)
        else:
            shutil.rmtree(tmp, ignore_errors=True)


def overlay_dir(root: Path, script: dict) -> Path:
    """Where ``--print-fetch`` installs a script's overlay (``root`` is the script's checkout): beside it, in
    ``_overlays/<name>``."""
    return root.parent / "_overlays" / script["overlay"]


def print_fetch(manifest: dict, dest: str) -> None:
    print("set -e")
    for name, co in manifest["checkouts"].items():
        path = os.path.join(dest, name)
        print(f"[ -d {path} ] || git clone -q https://github.com/{co['repo']}.git {path}")
        print(f"git -C {path} checkout -q {co['commit']}")
    for name, specs in manifest.get("overlays", {}).items():
        # Pinned libraries a script needs in older versions than the environment's: installed beside the
        # checkouts and put first on that script's PYTHONPATH only (never into the environment itself).
        target = os.path.join(dest, "_overlays", name)
        print(f"[ -d {target} ] || {sys.executable} -m pip install -q --no-deps --target {target} "
              + " ".join(f"'{spec}'" for spec in specs))


def print_table(results: list[dict], names: list[str], modes: list[str]) -> None:
    by = {(r["script"], r["mode"]): r for r in results}
    w = max(len(n) for n in names) + 2
    print("script".ljust(w) + "".join(m.ljust(14) for m in modes))
    for n in names:
        cells = []
        for m in modes:
            r = by.get((n, m))
            cells.append((f"{r['status']} {r.get('seconds', 0):.0f}s" if r else "-").ljust(14))
        print(n.ljust(w) + "".join(cells))
    totals = {m: sum(1 for n in names if by.get((n, m), {}).get("status") == "pass") for m in modes}
    print("passed".ljust(w) + "".join(f"{totals[m]}/{len(names)}".ljust(14) for m in modes))
    print("\nfirst error per failing cell:")
    for n in names:
        for m in modes:
            r = by.get((n, m))
            if r and r["status"] != "pass":
                print(f"  {n} [{m}] {r['status']}: {r['error']}")


def main(argv: Optional[list[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--checkout", help="directory holding the checkouts named in the manifest")
    ap.add_argument("--manifest", default=str(HERE / "manifest.json"))
    ap.add_argument("--only", action="append", default=[], help="script name (repeatable, or comma list)")
    ap.add_argument("--modes", default=",".join(MODES), help="comma list of cpu,sim,native")
    ap.add_argument("--jobs", type=int, default=2, help="scripts run in parallel (default 2)")
    ap.add_argument("--timeout", type=float, default=90.0, help="seconds per script and mode (manifest may raise it)")
    ap.add_argument("--json", nargs="?", const="-", metavar="PATH", help="JSON results to PATH (or stdout)")
    ap.add_argument("--keep", action="store_true", help="keep the temporary work directories")
    ap.add_argument("--print-fetch", metavar="DIR", help="print the git commands that fill DIR, then exit")
    args = ap.parse_args(argv)

    manifest = json.loads(Path(args.manifest).read_text())
    if args.print_fetch:
        print_fetch(manifest, args.print_fetch)
        return 0
    if not args.checkout:
        ap.error("--checkout DIR is required (fill it with: --print-fetch DIR | sh)")
    only = {n for o in args.only for n in o.split(",") if n}
    scripts = [s for s in manifest["scripts"] if not only or s["name"] in only]
    unknown = only - {s["name"] for s in manifest["scripts"]}
    if unknown:
        ap.error(f"unknown script(s): {', '.join(sorted(unknown))}")
    modes = [m for m in args.modes.split(",") if m]
    if set(modes) - set(MODES):
        ap.error(f"modes are {', '.join(MODES)}")
    checkout = Path(args.checkout).resolve()

    results: list[dict] = []
    lock = threading.Lock()          # scripts with a fixed rendezvous port never overlap one another
    log_lock = threading.Lock()

    def job(script: dict) -> list[dict]:
        root = checkout / script["checkout"]
        if not (root / script.get("workdir", ".") / script["path"]).is_file():
            return [{"script": script["name"], "mode": m, "status": "missing", "seconds": 0.0,
                     "error": f"{root / script.get('workdir', '.') / script['path']} not found"} for m in modes]
        out = []
        for m in modes:
            if script.get("fixed_port"):
                with lock:
                    r = run_one(script, m, root, args.timeout, args.keep)
            else:
                r = run_one(script, m, root, args.timeout, args.keep)
            with log_lock:
                print(f"[{time.strftime('%H:%M:%S')}] {script['name']:<32} {m:<7} {r['status']:<8} "
                      f"{r.get('seconds', 0):5.0f}s  {r.get('error', '')[:110]}", file=sys.stderr, flush=True)
            out.append(r)
        return out

    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        for rs in pool.map(job, scripts):
            results.extend(rs)

    for s in scripts:
        for r in results:
            if r["script"] == s["name"]:
                r["categories"] = s.get("categories", [])
                r["source"] = dict(manifest["checkouts"][s["checkout"]], path=f"{s.get('workdir', '.')}/{s['path']}")
    if args.json:
        text = json.dumps({"modes": modes, "results": results}, indent=2)
        if args.json == "-":
            print(text)
        else:
            Path(args.json).write_text(text)
    if args.json != "-":
        print_table(results, [s["name"] for s in scripts], modes)
    return 0 if all(r["status"] == "pass" for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
