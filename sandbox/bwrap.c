/* The `bwrap` backend: bubblewrap namespaces on the host (docs/sandbox.md states the trust
 * model). Every command runs
 *   - in its own user namespace as an unprivileged uid/gid (BWRAP_UID), with no capabilities,
 *     no further user namespaces, no_new_privs and a seccomp filter refusing mount, ptrace,
 *     keyctl, namespace and module calls (bwrap_filter);
 *   - in a mount view built from a short list of host trees (SBX_VIEW_ROOTS, read-only) from
 *     which the hidden paths (the configuration directory, the sandbox root, home directories)
 *     are left out rather than covered: there is nothing underneath to unmount to
 *     (bwrap_view.h);
 *   - with its workspace, the only writable place, at BWRAP_WORKSPACE, and a private /tmp;
 *   - in its own network namespace: none at all, or (unrestricted) outbound access through
 *     slirp4netns, which refuses connections to the host's loopback;
 *   - in a pid namespace whose pid 1 is bubblewrap's monitor, tied to the reconciler from the
 *     first instant (ns_setup): when the reconciler dies, at any point, the command and its
 *     sandbox die with it.
 * Packages go to prefixes inside the workspace. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <seccomp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <linux/nsfs.h>
#include <time.h>
#include <unistd.h>

#include "../common/log.h"
#include "../common/clock.h"
#include "backend.h"
#include "bwrap_view.h"

#define BWRAP_BIN "bwrap"
#define BWRAP_SLIRP_BIN "slirp4netns"
#define BWRAP_UID "1000" /* the uid and gid commands see; never 0 */
#define BWRAP_WORKSPACE SBX_WORKSPACE
#define BWRAP_OWN_ARGS 64					    /* bwrap's other options */
#define BWRAP_ARGV_MAX (BWRAP_VIEW_ARGS_MAX + BWRAP_OWN_ARGS + 320) /* + an install of 256 */
#define BWRAP_DNS "nameserver 10.0.2.3\n" /* slirp4netns's DNS forwarder */
#define BWRAP_SLIRP_MTU "--mtu=65520"
#define BWRAP_NET_WAIT_MS 10000 /* for the sandbox's pid, then for slirp4netns to be ready */
#define BWRAP_NET_POLL_MS 1	/* between looks at the sandbox's loopback */
#define BWRAP_FIB_READ_MAX                                                                         \
	8192 /* bytes of /proc/PID/net/fib_trie read: a new namespace's is short */
#define BWRAP_SLIRP_OUT_MAX 4096
#define BWRAP_SLIRP_STOP_S 5
#define BWRAP_FDS 5		    /* descriptors bwrap inherits: seccomp, environ, network */
#define BWRAP_OVERLAY_OPTS_MAX 4000 /* overlay mount options: they must fit in a page */
#define BWRAP_PROBE_TIMEOUT_S 10
#define BWRAP_PROBE_DIR ".overlay-probe"
#define BWRAP_PROBE_FILE ".overlay-probed" /* the outcome, for later runs */

struct bwrap_state {
	char bwrap[PATH_MAX], slirp[PATH_MAX];
	unsigned char *bpf; /* the seccomp filter, compiled */
	size_t bpf_len;
	struct bwrap_view view;	    /* the host trees a command sees (bwrap_view.h) */
	int overlay;		    /* layered sandboxes: 0 not probed yet, 1 usable here, -1 not */
	pthread_mutex_t probe_lock; /* the probe of overlay, once for every thread */
};

/* ---- preparing: binaries, seccomp filter, view ---- */

/* ARGV0's absolute path in the reconciler's PATH into OUT. */
static int find_bin(const char *argv0, char *out, size_t outsz)
{
	const char *path = getenv("PATH");

	if (!path || !*path)
		path = "/usr/local/bin:/usr/bin:/bin";
	while (*path) {
		size_t len = strcspn(path, ":");
		int n = snprintf(out, outsz, "%.*s/%s", (int)len, path, argv0);
		if (len && n > 0 && (size_t)n < outsz && !access(out, X_OK))
			return 0;
		path += len;
		path += *path == ':';
	}
	return -1;
}

/* Calls refused inside the sandbox (EPERM). Most need capabilities it does not have; the
 * filter is the second wall, and the only one for calls a user namespace would allow. */
static const char *const bwrap_refused[] = {
	"mount",
	"umount",
	"umount2",
	"pivot_root",
	"chroot",
	"move_mount",
	"fsopen",
	"fsconfig",
	"fsmount",
	"fspick",
	"open_tree",
	"mount_setattr",
	"unshare",
	"setns",
	"ptrace",
	"process_vm_readv",
	"process_vm_writev",
	"keyctl",
	"add_key",
	"request_key",
	"bpf",
	"perf_event_open",
	"kexec_load",
	"kexec_file_load",
	"init_module",
	"finit_module",
	"delete_module",
	"acct",
	"swapon",
	"swapoff",
	"reboot",
	"open_by_handle_at",
	"name_to_handle_at",
	"userfaultfd",
	"quotactl",
	"syslog",
	"lookup_dcookie",
	"vhangup",
};

