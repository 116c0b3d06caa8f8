/* Running one command as a child process: argv (never a shell), its own process group, a time
 * limit, stdin from /dev/null, stdout and stderr captured together with the tail kept. */
#ifndef TERRARIUM_PROCESS_H
#define TERRARIUM_PROCESS_H

#include <stddef.h>

struct proc_result {
	int exit_code;   /* exit status, or 128 + signal; -1 when it could not start */
	int timed_out;   /* killed at the time limit */
	char *output;    /* the last bytes of the output (at most the cap), NUL-terminated; owned */
	size_t len;
	int truncated;   /* earlier output was dropped */
};

void proc_result_release(struct proc_result *r);

/* Run ARGV (argv[0] looked up in ENVP's PATH) in CWD with environment ENVP, for at most
 * TIMEOUT_S seconds (then the whole process group is killed), keeping the last OUT_MAX bytes of
 * output. Returns 0 when the command ran (see res->exit_code), -1 when it could not be started
 * (res->output says why). */
int proc_run(char *const argv[], const char *cwd, char *const envp[], long timeout_s,
	     size_t out_max, struct proc_result *res);

#endif
