"""From findings to the headline: who waited for whom in each MPI call
(``wait_states``), the waiting each finding caused (``delay_cost``), and the findings
ranked by that cost, with consequences of waiting and minor findings apart
(``headline``). Imports only the stages below it (postproc/.importlinter)."""
