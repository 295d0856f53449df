/* racy_kernel: kernel-level sharing between -p processes.  Each child
 * writes tagged records (a) with O_APPEND to one shared file, (b) with
 * lseek(SEEK_END)+write through its own file description to a second
 * file (a lost-update race), (c) into one shared pipe and (d) into one
 * shared UNIX datagram socket.  The parent reads the pipe and socket.
 * The RESULT hashes depend on the interleaving of the processes. */
#include "common.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define REC 16	/* fixed-size records "P%03d R%09d\n", < PIPE_BUF */

static void make_rec(char *r, long proc, long seq)
{
	char tmp[REC + 8];

	snprintf(tmp, sizeof(tmp), "P%03ld R%09ld\n", proc % 1000, seq % 1000000000L);
	memcpy(r, tmp, REC);
}

static void child(long id, long n, int gate, int afd, const char *seek_path, int pw, int sw)
{
	char r[REC], c;
	long i;
	int sfd = open(seek_path, O_WRONLY);	/* own file description */

	if (sfd < 0)
		die("child %ld: open %s:", id, seek_path);
	if (read(gate, &c, 1) < 0)	/* wait until the parent opens the gate */
		die("child %ld: gate:", id);
	for (i = 0; i < n; i++) {
		make_rec(r, id, i);
		if (write(afd, r, REC) != REC)
			die("child %ld: append write:", id);
		if (lseek(sfd, 0, SEEK_END) < 0 || write(sfd, r, REC) != REC)
			die("child %ld: seek+write:", id);
		if (write(pw, r, REC) != REC)
			die("child %ld: pipe write:", id);
		if (send(sw, r, REC, 0) != REC)
			die("child %ld: socket send:", id);
	}
	_exit(0);
}

/* Hash one received record into *h, checking per-writer FIFO order. */
static void take_rec(const char *r, uint64_t *h, long *next, long procs, const char *what)
{
	long p, s;

	if (sscanf(r, "P%ld R%ld", &p, &s) != 2 || p < 0 || p >= procs || s != next[p])
		die("%s: unexpected record '%.*s'", what, REC - 1, r);
	next[p]++;
	*h = hash_u64(*h, ((uint64_t)p << 40) | (uint64_t)s);
}

static uint64_t hash_file(const char *path, long long *size)
{
	char buf[REC * 1024];
	uint64_t h = HASH_INIT;
	ssize_t r;
	int fd = open(path, O_RDONLY);

	if (fd < 0)
		die("open %s:", path);
	*size = 0;
	while ((r = read_full(fd, buf, sizeof(buf))) > 0) {
		h = hash_bytes(h, buf, r);
		*size += r;
	}
	if (r < 0)
		die("read %s:", path);
	close(fd);
	return h;
}

