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
    /* The cycle counter is only declared here: reading it needs a counter the machine may lack. */
    const perfvar_cycles_page *page = (const perfvar_cycles_page *)0;
    uint64_t (*read_cycles)(const perfvar_cycles_page *) = perfvar_cycles_read;
    int (*open_cycles)(const perfvar_cycles_page **, char *, int) = perfvar_cycles_open;
    const char *cycles = PERFVAR_CYCLES_NAME;
    return (b >= a && cpu >= -1 && name[0] && cycles[0] && read_cycles && open_cycles && !page) ? 0 : 1;
}
