"""The validation kit's parts (tools/validate.py is its command): which segment class
a real program's injection targets and how much slower the trace shows it
(classes.py), the disturbances run beside a trial (disturb.py), and the real programs
(programs.py)."""
