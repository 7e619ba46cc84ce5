"""Generated from src/spec/contracts.py by src/spec/gen_spec.py: do not edit.

The names and layouts perfvar's Python package shares with its C library (which
is built with pv_spec.h, written from the same table): timer names, MPI groups,
the ctypes structures of libperfvar and libperfvar_read (and its region kinds),
the names in the OTF2 archive, perfvar-markers' input lines and the keys of
DIR/perfvar/rank-N.json, run.json, ended-rank-N.json and
calibration-rank-N.json. ctest spec.python_in_sync checks that this file is
what the generator writes.
Constants only; thread-safe.
"""

import ctypes

TIMERS = (  # by enum value
    "barrier",
    "rdtsc",
    "clock_gettime",
    "papi_real_nsec",
    "papi_real_cyc",
    "mpi_wtime",
    "cycles",
    "papi_read",
)


TIMER_UNITS = {
    "barrier": "ns",
    "rdtsc": "ns",
    "clock_gettime": "ns",
    "papi_real_nsec": "ns",
    "papi_real_cyc": "ns",
    "mpi_wtime": "ns",
    "cycles": "cycles",
    "papi_read": "cycles",
}


class Timer:
    """Timer names (perfvar_timer_name)."""

    BARRIER = "barrier"
    RDTSC = "rdtsc"
    CLOCK_GETTIME = "clock_gettime"
    PAPI_REAL_NSEC = "papi_real_nsec"
    PAPI_REAL_CYC = "papi_real_cyc"
    MPI_WTIME = "mpi_wtime"
    CYCLES = "cycles"
    PAPI_READ = "papi_read"


MPI_GROUPS = (  # PERFVAR_BOUNDARIES' bit order
    "env",
    "p2p",
    "collective",
    "wait",
    "onesided",
    "file",
    "comm",
    "local",
)


MPI_GROUPS_DEFAULT = (  # traced unless configured
    "env",
    "p2p",
    "collective",
    "wait",
    "onesided",
    "file",
    "comm",
)


# C name: (packed, ((field, C type), ...)), as declared.
STRUCTS = {
    "perfvar_clock_info": (
        False,
        (
            ("name", "char[32]"),
            ("hz_method", "char[64]"),
            ("hz", "double"),
            ("hz_rel_error", "double"),
            ("serialized", "int"),
            ("has_cpu_id", "int"),
            ("note", "char[160]"),
        ),
    ),
    "perfvar_read_result": (
        False,
        (
            ("evt_reader", "int"),
            ("otf2_status", "int"),
            ("out_of_memory", "int"),
            ("events_read", "uint64_t"),
            ("user_regions", "int64_t"),
            ("unclosed", "int64_t"),
            ("unmatched_leaves", "int64_t"),
            ("open_at_end", "int64_t"),
            ("first_sample", "int64_t"),
            ("nsamples", "int64_t"),
            ("first_probe", "int64_t"),
            ("nprobes", "int64_t"),
            ("overrun", "int"),
            ("first_metric", "int64_t"),
            ("nmetrics", "int64_t"),
        ),
    ),
    "perfvar_read_sample": (
        True,
        (
            ("segment", "int32_t"),
            ("rank", "int32_t"),
            ("thread", "int32_t"),
            ("start_ticks", "uint64_t"),
            ("duration_ns", "double"),
            ("cpu_enter", "int32_t"),
            ("cpu_leave", "int32_t"),
            ("context_bytes", "int64_t"),
        ),
    ),
    "perfvar_read_probe": (
        True,
        (
            ("rank", "int32_t"),
            ("thread", "int32_t"),
            ("start_ticks", "uint64_t"),
            ("duration_ns", "double"),
            ("cpu", "int32_t"),
        ),
    ),
    "perfvar_read_metric": (
        True,
        (
            ("rank", "int32_t"),
            ("thread", "int32_t"),
            ("sample", "int64_t"),
            ("first", "int64_t"),
            ("time_ticks", "uint64_t"),
            ("since_ticks", "uint64_t"),
            ("values", "double[16]"),
        ),
    ),
}


