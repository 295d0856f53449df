/* diskread: read every regular file below a directory (default /data) in
 * sorted path order and checksum all contents (disk reads / DMA).  With
 * -n > 1, each pass first drops the files' clean pages from the page
 * cache (posix_fadvise DONTNEED) so later passes go to the disk again. */
#include "common.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char *buf;
static long bs = 1 << 16;
static int drop_cache;
static long files;
static long long bytes;

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static uint64_t read_file(uint64_t h, const char *path, const char *rel)
{
	ssize_t r;
	int fd = open(path, O_RDONLY);

	if (fd < 0)
		die("open %s:", path);
	if (drop_cache)
		posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
	h = hash_bytes(h, rel, strlen(rel));
	while ((r = read_full(fd, buf, bs)) > 0) {
		h = hash_bytes(h, buf, r);
		bytes += r;
	}
	if (r < 0)
		die("read %s:", path);
	close(fd);
	files++;
	return h;
}

/* Walk dir (path relative to the root: rel) in sorted order. */
static uint64_t walk(uint64_t h, const char *dir, const char *rel)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char **names = NULL;
	size_t n = 0, i;

	if (!d)
		die("opendir %s:", dir);
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		names = realloc(names, (n + 1) * sizeof(*names));
		if (!names || !(names[n++] = strdup(e->d_name)))
			die("out of memory");
	}
	closedir(d);
	qsort(names, n, sizeof(*names), cmp_str);
	for (i = 0; i < n; i++) {
		char path[PATH_MAX], sub[PATH_MAX];
		struct stat st;

		if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, names[i]) >= sizeof(path) ||
		    (size_t)snprintf(sub, sizeof(sub), "%s%s%s", rel, *rel ? "/" : "", names[i]) >= sizeof(sub))
			die("path too long: %s/%s", dir, names[i]);
		if (lstat(path, &st))
			die("lstat %s:", path);
		if (S_ISDIR(st.st_mode))
			h = walk(h, path, sub);
		else if (S_ISREG(st.st_mode))
			h = read_file(h, path, sub);
		free(names[i]);
	}
	free(names);
	return h;
}

int main(int argc, char **argv)
{
	const char *dir = "/data";
	long passes = 1, p;
	uint64_t h = HASH_INIT, first = 0;
	double t0, dt;
	int opt;

	wl_init("diskread", "[-d DIR (/data)] [-n PASSES (1)] [-b READ_SIZE (65536)]");
	while ((opt = getopt(argc, argv, "d:n:b:")) != -1) {
		switch (opt) {
		case 'd': dir = optarg; break;
		case 'n': passes = arg_long(optarg, opt, 1, LONG_MAX); break;
		case 'b': bs = arg_long(optarg, opt, 1, 1L << 26); break;
		default: wl_usage();
		}
	}
	if (optind != argc)
		wl_usage();
	buf = xmalloc(bs);
	progress("reading all files under %s, %ld pass(es)", dir, passes);
	t0 = now_sec();
	for (p = 0; p < passes; p++) {
		files = 0;
		bytes = 0;
		drop_cache = p > 0;
		h = walk(HASH_INIT, dir, "");
		if (p == 0)
			first = h;
		else if (h != first)
			die("pass %ld: checksum %016llx differs from first pass %016llx", p,
			    (unsigned long long)h, (unsigned long long)first);
	}
	dt = now_sec() - t0;
	progress("%.3f s, %.1f MB/s", dt, (double)bytes * passes / dt / 1e6);
	result("files=%ld bytes=%lld passes=%ld checksum=%016llx", files, bytes, passes,
	       (unsigned long long)h);
	free(buf);
	return 0;
}
