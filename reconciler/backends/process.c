#include "process.h"

extern char **environ;

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define PROC_READ_CHUNK 4096
#define PROC_KILL_GRACE_MS 2000

void proc_result_release(struct proc_result *r)
{
	free(r->output);
	memset(r, 0, sizeof(*r));
}

static long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
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

int proc_run(char *const argv[], const char *cwd, char *const envp[], long timeout_s,
	     size_t out_max, struct proc_result *res)
{
	int pipefd[2], status = 0;
	long deadline;
	pid_t pid;

	memset(res, 0, sizeof(*res));
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
		int devnull = open("/dev/null", O_RDONLY);
		setpgid(0, 0);
		if (devnull >= 0)
			dup2(devnull, 0);
		dup2(pipefd[1], 1);
		dup2(pipefd[1], 2);
		signal(SIGPIPE, SIG_DFL);
		if (cwd && chdir(cwd)) {
			dprintf(2, "cannot enter %s: %s\n", cwd, strerror(errno));
			_exit(126);
		}
		/* execvpe searches the caller's PATH; the command's own PATH is the one that counts */
		environ = (char **)envp;
		execvp(argv[0], argv);
		dprintf(2, "cannot run %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	setpgid(pid, pid);
	close(pipefd[1]);
	deadline = now_ms() + timeout_s * 1000L;
	for (;;) {
		char buf[PROC_READ_CHUNK];
		struct pollfd p = { pipefd[0], POLLIN, 0 };
		long left = deadline - now_ms();
		ssize_t n;
		int rc;

		if (left <= 0) {
			res->timed_out = 1;
			break;
		}
		rc = poll(&p, 1, (int)(left > 1000 ? 1000 : left));
		if (rc < 0 && errno != EINTR)
			break;
		if (rc <= 0)
			continue;
		n = read(pipefd[0], buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		keep_tail(res, buf, (size_t)n, out_max);
	}
	close(pipefd[0]);
	if (res->timed_out) {
		kill(-pid, SIGTERM);
		for (long until = now_ms() + PROC_KILL_GRACE_MS; now_ms() < until;) {
			if (waitpid(pid, &status, WNOHANG) == pid)
				goto reaped;
			usleep(20000);
		}
		kill(-pid, SIGKILL);
	}
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
reaped:
	/* whatever the command left running in its group goes with it */
	kill(-pid, SIGKILL);
	res->output[res->len] = '\0';
	if (WIFEXITED(status))
		res->exit_code = WEXITSTATUS(status);
	else if (WIFSIGNALED(status))
		res->exit_code = 128 + WTERMSIG(status);
	return 0;
}
