/* readdir: repeatedly list one directory with getdents64 (directory
 * read syscall path).  The directory and its -f files are created first
 * and removed at the end (unless -k). */
#include "common.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

struct linux_dirent64 {
	uint64_t d_ino;
	int64_t d_off;
	unsigned short d_reclen;
	unsigned char d_type;
	char d_name[];
};

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int main(int argc, char **argv)
{
	const char *base = "/tmp";
	long nfiles = 200, passes = 20000, i;
	int keep = 0, opt, fd;
	char dir[PATH_MAX], path[PATH_MAX + 32];
	static char buf[32768];
	char **names = NULL;
	long nnames = 0, per_pass = -1;
	uint64_t set_hash = 0, sorted_hash = HASH_INIT;
	double t0, dt;

	wl_init("readdir", "[-d PARENT_DIR (/tmp)] [-f FILES (200)] [-n PASSES (20000)] [-k (keep directory)]");
	while ((opt = getopt(argc, argv, "d:f:n:k")) != -1) {
		switch (opt) {
		case 'd': base = optarg; break;
		case 'f': nfiles = arg_long(optarg, opt, 0, 10000000); break;
		case 'n': passes = arg_long(optarg, opt, 1, LONG_MAX); break;
		case 'k': keep = 1; break;
		default: wl_usage();
		}
	}
	if (optind != argc)
		wl_usage();

	snprintf(dir, sizeof(dir), "%s/readdir_test.%ld", base, nfiles);
	if (mkdir(dir, 0755) && errno != EEXIST)
		die("mkdir %s:", dir);
	for (i = 0; i < nfiles; i++) {
		int f;

		snprintf(path, sizeof(path), "%s/file%06ld", dir, i);
		f = open(path, O_WRONLY | O_CREAT, 0644);
		if (f < 0)
			die("create %s:", path);
		close(f);
	}
	fd = open(dir, O_RDONLY | O_DIRECTORY);
	if (fd < 0)
		die("open %s:", dir);
	progress("listing %s (%ld files) %ld times", dir, nfiles, passes);

	t0 = now_sec();
	for (i = 0; i < passes; i++) {
		long count = 0;
		uint64_t h = 0;
		long n;

		if (lseek(fd, 0, SEEK_SET) != 0)
			die("lseek:");
		while ((n = syscall(SYS_getdents64, fd, buf, sizeof(buf))) > 0) {
			long off = 0;

			while (off < n) {
				struct linux_dirent64 *d = (void *)(buf + off);

				/* order-independent per-pass hash of the name set */
				h += hash_bytes(HASH_INIT, d->d_name, strlen(d->d_name));
				count++;
				if (i == 0) {
					names = realloc(names, (nnames + 1) * sizeof(*names));
					if (!names || !(names[nnames++] = strdup(d->d_name)))
						die("out of memory");
				}
				off += d->d_reclen;
			}
		}
		if (n < 0)
			die("getdents64:");
		if (i == 0) {
			per_pass = count;
			set_hash = h;
		} else if (count != per_pass || h != set_hash) {
			die("pass %ld saw %ld entries (expected %ld) or a different name set",
			    i, count, per_pass);
		}
	}
	dt = now_sec() - t0;
	close(fd);

	qsort(names, nnames, sizeof(*names), cmp_str);
	for (i = 0; i < nnames; i++) {
		sorted_hash = hash_bytes(sorted_hash, names[i], strlen(names[i]));
		free(names[i]);
	}
	free(names);

	if (!keep) {
		for (i = 0; i < nfiles; i++) {
			snprintf(path, sizeof(path), "%s/file%06ld", dir, i);
			if (unlink(path))
				die("unlink %s:", path);
		}
		if (rmdir(dir))
			die("rmdir %s:", dir);
	}
	progress("%.3f s, %.0f passes/s", dt, passes / dt);
	result("passes=%ld entries_per_pass=%ld names_hash=%016llx",
	       passes, per_pass, (unsigned long long)sorted_hash);
	return 0;
}