class ClockInfo(ctypes.Structure):
    """perfvar_clock_info (perfvar.h)."""

    _fields_ = [
        ("name", ctypes.c_char * 32),
        ("hz_method", ctypes.c_char * 64),
        ("hz", ctypes.c_double),
        ("hz_rel_error", ctypes.c_double),
        ("serialized", ctypes.c_int),
        ("has_cpu_id", ctypes.c_int),
        ("note", ctypes.c_char * 160),
    ]


class ReadResult(ctypes.Structure):
    """perfvar_read_result (read/read.h)."""

    _fields_ = [
        ("evt_reader", ctypes.c_int),
        ("otf2_status", ctypes.c_int),
        ("out_of_memory", ctypes.c_int),
        ("events_read", ctypes.c_uint64),
        ("user_regions", ctypes.c_int64),
        ("unclosed", ctypes.c_int64),
        ("unmatched_leaves", ctypes.c_int64),
        ("open_at_end", ctypes.c_int64),
        ("first_sample", ctypes.c_int64),
        ("nsamples", ctypes.c_int64),
        ("first_probe", ctypes.c_int64),
        ("nprobes", ctypes.c_int64),
        ("overrun", ctypes.c_int),
        ("first_metric", ctypes.c_int64),
        ("nmetrics", ctypes.c_int64),
    ]


class ReadRegion:
    """Region kinds of perfvar_read_open."""

    OTHER = -1
    USER = -2
    PROBE = -3


class TraceName:
    """Names in the OTF2 archive perfvar writes (src/trace, src/pmpi)."""

    SEGMENT_PREFIX = "perfvar:segment:"
    SITE_SEPARATOR = ";"
    USER_PREFIX = "perfvar:user:"
    PROBE_REGION = "perfvar:probe"
    CPU_ATTRIBUTE = "cpu"


MARKER_GROUP = "perfvar"
MARKER_SEPARATOR = "\t"
MARKER_WHOLE_RUN = "-"
MARKER_SCOPE_ID_SEPARATOR = ":"


MARKER_FIELDS = (  # in this order
    "category",
    "severity",
    "start_ns",
    "end_ns",
    "scope",
    "text",
)


MARKER_SEVERITIES = (
    "NONE",
    "LOW",
    "MEDIUM",
    "HIGH",
)


MARKER_SCOPES = {  # name: whether an id follows
    "GLOBAL": False,
    "LOCATION": True,
    "LOCATION_GROUP": True,
}


class MarkerSeverity:
    """perfvar-markers' severities."""

    NONE = "NONE"
    LOW = "LOW"
    MEDIUM = "MEDIUM"
    HIGH = "HIGH"


class MarkerScope:
    """perfvar-markers' scopes."""

    GLOBAL = "GLOBAL"
    LOCATION = "LOCATION"
    LOCATION_GROUP = "LOCATION_GROUP"


class RankJson:
    """rank-N.json: the top level."""

    RANK = "rank"
    NRANKS = "nranks"
    HOST = "host"
    PID = "pid"
    CPUS = "cpus"
    TOPOLOGY = "topology"
    CLOCK = "clock"
    CLOCK_CAPS = "clock_caps"
    CLOCK_OFFSET = "clock_offset"
    CALIBRATION = "calibration"
    MPI = "mpi"
    THREAD_LEVEL = "thread_level"
    THREADS = "threads"
    PROBE = "probe"
    METRICS = "metrics"
    NEIGHBOURS = "neighbours"
    EVENTS = "events"
    SEGMENTS = "segments"
    UNTRACED_THREAD_CALLS = "untraced_thread_calls"
    CONVERT_MS = "convert_ms"
    RECORDS_KEPT = "records_kept"
    COMPLETE = "complete"


class RankJsonTopology:
    """rank-N.json: topology."""

    SOURCE = "source"
    NOTE = "note"
    PACKAGE = "package"
    NUMA = "numa"
    CORE = "core"
    CPUS = "cpus"


