/* httpload: HTTP load generator (like ab): -c threads, one request per
 * connection (HTTP/1.0). */
#include "http.h"

#include <limits.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	struct load_cfg cfg = { "127.0.0.1", 8080, "/", 20000, 10, 30 };
	struct load_res res;
	int opt;

	wl_init("httpload", "[-n REQUESTS (20000)] [-c CONCURRENCY (10)] [-h HOST (127.0.0.1)] "
		"[-p PORT (8080)] [-u PATH (/)] [-t TIMEOUT_S (30)]");
	while ((opt = getopt(argc, argv, "n:c:h:p:u:t:")) != -1) {
		switch (opt) {
		case 'n': cfg.requests = arg_long(optarg, opt, 1, LONG_MAX); break;
		case 'c': cfg.concurrency = arg_long(optarg, opt, 1, 10000); break;
		case 'h': cfg.host = optarg; break;
		case 'p': cfg.port = arg_long(optarg, opt, 1, 65535); break;
		case 'u': cfg.path = optarg; break;
		case 't': cfg.timeout_s = arg_long(optarg, opt, 1, 3600); break;
		default: wl_usage();
		}
	}
	if (optind != argc || cfg.path[0] != '/')
		wl_usage();
	progress("%ld requests, concurrency %d, http://%s:%d%s", cfg.requests,
		 cfg.concurrency, cfg.host, cfg.port, cfg.path);
	httpload_run(&cfg, &res);
	return httpload_report(&res);
}
