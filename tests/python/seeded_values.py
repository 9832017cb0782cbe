"""Seeded tensors for the torch 2 suites (test_dcp, test_dtensor_state): every dtype's values from one
generator, and a NaN with a payload in ``w`` (a copy that goes through float arithmetic would lose it)."""

import torch


def seeded(shapes, seed):
    """``{name: tensor}`` for ``shapes`` (name -> (shape, dtype)), the same for the same seed."""
    g = torch.Generator().manual_seed(seed)
    out = {}
    for name, (shape, dtype) in shapes.items():
        if dtype.is_floating_point:
            out[name] = torch.randn(shape, generator=g, dtype=torch.float64).to(dtype)
        else:
            out[name] = torch.randint(-2**40, 2**40, shape, generator=g, dtype=dtype)
    out["w"].view(-1).view(torch.int32)[3] = 0x7fc01234  # a NaN with a payload
    return out