class RankJsonTopologyCpu:
    """rank-N.json: topology.cpus[]."""

    CPU = "cpu"
    PACKAGE = "package"
    NUMA = "numa"
    CORE = "core"


class RankJsonClock:
    """rank-N.json: clock."""

    NAME = "name"
    HZ = "hz"
    HZ_METHOD = "hz_method"
    HZ_REL_ERROR = "hz_rel_error"
    MEASURED_HZ = "measured_hz"
    MEASURED_REL_ERROR = "measured_rel_error"
    HZ_VS_MEASURED_REL = "hz_vs_measured_rel"
    SERIALIZED = "serialized"
    FENCED_READ = "fenced_read"
    NOTE = "note"


class RankJsonCaps:
    """rank-N.json: clock_caps."""

    RDTSCP = "rdtscp"
    INVARIANT_TSC = "invariant_tsc"
    CPUID_TSC_HZ = "cpuid_tsc_hz"
    CPUID_BASE_MHZ = "cpuid_base_mhz"
    HYPERVISOR = "hypervisor"
    HYPERVISOR_TSC_HZ = "hypervisor_tsc_hz"
    TSC_STABLE_BY = "tsc_stable_by"
    KERNEL_TSC_HZ = "kernel_tsc_hz"
    KERNEL_TSC_WHY = "kernel_tsc_why"
    CYCLES = "cycles"
    CYCLES_WHY = "cycles_why"


class RankJsonOffset:
    """rank-N.json: clock_offset."""

    BEGIN_TICKS = "begin_ticks"
    END_TICKS = "end_ticks"
    STDDEV_TICKS = "stddev_ticks"


class RankJsonCalibration:
    """rank-N.json: calibration."""

    MODE = "mode"
    STATUS = "status"
    ESTIMATE = "estimate"
    AT = "at"
    TIMER_OVERHEAD_NS = "timer_overhead_ns"
    CLOCK_GRANULARITY_NS = "clock_granularity_ns"
    T_MIN_NS = "t_min_ns"
    T_DIFF_NS = "t_diff_ns"
    NS_PER_ADD = "ns_per_add"
    T_MIN_ADDS = "t_min_adds"
    T_DIFF_ADDS = "t_diff_adds"
    T_MIN_CV = "t_min_cv"
    T_DIFF_OVERLAP = "t_diff_overlap"
    CPU_START = "cpu_start"
    CPU_END = "cpu_end"
    ELAPSED_MS = "elapsed_ms"
    N_SAMPLES = "n_samples"
    N_SAMPLES_FLUSHED = "n_samples_flushed"
    P = "p"
    Q = "q"
    EPSILON = "epsilon"
    ALPHA = "alpha"
    NSTATES = "nstates"
    BUDGET_MS = "budget_ms"
    STATES = "states"
    CYCLES = "cycles"


class RankJsonState:
    """rank-N.json: calibration.states[], calibration.cycles.state."""

    LABEL = "label"
    FLUSH = "flush"
    N_SAMPLES = "n_samples"
    N_REQUESTED = "n_requested"
    STATUS = "status"
    NOTE = "note"
    T_MIN_UNIT = "t_min_{unit}"
    T_DIFF_UNIT = "t_diff_{unit}"
    UNIT_PER_ADD = "{unit}_per_add"
    T_MIN_ADDS = "t_min_adds"
    T_DIFF_ADDS = "t_diff_adds"
    T_MIN_CV = "t_min_cv"
    T_DIFF_OVERLAP = "t_diff_overlap"
    BUDGET_MS = "budget_ms"
    ELAPSED_MS = "elapsed_ms"
    FLUSH_MS = "flush_ms"
    DISTRIBUTIONS = "distributions"
    DROPPED = "dropped"


class RankJsonCycles:
    """rank-N.json: calibration.cycles."""

    AVAILABLE = "available"
    WHY = "why"
    COUNTER = "counter"
    TIMER_OVERHEAD_CYCLES = "timer_overhead_cycles"
    CLOCK_GRANULARITY_CYCLES = "clock_granularity_cycles"
    STATE = "state"


