/* Small HTTP server (thread pool) and load generator, shared by the
 * httpd, httpload and http programs. */
#ifndef WL_HTTP_H
#define WL_HTTP_H
#include "common.h"

struct httpd_cfg {
	const char *root;	/* serve files below this dir; NULL: generated page */
	int workers;		/* worker threads blocking in accept() */
	long max_requests;	/* stop after this many requests; 0: until killed */
	long page_size;		/* size of the generated page */
};

/* Bind and listen on addr:port (port 0: ephemeral); dies on error.
 * *bound_port receives the actual port. */
int httpd_listen(const char *addr, int port, int *bound_port);
/* Serve lfd until max_requests are served or SIGTERM/SIGINT arrives
 * (both are blocked and sigwait()ed by the calling thread).  Returns the
 * number of requests served; worker threads are left blocked. */
long httpd_serve(int lfd, const struct httpd_cfg *cfg);

struct load_cfg {
	const char *host;	/* numeric IPv4 address or "localhost" */
	int port;
	const char *path;
	long requests;
	int concurrency;
	int timeout_s;
};

struct load_res {
	long requests, failed;
	long long bytes;	/* all bytes received, headers included */
	long long body_bytes;
	uint64_t checksum;	/* order-independent sum of body hashes */
	double secs;
};

void httpload_run(const struct load_cfg *cfg, struct load_res *res);
/* Print the summary and RESULT line; returns the exit status. */
int httpload_report(const struct load_res *res);

#endif
