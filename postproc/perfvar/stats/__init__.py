"""Statistics over the segments: the paper's filters (filter_cost, filter_os with its
isolation forest), summaries and the overlap measure, rank comparisons, blocks of the
run, the median polish, and the cells per (segment class, rank) the detectors judge
(``model``: Cell, Prepared, DetectParams, Anomaly, Judgement). Imports no stage above
it (postproc/.importlinter)."""
