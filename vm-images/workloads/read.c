/* read: repeatedly read() one file from start to end (file-read syscall
 * path, page cache).  The file is created with deterministic content if
 * it is absent or has the wrong size. */
#include "common.h"

#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

static void create_file(const char *path, long size)
{
	char tmp[PATH_MAX];
	char buf[65536];
	long off;
	int fd;

	snprintf(tmp, sizeof(tmp), "%s.tmp%d", path, (int)getpid());
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		die("create %s:", tmp);
	for (off = 0; off < size; off += sizeof(buf)) {
		size_t k = size - off < (long)sizeof(buf) ? (size_t)(size - off) : sizeof(buf);

		fill_pattern(buf, k, off / sizeof(buf));
		if (write_full(fd, buf, k))
			die("write %s:", tmp);
	}
	if (fsync(fd) || close(fd))
		die("sync %s:", tmp);
	if (rename(tmp, path))
		die("rename %s:", tmp);
}

int main(int argc, char **argv)
{
	const char *dir = "/tmp";
	long iters = 50000, size = 64 * 1024, bs = 4096;
	char path[PATH_MAX];
	struct stat st;
	uint64_t sum = HASH_INIT;
	long long total = 0;
	long i;
	char *buf;
	double t0, dt;
	int fd, opt;

	wl_init("read", "[-d DIR (/tmp)] [-n ITERATIONS (50000)] [-s FILE_SIZE (65536)] [-b READ_SIZE (4096)]");
	while ((opt = getopt(argc, argv, "d:n:s:b:")) != -1) {
		switch (opt) {
		case 'd': dir = optarg; break;
		case 'n': iters = arg_long(optarg, opt, 1, LONG_MAX); break;
		case 's': size = arg_long(optarg, opt, 1, 1L << 34); break;
		case 'b': bs = arg_long(optarg, opt, 1, 1L << 24); break;
		default: wl_usage();
		}
	}
	if (optind != argc)
		wl_usage();

	snprintf(path, sizeof(path), "%s/read_test.%ld", dir, size);
	if (stat(path, &st) || st.st_size != size) {
		progress("creating %s (%ld bytes)", path, size);
		create_file(path, size);
	}
	fd = open(path, O_RDONLY);
	if (fd < 0)
		die("open %s:", path);
	buf = xmalloc(bs);
	progress("reading %s: %ld iterations x %ld bytes, %ld-byte reads", path, iters, size, bs);

	t0 = now_sec();
	for (i = 0; i < iters; i++) {
		long got = 0;
		ssize_t r;

		if (lseek(fd, 0, SEEK_SET) != 0)
			die("lseek:");
		while ((r = read_full(fd, buf, bs)) > 0) {
			sum = hash_bytes(sum, buf, r);
			got += r;
		}
		if (r < 0)
			die("read %s:", path);
		if (got != size)
			die("short file: read %ld of %ld bytes", got, size);
		total += got;
	}
	dt = now_sec() - t0;
	close(fd);
	free(buf);
	progress("%.3f s, %.1f MB/s", dt, total / dt / 1e6);
	result("iterations=%ld size=%ld bytes=%lld checksum=%016llx",
	       iters, size, total, (unsigned long long)sum);
	return 0;
}
