"""What perfvar does with each MPI function: its group, what it records, its OTF2 role.

Used by gen_wrappers.py. Every function of the MPI standard's API that the installed MPI exports
is wrapped unless it is in EXCEPTIONS (with the reason). The group decides whether a call ends a
compute segment (PERFVAR_BOUNDARIES, see src/config); the kind decides which message or collective
facts it records; the role and collective operation go into the OTF2 region definition.
"""

from __future__ import annotations

import importlib.util
import re
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace


def _contracts():
    """src/spec/contracts.py, the table the C library (src/config) and the Python package take
    the groups from too."""
    path = Path(__file__).resolve().parents[1] / "spec" / "contracts.py"
    loader = importlib.util.spec_from_file_location("perfvar_contracts", path)
    module = importlib.util.module_from_spec(loader)
    loader.loader.exec_module(module)
    return module


# Groups, in the order of the bit mask PERFVAR_BOUNDARIES uses; G.<NAME> is a group's name.
GROUPS = tuple(name for name, _, _ in _contracts().MPI_GROUPS)
G = SimpleNamespace(**{name.upper(): name for name in GROUPS})

# Not wrapped, and why. Prefix patterns end with '*'.
EXCEPTIONS = {
    "MPI_Wtime": "returns a double, not an error code; cheap local clock read",
    "MPI_Wtick": "returns a double, not an error code",
    "MPI_Aint_add": "returns an MPI_Aint: address arithmetic, no MPI semantics",
    "MPI_Aint_diff": "returns an MPI_Aint: address arithmetic, no MPI semantics",
    "MPI_Pcontrol": "varargs in C: cannot be forwarded portably",
    "MPI_T_*": "tool information interface: callable outside MPI_Init/MPI_Finalize, not the "
    "application's communication",
    "MPI_Abi_*": "MPI-5 ABI queries, not exported by the MPIs perfvar supports",
    "*_c2f": "handle or status conversion: returns a handle, perfvar converts handles itself",
    "*_f2c": "handle or status conversion: returns a handle, perfvar converts handles itself",
    "*_toint": "handle conversion (MPI-5)",
    "*_fromint": "handle conversion (MPI-5)",
    "MPI_Status_c2f08": "status conversion: perfvar converts Fortran statuses itself",
    "MPI_Status_f082c": "status conversion: perfvar converts Fortran statuses itself",
    "MPI_Status_f082f": "status conversion: perfvar converts Fortran statuses itself",
    "MPI_Status_f2f08": "status conversion: perfvar converts Fortran statuses itself",
    "MPI_Type_create_f90_*": "Fortran-kind datatypes: local, and the Fortran forms are functions of "
    "KIND parameters the C side cannot see",
}

# Removed from the standard in MPI-3.0 (so not in pympistandard's API): Open MPI exports them but its
# mpi.h declares them only when built with MPI-1 compatibility; MPICH no longer has them.
EXCEPTIONS.update({name: "removed in MPI-3.0" for name in (
    "MPI_Address", "MPI_Errhandler_create", "MPI_Errhandler_get", "MPI_Errhandler_set",
    "MPI_Type_extent", "MPI_Type_hindexed", "MPI_Type_hvector", "MPI_Type_lb", "MPI_Type_struct",
    "MPI_Type_ub")})

# Deprecated by the MPI Forum, still in the standard and wrapped: applications still call them. An
# mpi.h may mark them (and their PMPI_ twins) deprecated; the generator expects that warning for
# these wrappers alone.
DEPRECATED = {
    **{name: "deprecated in MPI-2.0" for name in (
        "MPI_Attr_delete", "MPI_Attr_get", "MPI_Attr_put", "MPI_Keyval_create", "MPI_Keyval_free")},
    **{name: "deprecated in MPI-4.0" for name in ("MPI_Info_get", "MPI_Info_get_valuelen")},
    **{name: "deprecated in MPI-4.1" for name in (
        "MPI_Get_elements_x", "MPI_Status_set_elements_x", "MPI_Type_get_extent_x",
        "MPI_Type_get_true_extent_x", "MPI_Type_size_x")},
}

