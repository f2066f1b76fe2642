"""The one number validator, and what it fixes: YAML 1.1 exponents without a decimal point."""

from __future__ import annotations

import math

import numpy as np
import pytest
import yaml

from bam_sim.common.errors import BamError, one_line
from bam_sim.common.numbers import number
from bam_sim.models.files.parameter_file import dump_yaml, parse_yaml, published_named


@pytest.mark.parametrize("value, expected", [
    (1, 1.0), (2.5, 2.5), (np.float32(0.5), 0.5), (np.int64(3), 3.0),
    ("1e-2", 0.01), ("5e-1", 0.5), ("1e6", 1.0e6), (" -3.25 ", -3.25),
])
def test_numbers_and_numeric_text_are_accepted(value, expected):
    assert number(value, "x") == expected


@pytest.mark.parametrize("value, message", [
    (True, "x must be a number, got True"), ("abc", "x must be a number, got 'abc'"),
    (None, "x must be a number"), ([1.0], "x must be a number"),
    (math.nan, "x must be a finite number, got nan"), ("inf", "x must be a finite number"),
])
def test_non_numbers_are_refused_in_one_line(value, message):
    with pytest.raises(BamError) as err:
        number(value, "x")
    assert message in str(err.value) and "\n" not in str(err.value)


def test_ranges_name_their_bounds():
    assert number(0.0, "m", low=0.0) == 0.0
    with pytest.raises(BamError, match=r"m must be > 0, got 0"):
        number(0.0, "m", low=0.0, low_open=True)
    with pytest.raises(BamError, match=r"r must be in \[1, 2\], got 3"):
        number(3, "r", low=1.0, high=2.0)
    with pytest.raises(BamError, match=r"r must be <= 2, got 3"):
        number(3, "r", high=2.0)


def test_text_can_be_refused_where_values_come_from_code():
    with pytest.raises(BamError, match="must be a number, got '1.0'"):
        number("1.0", "goal", text=False)


def test_yaml_1_1_exponents_load_in_parameter_files():
    text = dump_yaml(published_named("mx64", "m1")).replace("kt: ", "kt: 1e0  # was ", 1)
    assert isinstance(yaml.safe_load("x: 1e0")["x"], str)  # what YAML 1.1 does
    assert parse_yaml(text, "test").values["kt"] == 1.0


def test_one_line_folds_messages_and_names_silent_exceptions():
    assert one_line(ValueError("two\n  lines")) == "two lines"
    assert one_line(KeyError()) == "KeyError"
    assert one_line("a\tb") == "a b"
