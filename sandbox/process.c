#include "process.h"
#include "../common/clock.h"

extern char **environ;

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define PROC_READ_CHUNK 4096
#define PROC_KILL_GRACE_MS 2000
#define PROC_REAP_POLL_MS 20 /* between looks at an exit without a pidfd */

void proc_result_release(struct proc_result *r)
{
	free(r->output);
	memset(r, 0, sizeof(*r));
}

void proc_result_fail(struct proc_result *res, const char *msg)
{
	free(res->output);
	res->exit_code = -1;
	res->timed_out = 0;
	res->truncated = 0;
	res->output = strdup(msg ? msg : "");
	res->len = res->output ? strlen(res->output) : 0;
}

/* Append DATA to the tail buffer, dropping the oldest bytes past CAP. */
static void keep_tail(struct proc_result *r, const char *data, size_t n, size_t cap)
{
	if (n >= cap) {
		r->truncated |= n > cap || r->len > 0;
		memcpy(r->output, data + n - cap, cap);
		r->len = cap;
		return;
	}
	if (r->len + n > cap) {
		size_t drop = r->len + n - cap;
		memmove(r->output, r->output + drop, r->len - drop);
		r->len -= drop;
		r->truncated = 1;
	}
	memcpy(r->output + r->len, data, n);
	r->len += n;
}

/* In the child: close every descriptor above 2 but KEEP (sorted or not). */
static void close_others(const int *keep, int nkeep)
{
	int lo = 3;

	for (;;) {
		int next = -1;
		for (int i = 0; i < nkeep; i++)
			if (keep[i] >= lo && (next < 0 || keep[i] < next))
				next = keep[i];
		if (next < 0) {
			close_range((unsigned)lo, ~0U, 0);
			return;
		}
		if (next > lo)
			close_range((unsigned)lo, (unsigned)next - 1, 0);
		lo = next + 1;
	}
}

int proc_start(struct proc *p, char *const argv[], const char *cwd, char *const envp[],
	       const int *keep, int nkeep, size_t out_max, struct proc_result *res)
{
	return proc_start_setup(p, argv, cwd, envp, keep, nkeep, NULL, -1, out_max, res);
}

int proc_stdin(const char *data, size_t len)
{
	int fd = memfd_create("terrarium-stdin", MFD_CLOEXEC);
	size_t done = 0;

	if (fd < 0)
		return -1;
	while (done < len) {
		ssize_t n = write(fd, data + done, len - done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			close(fd);
			return -1;
		}
		done += (size_t)n;
	}
	if (lseek(fd, 0, SEEK_SET)) {
		close(fd);
		return -1;
	}
	return fd;
}

