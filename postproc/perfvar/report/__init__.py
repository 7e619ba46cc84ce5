"""What the user reads: the terminal report (``text``), analysis.json (``json``),
report.html and its plots (``html``, ``plots``), the OTF2 markers (``markers``), and
``perfvar calibrate``'s report (``calibrate``). Reads the analysis result; imports only
the stages below it (postproc/.importlinter)."""
