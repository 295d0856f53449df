#include "http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#define REQ_MAX 8192

static const struct httpd_cfg *cfg;
static char *page;
static long served;

int httpd_listen(const char *addr, int port, int *bound_port)
{
	struct sockaddr_in sa;
	socklen_t len = sizeof(sa);
	int fd, one = 1;

	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_port = htons(port);
	if (inet_pton(AF_INET, addr, &sa.sin_addr) != 1)
		die("bad listen address '%s'", addr);
	fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0)
		die("socket:");
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) || listen(fd, 1024))
		die("bind/listen %s:%d:", addr, port);
	if (getsockname(fd, (struct sockaddr *)&sa, &len))
		die("getsockname:");
	if (bound_port)
		*bound_port = ntohs(sa.sin_port);
	return fd;
}

static int send_head(int fd, int code, const char *reason, const char *type,
		     long long length, int keep)
{
	char h[512];
	int n = snprintf(h, sizeof(h),
			 "HTTP/1.1 %d %s\r\nServer: replay-vm-httpd\r\n"
			 "Content-Type: %s\r\nContent-Length: %lld\r\n"
			 "Connection: %s\r\n\r\n",
			 code, reason, type, length, keep ? "keep-alive" : "close");

	return write_full(fd, h, n);
}

static int send_error(int fd, int code, const char *reason, int head_only)
{
	char body[128];
	int n = snprintf(body, sizeof(body), "<html><body>%d %s</body></html>\n", code, reason);

	if (send_head(fd, code, reason, "text/html", n, 0))
		return -1;
	return head_only ? 0 : write_full(fd, body, n);
}

static int send_file(int fd, const char *upath, int head_only, int keep)
{
	char path[PATH_MAX], buf[65536];
	struct stat st;
	const char *type = "application/octet-stream";
	size_t l;
	int f;
	ssize_t r;

	if (strstr(upath, ".."))
		return send_error(fd, 403, "Forbidden", head_only) ? -1 : 1;
	l = snprintf(path, sizeof(path), "%s%s%s", cfg->root, upath,
		     upath[strlen(upath) - 1] == '/' ? "index.html" : "");
	if (l >= sizeof(path))
		return send_error(fd, 414, "URI Too Long", head_only) ? -1 : 1;
	f = open(path, O_RDONLY);
	if (f < 0 || fstat(f, &st) || !S_ISREG(st.st_mode)) {
		if (f >= 0)
			close(f);
		return send_error(fd, 404, "Not Found", head_only) ? -1 : 1;
	}
	if (l > 5 && !strcmp(path + l - 5, ".html"))
		type = "text/html";
	else if (l > 4 && !strcmp(path + l - 4, ".txt"))
		type = "text/plain";
	if (send_head(fd, 200, "OK", type, st.st_size, keep))
		goto fail;
	if (!head_only) {
		long long left = st.st_size;

		while (left > 0 && (r = read(f, buf, sizeof(buf))) > 0) {
			if (write_full(fd, buf, r))
				goto fail;
			left -= r;
		}
		if (left)	/* file changed under us: cannot keep the connection */
			goto fail;
	}
	close(f);
	return 0;
fail:
	close(f);
	return -1;
}

/* Handle requests on one connection; returns when it should be closed. */
static void handle_conn(int fd)
{
	char req[REQ_MAX + 1];
	size_t have = 0;
	struct timeval tv = { 10, 0 };

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	for (;;) {
		char *end, method[16], path[4096], version[16];
		int keep, head_only, rc;
		size_t used;

		while (!(req[have] = 0, end = strstr(req, "\r\n\r\n"))) {
			ssize_t r;

			if (have == REQ_MAX) {
				send_error(fd, 431, "Request Header Fields Too Large", 0);
				return;
			}
			r = read(fd, req + have, REQ_MAX - have);
			if (r < 0 && errno == EINTR)
				continue;
			if (r <= 0)
				return;
			have += r;
		}
		used = end + 4 - req;
		if (sscanf(req, "%15s %4095s %15s", method, path, version) != 3 ||
		    path[0] != '/' || strncmp(version, "HTTP/1.", 7)) {
			send_error(fd, 400, "Bad Request", 0);
			return;
		}
		/* HTTP/1.1 keeps the connection unless told otherwise; 1.0 closes
		 * unless asked to keep it (header matching kept simple). */
		keep = !strcmp(version, "HTTP/1.1");
		*end = 0;
		if (strcasestr(req, "\nConnection: close"))
			keep = 0;
		else if (strcasestr(req, "\nConnection: keep-alive"))
			keep = 1;
		head_only = !strcmp(method, "HEAD");
		if (!head_only && strcmp(method, "GET")) {
			send_error(fd, 501, "Not Implemented", 0);
			return;
		}
		if (cfg->root) {
			rc = send_file(fd, path, head_only, keep);
		} else {
			rc = send_head(fd, 200, "OK", "text/html", cfg->page_size, keep);
			if (!rc && !head_only)
				rc = write_full(fd, page, cfg->page_size);
		}
		if (cfg->max_requests &&
		    __atomic_add_fetch(&served, 1, __ATOMIC_SEQ_CST) == cfg->max_requests)
			kill(getpid(), SIGTERM);	/* picked up by sigwait() */
		else if (!cfg->max_requests)
			__atomic_add_fetch(&served, 1, __ATOMIC_SEQ_CST);
		if (rc || !keep)
			return;
		memmove(req, req + used, have - used);
		have -= used;
	}
}

static void *worker(void *arg)
{
	int lfd = (int)(long)arg;

	for (;;) {
		int fd = accept(lfd, NULL, NULL);

		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED || errno == EMFILE ||
			    errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
				if (errno != EINTR && errno != ECONNABORTED)
					usleep(10000);
				continue;
			}
			die("accept:");
		}
		handle_conn(fd);
		close(fd);
	}
	return NULL;
}

static void make_page(long size)
{
	static const char head[] = "<html><head><title>replay-vm</title></head><body>\n";
	static const char tail[] = "</body></html>\n";
	long i;

	page = xmalloc(size + 1);
	for (i = 0; i < size; i++)
		page[i] = 'a' + (i * 7 + i / 64) % 26;
	for (i = 63; i < size; i += 64)
		page[i] = '\n';
	if (size >= (long)(sizeof(head) + sizeof(tail))) {
		memcpy(page, head, sizeof(head) - 1);
		memcpy(page + size - (sizeof(tail) - 1), tail, sizeof(tail) - 1);
	}
}

long httpd_serve(int lfd, const struct httpd_cfg *c)
{
	sigset_t set;
	pthread_attr_t attr;
	int i, sig;

	cfg = c;
	if (!cfg->root)
		make_page(cfg->page_size);
	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	if (pthread_sigmask(SIG_BLOCK, &set, NULL))
		die("pthread_sigmask failed");
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 256 * 1024);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	for (i = 0; i < cfg->workers; i++) {
		pthread_t t;

		if ((errno = pthread_create(&t, &attr, worker, (void *)(long)lfd)))
			die("pthread_create:");
	}
	if (sigwait(&set, &sig))
		die("sigwait failed");
	return __atomic_load_n(&served, __ATOMIC_SEQ_CST);
}