/* Compile the filter into st->bpf. Calls of another architecture (32-bit calls on x86-64) kill
 * the process: libseccomp's default for a foreign architecture. */
static int build_filter(struct bwrap_state *st, char *err, size_t errsz)
{
	static const unsigned long ns_flags[] = { CLONE_NEWUSER,  CLONE_NEWNS,	CLONE_NEWNET,
						  CLONE_NEWPID,	  CLONE_NEWIPC, CLONE_NEWUTS,
						  CLONE_NEWCGROUP };
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
	int fd = -1, rc = -1;
	off_t len;

	if (!ctx) {
		snprintf(err, errsz, "seccomp_init failed");
		return -1;
	}
	for (size_t i = 0; i < sizeof(bwrap_refused) / sizeof(bwrap_refused[0]); i++) {
		int nr = seccomp_syscall_resolve_name(bwrap_refused[i]);
		if (nr != __NR_SCMP_ERROR &&
		    seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 0) < 0)
			goto out;
	}
	/* clone with a namespace flag; clone3 (flags behind a pointer) answers ENOSYS, so that
	 * the C library falls back to clone */
	for (size_t i = 0; i < sizeof(ns_flags) / sizeof(ns_flags[0]); i++)
		if (seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(clone), 1,
				     SCMP_A0(SCMP_CMP_MASKED_EQ, ns_flags[i], ns_flags[i])) < 0)
			goto out;
	if (seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0) < 0 ||
	    seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(ioctl), 1,
			     SCMP_A1(SCMP_CMP_EQ, (scmp_datum_t)TIOCSTI)) < 0)
		goto out;
	fd = memfd_create("bwrap-seccomp", MFD_CLOEXEC);
	if (fd < 0 || seccomp_export_bpf(ctx, fd) < 0)
		goto out;
	len = lseek(fd, 0, SEEK_END);
	if (len <= 0 || !(st->bpf = malloc((size_t)len)) ||
	    pread(fd, st->bpf, (size_t)len, 0) != len)
		goto out;
	st->bpf_len = (size_t)len;
	rc = 0;
out:
	if (rc)
		snprintf(err, errsz, "building the seccomp filter failed");
	if (fd >= 0)
		close(fd);
	seccomp_release(ctx);
	return rc;
}

void bwrap_close(struct sbx *s)
{
	struct bwrap_state *st = s->priv;

	bwrap_view_release(&st->view);
	free(st->bpf);
	pthread_mutex_destroy(&st->probe_lock);
	free(st);
	s->priv = NULL;
}

/* The first child of process PID (of its main thread: /proc/PID/task/PID/children) into
 * *CHILD. 0, or -1 when it has none (or the kernel does not list them). */
static int first_child(pid_t pid, pid_t *child)
{
	char path[64], buf[64];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%ld/task/%ld/children", (long)pid, (long)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	*child = (pid_t)atol(buf);
	return *child > 0 ? 0 : -1;
}

int bwrap_prepare(struct sbx *s, char *err, size_t errsz)
{
	struct bwrap_state *st = calloc(1, sizeof(*st));

	if (!st) {
		snprintf(err, errsz, "out of memory");
		return -1;
	}
	pthread_mutex_init(&st->probe_lock, NULL);
	s->priv = st;
	if (find_bin(BWRAP_BIN, st->bwrap, sizeof(st->bwrap))) {
		snprintf(err, errsz, "%s not found in PATH (scripts/install-deps.sh installs it)",
			 BWRAP_BIN);
		goto fail;
	}
	if (find_bin(BWRAP_SLIRP_BIN, st->slirp, sizeof(st->slirp))) {
		snprintf(err, errsz, "%s not found in PATH (scripts/install-deps.sh installs it)",
			 BWRAP_SLIRP_BIN);
		goto fail;
	}
	if (build_filter(st, err, errsz))
		goto fail;
	/* the host trees a sandbox sees, read-only (those that exist; symlinks stay symlinks) */
	if (bwrap_view_prepare(&st->view, s, s->cfg->sandbox_ca_bundle, err, errsz))
		goto fail;
	return 0;
fail:
	bwrap_close(s);
	return -1;
}

/* ---- running ---- */

/* Read from FD into BUF (NUL-terminated) until END_CHAR, EOF or WAIT_MS. Bytes read. */
static size_t read_until(int fd, char *buf, size_t size, char end_char, long wait_ms)
{
	long deadline = clock_mono_ms() + wait_ms;
	size_t len = 0;

	buf[0] = '\0';
	while (len + 1 < size) {
		struct pollfd p = { fd, POLLIN, 0 };
		long left = deadline - clock_mono_ms();
		ssize_t n;

		if (left <= 0 || poll(&p, 1, (int)left) <= 0)
			break;
		n = read(fd, buf + len, size - 1 - len);
		if (n <= 0)
			break;
		len += (size_t)n;
		buf[len] = '\0';
		if (strchr(buf, end_char))
			break;
	}
	return len;
}

