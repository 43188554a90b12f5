"""Python side of the kernelpkg_cuda extension."""

import kernelpkg_cuda as ext
import torch
from kernelpkg_cuda import rms_norm_fwd


def scale(x):
    y = ext.scale_forward(x.cuda(), 2.0)
    torch.cuda.synchronize()
    return y


def norm(x, w):
    return rms_norm_fwd(x, w, 1e-6)


def load_weights(path):
    return torch.load(path)