class RankJsonMpi:
    """rank-N.json: mpi."""

    LIBRARY = "library"
    LAYER = "layer"
    STATUS_SIZES = "status_sizes"
    BOUNDARIES = "boundaries"
    CALLPATH_DEPTH = "callpath_depth"
    CALLPATH_UNWINDER = "callpath_unwinder"
    CALLS = "calls"


class RankJsonThread:
    """rank-N.json: threads[]."""

    THREAD = "thread"
    LOCATION = "location"
    SEGMENTS = "segments"
    EVENTS = "events"
    CALLS = "calls"
    LOST_RECORDS = "lost_records"
    BUFFER_MOVES = "buffer_moves"
    BUFFER_MOVE_MS = "buffer_move_ms"


class RankJsonProbe:
    """rank-N.json: probe."""

    PERIOD_MS = "period_ms"
    ADDS = "adds"
    LANES = "lanes"
    K_SOURCE = "k_source"
    COUNT = "count"
    TOTAL_NS = "total_ns"
    THREADS = "threads"


class RankJsonProbeThread:
    """rank-N.json: probe.threads[]."""

    THREAD = "thread"
    COUNT = "count"
    TOTAL_NS = "total_ns"


class RankJsonMetrics:
    """rank-N.json: metrics."""

    EVENTS = "events"
    MIN_US = "min_us"
    READS = "reads"


class RankJsonNeighbours:
    """rank-N.json: neighbours."""

    SPAN_NS = "span_ns"
    TICK_NS = "tick_ns"
    SELF_NS = "self_ns"
    CPUS = "cpus"
    TASKS = "tasks"


class RankJsonNeighbourCpu:
    """rank-N.json: neighbours.cpus[]."""

    CPU = "cpu"
    USER_NS = "user_ns"
    NICE_NS = "nice_ns"
    SYSTEM_NS = "system_ns"
    IDLE_NS = "idle_ns"
    IOWAIT_NS = "iowait_ns"
    IRQ_NS = "irq_ns"
    SOFTIRQ_NS = "softirq_ns"
    STEAL_NS = "steal_ns"


class RankJsonNeighbourTask:
    """rank-N.json: neighbours.tasks[]."""

    PID = "pid"
    TID = "tid"
    COMM = "comm"
    CPU = "cpu"
    NS = "ns"


class RankJsonEvents:
    """rank-N.json: events."""

    WRITTEN = "written"
    LOST = "lost"
    TIMESTAMPS_RAISED = "timestamps_raised"
    BUFFER_FLUSHES = "buffer_flushes"


