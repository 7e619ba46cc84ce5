/* header_perfvar_clock.c — perfvar_clock.h compiles alone (and twice: include guard); its inline
 * reads are usable without any other perfvar header. */
#include "perfvar_clock.h"
#include "perfvar_clock.h"

int header_perfvar_clock_h(void);

int header_perfvar_clock_h(void)
{
    int cpu = -2;
    uint64_t a = perfvar_clock_read();
    uint64_t b = perfvar_clock_read_cpu(&cpu);
    const char *name = PERFVAR_CLOCK_NATIVE_NAME;
    return (b >= a && cpu >= -1 && name[0]) ? 0 : 1;
}
