#!/bin/sh
# bind_rank.sh "CPU_OF_RANK0 CPU_OF_RANK1 ..." PROGRAM [ARGS...]
# Pins each MPI rank to the CPU at its position in the list (the launcher must not bind:
# Open MPI --bind-to none), so a test can place ranks on chosen cores and swap them.
set -e
rank=${OMPI_COMM_WORLD_RANK:-${PMI_RANK:-0}}
cpus=$1
shift
i=0
for c in $cpus; do
    if [ "$i" = "$rank" ]; then exec taskset -c "$c" "$@"; fi
    i=$((i + 1))
done
echo "bind_rank.sh: no CPU for rank $rank in '$cpus'" >&2
exit 2
