#include "unit.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stdint.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

void unit_out_cases(int (*fn)(const char *in, char *out, size_t outsz), size_t outsz,
		    const struct unit_out_case *cases, size_t n)
{
	char out[UNIT_OUT_MAX];

	if (outsz > sizeof(out))
		fail_msg("unit_out_cases: an output of %zu bytes is over UNIT_OUT_MAX", outsz);
	for (size_t i = 0; i < n; i++) {
		const struct unit_out_case *c = &cases[i];
		int rc = fn(c->in, outsz ? out : NULL, outsz);

		if (rc != c->rc || (c->want && (!outsz || strcmp(out, c->want))))
			print_error("case '%s'\n", c->in);
		assert_int_equal(rc, c->rc);
		if (c->want)
			assert_string_equal(outsz ? out : "", c->want);
	}
}

void unit_pred_cases(const char *name, int (*pred)(const char *), const char *const *yes,
		     size_t n_yes, const char *const *no, size_t n_no)
{
	for (size_t i = 0; i < n_yes; i++)
		if (!pred(yes[i]))
			fail_msg("%s('%s') is false, expected true", name, yes[i]);
	for (size_t i = 0; i < n_no; i++)
		if (pred(no[i]))
			fail_msg("%s('%s') is true, expected false", name, no[i]);
}

size_t unit_sh(const char *script, const char *arg, char *out, size_t outsz)
{
	size_t len = 0;
	ssize_t n;
	int fds[2], status;
	pid_t pid;

	assert_int_equal(pipe(fds), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		dup2(fds[1], 1);
		close(fds[0]);
		close(fds[1]);
		if (arg)
			execl("/bin/sh", "sh", "-c", script, "sh", arg, (char *)NULL);
		else
			execl("/bin/sh", "sh", "-c", script, (char *)NULL);
		_exit(127);
	}
	close(fds[1]);
	while ((n = read(fds[0], out + len, outsz - len)) > 0)
		len += (size_t)n;
	close(fds[0]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	return len;
}
