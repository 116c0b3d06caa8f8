/* Linked into the sanitizer build only (`make asan`, with -Wl,--wrap=_exit): LeakSanitizer
 * checks for leaks when a program calls exit(), but prefork workers and forked children leave
 * through _exit(), so without this nothing a worker leaked while serving would be reported.
 * Every _exit() of our code runs the leak check first (a leak makes the exit status
 * LeakSanitizer's exitcode and writes a report, see tests/e2e/run.sh). */
#include <sanitizer/lsan_interface.h>

void __real__exit(int status) __attribute__((noreturn));
void __wrap__exit(int status) __attribute__((noreturn));

void __wrap__exit(int status)
{
	__lsan_do_leak_check();
	__real__exit(status);
}
