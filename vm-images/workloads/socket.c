/* socket: TCP over loopback (127.0.0.1) between two processes. */
#include "stream.h"

#include <arpa/inet.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	long n = 500000, s = 512;
	long long bytes;
	uint64_t sum;
	struct sockaddr_in sa;
	socklen_t len = sizeof(sa);
	int lfd, fd, opt, one = 1;
	pid_t pid;
	double t0, dt;

	wl_init("socket", "[-n MESSAGES (500000)] [-s MESSAGE_SIZE (512)]");
	while ((opt = getopt(argc, argv, "n:s:")) != -1) {
		switch (opt) {
		case 'n': n = arg_long(optarg, opt, 0, LONG_MAX); break;
		case 's': s = arg_long(optarg, opt, 1, 1L << 26); break;
		default: wl_usage();
		}
	}
	if (optind != argc)
		wl_usage();

	lfd = socket(AF_INET, SOCK_STREAM, 0);
	if (lfd < 0)
		die("socket:");
	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	sa.sin_port = 0;
	if (bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) || listen(lfd, 1) ||
	    getsockname(lfd, (struct sockaddr *)&sa, &len))
		die("bind/listen on 127.0.0.1:");
	progress("%ld messages x %ld bytes over TCP 127.0.0.1:%d", n, s, ntohs(sa.sin_port));

	t0 = now_sec();
	pid = fork();
	if (pid < 0)
		die("fork:");
	if (pid == 0) {
		close(lfd);
		fd = socket(AF_INET, SOCK_STREAM, 0);
		if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)))
			die("connect:");
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		if (stream_produce(fd, n, s))
			die("send:");
		close(fd);
		_exit(0);
	}
	fd = accept(lfd, NULL, NULL);
	if (fd < 0)
		die("accept:");
	close(lfd);
	sum = stream_consume(fd, n, s, &bytes);
	close(fd);
	stream_wait(pid);
	dt = now_sec() - t0;
	progress("%.3f s, %.1f MB/s", dt, bytes / dt / 1e6);
	result("messages=%ld size=%ld bytes=%lld checksum=%016llx",
	       n, s, bytes, (unsigned long long)sum);
	return 0;
}
