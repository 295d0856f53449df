/* http: runs httpd as a child process on an ephemeral loopback port,
 * drives it with httpload, then stops the server (thesis: -n 80000 -c 50). */
#include "http.h"

#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	struct httpd_cfg scfg = { NULL, 4, 0, 4096 };
	struct load_cfg lcfg = { "127.0.0.1", 0, "/", 20000, 10, 30 };
	struct load_res res;
	int opt, lfd, st, rc;
	pid_t pid;

	wl_init("http", "[-n REQUESTS (20000)] [-c CONCURRENCY (10)] [-w SERVER_WORKERS (4)] "
		"[-s PAGE_SIZE (4096)] [-r ROOT] [-u PATH (/)]");
	while ((opt = getopt(argc, argv, "n:c:w:s:r:u:")) != -1) {
		switch (opt) {
		case 'n': lcfg.requests = arg_long(optarg, opt, 1, LONG_MAX); break;
		case 'c': lcfg.concurrency = arg_long(optarg, opt, 1, 10000); break;
		case 'w': scfg.workers = arg_long(optarg, opt, 1, 1024); break;
		case 's': scfg.page_size = arg_long(optarg, opt, 0, 1L << 30); break;
		case 'r': scfg.root = optarg; break;
		case 'u': lcfg.path = optarg; break;
		default: wl_usage();
		}
	}
	if (optind != argc || lcfg.path[0] != '/')
		wl_usage();

	lfd = httpd_listen("127.0.0.1", 0, &lcfg.port);
	progress("server on 127.0.0.1:%d (%d workers); %ld requests, concurrency %d",
		 lcfg.port, scfg.workers, lcfg.requests, lcfg.concurrency);
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		die("fork:");
	if (pid == 0) {
		httpd_serve(lfd, &scfg);
		_exit(0);
	}
	close(lfd);
	httpload_run(&lcfg, &res);
	if (kill(pid, SIGTERM))
		die("kill server:");
	if (waitpid(pid, &st, 0) != pid)
		die("waitpid:");
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		die("server exited abnormally (status 0x%x)", st);
	rc = httpload_report(&res);
	return rc;
}
