/* netclient: network input from outside the VM.  Connects over TCP to a
 * host server (default 10.0.2.2:5555, the host under QEMU slirp), sends
 * one request, half-closes, reads the whole response until EOF and
 * prints its size and checksum.  Repeats -n times over new connections. */
#include "common.h"

#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

/* Expand \r, \n, \t and \\ escapes in place. */
static size_t unescape(char *s)
{
	char *o = s, *i = s;

	for (; *i; i++) {
		if (*i == '\\' && i[1]) {
			i++;
			*o++ = *i == 'r' ? '\r' : *i == 'n' ? '\n' : *i == 't' ? '\t' : *i;
		} else {
			*o++ = *i;
		}
	}
	*o = 0;
	return o - s;
}

int main(int argc, char **argv)
{
	const char *host = "10.0.2.2", *path = "/";
	char *req = NULL, *buf;
	size_t req_len, cap = 1 << 16;
	long conns = 1, c;
	int port = 5555, timeout = 30, opt;
	struct sockaddr_in sa;
	uint64_t sum = HASH_INIT;
	long long total = 0;

	wl_init("netclient", "[-h HOST (10.0.2.2)] [-p PORT (5555)] [-u PATH (/) | -m REQUEST "
		"(escapes \\r \\n; default \"GET PATH HTTP/1.0\\r\\n\\r\\n\")] [-n CONNECTIONS (1)] "
		"[-t TIMEOUT_S (30)]");
	while ((opt = getopt(argc, argv, "h:p:u:m:n:t:")) != -1) {
		switch (opt) {
		case 'h': host = optarg; break;
		case 'p': port = arg_long(optarg, opt, 1, 65535); break;
		case 'u': path = optarg; break;
		case 'm': req = optarg; break;
		case 'n': conns = arg_long(optarg, opt, 1, LONG_MAX); break;
		case 't': timeout = arg_long(optarg, opt, 1, 3600); break;
		default: wl_usage();
		}
	}
	if (optind != argc)
		wl_usage();
	if (req) {
		req_len = unescape(req);
	} else {
		req_len = strlen(path) + 32;
		req = xmalloc(req_len);
		req_len = snprintf(req, req_len, "GET %s HTTP/1.0\r\n\r\n", path);
	}
	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_port = htons(port);
	if (inet_pton(AF_INET, host, &sa.sin_addr) != 1)
		die("host must be a numeric IPv4 address: '%s'", host);
	buf = xmalloc(cap);
	progress("%ld connection(s) to %s:%d, %zu-byte request", conns, host, port, req_len);

	for (c = 0; c < conns; c++) {
		struct timeval tv = { timeout, 0 };
		size_t have = 0;
		int fd = socket(AF_INET, SOCK_STREAM, 0);

		if (fd < 0)
			die("socket:");
		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
		if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)))
			die("connect %s:%d:", host, port);
		if (write_full(fd, req, req_len))
			die("send:");
		shutdown(fd, SHUT_WR);	/* lets echo-style servers see EOF */
		for (;;) {
			ssize_t r;

			if (have == cap) {
				cap *= 2;
				if (!(buf = realloc(buf, cap)))
					die("out of memory");
			}
			r = read(fd, buf + have, cap - have);
			if (r < 0 && errno == EINTR)
				continue;
			if (r < 0)
				die("recv after %zu bytes:", have);
			if (r == 0)
				break;
			have += r;
		}
		close(fd);
		sum = hash_bytes(sum, buf, have);
		total += have;
		if (c == 0) {
			size_t k = strcspn(buf, "\r\n");

			progress("first response: %zu bytes, starts \"%.*s\"", have,
				 (int)(k < have && k < 60 ? k : (have < 60 ? have : 60)), buf);
		}
	}
	free(buf);
	result("connections=%ld bytes=%lld checksum=%016llx", conns, total,
	       (unsigned long long)sum);
	return 0;
}
