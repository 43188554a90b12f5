"""Layer 4: the doctor. Environment and version checks (``checks``: the registry; ``checks_*``: the checks by
family; ``probe``, ``facts``, ``npu_smi``, ``matrix``, ``versions``, ``environment``: what they read), CANN error
translation of codes and whole logs (``errors``), the CPU-fallback monitor (``fallback``) and the op audit
(``audit``).

Nothing here imports torch at import time: the doctor must work where torch or torch_npu is broken.
"""