# object: {"paths": {path: {placeholder: value}}, "keys": ((key, JSON type, when),
# ...)}; when: None, or (sibling key, value) for a key written only then.
RANK_JSON = {
    "top": {
        "paths": {
            "": {},
        },
        "keys": (
            ("rank", "int", None),
            ("nranks", "int", None),
            ("host", "string", None),
            ("pid", "int", None),
            ("cpus", "array", None),
            ("topology", "object", None),
            ("clock", "object", None),
            ("clock_caps", "object", None),
            ("clock_offset", "object", None),
            ("calibration", "object", None),
            ("mpi", "object", None),
            ("thread_level", "string", None),
            ("threads", "array", None),
            ("probe", "object|null", None),
            ("metrics", "object|null", None),
            ("neighbours", "object|null", None),
            ("events", "object", None),
            ("segments", "int", None),
            ("untraced_thread_calls", "int", None),
            ("convert_ms", "number", None),
            ("records_kept", "bool", None),
            ("complete", "bool", None),
        ),
    },
    "topology": {
        "paths": {
            "topology": {},
        },
        "keys": (
            ("source", "string", None),
            ("note", "string", None),
            ("package", "int", None),
            ("numa", "int", None),
            ("core", "int", None),
            ("cpus", "array", None),
        ),
    },
    "topology_cpu": {
        "paths": {
            "topology.cpus[]": {},
        },
        "keys": (
            ("cpu", "int", None),
            ("package", "int", None),
            ("numa", "int", None),
            ("core", "int", None),
        ),
    },
    "clock": {
        "paths": {
            "clock": {},
        },
        "keys": (
            ("name", "string", None),
            ("hz", "number", None),
            ("hz_method", "string", None),
            ("hz_rel_error", "number", None),
            ("measured_hz", "number", None),
            ("measured_rel_error", "number", None),
            ("hz_vs_measured_rel", "number|null", None),
            ("serialized", "bool", None),
            ("fenced_read", "string", None),
            ("note", "string", None),
        ),
    },
    "clock_caps": {
        "paths": {
            "clock_caps": {},
        },
        "keys": (
            ("rdtscp", "bool", None),
            ("invariant_tsc", "bool", None),
            ("cpuid_tsc_hz", "number", None),
            ("cpuid_base_mhz", "number", None),
            ("hypervisor", "string", None),
            ("hypervisor_tsc_hz", "number", None),
            ("tsc_stable_by", "string", None),
            ("kernel_tsc_hz", "number", None),
            ("kernel_tsc_why", "string", None),
            ("cycles", "bool", None),
            ("cycles_why", "string", None),
        ),
    },
    "clock_offset": {
        "paths": {
            "clock_offset": {},
        },
        "keys": (
            ("begin_ticks", "int", None),
            ("end_ticks", "int", None),
            ("stddev_ticks", "number", None),
        ),
    },
    "calibration": {
        "paths": {
            "calibration": {},
        },
        "keys": (
            ("mode", "string", None),
            ("status", "string", None),
            ("estimate", "string", None),
            ("at", "string", None),
            ("timer_overhead_ns", "number", None),
            ("clock_granularity_ns", "number", None),
            ("t_min_ns", "number", None),
            ("t_diff_ns", "number", None),
            ("ns_per_add", "number", None),
            ("t_min_adds", "int", None),
            ("t_diff_adds", "int", None),
            ("t_min_cv", "number", None),
            ("t_diff_overlap", "number", None),
            ("cpu_start", "int", None),
            ("cpu_end", "int", None),
            ("elapsed_ms", "number", None),
            ("n_samples", "int", None),
            ("n_samples_flushed", "int", None),
            ("p", "int", None),
            ("q", "int", None),
            ("epsilon", "number", None),
            ("alpha", "number", None),
            ("nstates", "int", None),
            ("budget_ms", "number", None),
            ("states", "array", None),
            ("cycles", "object", None),
        ),
    },
    "state": {
        "paths": {
            "calibration.states[]": {"unit": "ns"},
            "calibration.cycles.state": {"unit": "cycles"},
        },
        "keys": (
            ("label", "string", None),
            ("flush", "int", None),
            ("n_samples", "int", None),
            ("n_requested", "int", None),
            ("status", "string", None),
            ("note", "string", None),
            ("t_min_{unit}", "number", None),
            ("t_diff_{unit}", "number", None),
            ("{unit}_per_add", "number", None),
            ("t_min_adds", "int", None),
            ("t_diff_adds", "int", None),
            ("t_min_cv", "number", None),
            ("t_diff_overlap", "number", None),
            ("budget_ms", "number", None),
            ("elapsed_ms", "number", None),
            ("flush_ms", "number", None),
            ("distributions", "int", None),
            ("dropped", "int", None),
        ),
    },
    "cycles": {
        "paths": {
            "calibration.cycles": {},
        },
        "keys": (
            ("available", "bool", None),
            ("why", "string", ("available", False)),
            ("counter", "string", ("available", True)),
            ("timer_overhead_cycles", "number", ("available", True)),
            ("clock_granularity_cycles", "number", ("available", True)),
            ("state", "object", ("available", True)),
        ),
    },
    "mpi": {
        "paths": {
            "mpi": {},
        },
        "keys": (
            ("library", "string", None),
            ("layer", "string", None),
            ("status_sizes", "string", None),
            ("boundaries", "array", None),
            ("callpath_depth", "int", None),
            ("callpath_unwinder", "string", None),
            ("calls", "object", None),
        ),
    },
    "thread": {
        "paths": {
            "threads[]": {},
        },
        "keys": (
            ("thread", "int", None),
            ("location", "int", None),
            ("segments", "int", None),
            ("events", "int", None),
            ("calls", "int", None),
            ("lost_records", "int", None),
            ("buffer_moves", "int", None),
            ("buffer_move_ms", "number", None),
        ),
    },
    "probe": {
        "paths": {
            "probe": {},
        },
        "keys": (
            ("period_ms", "int", None),
            ("adds", "int", None),
            ("lanes", "int", None),
            ("k_source", "string", None),
            ("count", "int", None),
            ("total_ns", "number", None),
            ("threads", "array", None),
        ),
    },
    "probe_thread": {
        "paths": {
            "probe.threads[]": {},
        },
        "keys": (
            ("thread", "int", None),
            ("count", "int", None),
            ("total_ns", "number", None),
        ),
    },
    "metrics": {
        "paths": {
            "metrics": {},
        },
        "keys": (
            ("events", "array", None),
            ("min_us", "int", None),
            ("reads", "int", None),
        ),
    },
    "neighbours": {
        "paths": {
            "neighbours": {},
        },
        "keys": (
            ("span_ns", "number", None),
            ("tick_ns", "number", None),
            ("self_ns", "number", None),
            ("cpus", "array", None),
            ("tasks", "array", None),
        ),
    },
    "neighbour_cpu": {
        "paths": {
            "neighbours.cpus[]": {},
        },
        "keys": (
            ("cpu", "int", None),
            ("user_ns", "number", None),
            ("nice_ns", "number", None),
            ("system_ns", "number", None),
            ("idle_ns", "number", None),
            ("iowait_ns", "number", None),
            ("irq_ns", "number", None),
            ("softirq_ns", "number", None),
            ("steal_ns", "number", None),
        ),
    },
    "neighbour_task": {
        "paths": {
            "neighbours.tasks[]": {},
        },
        "keys": (
            ("pid", "int", None),
            ("tid", "int", None),
            ("comm", "string", None),
            ("cpu", "int", None),
            ("ns", "number", None),
        ),
    },
    "events": {
        "paths": {
            "events": {},
        },
        "keys": (
            ("written", "int", None),
            ("lost", "int", None),
            ("timestamps_raised", "int", None),
            ("buffer_flushes", "int", None),
        ),
    },
}


