"""Reading a run: the OTF2 archive's segment samples (``trace.read_trace`` -> a
``samples.TraceSamples``, by the C event loop of ``native`` or the Python one of
``python_loop``, over the definitions ``otf2`` reads), the run's metadata (``meta``:
run.json, rank-N.json), a job that died rebuilt (``recover``), segment keys and call
sites (``segments``, ``symbolize``), classes that differ only by helper frames
(``families``) and the cache states of the calibration (``cache_state``). The lowest
stage: imports no other (postproc/.importlinter)."""