# Fortran-only exclusions (functions there, or not real procedures).
FORTRAN_EXCEPTIONS = {
    "MPI_Sizeof": "generic compile-time procedure, no library entry point",
    "MPI_F_sync_reg": "a no-op that exists for the compiler's data-flow analysis",
}


def excluded(name: str, table: dict[str, str] = EXCEPTIONS) -> str | None:
    """The reason `name` is not wrapped, or None."""
    for pattern, why in table.items():
        if pattern == name:
            return why
        if pattern.endswith("*") and name.startswith(pattern[:-1]):
            return why
        if pattern.startswith("*") and name.endswith(pattern[1:]):
            return why
    return None


@dataclass(frozen=True)
class Info:
    group: str
    kind: str  # what it records: see KINDS
    role: str  # OTF2_REGION_ROLE_*
    op: str  # OTF2_COLLECTIVE_OP_* or "-"

    def __post_init__(self) -> None:
        if self.group not in GROUPS:  # the wrappers would name a PV_GROUP_ that does not exist
            raise ValueError(f"{self.group}: not a group of src/spec/contracts.py")


KINDS = ("init", "finalize", "send", "isend", "recv", "irecv", "sendrecv", "wait", "request_free",
         "collective", "icollective", "mprobe", "mrecv", "imrecv", "other")

# Blocking collectives: the OTF2 operation and region role.
_COLLECTIVES = {
    "Barrier": ("BARRIER", "BARRIER"),
    "Bcast": ("BCAST", "COLL_ONE2ALL"),
    "Scatter": ("SCATTER", "COLL_ONE2ALL"),
    "Scatterv": ("SCATTERV", "COLL_ONE2ALL"),
    "Gather": ("GATHER", "COLL_ALL2ONE"),
    "Gatherv": ("GATHERV", "COLL_ALL2ONE"),
    "Reduce": ("REDUCE", "COLL_ALL2ONE"),
    "Allgather": ("ALLGATHER", "COLL_ALL2ALL"),
    "Allgatherv": ("ALLGATHERV", "COLL_ALL2ALL"),
    "Alltoall": ("ALLTOALL", "COLL_ALL2ALL"),
    "Alltoallv": ("ALLTOALLV", "COLL_ALL2ALL"),
    "Alltoallw": ("ALLTOALLW", "COLL_ALL2ALL"),
    "Allreduce": ("ALLREDUCE", "COLL_ALL2ALL"),
    "Reduce_scatter": ("REDUCE_SCATTER", "COLL_ALL2ALL"),
    "Reduce_scatter_block": ("REDUCE_SCATTER_BLOCK", "COLL_ALL2ALL"),
    "Scan": ("SCAN", "COLL_OTHER"),
    "Exscan": ("EXSCAN", "COLL_OTHER"),
}
_COLL_NAMES = "|".join(sorted(_COLLECTIVES, key=len, reverse=True))

_P2P = {
    "Send": "send", "Bsend": "send", "Ssend": "send", "Rsend": "send",
    "Isend": "isend", "Ibsend": "isend", "Issend": "isend", "Irsend": "isend",
    "Recv": "recv", "Irecv": "irecv",
    "Mprobe": "mprobe", "Improbe": "mprobe", "Mrecv": "mrecv", "Imrecv": "imrecv",
    "Sendrecv": "sendrecv", "Sendrecv_replace": "sendrecv",
}
_WAITS = {"Wait", "Waitall", "Waitany", "Waitsome", "Test", "Testall", "Testany", "Testsome"}

# Communicator calls that only read local state (grouped as local queries).
_COMM_LOCAL = re.compile(
    r"^Comm_(rank|size|remote_size|test_inter|compare|group|remote_group|get_name|set_name|"
    r"get_attr|set_attr|delete_attr|get_info|set_info|get_errhandler|set_errhandler|"
    r"call_errhandler|create_errhandler|create_keyval|free_keyval|get_parent)$")