class RunJson:
    """run.json: the top level."""

    NRANKS = "nranks"
    COMMAND = "command"
    START_UTC = "start_utc"
    PERFVAR_VERSION = "perfvar_version"
    MPI_LIBRARY = "mpi_library"


# object: {"paths": {path: {placeholder: value}}, "keys": ((key, JSON type, when),
# ...)}; when: None, or (sibling key, value) for a key written only then.
RUN_JSON = {
    "top": {
        "paths": {
            "": {},
        },
        "keys": (
            ("nranks", "int", None),
            ("command", "string", None),
            ("start_utc", "string", None),
            ("perfvar_version", "string", None),
            ("mpi_library", "string", None),
        ),
    },
}


class EndedJson:
    """ended-rank-N.json: the top level."""

    RANK = "rank"
    RECOVERED = "recovered"
    ERROR = "error"
    THREADS = "threads"


class EndedJsonThread:
    """ended-rank-N.json: threads[]."""

    THREAD = "thread"
    STATE = "state"
    SIGNAL = "signal"
    SENT_BY = "sent_by"
    IN_MPI_CALL = "in_mpi_call"
    END_S = "end_s"
    END_UTC_NS = "end_utc_ns"
    SILENCE_S = "silence_s"
    CALLS = "calls"
    SEGMENTS = "segments"
    LOST_RECORDS = "lost_records"


