/* ipc: pipe producer/consumer between two processes (fork). */
#include "stream.h"

#include <limits.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	long n = 1000000, s = 512;
	long long bytes;
	uint64_t sum;
	int p[2], opt;
	pid_t pid;
	double t0, dt;

	wl_init("ipc", "[-n MESSAGES (1000000)] [-s MESSAGE_SIZE (512)]");
	while ((opt = getopt(argc, argv, "n:s:")) != -1) {
		switch (opt) {
		case 'n': n = arg_long(optarg, opt, 0, LONG_MAX); break;
		case 's': s = arg_long(optarg, opt, 1, 1L << 26); break;
		default: wl_usage();
		}
	}
	if (optind != argc)
		wl_usage();
	if (pipe(p))
		die("pipe:");
	progress("%ld messages x %ld bytes through a pipe", n, s);
	t0 = now_sec();
	pid = stream_fork_producer(p[1], p[0], n, s);
	close(p[1]);
	sum = stream_consume(p[0], n, s, &bytes);
	close(p[0]);
	stream_wait(pid);
	dt = now_sec() - t0;
	progress("%.3f s, %.1f MB/s", dt, bytes / dt / 1e6);
	result("messages=%ld size=%ld bytes=%lld checksum=%016llx",
	       n, s, bytes, (unsigned long long)sum);
	return 0;
}
