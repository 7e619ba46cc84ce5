/* flavour_check.c — refuse to run a layer built for one MPI flavour inside a program of the other.
 *
 * Open MPI and MPICH differ in ABI (MPI_Comm is a pointer in one, an int in the other): a wrapper of
 * one flavour cannot even pass a call of the other through unchanged. So when the layer is loaded
 * (constructor, before main and before any MPI call) into a process that also loaded the other
 * flavour's libmpi, it prints one message and, if it came in by LD_PRELOAD, re-executes the program
 * with itself removed from LD_PRELOAD: the application then runs uninstrumented. Linked in by
 * relinking, it cannot step aside, and says so. perfvar-run normally avoids all this by choosing the
 * layer from the program's libraries. Runs once, single-threaded, before main.
 */
#define _GNU_SOURCE
#include <mpi.h> /* OPEN_MPI or MPICH_VERSION: which flavour this layer is */
#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef OPEN_MPI
#define PV_OTHER_LIB "/libmpich.so"
#define PV_OTHER_NAME "MPICH"
#else
#define PV_OTHER_LIB "/libmpi.so."
#define PV_OTHER_NAME "Open MPI"
#endif

static int find_other(struct dl_phdr_info *info, size_t size, void *found)
{
    (void)size;
    if (info->dlpi_name && strstr(info->dlpi_name, PV_OTHER_LIB)) {
        snprintf(found, 512, "%s", info->dlpi_name);
        return 1;
    }
    return 0;
}

/* Remove the entry naming `self` (path or base name) from the ':'/' '-separated LD_PRELOAD. */
static int drop_from_preload(const char *self)
{
    const char *pre = getenv("LD_PRELOAD");
    if (!pre) return 0;
    const char *base = strrchr(self, '/') ? strrchr(self, '/') + 1 : self;
    char *out = calloc(strlen(pre) + 1, 1), *copy = strdup(pre);
    if (!out || !copy) return free(out), free(copy), 0;
    int dropped = 0;
    for (char *save = NULL, *tok = strtok_r(copy, ": ", &save); tok; tok = strtok_r(NULL, ": ", &save)) {
        const char *tb = strrchr(tok, '/') ? strrchr(tok, '/') + 1 : tok;
        if (strcmp(tb, base) == 0) {
            dropped = 1;
            continue;
        }
        if (out[0]) strcat(out, ":");
        strcat(out, tok);
    }
    if (dropped) out[0] ? setenv("LD_PRELOAD", out, 1) : unsetenv("LD_PRELOAD");
    free(out), free(copy);
    return dropped;
}

/* argv of this process from /proc/self/cmdline (NULL on failure). */
static char **own_argv(void)
{
    FILE *f = fopen("/proc/self/cmdline", "rb");
    if (!f) return NULL;
    static char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    if (n == 0 || n >= sizeof buf - 1) return NULL;
    buf[n] = 0;
    size_t argc = 0;
    for (size_t i = 0; i < n; i++) argc += buf[i] == 0;
    char **argv = calloc(argc + 1, sizeof *argv);
    if (!argv) return NULL;
    for (size_t i = 0, k = 0; i < n && k < argc; k++) {
        argv[k] = buf + i;
        i += strlen(buf + i) + 1;
    }
    return argv;
}

/* Before MPI_Init the rank is only in the launcher's environment: the message is printed once,
 * by rank 0 (or by a process started without a launcher). */
static int launcher_rank(void)
{
    static const char *const vars[] = {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", NULL};
    for (int i = 0; vars[i]; i++)
        if (getenv(vars[i])) return atoi(getenv(vars[i]));
    return 0;
}

__attribute__((constructor)) static void pv_flavour_check(void)
{
    char other[512] = "";
    if (!dl_iterate_phdr(find_other, other)) return;
    int tell = launcher_rank() == 0;
    Dl_info self;
    const char *path = dladdr((void *)pv_flavour_check, &self) && self.dli_fname ? self.dli_fname : "?";
    if (drop_from_preload(path)) {
        if (tell)
            fprintf(stderr,
                "perfvar: this program uses %s (%s) but %s is the " PV_MPI_FLAVOUR
                " layer; running it uninstrumented (perfvar-run picks the right layer, or use "
                "--mpi)\n",
                PV_OTHER_NAME, other, path);
        char **argv = own_argv();
        if (argv) execv("/proc/self/exe", argv);
        fprintf(stderr, "perfvar: cannot re-execute the program without perfvar; it may crash\n");
        return;
    }
    if (tell)
        fprintf(stderr,
            "perfvar: this program loads %s (%s) and %s, the " PV_MPI_FLAVOUR
            " layer, which cannot work with it: relink with perfvar::mpi_%s\n",
            PV_OTHER_NAME, other, path,
#ifdef OPEN_MPI
            "mpich"
#else
            "openmpi"
#endif
    );
}