/* A memfd holding LEN bytes of DATA, read from its start; inherited (no close-on-exec). */
static int data_fd(const char *name, const void *data, size_t len)
{
	int fd = memfd_create(name, 0);

	if (fd < 0)
		return -1;
	if (write(fd, data, len) != (ssize_t)len || lseek(fd, 0, SEEK_SET)) {
		close(fd);
		return -1;
	}
	return fd;
}

static void fail_result(struct proc_result *res, const char *what)
{
	free(res->output);
	memset(res, 0, sizeof(*res));
	res->exit_code = -1;
	res->output = strdup(what);
	res->len = res->output ? strlen(res->output) : 0;
}

struct net {
	int info[2], block[2], resolv;
	struct proc slirp;
	int slirp_exit; /* write end: closing it stops slirp4netns */
	int slirp_started;
};

static void net_init(struct net *n)
{
	memset(n, 0, sizeof(*n));
	n->info[0] = n->info[1] = n->block[0] = n->block[1] = n->resolv = n->slirp_exit = -1;
}

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

/* Wait (at most WAIT_MS) until the network namespace of process PID has 127.0.0.1, which
 * bwrap's setup gives its loopback. 0, or -1 when it did not come. */
static int loopback_wait(const char *pid, long wait_ms)
{
	char path[64], buf[BWRAP_FIB_READ_MAX + 1];
	long long deadline = clock_mono_ms() + wait_ms;

	snprintf(path, sizeof(path), "/proc/%s/net/fib_trie", pid);
	for (;;) {
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		ssize_t n = fd < 0 ? -1 : read(fd, buf, BWRAP_FIB_READ_MAX);

		if (fd >= 0)
			close(fd);
		if (n > 0) {
			buf[n] = '\0';
			if (strstr(buf, "127.0.0.1"))
				return 0;
		}
		if (fd < 0 || clock_mono_ms() >= deadline)
			return -1;
		clock_sleep_ms(BWRAP_NET_POLL_MS);
	}
}

/* Give the sandbox of the command started as process CMD its network: once bwrap's info fd says
 * the sandbox exists, find its pid (in our pid namespace: the child of bwrap's monitor, which is
 * CMD's only child, ns_setup), start slirp4netns in its namespace, wait until the interface is
 * up. 0, or -1 with ERR set.
 * slirp4netns is handed the network namespace and the user namespace that owns it as open
 * descriptors: with --disable-userns the sandbox's process moves on into a nested user
 * namespace during its setup, and joining that one (slirp4netns's default for a pid) leaves no
 * right to enter the network namespace, which belongs to its parent. It starts once bwrap has
 * configured the sandbox's loopback: slirp4netns --configure brings lo up as well, and had it
 * done so first, bwrap's own RTM_NEWADDR for 127.0.0.1 would fail. */
