"""How the Experiment page's curves are cut down and which metric is drawn by default."""

from __future__ import annotations

from assay.master.reads._curves import downsample, pick, series_of


def test_a_long_series_keeps_evenly_spaced_points_with_its_first_and_last() -> None:
    assert list(downsample(5, 10)) == [0, 1, 2, 3, 4]
    assert downsample(101, 5) == [0, 25, 50, 75, 100]
    kept = downsample(1000, 7)
    assert kept[0] == 0 and kept[-1] == 999 and len(kept) == 7


def test_the_searcher_metric_is_drawn_unless_another_is_asked_or_it_was_never_reported() -> None:
    names = [("training", "loss"), ("validation", "accuracy"), ("validation", "loss")]
    assert pick(names, None, None, "validation/loss") == ("validation", "loss")
    assert pick(names, "training", None, "validation/loss") == ("training", "loss")
    assert pick(names, None, "accuracy", "validation/loss") == ("validation", "accuracy")
    assert pick(names, None, None, "validation/error") == ("training", "loss")
    assert pick([], None, None, "validation/loss") == ("", "")


def test_non_numeric_and_non_finite_values_are_left_out_and_every_trial_asked_has_a_series() -> (
    None
):
    rows = [
        (1, 10, {"loss": 1.0}, 100.0),
        (1, 20, {"loss": "nan"}, 101.0),
        (1, 30, {"loss": float("inf")}, 102.0),
        (1, 40, {"loss": True}, 103.0),
        (1, 50, {"loss": 2}, 104.0),
        (3, 10, {"other": 1.0}, 105.0),
    ]
    out = series_of(rows, [("validation", "loss")], [3, 1, 2], "validation", "loss", 1000)
    assert [(s.trial_id, s.steps, s.values) for s in out.series] == [
        (3, [], []),
        (1, [10, 50], [1.0, 2.0]),
        (2, [], []),
    ]
    assert out.names == ["validation/loss"]
    assert all(s.times is None for s in out.series), "times only where asked"


def test_times_asked_for_are_each_kept_points_report_time() -> None:
    rows = [(1, step, {"loss": 1.0 / step}, 1000.0 + step) for step in range(1, 101)]
    out = series_of(rows, [("validation", "loss")], [1], "validation", "loss", 5, times=True)
    (series,) = out.series
    assert series.steps == [1, 26, 51, 75, 100]
    assert series.times == [1000.0 + s for s in series.steps]