int proc_start_setup(struct proc *p, char *const argv[], const char *cwd, char *const envp[],
		     const int *keep, int nkeep, const struct proc_setup *setup, int in_fd,
		     size_t out_max, struct proc_result *res)
{
	int pipefd[2];
	pid_t pid;

	memset(res, 0, sizeof(*res));
	memset(p, 0, sizeof(*p));
	p->out_fd = -1;
	p->out_max = out_max;
	res->exit_code = -1;
	res->output = malloc(out_max + 1);
	if (!res->output)
		return -1;
	res->output[0] = '\0';
	if (pipe2(pipefd, O_CLOEXEC)) {
		res->len = (size_t)snprintf(res->output, out_max + 1, "pipe: %s", strerror(errno));
		return -1;
	}
	pid = fork();
	if (pid < 0) {
		res->len = (size_t)snprintf(res->output, out_max + 1, "fork: %s", strerror(errno));
		close(pipefd[0]);
		close(pipefd[1]);
		return -1;
	}
	if (pid == 0) {
		int in = in_fd >= 0 ? in_fd : open("/dev/null", O_RDONLY);
		setpgid(0, 0);
		if (in >= 0)
			dup2(in, 0);
		dup2(pipefd[1], 1);
		dup2(pipefd[1], 2);
		/* nothing of the reconciler's (its database connection) reaches the command */
		close_others(keep, nkeep);
		signal(SIGPIPE, SIG_DFL);
		if (setup && setup->fn(setup->arg))
			_exit(PROC_SETUP_FAILED);
		if (cwd && chdir(cwd)) {
			dprintf(2, "cannot enter %s: %s\n", cwd, strerror(errno));
			_exit(126);
		}
		/* execvpe searches the caller's PATH; the command's own PATH is the one that counts
		 */
		environ = (char **)envp;
		execvp(argv[0], argv);
		dprintf(2, "cannot run %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	setpgid(pid, pid);
	close(pipefd[1]);
	p->pid = pid;
	p->out_fd = pipefd[0];
	return 0;
}

/* A descriptor that polls readable once PID has exited (pidfd_open), or -1 where the kernel has
 * none: proc_wait then looks every PROC_REAP_POLL_MS. */
static int exit_fd(pid_t pid)
{
	return (int)syscall(SYS_pidfd_open, pid, 0);
}

/* After P's command exited: what its output pipe holds now (bytes written before the exit
 * among them), never more, so a job that outlived the command and writes on (killed at once,
 * but perhaps in another group) cannot keep this going. */
static void drain_held(struct proc *p, struct proc_result *res)
{
	char buf[PROC_READ_CHUNK];
	int held = 0;

	if (ioctl(p->out_fd, FIONREAD, &held))
		return;
	while (held > 0) {
		ssize_t n = read(p->out_fd, buf,
				 (size_t)held < sizeof(buf) ? (size_t)held : sizeof(buf));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return;
		keep_tail(res, buf, (size_t)n, p->out_max);
		held -= (int)n;
	}
}

void proc_wait(struct proc *p, long timeout_s, const struct proc_watch *watch,
	       struct proc_result *res)
{
	long deadline = clock_mono_ms() + timeout_s * 1000L, next_tick = 0;
	int status = 0, eof = 0, pidfd = exit_fd(p->pid);
	pid_t pid = p->pid;

	if (watch)
		next_tick = clock_mono_ms() + watch->interval_ms;
	/* the output until the command exits: the time limit and the watch hold until then, even
	 * for a command that closed its output and runs on. A job it left behind may hold the
	 * output open for ever (`sleep 300 &`): the command is done when it exits, not when its
	 * output ends. */
	for (;;) {
		char buf[PROC_READ_CHUNK];
		struct pollfd pf[2] = { { eof ? -1 : p->out_fd, POLLIN, 0 }, { pidfd, POLLIN, 0 } };
		long now = clock_mono_ms(), left = deadline - now, wait = left > 1000 ? 1000 : left;
		ssize_t n;
		int rc;

		if (left <= 0) {
			res->timed_out = 1;
			break;
		}
		if (watch) {
			if (now >= next_tick) {
				if (watch->tick(watch->arg)) {
					res->stopped = 1;
					break;
				}
				next_tick = clock_mono_ms() + watch->interval_ms;
			}
			if (next_tick - now < wait)
				wait = next_tick - now > 0 ? next_tick - now : 0;
		}
		if (pidfd < 0 && wait > PROC_REAP_POLL_MS)
			wait = PROC_REAP_POLL_MS;
		rc = poll(pf, 2, (int)wait); /* an fd of -1 is not looked at */
		if (rc < 0 && errno != EINTR)
			eof = 1; /* the output cannot be read: wait for the exit alone */
		if ((pidfd < 0 || pf[1].revents) && waitpid(pid, &status, WNOHANG) == pid) {
			/* its group goes first, so that what is left to read is bounded */
			kill(-pid, SIGKILL);
			if (!eof)
				drain_held(p, res);
			goto reaped;
		}
		if (rc <= 0 || eof || !pf[0].revents)
			continue;
		n = read(p->out_fd, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			eof = 1;
			continue;
		}
		keep_tail(res, buf, (size_t)n, p->out_max);
	}
	close(p->out_fd);
	p->out_fd = -1;
	if (res->stopped) {
		/* the lease is gone: another reconciler may start this work now */
		kill(-pid, SIGKILL);
	} else if (res->timed_out) {
		kill(-pid, SIGTERM);
		for (long until = clock_mono_ms() + PROC_KILL_GRACE_MS; clock_mono_ms() < until;) {
			if (waitpid(pid, &status, WNOHANG) == pid)
				goto reaped;
			clock_sleep_ms(20);
		}
		kill(-pid, SIGKILL);
	}
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
reaped:
	if (p->out_fd >= 0)
		close(p->out_fd);
	p->out_fd = -1;
	if (pidfd >= 0)
		close(pidfd);
	/* whatever the command left running in its group goes with it */
	kill(-pid, SIGKILL);
	res->output[res->len] = '\0';
	if (WIFEXITED(status))
		res->exit_code = WEXITSTATUS(status);
	else if (WIFSIGNALED(status))
		res->exit_code = 128 + WTERMSIG(status);
}

int proc_run(char *const argv[], const char *cwd, char *const envp[], int in_fd, long timeout_s,
	     size_t out_max, const struct proc_watch *watch, struct proc_result *res)
{
	struct proc p;

	if (proc_start_setup(&p, argv, cwd, envp, NULL, 0, NULL, in_fd, out_max, res))
		return -1;
	proc_wait(&p, timeout_s, watch, res);
	return 0;
}