# object: {"paths": {path: {placeholder: value}}, "keys": ((key, JSON type, when),
# ...)}; when: None, or (sibling key, value) for a key written only then.
ENDED_JSON = {
    "top": {
        "paths": {
            "": {},
        },
        "keys": (
            ("rank", "int", None),
            ("recovered", "bool", None),
            ("error", "string", None),
            ("threads", "array", None),
        ),
    },
    "thread": {
        "paths": {
            "threads[]": {},
        },
        "keys": (
            ("thread", "int", None),
            ("state", "string", None),
            ("signal", "int", None),
            ("sent_by", "string", None),
            ("in_mpi_call", "bool", None),
            ("end_s", "number", None),
            ("end_utc_ns", "number", None),
            ("silence_s", "number", None),
            ("calls", "int", None),
            ("segments", "int", None),
            ("lost_records", "int", None),
        ),
    },
}


class CalibrationJson:
    """calibration-rank-N.json: the top level."""

    RANK = "rank"
    FLUSH = "flush"
    N_SAMPLES = "n_samples"
    EPSILON = "epsilon"
    ALPHA = "alpha"
    P = "p"
    Q = "q"
    TIMER_OVERHEAD_NS = "timer_overhead_ns"
    CLOCK_GRANULARITY_NS = "clock_granularity_ns"
    OVERHEAD_REMOVED = "overhead_removed"
    DROPPED = "dropped"
    DISTRIBUTIONS = "distributions"
    STATES = "states"
    CYCLES = "cycles"


class CalibrationJsonDistribution:
    """calibration-rank-N.json: distributions[], states[].distributions[],
    cycles.distributions[]."""

    KIND = "kind"
    ADDS = "adds"
    BASE = "base"
    D = "d"
    PAIR = "pair"
    SAMPLES_UNIT = "samples_{unit}"


class CalibrationJsonState:
    """calibration-rank-N.json: states[]."""

    LABEL = "label"
    FLUSH = "flush"
    N_SAMPLES = "n_samples"
    STATUS = "status"
    DROPPED = "dropped"
    DISTRIBUTIONS = "distributions"


class CalibrationJsonCycles:
    """calibration-rank-N.json: cycles."""

    COUNTER = "counter"
    N_SAMPLES = "n_samples"
    STATUS = "status"
    TIMER_OVERHEAD_CYCLES = "timer_overhead_cycles"
    CLOCK_GRANULARITY_CYCLES = "clock_granularity_cycles"
    DROPPED = "dropped"
    DISTRIBUTIONS = "distributions"


# object: {"paths": {path: {placeholder: value}}, "keys": ((key, JSON type, when),
# ...)}; when: None, or (sibling key, value) for a key written only then.
CALIBRATION_JSON = {
    "top": {
        "paths": {
            "": {},
        },
        "keys": (
            ("rank", "int", None),
            ("flush", "int", None),
            ("n_samples", "int", None),
            ("epsilon", "number", None),
            ("alpha", "number", None),
            ("p", "int", None),
            ("q", "int", None),
            ("timer_overhead_ns", "number", None),
            ("clock_granularity_ns", "number", None),
            ("overhead_removed", "bool", None),
            ("dropped", "int", None),
            ("distributions", "array", None),
            ("states", "array", None),
            ("cycles", "object|null", None),
        ),
    },
    "distribution": {
        "paths": {
            "distributions[]": {"unit": "ns"},
            "states[].distributions[]": {"unit": "ns"},
            "cycles.distributions[]": {"unit": "cycles"},
        },
        "keys": (
            ("kind", "string", None),
            ("adds", "int", None),
            ("base", "int", None),
            ("d", "int", None),
            ("pair", "int", None),
            ("samples_{unit}", "array", None),
        ),
    },
    "state": {
        "paths": {
            "states[]": {},
        },
        "keys": (
            ("label", "string", None),
            ("flush", "int", None),
            ("n_samples", "int", None),
            ("status", "string", None),
            ("dropped", "int", None),
            ("distributions", "array", None),
        ),
    },
    "cycles": {
        "paths": {
            "cycles": {},
        },
        "keys": (
            ("counter", "string", None),
            ("n_samples", "int", None),
            ("status", "string", None),
            ("timer_overhead_cycles", "number", None),
            ("clock_granularity_cycles", "number", None),
            ("dropped", "int", None),
            ("distributions", "array", None),
        ),
    },
}
