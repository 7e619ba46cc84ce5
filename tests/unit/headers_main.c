/* headers_main.c — runs the functions of the self-contained header translation units. */
#include "check.h"

int header_perfvar_h(void);
int header_perfvar_clock_h(void);

int main(void)
{
    CHECK(header_perfvar_h() == 0);
    CHECK(header_perfvar_clock_h() == 0);
    return check_result();
}
