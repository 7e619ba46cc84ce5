/* strerror.c — text for perfvar status codes. */
#include "perfvar.h"

const char *perfvar_strerror(int status)
{
    switch (status) {
    case PERFVAR_OK: return "success";
    case PERFVAR_ERR_INVALID_ARG: return "invalid argument";
    case PERFVAR_ERR_UNKNOWN_HANDLE: return "unknown region handle";
    case PERFVAR_ERR_NOT_STARTED: return "stop without a matching start on this thread";
    case PERFVAR_ERR_NESTING: return "stop of a region that is not the innermost started region";
    case PERFVAR_ERR_TOO_MANY: return "too many regions or nesting too deep";
    case PERFVAR_ERR_NAME_TOO_LONG: return "region name too long";
    case PERFVAR_ERR_NO_MEMORY: return "out of memory";
    case PERFVAR_ERR_UNAVAILABLE: return "not available on this machine";
    case PERFVAR_ERR_IO: return "file could not be written";
    case PERFVAR_ERR_CONFIG: return "bad PERFVAR_* configuration value";
    default: return "unknown perfvar status code";
    }
}