static int net_start(struct bwrap_state *st, struct net *n, pid_t cmd, char *err, size_t errsz)
{
	char info[512], ready[8], pid[32], readyfd[32], exitfd[32], nspath[64], netns[64],
		userns[64];
	int rdy[2] = { -1, -1 }, ex[2] = { -1, -1 }, netfd = -1, userfd = -1, keep[4];
	pid_t monitor, sandbox;
	struct proc_result sres;
	char path[] = "PATH=/usr/bin:/bin";
	char *envp[] = { path, NULL };
	int rc = -1;

	read_until(n->info[0], info, sizeof(info), '}', BWRAP_NET_WAIT_MS);
	/* bwrap reports the sandbox's pid as its own pid namespace numbers it */
	if (!strstr(info, "\"child-pid\"")) {
		snprintf(err, errsz, "bwrap did not report the sandbox's pid");
		return -1;
	}
	if (first_child(cmd, &monitor) || first_child(monitor, &sandbox)) {
		snprintf(err, errsz,
			 "the sandbox's pid cannot be found (/proc/%ld/task/*/children)",
			 (long)cmd);
		return -1;
	}
	snprintf(pid, sizeof(pid), "%ld", (long)sandbox);
	if (loopback_wait(pid, BWRAP_NET_WAIT_MS)) {
		snprintf(err, errsz, "the sandbox's loopback was not set up in time");
		return -1;
	}
	snprintf(nspath, sizeof(nspath), "/proc/%s/ns/net", pid);
	netfd = open(nspath, O_RDONLY);
	userfd = netfd < 0 ? -1 : ioctl(netfd, NS_GET_USERNS);
	if (userfd < 0 || fcntl(userfd, F_SETFD, 0)) {
		snprintf(err, errsz, "the sandbox's network namespace (%s): %s", nspath,
			 strerror(errno));
		goto out;
	}
	if (pipe(rdy) || pipe(ex)) {
		snprintf(err, errsz, "pipe: %s", strerror(errno));
		goto out;
	}
	snprintf(readyfd, sizeof(readyfd), "--ready-fd=%d", rdy[1]);
	snprintf(exitfd, sizeof(exitfd), "--exit-fd=%d", ex[0]);
	snprintf(netns, sizeof(netns), "/proc/self/fd/%d", netfd);
	snprintf(userns, sizeof(userns), "--userns-path=/proc/self/fd/%d", userfd);
	{
		const char *argv[] = { st->slirp,
				       "--configure",
				       BWRAP_SLIRP_MTU,
				       "--disable-host-loopback",
				       "--enable-seccomp",
				       readyfd,
				       exitfd,
				       "--netns-type=path",
				       userns,
				       netns,
				       "tap0",
				       NULL };
		keep[0] = rdy[1];
		keep[1] = ex[0];
		keep[2] = netfd;
		keep[3] = userfd;
		if (proc_start(&n->slirp, (char *const *)argv, "/", envp, keep, 4,
			       BWRAP_SLIRP_OUT_MAX, &sres)) {
			snprintf(err, errsz, "slirp4netns: %s", sres.output ? sres.output : "");
			proc_result_release(&sres);
			goto out;
		}
		proc_result_release(&sres);
	}
	memset(&sres, 0, sizeof(sres));
	n->slirp_started = 1;
	n->slirp_exit = ex[1];
	ex[1] = -1;
	close_fd(&rdy[1]);
	close_fd(&ex[0]);
	if (!read_until(rdy[0], ready, sizeof(ready), '1', BWRAP_NET_WAIT_MS)) {
		/* what it said is the reason */
		close_fd(&n->slirp_exit);
		kill(-n->slirp.pid, SIGKILL);
		if ((sres.output = malloc(BWRAP_SLIRP_OUT_MAX + 1))) {
			sres.output[0] = '\0';
			sres.len = 0;
			proc_wait(&n->slirp, BWRAP_SLIRP_STOP_S, NULL, &sres);
		}
		n->slirp_started = 0;
		snprintf(err, errsz, "slirp4netns did not bring the network up: %s",
			 sres.output ? sres.output : "");
		proc_result_release(&sres);
		goto out;
	}
	rc = 0;
out:
	close_fd(&netfd);
	close_fd(&userfd);
	close_fd(&rdy[0]);
	close_fd(&rdy[1]);
	close_fd(&ex[0]);
	close_fd(&ex[1]);
	return rc;
}

/* Reap slirp4netns (process ARG), killed. */
static void *slirp_reap(void *arg)
{
	pid_t pid = (pid_t)(intptr_t)arg;

	while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
		;
	return NULL;
}

static void net_stop(struct net *n)
{
	close_fd(&n->info[0]);
	close_fd(&n->info[1]);
	close_fd(&n->block[0]);
	close_fd(&n->block[1]);
	close_fd(&n->resolv);
	close_fd(&n->slirp_exit);
	if (n->slirp_started) {
		pthread_t t;
		pthread_attr_t attr;
		/* the command is over, and its network namespace with it: slirp4netns has nothing
		 * left to do. Its exit (the tap device's teardown) takes tens of milliseconds,
		 * which the command's caller need not wait for: a thread of its own reaps it */
		kill(-n->slirp.pid, SIGKILL);
		close_fd(&n->slirp.out_fd);
		pthread_attr_init(&attr);
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
		if (pthread_create(&t, &attr, slirp_reap, (void *)(intptr_t)n->slirp.pid))
			slirp_reap((void *)(intptr_t)n->slirp.pid);
		pthread_attr_destroy(&attr);
		n->slirp_started = 0;
	}
}

/* ---- every command's namespaces, tied to the reconciler from the first instant ----
 * A reconciler killed -9 must leave nothing running, whenever it dies. bwrap alone cannot
 * promise that: --die-with-parent ties its monitor to its parent only after the monitor has
 * cloned the sandbox's pid 1, which ties itself to the monitor only once its setup is done, so a
 * reconciler killed in between would leave pid 1 setting up, then running, the command for
 * nobody. So the reconciler's child (F, ns_setup) first makes a user, mount and pid namespace of
 * its own and forks that pid namespace's pid 1 (G), which executes bwrap: bwrap's monitor is
 * then pid 1 of a pid namespace holding the whole sandbox, nested pid namespace included, and
 * when pid 1 of a pid namespace dies the kernel kills everything in it. The chain reconciler ->
 * F -> G is made of PR_SET_PDEATHSIG (SIGKILL) links, each set before the link above it can
 * break: G sets its own while F waits for G (F is not tied yet, so the reconciler's death
 * cannot kill it meanwhile) and proves F alive by writing to it (a write to a gone F is
 * SIGPIPE: G dies); then F sets its own and checks that its parent is still the reconciler
 * (setpgid takes the task list lock the kernel's reparenting holds, so one of the two sees the
 * other). F then waits for G and exits with its status; bwrap (G) keeps the link it inherited
 * (no set-user-ID bwrap: that would clear it) and sets it again (--die-with-parent). G mounts
 * its pid namespace's /proc, so that bwrap's monitor finds its sandbox under its own numbers.
 *
 * Layered sandboxes (dir.c): bwrap 0.8 (Debian 12) cannot mount an overlay itself, so F mounts
 * it in its mount namespace, in which BWRAP_UID is the reconciler's account (as inside the
 * sandbox; overlayfs may be mounted in a user namespace since Linux 5.11; `userxattr` keeps its
 * bookkeeping in user.overlay.* attributes); bwrap then makes the sandbox as usual, one user
 * namespace further in, and binds the overlay at /workspace. The mount is gone when the
 * command's processes are: nothing is mounted on the host, and nothing inside the sandbox can
 * mount (seccomp, no capabilities). Writes land in the upper layer, the sandbox's own directory;
 * the entry below is never written. Two commands of one sandbox at once mount the overlay twice
 * over the same upper layer (index=off allows it): each sees its own writes at once and the
 * other's on its next lookup of that path. */
