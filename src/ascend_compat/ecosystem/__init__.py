"""Layer 3: the libraries that hard-code CUDA (flash_attn, transformers, accelerate, DeepSpeed, vLLM, Triton)."""
