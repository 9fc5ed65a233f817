"""plot_head_table(by_column=True): each column coloured on its own scale, its range in its label."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from mha_lib.plots import plot_head_table

TABLE = pd.DataFrame({"entropy (bits)": [0.3, 1.8, 0.2], "mean distance": [1.0, 4.0, 8.0]},
                     index=pd.MultiIndex.from_tuples([(0, 0), (0, 1), (1, 0)], names=["layer", "head"]))


def _shades(fig) -> np.ndarray:
    image = fig.axes[0].images[0]
    return np.asarray(image.get_array())


def test_each_column_runs_from_zero_to_its_own_largest_value() -> None:
    fig = plot_head_table(TABLE, by_column=True)
    assert len(fig.axes) == 1, "no shared colour bar: each column has its own scale"
    np.testing.assert_allclose(_shades(fig), [[0.3 / 1.8, 1 / 8], [1.0, 0.5], [0.2 / 1.8, 1.0]])
    labels = [t.get_text() for t in fig.axes[0].get_xticklabels()]
    assert labels == ["entropy (bits)\n(0.00 to 1.80)", "mean distance\n(0.00 to 8.00)"]
    assert [t.get_text() for t in fig.axes[0].texts] == ["0.30", "1.00", "1.80", "4.00", "0.20", "8.00"]


def test_given_ranges_set_a_columns_scale() -> None:
    fig = plot_head_table(TABLE, by_column=True, ranges={"entropy (bits)": (0.0, 2.4)})
    np.testing.assert_allclose(_shades(fig)[:, 0], [0.125, 0.75, 0.2 / 2.4])
    assert fig.axes[0].get_xticklabels()[0].get_text() == "entropy (bits)\n(0.00 to 2.40)"


def test_a_constant_column_and_negative_values_get_a_usable_scale() -> None:
    table = pd.DataFrame({"zeros": [0.0, 0.0], "signed": [-1.0, 3.0]})
    shades = _shades(plot_head_table(table, by_column=True))
    np.testing.assert_allclose(shades, [[0.0, 0.0], [0.0, 1.0]])


def test_the_default_keeps_one_shared_scale_and_its_colour_bar() -> None:
    fig = plot_head_table(TABLE, vmax=None)
    assert len(fig.axes) == 2
    np.testing.assert_allclose(_shades(fig), TABLE.to_numpy())


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"by_column": 1}, TypeError, "by_column must be True or False"),
        ({"by_column": True, "ranges": [(0, 1)]}, TypeError, "ranges must be a dict"),
        ({"by_column": True, "ranges": {"nope": (0, 1)}}, ValueError, r"ranges names columns .*\['nope'\]"),
        ({"by_column": True, "ranges": {"mean distance": (2, 1)}}, ValueError, "low < high"),
        ({"by_column": True, "ranges": {"mean distance": 3}}, TypeError, "a pair"),
        ({"ranges": {"mean distance": (0, 9)}}, ValueError, "with by_column=True"),
    ],
)
def test_bad_options_say_what_was_expected(kwargs, error, match) -> None:
    with pytest.raises(error, match=match):
        plot_head_table(TABLE, **kwargs)
