#include "http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

static const struct load_cfg *cfg;
static struct sockaddr_in target;
static char request[4096];
static size_t request_len;
static long next_req;
static pthread_mutex_t res_lock = PTHREAD_MUTEX_INITIALIZER;
static struct load_res *total;
static char first_error[256];

struct worker_state {
	char *buf;
	size_t cap;
	long requests, failed;
	long long bytes, body_bytes;
	uint64_t checksum;
};

static void note_error(const char *what, int err)
{
	pthread_mutex_lock(&res_lock);
	if (!first_error[0])
		snprintf(first_error, sizeof(first_error), "%s%s%s", what,
			 err ? ": " : "", err ? strerror(err) : "");
	pthread_mutex_unlock(&res_lock);
}

/* One request on a fresh connection; returns 0 on success. */
static int do_request(struct worker_state *w)
{
	struct timeval tv = { cfg->timeout_s, 0 };
	size_t have = 0;
	char *hdr_end, *cl;
	int fd, tries, code;
	long long clen = -1, body;

	for (tries = 0;; tries++) {
		fd = socket(AF_INET, SOCK_STREAM, 0);
		if (fd < 0) {
			note_error("socket", errno);
			return -1;
		}
		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
		if (!connect(fd, (struct sockaddr *)&target, sizeof(target)))
			break;
		close(fd);
		/* out of ephemeral ports (TIME_WAIT) or transient: retry a bit */
		if ((errno != EADDRNOTAVAIL && errno != EAGAIN && errno != EINTR) || tries == 100) {
			note_error("connect", errno);
			return -1;
		}
		usleep(10000);
	}
	if (write_full(fd, request, request_len)) {
		note_error("send", errno);
		goto fail;
	}
	for (;;) {
		ssize_t r;

		if (have == w->cap) {
			w->cap *= 2;
			w->buf = realloc(w->buf, w->cap + 1);
			if (!w->buf)
				die("out of memory");
		}
		r = read(fd, w->buf + have, w->cap - have);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			note_error("recv", errno);
			goto fail;
		}
		if (r == 0)
			break;
		have += r;
	}
	close(fd);
	w->bytes += have;
	w->buf[have] = 0;
	if (sscanf(w->buf, "HTTP/1.%*d %d", &code) != 1 ||
	    !(hdr_end = strstr(w->buf, "\r\n\r\n"))) {
		note_error("malformed response", 0);
		return -1;
	}
	if (code != 200) {
		char msg[64];

		snprintf(msg, sizeof(msg), "HTTP status %d", code);
		note_error(msg, 0);
		return -1;
	}
	*hdr_end = 0;
	if ((cl = strcasestr(w->buf, "\nContent-Length:")))
		clen = strtoll(cl + 16, NULL, 10);
	hdr_end += 4;
	body = w->buf + have - hdr_end;
	if (clen >= 0 && clen != body) {
		note_error("body length differs from Content-Length", 0);
		return -1;
	}
	w->body_bytes += body;
	w->checksum += hash_bytes(HASH_INIT, hdr_end, body);
	return 0;
fail:
	close(fd);
	return -1;
}

static void *load_worker(void *arg)
{
	struct worker_state *w = arg;

	while (__atomic_fetch_add(&next_req, 1, __ATOMIC_SEQ_CST) < cfg->requests) {
		w->requests++;
		if (do_request(w))
			w->failed++;
	}
	pthread_mutex_lock(&res_lock);
	total->requests += w->requests;
	total->failed += w->failed;
	total->bytes += w->bytes;
	total->body_bytes += w->body_bytes;
	total->checksum += w->checksum;
	pthread_mutex_unlock(&res_lock);
	free(w->buf);
	return NULL;
}

void httpload_run(const struct load_cfg *c, struct load_res *res)
{
	const char *host = strcmp(c->host, "localhost") ? c->host : "127.0.0.1";
	struct worker_state *ws;
	pthread_t *th;
	pthread_attr_t attr;
	double t0;
	int i, n;

	cfg = c;
	total = res;
	memset(res, 0, sizeof(*res));
	signal(SIGPIPE, SIG_IGN);
	memset(&target, 0, sizeof(target));
	target.sin_family = AF_INET;
	target.sin_port = htons(c->port);
	if (inet_pton(AF_INET, host, &target.sin_addr) != 1)
		die("host must be a numeric IPv4 address: '%s'", c->host);
	n = snprintf(request, sizeof(request),
		     "GET %s HTTP/1.0\r\nHost: %s\r\nUser-Agent: replay-vm-httpload\r\n"
		     "Accept: */*\r\n\r\n", c->path, c->host);
	if (n >= (int)sizeof(request))
		die("path too long");
	request_len = n;

	ws = calloc(c->concurrency, sizeof(*ws));
	th = calloc(c->concurrency, sizeof(*th));
	if (!ws || !th)
		die("out of memory");
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 256 * 1024);
	t0 = now_sec();
	for (i = 0; i < c->concurrency; i++) {
		ws[i].cap = 16384;
		ws[i].buf = xmalloc(ws[i].cap + 1);
		if ((errno = pthread_create(&th[i], &attr, load_worker, &ws[i])))
			die("pthread_create:");
	}
	for (i = 0; i < c->concurrency; i++)
		pthread_join(th[i], NULL);
	res->secs = now_sec() - t0;
	free(ws);
	free(th);
}

int httpload_report(const struct load_res *r)
{
	double rps = r->secs > 0 ? r->requests / r->secs : 0;

	progress("%ld requests in %.3f s (%.1f req/s), %ld failed, %lld bytes (%lld body)",
		 r->requests, r->secs, rps, r->failed, r->bytes, r->body_bytes);
	result("requests=%ld failed=%ld bytes=%lld body_bytes=%lld checksum=%016llx requests_per_s=%.1f",
	       r->requests, r->failed, r->bytes, r->body_bytes,
	       (unsigned long long)r->checksum, rps);
	if (r->failed) {
		fprintf(stderr, "%s: %ld of %ld requests failed (first error: %s)\n",
			wl_name, r->failed, r->requests, first_error);
		return 1;
	}
	return 0;
}