struct overlay_mount {
	char opts[BWRAP_OVERLAY_OPTS_MAX];
	const char *target;
};

/* What ns_setup needs, prepared before the fork. */
struct bwrap_ns {
	pid_t caller; /* the reconciler: F's parent, or F is an orphan */
	char uid_map[64], gid_map[64];
	const struct overlay_mount *om; /* the workspace overlay to mount, or NULL */
	const struct bwrap_view *view;	/* the view's entries to mount, or NULL */
};

static void ns_prepare(struct bwrap_ns *ns, const struct overlay_mount *om,
		       const struct bwrap_view *view)
{
	ns->caller = getpid();
	snprintf(ns->uid_map, sizeof(ns->uid_map), "%s %u 1", BWRAP_UID, (unsigned)getuid());
	snprintf(ns->gid_map, sizeof(ns->gid_map), "%s %u 1", BWRAP_UID, (unsigned)getgid());
	ns->om = om;
	ns->view = view;
}

/* Write TEXT to PATH (a /proc file), in the child. */
static int put_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	ssize_t len = (ssize_t)strlen(text), n;

	if (fd < 0)
		return -1;
	n = write(fd, text, (size_t)len);
	close(fd);
	return n == len ? 0 : -1;
}

/* End F (or G before it executes bwrap) with STATUS at once: exit_group itself, not _exit, which
 * the sanitizer build wraps with a leak check (tests/sanitize/lsan_exit.c) whose helper thread
 * would be born in the new pid namespace and fail. F is a copy of the reconciler that allocates
 * nothing: there is nothing of its own to check. */
__attribute__((noreturn)) static void ns_exit(int status)
{
	syscall(SYS_exit_group, status);
	__builtin_unreachable();
}

/* In G, pid 1 of the new pid namespace: tied to F before anything else, then its /proc. 0: it
 * goes on to execute bwrap (else it ends, after saying why). */
static int ns_init(int ack[2])
{
	close(ack[0]);
	if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) || write(ack[1], "1", 1) != 1)
		ns_exit(PROC_SETUP_FAILED);
	close(ack[1]);
	if (!mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL))
		return 0;
	dprintf(2, "bwrap: sandbox setup: mounting /proc: %s\n", strerror(errno));
	ns_exit(PROC_SETUP_FAILED);
}

/* In F, once G is forked: wait for G's link, make its own, then wait for G and end with its
 * status. */
__attribute__((noreturn)) static void ns_relay(const struct bwrap_ns *ns, int ack[2], pid_t g)
{
	int status = 0;
	char b;

	close(ack[1]);
	while (read(ack[0], &b, 1) < 0 && errno == EINTR)
		;
	/* bwrap's descriptors are G's alone from now on (its info fd's end of file) */
	close_range(3, ~0U, 0);
	if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0))
		ns_exit(PROC_SETUP_FAILED);
	/* a no-op (F leads its group already) that takes the task list lock: see above */
	setpgid(0, 0);
	if (getppid() != ns->caller)
		ns_exit(PROC_SETUP_FAILED); /* the reconciler is gone: G goes with F */
	while (waitpid(g, &status, 0) < 0)
		if (errno != EINTR)
			ns_exit(PROC_SETUP_FAILED);
	ns_exit(WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
}

/* proc_setup of every bwrap command, in the reconciler's child F (above). */
static int ns_setup(void *arg)
{
	const struct bwrap_ns *ns = arg;
	const char *fail = NULL, *what = NULL;
	int ack[2];
	pid_t g = -1;

	/* a reconciler that gave up root is not dumpable, which makes its /proc/self files root's:
	 * the child must be to write its own maps (it is anyway once it executes bwrap, a
	 * moment later; a reconciler started as that user always is) */
	if (prctl(PR_SET_DUMPABLE, 1, 0, 0, 0))
		fail = "prctl";
	else if (unshare(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID))
		fail = "unshare";
	else if (put_file("/proc/self/uid_map", ns->uid_map))
		fail = "uid_map";
	else if (put_file("/proc/self/setgroups", "deny"))
		fail = "setgroups";
	else if (put_file("/proc/self/gid_map", ns->gid_map))
		fail = "gid_map";
	else if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL))
		fail = "making the mounts private";
	else if (ns->om &&
		 mount("overlay", ns->om->target, "overlay", MS_NOSUID | MS_NODEV, ns->om->opts))
		fail = "mounting the workspace overlay";
	else if (ns->view && bwrap_view_mount(ns->view, &what))
		fail = "mounting the view";
	else if (pipe2(ack, O_CLOEXEC) || (g = fork()) < 0)
		fail = "starting the sandbox's pid 1";
	if (fail) {
		dprintf(2, "bwrap: sandbox setup: %s%s%s: %s\n", fail, what ? " at " : "",
			what ? what : "", strerror(errno));
		ns_exit(PROC_SETUP_FAILED);
	}
	if (g == 0)
		return ns_init(ack);
	ns_relay(ns, ack, g);
}

