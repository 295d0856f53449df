/* httpd: small HTTP/1.0-1.1 server, thread pool blocking in accept(). */
#include "http.h"

#include <limits.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	struct httpd_cfg cfg = { NULL, 4, 0, 4096 };
	const char *addr = "0.0.0.0";
	int port = 8080, opt, lfd;
	long n;

	wl_init("httpd", "[-p PORT (8080, 0=any)] [-a ADDR (0.0.0.0)] [-r ROOT (generated page)] "
		"[-s PAGE_SIZE (4096)] [-w WORKERS (4)] [-n REQUESTS (0=until killed)]");
	while ((opt = getopt(argc, argv, "p:a:r:s:w:n:")) != -1) {
		switch (opt) {
		case 'p': port = arg_long(optarg, opt, 0, 65535); break;
		case 'a': addr = optarg; break;
		case 'r': cfg.root = optarg; break;
		case 's': cfg.page_size = arg_long(optarg, opt, 0, 1L << 30); break;
		case 'w': cfg.workers = arg_long(optarg, opt, 1, 1024); break;
		case 'n': cfg.max_requests = arg_long(optarg, opt, 0, LONG_MAX); break;
		default: wl_usage();
		}
	}
	if (optind != argc)
		wl_usage();
	lfd = httpd_listen(addr, port, &port);
	progress("listening on %s:%d, %d workers, serving %s", addr, port, cfg.workers,
		 cfg.root ? cfg.root : "generated page");
	n = httpd_serve(lfd, &cfg);
	result("requests=%ld", n);
	_exit(0);	/* workers are still blocked in accept() */
}
