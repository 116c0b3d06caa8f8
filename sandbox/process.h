/* Running one command as a child process: argv (never a shell), its own process group, a time
 * limit, stdin from the bytes given (proc_stdin) or /dev/null, stdout and stderr captured
 * together with the tail kept, no file descriptor inherited but the ones named. */
#ifndef TERRARIUM_PROCESS_H
#define TERRARIUM_PROCESS_H

#include <stddef.h>
#include <sys/types.h>

#define PROC_KEEP_FDS_MAX 8

struct proc_result {
	int exit_code; /* exit status, or 128 + signal; -1 when it could not start */
	int timed_out; /* killed at the time limit */
	int stopped;   /* killed because the watch asked for it */
	char *output;  /* the last bytes of the output (at most the cap), NUL-terminated; owned */
	size_t len;
	int truncated; /* earlier output was dropped */
};

void proc_result_release(struct proc_result *r);
/* Set RES to "could not run": exit_code -1, output = MSG (copied). */
void proc_result_fail(struct proc_result *res, const char *msg);

/* Called about every INTERVAL_MS while a command runs (proc_wait): returns 0 to go on, non-zero
 * to kill the command at once (res->stopped). The reconciler renews its lease here. */
struct proc_watch {
	int (*tick)(void *arg);
	void *arg;
	long interval_ms;
};

/* A started command. */
struct proc {
	pid_t pid;
	int out_fd;
	size_t out_max;
};

/* Start ARGV (argv[0] looked up in ENVP's PATH) in CWD with environment ENVP; its output goes
 * to a pipe read by proc_wait, which keeps the last OUT_MAX bytes. File descriptors other than
 * 0-2 and KEEP[0..NKEEP) are closed in the child. 0, or -1 when it could not be started
 * (res->output says why; res is then complete). */
int proc_start(struct proc *p, char *const argv[], const char *cwd, char *const envp[],
	       const int *keep, int nkeep, size_t out_max, struct proc_result *res);

/* Run in the child before it enters CWD and executes the command (its descriptors are set up):
 * 0 to go on; non-zero, after writing why to stderr (the command's output), stops it with exit
 * status PROC_SETUP_FAILED. Only async-signal-safe calls belong here. It may fork: only a
 * process it returns 0 in goes on to the command, any other ends itself (_exit), and the
 * command's status is the child's (the one proc_start started). */
struct proc_setup {
	int (*fn)(void *arg);
	void *arg;
};
#define PROC_SETUP_FAILED 126

/* proc_start with SETUP (may be NULL), its stdin read from IN_FD (-1: /dev/null; the caller
 * keeps and closes it). */
int proc_start_setup(struct proc *p, char *const argv[], const char *cwd, char *const envp[],
		     const int *keep, int nkeep, const struct proc_setup *setup, int in_fd,
		     size_t out_max, struct proc_result *res);

/* A descriptor a command reads LEN bytes of DATA from on its stdin, then end of file: a
 * memory file, close-on-exec (proc_start_setup's IN_FD; the caller closes it). -1 with errno
 * set when it cannot be made. */
int proc_stdin(const char *data, size_t len);

/* Collect P's output until it ends and the command exits, for at most TIMEOUT_S seconds (then
 * the whole process group is killed), asking WATCH (may be NULL) on the way: a command that
 * closed its output and runs on is still under both; whatever is left in the group is killed
 * at the end. Fills res->exit_code. */
void proc_wait(struct proc *p, long timeout_s, const struct proc_watch *watch,
	       struct proc_result *res);

/* proc_start_setup (no setup, stdin from IN_FD, -1: /dev/null) then proc_wait. Returns 0 when the
 * command ran (see res->exit_code), -1 when it could not be started (res->output says why). */
int proc_run(char *const argv[], const char *cwd, char *const envp[], int in_fd, long timeout_s,
	     size_t out_max, const struct proc_watch *watch, struct proc_result *res);

#endif
