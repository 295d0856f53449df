#include "stream.h"

#include <string.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static char *make_msg(long s)
{
	char *buf = xmalloc(s);

	fill_pattern(buf, s, s);
	return buf;
}

static void stamp(char *buf, long s, long i)
{
	uint64_t v = i;

	memcpy(buf, &v, s < 8 ? s : 8);
}

int stream_produce(int fd, long n, long s)
{
	char *buf = make_msg(s);
	long i;

	for (i = 0; i < n; i++) {
		stamp(buf, s, i);
		if (write_full(fd, buf, s)) {
			free(buf);
			return -1;
		}
	}
	free(buf);
	return 0;
}

uint64_t stream_consume(int fd, long n, long s, long long *bytes)
{
	char *buf = xmalloc(s), *ref = make_msg(s);
	uint64_t h = HASH_INIT;
	long i;

	*bytes = 0;
	for (i = 0; i < n; i++) {
		ssize_t r = read_full(fd, buf, s);

		if (r < 0)
			die("read:");
		if (r != s)
			die("stream ended after %lld bytes (expected %lld)",
			    *bytes + r, (long long)n * s);
		stamp(ref, s, i);
		if (memcmp(buf, ref, s))
			die("message %ld corrupted", i);
		h = hash_bytes(h, buf, s);
		*bytes += s;
	}
	if (read(fd, buf, 1) != 0)
		die("unexpected data after %ld messages", n);
	free(buf);
	free(ref);
	return h;
}

pid_t stream_fork_producer(int fd, int close_fd, long n, long s)
{
	pid_t pid = fork();

	if (pid < 0)
		die("fork:");
	if (pid == 0) {
		if (close_fd >= 0)
			close(close_fd);
		if (stream_produce(fd, n, s))
			die("producer write:");
		close(fd);
		_exit(0);
	}
	return pid;
}

void stream_wait(pid_t pid)
{
	int st;

	if (waitpid(pid, &st, 0) != pid)
		die("waitpid:");
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		die("producer failed (status 0x%x)", st);
}
