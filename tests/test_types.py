"""`variant`: validated copies of value types with some fields replaced."""

from __future__ import annotations

from functools import cached_property

import pytest
from pydantic import ValidationError

from sparring.types import Sampling, Strict, new, variant


def test_variant_equals_a_validated_copy():
    base = new(Sampling, temperature=0.7, stop=["\n"])
    copy = variant(base, n=3, seed=11)
    assert copy == new(Sampling, **{**base.__dict__, "n": 3, "seed": 11})
    assert copy.model_fields_set == {"temperature", "stop", "n", "seed"}
    assert base.n == 1 and base.seed is None  # the original is untouched
    assert copy.model_dump_json() == new(Sampling, **copy.model_dump()).model_dump_json()


class _Cached(Strict):
    x: int

    @cached_property
    def double(self) -> int:
        return 2 * self.x


def test_variant_never_copies_cached_properties():
    a = _Cached(x=2)
    assert a.double == 4
    b = variant(a, x=5)
    assert b.double == 10 and "double" not in variant(_Cached(x=1), x=3).__dict__


@pytest.mark.parametrize("bad", [0, -1, 1.5, "two"])
def test_a_bad_completion_count_is_refused(bad):
    with pytest.raises(ValidationError, match="n"):
        variant(Sampling(), n=bad)
    assert variant(Sampling(), n=4).n == 4