/* The mount of L's overlay, prepared before the fork. 0, or -1 when a path cannot be named in
 * overlay's options (',', ':' or '\\' in it) or they do not fit. */
static int overlay_prepare(struct overlay_mount *m, const struct sbx_layer *l)
{
	const char *paths[] = { l->lower, l->upper, l->work };
	int n;

	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++)
		if (strpbrk(paths[i], ",:\\"))
			return -1;
	n = snprintf(m->opts, sizeof(m->opts),
		     "lowerdir=%s,upperdir=%s,workdir=%s,userxattr,index=off", l->lower, l->upper,
		     l->work);
	if (n < 0 || (size_t)n >= sizeof(m->opts))
		return -1;
	m->target = l->mnt;
	return 0;
}

/* The outcome of an earlier probe under this root on this kernel (ROOT/BWRAP_PROBE_FILE: "ok" or
 * "no", then the kernel's release): 1 usable, -1 not, 0 unknown. Each --once run would
 * otherwise probe again. */
static int overlay_known(struct sbx *s)
{
	char path[PATH_MAX], line[128], want[sizeof(line)];
	struct utsname u;
	FILE *f;
	int known = 0;

	if (uname(&u) ||
	    snprintf(path, sizeof(path), "%s/%s", s->root, BWRAP_PROBE_FILE) >= (int)sizeof(path) ||
	    !(f = fopen(path, "re")))
		return 0;
	if (fgets(line, sizeof(line), f)) {
		snprintf(want, sizeof(want), "ok %s\n", u.release);
		known = !strcmp(line, want);
		snprintf(want, sizeof(want), "no %s\n", u.release);
		known = known ? 1 : !strcmp(line, want) ? -1 : 0;
	}
	fclose(f);
	return known;
}

static void overlay_remember(struct sbx *s, int ok)
{
	char path[PATH_MAX];
	struct utsname u;
	FILE *f;

	if (uname(&u) ||
	    snprintf(path, sizeof(path), "%s/%s", s->root, BWRAP_PROBE_FILE) >= (int)sizeof(path) ||
	    !(f = fopen(path, "we")))
		return;
	fprintf(f, "%s %s\n", ok ? "ok" : "no", u.release);
	fclose(f);
}

/* Can this host mount a layered sandbox (kernel, file system of the sandbox root, paths)? Tried
 * once per root and kernel on scratch directories under the root; when not, sandboxes made from a
 * package cache entry get a copy of it. */
static int overlay_usable(struct sbx *s, struct bwrap_state *st)
{
	static const char *const subdirs[] = { "lower", "upper", "work", "mnt" };
	char base[PATH_MAX], err[SBX_ERR_MAX], t[] = "true", path[] = "PATH=/usr/bin:/bin";
	char *argv[] = { t, NULL }, *envp[] = { path, NULL };
	char *dirs[] = { NULL, NULL, NULL, NULL };
	struct overlay_mount m;
	struct bwrap_ns ns;
	struct proc_setup setup = { ns_setup, &ns };
	struct proc_result res;
	struct sbx_layer *l = calloc(1, sizeof(*l));
	struct proc p;
	int ok = 0;

	if (!st->overlay && !l)
		return 0;
	if (!st->overlay)
		st->overlay = overlay_known(s);
	if (st->overlay) {
		free(l);
		return st->overlay > 0;
	}
	dirs[0] = l->lower, dirs[1] = l->upper, dirs[2] = l->work, dirs[3] = l->mnt;
	snprintf(base, sizeof(base), "%s/%s.%ld", s->root, BWRAP_PROBE_DIR, (long)getpid());
	if (!mkdir(base, 0700)) {
		ok = 1;
		for (int i = 0; i < 4; i++) {
			ok = ok &&
			     snprintf(dirs[i], PATH_MAX, "%s/%s", base, subdirs[i]) < PATH_MAX &&
			     !mkdir(dirs[i], 0700);
		}
	}
	memset(&res, 0, sizeof(res));
	ns_prepare(&ns, &m, NULL);
	if (ok && !overlay_prepare(&m, l) &&
	    !proc_start_setup(&p, argv, "/", envp, NULL, 0, &setup, -1, BWRAP_SLIRP_OUT_MAX,
			      &res)) {
		proc_wait(&p, BWRAP_PROBE_TIMEOUT_S, NULL, &res);
		ok = res.exit_code == 0;
	} else {
		ok = 0;
	}
	st->overlay = ok ? 1 : -1;
	overlay_remember(s, ok);
	if (!ok)
		log_warn("bwrap: cannot layer sandboxes on package cache entries here (%s); they "
			 "get "
			 "a copy of the entry",
			 res.output && res.len ? res.output : "no overlayfs in a user namespace");
	proc_result_release(&res);
	if (sbx_rmtree(base, err, sizeof(err)))
		log_warn("bwrap: %s", err);
	free(l);
	return ok;
}

