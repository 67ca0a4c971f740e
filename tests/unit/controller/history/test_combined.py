"""`prometheus.combined`: one object's metric queries asked as one range query, answered back per query."""

from __future__ import annotations

from collections.abc import Iterable

import pytest

from controller.history.fold import Series
from controller.history.prometheus import COMBINED_LABEL, Job, combined


def _jobs(answers: list[list[list[Series]]]) -> list[Job]:
    def job(i: int) -> Job:
        def consume(series: Iterable[Series]) -> None:
            answers[i].append(list(series))
        return Job(what=f"q{i}", promql=f"sum(m{i})", consume=consume)

    return [job(i) for i in range(len(answers))]


def test_each_series_goes_back_to_its_query_without_the_label_and_every_query_hears_each_answer() -> None:
    answers: list[list[list[Series]]] = [[], [], []]
    job = combined(_jobs(answers))
    assert job.promql == " or ".join(f'label_replace((sum(m{i})), "{COMBINED_LABEL}", "{i}", "", "")' for i in range(3))
    assert job.what == "q0; q1; q2"
    job.consume([({"pod": "a", COMBINED_LABEL: "2"}, [[1, "5"]]), ({COMBINED_LABEL: "0"}, [[1, "7"]])])
    assert answers == [[[({}, [[1, "7"]])]], [[]], [[({"pod": "a"}, [[1, "5"]])]]]


def test_one_query_is_asked_as_it_is_and_a_series_without_its_query_is_refused() -> None:
    answers: list[list[list[Series]]] = [[]]
    (only,) = _jobs(answers)
    assert combined([only]) is only
    job = combined(_jobs([[], []]))
    with pytest.raises(ValueError, match=f"without its {COMBINED_LABEL} label"):
        job.consume([({"pod": "a"}, [[1, "5"]])])
