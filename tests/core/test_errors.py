"""`Problem`'s named constructors: what a problem without a position prints."""

from __future__ import annotations

from trainops.core.errors import InputError, Problem


def test_whole_file_has_no_position() -> None:
    problem = Problem.whole_file("jobs/a.yaml", "file is empty")
    assert (problem.line, problem.column) == (None, None)
    assert str(problem) == "jobs/a.yaml: file is empty"


def test_about_prints_the_subject_where_a_file_would_be() -> None:
    problem = Problem.about("--cluster", "unknown cluster 'x' (known: a, b)")
    assert (problem.file, problem.line, problem.column) == ("--cluster", None, None)
    assert str(InputError(problem)) == "--cluster: unknown cluster 'x' (known: a, b)"


def test_a_positioned_problem_prints_line_and_column() -> None:
    assert str(Problem("jobs/a.yaml", 3, 5, "bad")) == "jobs/a.yaml:3:5: bad"
    assert str(Problem("jobs/a.yaml", 3, None, "bad")) == "jobs/a.yaml:3: bad"