int main(int argc, char **argv)
{
	const char *dir = "/tmp";
	long procs = 4, n = 50000, i;
	int keep = 0, opt, afd, sfd, gate[2], pp[2], sv[2];
	char apath[PATH_MAX], spath[PATH_MAX];
	char pbuf[REC * 256], sbuf[REC];
	size_t phave = 0;
	long *pnext, *snext, pgot = 0, sgot = 0, total;
	uint64_t ph = HASH_INIT, sh = HASH_INIT, ah, seekh;
	long long asize, ssize;
	pid_t *pids;
	double t0, dt;

	wl_init("racy_kernel", "[-p PROCESSES (4)] [-n RECORDS_PER_PROCESS (50000)] [-d DIR (/tmp)] [-k (keep files)]");
	while ((opt = getopt(argc, argv, "p:n:d:k")) != -1) {
		switch (opt) {
		case 'p': procs = arg_long(optarg, opt, 1, 999); break;
		case 'n': n = arg_long(optarg, opt, 0, 999999999L); break;
		case 'd': dir = optarg; break;
		case 'k': keep = 1; break;
		default: wl_usage();
		}
	}
	if (optind != argc)
		wl_usage();
	total = procs * n;

	snprintf(apath, sizeof(apath), "%s/racy_kernel.append.%d", dir, (int)getpid());
	snprintf(spath, sizeof(spath), "%s/racy_kernel.seek.%d", dir, (int)getpid());
	afd = open(apath, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0644);
	sfd = open(spath, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (afd < 0 || sfd < 0)
		die("create %s, %s:", apath, spath);
	close(sfd);
	if (pipe(gate) || pipe(pp) || socketpair(AF_UNIX, SOCK_DGRAM, 0, sv))
		die("pipe/socketpair:");
	pids = calloc(procs, sizeof(*pids));
	pnext = calloc(procs, sizeof(*pnext));
	snext = calloc(procs, sizeof(*snext));
	if (!pids || !pnext || !snext)
		die("out of memory");

	progress("%ld processes x %ld records into one file (append), one file (seek+write), "
		 "one pipe and one unix socket", procs, n);
	for (i = 0; i < procs; i++) {
		pids[i] = fork();
		if (pids[i] < 0)
			die("fork:");
		if (pids[i] == 0) {
			close(gate[1]);
			close(pp[0]);
			close(sv[0]);
			child(i, n, gate[0], afd, spath, pp[1], sv[1]);
		}
	}
	close(gate[0]);
	close(pp[1]);
	close(sv[1]);
	close(afd);
	t0 = now_sec();
	close(gate[1]);		/* all children start now */

	while (pgot < total || sgot < total) {
		struct pollfd pf[2] = { { pp[0], POLLIN, 0 }, { sv[0], POLLIN, 0 } };

		if (poll(pf, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			die("poll:");
		}
		if (pf[0].revents) {
			ssize_t r = read(pp[0], pbuf + phave, sizeof(pbuf) - phave);
			size_t off;

			if (r < 0 && errno != EINTR)
				die("pipe read:");
			if (r == 0 && pgot < total)
				die("pipe closed after %ld of %ld records", pgot, total);
			phave += r > 0 ? r : 0;
			for (off = 0; off + REC <= phave; off += REC, pgot++)
				take_rec(pbuf + off, &ph, pnext, procs, "pipe");
			memmove(pbuf, pbuf + off, phave - off);
			phave -= off;
		}
		if (pf[1].revents) {
			ssize_t r = recv(sv[0], sbuf, sizeof(sbuf), 0);

			if (r < 0 && errno != EINTR)
				die("socket recv:");
			if (r == REC) {
				take_rec(sbuf, &sh, snext, procs, "socket");
				sgot++;
			} else if (r >= 0) {
				die("socket: datagram of %zd bytes", r);
			}
		}
	}
	for (i = 0; i < procs; i++) {
		int st;

		if (waitpid(pids[i], &st, 0) != pids[i])
			die("waitpid:");
		if (!WIFEXITED(st) || WEXITSTATUS(st))
			die("child %ld failed (status 0x%x)", i, st);
	}
	dt = now_sec() - t0;

	ah = hash_file(apath, &asize);
	seekh = hash_file(spath, &ssize);
	if (asize != (long long)total * REC)
		die("append file has %lld bytes, expected %lld", asize, (long long)total * REC);
	if (ssize > (long long)total * REC || ssize % REC)
		die("seek file has unexpected size %lld", ssize);
	if (!keep && (unlink(apath) || unlink(spath)))
		die("unlink:");
	free(pids);
	free(pnext);
	free(snext);
	progress("%.3f s; seek+write file kept %lld of %ld records", dt, ssize / REC, total);
	result("procs=%ld records=%ld append_hash=%016llx seek_records=%lld seek_hash=%016llx "
	       "pipe_order_hash=%016llx socket_order_hash=%016llx",
	       procs, total, (unsigned long long)ah, ssize / REC, (unsigned long long)seekh,
	       (unsigned long long)ph, (unsigned long long)sh);
	return 0;
}