/* Create or attach sandbox SPEC->name: layered on SPEC->from where this host can, else a copy. */
int bwrap_create(struct sbx *s, const struct sbx_spec *spec, char *id, size_t idsz, char *err,
		 size_t errsz)
{
	struct bwrap_state *st = s->priv;
	int layered = 0;

	if (spec->from) {
		/* one probe for every thread */
		pthread_mutex_lock(&st->probe_lock);
		layered = overlay_usable(s, st);
		pthread_mutex_unlock(&st->probe_lock);
	}
	return sbx_dir_create_from(s, spec->name, spec->from, layered, id, idsz, err, errsz);
}

/* One command's bwrap: its argv and the descriptors it inherits (each named in the argv by its
 * number), the workspace's overlay when the sandbox is layered, its network when it has one. */
struct bwrap_cmd {
	const char **args; /* BWRAP_ARGV_MAX entries, owned; the strings are borrowed */
	int n;
	int keep[BWRAP_FDS], nkeep;
	char fdstr[BWRAP_FDS][16];
	int seccomp_fd, environ_fd, stdin_fd;
	struct sbx_layer *layer;  /* owned */
	struct overlay_mount *om; /* owned */
	int layered;
	struct net net;
};

static void cmd_release(struct bwrap_cmd *c)
{
	close_fd(&c->seccomp_fd);
	close_fd(&c->environ_fd);
	close_fd(&c->stdin_fd);
	net_stop(&c->net);
	free(c->args);
	free(c->layer);
	free(c->om);
}

/* FD joins what bwrap inherits: its number as bwrap's option value. */
static const char *cmd_fd(struct bwrap_cmd *c, int fd)
{
	c->keep[c->nkeep] = fd;
	snprintf(c->fdstr[c->nkeep], sizeof(c->fdstr[c->nkeep]), "%d", fd);
	return c->fdstr[c->nkeep++];
}

#define ARG(x) (c->args[c->n++] = (x))

/* The options of sandbox DIR's view: its own namespaces, no capabilities, the host trees
 * (st->view), a private /proc, /dev and /tmp, the CA bundle, the workspace. */
static void cmd_view(struct sbx *s, struct bwrap_state *st, struct bwrap_cmd *c, const char *dir)
{
	const char *ca = s->cfg->sandbox_ca_bundle;
	struct stat sb;

	ARG(st->bwrap);
	ARG("--unshare-user"), ARG("--uid"), ARG(BWRAP_UID), ARG("--gid"), ARG(BWRAP_UID);
	ARG("--disable-userns");
	ARG("--unshare-pid");
	ARG("--unshare-ipc");
	ARG("--unshare-uts");
	ARG("--unshare-cgroup-try");
	ARG("--unshare-net");
	ARG("--cap-drop"), ARG("ALL");
	ARG("--die-with-parent");
	ARG("--new-session");
	for (int i = 0; i < st->view.nargs; i++)
		ARG(st->view.args[i]);
	ARG("--proc"), ARG("/proc");
	/* pid 1 is bubblewrap's init: its environment is the command's own, but no process's
	 * environment but a command's own is to be read */
	ARG("--perms"), ARG("0000");
	ARG("--ro-bind-data"), ARG(cmd_fd(c, c->environ_fd)), ARG("/proc/1/environ");
	ARG("--dev"), ARG("/dev");
	ARG("--tmpfs"), ARG("/tmp");
	ARG("--tmpfs"), ARG("/var/tmp");
	if (ca[0] && !stat(ca, &sb) && S_ISREG(sb.st_mode))
		ARG("--ro-bind"), ARG(ca), ARG(ca);
	ARG("--bind"), ARG(c->layered ? c->layer->mnt : dir), ARG(BWRAP_WORKSPACE);
	ARG("--chdir"), ARG(BWRAP_WORKSPACE);
}

/* The whole argv of EX's command in sandbox DIR into C (descriptors made). 0, or -1 with RES
 * saying why. */
