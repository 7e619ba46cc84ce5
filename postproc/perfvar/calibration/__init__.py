"""Each rank's precision (t_min) and sensitivity (t_diff) per cache state, paper §5.4:
the judge over stored distributions (``judge``), per rank with its cache (``ranks``),
borrowed within a host (``borrow``), and for ``perfvar calibrate`` the searches
(``search``) over the C kernels (``kernels``). Imports only perfvar.stats and the
leaf helpers (postproc/.importlinter)."""
