"""The closeness criterion |a - b| <= atol + rtol * |b| and the reported metrics."""

from __future__ import annotations

import math

import torch

from ascend_compat.verify.tolerances import Tolerance, compare_tensors

TOL = Tolerance(rtol=1e-3, atol=1e-5, basis="test")


def test_small_values_are_judged_by_atol_and_large_ones_by_rtol():
    golden = torch.tensor([0.0, 1000.0], dtype=torch.float64)
    assert compare_tensors(torch.tensor([5e-6, 1000.9]), golden, TOL).ok
    near_zero = compare_tensors(torch.tensor([3e-5, 1000.0]), golden, TOL)
    assert not near_zero.ok and near_zero.mismatched == 1
    large = compare_tensors(torch.tensor([0.0, 1001.5]), golden, TOL)
    assert not large.ok and large.max_abs == 1.5
    assert math.isclose(large.max_rel, 1.5e-3, rel_tol=1e-6)
    assert large.ratio > 1


def test_nan_and_inf_must_sit_in_the_same_places():
    golden = torch.tensor([float("nan"), float("inf"), 1.0])
    assert compare_tensors(golden.clone(), golden, TOL).ok
    assert not compare_tensors(torch.tensor([0.0, float("inf"), 1.0]), golden, TOL).ok
    assert not compare_tensors(torch.tensor([float("nan"), float("-inf"), 1.0]), golden, TOL).ok


def test_integers_must_be_equal_and_shapes_must_match():
    assert compare_tensors(torch.arange(4), torch.arange(4), TOL).ok
    assert not compare_tensors(torch.tensor([0, 1, 2, 4]), torch.arange(4), TOL).ok
    bad = compare_tensors(torch.zeros(2, 3), torch.zeros(3, 2), TOL)
    assert not bad.ok and "shape" in bad.note


def test_cosine_similarity():
    a = torch.tensor([1.0, 0.0])
    assert compare_tensors(a, a, TOL).cosine == 1.0
    assert abs(compare_tensors(torch.tensor([0.0, 1.0]), a, TOL).cosine) < 1e-12
