/* forkwait: repeatedly fork() + _exit() + waitpid() (process creation,
 * address-space copy/teardown, scheduler). */
#include "common.h"

#include <limits.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	long n = 10000, i, ok = 0;
	uint64_t h = HASH_INIT;
	double t0, dt;
	int opt;

	wl_init("forkwait", "[-n FORKS (10000)]");
	while ((opt = getopt(argc, argv, "n:")) != -1) {
		switch (opt) {
		case 'n': n = arg_long(optarg, opt, 0, LONG_MAX); break;
		default: wl_usage();
		}
	}
	if (optind != argc)
		wl_usage();

	progress("%ld fork/exit/wait cycles", n);
	t0 = now_sec();
	for (i = 0; i < n; i++) {
		int st;
		pid_t pid = fork();

		if (pid < 0)
			die("fork #%ld:", i);
		if (pid == 0)
			_exit(i & 0x7f);
		if (waitpid(pid, &st, 0) != pid)
			die("waitpid:");
		if (!WIFEXITED(st) || WEXITSTATUS(st) != (i & 0x7f))
			die("child %ld: unexpected status 0x%x", i, st);
		h = hash_u64(h, WEXITSTATUS(st));
		ok++;
	}
	dt = now_sec() - t0;
	progress("%.3f s, %.0f forks/s", dt, n / dt);
	result("count=%ld status_hash=%016llx", ok, (unsigned long long)h);
	return 0;
}
