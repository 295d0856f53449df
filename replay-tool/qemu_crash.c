#include "qemu_crash.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *base_name(const char *path, size_t len)
{
	const char *s = path + len;

	while (s > path && s[-1] != '/')
		s--;
	return s;
}

/* "PATH(sym+off)[0xABS]" of the QEMU binary -> ABS - 1 - base */
static void frame(struct qemu_crash *c, const char *line, const char *qemu)
{
	const char *paren = strchr(line, '('), *br = strrchr(line, '[');
	const char *want = base_name(qemu, strlen(qemu));
	const char *have;
	uint64_t abs;
	char *end;

	if (!paren || !br || br < paren || c->n >= QEMU_CRASH_FRAMES)
		return;
	have = base_name(line, (size_t)(paren - line));
	if ((size_t)(paren - have) != strlen(want) || strncmp(have, want, paren - have))
		return;
	errno = 0;
	abs = strtoull(br + 1, &end, 16);
	if (errno || end == br + 1 || *end != ']' || abs <= c->base)
		return;
	/* a return address: the call is the instruction before it */
	c->off[c->n++] = abs - c->base - 1;
}

void qemu_crash_line(struct qemu_crash *c, const char *line, const char *qemu)
{
	const char *at;

	if (!strncmp(line, "replay-vm: QEMU crashed:", 24)) {
		c->seen = 1;
		c->in_trace = 1;
		c->n = 0;
		c->base = 0;
		at = strstr(line, "binary at ");
		if (at)
			c->base = strtoull(at + 10, NULL, 16);
		return;
	}
	if (!strncmp(line, "replay-vm: end of backtrace", 27)) {
		c->in_trace = 0;
		return;
	}
	if (c->in_trace && c->base)
		frame(c, line, qemu);
}

size_t qemu_crash_resolve(const struct qemu_crash *c, const char *qemu, FILE *out)
{
	char *argv[8 + QEMU_CRASH_FRAMES], addr[QEMU_CRASH_FRAMES][24], line[1024];
	int fds[2], status, k = 0;
	size_t i, lines = 0;
	pid_t pid;
	FILE *in;

	if (!c->seen)
		return 0;
	if (!c->n) {
		fprintf(out, "replay-vm: the crash backtrace has no frame in %s to resolve\n", qemu);
		return 0;
	}
	argv[k++] = "addr2line";
	argv[k++] = "-f";
	argv[k++] = "-C";
	argv[k++] = "-i";
	argv[k++] = "-p";
	argv[k++] = "-e";
	argv[k++] = (char *)qemu;
	for (i = 0; i < c->n; i++) {
		snprintf(addr[i], sizeof(addr[i]), "0x%" PRIx64, c->off[i]);
		argv[k++] = addr[i];
	}
	argv[k] = NULL;
	fflush(out);
	if (pipe(fds))
		return 0;
	pid = fork();
	if (pid < 0) {
		close(fds[0]);
		close(fds[1]);
		return 0;
	}
	if (pid == 0) {
		close(fds[0]);
		dup2(fds[1], 1);
		execvp(argv[0], argv);
		_exit(127);
	}
	close(fds[1]);
	in = fdopen(fds[0], "r");
	if (!in) {
		close(fds[0]);
	} else {
		fprintf(out, "replay-vm: where QEMU crashed (addr2line, innermost first):\n");
		while (fgets(line, sizeof(line), in)) {
			fprintf(out, "replay-vm:   %s", line);
			lines++;
		}
		fclose(in);
	}
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (!WIFEXITED(status) || WEXITSTATUS(status) || !lines) {
		fprintf(out, "replay-vm: addr2line could not resolve the frames: "
			"addr2line -f -i -e %s", qemu);
		for (i = 0; i < c->n; i++)
			fprintf(out, " %s", addr[i]);
		fprintf(out, "\n");
		return 0;
	}
	return c->n;
}
