#!/bin/sh
# rank_env.sh RANK NAME=VALUE PROGRAM [ARGS...]
# Sets NAME=VALUE for MPI rank RANK only, then runs PROGRAM: a test can give one rank another
# configuration (e.g. other PERFVAR_METRICS events, as a node whose kernel refuses some would).
set -e
rank=${OMPI_COMM_WORLD_RANK:-${PMI_RANK:-0}}
want=$1
setting=$2
shift 2
if [ "$rank" = "$want" ]; then export "${setting?}"; fi
exec "$@"
