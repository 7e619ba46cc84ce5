"""The text report's tables: the segment classes that hold most of the compute time
and those a finding names, the ranks that matter in a large job, the rest counted in
one line."""

from perfvar.report.text import (
    LISTED_RANKS,
    LISTED_SHARE,
    _rank_lines,
    _segment_lines,
    listed_classes,
    listed_ranks,
)
from perfvar.result import Analysis


def _result(totals, minor=(), anomalies=(), consequences=()):
    segments = [
        {
            "id": f"S{i}",
            "n": 10,
            "n_ranks": 2,
            "median_ns": t / 10,
            "total_ns": t,
            "label": f"a{i} -> b{i}",
        }
        for i, t in enumerate(totals)
    ]

    def finding(seg):
        return {"segment": seg, "rank": 0, "kind": "slow_segment"}

    return Analysis.from_json(
        {
            "segments": segments,
            "minor": [finding(s) for s in minor],
            "anomalies": [finding(s) for s in anomalies],
            "consequences": [finding(s) for s in consequences],
        }
    )


def test_the_largest_classes_up_to_the_share_and_the_named_ones_are_listed():
    assert LISTED_SHARE == 0.99
    # S0 and S1 hold 99 %; S3 is named by a minor finding, S5 by a consequence.
    result = _result([900, 90, 9, 0.5, 0.2, 0.3], minor=["S3"], consequences=["S5"])
    assert [s.id for s in listed_classes(result)] == ["S0", "S1", "S3", "S5"]
    lines = _segment_lines(result)
    rows = [line.split()[0] for line in lines[2:] if line.startswith("S")]
    assert rows == ["S0", "S1", "S3", "S5"]
    assert any(
        line.startswith("... and 2 more classes, 0.92% of the compute time")
        for line in lines
    ), lines


def test_every_class_is_listed_when_asked_or_when_they_are_few():
    result = _result([900, 90, 9, 0.5], anomalies=["S2"])
    assert len(listed_classes(result, all_classes=True)) == 4
    lines = _segment_lines(result, all_classes=True)
    assert not any(line.startswith("... and") for line in lines)
    # A table whose classes each hold a large share leaves none out.
    few = _result([500, 300, 200])
    assert [s.id for s in listed_classes(few)] == ["S0", "S1", "S2"]
    assert not any(line.startswith("... and") for line in _segment_lines(few))


def _ranks(n, verdicts=None, named=()):
    """A result of ``n`` ranks, all "ok" but those ``verdicts`` gives; ``named``: ranks a
    minor finding names."""
    verdicts = verdicts or {}
    row = {
        "host": "h",
        "cpus": [0],
        "t_min_ns": 80.0,
        "t_diff_ns": 3.0,
        "timer_overhead_ns": 16.0,
        "cache_states": [],
        "n_segments": 10,
        "interrupted_fraction": 0.0,
        "migrated": False,
    }
    return Analysis.from_json(
        {
            "ranks": [
                row | {"rank": r, "verdict": verdicts.get(r, "ok")} for r in range(n)
            ],
            "anomalies": [],
            "minor": [{"rank": r, "kind": "slow_segment"} for r in named],
        }
    )


def _table_ranks(lines):
    return [int(line.split()[0]) for line in lines[2:] if line.split()[0].isdigit()]


def test_a_large_job_lists_the_ranks_that_matter_and_counts_the_rest():
    assert LISTED_RANKS == 32
    result = _ranks(1000, {7: "noisy core", 900: "load imbalance"}, named=[42])
    assert [r.rank for r in listed_ranks(result)] == [7, 42, 900]
    lines = _rank_lines(result)
    assert _table_ranks(lines) == [7, 42, 900]
    assert any(
        line.startswith("... and 997 more ranks: 997 ok (perfvar analyze --all-ranks")
        for line in lines
    ), lines
    # Asked for, or up to LISTED_RANKS ranks: every one, no count line.
    assert len(_table_ranks(_rank_lines(result, all_ranks=True))) == 1000
    small = _rank_lines(_ranks(LISTED_RANKS, {3: "noisy core"}))
    assert _table_ranks(small) == list(range(LISTED_RANKS))
    assert not any(line.startswith("... and") for line in small)


def test_the_listed_ranks_are_bounded_and_the_rest_counted_by_verdict():
    many = {r: "noisy core" for r in range(0, 200, 2)}
    lines = _rank_lines(_ranks(200, many))
    assert len(_table_ranks(lines)) == LISTED_RANKS
    count = next(line for line in lines if line.startswith("... and"))
    assert count.startswith("... and 168 more ranks: 100 ok, 68 noisy core")