_ONESIDED = re.compile(r"^(Win_.*|Put|Get|Accumulate|Get_accumulate|Fetch_and_op|Compare_and_swap|"
                       r"Rput|Rget|Raccumulate|Rget_accumulate)$")
_ONESIDED_LOCAL = re.compile(r"^Win_(get|set|delete|create_keyval|free_keyval|create_errhandler|"
                             r"call_errhandler|shared_query)")


def classify(name: str) -> Info:
    """Group, recorded kind, OTF2 role and collective operation of MPI function `name`."""
    base = name[4:]  # without "MPI_"
    return _environment(base) or _communication(base) or _completion_and_other(base)


def _environment(base: str) -> Info | None:
    """MPI_Init, MPI_Finalize and the like (`base`: the name without "MPI_"), or None."""
    if base in ("Init", "Init_thread"):
        return Info(G.ENV, "init", "FUNCTION", "-")
    if base == "Finalize":
        return Info(G.ENV, "finalize", "FUNCTION", "-")
    if base in ("Abort", "Session_init", "Session_finalize"):
        return Info(G.ENV, "other", "FUNCTION", "-")
    return None


def _communication(base: str) -> Info | None:
    """Collectives and point-to-point calls, or None."""
    if base in _COLLECTIVES:
        op, role = _COLLECTIVES[base]
        return Info(G.COLLECTIVE, "collective", role, op)
    blocking = base[1:].capitalize()  # Iallreduce -> Allreduce
    if base.startswith("I") and blocking in _COLLECTIVES:  # completed by a Wait/Test
        return Info(G.COLLECTIVE, "icollective", "FUNCTION", _COLLECTIVES[blocking][0])
    if re.match(rf"^(({_COLL_NAMES})_init|I?[Nn]eighbor_.*|Reduce_local)$", base):
        group = G.LOCAL if base == "Reduce_local" else G.COLLECTIVE
        return Info(group, "other", "FUNCTION", "-")
    if base in _P2P:
        return Info(G.P2P, _P2P[base], "POINT2POINT", "-")
    if re.match(r"^(Isendrecv(_replace)?|Probe|Iprobe|[BSR]?send_init|"
                r"Recv_init|Psend_init|Precv_init|Start|Startall|Pready.*|Parrived|"
                r"Buffer_.*|.*_attach_buffer|.*_detach_buffer|.*flush_buffer)$", base):
        return Info(G.P2P, "other", "POINT2POINT", "-")
    return None


def _completion_and_other(base: str) -> Info:
    """Wait/test, one-sided, I/O, communicator creation; local queries for the rest."""
    if base in _WAITS:
        return Info(G.WAIT, "wait", "FUNCTION", "-")
    if base == "Request_free":  # the request's pending records are dropped: it will not complete
        return Info(G.WAIT, "request_free", "FUNCTION", "-")
    if base.startswith("Request_") or base in ("Cancel", "Grequest_complete", "Grequest_start"):
        return Info(G.WAIT, "other", "FUNCTION", "-")
    if _ONESIDED.match(base):
        local = _ONESIDED_LOCAL.match(base)
        return Info(G.LOCAL if local else G.ONESIDED, "other", "FUNCTION", "-")
    if base.startswith("File_") or base == "Register_datarep":
        local = re.match(r"^File_(get_|set_errhandler|call_errhandler|create_errhandler)", base)
        return Info(G.LOCAL if local else G.FILE, "other", "FILE_IO", "-")
    if base.startswith("Comm_") and not _COMM_LOCAL.match(base):
        return Info(G.COMM, "other", "FUNCTION", "-")
    if re.match(r"^(Intercomm_.*|Cart_create|Cart_sub|Graph_create|Dist_graph_create.*|"
                r"Open_port|Close_port|Lookup_name|Publish_name|Unpublish_name)$", base):
        return Info(G.COMM, "other", "FUNCTION", "-")
    return Info(G.LOCAL, "other", "FUNCTION", "-")