static int cmd_build(struct sbx *s, struct bwrap_state *st, struct bwrap_cmd *c, const char *dir,
		     const struct sbx_exec *ex, struct proc_result *res)
{
	c->args = malloc(sizeof(*c->args) * BWRAP_ARGV_MAX);
	c->seccomp_fd = data_fd("bwrap-seccomp", st->bpf, st->bpf_len);
	c->environ_fd = data_fd("bwrap-environ", "", 0);
	if (ex->stdin_data)
		c->stdin_fd = proc_stdin(ex->stdin_data, ex->stdin_len);
	if (!c->args || c->seccomp_fd < 0 || c->environ_fd < 0 ||
	    (ex->stdin_data && c->stdin_fd < 0)) {
		fail_result(res, "bwrap: cannot prepare the sandbox");
		return -1;
	}
	cmd_view(s, st, c, dir);
	if (ex->share_net) {
		c->net.resolv = data_fd("bwrap-resolv", BWRAP_DNS, strlen(BWRAP_DNS));
		if (c->net.resolv < 0 || pipe(c->net.info) || pipe(c->net.block)) {
			fail_result(res, "bwrap: cannot prepare the network");
			return -1;
		}
		ARG("--ro-bind-data"), ARG(cmd_fd(c, c->net.resolv)), ARG(BWRAP_RESOLV);
		ARG("--info-fd"), ARG(cmd_fd(c, c->net.info[1]));
		ARG("--block-fd"), ARG(cmd_fd(c, c->net.block[0]));
	}
	ARG("--seccomp"), ARG(cmd_fd(c, c->seccomp_fd));
	ARG("--");
	for (int i = 0; ex->argv[i]; i++) {
		if (c->n >= BWRAP_ARGV_MAX - 1) {
			fail_result(res, "bwrap: too many arguments");
			return -1;
		}
		ARG(ex->argv[i]);
	}
	c->args[c->n] = NULL;
	return 0;
}

#undef ARG

/* The workspace overlay of sandbox ID when it is layered (C->layered). 0, or -1 with RES saying
 * why. */
static int cmd_layers(struct sbx *s, struct bwrap_cmd *c, const char *id, struct proc_result *res)
{
	char err[SBX_ERR_MAX];

	c->layer = malloc(sizeof(*c->layer));
	c->om = malloc(sizeof(*c->om));
	c->layered = c->layer && c->om ? sbx_dir_layer(s, id, c->layer, err, sizeof(err)) : -1;
	if (c->layered < 0 || (c->layered && overlay_prepare(c->om, c->layer))) {
		fail_result(res, c->layered < 0 && c->layer && c->om
					 ? err
					 : "bwrap: cannot prepare the workspace overlay");
		return -1;
	}
	return 0;
}

/* Started as P, the command waits on its block fd: give the sandbox its network, then let it
 * go. 0, or -1 with the command stopped and RES saying why. */
static int cmd_network(struct bwrap_state *st, struct bwrap_cmd *c, struct proc *p,
		       struct proc_result *res)
{
	char err[SBX_ERR_MAX];
	const char *why = NULL;

	close_fd(&c->net.info[1]);
	close_fd(&c->net.block[0]);
	close_fd(&c->net.resolv);
	if (net_start(st, &c->net, p->pid, err, sizeof(err)))
		why = err;
	else if (write(c->net.block[1], "1", 1) != 1)
		why = "bwrap: cannot start the command";
	if (why) {
		/* the command has not started (it waits on the block fd): stop it */
		kill(-p->pid, SIGKILL);
		proc_wait(p, 1, NULL, res);
		fail_result(res, why);
		return -1;
	}
	close_fd(&c->net.block[1]);
	return 0;
}

int bwrap_run(struct sbx *s, const char *id, const struct sbx_exec *ex, struct proc_result *res)
{
	struct bwrap_state *st = s->priv;
	struct bwrap_cmd c = { .seccomp_fd = -1, .environ_fd = -1, .stdin_fd = -1 };
	char dir[CONFIG_STR_MAX * 2];
	struct bwrap_ns ns;
	struct proc_setup setup = { ns_setup, &ns };
	struct stat sb;
	struct proc p;
	int rc = -1;

	memset(res, 0, sizeof(*res));
	res->exit_code = -1;
	net_init(&c.net);
	if (sbx_dir_path(s, id, dir, sizeof(dir))) {
		fail_result(res, "bwrap: invalid sandbox id");
		goto out;
	}
	/* a sandbox whose directory or lower layer is gone cannot run anything (drift) */
	if (stat(dir, &sb) || !S_ISDIR(sb.st_mode)) {
		fail_result(res, "bwrap: the sandbox's directory is gone");
		goto out;
	}
	if (cmd_layers(s, &c, id, res) || cmd_build(s, st, &c, dir, ex, res))
		goto out;
	ns_prepare(&ns, c.layered ? c.om : NULL, &st->view);
	if (proc_start_setup(&p, (char *const *)c.args, dir, ex->envp, c.keep, c.nkeep, &setup,
			     c.stdin_fd, ex->output_max, res))
		goto out;
	close_fd(&c.seccomp_fd);
	close_fd(&c.environ_fd);
	close_fd(&c.stdin_fd);
	if (ex->share_net && cmd_network(st, &c, &p, res))
		goto out;
	proc_wait(&p, ex->timeout_s, ex->watch, res);
	rc = 0;
out:
	cmd_release(&c);
	return rc;
}
