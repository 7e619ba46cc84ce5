"""The text report's segment classes table: the classes that hold most of the compute
time and those a finding names, the rest counted in one line."""

from perfvar.report.text import LISTED_SHARE, _segment_lines, listed_classes


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

    return {
        "segments": segments,
        "minor": [finding(s) for s in minor],
        "anomalies": [finding(s) for s in anomalies],
        "consequences": [finding(s) for s in consequences],
    }


def test_the_largest_classes_up_to_the_share_and_the_named_ones_are_listed():
    assert LISTED_SHARE == 0.99
    # S0 and S1 hold 99 %; S3 is named by a minor finding, S5 by a consequence.
    result = _result([900, 90, 9, 0.5, 0.2, 0.3], minor=["S3"], consequences=["S5"])
    assert [s["id"] for s in listed_classes(result)] == ["S0", "S1", "S3", "S5"]
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
    assert [s["id"] for s in listed_classes(few)] == ["S0", "S1", "S2"]
    assert not any(line.startswith("... and") for line in _segment_lines(few))
